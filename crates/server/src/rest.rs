//! The REST routes that existing remote signers (web3signer) made familiar, and the health checks.
//!
//! * `POST /api/v1/eth1/sign/{identifier}` with `{"data":"0x…"}`: the identifier is the key's
//!   address or its public key (SEC1, 64 or 65 bytes in hex). The data are signed as an EIP-191
//!   message, as `eth_sign` signs them; the answer is the 65-byte signature r‖s‖v in hex, as
//!   text. Signing bare keccak256(data) would let a caller get a transaction signed under the name
//!   of "data", so there is deliberately no unprefixed form.
//! * `GET /api/v1/eth1/publicKeys`: the uncompressed public keys (`0x04…`), in address order.
//! * `GET /upcheck`: 200 `OK` (no authentication, for load balancers).
//! * `GET /healthcheck`: web3signer's shape, with the number of keys loaded.
//! * `GET /openapi.json`: the OpenAPI 3 description of every HTTP route and JSON-RPC method,
//!   written by hand (the handlers read their bodies themselves, so no derive could describe
//!   them) in `openapi.json` beside Cargo.toml; a test checks it against the router and the
//!   method tables, and CI runs schemathesis on a live service against it.

use crate::auth::Client;
use crate::{ops, AppState};
use alloy_primitives::Address;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{json, Value};
use std::sync::Arc;

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": message.into()}))).into_response()
}

/// Finds the key an identifier names: an address, or a public key in SEC1 form.
fn find_key(state: &AppState, identifier: &str) -> Result<Address, (StatusCode, String)> {
    let digits = identifier.strip_prefix("0x").unwrap_or(identifier);
    let bytes = hex::decode(digits).map_err(|_| {
        (
            StatusCode::BAD_REQUEST,
            "identifier: expected an address or a public key in hex".to_string(),
        )
    })?;
    let address = match bytes.len() {
        20 => Address::from_slice(&bytes),
        64 | 65 => {
            let xy = if bytes.len() == 65 {
                if bytes[0] != 4 {
                    return Err((
                        StatusCode::BAD_REQUEST,
                        "identifier: a 65-byte public key starts with 04".to_string(),
                    ));
                }
                &bytes[1..]
            } else {
                &bytes[..]
            };
            Address::from_slice(&alloy_primitives::keccak256(xy)[12..])
        }
        n => {
            return Err((
                StatusCode::BAD_REQUEST,
                format!("identifier: expected 20 (address) or 64/65 (public key) bytes, found {n}"),
            ))
        }
    };
    if state.signer.key(&address).is_none() {
        return Err((
            StatusCode::NOT_FOUND,
            format!("no key for {}", address.to_checksum(None)),
        ));
    }
    Ok(address)
}

/// `POST /api/v1/eth1/sign/{identifier}`.
pub async fn sign(
    State(state): State<Arc<AppState>>,
    Extension(client): Extension<Client>,
    Path(identifier): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let address = match find_key(&state, &identifier) {
        Ok(address) => address,
        Err((status, message)) => return error(status, message),
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "request body is larger than the limit of {} bytes",
                    state.limits.body_bytes
                ),
            )
        }
        Err(rejection) => return error(rejection.status(), rejection.body_text()),
    };
    let data = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(object)) => match object.get("data") {
            Some(Value::String(text)) => {
                match hex::decode(text.strip_prefix("0x").unwrap_or(text)) {
                    Ok(data) => data,
                    Err(e) => {
                        return error(StatusCode::BAD_REQUEST, format!("data: not hex ({e})"))
                    }
                }
            }
            Some(_) => return error(StatusCode::BAD_REQUEST, "data: expected a hex string"),
            None => return error(StatusCode::BAD_REQUEST, "data: missing"),
        },
        Ok(_) => return error(StatusCode::BAD_REQUEST, "body: expected a JSON object"),
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("body: not JSON ({e})")),
    };
    let signature = match ops::sign_message(&state, &client, "eth1/sign", &address, &data) {
        Ok(signature) => signature,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("0x{}", hex::encode(signature)),
    )
        .into_response()
}

/// `GET /api/v1/eth1/publicKeys`.
pub async fn public_keys(State(state): State<Arc<AppState>>) -> Response {
    let keys: Vec<String> = state
        .signer
        .addresses()
        .iter()
        .filter_map(|a| state.signer.key(a))
        .map(|key| format!("0x{}", hex::encode(key.public_key_uncompressed())))
        .collect();
    Json(keys).into_response()
}

/// `GET /upcheck`.
pub async fn upcheck() -> &'static str {
    "OK"
}

/// `GET /healthcheck`.
pub async fn healthcheck(State(state): State<Arc<AppState>>) -> Response {
    let keys = state.signer.addresses().len();
    Json(json!({
        "status": "UP",
        "checks": [{"id": "keys-check", "status": "UP", "keys": keys}],
        "outcome": "UP",
    }))
    .into_response()
}

/// `GET /metrics`.
pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

/// The OpenAPI 3 document `GET /openapi.json` serves.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// `GET /openapi.json`.
pub async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}
