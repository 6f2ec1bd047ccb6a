//! The command's flags (`chainsig loadtest …`), their bounds, and the loopback-only rule for
//! `--url`: a load test aimed at a remote machine by a typo is refused before anything is sent.

use anyhow::{bail, Context};
use chainsig_core::Algorithm;
use serde::Serialize;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    /// eth_signTransaction of EIP-1559 transactions with distinct nonces.
    Sign,
    /// chainsig_verifyBatch of generated records, verdicts checked against the generator's.
    Verify,
    /// gRPC Signer.SignStream: EIP-1559 transactions with distinct nonces on long-lived streams
    /// (one per connection), many in flight on each (see `loadtest_grpc`).
    #[serde(rename = "grpc-sign")]
    GrpcSign,
}

#[derive(clap::Args)]
pub struct LoadtestArgs {
    /// Server to load, e.g. http://127.0.0.1:8545 (loopback only). Without it a server is started
    /// in this process on 127.0.0.1:0 with a throwaway key.
    #[arg(long)]
    pub url: Option<String>,
    /// Bearer token for the server's --auth-tokens.
    #[arg(long)]
    pub token: Option<String>,
    /// What to send.
    #[arg(long, value_enum)]
    pub scenario: Scenario,
    /// Concurrent keep-alive connections, one request in flight on each.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Most requests to send.
    #[arg(long, default_value_t = 10_000)]
    pub requests: u64,
    /// Longest run, in seconds.
    #[arg(long, default_value_t = 60)]
    pub duration_secs: u64,
    /// Longest wait for one answer, in milliseconds (after it the request counts as lost).
    #[arg(long, default_value_t = 10_000)]
    pub timeout_ms: u64,
    /// verify: the algorithm of the records (sm2 or secp256k1).
    #[arg(long, default_value = "secp256k1")]
    pub alg: String,
    /// verify: records in each chainsig_verifyBatch call.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// verify: share of generated records that are corrupted.
    #[arg(long, default_value_t = 0.25)]
    pub invalid_ratio: f64,
    /// grpc-sign: signing requests in flight on each stream.
    #[arg(long, default_value_t = 512)]
    pub in_flight: usize,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// A validated plan.
pub(crate) struct Plan {
    pub(crate) scenario: Scenario,
    pub(crate) connections: usize,
    pub(crate) requests: u64,
    pub(crate) duration: Duration,
    pub(crate) timeout: Duration,
    pub(crate) batch: usize,
    pub(crate) alg: Algorithm,
    pub(crate) invalid_ratio: f64,
    pub(crate) in_flight: usize,
}

pub(crate) fn plan(args: &LoadtestArgs) -> anyhow::Result<Plan> {
    if !(1..=4096).contains(&args.connections) {
        bail!("--connections: must be from 1 to 4096");
    }
    if !(1..=1_000_000_000).contains(&args.requests) {
        bail!("--requests: must be from 1 to 10^9");
    }
    if !(1..=86_400).contains(&args.duration_secs) {
        bail!("--duration-secs: must be from 1 to 86400");
    }
    if !(1..=600_000).contains(&args.timeout_ms) {
        bail!("--timeout-ms: must be from 1 to 600000");
    }
    if !(1..=65_536).contains(&args.batch) {
        bail!("--batch: must be from 1 to 65536");
    }
    if !(1..=65_536).contains(&args.in_flight) {
        bail!("--in-flight: must be from 1 to 65536");
    }
    if !(0.0..=1.0).contains(&args.invalid_ratio) {
        bail!("--invalid-ratio: must be from 0 to 1");
    }
    let alg = match args.alg.as_str() {
        "sm2" => Algorithm::Sm2,
        "secp256k1" => Algorithm::Secp256k1,
        other => bail!("--alg {other}: loadtest generates sm2 or secp256k1 records"),
    };
    Ok(Plan {
        scenario: args.scenario,
        connections: args.connections,
        requests: args.requests,
        duration: Duration::from_secs(args.duration_secs),
        timeout: Duration::from_millis(args.timeout_ms),
        batch: if args.scenario == Scenario::Verify {
            args.batch
        } else {
            1
        },
        alg,
        invalid_ratio: args.invalid_ratio,
        in_flight: args.in_flight,
    })
}

/// Parses `url` and refuses anything but plain HTTP to a loopback host.
pub fn loopback_url(url: &str) -> anyhow::Result<url::Url> {
    let parsed = url::Url::parse(url).with_context(|| format!("--url {url}: not a URL"))?;
    match parsed.scheme() {
        "http" => {}
        "https" => bail!("--url {url}: loadtest speaks plain HTTP only (no TLS client built in)"),
        other => bail!("--url {url}: scheme {other} is not http"),
    }
    let host = parsed.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = if let Ok(ip) = bare.parse::<IpAddr>() {
        ip.is_loopback()
    } else if bare.eq_ignore_ascii_case("localhost") {
        // localhost must resolve to loopback addresses only.
        let port = parsed.port_or_known_default().unwrap_or(80);
        let addrs: Vec<SocketAddr> = (bare, port)
            .to_socket_addrs()
            .with_context(|| format!("--url {url}: cannot resolve {bare}"))?
            .collect();
        !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
    } else {
        false
    };
    if !loopback {
        bail!(
            "--url {url}: host {} is not a loopback address; loadtest only targets 127.0.0.0/8, [::1] or localhost",
            parsed.host_str().unwrap_or("(none)")
        );
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_http_urls_are_accepted() {
        for ok in [
            "http://127.0.0.1:8545",
            "http://127.1.2.3:1/",
            "http://[::1]:8545/",
            "http://localhost:8545",
        ] {
            assert!(loopback_url(ok).is_ok(), "{ok}");
        }
        for (bad, says) in [
            ("http://10.0.0.1:8545", "not a loopback"),
            ("http://example.com:8545", "not a loopback"),
            ("http://0.0.0.0:8545", "not a loopback"),
            ("https://127.0.0.1:8545", "plain HTTP"),
            ("ftp://127.0.0.1/", "not http"),
            ("127.0.0.1:8545", "scheme"),
        ] {
            let err = loopback_url(bad).unwrap_err().to_string();
            assert!(
                err.contains(says) || err.contains("not a URL"),
                "{bad}: {err}"
            );
        }
    }
}
