//! `chainsig verify`: JSON Lines of signatures (or, with `--rows`, packed binary rows) in, one
//! verdict line per record out, in order.
//! The work itself is [`crate::verify_pipeline`]'s: reading, parsing, preparing, verifying and
//! writing overlapped; `--stats` prints the time each stage took.

use crate::backends;
use crate::input;
use crate::verify_pipeline::{self, Options};
use chainsig_core::record::VerifyDefaults;
use chainsig_core::{Algorithm, HashAlg};
use clap::builder::RangedU64ValueParser;
use std::path::PathBuf;
use std::process::ExitCode;

/// The largest `--chunk`: a million records, a few hundred MB of prepared batch.
const MAX_CHUNK: u64 = 1 << 20;

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Algorithm of lines that carry no `alg` field.
    #[arg(long)]
    alg: Option<Algorithm>,
    /// Read packed binary rows (the C ABI's row layout, docs/integration.md) instead of JSON Lines: each
    /// row carries its algorithm, hash and low-s rule, and answers name records from 0
    /// (`{"record":0,"valid":true}`).
    #[arg(long, conflicts_with_all = ["alg", "hash", "low_s"])]
    rows: bool,
    /// auto (GPU for large batches when present, else CPU), cpu or cuda.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Reject ECDSA signatures whose s is above n/2 (Bitcoin and Ethereum rule).
    #[arg(long)]
    low_s: bool,
    /// Hash of `msg` for lines that name none: sm3, keccak256, sha256 or sha3-256.
    #[arg(long)]
    hash: Option<HashAlg>,
    /// Print only the summary (to stderr), no verdict lines.
    #[arg(long)]
    summary: bool,
    /// Most records verified together (1 to 1048576); larger batches keep a GPU busier. From a
    /// pipe, a chunk is also cut when no more input has arrived, so answers keep pace with input.
    #[arg(long, default_value_t = 1 << 16, value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_CHUNK))]
    chunk: usize,
    /// Print the time each stage took to stderr after the summary: read, parse, prepare (key
    /// checks, digests), verify (batching, staging, copies and the backend's work), write, and the
    /// wall time (stages overlap, so their times may add up to more).
    #[arg(long)]
    stats: bool,
    /// Exit with status 1 when any record is invalid or cannot be checked (after all output).
    #[arg(long)]
    fail_on_invalid: bool,
    /// SM2 public keys of the chain's known signers, one SEC1 hex key per line: their records are
    /// verified on the GPU through per-key tables (built at start, about 25 ms of a core each).
    #[arg(long, value_name = "FILE")]
    signers: Option<PathBuf>,
    /// Input file (default or `-`: standard input).
    file: Option<PathBuf>,
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let registry = backends::with_signer_file(&args.backend, args.signers.as_deref())?;
    // Fail early and clearly when the named backend cannot run here.
    if args.backend != "auto" {
        registry.get(&args.backend)?;
    }
    let options = Options {
        registry: &registry,
        backend: &args.backend,
        low_s: args.low_s,
        defaults: VerifyDefaults {
            alg: args.alg,
            hash: args.hash,
        },
        chunk: args.chunk,
        verdict_lines: !args.summary,
        rows: args.rows,
    };
    let input = input::open(args.file.as_deref())?;
    let summary = verify_pipeline::run(&options, input, std::io::stdout().lock())?;
    let (valid, invalid, errors) = (summary.valid, summary.invalid, summary.errors);
    let total = summary.total();
    let seconds = summary.stats.wall.as_secs_f64();
    let backends: Vec<String> = summary
        .used
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    eprintln!(
        "verified {total} records: {valid} valid, {invalid} invalid, {errors} errors; backends {}; {:.3} s, {:.0} records/s",
        if backends.is_empty() { "none".to_string() } else { backends.join(",") },
        seconds,
        total as f64 / seconds.max(1e-9)
    );
    if args.stats {
        eprint!("{}", summary.stats.report());
    }
    if total == 0 && args.summary {
        anyhow::bail!("no records in the input: nothing was verified");
    }
    Ok(if args.fail_on_invalid && invalid + errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
