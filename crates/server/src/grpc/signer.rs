//! `chainsig.v1.Signer`: one transaction, or a bidirectional stream signed in pipelined chunks
//! and answered in request order.

use super::*;

/// A proto transaction as the JSON-RPC path's request.
fn request_of(tx: Option<pb::Transaction>) -> Result<TxRequest, pb::ItemError> {
    tx_request(tx.ok_or_else(|| invalid("tx", "missing"))?)
}

/// The proto answer of a signing through [`ops`].
fn answer_of(
    state: &AppState,
    outcome: Result<SignedTx, ops::SignFailure>,
) -> Result<pb::SignedTransaction, pb::ItemError> {
    match outcome {
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

/// Signs one proto transaction through the JSON-RPC path ([`ops::sign_transaction`]).
fn sign_one(
    state: &AppState,
    client: &Client,
    method: &'static str,
    tx: Option<pb::Transaction>,
) -> Result<pb::SignedTransaction, pb::ItemError> {
    let request = request_of(tx)?;
    answer_of(
        state,
        ops::sign_transaction(state, client, method, &request),
    )
}

/// Signs a stream's chunk in order: the requests that convert are signed together
/// ([`ops::sign_transactions`]: eight at a time in lanes where the CPU has them), the others keep
/// their errors in their places.
fn sign_chunk(
    state: &AppState,
    client: &Client,
    items: Vec<pb::SignStreamRequest>,
) -> Vec<(u64, Result<pb::SignedTransaction, pb::ItemError>)> {
    let mut requests = Vec::with_capacity(items.len());
    let slots: Vec<(u64, Result<(), pb::ItemError>)> = items
        .into_iter()
        .map(|item| {
            let converted = request_of(item.tx).map(|request| requests.push(request));
            (item.id, converted)
        })
        .collect();
    let mut signed = ops::sign_transactions(state, client, SIGN_STREAM, &requests).into_iter();
    slots
        .into_iter()
        .map(|(id, slot)| {
            let answer = slot.and_then(|()| {
                answer_of(
                    state,
                    signed.next().expect("one answer per converted request"),
                )
            });
            (id, answer)
        })
        .collect()
}

/// `chainsig.v1.Signer`.
pub struct SignerService {
    pub(super) state: Arc<AppState>,
    pub(super) metrics: MethodMetrics,
    pub(super) stream_metrics: MethodMetrics,
}

/// What the reader of a stream hands its writer, in order.
enum Piece {
    Chunk(tokio::task::JoinHandle<Vec<pb::SignStreamResponse>>),
    /// A chunk signed where it was read ([`signs_where_read`]).
    Signed(Vec<pb::SignStreamResponse>),
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
        let here = signs_where_read(chunk.len());
        let sign = move || -> Vec<pb::SignStreamResponse> {
            sign_chunk(&state, &client, chunk)
                .into_iter()
                .map(|(id, outcome)| {
                    metrics.observe(started.elapsed(), outcome.is_err());
                    pb::SignStreamResponse {
                        id,
                        outcome: Some(match outcome {
                            Ok(signed) => Outcome::Signed(signed),
                            Err(error) => Outcome::Error(error),
                        }),
                    }
                })
                .collect()
        };
        let piece = if here {
            Piece::Signed(sign())
        } else {
            Piece::Chunk(tokio::task::spawn_blocking(sign))
        };
        if pieces.send(piece).await.is_err() {
            return;
        }
        if let Some(status) = broken {
            let _ = pieces.send(Piece::End(status)).await;
            return;
        }
    }
}

/// Whether a chunk of `len` transactions is signed by the task that read it rather than on the
/// blocking pool: a lone transaction (one libsecp256k1 signature, about 20 µs), and, where
/// batches sign in lanes, a chunk of one lane call (up to eight signatures in about 40 µs, within
/// the 10–100 µs an async task may run between awaits). Handing a chunk to the pool costs a
/// thread's wake-up, which on a busy host was most of its time in the service (BENCHMARKS.md,
/// "`SignStream` with one transaction in flight"). Larger chunks go to the pool, whose threads
/// sign them in lanes without holding up the streams' reading.
fn signs_where_read(len: usize) -> bool {
    len == 1
        || (len <= chainsig_cpu::lanes::LANES
            && chainsig_eth::signing::lanes_for_batches().unwrap_or(false))
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
                    if !send_all(&answers, chunk).await {
                        return;
                    }
                }
                Err(e) => {
                    let _ = answers
                        .send(Err(Status::internal(format!("signing task failed: {e}"))))
                        .await;
                    return;
                }
            },
            Piece::Signed(chunk) => {
                if !send_all(&answers, chunk).await {
                    return;
                }
            }
            Piece::End(status) => {
                let _ = answers.send(Err(status)).await;
                return;
            }
        }
    }
}

/// Sends a chunk's answers in order; false once the client has gone away.
async fn send_all(
    answers: &mpsc::Sender<Result<pb::SignStreamResponse, Status>>,
    chunk: Vec<pb::SignStreamResponse>,
) -> bool {
    for answer in chunk {
        if answers.send(Ok(answer)).await.is_err() {
            return false;
        }
    }
    true
}
