//! `chainsig recover`: Ethereum senders from raw signed transactions or bare signatures.

use crate::{backends, input};
use anyhow::Context;
use chainsig_core::record::{parse_recover_line, RecoverRecord};
use chainsig_core::{RecordError, RecoverItem, Recovered};
use rayon::prelude::*;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RecoverArgs {
    /// auto, cpu or cuda.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Input file (default or `-`: standard input).
    file: Option<PathBuf>,
}

/// Each line, resolved as far as the host can take it.
enum Pending {
    Done(Result<Recovered, RecordError>),
    /// A bare signature waiting for the backend.
    Signature(RecoverItem),
}

pub fn run(args: RecoverArgs) -> anyhow::Result<ExitCode> {
    let registry = backends::registry(&args.backend);
    let input = input::open(args.file.as_deref())?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut total = 0u64;
    for chunk in input::chunks(input, 1 << 16) {
        let chunk = chunk.context("reading input")?;
        let pending: Vec<Pending> = chunk
            .par_iter()
            .map(|(_, text)| resolve_on_host(text))
            .collect();
        let items: Vec<RecoverItem> = pending
            .iter()
            .filter_map(|p| {
                if let Pending::Signature(item) = p {
                    Some(*item)
                } else {
                    None
                }
            })
            .collect();
        let backend = registry.select(
            &args.backend,
            chainsig_core::Algorithm::Secp256k1,
            items.len(),
        )?;
        let mut recovered = backend.recover_batch(&items)?.into_iter();
        for ((number, _), p) in chunk.iter().zip(pending) {
            let result = match p {
                Pending::Done(result) => result,
                Pending::Signature(_) => recovered.next().flatten().ok_or_else(|| {
                    RecordError::new("sig", "no signer recovers from this signature")
                }),
            };
            let line = match result {
                Ok(rec) => serde_json::json!({
                    "line": number,
                    "address": checksum_address(&rec.address),
                    "pubkey": hex::encode(rec.pubkey),
                }),
                Err(e) => serde_json::json!({"line": number, "error": e.to_string()}),
            };
            writeln!(out, "{line}")?;
            total += 1;
        }
    }
    out.flush()?;
    eprintln!("recovered {total} records");
    Ok(ExitCode::SUCCESS)
}

fn resolve_on_host(text: &Result<String, String>) -> Pending {
    let text = match text {
        Ok(t) => t,
        Err(reason) => return Pending::Done(Err(RecordError::new("", reason.clone()))),
    };
    match parse_recover_line(text) {
        Err(e) => Pending::Done(Err(e)),
        Ok(RecoverRecord::Signature(item)) => Pending::Signature(item),
        // Transactions are decoded (and their sender recovered) by the eth crate on the host.
        Ok(RecoverRecord::Transaction(raw)) => Pending::Done(
            chainsig_eth::decode_raw(&raw)
                .map(|tx| Recovered {
                    pubkey: tx.public_key,
                    address: tx.from.into_array(),
                })
                .map_err(|e| RecordError::new("", e.to_string())),
        ),
    }
}

/// EIP-55 mixed-case checksum encoding (alloy's).
fn checksum_address(address: &[u8; 20]) -> String {
    alloy_primitives::Address::from(*address).to_checksum(None)
}
