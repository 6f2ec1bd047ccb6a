//! `chainsig recover`: Ethereum senders from raw signed transactions or bare signatures, read as
//! JSON Lines or (`--raw`) as length-prefixed raw transactions (`chainsig_eth::rawtx::frames`).
//!
//! Both go through `chainsig_eth::recover::recover_records`: with `--backend cuda` (or `auto` and
//! a chunk of at least the GPU crossover) each chunk's raw transactions run wholly on the GPU
//! (RLP, signing payload, Keccak, recovery, address), a record the GPU refuses is decoded again
//! by the CPU path for its message, so errors read as the CPU's, and one the GPU hands back (a
//! blob transaction with its sidecar) is recovered by the CPU path.

use crate::{backends, input};
use anyhow::Context;
use chainsig_core::record::{parse_recover_line, RecoverRecord};
use chainsig_core::{RecordError, Recovered};
use chainsig_eth::rawtx::frames::FrameReader;
use chainsig_eth::recover::{recover_records, RecoverOutcome};
use rayon::prelude::*;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RecoverArgs {
    /// auto, cpu or cuda.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Exit with status 1 when any record cannot be recovered (after all output).
    #[arg(long)]
    fail_on_invalid: bool,
    /// Read raw signed transactions in the length-prefixed binary format (each record a 4-byte
    /// little-endian length, then that many bytes; see docs/raw-transactions.md) instead of JSON
    /// Lines. Answers name records by their 0-based index (`"record"`).
    #[arg(long)]
    raw: bool,
    /// Input file (default or `-`: standard input).
    file: Option<PathBuf>,
}

/// Records per chunk of `--raw` input (answers leave chunk by chunk).
const RAW_CHUNK: usize = 1 << 16;

pub fn run(args: RecoverArgs) -> anyhow::Result<ExitCode> {
    let registry = backends::registry(&args.backend);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut tally = Tally::default();
    if args.raw {
        let mut frames = FrameReader::new(std::io::BufReader::with_capacity(
            1 << 20,
            open_raw(args.file.as_deref())?,
        ));
        loop {
            let chunk = frames.chunk(RAW_CHUNK).context("reading input")?;
            if chunk.is_empty() {
                break;
            }
            let mut indices = Vec::with_capacity(chunk.len());
            let records: Vec<_> = chunk
                .into_iter()
                .map(|(index, frame)| {
                    indices.push(index);
                    frame
                        .map(RecoverRecord::Transaction)
                        .map_err(|e| RecordError::new("", e.to_string()))
                })
                .collect();
            let outcome = tally.recover(&registry, &args.backend, records)?;
            // A chunk's answers are written whole, or not at all on SIGTERM (crate::stop).
            let _writing = crate::stop::writing();
            for (index, result) in indices.into_iter().zip(outcome.results) {
                tally.write(&mut out, "record", index, result)?;
            }
            out.flush()?;
        }
    } else {
        let input = input::open(args.file.as_deref())?;
        for chunk in input::chunks(input, 1 << 16) {
            let chunk = chunk.context("reading input")?;
            let records: Vec<_> = chunk
                .par_iter()
                .map(|(_, text)| match text {
                    Ok(text) => parse_recover_line(text),
                    Err(reason) => Err(RecordError::new("", reason.clone())),
                })
                .collect();
            let outcome = tally.recover(&registry, &args.backend, records)?;
            let _writing = crate::stop::writing();
            for ((number, _), result) in chunk.iter().zip(outcome.results) {
                tally.write(&mut out, "line", *number, result)?;
            }
            // Answers leave as their chunk is done: a producer waiting on them is not kept waiting.
            out.flush()?;
        }
    }
    Ok(tally.finish(args.fail_on_invalid))
}

/// Records answered and refused so far, and where the raw transactions went.
#[derive(Default)]
struct Tally {
    total: u64,
    failed: u64,
    /// The device that decoded raw transactions, if one did.
    device: Option<String>,
    /// Transactions the device refused for another cause than the CPU path's.
    disagreements: u64,
}

impl Tally {
    /// One chunk's records through `recover_records`, noting where the transactions went.
    fn recover(
        &mut self,
        registry: &chainsig_core::Registry,
        backend: &str,
        records: Vec<Result<chainsig_core::record::RecoverRecord, RecordError>>,
    ) -> anyhow::Result<RecoverOutcome> {
        let outcome = recover_records(registry, backend, records)
            .with_context(|| format!("--backend {backend}"))?;
        if let Some((device, _)) = &outcome.transactions {
            self.device = Some(device.clone());
        }
        self.disagreements += outcome.disagreements;
        Ok(outcome)
    }

    /// Writes one answer line, `{"<key>": at, "address", "pubkey"}` or `{"<key>": at, "error"}`.
    fn write(
        &mut self,
        out: &mut impl Write,
        key: &str,
        at: u64,
        result: Result<Recovered, RecordError>,
    ) -> std::io::Result<()> {
        let mut line = serde_json::Map::new();
        line.insert(key.into(), at.into());
        match result {
            Ok(rec) => {
                line.insert("address".into(), checksum_address(&rec.address).into());
                line.insert("pubkey".into(), hex::encode(rec.pubkey).into());
            }
            Err(e) => {
                self.failed += 1;
                line.insert("error".into(), e.to_string().into());
            }
        }
        self.total += 1;
        writeln!(out, "{}", serde_json::Value::Object(line))
    }
    /// The summary line on stderr (with the device that decoded transactions, if one did), and
    /// the exit status: 1 under `--fail-on-invalid` when any record failed.
    fn finish(self, fail_on_invalid: bool) -> ExitCode {
        let Tally {
            total,
            failed,
            device,
            disagreements,
        } = self;
        if disagreements > 0 {
            eprintln!(
                "warning: the GPU and the CPU path disagreed on {disagreements} records; the CPU's answers were printed"
            );
        }
        let note = device.map(|d| format!(" ({d})")).unwrap_or_default();
        eprintln!(
            "recovered {} of {total} records, {failed} errors{note}",
            total - failed
        );
        if fail_on_invalid && failed > 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// The `--raw` input: `path`, or standard input for none or `-`.
fn open_raw(path: Option<&Path>) -> anyhow::Result<Box<dyn Read + Send>> {
    match path {
        Some(p) if p != Path::new("-") => Ok(Box::new(
            std::fs::File::open(p).with_context(|| format!("cannot read {}", p.display()))?,
        )),
        _ => Ok(Box::new(std::io::stdin())),
    }
}

/// EIP-55 mixed-case checksum encoding (alloy's).
fn checksum_address(address: &[u8; 20]) -> String {
    alloy_primitives::Address::from(*address).to_checksum(None)
}
