//! On a machine with a CUDA GPU, built with the `fault-injection` feature: a kernel launch or a
//! copy that fails in the middle of a batch (chainsig-gpu's `CHAINSIG_GPU_FAULT` switch, armed
//! here through `chainsig_gpu::fault::arm`) is reported as a device error when the GPU was asked
//! for by name, is verified again on the CPU under `auto`, and leaves the backend working: the
//! next batches, larger or smaller, get exactly the reference's verdicts (no chunk of the failed
//! batch is harvested into a later one). Without a GPU every test prints why it skipped.
//!
//! Run on the GPU machine:
//! `CHAINSIG_REQUIRE_GPU=1 cargo test --release -p chainsig-cuda --features fault-injection --test gpu_fault -- --test-threads 1`
//! (one thread: the switch counts the launches and copies of the whole process).

use chainsig_core::backend::{Backend, BackendError};
use chainsig_core::{Algorithm, Bitmap, Registry};
use chainsig_cuda::{CudaBackend, CudaConfig};
use chainsig_gpu::fault::{arm, Plan};
use chainsig_testkit::sets as testdata;
use std::sync::Arc;

#[path = "cuda/open.rs"]
mod open;

/// Items per chunk: a batch of 20,000 is 20 chunks, 20 launches and 40 copies over the streams.
const CHUNK: usize = 1024;

/// The backend, or None (the test skips) without a GPU; with `CHAINSIG_REQUIRE_GPU=1` a missing
/// GPU fails the test instead, so a device run cannot pass by skipping.
fn backend_or_skip() -> Option<Arc<CudaBackend>> {
    // One engine: a fault is then the batch's error (on several, tests/cuda/gpu_shards.rs shows
    // the failed part redone by the others).
    let config = CudaConfig {
        chunk_items: Some(CHUNK),
        devices: chainsig_cuda::Devices::list(&[0]).expect("device 0"),
        ..CudaConfig::default()
    };
    open::open_or_skip(config).map(Arc::new)
}

fn registry_with(gpu: &Arc<CudaBackend>) -> Registry {
    let mut registry = chainsig_cpu::cpu_registry();
    registry.register(gpu.clone());
    registry.set_gpu_crossover(1);
    registry
}

fn assert_verdicts(got: &Bitmap, want: &[bool], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: verdict count");
    for (i, w) in want.iter().enumerate() {
        assert_eq!(got.get(i), *w, "{what}: record {i}");
    }
}

fn assert_injected(result: Result<Bitmap, BackendError>, plan: &str) {
    match result {
        Err(BackendError::Device { reason, .. }) => {
            assert!(reason.contains("injected fault"), "{plan}: {reason}")
        }
        other => panic!("{plan}: expected the injected device error, got {other:?}"),
    }
}

#[test]
fn a_failed_launch_or_copy_mid_batch_loses_and_reorders_nothing() {
    let Some(gpu) = backend_or_skip() else { return };
    let registry = registry_with(&gpu);
    let (records, want) = testdata::generate(20_000, 64, 200, 0xfa17);
    let batch = testdata::batch(&records);
    let (small_records, small_want) = testdata::generate(3_000, 16, 100, 0xfa18);
    let small = testdata::batch(&small_records);
    // Each chunk copies in, launches, copies out: copy 2 is the first chunk's copy out.
    for plan in [
        "launch:1",
        "launch:7",
        "launch:20",
        "copy:1",
        "copy:2",
        "copy:15",
        "copy:40",
    ] {
        let parsed = Plan::parse(plan).unwrap();
        arm(parsed.clone());
        assert_injected(gpu.verify_batch(&batch), plan);
        // Disarmed, the same backend answers the next batches exactly: smaller than the failed
        // one (a stale chunk would land past its end), then the same size.
        arm(Plan::default());
        let got = gpu.verify_batch(&small).expect("verify after a fault");
        assert_verdicts(&got, &small_want, &format!("{plan}, the small batch after"));
        let got = gpu.verify_batch(&batch).expect("verify after a fault");
        assert_verdicts(&got, &want, &format!("{plan}, the batch after"));
        // Under auto the failed batch is verified again on the CPU, whole and in order.
        arm(parsed);
        let (got, used) = registry.verify("auto", &batch).expect("auto falls back");
        assert_eq!(used, chainsig_core::backend::CPU, "{plan}");
        assert_verdicts(&got, &want, &format!("{plan}, auto"));
        arm(Plan::default());
    }
}

#[test]
fn a_failed_sm3_launch_or_message_copy_falls_back_whole() {
    let Some(gpu) = backend_or_skip() else { return };
    let registry = registry_with(&gpu);
    let (records, want) = testdata::generate_messages(8_000, 64, 300, 0xfa19);
    let batch = testdata::message_batch(&records, chainsig_core::hash::sm2_z_a);
    // With messages, each chunk copies its records and its messages in, launches SM3 and then
    // the verification kernel: launch 2 is the first verification launch, copy 2 the first
    // messages' copy.
    for plan in ["launch:1", "launch:2", "launch:5", "copy:2", "copy:3"] {
        let parsed = Plan::parse(plan).unwrap();
        arm(parsed.clone());
        assert_injected(Backend::verify_messages(gpu.as_ref(), &batch), plan);
        arm(parsed);
        let (got, used) = registry.verify_messages("auto", &batch).expect("fallback");
        assert_eq!(used, chainsig_core::backend::CPU, "{plan}");
        assert_verdicts(&got, &want, &format!("{plan}, auto"));
        arm(Plan::default());
        let got = Backend::verify_messages(gpu.as_ref(), &batch).expect("after a fault");
        assert_verdicts(&got, &want, &format!("{plan}, after"));
    }
}

#[test]
fn a_failed_recovery_launch_falls_back_to_the_cpus_signers() {
    let Some(gpu) = backend_or_skip() else { return };
    let registry = registry_with(&gpu);
    let (records, _) = testdata::generate_ecdsa(Algorithm::Secp256k1, 6_000, 64, 200, 0xfa1a);
    let items = testdata::recovery_items(&records);
    let want = chainsig_cpu::CpuBackend::new()
        .recover_batch(&items)
        .unwrap();
    for plan in ["launch:3", "copy:4"] {
        arm(Plan::parse(plan).unwrap());
        let (got, used) = registry.recover("auto", &items).expect("fallback");
        assert_eq!(used, chainsig_core::backend::CPU, "{plan}");
        assert_eq!(got, want, "{plan}");
        arm(Plan::default());
        assert_eq!(gpu.recover_batch(&items).unwrap(), want, "{plan}, after");
    }
}
