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
//! The checks and the sweep are `chainsig_ctru_cuda::bench` (shared with `chainsig bench --kem
//! ctru`); this example only reads its settings from the environment and writes the files.
//!
//! Writes ctru_gpu_mul.csv, ctru_gpu_mul.json and ctru_gpu_mul_correctness.json under $OUT (default
//! ./ctru-device-check) and prints a table. Exits 1 on any mismatch, 2 when no GPU is usable.
//!
//! Run: `cargo build --release -p chainsig-ctru-cuda --example ctru_device_check` then
//! `OUT=/some/dir target/release/examples/ctru_device_check`.

use chainsig_ctru_cuda::bench::{run_gpu, table, to_csv, Plan};
use chainsig_ctru_cuda::Error;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::json;
use std::io::Write;

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
    let report = match run_gpu(&plan, &mut rng, |stage| eprintln!("{stage}")) {
        Ok(r) => r,
        Err(Error::Unavailable(why)) => {
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
    let write = |name: &str, body: String| {
        let path = out_dir.join(name);
        match std::fs::File::create(&path).and_then(|mut f| f.write_all(body.as_bytes())) {
            Ok(()) => println!("wrote {}", path.display()),
            Err(e) => eprintln!("cannot write {}: {e}", path.display()),
        }
    };
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
    } else {
        eprintln!("\n{} FAILURES:", report.failures.len());
        for f in &report.failures {
            eprintln!("  {f}");
        }
        std::process::exit(1);
    }
}
