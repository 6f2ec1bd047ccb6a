//! `chainsig gen`: signed records in the `verify` format, with `"expect"`, reproducible by seed.

use chainsig_core::Algorithm;
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
    #[arg(long)]
    alg: Algorithm,
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
    let spec = GenSpec {
        alg: args.alg,
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
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    let sink: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, sink);
    // A line is the message and the key and signature in hex, and some JSON around them.
    let line_bytes = 2 * args.msg_len as u64 + 400;
    let slice = (SLICE_BYTES / line_bytes).clamp(1, 1 << 14);
    for start in (0..args.count).step_by(slice as usize) {
        let end = (start + slice).min(args.count);
        let lines: Vec<String> = (start..end)
            .into_par_iter()
            .map(|i| match args.signers {
                0 => record(&spec, i).to_json_line(i),
                n => record_in_pool(&spec, i, n).to_json_line(i),
            })
            .collect();
        for line in lines {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
