//! The HTTP surface over real sockets on 127.0.0.1: every endpoint, authentication, error codes,
//! signatures that decode and recover, and concurrent clients.

use crate::common;
#[path = "http/eth_rpc.rs"]
mod eth_rpc;

use alloy_primitives::Address;
use chainsig_core::{Algorithm, Backend, BackendError, Batch, Bitmap};
use chainsig_eth::{decode_raw, recover_eip191, TxType};
use chainsig_server::batcher::BatcherConfig;
use chainsig_server::ratelimit::RateLimit;
use chainsig_server::Limits;
use chainsig_testkit::{record, GenSpec};
use common::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const SENDER_155: &str = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F";
const SENDER_1559: &str = "0xFE3B557E8Fb62b89F4916B721be55cEb828dBd73";

fn eip155_tx() -> Value {
    json!({
        "from": SENDER_155, "chainId": "0x1", "nonce": "0x9", "gasPrice": "0x4a817c800",
        "gas": "0x5208", "to": "0x3535353535353535353535353535353535353535",
        "value": "0xde0b6b3a7640000", "data": "0x"
    })
}

fn eip1559_tx() -> Value {
    json!({
        "from": SENDER_1559, "chainId": "0x1e8e", "nonce": "0x333",
        "maxPriorityFeePerGas": "0x1284d", "maxFeePerGas": "0x1d97c", "gas": "0x8ae0",
        "to": "0x000000000000000000000000000000000000aaaa", "value": "0x2933bc9", "data": "0x"
    })
}

fn address(text: &str) -> Address {
    text.parse().unwrap()
}

#[tokio::test]
async fn accounts_public_keys_and_health() {
    let server = TestServer::start(Options::default()).await;
    let accounts = server.result("eth_accounts", json!([])).await;
    let mut expected = vec![SENDER_155, SENDER_1559];
    expected.sort_by_key(|a| address(a));
    assert_eq!(accounts, json!(expected));

    let keys: Vec<String> = server
        .get("/api/v1/eth1/publicKeys")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(keys.len(), 2);
    for (key, account) in keys.iter().zip(&expected) {
        let bytes = unhex(key);
        assert_eq!(bytes.len(), 65);
        assert_eq!(bytes[0], 4);
        let derived = Address::from_slice(&alloy_primitives::keccak256(&bytes[1..])[12..]);
        assert_eq!(derived, address(account));
    }

    let up = server.get("/upcheck").send().await.unwrap();
    assert_eq!(up.status(), 200);
    assert_eq!(up.text().await.unwrap(), "OK");
    let health: Value = server
        .get("/healthcheck")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "UP");
    assert_eq!(health["checks"][0]["keys"], 2);

    let missing = server.get("/nowhere").send().await.unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn signed_transactions_match_known_answers_and_recover() {
    let server = TestServer::start(Options::default()).await;
    // EIP-155 and EIP-1559 examples of the Ethereum spec, byte for byte.
    let raw = server
        .result("eth_signTransaction", json!([eip155_tx()]))
        .await["raw"]
        .clone();
    assert_eq!(raw, "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83");
    let raw = server
        .result("eth_signTransaction", json!([eip1559_tx()]))
        .await["raw"]
        .clone();
    assert_eq!(raw, "0x02f870821e8e8203338301284d8301d97c828ae094000000000000000000000000000000000000aaaa8402933bc980c080a0d067f2167008c59219652f91cbf8788dbca5f771f6e91e2b7657e85b78b472e0a01d305af9fe81fdba43f0dfcd400ed24dcace0a7e30d4e85701dcaaf484cd079e");

    // Each type decodes and recovers to the key that signed it.
    let mut eip2930 = eip155_tx();
    eip2930["accessList"] = json!([]);
    let mut create = eip1559_tx();
    create["to"] = Value::Null;
    create["data"] = json!("0x6000");
    for (tx, tx_type, sender) in [
        (eip155_tx(), TxType::Legacy, SENDER_155),
        (eip2930, TxType::Eip2930, SENDER_155),
        (eip1559_tx(), TxType::Eip1559, SENDER_1559),
        (create, TxType::Eip1559, SENDER_1559),
    ] {
        let answer = server.result("eth_signTransaction", json!([tx])).await;
        let decoded = decode_raw(&unhex(answer["raw"].as_str().unwrap())).unwrap();
        assert_eq!(decoded.tx_type, tx_type);
        // geth's `tx`: the decoded transaction, not yet in a block.
        assert_eq!(answer["tx"], decoded.to_rpc_json());
        assert_eq!(decoded.from, address(sender));
    }
}

#[tokio::test]
async fn message_signatures_recover_over_rpc_and_rest() {
    let server = TestServer::start(Options::default()).await;
    let message = b"chainsig says hello";
    let signature = server
        .result(
            "eth_sign",
            json!([SENDER_1559, format!("0x{}", hex::encode(message))]),
        )
        .await;
    let signature: [u8; 65] = unhex(signature.as_str().unwrap()).try_into().unwrap();
    assert_eq!(
        recover_eip191(message, &signature).unwrap(),
        address(SENDER_1559)
    );

    // REST, by address and by public key.
    let keys: Vec<String> = server
        .get("/api/v1/eth1/publicKeys")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for identifier in [SENDER_155.to_string(), keys[0].clone(), keys[1].clone()] {
        let response = server
            .post(&format!("/api/v1/eth1/sign/{identifier}"))
            .json(&json!({"data": format!("0x{}", hex::encode(message))}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let text = response.text().await.unwrap();
        let signature: [u8; 65] = unhex(&text).try_into().unwrap();
        let signer = recover_eip191(message, &signature).unwrap();
        assert!(signer == address(SENDER_155) || signer == address(SENDER_1559));
        if identifier.len() == 42 {
            assert_eq!(signer, address(SENDER_155));
        }
    }

    // REST errors: unknown key 404, bad identifier and bad body 400.
    let unknown = server
        .post("/api/v1/eth1/sign/0x0000000000000000000000000000000000000001")
        .json(&json!({"data": "0x00"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    for (identifier, body) in [
        ("zz", json!({"data": "0x00"})),
        (SENDER_155, json!({"data": "0xzz"})),
        (SENDER_155, json!({"nodata": 1})),
        (SENDER_155, json!([1])),
    ] {
        let response = server
            .post(&format!("/api/v1/eth1/sign/{identifier}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{identifier} {body}");
        let answer: Value = response.json().await.unwrap();
        assert!(answer["error"].as_str().unwrap().contains(':'), "{answer}");
    }
}

#[tokio::test]
async fn authentication_refuses_missing_and_wrong_tokens() {
    let server = TestServer::start(Options {
        tokens: Some("first-secret-token\nsecond-token\n"),
        ..Options::default()
    })
    .await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_accounts"}).to_string();
    let url = format!("{}/", server.url);
    let bare = server
        .http
        .post(&url)
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), 401);
    assert_eq!(bare.headers()["www-authenticate"], "Bearer");
    for wrong in [
        "first-secret-toke",
        "first-secret-tokenn",
        "FIRST-SECRET-TOKEN",
        "",
    ] {
        let refused = server
            .http
            .post(&url)
            .bearer_auth(wrong)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401, "{wrong:?}");
    }
    let basic = server
        .http
        .post(&url)
        .basic_auth("first-secret-token", None::<&str>)
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 401);
    for path in ["/metrics", "/healthcheck", "/api/v1/eth1/publicKeys"] {
        let refused = server
            .http
            .get(format!("{}{path}", server.url))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401, "{path}");
    }
    // /upcheck stays open; both tokens work.
    let up = server
        .http
        .get(format!("{}/upcheck", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(up.status(), 200);
    for token in ["first-secret-token", "second-token"] {
        let accepted = server
            .http
            .post(&url)
            .bearer_auth(token)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(accepted.status(), 200);
        let answer: Value = accepted.json().await.unwrap();
        assert_eq!(answer["result"].as_array().unwrap().len(), 2);
    }
    assert_eq!(
        server
            .result("eth_accounts", json!([]))
            .await
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn malformed_requests_get_the_right_codes() {
    let server = TestServer::start(Options {
        limits: Limits {
            body_bytes: 4096,
            batch_requests: 4,
            records_per_call: 3,
            ..Limits::default()
        },
        ..Options::default()
    })
    .await;

    let (status, answer) = server.raw("{not json").await;
    assert_eq!(status, 200);
    assert_eq!(error_of(&answer).0, -32700);
    assert_eq!(answer["id"], Value::Null);

    for (body, needle) in [
        ("42", "object"),
        (r#"{"id":1,"method":"eth_accounts"}"#, "jsonrpc"),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"eth_accounts"}"#,
            "jsonrpc",
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, "method"),
        (r#"{"jsonrpc":"2.0","id":1,"method":5}"#, "method"),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_accounts","params":3}"#,
            "params",
        ),
        (r#"{"jsonrpc":"2.0","id":{},"method":"eth_accounts"}"#, "id"),
        ("[]", "empty"),
        (r#"[1,1,1,1,1]"#, "limit of 4"),
    ] {
        let (status, answer) = server.raw(body).await;
        assert_eq!(status, 200, "{body}");
        let (code, message) = error_of(&answer);
        assert_eq!(code, -32600, "{body}: {answer}");
        assert!(message.contains(needle), "{body}: {message}");
    }
    // A kept id comes back with the error.
    let (_, answer) = server
        .raw(r#"{"jsonrpc":"1.0","id":"x","method":"eth_accounts"}"#)
        .await;
    assert_eq!(answer["id"], "x");

    let (code, message) = server.error("eth_frobnicate", json!([])).await;
    assert_eq!(code, -32601);
    assert!(message.contains("eth_frobnicate"));

    let mut bad_nonce = eip155_tx();
    bad_nonce["nonce"] = json!("0xnope");
    let mut no_gas = eip1559_tx();
    no_gas.as_object_mut().unwrap().remove("gas");
    let mut bad_fees = eip1559_tx();
    bad_fees["maxFeePerGas"] = json!("0x1");
    for (method, params, field) in [
        ("eth_accounts", json!([1]), "params"),
        ("eth_signTransaction", json!([]), "params"),
        ("eth_signTransaction", json!({"tx": 1}), "params"),
        ("eth_signTransaction", json!([bad_nonce]), "nonce"),
        ("eth_signTransaction", json!([no_gas]), "gas"),
        ("eth_signTransaction", json!([bad_fees]), "maxFeePerGas"),
        (
            "eth_signTransaction",
            json!([{"chainId": "0x1", "nonce": "0x0", "gas": "0x5208", "gasPrice": "0x1"}]),
            "from",
        ),
        ("eth_sign", json!(["0x12", "0x00"]), "address"),
        ("eth_sign", json!([SENDER_155, "0xzz"]), "data"),
        ("eth_sign", json!([SENDER_155]), "params"),
        ("chainsig_verifyBatch", json!([{}]), "records"),
        ("chainsig_verifyBatch", json!([[1, 2, 3, 4]]), "limit of 3"),
        ("chainsig_verifyBatch", json!([[], {"lowS": "yes"}]), "lowS"),
        ("chainsig_verifyBatch", json!([[], {"alg": "rsa"}]), "alg"),
        ("chainsig_verifyBatch", json!({"lowS": true}), "records"),
        ("chainsig_recoverBatch", json!([[], {"x": 1}]), "x"),
    ] {
        let (code, message) = server.error(method, params.clone()).await;
        assert_eq!(code, -32602, "{method} {params}: {message}");
        assert!(message.contains(field), "{method} {params}: {message}");
    }

    // No key for the sender: -32000.
    let mut stranger = eip155_tx();
    stranger["from"] = json!("0x0000000000000000000000000000000000000001");
    for (method, params) in [
        ("eth_signTransaction", json!([stranger])),
        (
            "eth_sign",
            json!(["0x0000000000000000000000000000000000000001", "0x00"]),
        ),
    ] {
        let (code, message) = server.error(method, params).await;
        assert_eq!(code, -32000);
        assert!(message.contains("no unlocked account"), "{message}");
    }

    // Over the body limit: 413 with a JSON-RPC error that gives the limit.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"eth_sign","params":["{SENDER_155}","0x{}"]}}"#,
        "00".repeat(4096)
    );
    let (status, answer) = server.raw(big).await;
    assert_eq!(status, 413);
    let (code, message) = error_of(&answer);
    assert_eq!(code, -32600);
    assert!(message.contains("4096 bytes"), "{message}");
}

#[tokio::test]
async fn batches_answer_in_order_and_skip_notifications() {
    let server = TestServer::start(Options::default()).await;
    let body = json!([
        {"jsonrpc": "2.0", "id": "a", "method": "eth_accounts"},
        {"jsonrpc": "2.0", "method": "eth_accounts"},
        {"jsonrpc": "2.0", "id": 2, "method": "eth_signTransaction", "params": [eip155_tx()]},
        {"jsonrpc": "2.0", "id": 3, "method": "nope"},
        7,
        {"jsonrpc": "2.0", "id": null, "method": "eth_sign", "params": [SENDER_155, "0x01"]},
    ]);
    let (status, answer) = server.raw(body.to_string()).await;
    assert_eq!(status, 200);
    let answers = answer.as_array().unwrap();
    assert_eq!(answers.len(), 5, "{answer}");
    assert_eq!(answers[0]["id"], "a");
    assert_eq!(answers[0]["result"].as_array().unwrap().len(), 2);
    assert_eq!(answers[1]["id"], 2);
    assert!(answers[1]["result"]["raw"]
        .as_str()
        .unwrap()
        .starts_with("0xf86c"));
    assert_eq!(answers[2]["id"], 3);
    assert_eq!(error_of(&answers[2]).0, -32601);
    assert_eq!(error_of(&answers[3]).0, -32600);
    assert_eq!(answers[4]["id"], Value::Null);
    assert_eq!(answers[4]["result"].as_str().unwrap().len(), 132);

    // Only notifications: no content at all.
    let (status, answer) = server
        .raw(json!([{"jsonrpc": "2.0", "method": "eth_accounts"}]).to_string())
        .await;
    assert_eq!((status, answer), (204, Value::Null));
    let (status, _) = server
        .raw(json!({"jsonrpc": "2.0", "method": "eth_accounts"}).to_string())
        .await;
    assert_eq!(status, 204);
}

/// Generated records in the verify format, with the verdict each should get.
fn generated(alg: Algorithm, seed: u64, n: u64) -> Vec<(Value, bool)> {
    let spec = GenSpec {
        alg,
        seed,
        invalid_ratio: 0.3,
        msg_len: 40,
    };
    (0..n)
        .map(|i| {
            let g = record(&spec, i);
            (
                json!({
                    "alg": alg.to_string(),
                    "pubkey": hex::encode(&g.pubkey),
                    "msg": hex::encode(&g.msg),
                    "sig": hex::encode(g.sig),
                }),
                g.expect_valid(),
            )
        })
        .collect()
}

fn check_verdicts(verdicts: &Value, expected: &[bool]) {
    let verdicts = verdicts.as_array().unwrap();
    assert_eq!(verdicts.len(), expected.len());
    for (i, (verdict, valid)) in verdicts.iter().zip(expected).enumerate() {
        if *valid {
            assert_eq!(verdict, &json!({"valid": true}), "record {i}");
        } else {
            assert_ne!(verdict, &json!({"valid": true}), "record {i}");
        }
    }
}

#[tokio::test]
async fn verify_batch_gives_verdicts_in_order() {
    let server = TestServer::start(Options::default()).await;
    let mut records = Vec::new();
    let mut expected = Vec::new();
    for (alg, seed) in [
        (Algorithm::Sm2, 1),
        (Algorithm::Secp256k1, 2),
        (Algorithm::P256, 3),
    ] {
        for (record, valid) in generated(alg, seed, 20) {
            records.push(record);
            expected.push(valid);
        }
    }
    assert!(expected.iter().any(|v| *v) && expected.iter().any(|v| !*v));
    // A record given as its JSON text, and two that cannot be checked.
    records.push(Value::String(records[0].to_string()));
    expected.push(expected[0]);
    records.push(json!({"alg": "sm2", "pubkey": "04zz", "msg": "00", "sig": "00"}));
    expected.push(false);
    records.push(json!(5));
    expected.push(false);

    let verdicts = server
        .result("chainsig_verifyBatch", json!([records.clone()]))
        .await;
    check_verdicts(&verdicts, &expected);
    let n = expected.len();
    assert_eq!(
        verdicts[n - 2]["error"].as_str().unwrap().split(':').next(),
        Some("pubkey")
    );
    assert!(verdicts[n - 1]["error"]
        .as_str()
        .unwrap()
        .contains("object"));

    // Named parameters and options; defaults fill fields the records leave out.
    let secp: Vec<(Value, bool)> = generated(Algorithm::Secp256k1, 9, 10);
    let bare: Vec<Value> = secp
        .iter()
        .map(|(r, _)| {
            let mut r = r.clone();
            r.as_object_mut().unwrap().remove("alg");
            r
        })
        .collect();
    let verdicts = server
        .result(
            "chainsig_verifyBatch",
            json!({"records": bare, "alg": "secp256k1", "lowS": true}),
        )
        .await;
    check_verdicts(&verdicts, &secp.iter().map(|(_, v)| *v).collect::<Vec<_>>());
    assert_eq!(
        server.result("chainsig_verifyBatch", json!([[]])).await,
        json!([])
    );

    let metrics = server.metrics().await;
    for alg in ["sm2", "secp256k1", "p256"] {
        let line = format!(r#"chainsig_verifications_total{{alg="{alg}",backend="cpu"}}"#);
        assert!(metrics.contains(&line), "{metrics}");
    }
}

#[tokio::test]
async fn recover_batch_finds_senders() {
    let server = TestServer::start(Options::default()).await;
    let raw = server
        .result("eth_signTransaction", json!([eip1559_tx()]))
        .await["raw"]
        .clone();
    let signature = server
        .result("eth_sign", json!([SENDER_155, "0x68656c6c6f"]))
        .await;
    let signature = unhex(signature.as_str().unwrap());
    let digest = alloy_primitives::eip191_hash_message(b"hello");
    let records = json!([
        {"tx": raw},
        {"digest": hex::encode(digest), "sig": hex::encode(&signature[..64]), "v": signature[64]},
        {"digest": hex::encode(digest), "sig": hex::encode(&signature[..64]), "v": 9},
        {"tx": "0x1234"},
        format!(r#"{{"tx":{raw}}}"#),
    ]);
    let found = server
        .result("chainsig_recoverBatch", json!([records]))
        .await;
    let found = found.as_array().unwrap();
    assert_eq!(found.len(), 5);
    assert_eq!(found[0]["address"], SENDER_1559);
    assert_eq!(found[1]["address"], SENDER_155);
    assert!(found[2]["error"].as_str().unwrap().starts_with("v:"));
    assert!(
        found[3]["error"].as_str().unwrap().starts_with("tx:"),
        "{}",
        found[3]
    );
    assert_eq!(found[4]["address"], SENDER_1559);
}

#[tokio::test]
async fn concurrent_clients_each_get_their_own_answers() {
    let server = Arc::new(TestServer::start(Options::default()).await);
    let mut tasks = Vec::new();
    for client in 0..32u64 {
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..8u64 {
                let nonce = client * 1000 + round;
                let (tx, sender) = if client % 2 == 0 {
                    (eip155_tx(), SENDER_155)
                } else {
                    (eip1559_tx(), SENDER_1559)
                };
                let mut tx = tx;
                tx["nonce"] = json!(format!("0x{nonce:x}"));
                let answer = server.result("eth_signTransaction", json!([tx])).await;
                let decoded = decode_raw(&unhex(answer["raw"].as_str().unwrap())).unwrap();
                assert_eq!(decoded.from, address(sender));
                assert_eq!(alloy_consensus_nonce(&decoded), nonce);

                let message = format!("client {client} round {round}");
                let signature = server
                    .result(
                        "eth_sign",
                        json!([sender, format!("0x{}", hex::encode(&message))]),
                    )
                    .await;
                let signature: [u8; 65] = unhex(signature.as_str().unwrap()).try_into().unwrap();
                assert_eq!(
                    recover_eip191(message.as_bytes(), &signature).unwrap(),
                    address(sender)
                );
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let metrics = server.metrics().await;
    assert!(
        metrics.contains(r#"chainsig_signatures_total{kind="transaction"} 256"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"chainsig_signatures_total{kind="message"} 256"#));
    assert!(metrics.contains(r#"chainsig_requests_total{method="eth_signTransaction"} 256"#));
    assert!(metrics.contains(r#"chainsig_request_duration_seconds_bucket{method="eth_sign""#));
    assert!(metrics.contains("process_resident_memory_bytes"));
}

fn alloy_consensus_nonce(decoded: &chainsig_eth::DecodedTx) -> u64 {
    let json = decoded.to_json();
    u64::from_str_radix(json["nonce"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// A stand-in accelerator that counts its batches and always fails, as a GPU that lost its device.
struct FailingGpu {
    calls: Arc<AtomicUsize>,
}

impl Backend for FailingGpu {
    fn name(&self) -> &str {
        "fake-gpu"
    }
    fn supports(&self, _alg: Algorithm) -> bool {
        true
    }
    fn verify_batch(&self, _batch: &Batch) -> Result<Bitmap, BackendError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(BackendError::Device {
            backend: "fake-gpu".into(),
            reason: "device lost".into(),
        })
    }
}

#[tokio::test]
async fn concurrent_verifications_are_batched_and_survive_a_failing_gpu() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut registry = chainsig_cpu::cpu_registry();
    registry.register(Arc::new(FailingGpu {
        calls: calls.clone(),
    }));
    registry.set_gpu_crossover(1);
    let server = Arc::new(
        TestServer::start(Options {
            registry,
            batcher: BatcherConfig {
                window: Duration::from_millis(100),
                ..BatcherConfig::default()
            },
            ..Options::default()
        })
        .await,
    );
    let mut tasks = Vec::new();
    for client in 0..16u64 {
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            let records = generated(Algorithm::Secp256k1, 100 + client, 8);
            let expected: Vec<bool> = records.iter().map(|(_, v)| *v).collect();
            let records: Vec<Value> = records.into_iter().map(|(r, _)| r).collect();
            let verdicts = server
                .result("chainsig_verifyBatch", json!([records]))
                .await;
            check_verdicts(&verdicts, &expected);
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    // Recovery on the same registry: the fake GPU has none, the CPU answers.
    let signature = server
        .result("eth_sign", json!([SENDER_155, "0x68656c6c6f"]))
        .await;
    let signature = unhex(signature.as_str().unwrap());
    let digest = alloy_primitives::eip191_hash_message(b"hello");
    let found = server
        .result(
            "chainsig_recoverBatch",
            json!([[{"digest": hex::encode(digest), "sig": hex::encode(&signature[..64]), "v": signature[64]}]]),
        )
        .await;
    assert_eq!(found[0]["address"], SENDER_155);

    let gpu_batches = calls.load(Ordering::SeqCst);
    assert!(gpu_batches >= 1, "the accelerator was never tried");
    assert!(
        gpu_batches < 16,
        "16 callers were not gathered: {gpu_batches} batches"
    );
    let metrics = server.metrics().await;
    // Every batch the fake GPU failed was verified on the CPU instead.
    assert!(
        metrics.contains(r#"chainsig_verifications_total{alg="secp256k1",backend="cpu"}"#),
        "{metrics}"
    );
    assert!(!metrics.contains(r#"backend="fake-gpu""#), "{metrics}");
}

#[tokio::test]
async fn shutdown_finishes_requests_in_flight() {
    let mut server = TestServer::start(Options {
        batcher: BatcherConfig {
            // The request waits this long in the batcher: long enough to be in flight at shutdown.
            window: Duration::from_millis(400),
            ..BatcherConfig::default()
        },
        ..Options::default()
    })
    .await;
    let records: Vec<Value> = generated(Algorithm::P256, 5, 4)
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    let request = server
        .post("/")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "chainsig_verifyBatch", "params": [records]}))
        .send();
    let in_flight = tokio::spawn(request);
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.stop().await;
    let answer: Value = in_flight.await.unwrap().unwrap().json().await.unwrap();
    assert_eq!(answer["result"].as_array().unwrap().len(), 4, "{answer}");
    // And the port is closed.
    assert!(reqwest::Client::new()
        .get(format!("{}/upcheck", server.url))
        .send()
        .await
        .is_err());
}

#[tokio::test]
async fn a_backend_asked_for_by_name_that_fails_is_an_internal_error() {
    let mut registry = chainsig_cpu::cpu_registry();
    registry.register(Arc::new(FailingGpu {
        calls: Arc::new(AtomicUsize::new(0)),
    }));
    let server = TestServer::start(Options {
        registry,
        batcher: BatcherConfig {
            backend: "fake-gpu".into(),
            ..BatcherConfig::default()
        },
        ..Options::default()
    })
    .await;
    let records: Vec<Value> = generated(Algorithm::Sm2, 4, 3)
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    let (code, message) = server.error("chainsig_verifyBatch", json!([records])).await;
    assert_eq!(code, -32603);
    assert!(message.contains("device lost"), "{message}");
    let metrics = server.metrics().await;
    assert!(
        metrics.contains(r#"chainsig_request_errors_total{method="chainsig_verifyBatch"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn clients_over_their_rate_get_429_and_others_do_not() {
    let server = TestServer::start(Options {
        tokens: Some("client-a\nclient-b\n"),
        limits: Limits {
            // A slow refill, so the test does not depend on timing.
            rate: Some(RateLimit {
                per_second: 0.01,
                burst: 3.0,
            }),
            ..Limits::default()
        },
        ..Options::default()
    })
    .await;
    // `server.get` authenticates as client-a.
    for _ in 0..3 {
        assert_eq!(
            server.get("/healthcheck").send().await.unwrap().status(),
            200
        );
    }
    let limited = server.get("/healthcheck").send().await.unwrap();
    assert_eq!(limited.status(), 429);
    assert!(limited.headers().contains_key("retry-after"));
    let answer: Value = limited.json().await.unwrap();
    assert!(answer["error"].as_str().unwrap().contains("rate limit"));
    // Another token has its own bucket; /upcheck is never limited.
    let other = server
        .http
        .get(format!("{}/healthcheck", server.url))
        .bearer_auth("client-b")
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200);
    assert_eq!(server.get("/upcheck").send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive_and_the_token_is_not() {
    let server = TestServer::start(Options {
        tokens: Some("first-secret-token\nsecond-token\n"),
        ..Options::default()
    })
    .await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_accounts"}).to_string();
    let url = format!("{}/", server.url);
    for (value, status) in [
        ("bearer first-secret-token", 200),
        ("BEARER second-token", 200),
        ("bEaReR   first-secret-token", 200),
        ("bearer FIRST-SECRET-TOKEN", 401),
        ("bearerfirst-secret-token", 401),
        ("Basic first-secret-token", 401),
    ] {
        let answer = server
            .http
            .post(&url)
            .header("authorization", value)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), status, "{value:?}");
    }
}

#[tokio::test]
async fn invalid_requests_are_answered_even_without_an_id() {
    let server = TestServer::start(Options::default()).await;
    // JSON-RPC 2.0 §4.1: only a valid request without an id is a notification.
    for body in [
        r#"{"jsonrpc":"2.0","method":1}"#,
        r#"{"method":"eth_accounts"}"#,
        r#"{"jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","method":"eth_accounts","params":"x"}"#,
    ] {
        let (status, answer) = server.raw(body).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(error_of(&answer).0, -32600, "{body}: {answer}");
        assert_eq!(answer.get("id"), Some(&Value::Null), "{body}: {answer}");
    }
    // In a batch, in order, beside a notification that stays unanswered.
    let (status, answer) = server
        .raw(
            r#"[{"jsonrpc":"2.0","method":1},
                {"jsonrpc":"2.0","method":"eth_accounts"},
                {"jsonrpc":"2.0","id":9,"method":"eth_accounts"}]"#,
        )
        .await;
    assert_eq!(status, 200);
    let answers = answer.as_array().expect("an array");
    assert_eq!(answers.len(), 2, "{answer}");
    assert_eq!(error_of(&answers[0]).0, -32600);
    assert_eq!(answers[0].get("id"), Some(&Value::Null));
    assert_eq!(answers[1]["id"], 9);
    assert_eq!(answers[1]["result"].as_array().unwrap().len(), 2);
    // An empty batch: one error object (not an array), id null.
    let (status, answer) = server.raw("[]").await;
    assert_eq!(status, 200);
    assert!(answer.is_object(), "{answer}");
    assert_eq!(error_of(&answer).0, -32600);
    assert_eq!(answer.get("id"), Some(&Value::Null));
    // Only valid notifications, even of unknown methods: no body.
    let (status, answer) = server
        .raw(
            r#"[{"jsonrpc":"2.0","method":"eth_accounts"},
                {"jsonrpc":"2.0","method":"no_such_method","params":[]}]"#,
        )
        .await;
    assert_eq!((status, answer), (204, Value::Null));
}

/// A small deterministic generator (xorshift64*), so a failing case can be replayed.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `seed` with a few random edits: bytes flipped, inserted, removed, the text cut or doubled.
fn mutate(seed: &[u8], noise: &mut Noise) -> Vec<u8> {
    const TOKENS: &[&[u8]] = &[
        b"{",
        b"}",
        b"[",
        b"]",
        b"\"",
        b",",
        b":",
        b"null",
        b"1e999",
        b"-0",
        b"\\u0000",
        b"\"id\":",
        b"\"method\":",
        b"\"params\":",
        b"[[[[[[[[",
        b"\xff",
        b"0x",
    ];
    let mut text = seed.to_vec();
    for _ in 0..=noise.below(4) {
        let at = noise.below(text.len() + 1);
        match noise.below(6) {
            0 if at < text.len() => text[at] ^= 1 << noise.below(8),
            1 => {
                let token = TOKENS[noise.below(TOKENS.len())];
                text.splice(at..at, token.iter().copied());
            }
            2 if at < text.len() => {
                text.remove(at);
            }
            3 => text.truncate(at),
            4 => {
                let copy = text.clone();
                text.extend_from_slice(&copy);
            }
            _ => text.insert(at.min(text.len()), noise.next() as u8),
        }
    }
    text
}

#[tokio::test]
async fn thousands_of_malformed_requests_leave_the_server_answering() {
    let server = TestServer::start(Options {
        limits: Limits {
            body_bytes: 64 << 10,
            batch_requests: 16,
            records_per_call: 8,
            ..Limits::default()
        },
        ..Options::default()
    })
    .await;
    let verify_record = json!({"alg": "sm2", "pubkey": "04aa", "msg": "00", "sig": "00"});
    let seeds: Vec<Vec<u8>> = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_accounts"}),
        json!({"jsonrpc": "2.0", "id": "x", "method": "eth_signTransaction", "params": [eip155_tx()]}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "eth_sign", "params": [SENDER_155, "0x00"]}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "chainsig_verifyBatch",
               "params": [[verify_record], {"lowS": true}]}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "chainsig_recoverBatch",
               "params": {"records": [{"digest": "00", "sig": "00", "v": 27}]}}),
        json!([{"jsonrpc": "2.0", "id": 5, "method": "eth_accounts"},
               {"jsonrpc": "2.0", "method": "eth_accounts"}]),
        json!({"data": "0x0102"}),
    ]
    .iter()
    .map(|v| v.to_string().into_bytes())
    .collect();
    let mut noise = Noise(0x5eed_cafe_f00d_d00d);
    let rest = format!("/api/v1/eth1/sign/{SENDER_155}");
    for round in 0..20 {
        for _ in 0..150 {
            let seed = &seeds[noise.below(seeds.len())];
            let body = mutate(seed, &mut noise);
            let path = if noise.below(8) == 0 {
                rest.as_str()
            } else {
                "/"
            };
            let response = server.post(path).body(body.clone()).send().await.unwrap();
            let status = response.status().as_u16();
            let text = response.text().await.unwrap();
            let shown = String::from_utf8_lossy(&body);
            assert!(
                matches!(status, 200 | 204 | 400 | 413 | 415),
                "{path} {shown}: {status} {text}"
            );
            if path == "/" && status != 204 {
                let answer: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{shown}: not JSON ({e}): {text}"));
                assert!(answer.is_object() || answer.is_array(), "{shown}: {text}");
            }
        }
        // After each round, a well-formed call still gets its answer.
        let accounts = server.result("eth_accounts", json!([])).await;
        assert_eq!(accounts.as_array().unwrap().len(), 2, "round {round}");
    }
}
