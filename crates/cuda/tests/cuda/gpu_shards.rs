//! On a machine with a CUDA GPU: the backend sharded over one engine and over two and three
//! logical shards of device 0 (`CudaConfig::devices` = `[0]`, `[0, 0]`, `[0, 0, 0]`) gives, for
//! every record, the CPU backend's verdict: fresh SM2 and secp256k1 records (a key each, a tenth
//! corrupted), 2^20 of each by default (`CHAINSIG_SHARD_RECORDS` sets the count), through
//! `verify_batch` (three runs: the first split equal, the later ones by measured rates), a ragged
//! length, `submit`, `recover_batch`, `verify_messages` and known signers' tables loaded on every
//! shard; every shard must have done a part.
//! Built with the `fault-injection` feature, a launch and a copy failed in the middle of a batch
//! on two shards are redone on the other shard with nothing lost, and on one shard they are the
//! device error the registry answers on the CPU.
//!
//! Without a GPU the tests print why they skipped; with `CHAINSIG_REQUIRE_GPU=1` they fail
//! instead. Run on the GPU machine (one test thread: the fault switch counts the launches and
//! copies of the whole process):
//! `CHAINSIG_REQUIRE_GPU=1 cargo test --release -p chainsig-cuda --features fault-injection --test cuda -- gpu_shards:: --test-threads 1 --nocapture`

use super::gpu::{env_number, open_or_skip};
use chainsig_core::backend::Backend;
use chainsig_core::{Algorithm, Batch, Bitmap};
use chainsig_cpu::CpuBackend;
use chainsig_cuda::{CudaBackend, CudaConfig, Devices};
use chainsig_testkit::sets as testdata;
use std::sync::Arc;
use std::time::Instant;

/// Records per algorithm: `CHAINSIG_SHARD_RECORDS`, or 2^20.
fn records() -> usize {
    env_number("CHAINSIG_SHARD_RECORDS", 1 << 20)
}

/// The backend on `devices` (every batch split, however small), or None (the test skips)
/// without a GPU; with `CHAINSIG_REQUIRE_GPU=1` a missing GPU fails the test instead.
fn open(devices: &[usize]) -> Option<CudaBackend> {
    let config = CudaConfig {
        devices: Devices::list(devices).expect("a device list"),
        shard_below: 0,
        ..CudaConfig::default()
    };
    open_or_skip(config)
}

/// A batch of fresh records and the CPU backend's verdicts on it (themselves checked against
/// RustCrypto's).
struct Set {
    alg: Algorithm,
    records: Vec<chainsig_core::PreparedItem>,
    batch: Batch,
    cpu: Bitmap,
}

fn set(alg: Algorithm, n: usize, seed: u64) -> Set {
    let t = Instant::now();
    let (records, reference) = testdata::generate_for(alg, n, n, 100, seed);
    let batch = testdata::batch_for(alg, false, &records);
    let cpu = CpuBackend::new().verify_batch(&batch).expect("CPU backend");
    for (i, r) in reference.iter().enumerate() {
        assert_eq!(
            cpu.get(i),
            r.get(false),
            "{alg}: CPU against RustCrypto, record {i}"
        );
    }
    let valid = cpu.count_valid();
    assert!(valid < n && valid > n / 2, "{alg}: {valid} of {n} valid");
    eprintln!(
        "{alg}: {n} fresh records ({valid} valid), made and verified on the CPU in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Set {
        alg,
        records,
        batch,
        cpu,
    }
}

/// The SM2 and secp256k1 sets of [`records`] records, made once for both tests (making and
/// checking 2^20 fresh records takes most of a test's time).
fn sets() -> &'static [Set; 2] {
    static SETS: std::sync::OnceLock<[Set; 2]> = std::sync::OnceLock::new();
    SETS.get_or_init(|| {
        let n = records();
        [
            set(Algorithm::Sm2, n, 0x5a4d_0001),
            set(Algorithm::Secp256k1, n, 0x5a4d_0002),
        ]
    })
}

fn same(got: &Bitmap, want: &Bitmap, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: verdict count");
    if got != want {
        let i = (0..want.len()).find(|&i| got.get(i) != want.get(i));
        panic!("{what}: first disagreement with the CPU at record {i:?}");
    }
}

fn report(gpu: &CudaBackend, what: &str) {
    for (k, d) in gpu.devices().iter().enumerate() {
        let s = d.stats;
        eprintln!(
            "{what}: engine {k} (device {} {}): {} records in {:.3} s, rate {}, {} failed parts, {} records redone",
            d.ordinal,
            d.name,
            s.records,
            s.seconds,
            s.rate.map_or("-".into(), |r| format!("{r:.3e}/s")),
            s.failures,
            s.redone
        );
    }
}

#[test]
fn gpu_shards_give_the_cpu_verdicts_on_one_two_and_three_shards() {
    let Some(first) = open(&[0]) else { return };
    let n = records();
    let sets = sets();
    let small = (n / 8).max(1);
    let recover_items = testdata::recovery_items(&sets[1].records[..small]);
    let cpu_keys = CpuBackend::new()
        .recover_batch(&recover_items)
        .expect("recover on the CPU");
    let (msg_records, msg_want) = testdata::generate_messages(small, small, 100, 0x5a4d_0003);
    let messages = testdata::message_batch(&msg_records, chainsig_core::hash::sm2_z_a);
    let msg_want = Bitmap::from_bools(msg_want);
    // Eight known signers (their keys taken from their valid records), and records of theirs
    // mixed with others' (the corrupted ones include other keys).
    let (known_records, _) = testdata::generate(small, 8, 100, 0x5a4d_0004);
    let known_batch = testdata::batch(&known_records);
    let known_want = CpuBackend::new().verify_batch(&known_batch).expect("CPU");
    let mut keys: Vec<chainsig_cuda::signers::SignerKey> = (0..small)
        .filter(|&i| known_want.get(i))
        .map(|i| (known_records[i].px, known_records[i].py))
        .collect();
    keys.sort();
    keys.dedup();
    assert!(keys.len() >= 8, "{} known signers found", keys.len());
    let tables = chainsig_cuda::signers::SignerTables::build(&keys).expect("signer tables");
    let mut first = Some(first);
    for shards in [1, 2, 3] {
        let gpu = first
            .take()
            .or_else(|| open(&vec![0; shards]))
            .expect("opened before");
        assert_eq!(gpu.devices().len(), shards);
        let what = format!("{shards} shard(s)");
        for s in sets {
            for run in 0..3 {
                let t = Instant::now();
                let got = gpu.verify_batch(&s.batch).expect("verify on the GPU");
                let secs = t.elapsed().as_secs_f64();
                same(&got, &s.cpu, &format!("{what}, {} run {run}", s.alg));
                eprintln!(
                    "{what}: {} {n} records, run {run}: {:.1} ms, {:.3e}/s",
                    s.alg,
                    secs * 1e3,
                    n as f64 / secs
                );
            }
            // A length that is no multiple of 64, and one record.
            for len in [n - n.min(37), 1] {
                let part = s.batch.range(0..len);
                let want = Bitmap::from_bools((0..len).map(|i| s.cpu.get(i)));
                let got = gpu.verify_batch(&part).expect("verify a ragged batch");
                same(&got, &want, &format!("{what}, {} ragged {len}", s.alg));
            }
            let ticket = gpu.submit(Arc::new(s.batch.clone())).expect("submit");
            same(
                &ticket.confirm().expect("confirm"),
                &s.cpu,
                &format!("{what}, {} ticket", s.alg),
            );
        }
        let keys = gpu
            .recover_batch(&recover_items)
            .expect("recover on the GPU");
        assert_eq!(keys.len(), cpu_keys.len());
        if let Some(i) = (0..keys.len()).find(|&i| keys[i] != cpu_keys[i]) {
            panic!("{what}: recovery item {i} differs from the CPU's");
        }
        let got = Backend::verify_messages(&gpu, &messages).expect("messages on the GPU");
        same(&got, &msg_want, &format!("{what}, messages"));
        gpu.load_signers(&tables).expect("tables on every shard");
        let got = gpu
            .verify_batch(&known_batch)
            .expect("known signers on the GPU");
        same(&got, &known_want, &format!("{what}, known signers"));
        report(&gpu, &what);
        for (k, d) in gpu.devices().iter().enumerate() {
            assert!(d.stats.records > 0, "{what}: engine {k} did no part");
            assert_eq!(d.stats.failures, 0, "{what}: engine {k} failed a part");
        }
    }
}

/// Two shards: the second launch (or third copy) after arming fails on whichever shard makes it;
/// that shard's part is redone on the other and the verdicts are still the CPU's. On one shard
/// the same fault is the device error.
#[cfg(feature = "fault-injection")]
#[test]
fn gpu_shards_redo_a_failed_part_on_the_other_shard() {
    use chainsig_core::backend::BackendError;
    use chainsig_gpu::fault::{arm, Plan};
    let Some(two) = open(&[0, 0]) else { return };
    let sets = sets();
    for (s, plan) in sets.iter().zip(["launch:2", "copy:3"]) {
        // Warm-up: the modules load and check themselves outside the counted calls.
        same(
            &two.verify_batch(&s.batch).expect("warm-up"),
            &s.cpu,
            "warm-up",
        );
        let before: u64 = two.devices().iter().map(|d| d.stats.failures).sum();
        arm(Plan::parse(plan).expect("plan"));
        let got = two.verify_batch(&s.batch);
        arm(Plan::default());
        same(
            &got.expect("redone on the other shard"),
            &s.cpu,
            &format!("{} {plan}", s.alg),
        );
        let devices = two.devices();
        let failures: u64 = devices.iter().map(|d| d.stats.failures).sum();
        let redone: u64 = devices.iter().map(|d| d.stats.redone).sum();
        assert_eq!(failures - before, 1, "{} {plan}: one part failed", s.alg);
        assert!(redone > 0, "{} {plan}: the failed part was redone", s.alg);
        report(&two, &format!("{} {plan}", s.alg));
    }
    let Some(one) = open(&[0]) else { return };
    let s = &sets[0];
    same(
        &one.verify_batch(&s.batch).expect("warm-up"),
        &s.cpu,
        "warm-up",
    );
    arm(Plan::parse("launch:2").expect("plan"));
    let got = one.verify_batch(&s.batch);
    arm(Plan::default());
    match got {
        Err(BackendError::Device { reason, .. }) => {
            assert!(reason.contains("injected fault"), "{reason}")
        }
        other => panic!("one shard: expected the injected device error, got {other:?}"),
    }
    same(
        &one.verify_batch(&s.batch).expect("after the fault"),
        &s.cpu,
        "after the fault",
    );
}
