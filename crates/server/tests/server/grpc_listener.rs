//! The separate gRPC listener ([`chainsig_server::serve_listeners`] with `Listeners::grpc`) over
//! real sockets on 127.0.0.1: the services answer there with the same tokens and metrics as on
//! the HTTP listener, the HTTP routes do not, and shutdown stops both listeners after the
//! requests in flight. Every client call has a timeout, so a server that stops answering fails
//! the test instead of hanging it.

use crate::common;

use chainsig_core::Algorithm;
use chainsig_eth::PrivateKey;
use chainsig_server::batcher::BatcherConfig;
use chainsig_server::grpc::pb;
use chainsig_server::grpc::pb::signer_client::SignerClient;
use chainsig_server::grpc::pb::verifier_client::VerifierClient;
use chainsig_server::{auth, keys, AppState, Limits, Listeners};
use chainsig_testkit::{record, GenSpec};
use common::{bearer, EIP155_KEY};
use serde_json::json;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tonic::Code;

const TOKEN: &str = "listener-token";

/// Fails the test when `future` takes more than 20 s.
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within 20 s"))
}

struct Running {
    http: SocketAddr,
    grpc: SocketAddr,
    state: Arc<AppState>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

impl Running {
    async fn start(tokens: Option<&str>, grace: Option<Duration>) -> Running {
        let dir = tempfile::tempdir().unwrap();
        common::write_keys(dir.path(), &[EIP155_KEY]);
        let state = AppState::new(
            keys::load_dir(dir.path()).unwrap(),
            chainsig_cpu::cpu_registry(),
            tokens.map(|t| auth::Tokens::parse(t).unwrap()),
            Limits::default(),
            BatcherConfig::default(),
        );
        let http = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let grpc = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let (http_addr, grpc_addr) = (http.local_addr().unwrap(), grpc.local_addr().unwrap());
        assert_ne!(http_addr, grpc_addr);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(chainsig_server::serve_listeners(
            state.clone(),
            Listeners {
                http,
                grpc: Some(grpc),
            },
            None,
            async {
                let _ = stopped.await;
            },
            grace,
        ));
        Running {
            http: http_addr,
            grpc: grpc_addr,
            state,
            stop: Some(stop),
            task,
            _dir: dir,
        }
    }

    /// Asks for shutdown.
    fn signal(&mut self) {
        let _ = self.stop.take().expect("signalled once").send(());
    }

    /// Waits for the server to stop (at most 20 s).
    async fn stopped(self) {
        within("the server stopping", self.task)
            .await
            .unwrap()
            .unwrap();
    }
}

async fn channel(addr: SocketAddr) -> tonic::transport::Channel {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(20));
    within("gRPC connect", endpoint.connect()).await.unwrap()
}

fn sign_request(nonce: u64) -> pb::SignTransactionRequest {
    pb::SignTransactionRequest {
        tx: Some(pb::Transaction {
            from: address().to_vec(),
            chain_id: Some(1),
            nonce,
            gas: 21_000,
            to: vec![0x35; 20],
            value: vec![1],
            max_fee_per_gas: Some(2_000_000_000u64.to_be_bytes().to_vec()),
            max_priority_fee_per_gas: Some(1_000_000_000u64.to_be_bytes().to_vec()),
            ..Default::default()
        }),
    }
}

fn address() -> alloy_primitives::Address {
    PrivateKey::from_hex(EIP155_KEY).unwrap().address()
}

/// The raw transaction decodes, recovers to the key's address and carries `nonce`.
fn check_signed(signed: &pb::SignedTransaction, nonce: u64) {
    assert_eq!(signed.from, address().to_vec());
    assert_eq!(
        signed.hash,
        alloy_primitives::keccak256(&signed.raw).to_vec()
    );
    let decoded = chainsig_eth::decode_raw(&signed.raw).expect("the raw transaction decodes");
    assert_eq!(decoded.from, address(), "recovers to the key's address");
    assert_eq!(decoded.to_json()["nonce"], json!(format!("0x{nonce:x}")));
}

/// One HTTP/1.1 exchange (GET `path`, with the token), its status.
async fn http_status(addr: SocketAddr, path: &str) -> u16 {
    let response = within(
        "HTTP request",
        reqwest::Client::new()
            .get(format!("http://{addr}{path}"))
            .bearer_auth(TOKEN)
            .timeout(Duration::from_secs(20))
            .send(),
    )
    .await
    .unwrap();
    response.status().as_u16()
}

#[tokio::test]
async fn grpc_listener_serves_both_services_with_the_same_tokens_and_metrics() {
    let mut server = Running::start(Some(TOKEN), None).await;
    let grpc = channel(server.grpc).await;

    // Without the token, or with a wrong one: UNAUTHENTICATED, for both services.
    for token in [None, Some("wrong".to_string())] {
        let status = within(
            "SignTransaction",
            SignerClient::with_interceptor(grpc.clone(), bearer(token.clone()))
                .sign_transaction(sign_request(1)),
        )
        .await
        .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
        let status = within(
            "VerifyBatch",
            VerifierClient::with_interceptor(grpc.clone(), bearer(token))
                .verify_batch(pb::VerifyBatchRequest::default()),
        )
        .await
        .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    }

    // With it: signed, and the transaction recovers to the key.
    let mut signer = SignerClient::with_interceptor(grpc.clone(), bearer(Some(TOKEN.into())));
    for nonce in [3u64, 4] {
        let signed = within(
            "SignTransaction",
            signer.sign_transaction(sign_request(nonce)),
        )
        .await
        .unwrap()
        .into_inner()
        .signed
        .unwrap();
        check_signed(&signed, nonce);
    }

    // Verification on the gRPC listener: the verdicts match the generator's.
    let spec = GenSpec {
        alg: Algorithm::Secp256k1,
        seed: 11,
        invalid_ratio: 0.4,
        msg_len: 32,
    };
    let generated: Vec<_> = (0..20).map(|i| record(&spec, i)).collect();
    let records = generated
        .iter()
        .map(|g| {
            json!({"pubkey": hex::encode(&g.pubkey), "msg": hex::encode(&g.msg), "sig": hex::encode(g.sig)})
                .to_string()
        })
        .collect();
    let answer = within(
        "VerifyBatch",
        VerifierClient::with_interceptor(grpc.clone(), bearer(Some(TOKEN.into()))).verify_batch(
            pb::VerifyBatchRequest {
                alg: pb::Algorithm::Secp256k1 as i32,
                records,
                ..Default::default()
            },
        ),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(answer.count, 20);
    assert!(answer.errors.is_empty(), "{:?}", answer.errors);
    let expected: Vec<bool> = generated.iter().map(|g| g.expect_valid()).collect();
    assert!(expected.iter().any(|v| *v) && expected.iter().any(|v| !*v));
    for (i, valid) in expected.iter().enumerate() {
        assert_eq!(
            answer.valid[i / 8] >> (i % 8) & 1 == 1,
            *valid,
            "record {i}"
        );
    }

    // Reflection is on the gRPC listener too.
    {
        use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
        use tonic_reflection::pb::v1::ServerReflectionRequest;
        let mut client =
            ServerReflectionClient::with_interceptor(grpc.clone(), bearer(Some(TOKEN.into())));
        let list = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut answers = within(
            "reflection",
            client.server_reflection_info(tokio_stream::iter(vec![list])),
        )
        .await
        .unwrap()
        .into_inner();
        let listed = within("reflection answer", answers.message())
            .await
            .unwrap()
            .unwrap();
        let Some(MessageResponse::ListServicesResponse(list)) = listed.message_response else {
            panic!("{listed:?}")
        };
        let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"chainsig.v1.Signer"), "{names:?}");
        assert!(names.contains(&"chainsig.v1.Verifier"), "{names:?}");
    }

    // gRPC still answers on the HTTP listener, from the same state.
    let signed = within(
        "SignTransaction on --http",
        SignerClient::with_interceptor(channel(server.http).await, bearer(Some(TOKEN.into())))
            .sign_transaction(sign_request(5)),
    )
    .await
    .unwrap()
    .into_inner()
    .signed
    .unwrap();
    check_signed(&signed, 5);

    // The HTTP routes are only on the HTTP listener.
    assert_eq!(http_status(server.grpc, "/metrics").await, 404);
    assert_eq!(http_status(server.grpc, "/upcheck").await, 404);
    assert_eq!(http_status(server.http, "/upcheck").await, 200);

    // One set of metrics: the calls on both listeners (2 refused + 2 signed on --grpc, 1 on --http).
    let metrics = server.state.metrics.render();
    assert!(
        metrics
            .contains(r#"chainsig_requests_total{method="chainsig.v1.Signer/SignTransaction"} 3"#),
        "{metrics}"
    );
    let text = within(
        "GET /metrics",
        reqwest::Client::new()
            .get(format!("http://{}/metrics", server.http))
            .bearer_auth(TOKEN)
            .send(),
    )
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert!(
        text.contains(r#"chainsig_requests_total{method="chainsig.v1.Signer/SignTransaction"} 3"#),
        "{text}"
    );
    assert!(
        text.contains(r#"chainsig_requests_total{method="POST /chainsig.v1.Signer/{*method}"} 5"#),
        "{text}"
    );

    server.signal();
    server.stopped().await;
}

/// A signing stream on the gRPC listener: items sent one at a time through `items`.
async fn open_stream(
    addr: SocketAddr,
) -> (
    mpsc::Sender<pb::SignStreamRequest>,
    tonic::Streaming<pb::SignStreamResponse>,
) {
    let (items, queue) = mpsc::channel(8);
    let mut client = SignerClient::new(channel(addr).await);
    let answers = within(
        "SignStream",
        client.sign_stream(tokio_stream::wrappers::ReceiverStream::new(queue)),
    )
    .await
    .unwrap()
    .into_inner();
    (items, answers)
}

/// Sends one item and waits for its answer, which must be a signature for `nonce`.
async fn sign_on(
    items: &mpsc::Sender<pb::SignStreamRequest>,
    answers: &mut tonic::Streaming<pb::SignStreamResponse>,
    nonce: u64,
) {
    items
        .send(pb::SignStreamRequest {
            id: nonce,
            tx: sign_request(nonce).tx,
        })
        .await
        .unwrap();
    let answer = within("a stream answer", answers.message())
        .await
        .unwrap()
        .expect("an answer");
    assert_eq!(answer.id, nonce);
    match answer.outcome {
        Some(pb::sign_stream_response::Outcome::Signed(signed)) => check_signed(&signed, nonce),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn shutdown_finishes_the_stream_in_flight_then_stops_both_listeners() {
    let mut server = Running::start(None, None).await;
    let (items, mut answers) = open_stream(server.grpc).await;
    sign_on(&items, &mut answers, 1).await;

    server.signal();
    // Neither listener accepts new connections once shutdown has begun.
    let mut refused = false;
    for _ in 0..100 {
        let http = tokio::net::TcpStream::connect(server.http).await;
        let grpc = tokio::net::TcpStream::connect(server.grpc).await;
        if http.is_err() && grpc.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(refused, "a listener still accepts after shutdown");
    // The stream in flight is still served, and the server waits for it.
    sign_on(&items, &mut answers, 2).await;
    sign_on(&items, &mut answers, 3).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !server.task.is_finished(),
        "stopped with a stream in flight"
    );

    // The client ends the stream: the server stops.
    drop(items);
    assert!(within("the end of the stream", answers.message())
        .await
        .unwrap()
        .is_none());
    server.stopped().await;
}

#[tokio::test]
async fn the_grace_period_bounds_the_wait_for_a_stream_left_open() {
    let mut server = Running::start(None, Some(Duration::from_millis(300))).await;
    let (items, mut answers) = open_stream(server.grpc).await;
    sign_on(&items, &mut answers, 1).await;
    let started = std::time::Instant::now();
    server.signal();
    // The stream stays open (`items` is kept), yet the server returns after the grace period.
    server.stopped().await;
    assert!(started.elapsed() >= Duration::from_millis(250));
    drop(items);
}
