//! gRPC (tonic): `chainsig.v1.Signer` and `chainsig.v1.Verifier` from `proto/chainsig.proto`, with
//! server reflection (v1, and v1alpha for grpcurl and older clients), served as routes of the HTTP router ([`crate::router`]) so one listener
//! answers both, and TLS, mTLS, bearer tokens and rate limits apply to gRPC exactly as to HTTP.
//!
//! * `Signer.SignTransaction` is `eth_signTransaction`; `Signer.SignStream` signs many
//!   transactions on one bidirectional stream, one response per request, in request order.
//! * `Verifier.VerifyBatch` is `chainsig_verifyBatch`, answering with a packed bitmap (bit i of
//!   the verdicts is bit i % 8 of byte i / 8); `Verifier.RecoverBatch` is `chainsig_recoverBatch`.
//!
//! Transactions arrive as typed protobuf fields rather than JSON, so the conversion to a
//! [`TxRequest`] is written here (byte lengths checked, errors naming the proto field); from the
//! [`TxRequest`] on, the envelope rules, signing, metrics and audit log are those of JSON-RPC
//! ([`crate::ops`]). Verify and recover records come typed (bytes fields,
//! [`crate::grpc_records`]) or as the `verify`/`recover` JSON texts, and go through the same
//! record rules and the same batcher as JSON-RPC.
//!
//! Bulk signing is pipelined: the stream's requests are taken in chunks of whatever has arrived
//! (up to [`CHUNK`]), each chunk is signed on the blocking pool (a lone transaction, or up to one
//! lane call of eight, where it was read, sparing a thread's wake-up), and a few chunks are in
//! flight at once (one per core), while a writer hands the answers back chunk by chunk in order. A bad item
//! gets an [`pb::ItemError`] in its place; only a broken stream (a message that does not decode)
//! ends the call. Each signature writes its audit line and counts in the metrics under
//! `chainsig.v1.Signer/SignStream` (one request per item).
//!
//! Rate limits count HTTP requests, so a stream counts once however many items it carries; the
//! body limit (`--max-body`) is the largest gRPC message decoded, and `--max-records` bounds the
//! records of one verify or recover call.

use crate::auth::Client;
use crate::grpc_records::{self, Records};
use crate::metrics::MethodMetrics;
use crate::{ops, AppState};
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_eips::eip7702::{Authorization, SignedAuthorization};
use alloy_primitives::{Address, B256, U256};
use axum::Router;
use chainsig_cpu::pipeline::Verdict;
use chainsig_eth::{SignedTx, TxRequest, TxType};
use pb::sign_stream_response::Outcome;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::server::NamedService;
use tonic::{Request, Response, Status, Streaming};

/// The generated messages, services and clients, and the encoded descriptor set (for reflection).
pub mod pb {
    #![allow(clippy::all)]
    tonic::include_proto!("chainsig.v1");

    /// The `FileDescriptorSet` of `chainsig.proto`, protobuf-encoded.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/chainsig_descriptor.bin"));
}

/// Most stream items signed as one task on the blocking pool.
pub const CHUNK: usize = 256;
/// Answers buffered for the writer of one stream.
const OUT_BUFFER: usize = 2 * CHUNK;

/// The gRPC method labels of the metrics.
pub const SIGN_TRANSACTION: &str = "chainsig.v1.Signer/SignTransaction";
pub const SIGN_STREAM: &str = "chainsig.v1.Signer/SignStream";
pub const VERIFY_BATCH: &str = "chainsig.v1.Verifier/VerifyBatch";
pub const RECOVER_BATCH: &str = "chainsig.v1.Verifier/RecoverBatch";

/// JSON-RPC's codes, carried in [`pb::ItemError::code`].
const INVALID_PARAMS: i32 = crate::rpc::INVALID_PARAMS as i32;
const SERVER_ERROR: i32 = crate::rpc::SERVER_ERROR as i32;

/// Adds the gRPC services (and reflection) to `router`, at `/{service}/{method}`.
pub fn add_routes<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    state: &Arc<AppState>,
) -> Router<S> {
    let limit = state.limits.body_bytes;
    let signer = pb::signer_server::SignerServer::new(SignerService {
        state: state.clone(),
        metrics: state.metrics.method(SIGN_TRANSACTION),
        stream_metrics: state.metrics.method(SIGN_STREAM),
    })
    .max_decoding_message_size(limit);
    let verifier = pb::verifier_server::VerifierServer::new(VerifierService {
        state: state.clone(),
    })
    .max_decoding_message_size(limit);
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection()
        .build_v1()
        .expect("the descriptor set compiled by build.rs is valid");
    // grpcurl before 1.9 and many client libraries still ask v1alpha.
    let reflection_v1alpha = reflection()
        .build_v1alpha()
        .expect("the descriptor set compiled by build.rs is valid");
    router
        .route_service(&path_of(&signer), signer)
        .route_service(&path_of(&verifier), verifier)
        .route_service(&path_of(&reflection_v1), reflection_v1)
        .route_service(&path_of(&reflection_v1alpha), reflection_v1alpha)
}

fn path_of<T: NamedService>(_: &T) -> String {
    format!("/{}/{{*method}}", T::NAME)
}

/// Who sent the request: the authentication middleware put it in the HTTP extensions, which tonic
/// keeps.
fn client_of<T>(request: &Request<T>) -> Client {
    request
        .extensions()
        .get::<Client>()
        .copied()
        .unwrap_or_default()
}

mod signer;
mod tx;
mod verifier;
pub use signer::SignerService;
pub use tx::tx_request;
pub use verifier::{pack_verdicts, VerifierService};

/// The proto name of a field [`TxRequest`]'s checks name in JSON-RPC terms.
/// An indexed name (`blobVersionedHashes[0]`) keeps its index.
fn proto_field(json: &str) -> String {
    let split = json.find(['[', '.']).unwrap_or(json.len());
    let (head, rest) = json.split_at(split);
    let head = match head {
        "chainId" => "chain_id",
        "gasPrice" => "gas_price",
        "gasLimit" => "gas",
        "maxFeePerGas" => "max_fee_per_gas",
        "maxPriorityFeePerGas" => "max_priority_fee_per_gas",
        "accessList" => "access_list",
        "maxFeePerBlobGas" => "max_fee_per_blob_gas",
        "blobVersionedHashes" => "blob_versioned_hashes",
        "authorizationList" => "authorization_list",
        "input" => "data",
        other => other,
    };
    format!("{head}{rest}")
}

fn item_error(field: &str, message: impl std::fmt::Display, code: i32) -> pb::ItemError {
    pb::ItemError {
        field: field.to_string(),
        message: format!("{field}: {message}"),
        code,
    }
}

fn invalid(field: &str, message: impl std::fmt::Display) -> pb::ItemError {
    item_error(field, message, INVALID_PARAMS)
}

fn status_of(error: pb::ItemError) -> Status {
    if error.code == SERVER_ERROR {
        Status::not_found(error.message)
    } else {
        Status::invalid_argument(error.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx() -> pb::Transaction {
        pb::Transaction {
            chain_id: Some(1),
            nonce: 7,
            gas: 21_000,
            to: vec![0x35; 20],
            value: vec![0, 0, 1],
            max_fee_per_gas: Some(vec![0x77, 0x35, 0x94, 0x00]),
            max_priority_fee_per_gas: Some(vec![0x3b, 0x9a, 0xca, 0x00]),
            ..Default::default()
        }
    }

    #[test]
    fn proto_transactions_become_the_json_rpc_request() {
        let request = tx_request(tx()).unwrap();
        let json = TxRequest::from_json(&serde_json::json!({
            "chainId": "0x1", "nonce": "0x7", "gas": "0x5208",
            "to": "0x3535353535353535353535353535353535353535", "value": "0x1",
            "maxFeePerGas": "0x77359400", "maxPriorityFeePerGas": "0x3b9aca00",
        }))
        .unwrap();
        assert_eq!(request, json);
        assert_eq!(request.resolve_type().unwrap(), TxType::Eip1559);
    }

    #[test]
    fn bad_fields_are_named() {
        let cases: Vec<(pb::Transaction, &str)> = vec![
            (
                pb::Transaction {
                    to: vec![1; 19],
                    ..tx()
                },
                "tx.to",
            ),
            (
                pb::Transaction {
                    from: vec![1; 21],
                    ..tx()
                },
                "tx.from",
            ),
            (
                pb::Transaction {
                    max_fee_per_gas: Some(vec![1; 17]),
                    ..tx()
                },
                "tx.max_fee_per_gas",
            ),
            (
                pb::Transaction {
                    max_fee_per_gas: Some(vec![1]),
                    ..tx()
                },
                "tx.max_fee_per_gas",
            ),
            (
                pb::Transaction {
                    gas_price: Some(vec![1]),
                    ..tx()
                },
                "tx.gas_price",
            ),
            (
                pb::Transaction {
                    blob_versioned_hashes: vec![vec![2; 32]],
                    max_fee_per_blob_gas: Some(vec![1]),
                    ..tx()
                },
                "tx.blob_versioned_hashes[0]",
            ),
            (
                pb::Transaction {
                    blob_versioned_hashes: vec![vec![1; 31]],
                    ..tx()
                },
                "tx.blob_versioned_hashes[0]",
            ),
            (
                pb::Transaction {
                    authorization_list: vec![pb::Authorization {
                        y_parity: 2,
                        ..Default::default()
                    }],
                    ..tx()
                },
                "tx.authorization_list[0].y_parity",
            ),
            (
                pb::Transaction {
                    r#type: Some(5),
                    ..tx()
                },
                "tx.type",
            ),
            (
                pb::Transaction {
                    value: vec![1; 33],
                    ..tx()
                },
                "tx.value",
            ),
        ];
        for (tx, field) in cases {
            let error = tx_request(tx).unwrap_err();
            assert_eq!(error.field, field, "{}", error.message);
            assert!(error.message.starts_with(field), "{}", error.message);
            assert_eq!(error.code, INVALID_PARAMS);
        }
    }

    #[test]
    fn bitmaps_are_lsb_first() {
        let verdicts = (0..11)
            .map(|i| match i {
                0 | 3 | 8 | 10 => Verdict::Valid,
                5 => Verdict::Error(chainsig_core::RecordError::new("sig", "bad")),
                _ => Verdict::Invalid,
            })
            .collect();
        let packed = pack_verdicts(verdicts);
        assert_eq!(packed.count, 11);
        assert_eq!(packed.valid, vec![0b0000_1001, 0b0000_0101]);
        assert_eq!(packed.errors.len(), 1);
        assert_eq!(packed.errors[0].index, 5);
        assert_eq!(packed.errors[0].message, "sig: bad");
    }
}
