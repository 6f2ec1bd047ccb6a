//! Device check and benchmark of the CTRU-Prime batch products, for the H200.
//!
//! For n = 653, 761, 1277, both products (h·r mod q, c·f mod q2) and every method (CUDA-core
//! schoolbook, CUDA-core NTT, Tensor Cores):
//! 1. correctness: a fresh random batch in the KEM's ranges plus extreme instances, every instance
//!    against chainsig_ctru's schoolbook product; and at batch 4096 the three GPU methods against each
//!    other, with 64 sampled instances against the schoolbook;
//! 2. timing: batch sizes 1 … 65536, medians of CTRU_REPS (default 20, at least 10) runs after a
//!    warm-up, CUDA events, kernel-only and end-to-end with copies; and the single-core CPU NTT
//!    product (`NttMultiplier::mul_mod_q`/`mul_mod_q2`) for comparison.
//!
//! CTRU_MAX_BATCH (default 65536) drops the larger sizes for a quick run.
//!
//! Writes ctru_gpu_mul.csv, ctru_gpu_mul.json and ctru_gpu_mul_correctness.json under $OUT (default
//! ./ctru-device-check) and prints a table. Exits 1 on any mismatch, 2 when no GPU is usable.
//!
//! Run: `cargo build --release -p chainsig-ctru-cuda --example device_check` then
//! `OUT=/some/dir target/release/examples/device_check`.

use chainsig_ctru::ntt::multiplier;
use chainsig_ctru::poly::{schoolbook_mul_mod_q, schoolbook_mul_mod_q2};
use chainsig_ctru::ParamSet;
use chainsig_ctru_cuda::{small_limit, Error, GpuPolyMul, Method, Product};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::json;
use std::io::Write;
use std::time::Instant;

const SIZES: [usize; 8] = [1, 16, 64, 256, 1024, 4096, 16384, 65536];

fn reference(set: ParamSet, product: Product, shared: &[i32], b: &[i32]) -> Vec<i32> {
    let p = set.params();
    match product {
        Product::ModQ => {
            let a: Vec<i32> = shared.iter().map(|&v| v.rem_euclid(p.q)).collect();
            schoolbook_mul_mod_q(p, &a, b)
        }
        Product::ModQ2 => {
            let c: Vec<i32> = b.iter().map(|&v| v.rem_euclid(p.q2)).collect();
            schoolbook_mul_mod_q2(p, shared, &c)
        }
    }
}

/// Shared operand and `count` batch operands in the KEM's ranges (small ones up to the limit).
fn random(
    set: ParamSet,
    product: Product,
    rng: &mut ChaCha20Rng,
    count: usize,
) -> (Vec<i32>, Vec<Vec<i32>>) {
    let p = set.params();
    let n = p.n;
    let limit = small_limit(set, product);
    let (f_lo, f_hi) = p.unpacked_f_range();
    match product {
        Product::ModQ => (
            (0..n).map(|_| rng.gen_range(0..p.q)).collect(),
            (0..count)
                .map(|i| {
                    let e = if i % 2 == 0 { p.eta } else { limit };
                    (0..n).map(|_| rng.gen_range(-e..=e)).collect()
                })
                .collect(),
        ),
        Product::ModQ2 => (
            (0..n).map(|_| rng.gen_range(f_lo..=f_hi)).collect(),
            (0..count)
                .map(|_| (0..n).map(|_| rng.gen_range(0..p.q2)).collect())
                .collect(),
        ),
    }
}

/// Extreme cases: (shared, batch) pairs with every coefficient at an end of its range.
fn extremes(set: ParamSet, product: Product) -> Vec<(Vec<i32>, Vec<Vec<i32>>)> {
    let p = set.params();
    let n = p.n;
    let limit = small_limit(set, product);
    let alt =
        |a: i32, b: i32| -> Vec<i32> { (0..n).map(|i| if i % 2 == 0 { a } else { b }).collect() };
    let small = vec![vec![limit; n], vec![-limit; n], alt(limit, -limit)];
    let large = match product {
        Product::ModQ => vec![
            vec![(p.q - 1) / 2; n],
            vec![-(p.q - 1) / 2; n],
            vec![p.q - 1; n],
            alt((p.q - 1) / 2, -(p.q - 1) / 2),
        ],
        Product::ModQ2 => vec![
            vec![p.q2 / 2 - 1; n],
            vec![-p.q2 / 2; n],
            vec![p.q2 - 1; n],
            alt(p.q2 / 2 - 1, -p.q2 / 2),
        ],
    };
    match product {
        Product::ModQ => large.into_iter().map(|h| (h, small.clone())).collect(),
        Product::ModQ2 => small.into_iter().map(|f| (f, large.clone())).collect(),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Single-core CPU NTT product time in microseconds (median of `reps` timings of 20 products each).
fn cpu_ntt_us(set: ParamSet, product: Product, shared: &[i32], b: &[i32], reps: usize) -> f64 {
    let m = multiplier(set);
    let (large, small): (Vec<i32>, Vec<i8>) = match product {
        Product::ModQ => (shared.to_vec(), b.iter().map(|&v| v as i8).collect()),
        Product::ModQ2 => (b.to_vec(), shared.iter().map(|&v| v as i8).collect()),
    };
    let run = || match product {
        Product::ModQ => m.mul_mod_q(&large, &small),
        Product::ModQ2 => m.mul_mod_q2(&large, &small),
    };
    for _ in 0..20 {
        std::hint::black_box(run().expect("CPU NTT"));
    }
    let mut t = Vec::new();
    for _ in 0..reps {
        let s = Instant::now();
        for _ in 0..20 {
            std::hint::black_box(run().expect("CPU NTT"));
        }
        t.push(s.elapsed().as_secs_f64() * 1e6 / 20.0);
    }
    median(&mut t)
}

fn main() {
    let out_dir = std::path::PathBuf::from(
        std::env::var("OUT").unwrap_or_else(|_| "ctru-device-check".into()),
    );
    let reps: usize = std::env::var("CTRU_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
        .max(10);
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        eprintln!("cannot create {}: {e}", out_dir.display());
        std::process::exit(2);
    }
    let max_batch: usize = std::env::var("CTRU_MAX_BATCH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(65536);
    let sizes: Vec<usize> = SIZES.iter().copied().filter(|&s| s <= max_batch).collect();
    if sizes.is_empty() {
        eprintln!("CTRU_MAX_BATCH={max_batch} leaves no batch size to time");
        std::process::exit(2);
    }
    let largest = *sizes.last().unwrap_or(&1);
    let mut rng = ChaCha20Rng::from_entropy();
    let mut failures: Vec<String> = Vec::new();
    let mut checks = Vec::new();
    let mut rows = Vec::new();
    let mut resources = Vec::new();

    for set in ParamSet::ALL {
        let n = set.params().n;
        let mut gpus = Vec::new();
        for method in Method::ALL {
            match GpuPolyMul::new(set, method) {
                Ok(g) => gpus.push(g),
                Err(Error::Unavailable(why)) => {
                    eprintln!("no usable GPU: {why}");
                    std::process::exit(2);
                }
                Err(e) => {
                    eprintln!("{set} {}: {e}", method.name());
                    std::process::exit(2);
                }
            }
        }
        if set == ParamSet::Ctru653 {
            println!("device arch {}", gpus[0].arch());
            for r in gpus[0].resources() {
                println!(
                    "  {:18} {:3} registers, {} B stack, spills {}/{} B",
                    r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
                );
                resources.push(json!({"kernel": r.kernel, "registers": r.registers,
                    "stack_bytes": r.stack_bytes, "spill_stores": r.spill_stores,
                    "spill_loads": r.spill_loads}));
            }
        }
        for product in Product::ALL {
            // 1. Correctness: random batch of 257 (not a multiple of 32) and the extreme cases.
            let mut cases = vec![("random".to_string(), random(set, product, &mut rng, 257))];
            for (k, c) in extremes(set, product).into_iter().enumerate() {
                cases.push((format!("extreme {k}"), c));
            }
            for (what, (shared, batch)) in &cases {
                let want: Vec<Vec<i32>> = batch
                    .iter()
                    .map(|b| reference(set, product, shared, b))
                    .collect();
                for gpu in &gpus {
                    let verdict = match gpu.mul_batch(product, shared, batch) {
                        Ok(got) => {
                            let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
                            if bad > 0 {
                                Err(format!("{bad} of {} instances differ", batch.len()))
                            } else {
                                Ok(())
                            }
                        }
                        Err(e) => Err(e.to_string()),
                    };
                    let name = format!("{set} {} {} {what}", gpu.method().name(), product.name());
                    if let Err(e) = &verdict {
                        failures.push(format!("{name}: {e}"));
                    }
                    checks.push(json!({"n": n, "product": product.name(),
                        "method": gpu.method().name(), "case": what, "instances": batch.len(),
                        "ok": verdict.is_ok(), "error": verdict.err()}));
                }
            }
            // 2. Timing on one large random batch, its prefixes for the smaller sizes.
            let (shared, batch) = random(set, product, &mut rng, largest.max(4096));
            let cpu_us = cpu_ntt_us(set, product, &shared, &batch[0], reps);
            // Cross-check at 4096: the methods agree, and 64 sampled instances equal the schoolbook.
            let slice = &batch[..4096];
            let mut results = Vec::new();
            for gpu in &gpus {
                match gpu.mul_batch(product, &shared, slice) {
                    Ok(r) => results.push(r),
                    Err(e) => failures.push(format!(
                        "{set} {} {} batch 4096: {e}",
                        gpu.method().name(),
                        product.name()
                    )),
                }
            }
            if results.len() == gpus.len() {
                for (gpu, r) in gpus.iter().zip(&results).skip(1) {
                    if r != &results[0] {
                        failures.push(format!(
                            "{set} {} {} batch 4096: differs from {}",
                            gpu.method().name(),
                            product.name(),
                            gpus[0].method().name()
                        ));
                    }
                }
                for _ in 0..64 {
                    let i = rng.gen_range(0..slice.len());
                    if results[0][i] != reference(set, product, &shared, &slice[i]) {
                        failures.push(format!(
                            "{set} {} batch 4096: instance {i} differs from the schoolbook",
                            product.name()
                        ));
                    }
                }
            }
            for gpu in &gpus {
                for &size in &sizes {
                    let t = match gpu.time_batch(product, &shared, &batch[..size], reps) {
                        Ok(t) => t,
                        Err(e) => {
                            failures.push(format!(
                                "{set} {} {} timing {size}: {e}",
                                gpu.method().name(),
                                product.name()
                            ));
                            continue;
                        }
                    };
                    let kps = size as f64 / (t.kernel_ms * 1e-3);
                    let eps = size as f64 / (t.end_to_end_ms * 1e-3);
                    let cpu_ps = 1e6 / cpu_us;
                    rows.push(json!({"n": n, "product": product.name(),
                        "method": gpu.method().name(), "batch": size, "runs": t.runs,
                        "kernel_ms": t.kernel_ms, "end_to_end_ms": t.end_to_end_ms,
                        "setup_ms": t.setup_ms, "kernel_products_per_s": kps,
                        "end_to_end_products_per_s": eps, "cpu_ntt_us": cpu_us,
                        "speedup_kernel": kps / cpu_ps, "speedup_end_to_end": eps / cpu_ps}));
                }
            }
        }
    }

    // Table, CSV, JSON.
    let cols = [
        "n",
        "product",
        "method",
        "batch",
        "runs",
        "kernel_ms",
        "end_to_end_ms",
        "setup_ms",
        "kernel_products_per_s",
        "end_to_end_products_per_s",
        "cpu_ntt_us",
        "speedup_kernel",
        "speedup_end_to_end",
    ];
    let cell = |r: &serde_json::Value, c: &str| -> String {
        match &r[c] {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(x) if x.is_f64() => format!("{:.6}", x.as_f64().unwrap()),
            v => v.to_string(),
        }
    };
    let mut csv = cols.join(",") + "\n";
    for r in &rows {
        csv += &cols
            .iter()
            .map(|c| cell(r, c))
            .collect::<Vec<_>>()
            .join(",");
        csv.push('\n');
    }
    println!(
        "\n{:>5} {:7} {:16} {:>6} {:>11} {:>11} {:>13} {:>10} {:>10}",
        "n", "product", "method", "batch", "kernel ms", "e2e ms", "kernel /s", "CPU µs", "speedup"
    );
    for r in &rows {
        println!(
            "{:>5} {:7} {:16} {:>6} {:>11.4} {:>11.4} {:>13.0} {:>10.2} {:>10.1}",
            r["n"],
            r["product"].as_str().unwrap_or(""),
            r["method"].as_str().unwrap_or(""),
            r["batch"],
            r["kernel_ms"].as_f64().unwrap_or(0.0),
            r["end_to_end_ms"].as_f64().unwrap_or(0.0),
            r["kernel_products_per_s"].as_f64().unwrap_or(0.0),
            r["cpu_ntt_us"].as_f64().unwrap_or(0.0),
            r["speedup_kernel"].as_f64().unwrap_or(0.0)
        );
    }
    let write = |name: &str, body: String| {
        let path = out_dir.join(name);
        match std::fs::File::create(&path).and_then(|mut f| f.write_all(body.as_bytes())) {
            Ok(()) => println!("wrote {}", path.display()),
            Err(e) => eprintln!("cannot write {}: {e}", path.display()),
        }
    };
    write("ctru_gpu_mul.csv", csv);
    write(
        "ctru_gpu_mul.json",
        serde_json::to_string_pretty(&json!({"reps": reps, "resources": resources, "rows": rows}))
            .unwrap_or_default(),
    );
    write(
        "ctru_gpu_mul_correctness.json",
        serde_json::to_string_pretty(&json!({"failures": failures, "checks": checks}))
            .unwrap_or_default(),
    );
    if failures.is_empty() {
        println!("\nall {} correctness checks passed", checks.len());
    } else {
        eprintln!("\n{} FAILURES:", failures.len());
        for f in &failures {
            eprintln!("  {f}");
        }
        std::process::exit(1);
    }
}
