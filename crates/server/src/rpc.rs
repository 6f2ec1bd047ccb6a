//! JSON-RPC 2.0 at `POST /`: single calls and batches.
//!
//! The envelope is checked by hand rather than through a JSON-RPC framework so every malformed
//! request gets the exact code the specification gives it (-32700 for text that is not JSON,
//! -32600 for JSON that is not a request, -32601, -32602 naming the parameter at fault) and so
//! the limits on body and batch size answer in JSON-RPC terms. Valid calls without an `id` are
//! notifications: they run, and get no response; invalid ones are answered with `"id": null`.

use crate::auth::Client;
use crate::metrics::UNKNOWN_METHOD;
use crate::{eth_rpc, ops, AppState};
use alloy_primitives::Address;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chainsig_core::record::{
    parse_recover_line, parse_recover_value, parse_verify_line, parse_verify_value, VerifyDefaults,
};
use chainsig_core::{Algorithm, HashAlg, RecordError};
use chainsig_cpu::pipeline::Verdict;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Instant;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Server errors: no key for the requested account.
pub const SERVER_ERROR: i64 = -32000;

/// The verification methods of this module; the Ethereum ones are [`eth_rpc::METHODS`]. Both
/// are the metric labels.
pub const METHODS: &[&str] = &["chainsig_verifyBatch", "chainsig_recoverBatch"];

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    fn to_json(&self) -> Value {
        json!({"code": self.code, "message": self.message})
    }
}

fn response(id: Value, outcome: Result<Value, RpcError>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}),
    }
}

/// The `POST /` handler.
pub async fn handle(
    State(state): State<Arc<AppState>>,
    Extension(client): Extension<Client>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let status = rejection.status();
            let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
                format!(
                    "request body is larger than the limit of {} bytes",
                    state.limits.body_bytes
                )
            } else {
                format!("cannot read the request body: {rejection}")
            };
            let error = RpcError::new(INVALID_REQUEST, message);
            return (status, Json(response(Value::Null, Err(error)))).into_response();
        }
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(e) => {
            let error = RpcError::new(PARSE_ERROR, format!("parse error: {e}"));
            return Json(response(Value::Null, Err(error))).into_response();
        }
    };
    match request {
        Value::Array(calls) => {
            if calls.is_empty() {
                let error = RpcError::new(INVALID_REQUEST, "empty batch");
                return Json(response(Value::Null, Err(error))).into_response();
            }
            if calls.len() > state.limits.batch_requests {
                let error = RpcError::new(
                    INVALID_REQUEST,
                    format!(
                        "batch of {} requests is above the limit of {}",
                        calls.len(),
                        state.limits.batch_requests
                    ),
                );
                return Json(response(Value::Null, Err(error))).into_response();
            }
            let mut answers = Vec::with_capacity(calls.len());
            for call in calls {
                if let Some(answer) = handle_call(&state, &client, call).await {
                    answers.push(answer);
                }
            }
            if answers.is_empty() {
                StatusCode::NO_CONTENT.into_response()
            } else {
                Json(Value::Array(answers)).into_response()
            }
        }
        call => match handle_call(&state, &client, call).await {
            Some(answer) => Json(answer).into_response(),
            None => StatusCode::NO_CONTENT.into_response(),
        },
    }
}

/// One call of a single or batch request; `None` for a notification.
///
/// JSON-RPC 2.0 §4.1 makes a notification of a *valid* request without an `id` member; a call
/// that is not a valid request is answered whether or not it has an `id` (§5: -32600, with
/// `"id": null` where the id cannot be read), so a client learns that it sent garbage.
async fn handle_call(state: &AppState, client: &Client, call: Value) -> Option<Value> {
    let started = Instant::now();
    let Value::Object(mut call) = call else {
        let error = RpcError::new(INVALID_REQUEST, "a request must be a JSON object");
        return Some(response(Value::Null, Err(error)));
    };
    let id = match call.remove("id") {
        None => None,
        Some(id @ (Value::Null | Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => {
            let error = RpcError::new(INVALID_REQUEST, "id: must be a string, a number or null");
            return Some(response(Value::Null, Err(error)));
        }
    };
    let (method, params) = match check_envelope(&mut call) {
        Ok(envelope) => envelope,
        Err(error) => {
            state
                .metrics
                .request(UNKNOWN_METHOD, started.elapsed(), true);
            return Some(response(id.unwrap_or(Value::Null), Err(error)));
        }
    };
    let label = METHODS
        .iter()
        .chain(eth_rpc::METHODS)
        .copied()
        .find(|m| *m == method)
        .unwrap_or(UNKNOWN_METHOD);
    let outcome = dispatch(state, client, &method, params).await;
    state
        .metrics
        .request(label, started.elapsed(), outcome.is_err());
    id.map(|id| response(id, outcome))
}

/// The method name and the parameters, as an array or an object (`None` when absent).
fn check_envelope(call: &mut Map<String, Value>) -> Result<(String, Option<Value>), RpcError> {
    match call.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        _ => return Err(RpcError::new(INVALID_REQUEST, "jsonrpc: must be \"2.0\"")),
    }
    let method = match call.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return Err(RpcError::new(INVALID_REQUEST, "method: must be a string")),
        None => return Err(RpcError::new(INVALID_REQUEST, "method: missing")),
    };
    let params = match call.remove("params") {
        None => None,
        Some(params @ (Value::Array(_) | Value::Object(_))) => Some(params),
        Some(_) => {
            return Err(RpcError::new(
                INVALID_REQUEST,
                "params: must be an array or an object",
            ))
        }
    };
    Ok((method, params))
}

async fn dispatch(
    state: &AppState,
    client: &Client,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    match method {
        "chainsig_verifyBatch" => verify_batch(state, params).await,
        "chainsig_recoverBatch" => recover_batch(state, params).await,
        other => eth_rpc::dispatch(state, client, other, params),
    }
}

/// geth's answer to a method it does not serve.
pub(crate) fn method_not_found(method: &str) -> RpcError {
    let shown: String = method.chars().take(64).collect();
    RpcError::new(
        METHOD_NOT_FOUND,
        format!("the method {shown} does not exist/is not available"),
    )
}

pub(crate) fn no_params(params: &Option<Value>) -> Result<(), RpcError> {
    match params {
        None => Ok(()),
        Some(Value::Array(a)) if a.is_empty() => Ok(()),
        Some(Value::Object(o)) if o.is_empty() => Ok(()),
        Some(_) => Err(RpcError::params("params: this method takes none")),
    }
}

/// The positional parameters, between `min` and `max` of them.
pub(crate) fn positional(
    params: Option<Value>,
    min: usize,
    max: usize,
) -> Result<Vec<Value>, RpcError> {
    let list = match params {
        Some(Value::Array(list)) => list,
        None => Vec::new(),
        Some(_) => {
            return Err(RpcError::params(
                "params: this method takes positional parameters (an array)",
            ))
        }
    };
    if list.len() < min || list.len() > max {
        let expected = if min == max {
            format!("{min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(RpcError::params(format!(
            "params: expected {expected} parameters, found {}",
            list.len()
        )));
    }
    Ok(list)
}

/// An account the signer must hold: -32602 when the text is no address, -32000 when no key matches.
pub(crate) fn account(state: &AppState, field: &str, value: &Value) -> Result<Address, RpcError> {
    let address: Address = value
        .as_str()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| RpcError::params(format!("{field}: expected a 20-byte hex address")))?;
    if state.signer.key(&address).is_none() {
        return Err(no_account(state, &address));
    }
    Ok(address)
}

pub(crate) fn no_account(state: &AppState, address: &Address) -> RpcError {
    RpcError::new(SERVER_ERROR, ops::no_account_message(state, address))
}

pub(crate) fn hex_bytes(field: &str, value: &Value) -> Result<Vec<u8>, RpcError> {
    let text = value
        .as_str()
        .ok_or_else(|| RpcError::params(format!("{field}: expected a hex string")))?;
    let digits = text.strip_prefix("0x").unwrap_or(text);
    hex::decode(digits).map_err(|e| RpcError::params(format!("{field}: not hex ({e})")))
}

/// The records of a batch call: `[records, options?]` or `{"records": [...], ...options}`.
fn batch_params(params: Option<Value>) -> Result<(Vec<Value>, Map<String, Value>), RpcError> {
    let (records, options) = match params {
        Some(Value::Object(mut named)) => {
            let records = named
                .remove("records")
                .ok_or_else(|| RpcError::params("records: missing"))?;
            (records, named)
        }
        params => {
            let mut list = positional(params, 1, 2)?.into_iter();
            let records = list.next().expect("one parameter at least");
            let options = match list.next() {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(options)) => options,
                Some(_) => return Err(RpcError::params("params[1]: expected an options object")),
            };
            (records, options)
        }
    };
    match records {
        Value::Array(records) => Ok((records, options)),
        _ => Err(RpcError::params("records: expected an array")),
    }
}

fn check_count(state: &AppState, count: usize) -> Result<(), RpcError> {
    ops::check_count(state, count).map_err(RpcError::params)
}

fn verify_options(options: &Map<String, Value>) -> Result<(VerifyDefaults, bool), RpcError> {
    let mut defaults = VerifyDefaults::default();
    let mut low_s = false;
    for (name, value) in options {
        match name.as_str() {
            "lowS" => {
                low_s = value
                    .as_bool()
                    .ok_or_else(|| RpcError::params("lowS: expected true or false"))?
            }
            "alg" => {
                let text = value
                    .as_str()
                    .ok_or_else(|| RpcError::params("alg: expected a string"))?;
                defaults.alg = Some(
                    text.parse::<Algorithm>()
                        .map_err(|e| RpcError::params(format!("alg: {e}")))?,
                );
            }
            "hash" => {
                let text = value
                    .as_str()
                    .ok_or_else(|| RpcError::params("hash: expected a string"))?;
                defaults.hash = Some(
                    text.parse::<HashAlg>()
                        .map_err(|e| RpcError::params(format!("hash: {e}")))?,
                );
            }
            other => {
                let shown: String = other.chars().take(64).collect();
                return Err(RpcError::params(format!(
                    "{shown}: unknown option (lowS, alg, hash)"
                )));
            }
        }
    }
    Ok((defaults, low_s))
}

/// `chainsig_verifyBatch`: records in the `verify` format (objects, or their JSON text), one
/// verdict each, in order: `{"valid":true}`, `{"valid":false}` or `{"error":"field: reason"}`.
async fn verify_batch(state: &AppState, params: Option<Value>) -> Result<Value, RpcError> {
    let (records, options) = batch_params(params)?;
    check_count(state, records.len())?;
    let (defaults, low_s) = verify_options(&options)?;
    let records = records
        .iter()
        .map(|record| match record {
            Value::String(line) => parse_verify_line(line, &defaults),
            other => parse_verify_value(other, &defaults),
        })
        .collect();
    let verdicts = state
        .batcher
        .verify(records, low_s)
        .await
        .map_err(|e| RpcError::new(INTERNAL_ERROR, e))?;
    Ok(Value::Array(
        verdicts
            .into_iter()
            .map(|v| match v {
                Verdict::Valid => json!({"valid": true}),
                Verdict::Invalid => json!({"valid": false}),
                Verdict::Error(e) => json!({"error": e.to_string()}),
            })
            .collect(),
    ))
}

/// `chainsig_recoverBatch`: records in the `recover` format, one answer each, in order:
/// `{"address":"0x…","pubkey":"04…"}` or `{"error":"…"}`.
async fn recover_batch(state: &AppState, params: Option<Value>) -> Result<Value, RpcError> {
    let (records, options) = batch_params(params)?;
    if let Some(name) = options.keys().next() {
        let shown: String = name.chars().take(64).collect();
        return Err(RpcError::params(format!("{shown}: unknown option")));
    }
    check_count(state, records.len())?;
    let records: Vec<Result<_, RecordError>> = records
        .iter()
        .map(|record| match record {
            Value::String(line) => parse_recover_line(line),
            other => parse_recover_value(other),
        })
        .collect();
    let results = ops::recover(state, records)
        .await
        .map_err(|e| RpcError::new(INTERNAL_ERROR, e))?;
    Ok(Value::Array(
        results
            .into_iter()
            .map(|r| match r {
                Ok(found) => json!({
                    "address": Address::from(found.address).to_checksum(None),
                    "pubkey": hex::encode(found.pubkey),
                }),
                Err(e) => json!({"error": e.to_string()}),
            })
            .collect(),
    ))
}
