//! `chainsig bench --kem ctru`: the CTRU-Prime benchmark. The measuring is
//! `chainsig_bench::ctru` (also behind the `ctru_device_check` program); this module picks the sizes,
//! prints the tables and writes the files.
//!
//! On a GPU: the correctness checks, then the product sweep over `--sizes` (default 1 … 65536) for
//! every n, product and method against the single-core CPU NTT; then the whole KEM in batch on the
//! GPU (checked against the CPU KEM on honest and tampered ciphertexts, then encaps and decaps per
//! second for batches 1024 … 65536 up to the largest size); a failed check exits 1 before any
//! timing (exit status 1). Without a GPU: one line saying why, and the CPU part only. Always: the single-core CPU NTT
//! product per n, and keygen/encaps/decaps per second over a batch on all cores and on one core.

use anyhow::Context;
use chainsig_bench::ctru::{
    cpu_kem, cpu_ntt_rows, cpu_ntt_table, kem_gpu_table, kem_sizes, kem_table, run_gpu,
    run_gpu_kem, table, to_csv, CpuNttRow, GpuKemReport, GpuReport, KemRow, Plan, SIZES,
};
use chainsig_ctru::ParamSet;
use chainsig_ctru_cuda::{Error, GpuError};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// Largest CPU KEM batch on all cores (keygen at n = 1277 takes about 26 ms a key on one core).
pub const KEM_BATCH_ALL_CORES: usize = 1024;
/// Largest CPU KEM batch on one core.
pub const KEM_BATCH_ONE_CORE: usize = 64;

/// What `chainsig bench` passes on.
pub struct Options {
    pub backend: String,
    pub sizes: Vec<usize>,
    pub repeats: usize,
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
}

#[derive(Serialize)]
struct Report {
    repeats: usize,
    sizes: Vec<usize>,
    threads: usize,
    cpu_ntt: Vec<CpuNttRow>,
    cpu_kem: Vec<KemRow>,
    /// Why the GPU part did not run, when it did not.
    gpu_unavailable: Option<String>,
    gpu: Option<GpuReport>,
    /// The batch KEM on the GPU, when a GPU was usable.
    gpu_kem: Option<GpuKemReport>,
}

/// The CPU KEM batch sizes (all cores, one core) for a largest requested size.
pub fn kem_batches(largest: usize) -> (usize, usize) {
    (
        largest.clamp(1, KEM_BATCH_ALL_CORES),
        largest.clamp(1, KEM_BATCH_ONE_CORE),
    )
}

pub fn run(opts: &Options) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        matches!(opts.backend.as_str(), "auto" | "cpu" | "cuda"),
        "--backend {}: with --kem, one of auto, cpu, cuda",
        opts.backend
    );
    let sizes = if opts.sizes.is_empty() {
        SIZES.to_vec()
    } else {
        opts.sizes.clone()
    };
    let plan = Plan::new(&ParamSet::ALL, &sizes, opts.repeats).context("--sizes/--repeats")?;
    let mut rng = ChaCha20Rng::from_entropy();
    let threads = rayon::current_num_threads();
    let mut report = Report {
        repeats: plan.reps,
        sizes: plan.sizes.clone(),
        threads,
        cpu_ntt: Vec::new(),
        cpu_kem: Vec::new(),
        gpu_unavailable: None,
        gpu: None,
        gpu_kem: None,
    };

    // The GPU first, so that a wrong product fails before minutes of CPU timing.
    if opts.backend == "cpu" {
        report.gpu_unavailable = Some("--backend cpu".into());
        println!("GPU sweep skipped: --backend cpu");
    } else {
        match run_gpu(&plan, &mut rng, |stage| eprintln!("{stage}")) {
            Ok(gpu) => {
                println!(
                    "GPU {}: {} correctness checks, {} failures",
                    gpu.arch,
                    gpu.checks.len(),
                    gpu.failures.len()
                );
                if !gpu.failures.is_empty() {
                    for f in &gpu.failures {
                        eprintln!("MISMATCH {f}");
                    }
                    let failures = gpu.failures.len();
                    report.gpu = Some(gpu);
                    write_json(opts, &report)?;
                    eprintln!(
                        "chainsig: {failures} GPU correctness failures (listed above); nothing was timed"
                    );
                    return Ok(ExitCode::from(1));
                }
                println!("\nGPU products (medians of {} runs)", plan.reps);
                print!("{}", table(&gpu.rows));
                report.gpu = Some(gpu);
                let sizes = kem_sizes(plan.largest());
                let kem = run_gpu_kem(
                    &ParamSet::ALL,
                    &sizes,
                    plan.reps,
                    false,
                    &mut rng,
                    |stage| eprintln!("{stage}"),
                )
                .context("GPU KEM")?;
                if !kem.failures.is_empty() {
                    for f in &kem.failures {
                        eprintln!("MISMATCH {f}");
                    }
                    let failures = kem.failures.len();
                    report.gpu_kem = Some(kem);
                    write_json(opts, &report)?;
                    eprintln!("chainsig: {failures} GPU KEM failures (listed above)");
                    return Ok(ExitCode::from(1));
                }
                println!(
                    "\nGPU KEM in batch, one key pair ({} checks passed; medians of {} runs)",
                    kem.checks.len(),
                    plan.reps
                );
                print!("{}", kem_gpu_table(&kem.rows));
                report.gpu_kem = Some(kem);
            }
            Err(Error::Gpu(GpuError::Unavailable(why))) if opts.backend != "cuda" => {
                println!("no GPU: {why}; reporting the CPU only");
                report.gpu_unavailable = Some(why);
            }
            Err(e) => return Err(e).context("GPU sweep"),
        }
    }

    report.cpu_ntt = cpu_ntt_rows(&ParamSet::ALL, plan.reps.max(10), &mut rng)?;
    println!("\nCPU NTT product, one core");
    print!("{}", cpu_ntt_table(&report.cpu_ntt));

    let (all, one) = kem_batches(plan.largest());
    for set in ParamSet::ALL {
        for (batch, parallel) in [(all, true), (one, false)] {
            let rows = cpu_kem(set, batch, plan.reps, parallel).map_err(anyhow::Error::msg)?;
            report.cpu_kem.extend(rows);
        }
    }
    println!(
        "\nCPU KEM per second in batch (medians of {} runs; {threads} threads = all cores)",
        plan.reps
    );
    print!("{}", kem_table(&report.cpu_kem));

    write_json(opts, &report)?;
    if let Some(path) = &opts.csv {
        match &report.gpu {
            Some(gpu) => std::fs::write(path, to_csv(&gpu.rows))
                .with_context(|| format!("cannot write {}", path.display()))?,
            None => eprintln!(
                "{}: not written, the CSV holds GPU rows and none were measured",
                path.display()
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn write_json(opts: &Options, report: &Report) -> anyhow::Result<()> {
    if let Some(path) = &opts.json {
        std::fs::write(path, serde_json::to_string_pretty(report)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kem_batches_follow_the_sizes_within_caps() {
        assert_eq!(kem_batches(4), (4, 4));
        assert_eq!(kem_batches(100), (100, KEM_BATCH_ONE_CORE));
        assert_eq!(
            kem_batches(65536),
            (KEM_BATCH_ALL_CORES, KEM_BATCH_ONE_CORE)
        );
        assert_eq!(kem_batches(0), (1, 1));
    }
}
