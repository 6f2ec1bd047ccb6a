//! The service over a failing verifier (`chainsig_core::fault`): under `auto` every JSON-RPC and
//! gRPC verification is answered whole and in order from the CPU while the accelerator fails,
//! panics or answers short; asked for by name, the failing backend gets each caller an error at
//! once, never a hung request, and the next call is answered.

use crate::common::*;
use chainsig_core::fault::{FaultPlan, FaultyBackend};
use chainsig_core::Algorithm;
use chainsig_server::batcher::BatcherConfig;
use chainsig_server::grpc::pb;
use chainsig_server::grpc::pb::verifier_client::VerifierClient;
use chainsig_testkit::{record, GenSpec};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The CPU registry with a backend `fault` over the CPU that fails as `plan` says, preferred by
/// `auto` for any batch.
fn failing_registry(plan: &str) -> chainsig_core::Registry {
    let mut registry = chainsig_cpu::cpu_registry();
    let cpu = registry.get("cpu").unwrap();
    let plan = FaultPlan::parse(plan).unwrap();
    registry.register(Arc::new(FaultyBackend::new("fault", cpu, plan)));
    registry.set_gpu_crossover(1);
    registry
}

#[tokio::test]
async fn grpc_verifications_are_answered_whole_while_the_accelerator_fails() {
    let server = TestServer::start(Options {
        registry: failing_registry("1,panic:2,short:3,5-6,panic:8"),
        batcher: BatcherConfig {
            // No gathering: one registry call per request, so the plan's calls are requests.
            window: Duration::ZERO,
            in_flight: 1,
            ..BatcherConfig::default()
        },
        ..Options::default()
    })
    .await;
    let mut client = VerifierClient::new(grpc_channel(&server).await);
    for round in 0..10u64 {
        let spec = GenSpec {
            alg: Algorithm::Secp256k1,
            seed: 800 + round,
            invalid_ratio: 0.3,
            msg_len: 20,
        };
        let generated: Vec<_> = (0..50).map(|i| record(&spec, i)).collect();
        let records: Vec<String> = generated
            .iter()
            .map(|g| {
                json!({"pubkey": hex::encode(&g.pubkey), "msg": hex::encode(&g.msg), "sig": hex::encode(g.sig)})
                    .to_string()
            })
            .collect();
        let answer = tokio::time::timeout(
            Duration::from_secs(20),
            client.verify_batch(pb::VerifyBatchRequest {
                alg: pb::Algorithm::Secp256k1 as i32,
                records,
                ..Default::default()
            }),
        )
        .await
        .expect("an answer, not a hung request")
        .unwrap()
        .into_inner();
        assert_eq!(answer.count, 50);
        assert!(answer.errors.is_empty(), "{:?}", answer.errors);
        for (i, g) in generated.iter().enumerate() {
            let bit = answer.valid[i / 8] >> (i % 8) & 1 == 1;
            assert_eq!(bit, g.expect_valid(), "round {round}, record {i}");
        }
    }
    // Both backends answered: the accelerator where the plan let it, the CPU for the rest.
    let metrics = server.metrics().await;
    for backend in ["cpu", "fault"] {
        let line =
            format!(r#"chainsig_verifications_total{{alg="secp256k1",backend="{backend}"}}"#);
        assert!(metrics.contains(&line), "{metrics}");
    }
}

#[tokio::test]
async fn a_failing_or_panicking_verifier_gets_callers_an_error_and_the_next_call_an_answer() {
    let registry = failing_registry("1,panic:2,short:3");
    let server = TestServer::start(Options {
        registry,
        batcher: BatcherConfig {
            backend: "fault".into(),
            ..BatcherConfig::default()
        },
        ..Options::default()
    })
    .await;
    let spec = chainsig_testkit::GenSpec {
        alg: chainsig_core::Algorithm::Secp256k1,
        seed: 30,
        invalid_ratio: 0.0,
        msg_len: 8,
    };
    let g = chainsig_testkit::record(&spec, 0);
    let records = json!([[{
        "alg": "secp256k1",
        "pubkey": hex::encode(&g.pubkey),
        "msg": hex::encode(&g.msg),
        "sig": hex::encode(g.sig),
    }]]);
    for reason in [
        "injected fault on call 1",
        "panicked",
        "answered 0 results for 1 items",
    ] {
        let (code, message) = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            server.error("chainsig_verifyBatch", records.clone()),
        )
        .await
        .expect("an answer, not a hung request");
        assert_eq!(code, -32603);
        assert!(message.contains(reason), "{message}");
    }
    // Past the plan the backend answers.
    let answer = server.result("chainsig_verifyBatch", records).await;
    assert_eq!(answer, json!([{"valid": true}]));
}
