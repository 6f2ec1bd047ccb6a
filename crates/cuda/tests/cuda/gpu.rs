//! On a machine with a CUDA GPU: the backend's verdicts equal the reference's, for prehashed SM2
//! records, for SM2 records whose messages the GPU hashes, and for P-256 and secp256k1 ECDSA
//! records; modules loaded ahead of the first batch (`warm_up`); and calls from several threads
//! at once. Without a driver or GPU the
//! tests print why they skipped (the `device_check` program of chainsig-bench runs these paths
//! at scale on the H200).

use chainsig_core::backend::Backend;
use chainsig_cuda::{CudaBackend, CudaConfig};
use chainsig_testkit::sets as testdata;

pub(crate) use super::open::open_or_skip;

/// The number in the environment variable `name`, or `default` when it is not set; a value that
/// is not a number of that type fails the test, naming it.
pub(crate) fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number of the expected kind")),
        Err(_) => default,
    }
}

fn backend_or_skip() -> Option<CudaBackend> {
    open_or_skip(CudaConfig::default())
}

#[test]
fn gpu_verdicts_equal_the_reference_on_prehashed_records() {
    let Some(gpu) = backend_or_skip() else { return };
    let (records, want) = testdata::generate(3000, 64, 200, 0x6e51);
    let batch = testdata::batch(&records);
    let got = gpu.verify_batch(&batch).expect("verify");
    for (i, w) in want.iter().enumerate() {
        assert_eq!(got.get(i), *w, "record {i}");
    }
}

#[test]
fn gpu_hashed_messages_give_the_references_verdicts() {
    let Some(gpu) = backend_or_skip() else { return };
    let (records, want) = testdata::generate_messages(3000, 64, 300, 0x6e52);
    let batch = testdata::message_batch(&records, chainsig_core::hash::sm2_z_a);
    let got = Backend::verify_messages(&gpu, &batch).expect("verify messages");
    for (i, w) in want.iter().enumerate() {
        assert_eq!(
            got.get(i),
            *w,
            "record {i} ({} message bytes)",
            records[i].msg.len()
        );
    }
}

#[test]
fn gpu_recovery_finds_the_senders_the_cpu_finds() {
    let Some(gpu) = backend_or_skip() else { return };
    assert!(gpu.recovers());
    let (records, _) =
        testdata::generate_ecdsa(chainsig_core::Algorithm::Secp256k1, 3000, 64, 200, 0x6e54);
    let items = testdata::recovery_items(&records);
    let got = gpu.recover_batch(&items).expect("recover");
    let want = chainsig_cpu::CpuBackend::new()
        .recover_batch(&items)
        .expect("recover on the CPU");
    assert_eq!(got.len(), items.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "item {i}");
    }
}

#[test]
fn gpu_ecdsa_verdicts_equal_rustcryptos_under_both_rules() {
    let Some(gpu) = backend_or_skip() else { return };
    for alg in [
        chainsig_core::Algorithm::P256,
        chainsig_core::Algorithm::Secp256k1,
    ] {
        assert!(gpu.supports(alg));
        let (records, want) = testdata::generate_ecdsa(alg, 5000, 64, 200, 0x6e53);
        for low_s in [false, true] {
            let batch = testdata::batch_for(alg, low_s, &records);
            let got = gpu.verify_batch(&batch).expect("verify");
            for (i, w) in want.iter().enumerate() {
                assert_eq!(got.get(i), w.get(low_s), "{alg} record {i}, low-s {low_s}");
            }
        }
    }
}

/// `warm_up` loads and checks each kind of work's modules once: each call succeeds, the second
/// of each finds them loaded (it takes less time than the first), and batches after it give the
/// reference's answers through the modules it loaded.
#[test]
fn gpu_warm_up_loads_each_modules_once_and_batches_use_them() {
    use chainsig_core::Algorithm::{Secp256k1, Sm2, P256};
    use chainsig_cuda::Upcoming;
    let Some(gpu) = open_or_skip(CudaConfig {
        raw_sm2: true,
        ..CudaConfig::default()
    }) else {
        return;
    };
    for upcoming in [
        Upcoming::Verify(Sm2),
        Upcoming::Verify(P256),
        Upcoming::Recover(Secp256k1),
        Upcoming::Verify(Secp256k1),
        Upcoming::RawTransactions,
    ] {
        let t0 = std::time::Instant::now();
        gpu.warm_up(upcoming).expect("warm up");
        let first = t0.elapsed();
        let t1 = std::time::Instant::now();
        gpu.warm_up(upcoming).expect("warm up again");
        let again = t1.elapsed();
        println!("{upcoming:?}: first warm-up {first:?}, again {again:?}");
        assert!(
            again < first,
            "{upcoming:?}: {again:?} again, {first:?} first"
        );
    }
    for alg in [P256, Secp256k1] {
        let (records, want) = testdata::generate_ecdsa(alg, 2000, 64, 200, 0x6e55);
        let batch = testdata::batch_for(alg, true, &records);
        let got = gpu.verify_batch(&batch).expect("verify");
        for (i, w) in want.iter().enumerate() {
            assert_eq!(got.get(i), w.get(true), "{alg} record {i}");
        }
    }
    let (records, want) = testdata::generate_messages(2000, 64, 100, 0x6e56);
    let batch = testdata::message_batch(&records, chainsig_core::hash::sm2_z_a);
    let got = Backend::verify_messages(&gpu, &batch).expect("verify messages");
    for (i, w) in want.iter().enumerate() {
        assert_eq!(got.get(i), *w, "SM2 record {i}");
    }
}

/// Calls from several threads at once share one engine, each on a slot set of its own: ten
/// threads run SM2 with digests, SM2 with messages, secp256k1 verification and sender recovery
/// side by side, three rounds each, and every answer is the reference's for that thread's own
/// records; with the default eight sets (some threads wait for one), three, and one (calls one
/// at a time).
#[test]
fn gpu_calls_from_several_threads_at_once_each_get_their_own_answers() {
    use chainsig_core::Algorithm::Secp256k1;
    if backend_or_skip().is_none() {
        return;
    }
    let n = env_number("CHAINSIG_GPU_THREADS_N", 6000);
    let (sm2, sm2_want) = testdata::generate(n, 64, 200, 0x6e57);
    let sm2 = testdata::batch(&sm2);
    let (msgs, msgs_want) = testdata::generate_messages(n, 64, 300, 0x6e58);
    let msgs = testdata::message_batch(&msgs, chainsig_core::hash::sm2_z_a);
    let (k1, k1_want) = testdata::generate_ecdsa(Secp256k1, n, 64, 200, 0x6e59);
    let k1_batch = testdata::batch_for(Secp256k1, true, &k1);
    let items = testdata::recovery_items(&k1);
    let senders = chainsig_cpu::CpuBackend::new()
        .recover_batch(&items)
        .expect("recover on the CPU");
    for calls_at_once in [chainsig_cuda::config::CALLS_AT_ONCE, 3, 1] {
        let gpu = CudaBackend::new(CudaConfig {
            calls_at_once,
            ..CudaConfig::default()
        })
        .expect("a second backend on the GPU just opened");
        std::thread::scope(|scope| {
            for t in 0..10 {
                let (gpu, sm2, msgs, k1_batch, items) = (&gpu, &sm2, &msgs, &k1_batch, &items);
                let (sm2_want, msgs_want, k1_want, senders) =
                    (&sm2_want, &msgs_want, &k1_want, &senders);
                scope.spawn(move || {
                    for round in 0..3 {
                        // Each thread starts at its own record, so threads of one kind differ too.
                        let from = (t * 97 + round * 31) % 1000;
                        match t % 4 {
                            0 => {
                                let part = sm2.range(from..n);
                                let got = gpu.verify_batch(&part).expect("verify");
                                for i in 0..n - from {
                                    assert_eq!(got.get(i), sm2_want[from + i], "thread {t}: {i}");
                                }
                            }
                            1 => {
                                let got = Backend::verify_messages(gpu, msgs).expect("messages");
                                for (i, w) in msgs_want.iter().enumerate() {
                                    assert_eq!(got.get(i), *w, "thread {t}: message record {i}");
                                }
                            }
                            2 => {
                                let part = k1_batch.range(from..n);
                                let got = gpu.verify_batch(&part).expect("verify secp256k1");
                                for i in 0..n - from {
                                    let want = k1_want[from + i].get(true);
                                    assert_eq!(got.get(i), want, "thread {t}: secp256k1 {i}");
                                }
                            }
                            _ => {
                                let got = gpu.recover_batch(&items[from..]).expect("recover");
                                assert_eq!(got[..], senders[from..], "thread {t}: senders");
                            }
                        }
                    }
                });
            }
        });
        println!("{calls_at_once} calls at once: {:?}", gpu.pipeline_times());
    }
}
