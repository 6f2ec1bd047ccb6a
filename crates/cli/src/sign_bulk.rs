//! `chainsig eth sign-bulk`: the user's transactions (JSON Lines in the `eth sign` format) signed
//! on every core, in order, nonces filled per sender; or, with `--random`, generated filler for
//! tests and benchmarks, never for a public network's chain id.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use chainsig_eth::batch::{parse_line, sign_batch, NonceBook};
use chainsig_eth::bulk::{check_filler_chain, sign_bulk, BulkConfig, FillerType};
use chainsig_eth::{ChainPolicy, PrivateKey, Signer};

use crate::keysource::MnemonicArgs;

/// Lines signed per batch: enough to keep every core busy, small enough to stream.
const LINES_PER_BATCH: usize = 4096;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum BulkType {
    /// EIP-1559 (type 2).
    #[value(name = "1559", alias = "eip1559")]
    Eip1559,
    /// EIP-2930 (type 1).
    #[value(name = "2930", alias = "eip2930")]
    Eip2930,
    /// Legacy with EIP-155 replay protection.
    #[value(name = "legacy")]
    Legacy,
}

#[derive(clap::Args)]
pub struct SignBulkArgs {
    /// The mnemonic whose wallets sign (required): the key at --hd-path and the W − 1 after it.
    #[command(flatten)]
    mnemonic: MnemonicArgs,
    /// Number of wallets W; a record's `from` picks one, and may be absent only when W is 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    wallets: u32,
    /// Chain id: filled in where a record has none; a record naming another is refused.
    /// Required with --random.
    #[arg(long)]
    chain_id: Option<u64>,
    /// Sign without replay protection when a record asks for it (no chain id, or chain id 0).
    #[arg(long)]
    allow_unprotected: bool,
    /// The nonce of each sender's first record without one (its account's next nonce on chain);
    /// the following ones count up from there, or from a record's own nonce.
    #[arg(long, default_value_t = 0)]
    first_nonce: u64,
    /// Input: JSON Lines in the `eth sign` format, a file or `-` (the default) for standard input.
    input: Option<PathBuf>,
    /// Output file of JSON lines (`-`: standard output).
    #[arg(long)]
    out: PathBuf,
    /// Signing threads (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// Exit 1 when any record could not be signed (after writing every answer).
    #[arg(long)]
    fail_on_invalid: bool,
    /// Print rate and latency percentiles to stderr.
    #[arg(long)]
    stats: bool,
    /// Sign generated filler (random recipients and values) instead of input, for tests and
    /// benchmarks; refuses the chain ids of public networks.
    #[arg(
        long,
        requires = "count",
        requires = "chain_id",
        conflicts_with = "input"
    )]
    random: bool,
    /// With --random: number of transactions.
    #[arg(long, requires = "random", value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    count: Option<u64>,
    /// With --random: transaction type.
    #[arg(long = "type", value_enum, requires = "random", default_value = "1559")]
    tx_type: BulkType,
    /// With --random: seed of the filler fields.
    #[arg(long, requires = "random", default_value_t = 1)]
    seed: u64,
}

pub fn run(args: SignBulkArgs) -> anyhow::Result<ExitCode> {
    if args.random {
        // Refused before the mnemonic is read: nothing random is ever signed for a public chain.
        check_filler_chain(args.chain_id.expect("clap requires --chain-id"))?;
    }
    if args.mnemonic.mnemonic_file.is_none() {
        bail!("--mnemonic-file: required (the wallets that sign)");
    }
    let keys = args.mnemonic.keys(args.wallets)?;
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |t| t as usize,
    );
    let out: Box<dyn Write> = if args.out == Path::new("-") {
        Box::new(BufWriter::new(io::stdout().lock()))
    } else {
        let file = File::create_new(&args.out).with_context(|| {
            format!(
                "--out: cannot create {} (an existing file is never overwritten)",
                args.out.display()
            )
        })?;
        Box::new(BufWriter::with_capacity(1 << 20, file))
    };
    if args.random {
        return random(&args, &keys, threads, out);
    }
    let mut signer = Signer::new();
    for key in keys {
        signer.add_key(key);
    }
    signer.set_policy(ChainPolicy {
        chain_id: args.chain_id,
        allow_unprotected: args.allow_unprotected,
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("cannot start the signing threads")?;
    sign_input(&args, &signer, &pool, out)
}

/// The user's path: batches of lines, parsed and signed on every core, answered in order.
fn sign_input(
    args: &SignBulkArgs,
    signer: &Signer,
    pool: &rayon::ThreadPool,
    mut out: Box<dyn Write>,
) -> anyhow::Result<ExitCode> {
    use rayon::prelude::*;
    let (mut reader, size): (Box<dyn BufRead>, Option<u64>) = match &args.input {
        None => (Box::new(BufReader::new(io::stdin().lock())), None),
        Some(p) if p == Path::new("-") => (Box::new(BufReader::new(io::stdin().lock())), None),
        Some(p) => {
            let file = crate::input::open_file(p)?;
            let size = file.metadata().ok().map(|m| m.len());
            (Box::new(BufReader::with_capacity(1 << 20, file)), size)
        }
    };
    let bar = progress_bar(size);
    let started = std::time::Instant::now();
    let mut book = NonceBook::starting_at(args.first_nonce);
    let (mut line_number, mut signed_count, mut failed, mut bytes_read) =
        (0usize, 0u64, 0u64, 0u64);
    loop {
        // Each line, or `None` for one past the input's line limit (read past, not kept).
        let mut batch: Vec<Option<Vec<u8>>> = Vec::with_capacity(LINES_PER_BATCH);
        while batch.len() < LINES_PER_BATCH {
            let mut line = Vec::new();
            match crate::input::read_bounded_line(&mut reader, &mut line)
                .context("reading input")?
            {
                None => break,
                Some(whole) => {
                    bytes_read += line.len() as u64 + 1;
                    batch.push(whole.then_some(line));
                }
            }
        }
        if batch.is_empty() {
            break;
        }
        let results = pool.install(|| {
            let parsed = batch
                .par_iter()
                .map(|line| match line {
                    Some(line) => parse_line(line),
                    None => Err(chainsig_eth::EthError::field(
                        "json",
                        crate::input::TOO_LONG,
                    )),
                })
                .collect();
            sign_batch(signer, parsed, &mut book)
        });
        // A batch's answers are written whole, or not at all on SIGTERM (crate::stop).
        let _writing = crate::stop::writing();
        for result in results {
            line_number += 1;
            match result {
                Ok(signed) => {
                    signed_count += 1;
                    writeln!(
                        out,
                        "{{\"line\":{line_number},\"from\":\"{}\",\"nonce\":{},\"hash\":\"{}\",\"raw\":\"0x{}\"}}",
                        signed.from.to_checksum(None),
                        signed.nonce,
                        signed.hash,
                        hex::encode(&signed.raw)
                    )?;
                }
                Err(e) => {
                    failed += 1;
                    writeln!(
                        out,
                        "{{\"line\":{line_number},\"error\":{}}}",
                        serde_json::to_string(&e.to_string())?
                    )?;
                }
            }
        }
        out.flush()?;
        if let Some(bar) = &bar {
            bar.set_position(if size.is_some() {
                bytes_read
            } else {
                line_number as u64
            });
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let elapsed = started.elapsed().as_secs_f64();
    eprintln!(
        "signed {signed_count} of {line_number} records in {elapsed:.3} s ({:.0} tx/s); {failed} refused",
        signed_count as f64 / elapsed.max(1e-9)
    );
    if line_number == 0 {
        bail!("no records in the input: nothing was signed");
    }
    Ok(if args.fail_on_invalid && failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn progress_bar(size: Option<u64>) -> Option<indicatif::ProgressBar> {
    io::stderr().is_terminal().then(|| {
        let (bar, template) = match size {
            Some(bytes) => (
                indicatif::ProgressBar::new(bytes),
                "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            ),
            None => (
                indicatif::ProgressBar::no_length(),
                "{pos} records {per_sec}",
            ),
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(template).expect("valid progress template"),
        );
        bar
    })
}

/// `--random`: generated filler, signed by [`sign_bulk`].
fn random(
    args: &SignBulkArgs,
    keys: &[PrivateKey],
    threads: usize,
    out: Box<dyn Write>,
) -> anyhow::Result<ExitCode> {
    let count = args.count.expect("clap requires --count");
    let config = BulkConfig {
        count,
        chain_id: args.chain_id.expect("clap requires --chain-id"),
        tx_type: match args.tx_type {
            BulkType::Eip1559 => FillerType::Eip1559,
            BulkType::Eip2930 => FillerType::Eip2930,
            BulkType::Legacy => FillerType::Legacy,
        },
        threads,
        seed: args.seed,
    };
    let bar = io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(count);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} tx {per_sec} eta {eta}")
                .expect("valid progress template"),
        );
        bar
    });
    let mut progress = |done: u64| {
        if let Some(bar) = &bar {
            bar.set_position(done);
        }
    };
    let result = sign_bulk(keys, &config, out, &mut progress)
        .with_context(|| format!("writing {}", args.out.display()))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if args.stats {
        eprintln!("sign-bulk ({threads} threads): {}", result.summary());
    } else {
        eprintln!(
            "signed {} transactions in {:.3} s ({:.0} tx/s)",
            result.count,
            result.elapsed.as_secs_f64(),
            result.rate()
        );
    }
    Ok(ExitCode::SUCCESS)
}
