//! The Ethereum methods of `POST /`, as geth's `eth`/`net`/`web3` namespaces and clef's `account`
//! namespace serve them, so that web3.py, ethers and viem work unmodified.
//!
//! | method | params | result |
//! | --- | --- | --- |
//! | `eth_chainId` | none | the configured chain id, hex |
//! | `net_version` | none | the chain id, decimal string |
//! | `web3_clientVersion` | none | `chainsig/<version>` |
//! | `eth_accounts`, `account_list` | none | checksummed addresses |
//! | `eth_signTransaction`, `account_signTransaction` | `[tx]` | `{raw, tx}` as geth (or the raw hex with `--sign-tx-result raw`) |
//! | `eth_sign` | `[address, data]` | EIP-191 signature r‖s‖v |
//! | `personal_sign` | `[data, address]` | EIP-191 signature |
//! | `eth_signTypedData`, `eth_signTypedData_v4`, `account_signTypedData` | `[address, typedData]` | EIP-712 signature |
//! | `account_signData` | `[contentType, address, data]` | `text/plain` (EIP-191) or `data/typed` (EIP-712) |
//! | `account_ecRecover` | `[data, signature]` | the EIP-191 signer's address |
//! | `chainsig_signAuthorization` | `[address, {chainId, address, nonce}]` | a signed EIP-7702 authorization |
//!
//! Not served, on purpose: `eth_sendTransaction` (the service holds no connection to a node),
//! `account_new`/`account_import` and the `personal_*` key methods (keys are made and imported
//! offline with `chainsig eth account`; the service has no surface that writes keys), and
//! `eth_signTypedData_v1`/`_v3` (superseded by v4). Error codes are geth's: -32602 for a
//! malformed parameter (naming it), -32000 for an account the signer does not hold.

use crate::auth::Client;
use crate::rpc::{
    account, hex_bytes, method_not_found, no_account, no_params, positional, RpcError,
    INTERNAL_ERROR, SERVER_ERROR,
};
use crate::{ops, AppState};
use alloy_primitives::{eip191_hash_message, Address, B256};
use chainsig_eth::{authorization, eip712, TxRequest};
use serde_json::{json, Value};

/// The methods of this module, for dispatch and metric labels.
pub const METHODS: &[&str] = &[
    "eth_chainId",
    "net_version",
    "web3_clientVersion",
    "eth_accounts",
    "account_list",
    "eth_signTransaction",
    "account_signTransaction",
    "eth_sign",
    "personal_sign",
    "eth_signTypedData",
    "eth_signTypedData_v4",
    "account_signTypedData",
    "account_signData",
    "account_ecRecover",
    "chainsig_signAuthorization",
];

/// What `eth_signTransaction` answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SignTxResult {
    /// geth's and clef's `{raw, tx}` (what web3.py expects).
    #[default]
    Geth,
    /// The raw signed transaction alone, as hex (what some wallets' providers expect).
    Raw,
}

/// Runs `method`: one of this module's, or -32601.
pub fn dispatch(
    state: &AppState,
    client: &Client,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    match method {
        "eth_chainId" => no_params(&params)
            .and_then(|_| chain_id(state))
            .map(|id| json!(format!("{id:#x}"))),
        "net_version" => no_params(&params)
            .and_then(|_| chain_id(state))
            .map(|id| json!(id.to_string())),
        "web3_clientVersion" => {
            no_params(&params).map(|_| json!(concat!("chainsig/v", env!("CARGO_PKG_VERSION"))))
        }
        "eth_accounts" | "account_list" => no_params(&params).map(|_| {
            json!(state
                .signer
                .addresses()
                .iter()
                .map(|a| a.to_checksum(None))
                .collect::<Vec<_>>())
        }),
        "eth_signTransaction" | "account_signTransaction" => {
            sign_transaction(state, client, method, params)
        }
        "eth_sign" => positional(params, 2, 2).and_then(|p| {
            let address = account(state, "params[0] (address)", &p[0])?;
            let message = hex_bytes("params[1] (data)", &p[1])?;
            sign_message(state, client, "eth_sign", &address, &message)
        }),
        "personal_sign" => positional(params, 2, 2).and_then(|p| {
            let message = hex_bytes("params[0] (data)", &p[0])?;
            let address = account(state, "params[1] (address)", &p[1])?;
            sign_message(state, client, "personal_sign", &address, &message)
        }),
        "eth_signTypedData" | "eth_signTypedData_v4" | "account_signTypedData" => {
            positional(params, 2, 2).and_then(|p| {
                let address = account(state, "params[0] (address)", &p[0])?;
                sign_typed_data(state, client, method, &address, &p[1], "params[1]")
            })
        }
        "account_signData" => positional(params, 3, 3).and_then(|p| {
            let address = account(state, "params[1] (address)", &p[1])?;
            match p[0].as_str() {
                Some("text/plain") => {
                    let message = hex_bytes("params[2] (data)", &p[2])?;
                    sign_message(state, client, "account_signData", &address, &message)
                }
                Some("data/typed") => sign_typed_data(
                    state,
                    client,
                    "account_signData",
                    &address,
                    &p[2],
                    "params[2]",
                ),
                _ => Err(RpcError::params(
                    "params[0] (content type): expected text/plain or data/typed",
                )),
            }
        }),
        "account_ecRecover" => positional(params, 2, 2).and_then(|p| {
            let message = hex_bytes("params[0] (data)", &p[0])?;
            let signature: [u8; 65] = hex_bytes("params[1] (signature)", &p[1])?
                .try_into()
                .map_err(|_| RpcError::params("params[1] (signature): expected 65 bytes"))?;
            chainsig_eth::recover_eip191(&message, &signature)
                .map(|a| json!(a.to_checksum(None)))
                .map_err(|e| RpcError::params(format!("params[1] (signature).{e}")))
        }),
        "chainsig_signAuthorization" => positional(params, 2, 2).and_then(|p| {
            let address = account(state, "params[0] (address)", &p[0])?;
            sign_authorization(state, client, &address, &p[1])
        }),
        other => Err(method_not_found(other)),
    }
}

fn chain_id(state: &AppState) -> Result<u64, RpcError> {
    state.signer.policy().chain_id.ok_or_else(|| {
        RpcError::new(
            SERVER_ERROR,
            "no chain id configured: start the service with --chain-id",
        )
    })
}

fn sign_transaction(
    state: &AppState,
    client: &Client,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    let params = positional(params, 1, 1)?;
    let request =
        TxRequest::from_json(&params[0]).map_err(|e| RpcError::params(format!("params[0].{e}")))?;
    let signed =
        ops::sign_transaction(state, client, method, &request).map_err(
            |failure| match failure {
                ops::SignFailure::NoAccount(address) => no_account(state, &address),
                ops::SignFailure::Field(e) => RpcError::params(format!("params[0].{e}")),
            },
        )?;
    let raw = format!("0x{}", hex::encode(&signed.raw));
    Ok(match state.rpc.sign_tx_result {
        SignTxResult::Geth => json!({"raw": raw, "tx": signed.to_rpc_json()}),
        SignTxResult::Raw => json!(raw),
    })
}

/// Signs `hash` through [`ops::sign_hash`] and answers the signature in hex.
fn sign_hash(
    state: &AppState,
    client: &Client,
    method: &str,
    kind: &str,
    address: &Address,
    hash: &B256,
) -> Result<Value, RpcError> {
    ops::sign_hash(state, client, method, kind, address, hash)
        .map(|signature| json!(format!("0x{}", hex::encode(signature))))
        .map_err(|e| RpcError::new(INTERNAL_ERROR, e.to_string()))
}

fn sign_message(
    state: &AppState,
    client: &Client,
    method: &str,
    address: &Address,
    message: &[u8],
) -> Result<Value, RpcError> {
    sign_hash(
        state,
        client,
        method,
        "message",
        address,
        &eip191_hash_message(message),
    )
}

fn sign_typed_data(
    state: &AppState,
    client: &Client,
    method: &str,
    address: &Address,
    data: &Value,
    field: &str,
) -> Result<Value, RpcError> {
    let typed = eip712::parse(data, field).map_err(|e| RpcError::params(e.to_string()))?;
    let hash = eip712::signing_hash(&typed, field).map_err(|e| RpcError::params(e.to_string()))?;
    sign_hash(state, client, method, "typed_data", address, &hash)
}

fn sign_authorization(
    state: &AppState,
    client: &Client,
    address: &Address,
    tuple: &Value,
) -> Result<Value, RpcError> {
    let unsigned =
        authorization::parse(tuple, "params[1]").map_err(|e| RpcError::params(e.to_string()))?;
    let hash = unsigned.signature_hash();
    let signed = state
        .signer
        .sign_authorization(address, unsigned)
        .map_err(|e| RpcError::params(format!("params[1].{e}")))?;
    state.metrics.signature("authorization");
    tracing::info!(
        target: "audit",
        client = %client,
        method = "chainsig_signAuthorization",
        key = %address,
        authorization_hash = %hash,
        "signed"
    );
    Ok(authorization::to_json(&signed))
}
