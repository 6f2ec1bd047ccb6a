//! `device_check --ecdsa`: P-256 and secp256k1 through the ECDSA kernels, and Ethereum's sender
//! recovery.

use chainsig_core::algorithm::Algorithm;
use chainsig_cuda::{CudaBackend, CudaConfig};
use chainsig_gpu::median;
use chainsig_testkit::sets as testdata;
use std::sync::Arc;
use std::time::Instant;

/// Ethereum's sender recovery on the GPU against the CPU backend (libsecp256k1): every record under
/// both recovery ids, then end-to-end medians against batch size beside the CPU. Returns whether
/// every recovery agreed.
fn recovery_check(
    backend: &CudaBackend,
    cpu: &chainsig_cpu::CpuBackend,
    records: &[testdata::Record],
    sizes: &[usize],
    rows: &mut Vec<serde_json::Value>,
) -> bool {
    use chainsig_core::backend::Backend;
    use chainsig_core::RecoverItem;
    let items: Vec<RecoverItem> = records
        .iter()
        .enumerate()
        .map(|(i, r)| RecoverItem {
            digest: r.e,
            r: r.r,
            s: r.s,
            recovery_id: (i % 2) as u8,
        })
        .collect();
    let t = Instant::now();
    let want = cpu.recover_batch(&items).expect("recover on the CPU");
    let cpu_all_ms = t.elapsed().as_secs_f64() * 1e3;
    let got = backend.recover_batch(&items).expect("recover on the GPU");
    let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    let found = want.iter().filter(|k| k.is_some()).count();
    println!(
        "recovery: {bad} disagreements with the CPU in {} items ({found} senders; CPU {cpu_all_ms:.1} ms for all)",
        items.len()
    );
    let mut ok = bad == 0;
    const REPS: usize = 7;
    for &n in sizes {
        let part = &items[..n];
        let mut times = Vec::new();
        let mut wrong = 0;
        for rep in 0..=REPS {
            let (keys, ms) = backend.recover_timed(part).expect("recover");
            wrong += keys.iter().zip(&want[..n]).filter(|(g, w)| g != w).count();
            if rep > 0 {
                times.push(ms);
            }
        }
        let cpu_ms = median(
            &mut (0..3)
                .map(|_| {
                    let t = Instant::now();
                    cpu.recover_batch(part).expect("recover on the CPU");
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect::<Vec<_>>(),
        );
        let ms = median(&mut times);
        ok &= wrong == 0;
        println!(
            "recover n={n:8}: end to end {ms:8.3} ms ({:.3e}/s), CPU {cpu_ms:8.3} ms ({:.3e}/s), {wrong} disagreements",
            n as f64 / ms * 1e3,
            n as f64 / cpu_ms * 1e3
        );
        rows.push(serde_json::json!({
            "alg": "secp256k1-recover", "batch": n, "e2e_ms": ms, "cpu_ms": cpu_ms,
            "e2e_per_s": n as f64 / ms * 1e3, "mismatches": wrong,
        }));
    }
    ok
}

/// ECDSA (P-256 or secp256k1): fresh records (a tenth corrupted, a quarter of the valid ones with
/// the high s, the edge cases first) against RustCrypto under both rules, through verify_batch and
/// submit/confirm; then end-to-end and kernel-only medians against batch size, each run checked,
/// beside the CPU backend on every core. Writes `ecdsa_<alg>.json`.
pub fn ecdsa_check(alg: Algorithm, count: usize, seed: u64, out: &std::path::Path) {
    use chainsig_core::backend::Backend;
    const REPS: usize = 9;
    let t = Instant::now();
    let (records, verdicts) = testdata::generate_ecdsa(alg, count, 4096, 100, seed);
    let valid = verdicts.iter().filter(|v| v.any_s).count();
    let valid_low = verdicts.iter().filter(|v| v.low_s).count();
    println!(
        "generated {count} {alg} records (seed {seed}): {valid} valid ({valid_low} under low-s) by the reference, in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let backend = CudaBackend::new(CudaConfig::default()).expect("open the backend");
    let probe = testdata::batch_for(alg, false, &records[..64.min(count)]);
    backend
        .verify_batch(&probe)
        .expect("load the ECDSA kernels");
    println!(
        "{alg} ECDSA module loaded and self-tested in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let sizes: Vec<usize> = [
        1024usize,
        4096,
        16384,
        65536,
        172032,
        262144,
        524288,
        1 << 20,
    ]
    .into_iter()
    .filter(|&n| n <= count)
    .collect();
    let cpu = chainsig_cpu::CpuBackend::new();
    let mut rows = Vec::new();
    let mut all_ok = true;
    for low_s in [false, true] {
        let batch = testdata::batch_for(alg, low_s, &records);
        let map = backend.verify_batch(&batch).expect("verify");
        let bad = (0..count)
            .filter(|&i| map.get(i) != verdicts[i].get(low_s))
            .count();
        let ticket = backend.submit(Arc::new(batch)).expect("submit");
        let map2 = ticket.confirm().expect("confirm");
        let bad2 = (0..count)
            .filter(|&i| map2.get(i) != verdicts[i].get(low_s))
            .count();
        all_ok &= bad == 0 && bad2 == 0;
        println!(
            "{alg} low-s {low_s}: {bad} mismatches of {count} (verify_batch), {bad2} (submit/confirm)"
        );
    }
    for &n in &sizes {
        let batch = testdata::batch_for(alg, false, &records[..n]);
        let mut e2e = Vec::new();
        let mut kernel = Vec::new();
        let mut bad = 0;
        for rep in 0..=REPS {
            let (map, ms) = backend.verify_timed(&batch).expect("verify");
            bad += (0..n).filter(|&i| map.get(i) != verdicts[i].any_s).count();
            let (kms, kmap) = backend.time_kernel(&batch, 1).expect("time kernel");
            bad += (0..n).filter(|&i| kmap.get(i) != verdicts[i].any_s).count();
            if rep > 0 {
                e2e.push(ms);
                kernel.push(kms as f64);
            }
        }
        let want_valid = verdicts[..n].iter().filter(|v| v.any_s).count();
        let cpu_ms = median(
            &mut (0..3)
                .map(|_| {
                    let t = Instant::now();
                    let m = cpu.verify_batch(&batch).expect("CPU verify");
                    assert_eq!(
                        m.count_valid(),
                        want_valid,
                        "{alg}: the CPU backend's verdicts"
                    );
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect::<Vec<_>>(),
        );
        let (e, k) = (median(&mut e2e), median(&mut kernel));
        all_ok &= bad == 0;
        println!(
            "{alg} n={n:8}: end to end {e:8.3} ms ({:.3e}/s), kernel {k:8.3} ms ({:.3e}/s), CPU {cpu_ms:8.3} ms ({:.3e}/s), {bad} mismatches",
            n as f64 / e * 1e3,
            n as f64 / k * 1e3,
            n as f64 / cpu_ms * 1e3
        );
        rows.push(serde_json::json!({
            "alg": alg.to_string(), "batch": n, "e2e_ms": e, "kernel_ms": k, "cpu_ms": cpu_ms,
            "e2e_per_s": n as f64 / e * 1e3, "mismatches": bad,
        }));
    }
    if alg == Algorithm::Secp256k1 {
        all_ok &= recovery_check(&backend, &cpu, &records, &sizes, &mut rows);
    }
    if all_ok {
        println!("all {alg} verdicts equal the reference");
    } else {
        println!("{alg} MISMATCH");
    }
    std::fs::write(
        out.join(format!("ecdsa_{alg}.json")),
        serde_json::to_string_pretty(&rows).unwrap(),
    )
    .expect("write the ECDSA figures");
}
