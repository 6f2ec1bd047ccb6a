//! What a run reports: counts of sent, correct ("ok"), wrong ("errors") and unanswered ("lost")
//! requests, throughput, and latency percentiles (send to full body) from one HDR histogram per
//! worker, merged at the end; printed as text and, with `--json`, written as JSON.

use crate::args::{Plan, Scenario};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::Instant;

/// Latencies above this are clamped into the histogram's top bucket (they are also lost or late).
pub(crate) const MAX_LATENCY_US: u64 = 3_600_000_000;

#[derive(Serialize, Debug)]
pub struct LatencyUs {
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
}

#[derive(Serialize, Debug)]
pub struct Report {
    pub scenario: Scenario,
    pub url: String,
    pub in_process_server: bool,
    pub connections: usize,
    pub requests_limit: u64,
    pub duration_limit_s: u64,
    /// `requests` or `duration`.
    pub stopped_by: &'static str,
    pub sent: u64,
    pub ok: u64,
    pub errors: u64,
    pub lost: u64,
    pub elapsed_s: f64,
    /// Correct answers per second.
    pub requests_per_s: f64,
    /// verify: records in each request (1 for sign).
    pub records_per_request: usize,
    /// Records (signatures made or checked) per second in correct answers.
    pub records_per_s: f64,
    pub latency_us: LatencyUs,
    /// The service's own latency for the scenario's method over the run, from its `/metrics`
    /// ([`crate::server_side`]); absent when the server does not serve them.
    pub server_latency: Option<crate::server_side::ServerLatency>,
    /// The first wrong or lost answer, described (never a token).
    pub first_problem: Option<String>,
    /// Seconds since the Unix epoch at the start of the run.
    pub started_unix: u64,
}

/// One worker's counts (merged into the report by [`finish`]).
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) sent: u64,
    pub(crate) ok: u64,
    pub(crate) errors: u64,
    pub(crate) lost: u64,
    first_problem: Option<(Instant, String)>,
}

impl Tally {
    pub(crate) fn problem(&mut self, message: String) {
        if self.first_problem.is_none() {
            self.first_problem = Some((Instant::now(), message));
        }
    }
}

pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid histogram bounds")
}

/// Merges the workers' tallies and latencies into the report.
pub(crate) fn finish(
    plan: &Plan,
    url: &url::Url,
    in_process: bool,
    outcomes: Vec<(Tally, Histogram<u64>)>,
    started: Instant,
    started_unix: u64,
) -> anyhow::Result<Report> {
    let mut total = Tally::default();
    let mut latencies = histogram();
    for (tally, hist) in outcomes {
        total.sent += tally.sent;
        total.ok += tally.ok;
        total.errors += tally.errors;
        total.lost += tally.lost;
        if let Some((at, message)) = tally.first_problem {
            if total
                .first_problem
                .as_ref()
                .is_none_or(|(first, _)| at < *first)
            {
                total.first_problem = Some((at, message));
            }
        }
        latencies
            .add(&hist)
            .map_err(|e| anyhow::anyhow!("merging latencies: {e:?}"))?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let stopped_by = if total.sent >= plan.requests {
        "requests"
    } else {
        "duration"
    };
    let requests_per_s = total.ok as f64 / elapsed;
    Ok(Report {
        scenario: plan.scenario,
        url: url.to_string(),
        in_process_server: in_process,
        connections: plan.connections,
        requests_limit: plan.requests,
        duration_limit_s: plan.duration.as_secs(),
        stopped_by,
        sent: total.sent,
        ok: total.ok,
        errors: total.errors,
        lost: total.lost,
        elapsed_s: elapsed,
        requests_per_s,
        records_per_request: plan.batch,
        records_per_s: requests_per_s * plan.batch as f64,
        latency_us: LatencyUs {
            p50: latencies.value_at_quantile(0.5),
            p99: latencies.value_at_quantile(0.99),
            p999: latencies.value_at_quantile(0.999),
            max: latencies.max(),
            mean: latencies.mean(),
        },
        server_latency: None,
        first_problem: total.first_problem.map(|(_, m)| m),
        started_unix,
    })
}

pub(crate) fn print_report(r: &Report) {
    let scenario = match r.scenario {
        Scenario::Sign => "sign (eth_signTransaction, EIP-1559)".to_string(),
        Scenario::Verify => format!(
            "verify (chainsig_verifyBatch, {} records a call)",
            r.records_per_request
        ),
        Scenario::GrpcSign => "grpc-sign (gRPC Signer.SignStream, EIP-1559)".to_string(),
    };
    println!(
        "loadtest {scenario} against {}{}",
        r.url,
        if r.in_process_server {
            " (in-process server)"
        } else {
            ""
        }
    );
    println!(
        "  {} connections, stopped by {} after {:.2} s",
        r.connections, r.stopped_by, r.elapsed_s
    );
    println!(
        "  sent {}  ok {}  errors {}  lost {}",
        r.sent, r.ok, r.errors, r.lost
    );
    println!(
        "  {:.0} requests/s ({:.0} records/s)",
        r.requests_per_s, r.records_per_s
    );
    let ms = |us: u64| us as f64 / 1000.0;
    println!(
        "  latency p50 {:.3} ms  p99 {:.3} ms  p99.9 {:.3} ms  max {:.3} ms",
        ms(r.latency_us.p50),
        ms(r.latency_us.p99),
        ms(r.latency_us.p999),
        ms(r.latency_us.max)
    );
    if let Some(server) = &r.server_latency {
        let bound = |us: Option<f64>| {
            us.map_or("above the largest bucket".to_string(), |us| {
                format!("≤ {us:.0} µs")
            })
        };
        println!(
            "  in the service ({}, {} answers): p50 {}  p99 {}",
            server.method,
            server.count,
            bound(server.p50_at_most_us),
            bound(server.p99_at_most_us)
        );
    }
    if let Some(problem) = &r.first_problem {
        println!("  first problem: {problem}");
    }
}
