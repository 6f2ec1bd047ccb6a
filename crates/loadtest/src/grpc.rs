//! `chainsig loadtest --scenario grpc-sign`: bulk signing over gRPC `Signer.SignStream`.
//!
//! Each of `--connections` workers opens its own HTTP/2 connection and one long-lived stream, and
//! keeps `--in-flight` requests outstanding on it (a window refilled as answers arrive), so the
//! server always has whole chunks to sign. Request indices come from the shared counter, so nonces
//! and stream ids are distinct across the run, which is bounded by `--requests` and
//! `--duration-secs` as the HTTP scenarios are.
//!
//! The server answers in request order, so the worker keeps the (index, send time) of each
//! request in a FIFO and pairs each answer with the oldest: an answer whose id is not the expected
//! one is an error. Every answer is checked: a signed EIP-1559 envelope whose hash is
//! keccak256(raw) and whose `from` is the account; one in `FULL_CHECK_EVERY` is decoded in full
//! and its sender recovered. Requests still outstanding when the stream breaks, or when no answer
//! comes within `--timeout-ms`, are lost.

use crate::args::Plan;
use crate::connection::first_account;
use crate::report::{finish, histogram, Report, Tally, MAX_LATENCY_US};
use crate::work::FULL_CHECK_EVERY;
use alloy_primitives::{keccak256, Address};
use anyhow::Context;
use chainsig_server::grpc::pb;
use chainsig_server::grpc::pb::signer_client::SignerClient;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, Semaphore};
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataValue;
use zeroize::Zeroizing;

/// The transaction of request `index`: EIP-1559, nonce = index, as the HTTP sign scenario sends.
fn transaction(from: &Address, index: u64) -> pb::Transaction {
    pb::Transaction {
        from: from.to_vec(),
        chain_id: Some(1),
        nonce: index,
        gas: 21_000,
        to: vec![0x35; 20],
        value: vec![1],
        data: Vec::new(),
        max_fee_per_gas: Some(vec![0x77, 0x35, 0x94, 0x00]),
        max_priority_fee_per_gas: Some(vec![0x3b, 0x9a, 0xca, 0x00]),
        ..Default::default()
    }
}

/// Checks the answer to request `index`.
fn check(from: &Address, index: u64, answer: pb::SignStreamResponse) -> Result<(), String> {
    if answer.id != index {
        return Err(format!(
            "request {index}: id: answered {} instead (order lost)",
            answer.id
        ));
    }
    let signed = match answer.outcome {
        Some(pb::sign_stream_response::Outcome::Signed(signed)) => signed,
        Some(pb::sign_stream_response::Outcome::Error(error)) => {
            return Err(format!("request {index}: error {}", error.message))
        }
        None => return Err(format!("request {index}: outcome: missing")),
    };
    let raw = &signed.raw;
    if raw.len() < 70 || raw[0] != 2 || raw[1] < 0xc0 {
        return Err(format!(
            "request {index}: raw: not a signed EIP-1559 transaction"
        ));
    }
    if signed.hash != keccak256(raw).as_slice() {
        return Err(format!("request {index}: hash: not keccak256(raw)"));
    }
    if signed.from != from.as_slice() {
        return Err(format!("request {index}: from: not the account {from}"));
    }
    if index % FULL_CHECK_EVERY == 0 {
        let decoded =
            chainsig_eth::decode_raw(raw).map_err(|e| format!("request {index}: raw: {e}"))?;
        if decoded.from != *from {
            return Err(format!(
                "request {index}: raw: recovers to {}, not {from}",
                decoded.from
            ));
        }
        if decoded.to_json()["nonce"] != serde_json::json!(format!("0x{index:x}")) {
            return Err(format!("request {index}: raw: nonce is not {index}"));
        }
    }
    Ok(())
}

pub(crate) async fn drive(
    plan: &Plan,
    url: url::Url,
    token: Option<Zeroizing<String>>,
    in_process: bool,
) -> anyhow::Result<Report> {
    let token_ref = token.as_ref().map(|t| t.as_str());
    let from: Address = first_account(&url, token_ref, plan.timeout)
        .await?
        .parse()
        .context("eth_accounts: not an address")?;
    let authorization: Option<MetadataValue<_>> = match token_ref {
        Some(token) => Some(
            format!("Bearer {token}")
                .parse()
                .context("--token: not usable in a header")?,
        ),
        None => None,
    };
    let next = Arc::new(AtomicU64::new(0));
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut channels = Vec::with_capacity(plan.connections);
    for _ in 0..plan.connections {
        let channel = tonic::transport::Endpoint::from_shared(url.to_string())
            .context("--url: not a gRPC endpoint")?
            .tcp_nodelay(true)
            // Hundreds of answers in flight on one stream outgrow HTTP/2's default 64 KiB window,
            // which would make the server wait for window updates instead of sending.
            .initial_stream_window_size(4 << 20)
            .initial_connection_window_size(8 << 20)
            .connect()
            .await
            .with_context(|| format!("{url}: cannot open a gRPC connection"))?;
        channels.push(channel);
    }
    let started = Instant::now();
    let deadline = started + plan.duration;
    let mut workers = Vec::with_capacity(plan.connections);
    for channel in channels {
        let (next, authorization) = (next.clone(), authorization.clone());
        let (limit, in_flight, timeout) = (plan.requests, plan.in_flight, plan.timeout);
        workers.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut latencies = histogram();
            let client =
                SignerClient::with_interceptor(channel, move |mut request: tonic::Request<()>| {
                    if let Some(value) = &authorization {
                        request
                            .metadata_mut()
                            .insert("authorization", value.clone());
                    }
                    Ok(request)
                });
            let window = Arc::new(Semaphore::new(in_flight));
            let (requests, outbound) = mpsc::channel::<pb::SignStreamRequest>(in_flight);
            let (pending, mut sent) = mpsc::unbounded_channel::<(u64, Instant)>();
            let sender = {
                let window = window.clone();
                tokio::spawn(async move {
                    let mut count = 0u64;
                    loop {
                        let Ok(permit) = window.acquire().await else {
                            break;
                        };
                        permit.forget();
                        if Instant::now() >= deadline {
                            break;
                        }
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= limit {
                            break;
                        }
                        if pending.send((index, Instant::now())).is_err() {
                            break;
                        }
                        count += 1;
                        let request = pb::SignStreamRequest {
                            id: index,
                            tx: Some(transaction(&from, index)),
                        };
                        if requests.send(request).await.is_err() {
                            break;
                        }
                    }
                    count
                    // Dropping `requests` ends the stream.
                })
            };
            let mut client = client;
            let answers = client.sign_stream(ReceiverStream::new(outbound)).await;
            let mut answers = match answers {
                Ok(response) => Some(response.into_inner()),
                Err(status) => {
                    tally.problem(format!("SignStream refused: {status}"));
                    None
                }
            };
            while let Some(stream) = answers.as_mut() {
                let answer = match tokio::time::timeout(timeout, stream.message()).await {
                    Ok(Ok(Some(answer))) => answer,
                    Ok(Ok(None)) => break,
                    Ok(Err(status)) => {
                        tally.problem(format!("stream broke: {status}"));
                        break;
                    }
                    Err(_) => {
                        tally.problem(format!("no answer within {} ms", timeout.as_millis()));
                        break;
                    }
                };
                let Some((index, sent_at)) = sent.recv().await else {
                    tally.errors += 1;
                    tally.problem(format!("answer {} to no request", answer.id));
                    break;
                };
                window.add_permits(1);
                let micros = (sent_at.elapsed().as_micros() as u64).clamp(1, MAX_LATENCY_US);
                latencies.saturating_record(micros);
                match check(&from, index, answer) {
                    Ok(()) => tally.ok += 1,
                    Err(message) => {
                        tally.errors += 1;
                        tally.problem(message);
                    }
                }
            }
            // Stop the sender, then count what it sent that got no answer.
            window.close();
            drop(answers);
            let sent_total = sender.await.unwrap_or(0);
            tally.sent = sent_total;
            let answered = tally.ok + tally.errors;
            if sent_total > answered {
                tally.lost += sent_total - answered;
                if tally.lost > 0 {
                    tally.problem(format!("{} requests got no answer", tally.lost));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> chainsig_eth::PrivateKey {
        chainsig_eth::PrivateKey::from_hex(
            "4646464646464646464646464646464646464646464646464646464646464646",
        )
        .unwrap()
    }

    fn answer(index: u64, id: u64) -> pb::SignStreamResponse {
        let key = key();
        let request =
            chainsig_server::grpc::tx_request(transaction(&key.address(), index)).unwrap();
        let signed = request.sign(&key).unwrap();
        pb::SignStreamResponse {
            id,
            outcome: Some(pb::sign_stream_response::Outcome::Signed(
                pb::SignedTransaction {
                    raw: signed.raw,
                    hash: signed.hash.to_vec(),
                    from: signed.from.to_vec(),
                },
            )),
        }
    }

    #[test]
    fn answers_are_checked() {
        let from = key().address();
        assert!(check(&from, 64, answer(64, 64)).is_ok());
        assert!(check(&from, 3, answer(3, 3)).is_ok());
        assert!(check(&from, 3, answer(3, 4)).unwrap_err().contains("id"));
        // Signed for another nonce: caught by the full check of every 64th answer.
        assert!(check(&from, 128, answer(129, 128))
            .unwrap_err()
            .contains("nonce"));
        let mut wrong_hash = answer(5, 5);
        if let Some(pb::sign_stream_response::Outcome::Signed(s)) = &mut wrong_hash.outcome {
            s.hash[0] ^= 1;
        }
        assert!(check(&from, 5, wrong_hash).unwrap_err().contains("hash"));
        let other = Address::repeat_byte(7);
        assert!(check(&other, 5, answer(5, 5)).unwrap_err().contains("from"));
        let error = pb::SignStreamResponse {
            id: 6,
            outcome: Some(pb::sign_stream_response::Outcome::Error(pb::ItemError {
                field: "tx.to".into(),
                message: "tx.to: bad".into(),
                code: -32602,
            })),
        };
        assert!(check(&from, 6, error).unwrap_err().contains("tx.to"));
    }
}
