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
//! (up to [`CHUNK`]), each chunk is signed on the blocking pool, and a few chunks are in flight at
//! once (one per core), while a writer hands the answers back chunk by chunk in order. A bad item
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
use chainsig_core::record::{parse_recover_line, parse_verify_line, VerifyDefaults};
use chainsig_core::HashAlg;
use chainsig_cpu::pipeline::Verdict;
use chainsig_eth::{TxRequest, TxType};
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

fn address(field: &str, bytes: &[u8]) -> Result<Address, pb::ItemError> {
    if bytes.len() != 20 {
        return Err(invalid(
            field,
            format!("expected 20 bytes, found {}", bytes.len()),
        ));
    }
    Ok(Address::from_slice(bytes))
}

/// A big-endian unsigned integer of at most `max` significant bytes.
fn significant<'a>(field: &str, bytes: &'a [u8], max: usize) -> Result<&'a [u8], pb::ItemError> {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    let digits = &bytes[start..];
    if digits.len() > max {
        return Err(invalid(
            field,
            format!(
                "a {}-bit quantity is too large ({} significant bytes)",
                max * 8,
                digits.len()
            ),
        ));
    }
    Ok(digits)
}

fn quantity_u128(field: &str, bytes: &[u8]) -> Result<u128, pb::ItemError> {
    let digits = significant(field, bytes, 16)?;
    Ok(digits.iter().fold(0u128, |n, b| (n << 8) | u128::from(*b)))
}

fn quantity_u256(field: &str, bytes: &[u8]) -> Result<U256, pb::ItemError> {
    let digits = significant(field, bytes, 32)?;
    Ok(U256::from_be_slice(digits))
}

/// EIP-4844's versioned hashes (`None` when there are none, as JSON-RPC's absent field).
fn blob_hashes(hashes: Vec<Vec<u8>>) -> Result<Option<Vec<B256>>, pb::ItemError> {
    if hashes.is_empty() {
        return Ok(None);
    }
    hashes
        .iter()
        .enumerate()
        .map(|(i, hash)| {
            let field = format!("tx.blob_versioned_hashes[{i}]");
            if hash.len() != 32 {
                return Err(invalid(
                    &field,
                    format!("expected 32 bytes, found {}", hash.len()),
                ));
            }
            Ok(B256::from_slice(hash))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// EIP-7702's signed authorizations (`None` when there are none).
fn authorizations(
    list: Vec<pb::Authorization>,
) -> Result<Option<Vec<SignedAuthorization>>, pb::ItemError> {
    if list.is_empty() {
        return Ok(None);
    }
    list.into_iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |name: &str| format!("tx.authorization_list[{i}].{name}");
            if item.y_parity > 1 {
                return Err(invalid(&field("y_parity"), "must be 0 or 1"));
            }
            let inner = Authorization {
                chain_id: quantity_u256(&field("chain_id"), &item.chain_id)?,
                address: address(&field("address"), &item.address)?,
                nonce: item.nonce,
            };
            Ok(SignedAuthorization::new_unchecked(
                inner,
                item.y_parity as u8,
                quantity_u256(&field("r"), &item.r)?,
                quantity_u256(&field("s"), &item.s)?,
            ))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The [`TxRequest`] a proto transaction stands for, checked as JSON-RPC checks its object.
pub fn tx_request(tx: pb::Transaction) -> Result<TxRequest, pb::ItemError> {
    let tx_type = match tx.r#type {
        None => None,
        Some(0) => Some(TxType::Legacy),
        Some(1) => Some(TxType::Eip2930),
        Some(2) => Some(TxType::Eip1559),
        Some(3) => Some(TxType::Eip4844),
        Some(4) => Some(TxType::Eip7702),
        Some(other) => {
            return Err(invalid(
                "tx.type",
                format!("unsupported transaction type 0x{other:x}"),
            ))
        }
    };
    let access_list = match tx.access_list {
        None => None,
        Some(list) => {
            let mut items = Vec::with_capacity(list.items.len());
            for (i, item) in list.items.into_iter().enumerate() {
                let address =
                    address(&format!("tx.access_list.items[{i}].address"), &item.address)?;
                let mut storage_keys = Vec::with_capacity(item.storage_keys.len());
                for (j, key) in item.storage_keys.iter().enumerate() {
                    if key.len() != 32 {
                        return Err(invalid(
                            &format!("tx.access_list.items[{i}].storage_keys[{j}]"),
                            format!("expected 32 bytes, found {}", key.len()),
                        ));
                    }
                    storage_keys.push(B256::from_slice(key));
                }
                items.push(AccessListItem {
                    address,
                    storage_keys,
                });
            }
            Some(AccessList(items))
        }
    };
    let request = TxRequest {
        from: if tx.from.is_empty() {
            None
        } else {
            Some(address("tx.from", &tx.from)?)
        },
        tx_type,
        chain_id: tx.chain_id,
        nonce: tx.nonce,
        gas: tx.gas,
        to: if tx.to.is_empty() {
            None
        } else {
            Some(address("tx.to", &tx.to)?)
        },
        value: quantity_u256("tx.value", &tx.value)?,
        input: tx.data.into(),
        gas_price: tx
            .gas_price
            .map(|b| quantity_u128("tx.gas_price", &b))
            .transpose()?,
        max_fee_per_gas: tx
            .max_fee_per_gas
            .map(|b| quantity_u128("tx.max_fee_per_gas", &b))
            .transpose()?,
        max_priority_fee_per_gas: tx
            .max_priority_fee_per_gas
            .map(|b| quantity_u128("tx.max_priority_fee_per_gas", &b))
            .transpose()?,
        access_list,
        max_fee_per_blob_gas: tx
            .max_fee_per_blob_gas
            .map(|b| quantity_u128("tx.max_fee_per_blob_gas", &b))
            .transpose()?,
        blob_versioned_hashes: blob_hashes(tx.blob_versioned_hashes)?,
        authorization_list: authorizations(tx.authorization_list)?,
    };
    request
        .resolve_type()
        .map_err(|e| invalid(&format!("tx.{}", proto_field(e.field_name())), e.message()))?;
    Ok(request)
}

/// Signs one proto transaction through the JSON-RPC path ([`ops::sign_transaction`]).
fn sign_one(
    state: &AppState,
    client: &Client,
    method: &'static str,
    tx: Option<pb::Transaction>,
) -> Result<pb::SignedTransaction, pb::ItemError> {
    let tx = tx.ok_or_else(|| invalid("tx", "missing"))?;
    let request = tx_request(tx)?;
    match ops::sign_transaction(state, client, method, &request) {
        Ok(signed) => Ok(pb::SignedTransaction {
            raw: signed.raw,
            hash: signed.hash.to_vec(),
            from: signed.from.to_vec(),
        }),
        Err(ops::SignFailure::NoAccount(address)) => Err(item_error(
            "tx.from",
            ops::no_account_message(state, &address),
            SERVER_ERROR,
        )),
        Err(ops::SignFailure::Field(e)) => Err(invalid(
            &format!("tx.{}", proto_field(e.field_name())),
            e.message(),
        )),
    }
}

fn status_of(error: pb::ItemError) -> Status {
    if error.code == SERVER_ERROR {
        Status::not_found(error.message)
    } else {
        Status::invalid_argument(error.message)
    }
}

/// `chainsig.v1.Signer`.
pub struct SignerService {
    state: Arc<AppState>,
    metrics: MethodMetrics,
    stream_metrics: MethodMetrics,
}

/// What the reader of a stream hands its writer, in order.
enum Piece {
    Chunk(tokio::task::JoinHandle<Vec<pb::SignStreamResponse>>),
    /// The inbound stream broke: answer this once the chunks before it are out.
    End(Status),
}

type ResponseStream = Pin<Box<dyn Stream<Item = Result<pb::SignStreamResponse, Status>> + Send>>;

#[tonic::async_trait]
impl pb::signer_server::Signer for SignerService {
    async fn sign_transaction(
        &self,
        request: Request<pb::SignTransactionRequest>,
    ) -> Result<Response<pb::SignTransactionResponse>, Status> {
        let started = Instant::now();
        let client = client_of(&request);
        let outcome = sign_one(
            &self.state,
            &client,
            SIGN_TRANSACTION,
            request.into_inner().tx,
        );
        self.metrics.observe(started.elapsed(), outcome.is_err());
        match outcome {
            Ok(signed) => Ok(Response::new(pb::SignTransactionResponse {
                signed: Some(signed),
            })),
            Err(error) => Err(status_of(error)),
        }
    }

    type SignStreamStream = ResponseStream;

    async fn sign_stream(
        &self,
        request: Request<Streaming<pb::SignStreamRequest>>,
    ) -> Result<Response<Self::SignStreamStream>, Status> {
        let client = client_of(&request);
        let inbound = request.into_inner();
        let in_flight = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let (pieces, queue) = mpsc::channel::<Piece>(in_flight);
        let (answers, out) = mpsc::channel(OUT_BUFFER);
        tokio::spawn(read_stream(
            inbound,
            self.state.clone(),
            client,
            self.stream_metrics.clone(),
            pieces,
        ));
        tokio::spawn(write_stream(queue, answers));
        Ok(Response::new(Box::pin(ReceiverStream::new(out))))
    }
}

/// Takes the requests of a stream in chunks of what has arrived and starts signing each chunk.
async fn read_stream(
    mut inbound: Streaming<pb::SignStreamRequest>,
    state: Arc<AppState>,
    client: Client,
    metrics: MethodMetrics,
    pieces: mpsc::Sender<Piece>,
) {
    loop {
        let first = match inbound.message().await {
            Ok(Some(item)) => item,
            Ok(None) => return,
            Err(status) => {
                let _ = pieces.send(Piece::End(status)).await;
                return;
            }
        };
        let mut chunk = Vec::with_capacity(CHUNK);
        chunk.push(first);
        let mut broken = None;
        // Whatever else has already arrived, without waiting for more.
        while chunk.len() < CHUNK {
            let next = std::future::poll_fn(|cx| match Pin::new(&mut inbound).poll_next(cx) {
                Poll::Ready(item) => Poll::Ready(Some(item)),
                Poll::Pending => Poll::Ready(None),
            })
            .await;
            match next {
                Some(Some(Ok(item))) => chunk.push(item),
                Some(Some(Err(status))) => {
                    broken = Some(status);
                    break;
                }
                Some(None) | None => break,
            }
        }
        let (state, metrics) = (state.clone(), metrics.clone());
        let started = Instant::now();
        let task = tokio::task::spawn_blocking(move || {
            chunk
                .into_iter()
                .map(|item| {
                    let outcome = sign_one(&state, &client, SIGN_STREAM, item.tx);
                    metrics.observe(started.elapsed(), outcome.is_err());
                    pb::SignStreamResponse {
                        id: item.id,
                        outcome: Some(match outcome {
                            Ok(signed) => Outcome::Signed(signed),
                            Err(error) => Outcome::Error(error),
                        }),
                    }
                })
                .collect()
        });
        if pieces.send(Piece::Chunk(task)).await.is_err() {
            return;
        }
        if let Some(status) = broken {
            let _ = pieces.send(Piece::End(status)).await;
            return;
        }
    }
}

/// Hands the answers of each chunk back in order.
async fn write_stream(
    mut queue: mpsc::Receiver<Piece>,
    answers: mpsc::Sender<Result<pb::SignStreamResponse, Status>>,
) {
    while let Some(piece) = queue.recv().await {
        match piece {
            Piece::Chunk(task) => match task.await {
                Ok(chunk) => {
                    for answer in chunk {
                        if answers.send(Ok(answer)).await.is_err() {
                            // The client went away.
                            return;
                        }
                    }
                }
                Err(e) => {
                    let _ = answers
                        .send(Err(Status::internal(format!("signing task failed: {e}"))))
                        .await;
                    return;
                }
            },
            Piece::End(status) => {
                let _ = answers.send(Err(status)).await;
                return;
            }
        }
    }
}

/// `chainsig.v1.Verifier`.
pub struct VerifierService {
    state: Arc<AppState>,
}

/// Packs verdicts into the response's bitmap and error list.
pub fn pack_verdicts(verdicts: Vec<Verdict>) -> pb::VerifyBatchResponse {
    let mut valid = vec![0u8; verdicts.len().div_ceil(8)];
    let mut errors = Vec::new();
    let count = verdicts.len() as u32;
    for (i, verdict) in verdicts.into_iter().enumerate() {
        match verdict {
            Verdict::Valid => valid[i / 8] |= 1 << (i % 8),
            Verdict::Invalid => {}
            Verdict::Error(e) => errors.push(pb::RecordError {
                index: i as u32,
                message: e.to_string(),
            }),
        }
    }
    pb::VerifyBatchResponse {
        count,
        valid,
        errors,
    }
}

#[tonic::async_trait]
impl pb::verifier_server::Verifier for VerifierService {
    async fn verify_batch(
        &self,
        request: Request<pb::VerifyBatchRequest>,
    ) -> Result<Response<pb::VerifyBatchResponse>, Status> {
        let started = Instant::now();
        let outcome = self.verify(request.into_inner()).await;
        self.state
            .metrics
            .request(VERIFY_BATCH, started.elapsed(), outcome.is_err());
        outcome.map(Response::new)
    }

    async fn recover_batch(
        &self,
        request: Request<pb::RecoverBatchRequest>,
    ) -> Result<Response<pb::RecoverBatchResponse>, Status> {
        let started = Instant::now();
        let outcome = self.recover(request.into_inner()).await;
        self.state
            .metrics
            .request(RECOVER_BATCH, started.elapsed(), outcome.is_err());
        outcome.map(Response::new)
    }
}

impl VerifierService {
    async fn verify(
        &self,
        request: pb::VerifyBatchRequest,
    ) -> Result<pb::VerifyBatchResponse, Status> {
        let records =
            Records::of(request.records, request.items).map_err(Status::invalid_argument)?;
        ops::check_count(&self.state, records.len()).map_err(Status::invalid_argument)?;
        let defaults = VerifyDefaults {
            alg: grpc_records::algorithm(request.alg)
                .map_err(|e| Status::invalid_argument(format!("alg: {e}")))?,
            hash: if request.hash.is_empty() {
                None
            } else {
                Some(
                    request
                        .hash
                        .parse::<HashAlg>()
                        .map_err(|e| Status::invalid_argument(format!("hash: {e}")))?,
                )
            },
        };
        let records = match records {
            Records::Json(lines) => lines
                .iter()
                .map(|line| parse_verify_line(line, &defaults))
                .collect(),
            Records::Typed(items) => items
                .into_iter()
                .map(|item| grpc_records::verify_record(item, &defaults))
                .collect(),
        };
        let verdicts = self
            .state
            .batcher
            .verify(records, request.low_s)
            .await
            .map_err(Status::internal)?;
        Ok(pack_verdicts(verdicts))
    }

    async fn recover(
        &self,
        request: pb::RecoverBatchRequest,
    ) -> Result<pb::RecoverBatchResponse, Status> {
        let records =
            Records::of(request.records, request.items).map_err(Status::invalid_argument)?;
        ops::check_count(&self.state, records.len()).map_err(Status::invalid_argument)?;
        let records = match records {
            Records::Json(lines) => lines.iter().map(|line| parse_recover_line(line)).collect(),
            Records::Typed(items) => items
                .into_iter()
                .map(grpc_records::recover_record)
                .collect(),
        };
        let results = ops::recover(&self.state, records)
            .await
            .map_err(Status::internal)?;
        Ok(pb::RecoverBatchResponse {
            results: results
                .into_iter()
                .map(|r| pb::RecoverResult {
                    outcome: Some(match r {
                        Ok(found) => pb::recover_result::Outcome::Recovered(pb::Recovered {
                            address: found.address.to_vec(),
                            pubkey: found.pubkey.to_vec(),
                        }),
                        Err(e) => pb::recover_result::Outcome::Error(e.to_string()),
                    }),
                })
                .collect(),
        })
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
