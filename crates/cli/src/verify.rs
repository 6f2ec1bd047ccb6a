//! `chainsig verify`: JSON Lines of signatures in, one verdict line per input line out, in order.

use crate::backends;
use crate::input;
use anyhow::Context;
use chainsig_core::record::{parse_verify_line, VerifyDefaults};
use chainsig_core::{Algorithm, HashAlg, RecordError};
use chainsig_cpu::pipeline::{verify_records, Verdict};
use chainsig_cpu::prepare::Preparer;
use clap::builder::RangedU64ValueParser;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// The largest `--chunk`: a million records, a few hundred MB of prepared batch.
const MAX_CHUNK: u64 = 1 << 20;

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Algorithm of lines that carry no `alg` field.
    #[arg(long)]
    alg: Option<Algorithm>,
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
    let defaults = VerifyDefaults {
        alg: args.alg,
        hash: args.hash,
    };
    let preparer = Preparer::new();
    let input = input::open(args.file.as_deref())?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let started = Instant::now();
    let (mut valid, mut invalid, mut errors) = (0u64, 0u64, 0u64);
    let mut used: BTreeMap<String, u64> = BTreeMap::new();
    for chunk in input::chunks(input, args.chunk) {
        let chunk = chunk.context("reading input")?;
        let records: Vec<_> = chunk
            .par_iter()
            .map(|(_, text)| match text {
                Ok(text) => parse_verify_line(text, &defaults),
                Err(reason) => Err(RecordError::new("", reason.clone())),
            })
            .collect();
        let outcome = verify_records(&registry, &args.backend, args.low_s, &preparer, &records)?;
        for (alg, backend, n) in &outcome.batches {
            *used.entry(format!("{alg}:{backend}")).or_default() += *n as u64;
        }
        // A chunk's answers are written whole, or not at all on SIGTERM (crate::stop).
        let _writing = crate::stop::writing();
        for ((number, _), verdict) in chunk.iter().zip(&outcome.verdicts) {
            match verdict {
                Verdict::Valid => valid += 1,
                Verdict::Invalid => invalid += 1,
                Verdict::Error(_) => errors += 1,
            }
            if !args.summary {
                write_verdict(&mut out, *number, verdict)?;
            }
        }
        // Answers leave as their chunk is done: a producer waiting on them is not kept waiting.
        out.flush()?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let total = valid + invalid + errors;
    let backends: Vec<String> = used.iter().map(|(k, n)| format!("{k}={n}")).collect();
    eprintln!(
        "verified {total} records: {valid} valid, {invalid} invalid, {errors} errors; backends {}; {:.3} s, {:.0} records/s",
        if backends.is_empty() { "none".to_string() } else { backends.join(",") },
        seconds,
        total as f64 / seconds.max(1e-9)
    );
    if total == 0 && args.summary {
        anyhow::bail!("no records in the input: nothing was verified");
    }
    Ok(if args.fail_on_invalid && invalid + errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn write_verdict(out: &mut impl Write, line: u64, verdict: &Verdict) -> std::io::Result<()> {
    match verdict {
        Verdict::Valid => writeln!(out, r#"{{"line":{line},"valid":true}}"#),
        Verdict::Invalid => writeln!(out, r#"{{"line":{line},"valid":false}}"#),
        Verdict::Error(e) => writeln!(
            out,
            "{}",
            serde_json::json!({"line": line, "error": e.to_string()})
        ),
    }
}
