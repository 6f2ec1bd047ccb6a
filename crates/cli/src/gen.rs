//! `chainsig gen`: signed records in the `verify` format, with `"expect"`, reproducible by seed.

use chainsig_core::{der, Algorithm};
use chainsig_cpu::generate::{pool_public_keys, record, record_in_pool, GenSpec, GeneratedRecord};
use rayon::prelude::*;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct GenArgs {
    #[arg(long)]
    alg: Algorithm,
    #[arg(long)]
    count: u64,
    /// Share of records corrupted (flipped bits in r, s, message or key; r or s out of range;
    /// another signer's key).
    #[arg(long, default_value_t = 0.1)]
    invalid_ratio: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Message length in bytes.
    #[arg(long, default_value_t = 64)]
    msg_len: usize,
    /// Output file (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Sign with a fixed set of this many keys, record i by key i mod N (0: a fresh key per
    /// record), as a permissioned chain's members do.
    #[arg(long, default_value_t = 0)]
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
    const CHUNK: u64 = 1 << 14;
    for start in (0..args.count).step_by(CHUNK as usize) {
        let end = (start + CHUNK).min(args.count);
        let lines: Vec<String> = (start..end)
            .into_par_iter()
            .map(|i| match args.signers {
                0 => to_line(&record(&spec, i), i),
                n => to_line(&record_in_pool(&spec, i, n), i),
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

/// One record as a JSON line; every fourth signature is written as DER, the rest as r‖s.
fn to_line(rec: &GeneratedRecord, index: u64) -> String {
    let sig_field = if index % 4 == 3 {
        let (r, s) = rec.sig.split_at(32);
        format!(
            r#""sig_der":"{}""#,
            hex::encode(der::encode_signature(
                r.try_into().unwrap(),
                s.try_into().unwrap()
            ))
        )
    } else {
        format!(r#""sig":"{}""#, hex::encode(rec.sig))
    };
    format!(
        r#"{{"alg":"{}","pubkey":"{}","msg":"{}",{sig_field},"expect":{}}}"#,
        rec.alg,
        hex::encode(&rec.pubkey),
        hex::encode(&rec.msg),
        rec.expect_valid()
    )
}
