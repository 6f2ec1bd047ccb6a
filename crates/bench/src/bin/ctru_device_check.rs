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
//! 3. the whole KEM in batch on the GPU (`GpuKem`), per n on a fresh random key pair: GPU encaps
//!    against the CPU encaps on the same seeds, GPU decaps against the CPU decaps on honest and
//!    tampered ciphertexts (which must be rejected), then batch encaps and decaps per second for
//!    batches 1024 … 65536 (medians of CTRU_REPS runs after warm-up, CUDA events, kernel pipeline
//!    alone and with the pinned copies), each timed batch's decapsulated keys checked.
//!
//! CTRU_MAX_BATCH (default 65536) drops the larger sizes for a quick run; `--kem-only` skips the
//! product part (1, 2).
//!
//! The checks and the sweep are `chainsig_bench::ctru` (shared with `chainsig bench --kem ctru`);
//! this program only reads its settings and writes the files.
//!
//! Writes ctru_gpu_mul.csv, ctru_gpu_mul.json, ctru_gpu_mul_correctness.json, ctru_gpu_kem.csv and
//! ctru_gpu_kem.json into the results folder given as the first argument (else $OUT, else
//! ./ctru-device-check) and prints tables. Exits 1 on any mismatch, 2 when no GPU is usable.
//!
//! Run: `cargo build --release -p chainsig-bench --bin ctru_device_check` then
//! `target/release/ctru_device_check RESULTS_DIR [--kem-only]`.

use chainsig_bench::ctru::{
    kem_gpu_csv, kem_gpu_table, kem_sizes, run_gpu, run_gpu_kem, table, to_csv, Plan,
};
use chainsig_ctru::ParamSet;
use chainsig_ctru_cuda::{Error, GpuError};
use clap::Parser;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::json;
use std::io::Write;

/// The CTRU-Prime device check and benchmark (settings CTRU_REPS and CTRU_MAX_BATCH from the
/// environment).
#[derive(Parser)]
struct Args {
    /// Skip the product check and sweep (parts 1 and 2).
    #[arg(long)]
    kem_only: bool,
    /// The results folder (default: $OUT, else ./ctru-device-check).
    results_dir: Option<String>,
}

fn main() {
    let args = Args::parse();
    let kem_only = args.kem_only;
    let out_dir = std::path::PathBuf::from(
        args.results_dir
            .or_else(|| std::env::var("OUT").ok())
            .unwrap_or_else(|| "ctru-device-check".into()),
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
    let mut plan = match Plan::standard(max_batch, reps) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("CTRU_MAX_BATCH={max_batch}: {e}");
            std::process::exit(2);
        }
    };
    // The device check times every method even after a mismatch, to see how far a broken one gets.
    plan.time_after_mismatch = true;
    let mut rng = ChaCha20Rng::from_entropy();
    let write = |name: &str, body: String| {
        let path = out_dir.join(name);
        match std::fs::File::create(&path).and_then(|mut f| f.write_all(body.as_bytes())) {
            Ok(()) => println!("wrote {}", path.display()),
            Err(e) => eprintln!("cannot write {}: {e}", path.display()),
        }
    };
    let mut failed = false;
    if !kem_only {
        failed |= products(&plan, &mut rng, reps, &write);
    }
    eprintln!("the KEM in batch on the GPU");
    let sizes = kem_sizes(max_batch);
    let kem = match run_gpu_kem(&ParamSet::ALL, &sizes, reps, true, &mut rng, |stage| {
        eprintln!("{stage}")
    }) {
        Ok(r) => r,
        Err(Error::Gpu(GpuError::Unavailable(why))) => {
            eprintln!("no usable GPU: {why}");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("GPU KEM: {e}");
            std::process::exit(2);
        }
    };
    for r in &kem.resources {
        println!(
            "  {:18} {:3} registers, {} B stack, spills {}/{} B",
            r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
        );
    }
    println!(
        "\nGPU KEM in batch (medians of {reps} runs)\n{}",
        kem_gpu_table(&kem.rows)
    );
    write("ctru_gpu_kem.csv", kem_gpu_csv(&kem.rows));
    write(
        "ctru_gpu_kem.json",
        serde_json::to_string_pretty(&json!({"reps": reps, "sizes": sizes, "report": kem}))
            .unwrap_or_default(),
    );
    if kem.failures.is_empty() {
        println!("all {} GPU KEM checks passed", kem.checks.len());
    } else {
        eprintln!("\n{} GPU KEM FAILURES:", kem.failures.len());
        for f in &kem.failures {
            eprintln!("  {f}");
        }
        failed = true;
    }
    if failed {
        std::process::exit(1);
    }
}

/// The product check and sweep (parts 1 and 2); true when a check failed.
fn products(plan: &Plan, rng: &mut ChaCha20Rng, reps: usize, write: &dyn Fn(&str, String)) -> bool {
    let report = match run_gpu(plan, rng, |stage| eprintln!("{stage}")) {
        Ok(r) => r,
        Err(Error::Gpu(GpuError::Unavailable(why))) => {
            eprintln!("no usable GPU: {why}");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    println!("device arch {}", report.arch);
    for r in &report.resources {
        println!(
            "  {:18} {:3} registers, {} B stack, spills {}/{} B",
            r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
        );
    }
    println!("\n{}", table(&report.rows));
    write("ctru_gpu_mul.csv", to_csv(&report.rows));
    write(
        "ctru_gpu_mul.json",
        serde_json::to_string_pretty(
            &json!({"reps": reps, "resources": report.resources, "rows": report.rows}),
        )
        .unwrap_or_default(),
    );
    write(
        "ctru_gpu_mul_correctness.json",
        serde_json::to_string_pretty(
            &json!({"failures": report.failures, "checks": report.checks}),
        )
        .unwrap_or_default(),
    );
    if report.failures.is_empty() {
        println!("\nall {} correctness checks passed", report.checks.len());
        false
    } else {
        eprintln!("\n{} FAILURES:", report.failures.len());
        for f in &report.failures {
            eprintln!("  {f}");
        }
        true
    }
}
