//! `chainsig recover`: Ethereum senders from raw signed transactions or bare signatures, read as
//! JSON Lines or (`--raw`) as length-prefixed raw transactions (`chainsig_eth::rawtx::frames`).
//!
//! Both go through `chainsig_eth::recover::recover_records`: with `--backend cuda` (or `auto` and
//! a chunk of at least the GPU crossover) each chunk's raw transactions run wholly on the GPU
//! (RLP, signing payload, Keccak, recovery, address), a record the GPU refuses is decoded again
//! by the CPU path for its message, so errors read as the CPU's, and one the GPU hands back (a
//! blob transaction with its sidecar) is recovered by the CPU path.

use crate::input::TextChunk;
use crate::ordered::Sequenced;
use crate::{backends, input};
use anyhow::Context;
use chainsig_core::record::parse_recover_line;
use chainsig_core::{RecordError, Recovered};
use chainsig_eth::rawtx::frames::{FrameChunk, FrameReader};
use chainsig_eth::rawtx::RawTxError;
use chainsig_eth::recover::{recover_records, recover_transactions};
use rayon::prelude::*;
use std::io::{Read, Write};
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
    /// Read raw signed transactions in the length-prefixed binary format (each record a 4-byte
    /// little-endian length, then that many bytes; see docs/raw-transactions.md) instead of JSON
    /// Lines. Answers name records by their 0-based index (`"record"`).
    #[arg(long)]
    raw: bool,
    /// Input file (default or `-`: standard input).
    file: Option<PathBuf>,
}

/// Records per chunk of `--raw` input (answers leave chunk by chunk): 2¹⁶, the GPU engine's own
/// chunk. Calls share the engine, each on streams of its own, so the workers' chunks overlap on
/// the GPU as one call's chunks did (until 2026-12-08 a call held the engine, and a chunk of 2¹⁸
/// let one call copy one engine chunk while the GPU worked on another); the first chunk's read
/// and the last one's answers, which nothing overlaps, are a sixteenth of 2²⁰ records.
const RAW_CHUNK: usize = 1 << 16;

/// Chunks in hand at once for JSON Lines: one on the backend while the next is read and parsed
/// and the last one's answers are formatted. Raw input takes `verify`'s setting
/// ([`crate::verify_pipeline::workers`]).
const WORKERS: usize = 3;

pub fn run(args: RecoverArgs) -> anyhow::Result<ExitCode> {
    let registry = backends::registry(&args.backend);
    // The GPU's modules for the run load while its first chunk is read (held to the end of the
    // run: dropping it waits for the warm-up).
    let _warm_up = backends::warm_up(&args.backend, || {
        Some(if args.raw {
            chainsig_cuda::Upcoming::RawTransactions
        } else {
            chainsig_cuda::Upcoming::Recover(chainsig_core::Algorithm::Secp256k1)
        })
    });
    let stdout = std::io::stdout();
    // A megabyte at a time: 2²⁰ answers are about 220 MB, 27,000 writes through the default
    // 8 KB buffer.
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut tally = Tally {
        started: Some(std::time::Instant::now()),
        ..Tally::default()
    };
    if args.raw {
        let input = input::open(args.file.as_deref())?.into_reader();
        let input = std::io::BufReader::with_capacity(1 << 20, input);
        recover_raw_frames(&registry, &args.backend, input, &mut out, &mut tally)?;
    } else {
        let chunks = Sequenced::new(input::text_chunks(
            input::open(args.file.as_deref())?,
            1 << 16,
        ));
        crate::ordered::run(
            WORKERS,
            || chunks.next(),
            |chunk| answer_json_chunk(&registry, &args.backend, &chunk),
            |answer| tally.write(&mut out, answer),
        )?;
    }
    Ok(tally.finish(args.fail_on_invalid))
}

/// A chunk answered: its lines, formatted, and what the tally needs.
pub(crate) struct ChunkAnswer {
    pub(crate) lines: Vec<String>,
    pub(crate) failed: u64,
    device: Option<String>,
    disagreements: u64,
}

/// `--raw` input through [`crate::ordered`]: chunks of records read into one buffer each (no
/// allocation per record), their transactions recovered (`recover_transactions`, on the GPU under
/// `cuda` or `auto`) and their answer lines formatted on every core while the next chunk is on
/// the backend, the lines written in order.
pub(crate) fn recover_raw_frames(
    registry: &chainsig_core::Registry,
    backend: &str,
    input: impl Read + Send,
    out: &mut impl Write,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    // Chunks until the input ends (or fails to read); each made with room for the last one's
    // bytes.
    let mut frames = FrameReader::new(input);
    let mut room = 0;
    let chunks = Sequenced::new(std::iter::from_fn(move || {
        match frames.chunk(RAW_CHUNK, room) {
            Ok(chunk) if chunk.is_empty() => None,
            Ok(chunk) => {
                room = chunk.bytes();
                Some(Ok(chunk))
            }
            Err(e) => Some(Err(e)),
        }
    }));
    crate::ordered::run(
        crate::verify_pipeline::workers()?,
        || chunks.next(),
        |chunk| answer_raw_chunk(registry, backend, &chunk),
        |answer| tally.write(out, answer),
    )
}

/// One chunk of `--raw` input: its framed records' senders, and a line for every record.
pub(crate) fn answer_raw_chunk(
    registry: &chainsig_core::Registry,
    backend: &str,
    chunk: &FrameChunk,
) -> anyhow::Result<ChunkAnswer> {
    let (at, txs): (Vec<usize>, Vec<&[u8]>) = (0..chunk.len())
        .filter_map(|k| chunk.record(k).ok().map(|tx| (k, tx)))
        .unzip();
    let recovered = if txs.is_empty() {
        None
    } else {
        Some(
            recover_transactions(registry, backend, &txs)
                .with_context(|| format!("--backend {backend}"))?,
        )
    };
    let mut results: Vec<Option<&Result<Recovered, RawTxError>>> = vec![None; chunk.len()];
    if let Some(recovered) = &recovered {
        for (&k, result) in at.iter().zip(&recovered.results) {
            results[k] = Some(result);
        }
    }
    let (lines, failed) = answer_lines(chunk.len(), "record", |k| {
        let result = match (results[k], chunk.record(k)) {
            (Some(Ok(found)), _) => Ok(found),
            (Some(Err(e)), _) => Err(e.to_string()),
            (None, Err(e)) => Err(e.to_string()),
            (None, Ok(_)) => Err("no answer for this transaction".to_string()),
        };
        (chunk.first + k as u64, result)
    });
    Ok(ChunkAnswer {
        lines,
        failed,
        device: recovered.as_ref().and_then(|r| r.device.clone()),
        disagreements: recovered.map_or(0, |r| r.disagreements),
    })
}

/// One chunk of JSON Lines: its records parsed and their signers recovered (`recover_records`),
/// and a line for every record, formatted on every core.
fn answer_json_chunk(
    registry: &chainsig_core::Registry,
    backend: &str,
    chunk: &TextChunk,
) -> anyhow::Result<ChunkAnswer> {
    let records: Vec<_> = (0..chunk.len())
        .into_par_iter()
        .map(|k| match chunk.line(k) {
            Ok(text) => parse_recover_line(text),
            Err(reason) => Err(RecordError::new("", reason)),
        })
        .collect();
    let outcome = recover_records(registry, backend, records)
        .with_context(|| format!("--backend {backend}"))?;
    let (lines, failed) = answer_lines(chunk.len(), "line", |k| {
        let result = outcome.results[k].as_ref().map_err(ToString::to_string);
        (chunk.number(k), result)
    });
    Ok(ChunkAnswer {
        lines,
        failed,
        device: outcome.transactions.map(|(device, _)| device),
        disagreements: outcome.disagreements,
    })
}

/// The answer lines of records `0..count`, formatted on every core (`answer(k)`: record k's
/// number and its signer or error), and how many are errors.
fn answer_lines<'a>(
    count: usize,
    key: &str,
    answer: impl Fn(usize) -> (u64, Result<&'a Recovered, String>) + Sync,
) -> (Vec<String>, u64) {
    let lines: Vec<(String, bool)> = (0..count)
        .into_par_iter()
        .with_min_len(1024)
        .map(|k| {
            let (at, result) = answer(k);
            let failed = result.is_err();
            (answer_line(key, at, result), failed)
        })
        .collect();
    let failed = lines.iter().filter(|(_, failed)| *failed).count() as u64;
    (lines.into_iter().map(|(line, _)| line).collect(), failed)
}

/// One answer line, `{"<key>": at, "address", "pubkey"}` or `{"<key>": at, "error"}` (keys in
/// the order serde_json writes them).
fn answer_line(key: &str, at: u64, result: Result<&Recovered, String>) -> String {
    let mut line = serde_json::Map::new();
    line.insert(key.into(), at.into());
    match result {
        Ok(rec) => {
            line.insert("address".into(), checksum_address(&rec.address).into());
            line.insert("pubkey".into(), hex::encode(rec.pubkey).into());
        }
        Err(e) => {
            line.insert("error".into(), e.into());
        }
    }
    serde_json::Value::Object(line).to_string()
}

/// Records answered and refused so far, and where the raw transactions went.
#[derive(Default)]
pub(crate) struct Tally {
    total: u64,
    failed: u64,
    /// The device that decoded raw transactions, if one did.
    device: Option<String>,
    /// Transactions the device refused for another cause than the CPU path's.
    disagreements: u64,
    /// When reading began (backends already started), for the rate in the summary.
    started: Option<std::time::Instant>,
}

impl Tally {
    /// Writes a chunk's answer lines, whole (or not at all on SIGTERM, `crate::stop`), flushed so
    /// that a producer waiting on them is not kept waiting, and counts them.
    fn write(&mut self, out: &mut impl Write, answer: ChunkAnswer) -> anyhow::Result<()> {
        let _writing = crate::stop::writing();
        for line in &answer.lines {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
        self.total += answer.lines.len() as u64;
        self.failed += answer.failed;
        self.disagreements += answer.disagreements;
        if answer.device.is_some() {
            self.device = answer.device;
        }
        Ok(())
    }

    /// The summary line on stderr (with the device that decoded transactions, if one did), and
    /// the exit status: 1 under `--fail-on-invalid` when any record failed.
    fn finish(self, fail_on_invalid: bool) -> ExitCode {
        let Tally {
            total,
            failed,
            device,
            disagreements,
            started,
        } = self;
        let seconds = started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        if disagreements > 0 {
            eprintln!(
                "warning: the GPU and the CPU path disagreed on {disagreements} records; the CPU's answers were printed"
            );
        }
        let note = device.map(|d| format!(" ({d})")).unwrap_or_default();
        eprintln!(
            "recovered {} of {total} records, {failed} errors{note}; {seconds:.3} s, {:.0} records/s",
            total - failed,
            total as f64 / seconds.max(1e-9)
        );
        if fail_on_invalid && failed > 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// EIP-55 mixed-case checksum encoding (alloy's).
fn checksum_address(address: &[u8; 20]) -> String {
    alloy_primitives::Address::from(*address).to_checksum(None)
}
