//! `chainsig eth …`: Ethereum transactions. Signing, keys and encodings live in `chainsig-eth`; this
//! module parses arguments, streams records and formats answers.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use chainsig_eth::bulk::bench_single;
use chainsig_eth::keystore::{self, Kdf};
use chainsig_eth::{decode_raw, ChainPolicy, PrivateKey, TxRequest};
use zeroize::Zeroizing;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum KdfChoice {
    /// scrypt n = 2^18, r = 8, p = 1 (geth's standard).
    Scrypt,
    /// scrypt n = 2^12, r = 8, p = 6 (geth's light).
    ScryptLight,
    /// PBKDF2-HMAC-SHA256, 262,144 iterations.
    Pbkdf2,
}

#[derive(clap::Subcommand)]
pub enum EthCommand {
    /// Sign one `eth_signTransaction` object per input line; prints
    /// `{"line":N,"raw":"0x…","hash":"0x…","from":"0x…"}` or `{"line":N,"error":"field: …"}`.
    Sign {
        /// File holding one private key in hex.
        #[arg(
            long,
            conflicts_with = "keystore",
            required_unless_present = "keystore"
        )]
        key_file: Option<PathBuf>,
        /// Keystore v3 file (needs --password-file).
        #[arg(long, requires = "password_file")]
        keystore: Option<PathBuf>,
        /// File holding the keystore's password (one trailing newline is ignored).
        #[arg(long, requires = "keystore")]
        password_file: Option<PathBuf>,
        /// Input file of JSON lines, or `-` (the default) for standard input.
        input: Option<PathBuf>,
        /// Chain id filled in where a request has none; a request naming another is refused.
        #[arg(long)]
        chain_id: Option<u64>,
        /// Sign without replay protection when a request asks for it (no chain id, or chain id 0).
        #[arg(long)]
        allow_unprotected: bool,
        /// Exit 1 when any line could not be signed (after answering every line).
        #[arg(long)]
        fail_on_invalid: bool,
    },
    /// Sign the user's transactions in bulk, on every core, in order: JSON Lines in the `eth sign`
    /// format (nonces filled per sender where absent); answers
    /// `{"line":N,"from","nonce","hash","raw"}` or `{"line":N,"error"}`. `--random` signs
    /// generated filler for tests and benchmarks instead.
    SignBulk(crate::sign_bulk::SignBulkArgs),
    /// Decode a raw signed transaction (hex) and print its fields and sender as JSON.
    Decode {
        /// The raw transaction, hex with or without 0x.
        raw: String,
    },
    /// One-core benchmark: sign COUNT EIP-1559 transactions on this thread; prints the rate and
    /// p50/p99/p99.9 latency.
    Bench {
        /// Transactions to sign.
        #[arg(long, default_value_t = 200_000)]
        count: u64,
    },
    /// Encrypt a raw hex key file into a keystore v3 file.
    KeystoreEncrypt {
        /// File holding one private key in hex.
        #[arg(long)]
        key_file: PathBuf,
        /// File holding the password (one trailing newline is ignored).
        #[arg(long)]
        password_file: PathBuf,
        /// Key derivation.
        #[arg(long, value_enum, default_value = "scrypt")]
        kdf: KdfChoice,
        /// Output keystore file.
        #[arg(long)]
        out: PathBuf,
    },
}

pub fn run(cmd: EthCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        EthCommand::Sign {
            key_file,
            keystore,
            password_file,
            input,
            chain_id,
            allow_unprotected,
            fail_on_invalid,
        } => {
            let key = match (key_file, keystore, password_file) {
                (Some(f), _, _) => PrivateKey::from_key_file(&f)?,
                (None, Some(k), Some(p)) => keystore::decrypt_files(&k, &p)?,
                _ => bail!("give --key-file, or --keystore with --password-file"),
            };
            let policy = ChainPolicy {
                chain_id,
                allow_unprotected,
            };
            sign_lines(&key, &policy, input.as_deref(), fail_on_invalid)
        }
        EthCommand::SignBulk(args) => crate::sign_bulk::run(args),
        EthCommand::Decode { raw } => {
            let text = raw.trim();
            let digits = text
                .strip_prefix("0x")
                .or_else(|| text.strip_prefix("0X"))
                .unwrap_or(text);
            let bytes = hex::decode(digits).map_err(|e| anyhow::anyhow!("tx: bad hex: {e}"))?;
            let decoded = decode_raw(&bytes)?;
            println!("{}", serde_json::to_string_pretty(&decoded.to_json())?);
            Ok(ExitCode::SUCCESS)
        }
        EthCommand::Bench { count } => {
            let key = PrivateKey::from_bytes(&[0x46; 32])?;
            bench_single(&key, count.min(10_000)); // warm up caches and the thread's context
                                                   // Batches of 2,000: on a shared machine the fastest batch shows the undisturbed speed.
            const BATCH: u64 = 2_000;
            let mut total = bench_single(&key, count.min(BATCH));
            let mut best = total.rate();
            let mut left = count.saturating_sub(BATCH);
            while left > 0 {
                let batch = bench_single(&key, left.min(BATCH));
                best = best.max(batch.rate());
                total.count += batch.count;
                total.elapsed += batch.elapsed;
                total
                    .latency_ns
                    .add(&batch.latency_ns)
                    .expect("same histogram bounds");
                left -= batch.count;
            }
            println!(
                "eth bench (1 thread, EIP-1559): {}; fastest {BATCH}-tx batch {best:.0} tx/s",
                total.summary()
            );
            Ok(ExitCode::SUCCESS)
        }
        EthCommand::KeystoreEncrypt {
            key_file,
            password_file,
            kdf,
            out,
        } => {
            let key = PrivateKey::from_key_file(&key_file)?;
            let password = Zeroizing::new(
                std::fs::read(&password_file)
                    .with_context(|| format!("cannot read {}", password_file.display()))?,
            );
            let kdf = match kdf {
                KdfChoice::Scrypt => Kdf::STANDARD,
                KdfChoice::ScryptLight => Kdf::LIGHT,
                KdfChoice::Pbkdf2 => Kdf::Pbkdf2 { c: 262_144 },
            };
            let document = keystore::encrypt(&key, keystore::trim_newline(&password), kdf)?;
            std::fs::write(&out, document)
                .with_context(|| format!("cannot write {}", out.display()))?;
            println!("{}", key.address());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Answers each line as it arrives (the output is flushed per line, so a pipe sees each answer
/// right after its request).
fn sign_lines(
    key: &PrivateKey,
    policy: &ChainPolicy,
    input: Option<&Path>,
    fail_on_invalid: bool,
) -> anyhow::Result<ExitCode> {
    let reader: Box<dyn BufRead> = match input {
        None => Box::new(BufReader::new(io::stdin().lock())),
        Some(p) if p == Path::new("-") => Box::new(BufReader::new(io::stdin().lock())),
        Some(p) => Box::new(BufReader::new(
            File::open(p).with_context(|| format!("cannot read {}", p.display()))?,
        )),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failed = false;
    for (index, line) in reader.split(b'\n').enumerate() {
        let line = line.context("reading input")?;
        let number = index + 1;
        let outcome = match std::str::from_utf8(&line) {
            Err(_) => Err(chainsig_eth::EthError::field("json", "line is not UTF-8")),
            Ok(text) if text.trim().is_empty() => {
                Err(chainsig_eth::EthError::field("json", "empty line"))
            }
            Ok(text) => {
                TxRequest::from_json_str(text).and_then(|request| request.sign_with(key, policy))
            }
        };
        match outcome {
            Ok(signed) => writeln!(
                out,
                "{{\"line\":{number},\"raw\":\"0x{}\",\"hash\":\"{}\",\"from\":\"{}\"}}",
                hex::encode(&signed.raw),
                signed.hash,
                signed.from.to_checksum(None)
            )?,
            Err(e) => {
                failed = true;
                writeln!(
                    out,
                    "{{\"line\":{number},\"error\":{}}}",
                    serde_json::to_string(&e.to_string())?
                )?
            }
        }
        out.flush()?;
    }
    Ok(if fail_on_invalid && failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
