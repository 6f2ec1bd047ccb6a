//! `device_check --messages`: records that carry messages, hashed by SM3 on the GPU.

use chainsig_core::algorithm::Algorithm;
use chainsig_core::batch::{Batch, PreparedItem};
use chainsig_core::bitmap::Bitmap;
use chainsig_cuda::kernels::{self, KernelConfig};
use chainsig_cuda::{CudaBackend, CudaConfig};
use chainsig_gpu::median;
use chainsig_testkit::sets as testdata;
use std::time::Instant;

/// Records that carry messages (0 to 300 bytes, block-boundary lengths overrepresented, 4096
/// signers, a tenth corrupted): verdicts of GPU hashing + verification against RustCrypto `sm2`
/// for several kernels, then end-to-end time with SM3 on the GPU against SM3 on every host core
/// (Z_A cached per signer in both), and full against compressed keys on the prehashed records.
pub fn messages_check(count: usize, seed: u64, out: &std::path::Path) {
    use chainsig_cuda::{Inversion, Mode};
    use rayon::prelude::*;
    const REPS: usize = 7;
    let t = Instant::now();
    let (records, verdicts) = testdata::generate_messages(count, 4096, 100, seed);
    let valid = verdicts.iter().filter(|v| **v).count();
    let bytes: usize = records.iter().map(|r| r.msg.len()).sum();
    println!(
        "generated {count} message records (seed {seed}, {bytes} message bytes): {valid} valid, {} invalid by the reference, in {:.1} s",
        count - valid,
        t.elapsed().as_secs_f64()
    );
    let expected = Bitmap::from_bools(verdicts.iter().copied());
    // Z_A once per signer, as a node would keep it.
    let preparer = chainsig_cpu::prepare::Preparer::new();
    let t = Instant::now();
    let mbatch = testdata::message_batch(&records, |id, x, y| preparer.z_a(id, x, y));
    println!(
        "message batch built (Z_A cached per signer) in {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let fast = |compress: bool, cap: Option<u32>| KernelConfig {
        mode: Mode::Fast,
        inversion: Inversion::Euclid,
        compress,
        row_major: false,
        max_registers: cap,
        ..KernelConfig::default()
    };
    let paper = KernelConfig {
        mode: Mode::Paper,
        compress: true,
        max_registers: None,
        ..fast(true, None)
    };
    let kernels = [
        fast(true, Some(160)),
        fast(false, Some(160)),
        fast(false, Some(168)),
        paper,
    ];
    {
        // Compile (or load) the kernels and the SM3 module in parallel before anything is timed.
        let ctx = chainsig_gpu::cudarc::driver::CudaContext::new(0).expect("open device 0");
        let (major, minor) = ctx.compute_capability().expect("compute capability");
        let arch = format!("sm_{major}{minor}");
        let t = Instant::now();
        let sm3 = chainsig_gpu::compile_cached(&kernels::sm3_source(), &arch).expect("SM3 module");
        for r in chainsig_gpu::parse_resources(&sm3.log) {
            println!(
                "{:44} cached={} {:3} regs {:4} B stack spills {}+{}",
                r.kernel, sm3.from_cache, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
            );
        }
        kernels.par_iter().for_each(|k| {
            match kernels::compile_config(&chainsig_core::curve::SM2, k, &arch) {
                Ok(c) => println!("{:44} cached={}", k.name(), c.from_cache),
                Err(e) => println!(
                    "{}: not compiled: {}",
                    k.name(),
                    e.lines().next().unwrap_or("")
                ),
            }
        });
        println!("kernels ready in {:.1} s", t.elapsed().as_secs_f64());
    }
    let mut report = Vec::new();
    let mut all_ok = true;
    // Host hashing of the same records, for the comparison (every core, Z_A from the cache).
    let host_batch = |n: usize| -> (Batch, f64) {
        let t = Instant::now();
        let items: Vec<PreparedItem> = records[..n]
            .par_iter()
            .map(|r| {
                let za = preparer.z_a(&r.id, &r.px, &r.py);
                PreparedItem {
                    e: chainsig_core::hash::sm3_concat(&[&za, &r.msg]),
                    r: r.r,
                    s: r.s,
                    px: r.px,
                    py: r.py,
                }
            })
            .collect();
        let mut b = Batch::with_capacity(Algorithm::Sm2, false, n);
        for it in &items {
            b.push(it);
        }
        (b, t.elapsed().as_secs_f64() * 1e3)
    };
    let (full_host, host_ms) = host_batch(count);
    println!(
        "host SM3 of all {count} records on {} threads: {host_ms:.1} ms ({:.3e} records/s)",
        rayon::current_num_threads(),
        count as f64 / host_ms * 1e3
    );
    for k in kernels {
        let cfg = CudaConfig {
            kernel: k,
            streams: 8,
            block_size: 128,
            ..CudaConfig::default()
        }
        .exact();
        let backend = match CudaBackend::new(cfg) {
            Ok(b) => b,
            Err(e) => {
                println!("{:40} NOT OPENED: {e}", k.name());
                all_ok = false;
                continue;
            }
        };
        let map = chainsig_core::backend::Backend::verify_messages(&backend, &mbatch)
            .expect("verify messages");
        let mism = (0..count)
            .filter(|&i| map.get(i) != expected.get(i))
            .count();
        let map2 = chainsig_core::backend::Backend::verify_batch(&backend, &full_host)
            .expect("verify prehashed");
        let mism2 = (0..count)
            .filter(|&i| map2.get(i) != expected.get(i))
            .count();
        all_ok &= mism == 0 && mism2 == 0;
        println!(
            "{:40} GPU-hashed mismatches {mism} / {count}; host-hashed mismatches {mism2} / {count}",
            k.name()
        );
        for n in [4096usize, 65536, 172032, count] {
            if n > count {
                continue;
            }
            let sub = testdata::message_batch(&records[..n], |id, x, y| preparer.z_a(id, x, y));
            let (pre, _) = host_batch(n);
            let mut gpu_ms = Vec::new();
            let mut pre_ms = Vec::new();
            let mut host_total_ms = Vec::new();
            for rep in 0..REPS + 1 {
                let (m1, t1) = backend
                    .verify_messages_timed(&sub)
                    .expect("verify messages");
                let (hb, th) = host_batch(n);
                let (m2, t2) = backend.verify_timed(&hb).expect("verify");
                let (m3, t3) = backend.verify_timed(&pre).expect("verify");
                let ok = (0..n).all(|i| {
                    m1.get(i) == expected.get(i)
                        && m2.get(i) == expected.get(i)
                        && m3.get(i) == expected.get(i)
                });
                all_ok &= ok;
                if !ok {
                    println!("  MISMATCH in a timed run at n={n}");
                }
                if rep > 0 {
                    gpu_ms.push(t1);
                    host_total_ms.push(th + t2);
                    pre_ms.push(t3);
                }
            }
            let (g, h, p) = (
                median(&mut gpu_ms),
                median(&mut host_total_ms),
                median(&mut pre_ms),
            );
            println!(
                "  n={n:7}  SM3 on GPU {g:8.3} ms {:12.0}/s | SM3 on host + verify {h:8.3} ms {:12.0}/s | prehashed {p:8.3} ms {:12.0}/s",
                n as f64 / g * 1e3,
                n as f64 / h * 1e3,
                n as f64 / p * 1e3
            );
            report.push(serde_json::json!({
                "kernel": k.name(), "compress": k.compress, "max_registers": k.max_registers,
                "batch": n, "reps": REPS, "message_bytes": mbatch.message_bytes(0, n),
                "gpu_sm3_e2e_ms": g, "gpu_sm3_per_s": n as f64 / g * 1e3,
                "host_sm3_plus_verify_ms": h, "host_sm3_plus_verify_per_s": n as f64 / h * 1e3,
                "prehashed_e2e_ms": p, "prehashed_per_s": n as f64 / p * 1e3,
            }));
        }
        report.push(serde_json::json!({
            "kernel": k.name(), "records": count, "valid": valid,
            "gpu_hashed_mismatches": mism, "host_hashed_mismatches": mism2,
            "resources": backend.resources().first().cloned(),
        }));
    }
    std::fs::write(
        out.join("messages.json"),
        serde_json::to_string_pretty(
            &serde_json::json!({"seed": seed, "records": count, "rows": report}),
        )
        .unwrap(),
    )
    .unwrap();
    if !all_ok {
        eprintln!("VERDICTS DIFFER FROM THE CPU REFERENCE");
        std::process::exit(1);
    }
    println!("all verdicts equal the CPU reference, GPU-hashed and host-hashed, in every run");
}
