//! The standard run: every SM2 kernel configuration's verdicts on fresh records against the CPU
//! reference (RustCrypto `sm2`), the field products on many operands, submit/confirm, the
//! multiplications per verification, then the benchmark sweep and its summary.

use chainsig_bench::sweep::{self, SweepPoint, SweepRow};
use chainsig_core::batch::Batch;
use chainsig_core::bitmap::Bitmap;
use chainsig_core::PreparedItem as Record;
use chainsig_cuda::kernels::{self, KernelConfig};
use chainsig_cuda::{host, CudaBackend, CudaConfig, HostWords};
use chainsig_testkit::sets as testdata;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Which sweep the run ends with (the flags of `device_check`).
pub struct Sweep {
    pub pairs: bool,
    pub compact: bool,
    pub regcap_full: bool,
    pub regcap: bool,
    /// Only the batches of 4096 and 172032.
    pub quick: bool,
}

/// The standard run over `count` fresh records; exits 1 when a verdict differs.
pub fn run(count: usize, which: Sweep, seed: u64, out: &Path) {
    let t = Instant::now();
    let (records, verdicts) = testdata::generate(count, 4096, 100, seed);
    let valid = verdicts.iter().filter(|v| **v).count();
    println!(
        "generated {count} records (seed {seed}): {valid} valid, {} invalid by the reference, in {:.1} s",
        count - valid,
        t.elapsed().as_secs_f64()
    );
    let batch = testdata::batch(&records);
    let expected = Bitmap::from_bools(verdicts.iter().copied());

    // 0. Compile (or load from the cache) every kernel the run needs, in parallel.
    let Sweep {
        pairs,
        compact,
        regcap_full,
        regcap,
        quick,
    } = which;
    let plan_all = if pairs {
        sweep::pairs_plan(count)
    } else if compact {
        sweep::compact_plan(count)
    } else if regcap_full {
        sweep::regcap_plan_full_keys(count)
    } else if regcap {
        sweep::regcap_plan(count)
    } else {
        sweep::standard_plan(count)
    };
    compile_all(&plan_all);

    // 1. and 2.: every configuration and submit/confirm against the reference.
    let mut correctness = Vec::new();
    let mut all_ok = check_every_kernel(count, valid, seed, &batch, &expected, &mut correctness);
    all_ok &= check_submit_confirm(count, &batch, &expected, &mut correctness);
    std::fs::write(
        out.join("correctness.json"),
        serde_json::to_string_pretty(&correctness).unwrap(),
    )
    .unwrap();
    if !all_ok {
        eprintln!("VERDICTS DIFFER FROM THE CPU REFERENCE");
        std::process::exit(1);
    }
    println!("all {count} verdicts equal the CPU reference in every configuration");

    let mults = mults_per_verification(&records, &verdicts);
    // 4. The sweep.
    let mut plan = plan_all;
    if quick {
        plan.retain(|p| p.batch == 172032 || p.batch == 4096);
    }
    let t = Instant::now();
    let rows = sweep::run_sweep(&plan, &batch, &expected, |r: &SweepRow| {
        println!(
            "{:22} {:8?} {:6?} ck={} rows={} K={:2} B={:4} regs={:3} spill={} n={:8}  e2e {:9.3} ms {:12.0}/s  kernel {}  {}",
            r.experiment, r.mode, r.inversion, r.compress as u8, r.row_major as u8, r.streams, r.block_size, r.registers, r.spill_bytes, r.batch,
            r.e2e_ms, r.e2e_per_s,
            r.kernel_per_s.map(|v| format!("{v:12.0}/s")).unwrap_or_default(), r.kernel
        );
    })
    .expect("sweep");
    println!(
        "sweep of {} points in {:.1} s",
        rows.len(),
        t.elapsed().as_secs_f64()
    );
    std::fs::write(out.join("sweep.csv"), sweep::to_csv(&rows)).unwrap();
    let mults_json: Vec<_> = mults
        .iter()
        .map(|(k, m)| serde_json::json!({"kernel": k.name(), "field_mults_per_verification": m}))
        .collect();
    std::fs::write(
        out.join("sweep.json"),
        serde_json::to_string_pretty(
            &serde_json::json!({"seed": seed, "records": count, "rows": rows, "mults": mults_json}),
        )
        .unwrap(),
    )
    .unwrap();

    summary(&mults, &rows);
}

/// Compiles (or loads from the cache) every kernel of `plan` and of [`KernelConfig::all`] for
/// device 0's architecture, in parallel, and prints each one's resources.
fn compile_all(plan: &[SweepPoint]) {
    use rayon::prelude::*;
    let arch = match chainsig_gpu::open(0) {
        Ok(device) => device.arch,
        Err(e) => panic!("open device 0: {e}"),
    };
    let mut kernels = KernelConfig::all();
    for p in plan {
        if !kernels.contains(&p.config.kernel) {
            kernels.push(p.config.kernel);
        }
    }
    let t = Instant::now();
    let compiled: Vec<_> = kernels
        .par_iter()
        .map(|k| {
            (
                k.name(),
                kernels::compile_config(&chainsig_core::curve::SM2, k, &arch),
            )
        })
        .collect();
    for (name, c) in &compiled {
        match c {
            Ok(c) => {
                for r in chainsig_gpu::parse_resources(&c.log) {
                    println!(
                        "{name:44} cached={} {:3} regs {:4} B stack spills {}+{}",
                        c.from_cache, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
                    );
                }
            }
            Err(e) => println!("{name}: not compiled: {}", e.lines().next().unwrap_or("")),
        }
    }
    println!(
        "{} kernels ready for {arch} in {:.1} s",
        kernels.len(),
        t.elapsed().as_secs_f64()
    );
}

/// Step 1: every configuration, whole set, against the reference; true when all agree.
fn check_every_kernel(
    count: usize,
    valid: usize,
    seed: u64,
    batch: &Batch,
    expected: &Bitmap,
    correctness: &mut Vec<serde_json::Value>,
) -> bool {
    let mut all_ok = true;
    for k in KernelConfig::all() {
        let cfg = CudaConfig {
            streams: 8,
            ..CudaConfig::with_kernel(k)
        }
        .exact();
        let t = Instant::now();
        // Opening runs the field self-test; a kernel that fails it is reported, not fatal here.
        let backend = match CudaBackend::new(cfg) {
            Ok(b) => b,
            Err(e) => {
                println!("{:40} NOT OPENED: {e}", k.name());
                all_ok = false;
                correctness
                    .push(serde_json::json!({"kernel": k.name(), "open_error": e.to_string()}));
                continue;
            }
        };
        let open_s = t.elapsed().as_secs_f64();
        // The field products on many more operands than the open-time self-test.
        let (fa, fb) = host::field_check_inputs(host::HostCurve::Sm2, 1 << 18, seed ^ 0xf1e1d);
        let got = backend.field_check(&fa, &fb).expect("field check");
        let diffs = host::field_check_compare(host::HostCurve::Sm2, &fa, &fb, &got);
        all_ok &= diffs.is_empty();
        for d in &diffs {
            println!("  field check: {d}");
        }
        let t = Instant::now();
        let map = chainsig_core::backend::Backend::verify_batch(&backend, batch).expect("verify");
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let mismatches = (0..count)
            .filter(|&i| map.get(i) != expected.get(i))
            .count();
        all_ok &= mismatches == 0;
        let res = backend.resources().first().cloned();
        println!(
            "{:40} mismatches {mismatches:7} / {count}  ({ms:8.2} ms, open {open_s:.2} s, cached {}, regs {:?})",
            k.name(),
            backend.loaded_from_cache(),
            res.as_ref().map(|r| r.registers)
        );
        correctness.push(serde_json::json!({
            "kernel": k.name(), "records": count, "valid": valid, "mismatches": mismatches,
            "field_check_pairs": fa.len(), "field_check_diffs": diffs.len(),
            "ms": ms, "resources": res,
        }));
    }
    all_ok
}

/// Step 2: async submit/confirm, several batches in flight, first come first served; true
/// when all agree.
fn check_submit_confirm(
    count: usize,
    batch: &Batch,
    expected: &Bitmap,
    correctness: &mut Vec<serde_json::Value>,
) -> bool {
    let mut all_ok = true;
    let backend = CudaBackend::new(CudaConfig::default()).expect("default backend");
    let sizes = [4096usize, 172032, 65536, 1000];
    let batches: Vec<Arc<Batch>> = sizes
        .iter()
        .map(|&n| Arc::new(sweep::prefix(batch, n.min(count))))
        .collect();
    let tickets: Vec<_> = batches
        .iter()
        .map(|b| backend.submit(b.clone()).expect("submit"))
        .collect();
    for (ticket, b) in tickets.into_iter().zip(&batches) {
        let map = ticket.confirm().expect("confirm");
        let ok = (0..b.len()).all(|i| map.get(i) == expected.get(i));
        all_ok &= ok;
        println!(
            "submit/confirm batch of {:7}: {}",
            b.len(),
            if ok { "verdicts equal" } else { "MISMATCH" }
        );
        correctness.push(serde_json::json!({"submit_confirm": b.len(), "equal": ok}));
    }
    all_ok
}

/// Step 3: multiplications per verification of each column-major configuration (counted by the
/// host build of the same kernels, over 64 valid records).
fn mults_per_verification(records: &[Record], verdicts: &[bool]) -> Vec<(KernelConfig, f64)> {
    let table = host::build_gtable().expect("table");
    let mut mults = Vec::new();
    for k in KernelConfig::all().into_iter().filter(|k| !k.row_major) {
        host::mul_count_reset();
        let mut n = 0u64;
        for (r, _) in records.iter().zip(verdicts).filter(|(_, v)| **v).take(64) {
            host::verify(k.mode, k.inversion, k.compress, &r.host_words(), &table);
            n += 1;
        }
        mults.push((k, host::mul_count() as f64 / n as f64));
    }

    mults
}

/// Step 5, the summary: multiplications per verification, and per mode the best end-to-end
/// rate, the best kernel-only rate and the lowest latencies.
fn summary(mults: &[(KernelConfig, f64)], rows: &[SweepRow]) {
    println!("\n== summary ==");
    for (k, m) in mults {
        println!(
            "{:40} {m:7.0} field multiplications / verification",
            k.name()
        );
    }
    for mode in [
        chainsig_cuda::Mode::Fast,
        chainsig_cuda::Mode::Paper,
        chainsig_cuda::Mode::Separate,
    ] {
        if let Some(best) = rows
            .iter()
            .filter(|r| r.mode == mode)
            .max_by(|a, b| a.e2e_per_s.total_cmp(&b.e2e_per_s))
        {
            println!(
                "{mode:?}: best end to end {:.3e}/s ({} K={} B={} n={}, {:.3} ms)",
                best.e2e_per_s,
                best.experiment,
                best.streams,
                best.block_size,
                best.batch,
                best.e2e_ms
            );
        }
        if let Some(best) = rows
            .iter()
            .filter(|r| r.mode == mode && r.kernel_per_s.is_some())
            .max_by(|a, b| a.kernel_per_s.unwrap().total_cmp(&b.kernel_per_s.unwrap()))
        {
            let m = mults
                .iter()
                .find(|(k, _)| {
                    k.mode == mode && k.compress == best.compress && k.inversion == best.inversion
                })
                .map(|(_, m)| *m)
                .unwrap_or(0.0);
            println!(
                "{mode:?}: best kernel only {:.3e}/s (B={} n={}); {:.0} mults each = {:.2e} field mults/s",
                best.kernel_per_s.unwrap(), best.block_size, best.batch, m, best.kernel_per_s.unwrap() * m
            );
        }
        for n in [4096usize, 172032] {
            if let Some(best) = rows
                .iter()
                .filter(|r| r.mode == mode && r.batch == n)
                .min_by(|a, b| a.e2e_ms.total_cmp(&b.e2e_ms))
            {
                println!(
                    "{mode:?}: lowest latency at {n}: {:.3} ms (K={}, B={})",
                    best.e2e_ms, best.streams, best.block_size
                );
            }
        }
    }
}
