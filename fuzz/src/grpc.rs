//! The gRPC service's request messages (`proto/chainsig.proto`): arbitrary bytes decoded as each
//! request type with prost, as tonic decodes a message body, then every record and transaction
//! pushed through the conversions the service runs (`chainsig_server::grpc_records`,
//! `chainsig_server::grpc::tx_request`).
//!
//! Besides "no panic, short errors", each typed message is checked against a second reading:
//! the same values written as the JSON the `verify`/`recover` formats and `eth_signTransaction`
//! take. A typed record must decode to exactly what its JSON twin decodes to (or be refused with
//! the same error), so the two front ends cannot drift apart.

use super::short;
use chainsig_core::record::{parse_verify_line, parse_verify_value, RecoverRecord};
use chainsig_core::RecordError;
use chainsig_server::grpc::{pb, tx_request};
use chainsig_server::grpc_records::{self, Records};
use prost::Message;
use serde_json::{json, Map, Value};

/// JSON-RPC's "invalid params", the code of every refusal `tx_request` makes.
const INVALID_PARAMS: i32 = -32602;

/// The entry: the bytes as each request message of `Verifier` and `Signer`.
pub fn grpc_messages(data: &[u8]) {
    match pb::VerifyBatchRequest::decode(data) {
        Ok(request) => verify_batch(request),
        Err(e) => short(e),
    }
    if let Ok(request) = pb::RecoverBatchRequest::decode(data) {
        recover_batch(request);
    }
    if let Ok(request) = pb::SignTransactionRequest::decode(data) {
        sign(request.tx);
    }
    if let Ok(request) = pb::SignStreamRequest::decode(data) {
        sign(request.tx);
    }
}

/// A `Records::of` refusal names the field and quotes nothing.
fn records_of<T>(json: Vec<String>, typed: Vec<T>) -> Option<Records<T>> {
    match Records::of(json, typed) {
        Ok(records) => Some(records),
        Err(e) => {
            assert!(e.starts_with("records: "), "{e}");
            short(e);
            None
        }
    }
}

/// A record's refusal: short, and naming its field (a JSON text that is not an object has no
/// field; its error says so, and the service names the record by its index).
fn check_refusal(error: &RecordError) {
    short(error);
    assert!(
        !error.field.is_empty() || error.reason.starts_with("bad JSON"),
        "an error without a field: {error}"
    );
}

fn verify_batch(request: pb::VerifyBatchRequest) {
    let Some(records) = records_of(request.records.clone(), request.items.clone()) else {
        return;
    };
    let defaults = match grpc_records::verify_defaults(request.alg, &request.hash) {
        Ok(defaults) => defaults,
        Err(e) => {
            assert!(e.starts_with("alg: ") || e.starts_with("hash: "), "{e}");
            return short(e);
        }
    };
    let count = records.len();
    let results = grpc_records::verify_records(records, &defaults);
    assert_eq!(results.len(), count, "a result per record");
    if request.items.is_empty() {
        for (line, result) in request.records.iter().zip(&results) {
            // The fast path (flat JSON) against serde_json's reading of the same text.
            if let Ok(value) = serde_json::from_str::<Value>(line) {
                let slow = parse_verify_value(&value, &defaults);
                match (result, &slow) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "fast and serde paths differ on {line:?}"),
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                    _ => panic!("fast and serde paths disagree on {line:?}: {result:?} / {slow:?}"),
                }
            }
        }
    } else {
        for (item, result) in request.items.iter().zip(&results) {
            if let Some(line) = verify_json(item) {
                let twin = parse_verify_line(&line, &defaults);
                assert_eq!(result, &twin, "typed and JSON records differ: {line}");
            } else {
                assert_eq!(result.as_ref().map_err(|e| e.field), Err("alg"));
            }
        }
    }
    for error in results.iter().filter_map(|r| r.as_ref().err()) {
        check_refusal(error);
    }
}

/// A typed verify record as its `verify` JSON line; `None` for an algorithm number the JSON
/// format cannot name (the typed path refuses it by field).
fn verify_json(item: &pb::VerifyRecord) -> Option<String> {
    let mut line = Map::new();
    if let Some(alg) = grpc_records::algorithm(item.alg).ok()? {
        line.insert("alg".into(), json!(alg.to_string()));
    }
    if !item.hash.is_empty() {
        line.insert("hash".into(), json!(item.hash));
    }
    line.insert("pubkey".into(), json!(hex::encode(&item.pubkey)));
    for (name, bytes) in [
        ("msg", &item.msg),
        ("digest", &item.digest),
        ("sig", &item.sig),
        ("sig_der", &item.sig_der),
        ("id", &item.id),
    ] {
        if let Some(bytes) = bytes {
            line.insert(name.into(), json!(hex::encode(bytes)));
        }
    }
    Some(Value::Object(line).to_string())
}

fn recover_batch(request: pb::RecoverBatchRequest) {
    let Some(records) = records_of(request.records.clone(), request.items.clone()) else {
        return;
    };
    let count = records.len();
    let results = grpc_records::recover_records(records);
    assert_eq!(results.len(), count, "a result per record");
    for (i, result) in results.iter().enumerate() {
        if let Some(line) = request.items.get(i).and_then(recover_json) {
            let twin = chainsig_core::record::parse_recover_line(&line);
            assert_eq!(result, &twin, "typed and JSON records differ: {line}");
        }
        match result {
            // The service hands transactions to the decoder `recover` uses.
            Ok(RecoverRecord::Transaction(raw)) => super::raw_tx(raw),
            Ok(RecoverRecord::Signature(item)) => assert!(item.recovery_id <= 1),
            Err(e) => check_refusal(e),
        }
    }
}

/// A typed recover record as its `recover` JSON line, where the JSON format can say the same:
/// not for a missing record or an empty transaction (JSON's `""` is an empty transaction left
/// to the decoder to refuse; the typed path refuses it at once).
fn recover_json(item: &pb::RecoverRecord) -> Option<String> {
    use pb::recover_record::Record;
    let line = match item.record.as_ref()? {
        Record::Tx(tx) if tx.is_empty() => return None,
        Record::Tx(tx) => json!({ "tx": hex::encode(tx) }),
        Record::SignedDigest(signed) => json!({
            "digest": hex::encode(&signed.digest),
            "sig": hex::encode(&signed.sig),
            "v": signed.v,
        }),
    };
    Some(line.to_string())
}

/// A transaction of `SignTransaction` or a `SignStream` item, as the service converts it before
/// signing: refused naming its proto field, or the request its JSON-RPC twin makes.
fn sign(tx: Option<pb::Transaction>) {
    let Some(tx) = tx else { return };
    let twin = tx_json(&tx);
    match tx_request(tx) {
        Ok(request) => {
            let from_json = chainsig_eth::TxRequest::from_json(&twin);
            assert_eq!(
                from_json.as_ref(),
                Ok(&request),
                "typed and JSON transactions differ: {twin}"
            );
            if let Err(e) = request.signing_hash() {
                short(e);
            }
        }
        Err(e) => {
            assert!(e.field.starts_with("tx"), "{e:?}");
            assert!(e.message.starts_with(&e.field), "{e:?}");
            assert_eq!(e.code, INVALID_PARAMS, "{e:?}");
            short(e.message);
        }
    }
}

/// A big-endian quantity of any length as a JSON-RPC quantity (`0x0`, `0x1f`, no leading zeros).
fn quantity(bytes: &[u8]) -> Value {
    let digits = hex::encode(bytes);
    let digits = digits.trim_start_matches('0');
    json!(format!(
        "0x{}",
        if digits.is_empty() { "0" } else { digits }
    ))
}

fn number(n: u64) -> Value {
    json!(format!("{n:#x}"))
}

fn bytes(b: &[u8]) -> Value {
    json!(format!("0x{}", hex::encode(b)))
}

/// A proto transaction as the `eth_signTransaction` object that means the same.
fn tx_json(tx: &pb::Transaction) -> Value {
    let mut out = Map::new();
    let mut put = |name: &str, value: Value| {
        out.insert(name.to_string(), value);
    };
    if !tx.from.is_empty() {
        put("from", bytes(&tx.from));
    }
    if let Some(t) = tx.r#type {
        put("type", number(t.into()));
    }
    if let Some(id) = tx.chain_id {
        put("chainId", number(id));
    }
    put("nonce", number(tx.nonce));
    put("gas", number(tx.gas));
    if !tx.to.is_empty() {
        put("to", bytes(&tx.to));
    }
    put("value", quantity(&tx.value));
    put("data", bytes(&tx.data));
    for (name, fee) in [
        ("gasPrice", &tx.gas_price),
        ("maxFeePerGas", &tx.max_fee_per_gas),
        ("maxPriorityFeePerGas", &tx.max_priority_fee_per_gas),
        ("maxFeePerBlobGas", &tx.max_fee_per_blob_gas),
    ] {
        if let Some(fee) = fee {
            put(name, quantity(fee));
        }
    }
    if let Some(list) = &tx.access_list {
        let items: Vec<Value> = list
            .items
            .iter()
            .map(|item| {
                json!({
                    "address": bytes(&item.address),
                    "storageKeys": item.storage_keys.iter().map(|k| bytes(k)).collect::<Vec<_>>(),
                })
            })
            .collect();
        put("accessList", json!(items));
    }
    if !tx.blob_versioned_hashes.is_empty() {
        let hashes: Vec<Value> = tx.blob_versioned_hashes.iter().map(|h| bytes(h)).collect();
        put("blobVersionedHashes", json!(hashes));
    }
    if !tx.authorization_list.is_empty() {
        let list: Vec<Value> = tx
            .authorization_list
            .iter()
            .map(|a| {
                json!({
                    "chainId": quantity(&a.chain_id),
                    "address": bytes(&a.address),
                    "nonce": number(a.nonce),
                    "yParity": number(a.y_parity.into()),
                    "r": quantity(&a.r),
                    "s": quantity(&a.s),
                })
            })
            .collect();
        put("authorizationList", json!(list));
    }
    Value::Object(out)
}
