//! `chainsig gen`: signed records in the `verify` format, with `"expect"`, reproducible by seed;
//! or (`--raw-txs`) raw signed Ethereum transactions in `recover --raw`'s length-prefixed format,
//! as a node sees them, for `recover --raw` and `bench --raw`. With `--rows` the `verify` records
//! are written as packed binary rows, for `verify --rows`.

use chainsig_core::{rows, Algorithm};
use chainsig_eth::rawtx::corpus::Corpus;
use chainsig_eth::rawtx::frames::push_record;
use chainsig_testkit::{pool_public_keys, record, record_in_pool, GenSpec};
use clap::builder::RangedU64ValueParser;
use rayon::prelude::*;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// The most records one run writes (2³², about 1.4 TB of output).
const MAX_COUNT: u64 = 1 << 32;
/// The longest message: 1 MiB (a line of 2 MiB of hex).
const MAX_MSG_LEN: u64 = 1 << 20;
/// The largest signer set: 2²⁰ keys.
const MAX_SIGNERS: u64 = 1 << 20;
/// Output is built in memory a slice at a time; a slice holds at most this many bytes of lines
/// (and at most 16,384 lines), so long messages cannot make it large.
const SLICE_BYTES: u64 = 64 << 20;

#[derive(clap::Args)]
pub struct GenArgs {
    /// The signature algorithm of `verify` records (not with --raw-txs).
    #[arg(long, required_unless_present = "raw_txs", conflicts_with = "raw_txs")]
    alg: Option<Algorithm>,
    /// Write raw signed Ethereum transactions in the length-prefixed format of `recover --raw`
    /// (docs/raw-transactions.md) instead of `verify` records: mostly EIP-1559, some legacy and
    /// EIP-2930, a few blob and EIP-7702 transactions, signed by 16 keys drawn from the seed;
    /// the --invalid-ratio share malformed (cut, extended, bad v, r or s, high s, non-canonical
    /// RLP, unknown types). No "expect": `recover` on the CPU is the reference.
    #[arg(long, conflicts_with_all = ["signers", "signer_keys", "msg_len", "rows"])]
    raw_txs: bool,
    /// Write the records as packed binary rows (docs/integration.md, "The row layout"), as `verify --rows` reads them,
    /// instead of JSON Lines: the same records for a seed (message rows, the default hash and
    /// identifier), without `expect`.
    #[arg(long)]
    rows: bool,
    /// Number of records (at most 4294967296).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    count: u64,
    /// Share of records corrupted (the kinds are listed in docs/formats.md: flipped bits, r or s
    /// out of range, r and s swapped, another message, another signer's key, ...).
    #[arg(long, default_value_t = 0.1)]
    invalid_ratio: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Message length in bytes (at most 1048576).
    #[arg(long, default_value_t = 64,
          value_parser = RangedU64ValueParser::<usize>::new().range(0..=MAX_MSG_LEN))]
    msg_len: usize,
    /// Output file (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Sign with a fixed set of this many keys, record i by key i mod N (0: a fresh key per
    /// record, at most 1048576), as a permissioned chain's members do.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=MAX_SIGNERS))]
    signers: u64,
    /// With --signers: write the set's public keys here, one uncompressed SEC1 key in hex per
    /// line, as `chainsig verify --signers` reads them.
    #[arg(long)]
    signer_keys: Option<PathBuf>,
}

pub fn run(args: GenArgs) -> anyhow::Result<ExitCode> {
    if !(0.0..=1.0).contains(&args.invalid_ratio) {
        anyhow::bail!("--invalid-ratio must be between 0 and 1");
    }
    let sink: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", crate::input::shown(path)))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, sink);
    let Some(alg) = args.alg else {
        write_raw_txs(&args, &mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    };
    let spec = GenSpec {
        alg,
        seed: args.seed,
        invalid_ratio: args.invalid_ratio,
        msg_len: args.msg_len,
    };
    if args.signer_keys.is_some() && args.signers == 0 {
        anyhow::bail!("--signer-keys needs --signers N (N > 0)");
    }
    if let Some(path) = &args.signer_keys {
        let keys: String = pool_public_keys(&spec, args.signers)
            .iter()
            .map(|k| hex::encode(k) + "\n")
            .collect();
        std::fs::write(path, keys)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", crate::input::shown(path)))?;
    }
    // A line is the message and the key and signature in hex, and some JSON around them.
    let line_bytes = 2 * args.msg_len as u64 + 400;
    let slice = (SLICE_BYTES / line_bytes).clamp(1, 1 << 14);
    for start in (0..args.count).step_by(slice as usize) {
        let end = (start + slice).min(args.count);
        let lines: Vec<Vec<u8>> = (start..end)
            .into_par_iter()
            .map(|i| {
                let made = match args.signers {
                    0 => record(&spec, i),
                    n => record_in_pool(&spec, i, n),
                };
                if args.rows {
                    let mut row = Vec::with_capacity(made.msg.len() + 160);
                    rows::push_row(&mut row, &made.to_verify_record(true), false)
                        .map_err(|e| anyhow::anyhow!("record {i}: {e}"))?;
                    Ok(row)
                } else {
                    let mut line = made.to_json_line(i).into_bytes();
                    line.push(b'\n');
                    Ok(line)
                }
            })
            .collect::<anyhow::Result<_>>()?;
        for line in lines {
            out.write_all(&line)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Transactions per generator: each part of the output has a generator of its own, seeded from
/// the seed and the part's number, so parts are made in parallel and the file is the same for a
/// seed whatever the number of threads.
const TXS_PER_PART: u64 = 4096;

/// `--raw-txs`: `args.count` length-prefixed transactions, made a slice of parts at a time.
fn write_raw_txs(args: &GenArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let parts = args.count.div_ceil(TXS_PER_PART);
    // About 64 parts (2^18 transactions, some 40 MB) in memory at once.
    for first in (0..parts).step_by(64) {
        let framed: Vec<Vec<u8>> = (first..(first + 64).min(parts))
            .into_par_iter()
            .map(|part| {
                let n = TXS_PER_PART.min(args.count - part * TXS_PER_PART) as usize;
                let seed = args.seed ^ part.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut bytes = Vec::with_capacity(n * 160);
                for raw in Corpus::new(seed, 16).mixed(n, args.invalid_ratio) {
                    // The corpus stays far below the framing's 128 KiB limit.
                    push_record(&mut bytes, &raw)
                        .map_err(|e| anyhow::anyhow!("generated transaction: {e}"))?;
                }
                Ok(bytes)
            })
            .collect::<anyhow::Result<_>>()?;
        for bytes in framed {
            out.write_all(&bytes)?;
        }
    }
    Ok(())
}
