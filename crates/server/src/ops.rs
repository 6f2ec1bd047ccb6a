//! The operations both front ends perform: JSON-RPC ([`crate::rpc`]) and gRPC ([`crate::grpc`])
//! decode their requests their own way, then sign, verify and recover through these functions,
//! so the checks, the metrics and the audit log are one implementation.

use crate::auth::Client;
use crate::AppState;
use alloy_primitives::{eip191_hash_message, Address, B256};
use chainsig_core::record::RecoverRecord;
use chainsig_core::{RecordError, Recovered};
use chainsig_eth::{EthError, SignedTx, TxRequest};

/// Why a transaction was not signed.
#[derive(Debug)]
pub enum SignFailure {
    /// `from` names an address the server holds no key for (JSON-RPC -32000).
    NoAccount(Address),
    /// A field of the request is wrong (JSON-RPC -32602); the error names it.
    Field(EthError),
}

/// The message of [`SignFailure::NoAccount`]; a service started with `--verify-only` says so.
pub fn no_account_message(state: &AppState, address: &Address) -> String {
    let holds_none = if state.signer.addresses().is_empty() {
        " (this service verifies only: it was started with --verify-only and holds no keys)"
    } else {
        ""
    };
    format!(
        "no unlocked account matches the sender {}{holds_none}",
        address.to_checksum(None)
    )
}

/// Signs `request` with the key of its `from` (or the only key), counts the signature and writes
/// the audit line (`method` names the front end's method).
pub fn sign_transaction(
    state: &AppState,
    client: &Client,
    method: &str,
    request: &TxRequest,
) -> Result<SignedTx, SignFailure> {
    known_account(state, request)?;
    let signed = state
        .signer
        .sign_transaction(request)
        .map_err(SignFailure::Field)?;
    audit(state, client, method, &signed);
    Ok(signed)
}

/// [`sign_transaction`] for many requests at once (a gRPC stream's chunk): the same checks,
/// bytes, metrics and audit lines, each answer in its request's place; the valid ones are signed
/// together (eight at a time in AVX-512 IFMA lanes where the CPU has them).
pub fn sign_transactions(
    state: &AppState,
    client: &Client,
    method: &str,
    requests: &[TxRequest],
) -> Vec<Result<SignedTx, SignFailure>> {
    let signed = state.signer.sign_transactions(requests);
    requests
        .iter()
        .zip(signed)
        .map(|(request, signed)| {
            known_account(state, request)?;
            let signed = signed.map_err(SignFailure::Field)?;
            audit(state, client, method, &signed);
            Ok(signed)
        })
        .collect()
}

/// A `from` the server holds no key for is its own failure (JSON-RPC -32000), before any field.
fn known_account(state: &AppState, request: &TxRequest) -> Result<(), SignFailure> {
    match request.from {
        Some(from) if state.signer.key(&from).is_none() => Err(SignFailure::NoAccount(from)),
        _ => Ok(()),
    }
}

/// Counts a signed transaction and writes its audit line.
fn audit(state: &AppState, client: &Client, method: &str, signed: &SignedTx) {
    state.metrics.signature("transaction");
    tracing::info!(
        target: "audit",
        client = %client,
        method,
        key = %signed.from,
        tx_hash = %signed.hash,
        "signed"
    );
}

/// Signs a 32-byte hash with `address`'s key, counts it under `kind` and writes the audit line
/// (`method` names the front end's method). EIP-191 messages, EIP-712 typed data and the REST
/// route all sign through here.
pub fn sign_hash(
    state: &AppState,
    client: &Client,
    method: &str,
    kind: &str,
    address: &Address,
    hash: &B256,
) -> Result<[u8; 65], EthError> {
    let signature = state.signer.sign_hash(address, hash)?;
    state.metrics.signature(kind);
    tracing::info!(
        target: "audit",
        client = %client,
        method,
        key = %address,
        message_hash = %hash,
        "signed"
    );
    Ok(signature)
}

/// An EIP-191 message signed through [`sign_hash`].
pub fn sign_message(
    state: &AppState,
    client: &Client,
    method: &str,
    address: &Address,
    message: &[u8],
) -> Result<[u8; 65], EthError> {
    let hash = eip191_hash_message(message);
    sign_hash(state, client, method, "message", address, &hash)
}

/// Refuses a verify or recover call with more records than the limit.
pub fn check_count(state: &AppState, count: usize) -> Result<(), String> {
    if count > state.limits.records_per_call {
        return Err(format!(
            "records: {count} records are above the limit of {}",
            state.limits.records_per_call
        ));
    }
    Ok(())
}

/// Recovers the signer of each record, in order, off the async threads, on the server's backend:
/// raw transactions on a device that decodes them when the backend has one (the GPU), bare
/// signatures as one batch (`chainsig_eth::recover::recover_records`). Fails only when no
/// backend could run the batch.
pub async fn recover(
    state: &AppState,
    records: Vec<Result<RecoverRecord, RecordError>>,
) -> Result<Vec<Result<Recovered, RecordError>>, String> {
    let registry = state.registry.clone();
    let backend = state.backend.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        chainsig_eth::recover::recover_records(&registry, &backend, records)
    })
    .await
    .map_err(|e| format!("recovery task failed: {e}"))?
    .map_err(|e| format!("recovery failed: {e}"))?;
    if let Some((backend, count)) = &outcome.batch {
        state.metrics.recovered(backend, *count);
    }
    if outcome.disagreements > 0 {
        // The answers are the CPU path's either way; a device that names other causes is wrong.
        tracing::warn!(
            device = outcome.transactions.as_ref().map(|(d, _)| d.as_str()),
            records = outcome.disagreements,
            "the device and the CPU path disagreed on why raw transactions were refused"
        );
    }
    Ok(outcome.results)
}
