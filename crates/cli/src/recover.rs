//! `chainsig recover`: Ethereum senders from raw signed transactions or bare signatures.

use crate::{backends, input};
use anyhow::Context;
use chainsig_core::record::parse_recover_line;
use chainsig_core::RecordError;
use chainsig_eth::recover::recover_records;
use rayon::prelude::*;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RecoverArgs {
    /// auto, cpu or cuda.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Exit with status 1 when any record cannot be recovered (after all output).
    #[arg(long)]
    fail_on_invalid: bool,
    /// Input file (default or `-`: standard input).
    file: Option<PathBuf>,
}

pub fn run(args: RecoverArgs) -> anyhow::Result<ExitCode> {
    let registry = backends::registry(&args.backend);
    let input = input::open(args.file.as_deref())?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (mut total, mut failed) = (0u64, 0u64);
    for chunk in input::chunks(input, 1 << 16) {
        let chunk = chunk.context("reading input")?;
        let records: Vec<_> = chunk
            .par_iter()
            .map(|(_, text)| match text {
                Ok(text) => parse_recover_line(text),
                Err(reason) => Err(RecordError::new("", reason.clone())),
            })
            .collect();
        let outcome = recover_records(&registry, &args.backend, records)?;
        // A chunk's answers are written whole, or not at all on SIGTERM (crate::stop).
        let _writing = crate::stop::writing();
        for ((number, _), result) in chunk.iter().zip(outcome.results) {
            let line = match result {
                Ok(rec) => serde_json::json!({
                    "line": number,
                    "address": checksum_address(&rec.address),
                    "pubkey": hex::encode(rec.pubkey),
                }),
                Err(e) => {
                    failed += 1;
                    serde_json::json!({"line": number, "error": e.to_string()})
                }
            };
            writeln!(out, "{line}")?;
            total += 1;
        }
        // Answers leave as their chunk is done: a producer waiting on them is not kept waiting.
        out.flush()?;
    }
    eprintln!(
        "recovered {} of {total} records, {failed} errors",
        total - failed
    );
    Ok(if args.fail_on_invalid && failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// EIP-55 mixed-case checksum encoding (alloy's).
fn checksum_address(address: &[u8; 20]) -> String {
    alloy_primitives::Address::from(*address).to_checksum(None)
}
