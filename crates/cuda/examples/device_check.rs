//! The GPU machine's run: fresh random SM2 records (about 10% corrupted, plus edge cases), verdicts
//! of every kernel configuration compared with the CPU reference (RustCrypto `sm2`), the async
//! submit/confirm path checked, then the benchmark sweep. Writes CSV/JSON into $OUT (or ./out).
//!
//! Usage: device_check [--count N] [--quick] [--regcap] [--regcap-full-keys] [--compact] [--pairs] [--messages] [--ecdsa]  (--regcap: the register-cap
//! sweep in place of the standard one, --regcap-full-keys the same for full keys, --compact the
//! default kernel against its compact form across batch sizes, --pairs one thread per signature
//! against a lane pair (two per signature) across batch sizes; every run is still checked against
//! the reference.
//! --messages: only the records that carry messages, hashed by SM3 on the GPU, checked and timed
//! against hashing on the host; --signers N: records of N known signers, verified with their
//! fixed-base tables, checked and timed against the same records verified with their keys;
//! --ecdsa: P-256 and secp256k1 ECDSA records through the ECDSA kernels, checked against
//! RustCrypto `p256` and `k256` under both s rules and timed against batch size beside the CPU
//! backend, and Ethereum's sender recovery checked and timed against the CPU's libsecp256k1)

use chainsig_core::algorithm::Algorithm;
use chainsig_core::batch::{Batch, PreparedItem};
use chainsig_core::bitmap::Bitmap;
use chainsig_cuda::backend::{CudaBackend, CudaConfig};
use chainsig_cuda::kernel::{self, KernelConfig};
use chainsig_cuda::sweep::{self, SweepRow};
use chainsig_cuda::{host, HostWords};
use chainsig_testkit::sets as testdata;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut count = 1usize << 20;
    let mut quick = false;
    let mut regcap = false;
    let mut messages = false;
    let mut regcap_full = false;
    let mut compact = false;
    let mut pairs = false;
    let mut ecdsa = false;
    let mut signers = 0usize;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--count" => {
                count = args
                    .get(i + 1)
                    .and_then(|v| v.parse().ok())
                    .expect("--count N");
                i += 1;
            }
            "--quick" => quick = true,
            "--regcap" => regcap = true,
            "--messages" => messages = true,
            "--regcap-full-keys" => regcap_full = true,
            "--compact" => compact = true,
            "--pairs" => pairs = true,
            "--ecdsa" => ecdsa = true,
            "--signers" => {
                signers = args
                    .get(i + 1)
                    .and_then(|v| v.parse().ok())
                    .expect("--signers N");
                i += 1;
            }
            other => panic!("unknown argument {other}"),
        }
        i += 1;
    }
    let out = std::path::PathBuf::from(std::env::var("OUT").unwrap_or_else(|_| "out".into()));
    std::fs::create_dir_all(&out).expect("create output folder");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;

    if messages {
        return messages_check(count, seed, &out);
    }
    if ecdsa {
        for alg in [Algorithm::P256, Algorithm::Secp256k1] {
            ecdsa_check(alg, count, seed, &out);
        }
        return;
    }
    if signers > 0 {
        return signers_check(count, signers, seed, &out);
    }
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
    {
        use rayon::prelude::*;
        let ctx = cudarc::driver::CudaContext::new(0).expect("open device 0");
        let (major, minor) = ctx.compute_capability().expect("compute capability");
        let arch = format!("sm_{major}{minor}");
        let mut kernels = KernelConfig::all();
        for p in &plan_all {
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
                    kernel::compile_config(&chainsig_core::curve::SM2, k, &arch),
                )
            })
            .collect();
        for (name, c) in &compiled {
            match c {
                Ok(c) => {
                    for r in kernel::parse_resources(&c.log) {
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

    // 1. Every configuration, whole set, against the reference.
    let mut correctness = Vec::new();
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
        let map = chainsig_core::backend::Backend::verify_batch(&backend, &batch).expect("verify");
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
    // 2. Async submit/confirm, several batches in flight, first come first served.
    let backend = CudaBackend::new(CudaConfig::default()).expect("default backend");
    let sizes = [4096usize, 172032, 65536, 1000];
    let batches: Vec<Arc<Batch>> = sizes
        .iter()
        .map(|&n| Arc::new(sweep::prefix(&batch, n.min(count))))
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

    // 3. Multiplications per verification (counted by the host build of the same kernels).
    let table = host::build_gtable().expect("table");
    let mut mults = Vec::new();
    for k in KernelConfig::all().into_iter().filter(|k| !k.row_major) {
        host::mul_count_reset();
        let mut n = 0u64;
        for (r, _) in records.iter().zip(&verdicts).filter(|(_, v)| **v).take(64) {
            host::verify(k.mode, k.inversion, k.compress, &r.host_words(), &table);
            n += 1;
        }
        mults.push((k, host::mul_count() as f64 / n as f64));
    }

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

    // 5. Summary.
    println!("\n== summary ==");
    for (k, m) in &mults {
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Records that carry messages (0 to 300 bytes, block-boundary lengths overrepresented, 4096
/// signers, a tenth corrupted): verdicts of GPU hashing + verification against RustCrypto `sm2`
/// for several kernels, then end-to-end time with SM3 on the GPU against SM3 on every host core
/// (Z_A cached per signer in both), and full against compressed keys on the prehashed records.
fn messages_check(count: usize, seed: u64, out: &std::path::Path) {
    use chainsig_cuda::kernel::Product;
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
        product: Product::EvenOdd,
        compact: false,
        pair: false,
        split: false,
        quad: false,
        rolled: false,
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
        let ctx = cudarc::driver::CudaContext::new(0).expect("open device 0");
        let (major, minor) = ctx.compute_capability().expect("compute capability");
        let arch = format!("sm_{major}{minor}");
        let t = Instant::now();
        let sm3 = kernel::compile_cached(&kernel::sm3_source(), &arch).expect("SM3 module");
        for r in kernel::parse_resources(&sm3.log) {
            println!(
                "{:44} cached={} {:3} regs {:4} B stack spills {}+{}",
                r.kernel, sm3.from_cache, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
            );
        }
        kernels.par_iter().for_each(|k| {
            match kernel::compile_config(&chainsig_core::curve::SM2, k, &arch) {
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
            let (g, h, p) = (median(gpu_ms), median(host_total_ms), median(pre_ms));
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

/// Records of `signers` known signers (a tenth corrupted, edge cases first): their tables built on
/// the host and loaded, verdicts of the known-signer kernel against RustCrypto `sm2` on every
/// batch of every run, then end-to-end time across batch sizes and launch shapes, beside the
/// default path that verifies the same records with their keys.
fn signers_check(count: usize, signers: usize, seed: u64, out: &std::path::Path) {
    use chainsig_cuda::signers::{SignerBatch, SignerIndex, SignerTables};
    const REPS: usize = 9;
    let t = Instant::now();
    let (records, verdicts) = testdata::generate(count, signers, 100, seed);
    let valid = verdicts.iter().filter(|v| **v).count();
    println!(
        "generated {count} records of {signers} signers (seed {seed}): {valid} valid, {} invalid by the reference, in {:.1} s",
        count - valid,
        t.elapsed().as_secs_f64()
    );
    let expected = Bitmap::from_bools(verdicts.iter().copied());
    let mut index = SignerIndex::new();
    for r in &records {
        index.insert((r.px, r.py));
    }
    let t = Instant::now();
    let tables = SignerTables::build(index.keys()).expect("every generated key is on the curve");
    let build_s = t.elapsed().as_secs_f64();
    println!(
        "tables of {} signers built on {} host threads in {build_s:.2} s ({:.0} MB)",
        tables.len(),
        rayon::current_num_threads(),
        tables.words().len() as f64 * 4.0 / 1e6
    );
    let sizes: Vec<usize> = [4096usize, 16384, 65536, 172032, 262144, 524288, 1 << 20]
        .into_iter()
        .filter(|&n| n <= count)
        .chain((count < 4096).then_some(count))
        .collect();
    let t = Instant::now();
    let inputs: Vec<(usize, SignerBatch, Batch)> = sizes
        .iter()
        .map(|&n| {
            let b = testdata::batch(&records[..n]);
            let sb = SignerBatch::from_batch(&b, &index).expect("every key is indexed");
            (n, sb, b)
        })
        .collect();
    println!(
        "signer batches built in {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let mismatches = |map: &Bitmap, n: usize| {
        (0..n).filter(|&i| map.get(i) != expected.get(i)).count() + usize::from(map.len() != n)
    };
    let mut rows = Vec::new();
    let mut all_ok = true;
    let shapes = [
        (8usize, 128u32),
        (4, 128),
        (16, 128),
        (8, 64),
        (8, 256),
        (2, 128),
        (1, 128),
    ];
    for (si, &(streams, block)) in shapes.iter().enumerate() {
        let cfg = CudaConfig {
            streams,
            block_size: block,
            ..CudaConfig::default()
        };
        let backend = CudaBackend::new(cfg).expect("open the backend");
        if si == 0 {
            for r in backend.resources() {
                println!(
                    "{:44} {:3} regs {:4} B stack spills {}+{}",
                    r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
                );
            }
        }
        let t = Instant::now();
        backend.load_signers(&tables).expect("load the signers");
        let load_ms = t.elapsed().as_secs_f64() * 1e3;
        for (n, sb, b) in &inputs {
            let n = *n;
            let mut signed = Vec::new();
            let mut keyed = Vec::new();
            let mut bad = 0usize;
            for rep in 0..=REPS {
                let (map, ms) = backend.verify_signed_timed(sb).expect("verify signed");
                bad += mismatches(&map, n);
                if rep > 0 {
                    signed.push(ms);
                }
                // The same records through the default path, only for the default shape.
                if si == 0 {
                    let (map, ms) = backend.verify_timed(b).expect("verify with keys");
                    bad += mismatches(&map, n);
                    if rep > 0 {
                        keyed.push(ms);
                    }
                }
            }
            all_ok &= bad == 0;
            let sm = median(signed);
            let km = (!keyed.is_empty()).then(|| median(keyed));
            println!(
                "K={streams:2} B={block:4} batch {n:8}: known signers {sm:8.3} ms {:.3e}/s{}  mismatches {bad}",
                n as f64 / sm * 1e3,
                km.map(|k| format!("; with keys {k:8.3} ms {:.3e}/s ({:.2}x)", n as f64 / k * 1e3, k / sm))
                    .unwrap_or_default()
            );
            rows.push(serde_json::json!({
                "streams": streams, "block_size": block, "batch": n, "reps": REPS,
                "signers": tables.len(), "signed_e2e_ms": sm, "signed_per_s": n as f64 / sm * 1e3,
                "keyed_e2e_ms": km, "keyed_per_s": km.map(|k| n as f64 / k * 1e3),
                "mismatches": bad, "load_ms": load_ms,
            }));
        }
    }
    let mut csv = String::from(
        "streams,block_size,batch,signers,signed_e2e_ms,signed_per_s,keyed_e2e_ms,mismatches\n",
    );
    for r in &rows {
        csv.push_str(&format!(
            "{},{},{},{},{:.4},{:.1},{},{}\n",
            r["streams"],
            r["block_size"],
            r["batch"],
            r["signers"],
            r["signed_e2e_ms"].as_f64().unwrap(),
            r["signed_per_s"].as_f64().unwrap(),
            r["keyed_e2e_ms"]
                .as_f64()
                .map(|v| format!("{v:.4}"))
                .unwrap_or_default(),
            r["mismatches"]
        ));
    }
    std::fs::write(out.join("signers.csv"), csv).unwrap();
    std::fs::write(
        out.join("signers.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "seed": seed, "records": count, "signers": tables.len(), "valid": valid,
            "table_build_s": build_s, "host_threads": rayon::current_num_threads(), "rows": rows,
        }))
        .unwrap(),
    )
    .unwrap();
    if !all_ok {
        eprintln!("VERDICTS DIFFER FROM THE CPU REFERENCE");
        std::process::exit(1);
    }
    println!("all verdicts equal the CPU reference in every run, known signers and with keys");
}

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
            (0..3)
                .map(|_| {
                    let t = Instant::now();
                    cpu.recover_batch(part).expect("recover on the CPU");
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect(),
        );
        let ms = median(times);
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
fn ecdsa_check(alg: Algorithm, count: usize, seed: u64, out: &std::path::Path) {
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
            (0..3)
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
                .collect(),
        );
        let (e, k) = (median(e2e), median(kernel));
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
