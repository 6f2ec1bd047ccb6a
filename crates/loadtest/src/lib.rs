//! `chainsig loadtest`: drives JSON-RPC traffic at a `chainsig serve` on loopback (or at a server
//! started in this process) and reports throughput, latency percentiles, errors and lost responses.
//! The CLI parses [`LoadtestArgs`] and calls [`run`].
//!
//! Why hand-written rather than an off-the-shelf HTTP load tool: every response must be checked
//! against what was asked (the signed transaction is there, the verdicts match the generator's),
//! which generic tools cannot do, and the run must be bounded both in requests and in time.
//!
//! * An *error* is an answer that is wrong: a non-200 status, a JSON-RPC error, a result that is
//!   not what was asked. A *lost* request got no answer at all (connection failure, timeout, body
//!   cut short).
//! * Only loopback hosts are accepted: a load test aimed at a remote machine by a typo is refused.
//!
//! | module | job |
//! | --- | --- |
//! | [`args`] | the flags, their bounds, the loopback rule |
//! | `server` | the in-process server of a run without `--url` |
//! | `connection` | the HTTP/1.1 client: one keep-alive connection per worker (hyper, no pool) |
//! | `work` | the `sign` and `verify` request bodies and the checks of their answers |
//! | `http` | the HTTP workers: one request at a time on each connection |
//! | `grpc` | `grpc-sign`: one `Signer.SignStream` per connection, many requests in flight |
//! | [`report`] | tallies, latency histograms, the printed and JSON report |

pub mod args;
mod connection;
mod grpc;
mod http;
pub mod report;
mod server;
pub mod server_side;
mod work;

pub use args::{loopback_url, LoadtestArgs, Scenario};
pub use report::{LatencyUs, Report};

use anyhow::Context;
use chainsig_core::Registry;
use std::process::ExitCode;
use zeroize::Zeroizing;

/// Runs the load test `args` describes, prints its report (and writes it as JSON with `--json`),
/// and returns the exit code: success when every request got a correct answer. A run without
/// `--url` serves from this process with the backends `registry` makes (called only then).
pub fn run(args: LoadtestArgs, registry: impl FnOnce() -> Registry) -> anyhow::Result<ExitCode> {
    let plan = args::plan(&args)?;
    let target = match &args.url {
        Some(url) => Some(loopback_url(url)?),
        None => None,
    };
    let token = args.token.map(Zeroizing::new);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the Tokio runtime")?;
    let report = runtime.block_on(async move {
        match target {
            Some(url) => drive(&plan, url, token, false).await,
            None => {
                let server = server::InProcess::start(registry()).await?;
                let outcome = drive(&plan, server.url.clone(), token, true).await;
                server.stop().await;
                outcome
            }
        }
    })?;
    report::print_report(&report);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--json {}: cannot write", path.display()))?;
    }
    Ok(if report.errors == 0 && report.lost == 0 && report.ok > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs `plan` against `url` over the scenario's transport, with the service's own latency for
/// the scenario's method read from its `/metrics` before and after ([`server_side`]).
async fn drive(
    plan: &args::Plan,
    url: url::Url,
    token: Option<Zeroizing<String>>,
    in_process: bool,
) -> anyhow::Result<Report> {
    let metrics = connection::Target::new(&url, token.as_deref().map(String::as_str))?;
    let method = server_side::method_label(plan.scenario);
    let before = server_side::snapshot(&metrics, method).await;
    let mut report = match plan.scenario {
        Scenario::GrpcSign => grpc::drive(plan, url, token, in_process).await,
        Scenario::Sign | Scenario::Verify => http::drive(plan, url, token, in_process).await,
    }?;
    if let Some(after) = server_side::snapshot(&metrics, method).await {
        report.server_latency = server_side::between(method, before.as_deref(), &after);
    }
    Ok(report)
}
