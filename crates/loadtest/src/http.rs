//! The `sign` and `verify` scenarios over HTTP/1.1: each of `--connections` workers owns one
//! keep-alive connection (opened before the clock starts, reopened after a failure) and sends one
//! request at a time. Request indices come from a shared counter, so nonces and JSON-RPC ids are
//! distinct across the run. A run ends at `--requests` requests or `--duration-secs`, whichever
//! comes first; requests in flight at the deadline still finish, bounded by `--timeout-ms`.

use crate::args::{Plan, Scenario};
use crate::connection::{first_account, send, Connection, Target};
use crate::report::{finish, histogram, Report, Tally, MAX_LATENCY_US};
use crate::work::{verify_pool, Work};
use anyhow::{bail, Context};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use zeroize::Zeroizing;

/// Runs `plan` (sign or verify) against `url` and reports.
pub(crate) async fn drive(
    plan: &Plan,
    url: url::Url,
    token: Option<Zeroizing<String>>,
    in_process: bool,
) -> anyhow::Result<Report> {
    let token_ref = token.as_ref().map(|t| t.as_str());
    let work = match plan.scenario {
        Scenario::GrpcSign => bail!("grpc-sign runs over gRPC (crate::grpc), not this driver"),
        Scenario::Sign => Work::Sign {
            from: first_account(&url, token_ref, plan.timeout).await?,
        },
        Scenario::Verify => Work::Verify {
            pool: verify_pool(plan),
        },
    };
    let work = Arc::new(work);
    let target = Arc::new(Target::new(&url, token_ref)?);
    let next = Arc::new(AtomicU64::new(0));
    // Every connection is open before the clock starts.
    let mut connections = Vec::with_capacity(plan.connections);
    for _ in 0..plan.connections {
        let connection = Connection::open(target.addr)
            .await
            .map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
        connections.push(connection);
    }
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let started = Instant::now();
    let deadline = started + plan.duration;
    let mut workers = Vec::with_capacity(plan.connections);
    for connection in connections {
        let (work, next, target) = (work.clone(), next.clone(), target.clone());
        let (limit, timeout) = (plan.requests, plan.timeout);
        workers.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut latencies = histogram();
            let mut connection = Some(connection);
            loop {
                if Instant::now() >= deadline {
                    break;
                }
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= limit {
                    break;
                }
                let request = target.request(work.body(index));
                tally.sent += 1;
                let sent_at = Instant::now();
                let answer = match tokio::time::timeout(
                    timeout,
                    send(target.addr, &mut connection, request),
                )
                .await
                {
                    Ok(answer) => answer,
                    Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
                };
                match answer {
                    Err(e) => {
                        // Whatever the connection still holds belongs to this request.
                        connection = None;
                        tally.lost += 1;
                        tally.problem(format!("request {index}: no answer: {e}"));
                    }
                    Ok((status, bytes)) => {
                        let micros =
                            (sent_at.elapsed().as_micros() as u64).clamp(1, MAX_LATENCY_US);
                        latencies.saturating_record(micros);
                        let checked = if status.is_success() {
                            work.check(index, &bytes)
                        } else {
                            Err(format!("request {index}: HTTP status {status}"))
                        };
                        match checked {
                            Ok(()) => tally.ok += 1,
                            Err(message) => {
                                tally.errors += 1;
                                tally.problem(message);
                            }
                        }
                    }
                }
            }
            (tally, latencies)
        }));
    }
    let mut outcomes = Vec::with_capacity(workers.len());
    for worker in workers {
        outcomes.push(worker.await.context("a load worker failed")?);
    }
    finish(plan, &url, in_process, outcomes, started, started_unix)
}
