//! `chainsig bench`: the main job. Generates signed batches for every algorithm (fresh keys,
//! distinct signatures, 10% corrupted), prepares them, and times verification on the best backend
//! present from prepared records in host memory to the verdict bitmap in host memory.
//! Each size is run once to warm up, then `--repeats` times; the median is reported. When the GPU
//! backend has several engines (every visible GPU, or `CHAINSIG_CUDA_CONFIG='{"devices":[0,1]}'`),
//! each row is followed by every engine's records and rate over the timed runs (`devices` in the
//! JSON), beside the row's total.
//! `--signers N` signs the records with a fixed set of N keys instead, as a permissioned chain's
//! endorsers and clients do, and loads those keys into the GPU backend as known signers.
//! `--kem ctru` benchmarks the CTRU-Prime KEM instead (see `bench_kem`); `--from-file FILE` the
//! user's whole path on a file's records beside the backend alone (see `bench_file`).

use crate::backends;
use chainsig_core::{Algorithm, Batch, PreparedItem};
use chainsig_testkit::{pool_public_keys, prepared_items_in_pool, GenSpec};
use clap::builder::RangedU64ValueParser;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// The largest `--sizes` value: 2²³ records, a few GB of prepared batch.
const MAX_SIZE: u64 = 1 << 23;
const MAX_REPEATS: u64 = 1000;
const MAX_THREADS: u64 = 1024;
/// The largest signer set (each SM2 key's GPU table is built at start).
const MAX_SIGNERS: u64 = 1 << 20;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Algorithms to run (default: all).
    #[arg(long, value_delimiter = ',')]
    alg: Vec<Algorithm>,
    /// auto (the best present), cpu or cuda.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Batch sizes, each 1 to 8388608 (default: 1024,8192 on the CPU; 4096,65536,172032,1048576
    /// on a GPU).
    #[arg(long, value_delimiter = ',',
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_SIZE))]
    sizes: Vec<usize>,
    /// Timed runs per size after one warm-up run (at most 1000).
    #[arg(long, default_value_t = 5,
          value_parser = RangedU64ValueParser::<usize>::new().range(0..=MAX_REPEATS))]
    repeats: usize,
    /// Worker threads for CPU verification, 1 to 1024 (default: every core).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_THREADS))]
    threads: Option<usize>,
    /// Also write the figures as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Sign the records with a fixed set of this many keys (0: a fresh key per record), and load
    /// the SM2 ones into the GPU backend as known signers (their tables built first, not timed);
    /// at most 1048576.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=MAX_SIGNERS))]
    signers: u64,
    /// SM2 on the GPU: run the experiments of the paper "基于GPU的区块链交易验签加速技术"
    /// (GPU-based acceleration of blockchain transaction signature verification) — Fig. 3 streams
    /// × batch sizes, Table 1 stage switches, Fig. 4 Euclid/Fermat, Fig. 7 simultaneous/separate,
    /// block sizes, fast mode — up to the largest `--sizes` value, writing CSV to `--csv`.
    #[arg(long)]
    sweep: bool,
    /// With --sweep or --kem: write the rows as CSV to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Benchmark a KEM instead of signatures: `ctru` runs the GPU product sweep (batch 1 … 65536 by
    /// default, checked first) when a GPU is present, and always the CPU NTT product and KEM
    /// keygen/encaps/decaps per second on one core and on all cores. `--backend cpu` skips the GPU,
    /// `--backend cuda` requires it.
    #[arg(long, value_enum, conflicts_with_all = ["sweep", "alg", "threads"])]
    kem: Option<Kem>,
    /// Time the user's whole path on the records of this JSON Lines file (as `chainsig gen`
    /// writes them): `chainsig verify`'s read, parse, prepare, verify and write, with the time of
    /// each, beside the backend alone on the same records prepared beforehand. Every run's
    /// verdicts are checked against the backend's alone. `--alg` (one) is the algorithm of lines
    /// that name none.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["sweep", "kem", "sizes", "signers"])]
    from_file: Option<PathBuf>,
    /// Time the user's whole path on a file of length-prefixed raw signed transactions (as
    /// `recover --raw` reads them): reading, framing, recovery (on the GPU with `--backend cuda`),
    /// formatting and writing the answer lines, beside the backend alone on the same transactions
    /// in memory. Every run's answers are checked against the backend's alone.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["sweep", "kem", "sizes", "signers", "from_file", "alg"])]
    raw: Option<PathBuf>,
    /// With --from-file: the file is packed rows (as `verify --rows` reads them), not JSON Lines.
    #[arg(long, requires = "from_file", conflicts_with = "alg")]
    rows: bool,
    /// With --from-file: most records verified together (1 to 1048576), as `verify --chunk`.
    #[arg(long, default_value_t = 1 << 16, requires = "from_file",
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=1 << 20))]
    chunk: usize,
}

/// The KEMs `--kem` knows.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Kem {
    /// CTRU-Prime, n = 653, 761 and 1277.
    Ctru,
}

#[derive(Serialize)]
struct Row {
    alg: String,
    backend: String,
    threads: usize,
    /// Distinct signing keys, known to the backend; 0 when every record has its own key.
    signers: u64,
    batch: usize,
    runs: usize,
    median_seconds: f64,
    throughput_per_second: f64,
    latency_ms: f64,
    /// With several GPU engines (devices, or logical shards of one): each one's share of the
    /// timed runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    devices: Vec<DeviceRow>,
}

/// One GPU engine's part of a row's timed runs: the records it verified and its rate over its
/// own wall time (the sum of the engines' rates exceeds the row's when they wait for each other).
#[derive(Serialize)]
struct DeviceRow {
    engine: usize,
    ordinal: usize,
    name: String,
    records: u64,
    seconds: f64,
    rate_per_second: f64,
    /// Records of another engine's failed part that this one verified.
    redone: u64,
    failed_parts: u64,
}

/// The GPU engines' records so far, when this process opened more than one.
fn engine_stats() -> Vec<chainsig_cuda::DeviceInfo> {
    backends::started_cuda()
        .map(|cuda| cuda.devices())
        .filter(|d| d.len() > 1)
        .unwrap_or_default()
}

/// Each engine's part between two snapshots of [`engine_stats`].
fn device_rows(
    before: &[chainsig_cuda::DeviceInfo],
    after: &[chainsig_cuda::DeviceInfo],
) -> Vec<DeviceRow> {
    after
        .iter()
        .zip(before)
        .enumerate()
        .map(|(engine, (a, b))| {
            let records = a.stats.records - b.stats.records;
            let seconds = a.stats.seconds - b.stats.seconds;
            DeviceRow {
                engine,
                ordinal: a.ordinal,
                name: a.name.clone(),
                records,
                seconds,
                rate_per_second: if seconds > 0.0 {
                    records as f64 / seconds
                } else {
                    0.0
                },
                redone: a.stats.redone - b.stats.redone,
                failed_parts: a.stats.failures - b.stats.failures,
            }
        })
        .collect()
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if args.sweep {
        return sweep(&args);
    }
    if let Some(Kem::Ctru) = args.kem {
        return crate::bench_kem::run(&crate::bench_kem::Options {
            backend: args.backend.clone(),
            sizes: args.sizes.clone(),
            repeats: args.repeats,
            json: args.json.clone(),
            csv: args.csv.clone(),
        });
    }
    let threads = args.threads.unwrap_or_else(rayon::current_num_threads);
    if let Some(path) = &args.raw {
        let registry = backends::registry(&args.backend);
        if args.backend != "auto" {
            registry.get(&args.backend)?;
        }
        crate::bench_raw::run(&registry, &args.backend, path, args.repeats)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(path) = &args.from_file {
        anyhow::ensure!(
            args.alg.len() <= 1,
            "--from-file takes at most one --alg (for lines that name none)"
        );
        let mut registry = backends::registry(&args.backend);
        if args.backend != "auto" {
            registry.get(&args.backend)?;
        }
        if let Some(n) = args.threads {
            registry.register(std::sync::Arc::new(chainsig_cpu::CpuBackend::with_threads(
                n,
            )?));
        }
        let defaults = chainsig_core::record::VerifyDefaults {
            alg: args.alg.first().copied(),
            hash: None,
        };
        crate::bench_file::run(
            &registry,
            &args.backend,
            defaults,
            path,
            args.chunk,
            args.repeats,
            args.rows,
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let algs = if args.alg.is_empty() {
        Algorithm::ALL.to_vec()
    } else {
        args.alg.clone()
    };
    let known: Vec<_> = if args.signers > 0 && algs.contains(&Algorithm::Sm2) {
        pool_public_keys(&spec(Algorithm::Sm2), args.signers)
            .iter()
            .map(|sec1| chainsig_cpu::prepare::decode_pubkey(Algorithm::Sm2, sec1))
            .collect::<Result<_, _>>()
            .map_err(|e| anyhow::anyhow!("generated signer key: {e}"))?
    } else {
        Vec::new()
    };
    let mut registry = backends::with_signers(&args.backend, &known)?;
    if let Some(n) = args.threads {
        registry.register(std::sync::Arc::new(chainsig_cpu::CpuBackend::with_threads(
            n,
        )?));
    }
    let mut rows = Vec::new();
    println!(
        "{:<10} {:<8} {:>7} {:>7} {:>9} {:>14} {:>12}",
        "algorithm", "backend", "threads", "signers", "batch", "verify/s", "latency ms"
    );
    for alg in algs {
        // "auto" decides per batch size; name the backend it would use for the largest batch.
        let probe = registry.select(&args.backend, alg, usize::MAX)?;
        let on_gpu = probe.name() != chainsig_core::backend::CPU;
        let sizes = if !args.sizes.is_empty() {
            args.sizes.clone()
        } else if on_gpu {
            vec![4096, 65536, 172_032, 1 << 20]
        } else {
            vec![1024, 8192]
        };
        let largest = sizes.iter().copied().max().unwrap_or(0);
        let (items, expected) = signed_items(alg, largest, args.signers);
        for &size in &sizes {
            let batch = Batch::from_results(alg, false, items[..size].iter().map(|i| Ok(*i)));
            let want_valid = expected[..size].iter().filter(|&&v| v).count();
            let mut times = Vec::with_capacity(args.repeats);
            let mut used = String::new();
            let mut before = Vec::new();
            for run in 0..=args.repeats.max(1) {
                if run == 1 {
                    before = engine_stats(); // after the warm-up
                }
                let start = Instant::now();
                let (bitmap, backend) = registry.verify(&args.backend, &batch)?;
                let elapsed = start.elapsed().as_secs_f64();
                anyhow::ensure!(
                    bitmap.count_valid() == want_valid
                        && (0..size).all(|i| bitmap.get(i) == expected[i]),
                    "{alg} on {backend}: verdicts differ from the generator's (batch {size})"
                );
                used = backend;
                if run > 0 {
                    times.push(elapsed);
                }
            }
            let median = chainsig_bench::median(&mut times);
            let devices = if used == chainsig_cuda::NAME {
                device_rows(&before, &engine_stats())
            } else {
                Vec::new()
            };
            let row = Row {
                alg: alg.to_string(),
                backend: used,
                threads,
                signers: args.signers,
                batch: size,
                runs: times.len(),
                median_seconds: median,
                throughput_per_second: size as f64 / median,
                latency_ms: median * 1e3,
                devices,
            };
            println!(
                "{:<10} {:<8} {:>7} {:>7} {:>9} {:>14.0} {:>12.3}",
                row.alg,
                row.backend,
                row.threads,
                row.signers,
                row.batch,
                row.throughput_per_second,
                row.latency_ms
            );
            for d in &row.devices {
                println!(
                    "  engine {} (device {}, {}): {} records, {:.0}/s{}",
                    d.engine,
                    d.ordinal,
                    d.name,
                    d.records,
                    d.rate_per_second,
                    if d.failed_parts > 0 || d.redone > 0 {
                        format!(
                            ", {} failed parts, {} records redone",
                            d.failed_parts, d.redone
                        )
                    } else {
                        String::new()
                    }
                );
            }
            rows.push(row);
        }
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&rows)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The benchmark's data set for `alg`: 10% of records corrupted, 64-byte messages.
fn spec(alg: Algorithm) -> GenSpec {
    GenSpec {
        alg,
        seed: 0xbe7c4,
        invalid_ratio: 0.1,
        msg_len: 64,
    }
}

/// `n` distinct prepared items, signed by a fresh key each or (`signers` > 0) by that many keys
/// in turn, and the verdict each should get.
fn signed_items(alg: Algorithm, n: usize, signers: u64) -> (Vec<PreparedItem>, Vec<bool>) {
    if signers == 0 {
        chainsig_testkit::prepared_items(&spec(alg), n)
    } else {
        prepared_items_in_pool(&spec(alg), n, signers)
    }
}

/// The paper's ablations on the CUDA backend, every run checked against the generator's verdicts.
fn sweep(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    use chainsig_bench::sweep::{run_sweep, standard_plan, to_csv};
    let largest = args.sizes.iter().copied().max().unwrap_or(1 << 20);
    let (items, expected) = signed_items(Algorithm::Sm2, largest, 0);
    let batch = Batch::from_results(Algorithm::Sm2, false, items.iter().map(|i| Ok(*i)));
    let expected = chainsig_core::Bitmap::from_bools(expected);
    let rows = run_sweep(&standard_plan(largest), &batch, &expected, |row| {
        println!(
            "{:<14} {:?}/{:?} compress={} streams={:>2} block={:>4} batch={:>8} {:>12.0}/s {:>9.3} ms",
            row.experiment, row.mode, row.inversion, row.compress, row.streams, row.block_size, row.batch,
            row.e2e_per_s, row.e2e_ms
        )
    })?;
    if let Some(path) = &args.csv {
        std::fs::write(path, to_csv(&rows))?;
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&rows)?)?;
    }
    Ok(ExitCode::SUCCESS)
}
