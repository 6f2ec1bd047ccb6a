//! The service's own view of a run: the latency histogram it keeps for the scenario's method
//! (`chainsig_request_duration_seconds`, served at `GET /metrics`), read before and after the run.
//! The difference is this run's answers alone, timed inside the service: for `grpc-sign`, from
//! the moment a stream's chunk is handed to the signing pool to the moment each of its
//! transactions is signed, without the client's work, the network or the stream's queue.
//!
//! A Prometheus histogram keeps counts per bucket, so a quantile is reported as the upper bound
//! of the bucket it falls in: the true value is at most that bound.

use crate::args::Scenario;
use crate::connection::{send, Target};
use serde::Serialize;

/// The histogram the service keeps for every method.
const HISTOGRAM: &str = "chainsig_request_duration_seconds_bucket";

/// The service's latency for one method over a run.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ServerLatency {
    /// The method label (`eth_signTransaction`, `chainsig_verifyBatch`,
    /// `chainsig.v1.Signer/SignStream`).
    pub method: String,
    /// Answers the service timed during the run.
    pub count: u64,
    /// Upper bounds, in microseconds, of the buckets holding the median and the 99th percentile
    /// (`None`: above the largest finite bucket).
    pub p50_at_most_us: Option<f64>,
    pub p99_at_most_us: Option<f64>,
}

/// The label under which the service times the scenario's requests.
pub(crate) fn method_label(scenario: Scenario) -> &'static str {
    match scenario {
        Scenario::Sign => "eth_signTransaction",
        Scenario::Verify => "chainsig_verifyBatch",
        Scenario::GrpcSign => chainsig_server::grpc::SIGN_STREAM,
    }
}

/// The cumulative bucket counts of `method` now, as (upper bound in seconds, count), or `None`
/// when the service does not answer `/metrics` (another server, or a token it refuses): the
/// report then simply has no server-side figures.
pub(crate) async fn snapshot(target: &Target, method: &str) -> Option<Vec<(f64, u64)>> {
    let (status, body) = send(target.addr, &mut None, target.get("/metrics").ok()?)
        .await
        .ok()?;
    if !status.is_success() {
        return None;
    }
    Some(buckets(std::str::from_utf8(&body).ok()?, method))
}

/// The buckets of `method` in a Prometheus text exposition, in the order written (ascending `le`).
fn buckets(text: &str, method: &str) -> Vec<(f64, u64)> {
    let label = format!("method=\"{method}\"");
    text.lines()
        .filter(|line| line.starts_with(HISTOGRAM) && line.contains(&label))
        .filter_map(|line| {
            let le = line.split("le=\"").nth(1)?.split('"').next()?;
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            let count = line.rsplit(' ').next()?.parse().ok()?;
            Some((bound, count))
        })
        .collect()
}

/// This run's latency: `after` less `before` (a missing `before` is a fresh series).
pub(crate) fn between(
    method: &str,
    before: Option<&[(f64, u64)]>,
    after: &[(f64, u64)],
) -> Option<ServerLatency> {
    let counts: Vec<(f64, u64)> = after
        .iter()
        .map(|&(bound, count)| {
            let earlier = before
                .and_then(|b| b.iter().find(|(le, _)| *le == bound))
                .map_or(0, |&(_, c)| c);
            (bound, count.saturating_sub(earlier))
        })
        .collect();
    let total = counts.last()?.1;
    if total == 0 {
        return None;
    }
    let at_most = |q: f64| {
        let rank = (q * total as f64).ceil() as u64;
        counts
            .iter()
            .find(|(_, cumulative)| *cumulative >= rank)
            .and_then(|&(bound, _)| bound.is_finite().then_some(bound * 1e6))
    };
    Some(ServerLatency {
        method: method.to_string(),
        count: total,
        p50_at_most_us: at_most(0.50),
        p99_at_most_us: at_most(0.99),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# TYPE chainsig_request_duration_seconds histogram
chainsig_request_duration_seconds_bucket{method=\"other\",le=\"0.00001\"} 7
chainsig_request_duration_seconds_bucket{method=\"m\",le=\"0.00001\"} 10
chainsig_request_duration_seconds_bucket{method=\"m\",le=\"0.00004\"} 95
chainsig_request_duration_seconds_bucket{method=\"m\",le=\"0.0001\"} 100
chainsig_request_duration_seconds_bucket{method=\"m\",le=\"+Inf\"} 100
chainsig_request_duration_seconds_sum{method=\"m\"} 0.003
";

    #[test]
    fn buckets_of_one_method_are_read_in_order() {
        assert_eq!(
            buckets(TEXT, "m"),
            vec![
                (0.00001, 10),
                (0.00004, 95),
                (0.0001, 100),
                (f64::INFINITY, 100)
            ]
        );
        assert_eq!(buckets(TEXT, "absent"), vec![]);
    }

    #[test]
    fn quantiles_are_bucket_bounds_of_the_runs_own_answers() {
        let after = buckets(TEXT, "m");
        let latency = between("m", None, &after).unwrap();
        assert_eq!(latency.count, 100);
        assert_eq!(latency.p50_at_most_us, Some(40.0));
        assert_eq!(latency.p99_at_most_us, Some(100.0));
        // Earlier answers are taken away: this run's 10 answers, 9 within 40 µs and one within 100.
        let before = vec![
            (0.00001, 10),
            (0.00004, 86),
            (0.0001, 90),
            (f64::INFINITY, 90),
        ];
        let run = between("m", Some(&before), &after).unwrap();
        assert_eq!(run.count, 10);
        assert_eq!(run.p50_at_most_us, Some(40.0));
        assert_eq!(run.p99_at_most_us, Some(100.0));
        assert_eq!(between("m", Some(&after), &after), None);
    }

    #[test]
    fn a_quantile_above_every_finite_bucket_has_no_bound() {
        let counts = vec![(0.00001, 0), (f64::INFINITY, 4)];
        let latency = between("m", None, &counts).unwrap();
        assert_eq!(latency.p99_at_most_us, None);
    }
}
