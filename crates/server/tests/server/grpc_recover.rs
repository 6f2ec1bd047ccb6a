//! gRPC `RecoverBatch` with raw transactions: on the CPU the answers are the CPU path's, record
//! for record; with a backend that decodes transactions on its device (a stand-in here, the GPU
//! when one is present) the transactions go there, the bare signatures stay on the registry's
//! recovery, and every answer is the CPU's, in order.

use crate::common::{grpc_channel, Options, TestServer};
use chainsig_core::{
    Algorithm, Backend, BackendError, Batch, Bitmap, RecoverItem, Recovered, Registry, TxAnswer,
};
use chainsig_eth::rawtx::corpus::Corpus;
use chainsig_eth::rawtx::recover_raw;
use chainsig_server::batcher::BatcherConfig;
use chainsig_server::grpc::pb;
use chainsig_server::grpc::pb::recover_record::Record;
use chainsig_server::grpc::pb::verifier_client::VerifierClient;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Raw transactions of every type, a third broken, an empty one, and signatures over digests
/// between them (some with a `v` out of range).
fn items(seed: u64, count: usize) -> (Vec<pb::RecoverRecord>, Vec<Vec<u8>>) {
    let mut txs = Corpus::new(seed, 5).mixed(count, 0.3);
    txs.push(vec![0x02]);
    let key = secp_key();
    let mut items = Vec::new();
    for (i, tx) in txs.iter().enumerate() {
        items.push(pb::RecoverRecord {
            record: Some(Record::Tx(tx.clone())),
        });
        if i % 3 == 0 {
            let digest = [i as u8 ^ 0x5a; 32];
            let (sig, v) = key.sign_prehash(&digest);
            items.push(pb::RecoverRecord {
                record: Some(Record::SignedDigest(pb::SignedDigest {
                    digest: digest.to_vec(),
                    sig: sig.to_vec(),
                    v: if i % 9 == 0 { 40 } else { 27 + u32::from(v) },
                })),
            });
        }
    }
    (items, txs)
}

/// A signing key for the bare signatures.
struct SecpKey {
    signer: chainsig_eth::Signer,
    address: alloy_primitives::Address,
}

fn secp_key() -> SecpKey {
    let mut signer = chainsig_eth::Signer::new();
    let address = signer.add_key(chainsig_eth::PrivateKey::from_bytes(&[0x42; 32]).unwrap());
    SecpKey { signer, address }
}

impl SecpKey {
    /// r‖s and the y parity of a signature over `digest`.
    fn sign_prehash(&self, digest: &[u8; 32]) -> ([u8; 64], u8) {
        let sig = self
            .signer
            .sign_hash(&self.address, &(*digest).into())
            .unwrap();
        (sig[..64].try_into().unwrap(), sig[64] - 27)
    }
}

async fn recover(server: &TestServer, items: Vec<pb::RecoverRecord>) -> Vec<pb::RecoverResult> {
    VerifierClient::new(grpc_channel(server).await)
        .recover_batch(pb::RecoverBatchRequest {
            items,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .results
}

/// `items` cut into consecutive calls the service accepts: at most `records_per_call` records and
/// encoded requests a kilobyte under `body_bytes`.
fn calls_within(
    items: &[pb::RecoverRecord],
    limits: &chainsig_server::Limits,
) -> Vec<Vec<pb::RecoverRecord>> {
    use prost::Message;
    let budget = limits.body_bytes - 1024;
    let mut calls: Vec<Vec<pb::RecoverRecord>> = vec![Vec::new()];
    let mut bytes = 0;
    for item in items {
        // The record, its tag and its length prefix inside the request.
        let size = item.encoded_len() + 1 + prost::length_delimiter_len(item.encoded_len());
        let call = calls.last_mut().unwrap();
        if !call.is_empty() && (call.len() == limits.records_per_call || bytes + size > budget) {
            calls.push(Vec::new());
            bytes = 0;
        }
        calls.last_mut().unwrap().push(item.clone());
        bytes += size;
    }
    calls
}

async fn server_with(registry: Registry, backend: &str) -> TestServer {
    TestServer::start(Options {
        registry,
        batcher: BatcherConfig {
            backend: backend.into(),
            ..BatcherConfig::default()
        },
        ..Options::default()
    })
    .await
}

/// The answer the CPU path gives for a raw transaction.
fn cpu_answer(tx: &[u8]) -> pb::recover_result::Outcome {
    match recover_raw(tx) {
        Ok(found) => pb::recover_result::Outcome::Recovered(pb::Recovered {
            address: found.address.to_vec(),
            pubkey: found.pubkey.to_vec(),
        }),
        Err(e) => pb::recover_result::Outcome::Error(e.to_string()),
    }
}

/// The transactions' answers of `results` (the items' order: each transaction, then a signature
/// after every third).
fn tx_answers(results: &[pb::RecoverResult], txs: usize) -> Vec<pb::recover_result::Outcome> {
    let mut out = Vec::new();
    let mut at = 0;
    for i in 0..txs {
        out.push(results[at].outcome.clone().unwrap());
        at += 1 + usize::from(i % 3 == 0);
    }
    assert_eq!(at, results.len());
    out
}

#[tokio::test]
async fn on_the_cpu_raw_transactions_answer_as_the_cpu_path_does() {
    let (items, txs) = items(61, 300);
    let server = server_with(chainsig_cpu::cpu_registry(), "cpu").await;
    let results = recover(&server, items).await;
    let expected: Vec<_> = txs.iter().map(|tx| cpu_answer(tx)).collect();
    assert_eq!(tx_answers(&results, txs.len()), expected);
    let errors = expected
        .iter()
        .filter(|o| matches!(o, pb::recover_result::Outcome::Error(_)))
        .count();
    assert!(errors > 60 && errors < 160, "{errors} errors");
    // The signatures between them: found, or `v` refused by name.
    let mut at = 0;
    for i in 0..txs.len() {
        at += 1;
        if i % 3 == 0 {
            match results[at].outcome.as_ref().unwrap() {
                pb::recover_result::Outcome::Recovered(found) => {
                    assert!(i % 9 != 0);
                    assert_eq!(found.address, secp_key().address.to_vec());
                }
                pb::recover_result::Outcome::Error(e) => {
                    assert!(i % 9 == 0 && e.starts_with("v:"), "{e}")
                }
            }
            at += 1;
        }
    }
}

/// Decodes transactions "on its device" by the CPU path (so its answers are known), recovers bare
/// signatures through the CPU backend, and counts the transactions it was given.
struct Device {
    cpu: Arc<dyn Backend>,
    transactions: AtomicU64,
}

impl Backend for Device {
    fn name(&self) -> &str {
        "device"
    }
    fn supports(&self, _alg: Algorithm) -> bool {
        false
    }
    fn verify_batch(&self, _batch: &Batch) -> Result<Bitmap, BackendError> {
        unreachable!("not a verifier")
    }
    fn recovers(&self) -> bool {
        true
    }
    fn recover_batch(&self, items: &[RecoverItem]) -> Result<Vec<Option<Recovered>>, BackendError> {
        self.cpu.recover_batch(items)
    }
    fn recovers_transactions(&self) -> bool {
        true
    }
    fn recover_transactions(&self, txs: &[&[u8]]) -> Result<Vec<TxAnswer>, BackendError> {
        self.transactions
            .fetch_add(txs.len() as u64, Ordering::Relaxed);
        Ok(txs
            .iter()
            .map(|tx| recover_raw(tx).map_err(|e| e.fault.code()))
            .collect())
    }
}

#[tokio::test]
async fn raw_transactions_go_to_a_device_and_keep_their_places() {
    let (items, txs) = items(62, 200);
    let cpu = server_with(chainsig_cpu::cpu_registry(), "cpu").await;
    let expected = recover(&cpu, items.clone()).await;

    let mut registry = chainsig_cpu::cpu_registry();
    let device = Arc::new(Device {
        cpu: registry.get("cpu").unwrap(),
        transactions: AtomicU64::new(0),
    });
    registry.register(device.clone());
    let server = server_with(registry, "device").await;
    assert_eq!(recover(&server, items).await, expected);
    // Every transaction but the empty ones (refused as the request is read) went to the device.
    let nonempty = txs.iter().filter(|tx| !tx.is_empty()).count();
    assert_eq!(device.transactions.load(Ordering::Relaxed), nonempty as u64);
}

/// With a GPU, a service on `cuda` answers as one on the CPU: ≥ 10⁴ raw transactions of every
/// type (a third broken) with signatures between them. Without one the test says so and passes,
/// unless `CHAINSIG_REQUIRE_GPU=1` (the GPU machine's runs). `CHAINSIG_GPU_RECOVER_TXS` sets the
/// count.
#[tokio::test]
async fn on_the_gpu_raw_transactions_answer_as_on_the_cpu() {
    let mut registry = chainsig_cpu::cpu_registry();
    let config = chainsig_cuda::CudaConfig::from_env().unwrap();
    if chainsig_cuda::startup::start(&mut registry, config).is_none() {
        let why = registry.get(chainsig_cuda::NAME).err().unwrap();
        assert!(
            std::env::var("CHAINSIG_REQUIRE_GPU").as_deref() != Ok("1"),
            "CHAINSIG_REQUIRE_GPU=1 but the GPU cannot be used: {why}"
        );
        eprintln!("skipped: no GPU ({why})");
        return;
    }
    let count: usize = match std::env::var("CHAINSIG_GPU_RECOVER_TXS") {
        Ok(n) => n
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("CHAINSIG_GPU_RECOVER_TXS={n:?} is not a count")),
        Err(_) => 10_000,
    };
    let (items, txs) = items(63, count);
    let cpu = server_with(chainsig_cpu::cpu_registry(), "cpu").await;
    let gpu = server_with(registry, chainsig_cuda::NAME).await;
    // In calls within the service's limits: records per call, and bytes per request (a call of
    // 65,536 transactions with calldata is larger than the 16 MiB body limit and is refused).
    let (mut expected, mut answered) = (Vec::new(), Vec::new());
    for part in calls_within(&items, &cpu.state.limits) {
        expected.extend(recover(&cpu, part.clone()).await);
        answered.extend(recover(&gpu, part).await);
    }
    assert_eq!(answered.len(), expected.len());
    let differing: Vec<usize> = (0..expected.len())
        .filter(|&i| answered[i] != expected[i])
        .collect();
    assert!(
        differing.is_empty(),
        "{} of {} answers differ, first at item {}",
        differing.len(),
        expected.len(),
        differing[0]
    );
    eprintln!(
        "{} transactions and {} signatures: the GPU's answers are the CPU's",
        txs.len(),
        expected.len() - txs.len()
    );
}
