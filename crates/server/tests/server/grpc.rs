//! The gRPC services over real sockets on 127.0.0.1 (HTTP/2 with prior knowledge on the same
//! listener as HTTP): every method, errors naming the field, a long signing stream with malformed
//! items mixed in, authentication, reflection, concurrent clients and the metrics.

use crate::common;

use alloy_primitives::{keccak256, Address};
use chainsig_core::Algorithm;
use chainsig_eth::PrivateKey;
use chainsig_server::grpc::pb;
use chainsig_server::grpc::pb::signer_client::SignerClient;
use chainsig_server::grpc::pb::verifier_client::VerifierClient;
use chainsig_testkit::{record, GenSpec};
use common::{bearer, grpc_channel, Options, TestServer, EIP1559_KEY, EIP155_KEY};
use serde_json::json;
use tonic::Code;

fn address_of(key: &str) -> Address {
    PrivateKey::from_hex(key).unwrap().address()
}

/// An EIP-1559 transaction from `from` with nonce `nonce`.
fn tx(from: Address, nonce: u64) -> pb::Transaction {
    pb::Transaction {
        from: from.to_vec(),
        chain_id: Some(1),
        nonce,
        gas: 21_000,
        to: vec![0x35; 20],
        value: vec![0x01],
        data: vec![0xde, 0xad],
        max_fee_per_gas: Some(2_000_000_000u64.to_be_bytes().to_vec()),
        max_priority_fee_per_gas: Some(1_000_000_000u64.to_be_bytes().to_vec()),
        ..Default::default()
    }
}

/// The JSON-RPC object of the same transaction.
fn tx_json(from: Address, nonce: u64) -> serde_json::Value {
    json!({
        "from": from.to_checksum(None), "chainId": "0x1", "nonce": format!("0x{nonce:x}"),
        "gas": "0x5208", "to": "0x3535353535353535353535353535353535353535", "value": "0x1",
        "data": "0xdead", "maxFeePerGas": "0x77359400", "maxPriorityFeePerGas": "0x3b9aca00",
    })
}

/// Checks a signed transaction: the hash is keccak256(raw), it decodes, recovers to `from` and
/// carries `nonce`.
fn check_signed(signed: &pb::SignedTransaction, from: Address, nonce: u64) {
    assert_eq!(signed.hash, keccak256(&signed.raw).to_vec());
    assert_eq!(signed.from, from.to_vec());
    let decoded = chainsig_eth::decode_raw(&signed.raw).unwrap();
    assert_eq!(decoded.from, from);
    assert_eq!(decoded.to_json()["nonce"], json!(format!("0x{nonce:x}")));
}

#[tokio::test]
async fn sign_transaction_matches_json_rpc_and_recovers_to_the_key() {
    let server = TestServer::start(Options::default()).await;
    let mut client = SignerClient::new(grpc_channel(&server).await);
    for (key, nonce) in [(EIP1559_KEY, 9u64), (EIP155_KEY, 0)] {
        let from = address_of(key);
        let signed = client
            .sign_transaction(pb::SignTransactionRequest {
                tx: Some(tx(from, nonce)),
            })
            .await
            .unwrap()
            .into_inner()
            .signed
            .unwrap();
        check_signed(&signed, from, nonce);
        assert_eq!(signed.raw[0], 2, "an EIP-1559 envelope");
        // RFC 6979 signatures are deterministic: JSON-RPC signs the same bytes.
        let raw = server
            .result("eth_signTransaction", json!([tx_json(from, nonce)]))
            .await["raw"]
            .clone();
        assert_eq!(raw, json!(format!("0x{}", hex::encode(&signed.raw))));
    }
    // A legacy EIP-155 transaction: gasPrice alone.
    let from = address_of(EIP155_KEY);
    let legacy = pb::Transaction {
        gas_price: Some(vec![0x04, 0xa8, 0x17, 0xc8, 0x00]),
        max_fee_per_gas: None,
        max_priority_fee_per_gas: None,
        ..tx(from, 3)
    };
    let signed = client
        .sign_transaction(pb::SignTransactionRequest { tx: Some(legacy) })
        .await
        .unwrap()
        .into_inner()
        .signed
        .unwrap();
    check_signed(&signed, from, 3);
    assert!(signed.raw[0] >= 0xc0, "a legacy RLP list");
}

#[tokio::test]
async fn sign_transaction_errors_name_the_field() {
    let server = TestServer::start(Options::default()).await;
    let mut client = SignerClient::new(grpc_channel(&server).await);
    let from = address_of(EIP1559_KEY);
    let cases = [
        (
            pb::Transaction {
                to: vec![1; 19],
                ..tx(from, 1)
            },
            Code::InvalidArgument,
            "tx.to:",
        ),
        (
            pb::Transaction {
                max_priority_fee_per_gas: None,
                ..tx(from, 1)
            },
            Code::InvalidArgument,
            "tx.max_priority_fee_per_gas: missing",
        ),
        (
            pb::Transaction {
                gas_price: Some(vec![1]),
                ..tx(from, 1)
            },
            Code::InvalidArgument,
            "tx.gas_price:",
        ),
        (
            // Two keys are held: without `from` the server cannot choose.
            pb::Transaction {
                from: Vec::new(),
                ..tx(from, 1)
            },
            Code::InvalidArgument,
            "tx.from: missing",
        ),
        (
            tx(Address::repeat_byte(0x42), 1),
            Code::NotFound,
            "tx.from: no unlocked account",
        ),
    ];
    for (tx, code, says) in cases {
        let status = client
            .sign_transaction(pb::SignTransactionRequest { tx: Some(tx) })
            .await
            .unwrap_err();
        assert_eq!(status.code(), code, "{}", status.message());
        assert!(status.message().starts_with(says), "{}", status.message());
    }
    let status = client
        .sign_transaction(pb::SignTransactionRequest { tx: None })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(status.message(), "tx: missing");
}

/// Item `i` of a long stream: malformed every 97th item, in one of four ways.
fn stream_item(i: u64, from: Address) -> (pb::SignStreamRequest, Option<&'static str>) {
    let mut tx = Some(tx(from, i));
    let bad = if i % 97 == 13 {
        let t = tx.as_mut().unwrap();
        Some(match (i / 97) % 4 {
            0 => {
                t.to = vec![0; 3];
                "tx.to"
            }
            1 => {
                t.max_fee_per_gas = Some(vec![0]);
                "tx.max_fee_per_gas"
            }
            2 => {
                t.chain_id = None;
                "tx.chain_id"
            }
            _ => {
                tx = None;
                "tx"
            }
        })
    } else {
        None
    };
    (
        pb::SignStreamRequest {
            id: 1_000_000 + i,
            tx,
        },
        bad,
    )
}

/// Sends `count` items on one stream and checks every answer, in order.
async fn sign_stream_and_check(
    client: &mut SignerClient<
        tonic::service::interceptor::InterceptedService<
            tonic::transport::Channel,
            impl tonic::service::Interceptor,
        >,
    >,
    count: u64,
    from: Address,
) -> (u64, u64) {
    let requests: Vec<_> = (0..count).map(|i| stream_item(i, from).0).collect();
    let mut answers = client
        .sign_stream(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();
    let (mut signed_count, mut errors) = (0, 0);
    for i in 0..count {
        let answer = answers
            .message()
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("stream ended after {i} answers"));
        assert_eq!(answer.id, 1_000_000 + i, "answers out of order");
        match (answer.outcome.unwrap(), stream_item(i, from).1) {
            (pb::sign_stream_response::Outcome::Signed(signed), None) => {
                check_signed(&signed, from, i);
                signed_count += 1;
            }
            (pb::sign_stream_response::Outcome::Error(error), Some(field)) => {
                assert_eq!(error.field, field, "item {i}: {}", error.message);
                assert!(error.message.starts_with(field), "{}", error.message);
                assert_eq!(error.code, -32602);
                errors += 1;
            }
            (outcome, expected) => panic!("item {i}: {outcome:?}, expected error {expected:?}"),
        }
    }
    assert!(answers.message().await.unwrap().is_none(), "extra answers");
    (signed_count, errors)
}

#[tokio::test]
async fn a_long_stream_answers_every_item_in_order_and_bad_items_do_not_end_it() {
    let server = TestServer::start(Options::default()).await;
    let mut client = SignerClient::with_interceptor(grpc_channel(&server).await, bearer(None));
    let from = address_of(EIP1559_KEY);
    let (signed, errors) = sign_stream_and_check(&mut client, 1500, from).await;
    assert_eq!(errors, 16);
    assert_eq!(signed, 1500 - 16);
    let metrics = server.metrics().await;
    assert!(
        metrics.contains(r#"chainsig_requests_total{method="chainsig.v1.Signer/SignStream"} 1500"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            r#"chainsig_request_errors_total{method="chainsig.v1.Signer/SignStream"} 16"#
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"chainsig_signatures_total{kind="transaction"} 1484"#),
        "{metrics}"
    );
}

/// One item at a time, each sent after the previous answer: every chunk is a lone transaction,
/// which the service signs where it reads it rather than on the blocking pool; answers, errors
/// and metrics as for a stream sent at once.
#[tokio::test]
async fn a_lock_step_stream_gets_each_answer_before_sending_the_next() {
    let server = TestServer::start(Options::default()).await;
    let mut client = SignerClient::with_interceptor(grpc_channel(&server).await, bearer(None));
    let from = address_of(EIP1559_KEY);
    let (send, requests) = tokio::sync::mpsc::channel(1);
    let mut answers = client
        .sign_stream(tokio_stream::wrappers::ReceiverStream::new(requests))
        .await
        .unwrap()
        .into_inner();
    let (mut signed, mut errors) = (0, 0);
    // Items 13 and 110 are bad (stream_item: one in 97).
    for i in 0..120u64 {
        let (request, bad) = stream_item(i, from);
        send.send(request).await.unwrap();
        let answer = answers.message().await.unwrap().expect("an answer");
        assert_eq!(answer.id, 1_000_000 + i);
        match (answer.outcome.unwrap(), bad) {
            (pb::sign_stream_response::Outcome::Signed(tx), None) => {
                check_signed(&tx, from, i);
                signed += 1;
            }
            (pb::sign_stream_response::Outcome::Error(error), Some(field)) => {
                assert_eq!(error.field, field, "item {i}: {}", error.message);
                errors += 1;
            }
            (outcome, bad) => panic!("item {i}: {outcome:?}, expected error {bad:?}"),
        }
    }
    drop(send);
    assert!(answers.message().await.unwrap().is_none(), "extra answers");
    assert_eq!((signed, errors), (118, 2));
    let metrics = server.metrics().await;
    assert!(
        metrics.contains(r#"chainsig_requests_total{method="chainsig.v1.Signer/SignStream"} 120"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn concurrent_clients_each_get_their_own_answers() {
    let server = TestServer::start(Options::default()).await;
    let channel = grpc_channel(&server).await;
    let mut tasks = Vec::new();
    for c in 0..6u64 {
        // Half share one HTTP/2 connection, half open their own.
        let channel = if c % 2 == 0 {
            channel.clone()
        } else {
            grpc_channel(&server).await
        };
        let key = if c % 2 == 0 { EIP1559_KEY } else { EIP155_KEY };
        tasks.push(tokio::spawn(async move {
            let from = address_of(key);
            let mut client = SignerClient::with_interceptor(channel.clone(), bearer(None));
            let outcome = sign_stream_and_check(&mut client, 300, from).await;
            let mut unary = SignerClient::new(channel);
            for n in 0..20 {
                let signed = unary
                    .sign_transaction(pb::SignTransactionRequest {
                        tx: Some(tx(from, c * 1000 + n)),
                    })
                    .await
                    .unwrap()
                    .into_inner()
                    .signed
                    .unwrap();
                check_signed(&signed, from, c * 1000 + n);
            }
            outcome
        }));
    }
    for task in tasks {
        let (signed, errors) = task.await.unwrap();
        assert_eq!(signed + errors, 300);
        assert_eq!(errors, 3);
    }
}

#[tokio::test]
async fn verify_batch_returns_a_bitmap_for_every_algorithm() {
    let server = TestServer::start(Options::default()).await;
    let mut client = VerifierClient::new(grpc_channel(&server).await);
    for (alg, proto_alg) in [
        (Algorithm::Sm2, pb::Algorithm::Sm2),
        (Algorithm::Secp256k1, pb::Algorithm::Secp256k1),
        (Algorithm::P256, pb::Algorithm::P256),
    ] {
        let spec = GenSpec {
            alg,
            seed: 5,
            invalid_ratio: 0.3,
            msg_len: 40,
        };
        let generated: Vec<_> = (0..37).map(|i| record(&spec, i)).collect();
        let mut records: Vec<String> = generated
            .iter()
            .map(|g| {
                // No `alg`: the request's default applies.
                json!({"pubkey": hex::encode(&g.pubkey), "msg": hex::encode(&g.msg), "sig": hex::encode(g.sig)})
                    .to_string()
            })
            .collect();
        records.insert(5, r#"{"pubkey":"04","msg":"00","sig":"zz"}"#.into());
        records.insert(9, "not json".into());
        let answer = client
            .verify_batch(pb::VerifyBatchRequest {
                alg: proto_alg as i32,
                records,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(answer.count, 39);
        assert_eq!(answer.valid.len(), 5);
        let mut expected: Vec<bool> = generated.iter().map(|g| g.expect_valid()).collect();
        expected.insert(5, false);
        expected.insert(9, false);
        assert!(expected.iter().any(|v| *v) && expected.iter().any(|v| !*v));
        for (i, valid) in expected.iter().enumerate() {
            let bit = answer.valid[i / 8] >> (i % 8) & 1 == 1;
            assert_eq!(bit, *valid, "{alg} record {i}");
        }
        assert_eq!(answer.valid[4] >> 7, 0, "unused bits are zero");
        let indices: Vec<u32> = answer.errors.iter().map(|e| e.index).collect();
        assert_eq!(indices, vec![5, 9], "{:?}", answer.errors);
        assert!(!answer.errors[0].message.is_empty());
    }
    // An unknown algorithm number and hash are refused, naming the field.
    let status = client
        .verify_batch(pb::VerifyBatchRequest {
            alg: 42,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().starts_with("alg:"), "{}", status.message());
    let status = client
        .verify_batch(pb::VerifyBatchRequest {
            hash: "md5".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        status.message().starts_with("hash:"),
        "{}",
        status.message()
    );
}

#[tokio::test]
async fn typed_records_verify_as_their_json_lines_do() {
    let server = TestServer::start(Options::default()).await;
    let mut client = VerifierClient::new(grpc_channel(&server).await);
    for (alg, proto_alg) in [
        (Algorithm::Sm2, pb::Algorithm::Sm2),
        (Algorithm::Secp256k1, pb::Algorithm::Secp256k1),
        (Algorithm::P256, pb::Algorithm::P256),
    ] {
        let spec = GenSpec {
            alg,
            seed: 11,
            invalid_ratio: 0.3,
            msg_len: 24,
        };
        let generated: Vec<_> = (0..40).map(|i| record(&spec, i)).collect();
        let typed: Vec<pb::VerifyRecord> = generated
            .iter()
            .map(|g| pb::VerifyRecord {
                // Every other record names its algorithm; the rest take the request's.
                alg: if g.pubkey[0] % 2 == 0 {
                    proto_alg as i32
                } else {
                    0
                },
                pubkey: g.pubkey.clone(),
                msg: Some(g.msg.clone()),
                sig: Some(g.sig.to_vec()),
                ..Default::default()
            })
            .collect();
        let lines: Vec<String> = generated
            .iter()
            .map(|g| {
                json!({"pubkey": hex::encode(&g.pubkey), "msg": hex::encode(&g.msg), "sig": hex::encode(g.sig)})
                    .to_string()
            })
            .collect();
        let mut items = typed;
        // Malformed records in their places: a short digest, both signatures, no public key.
        items.insert(
            3,
            pb::VerifyRecord {
                digest: Some(vec![1; 31]),
                msg: None,
                ..items[0].clone()
            },
        );
        items.insert(
            7,
            pb::VerifyRecord {
                sig_der: Some(vec![0x30, 0x00]),
                ..items[0].clone()
            },
        );
        items.insert(
            20,
            pb::VerifyRecord {
                pubkey: vec![],
                ..items[0].clone()
            },
        );
        let typed_answer = client
            .verify_batch(pb::VerifyBatchRequest {
                alg: proto_alg as i32,
                items,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let json_answer = client
            .verify_batch(pb::VerifyBatchRequest {
                alg: proto_alg as i32,
                records: lines,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(typed_answer.count, 43);
        let bit = |valid: &[u8], i: usize| valid[i / 8] >> (i % 8) & 1 == 1;
        let mut j = 0;
        for i in 0..43 {
            if [3, 7, 20].contains(&i) {
                assert!(!bit(&typed_answer.valid, i));
                continue;
            }
            assert_eq!(
                bit(&typed_answer.valid, i),
                generated[j].expect_valid(),
                "{alg} record {i}"
            );
            assert_eq!(bit(&typed_answer.valid, i), bit(&json_answer.valid, j));
            j += 1;
        }
        let errors: Vec<(u32, &str)> = typed_answer
            .errors
            .iter()
            .map(|e| (e.index, e.message.split(':').next().unwrap()))
            .collect();
        assert_eq!(
            errors,
            [(3, "digest"), (7, "sig_der"), (20, "pubkey")],
            "{:?}",
            typed_answer.errors
        );
    }
    // JSON texts and typed records in one request are refused.
    let status = client
        .verify_batch(pb::VerifyBatchRequest {
            records: vec!["{}".into()],
            items: vec![pb::VerifyRecord::default()],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("not both"),
        "{}",
        status.message()
    );
}

#[tokio::test]
async fn record_limits_apply_to_grpc_calls() {
    let mut options = Options::default();
    options.limits.records_per_call = 4;
    let server = TestServer::start(options).await;
    let mut client = VerifierClient::new(grpc_channel(&server).await);
    let status = client
        .verify_batch(pb::VerifyBatchRequest {
            records: vec!["{}".into(); 5],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains("above the limit of 4"));
    let status = client
        .recover_batch(pb::RecoverBatchRequest {
            records: vec!["{}".into(); 5],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(status.message().contains("above the limit of 4"));
}

#[tokio::test]
async fn recover_batch_finds_the_signers() {
    let server = TestServer::start(Options::default()).await;
    let channel = grpc_channel(&server).await;
    let from = address_of(EIP155_KEY);
    let signed = SignerClient::new(channel.clone())
        .sign_transaction(pb::SignTransactionRequest {
            tx: Some(tx(from, 77)),
        })
        .await
        .unwrap()
        .into_inner()
        .signed
        .unwrap();
    let signature = server
        .result("eth_sign", json!([from.to_checksum(None), "0x68656c6c6f"]))
        .await;
    let sig = common::unhex(signature.as_str().unwrap());
    let digest = alloy_primitives::eip191_hash_message(b"hello");
    let records = vec![
        json!({"tx": hex::encode(&signed.raw)}).to_string(),
        json!({"digest": hex::encode(digest), "sig": hex::encode(&sig[..64]), "v": sig[64]})
            .to_string(),
        r#"{"tx":"0x02"}"#.to_string(),
    ];
    let answer = VerifierClient::new(channel)
        .recover_batch(pb::RecoverBatchRequest {
            records,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.results.len(), 3);
    let key = PrivateKey::from_hex(EIP155_KEY).unwrap();
    for result in &answer.results[..2] {
        match result.outcome.as_ref().unwrap() {
            pb::recover_result::Outcome::Recovered(found) => {
                assert_eq!(found.address, from.to_vec());
                assert_eq!(found.pubkey, key.public_key_uncompressed().to_vec());
            }
            other => panic!("{other:?}"),
        }
    }
    match answer.results[2].outcome.as_ref().unwrap() {
        pb::recover_result::Outcome::Error(message) => {
            assert!(message.starts_with("tx"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // The same records typed: the same answers, in the same order.
    use pb::recover_record::Record;
    let items = vec![
        pb::RecoverRecord {
            record: Some(Record::Tx(signed.raw.clone())),
        },
        pb::RecoverRecord {
            record: Some(Record::SignedDigest(pb::SignedDigest {
                digest: digest.to_vec(),
                sig: sig[..64].to_vec(),
                v: u32::from(sig[64]),
            })),
        },
        pb::RecoverRecord {
            record: Some(Record::Tx(vec![0x02])),
        },
        pb::RecoverRecord {
            record: Some(Record::SignedDigest(pb::SignedDigest {
                digest: digest.to_vec(),
                sig: sig[..64].to_vec(),
                v: 29,
            })),
        },
    ];
    let typed = VerifierClient::new(grpc_channel(&server).await)
        .recover_batch(pb::RecoverBatchRequest {
            items,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(typed.results[..3], answer.results[..]);
    match typed.results[3].outcome.as_ref().unwrap() {
        pb::recover_result::Outcome::Error(message) => {
            assert!(message.starts_with("v:"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn without_the_right_token_every_method_is_unauthenticated() {
    let server = TestServer::start(Options {
        tokens: Some("s3cret-token\nother-token\n"),
        ..Options::default()
    })
    .await;
    let channel = grpc_channel(&server).await;
    let from = address_of(EIP1559_KEY);
    for token in [
        None,
        Some("wrong".to_string()),
        Some("s3cret-tokenx".into()),
    ] {
        let mut signer = SignerClient::with_interceptor(channel.clone(), bearer(token.clone()));
        let status = signer
            .sign_transaction(pb::SignTransactionRequest {
                tx: Some(tx(from, 1)),
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{token:?}");
        let expected = if token.is_none() {
            "missing"
        } else {
            "invalid"
        };
        assert!(status.message().contains(expected), "{}", status.message());
        let status = signer
            .sign_stream(tokio_stream::iter(vec![stream_item(0, from).0]))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
        let mut verifier = VerifierClient::with_interceptor(channel.clone(), bearer(token.clone()));
        let status = verifier
            .verify_batch(pb::VerifyBatchRequest::default())
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
        let status = verifier
            .recover_batch(pb::RecoverBatchRequest::default())
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
    }
    // The right token (either line of the file) passes.
    for token in ["s3cret-token", "other-token"] {
        let mut signer =
            SignerClient::with_interceptor(channel.clone(), bearer(Some(token.into())));
        let signed = signer
            .sign_transaction(pb::SignTransactionRequest {
                tx: Some(tx(from, 2)),
            })
            .await
            .unwrap()
            .into_inner()
            .signed
            .unwrap();
        check_signed(&signed, from, 2);
    }
}

#[tokio::test]
async fn reflection_lists_both_services_and_describes_them() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;

    let server = TestServer::start(Options::default()).await;
    let mut client = ServerReflectionClient::new(grpc_channel(&server).await);
    let requests = vec![
        ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        },
        ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::FileContainingSymbol(
                "chainsig.v1.Signer".into(),
            )),
        },
    ];
    let mut answers = client
        .server_reflection_info(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();
    let listed = answers.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = listed.message_response else {
        panic!("{listed:?}")
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"chainsig.v1.Signer"), "{names:?}");
    assert!(names.contains(&"chainsig.v1.Verifier"), "{names:?}");
    let file = answers.message().await.unwrap().unwrap();
    let Some(MessageResponse::FileDescriptorResponse(file)) = file.message_response else {
        panic!("{file:?}")
    };
    use prost::Message;
    let descriptor =
        prost_types::FileDescriptorProto::decode(file.file_descriptor_proto[0].as_slice()).unwrap();
    assert_eq!(descriptor.package(), "chainsig.v1");
    let methods: Vec<&str> = descriptor
        .service
        .iter()
        .flat_map(|s| s.method.iter().map(|m| m.name()))
        .collect();
    assert_eq!(
        methods,
        [
            "SignTransaction",
            "SignStream",
            "VerifyBatch",
            "RecoverBatch"
        ]
    );
}

#[tokio::test]
async fn reflection_v1alpha_answers_older_clients() {
    use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1alpha::ServerReflectionRequest;

    let server = TestServer::start(Options::default()).await;
    let mut client = ServerReflectionClient::new(grpc_channel(&server).await);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = client
        .server_reflection_info(tokio_stream::iter(vec![request]))
        .await
        .unwrap()
        .into_inner();
    let listed = answers.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = listed.message_response else {
        panic!("{listed:?}")
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"chainsig.v1.Verifier"), "{names:?}");
}

#[tokio::test]
async fn http_and_grpc_share_the_listener() {
    let server = TestServer::start(Options::default()).await;
    // HTTP/1.1 JSON-RPC and REST still answer on the same port.
    let accounts = server.result("eth_accounts", json!([])).await;
    assert_eq!(accounts.as_array().unwrap().len(), 2);
    let mut client = SignerClient::new(grpc_channel(&server).await);
    let from = address_of(EIP1559_KEY);
    client
        .sign_transaction(pb::SignTransactionRequest {
            tx: Some(tx(from, 1)),
        })
        .await
        .unwrap();
    let metrics = server.metrics().await;
    assert!(
        metrics
            .contains(r#"chainsig_requests_total{method="chainsig.v1.Signer/SignTransaction"} 1"#),
        "{metrics}"
    );
    // An unknown method of a known service is UNIMPLEMENTED, as gRPC clients expect.
    let mut grpc = tonic::client::Grpc::new(grpc_channel(&server).await);
    grpc.ready().await.unwrap();
    let status = grpc
        .unary::<pb::SignTransactionRequest, pb::SignTransactionResponse, _>(
            tonic::Request::new(pb::SignTransactionRequest::default()),
            "/chainsig.v1.Signer/NoSuchMethod".parse().unwrap(),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented);
}

/// Log output captured from every thread of this test binary (the audit lines are written on the
/// blocking pool's threads too).
fn captured_logs() -> &'static std::sync::Mutex<Vec<u8>> {
    use std::sync::{Mutex, OnceLock};
    static LOGS: OnceLock<&'static Mutex<Vec<u8>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static Mutex<Vec<u8>> = Box::leak(Box::new(Mutex::new(Vec::new())));
        let writer = move || Capture(logs);
        tracing_subscriber::fmt()
            .with_writer(writer)
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .init();
        logs
    })
}

struct Capture(&'static std::sync::Mutex<Vec<u8>>);

impl std::io::Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn every_grpc_signature_writes_an_audit_line_without_secrets() {
    let logs = captured_logs();
    let server = TestServer::start(Options {
        tokens: Some("audit-token-1\naudit-token-2\n"),
        ..Options::default()
    })
    .await;
    let channel = grpc_channel(&server).await;
    let from = address_of(EIP155_KEY);
    let mut client = SignerClient::with_interceptor(channel, bearer(Some("audit-token-2".into())));
    let mut hashes = Vec::new();
    let signed = client
        .sign_transaction(pb::SignTransactionRequest {
            tx: Some(tx(from, 424_242)),
        })
        .await
        .unwrap()
        .into_inner()
        .signed
        .unwrap();
    hashes.push(signed.hash);
    let (signed_count, _) = sign_stream_and_check(&mut client, 120, from).await;
    assert_eq!(signed_count, 118);
    // The stream's hashes, recomputed from the JSON-RPC path (deterministic signatures).
    for i in (0..120)
        .filter(|i| stream_item(*i, from).1.is_none())
        .take(5)
    {
        let raw = server
            .result("eth_signTransaction", json!([tx_json(from, i)]))
            .await["raw"]
            .clone();
        hashes.push(keccak256(common::unhex(raw.as_str().unwrap())).to_vec());
    }
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let audit: Vec<&str> = text.lines().filter(|l| l.contains("audit")).collect();
    for hash in &hashes {
        let hex_hash = format!("0x{}", hex::encode(hash));
        let lines: Vec<&&str> = audit.iter().filter(|l| l.contains(&hex_hash)).collect();
        assert!(!lines.is_empty(), "no audit line for {hex_hash}");
        // The log capture is the process's: other tests sign the same deterministic
        // transactions over gRPC (same key, same fields) without tokens, so this server's lines
        // are the ones with the caller's token.
        let grpc_lines: Vec<&&&str> = lines
            .iter()
            .filter(|l| l.contains("chainsig.v1.Signer/"))
            .collect();
        let grpc_line = grpc_lines
            .iter()
            .find(|l| l.contains("token#2"))
            .unwrap_or_else(|| panic!("no gRPC audit line with token#2 for {hex_hash}: {lines:?}"));
        assert!(
            grpc_line
                .to_lowercase()
                .contains(&format!("{from:?}").to_lowercase()),
            "{grpc_line}"
        );
    }
    assert!(
        audit
            .iter()
            .filter(|l| l.contains("chainsig.v1.Signer/SignStream"))
            .count()
            >= 118
    );
    assert!(!text.contains("audit-token"), "a token reached the log");
}

#[tokio::test]
async fn rate_and_body_limits_apply_to_grpc_calls() {
    let mut options = Options::default();
    options.limits.rate = Some(chainsig_server::ratelimit::RateLimit {
        per_second: 0.001,
        burst: 2.0,
    });
    options.limits.body_bytes = 4096;
    let server = TestServer::start(options).await;
    let mut client = VerifierClient::new(grpc_channel(&server).await);
    // Over the body limit: the message is refused before it is decoded.
    let status = client
        .recover_batch(pb::RecoverBatchRequest {
            records: vec!["x".repeat(5000)],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::OutOfRange, "{}", status.message());
    client
        .recover_batch(pb::RecoverBatchRequest::default())
        .await
        .unwrap();
    // The burst of 2 is spent: the next call is refused as gRPC clients expect.
    let status = client
        .recover_batch(pb::RecoverBatchRequest::default())
        .await
        .unwrap_err();
    assert_eq!(
        status.code(),
        Code::ResourceExhausted,
        "{}",
        status.message()
    );
    assert!(
        status.message().contains("rate limit"),
        "{}",
        status.message()
    );
}
