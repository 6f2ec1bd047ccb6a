//! `chainsig eth …`: Ethereum transactions. Signing, keys and encodings live in `chainsig-eth`; this
//! module parses arguments, streams records and formats answers.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use chainsig_eth::bulk::bench_single;
use chainsig_eth::keydir;
use chainsig_eth::keystore::{self, Kdf};
use chainsig_eth::{decode_raw, ChainPolicy, PrivateKey, TxRequest};

use crate::account::{self, AccountCommand, MnemonicCommand};
use crate::keysource::{MnemonicArgs, PasswordArgs};

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum KdfChoice {
    /// scrypt n = 2^18, r = 8, p = 1 (geth's standard).
    Scrypt,
    /// scrypt n = 2^12, r = 8, p = 6 (geth's light).
    ScryptLight,
    /// PBKDF2-HMAC-SHA256, 262,144 iterations.
    Pbkdf2,
}

impl KdfChoice {
    pub fn kdf(self) -> Kdf {
        match self {
            KdfChoice::Scrypt => Kdf::STANDARD,
            KdfChoice::ScryptLight => Kdf::LIGHT,
            KdfChoice::Pbkdf2 => Kdf::Pbkdf2 { c: 262_144 },
        }
    }
}

#[derive(clap::Subcommand)]
pub enum EthCommand {
    /// Sign one `eth_signTransaction` object per input line; prints
    /// `{"line":N,"raw":"0x…","hash":"0x…","from":"0x…"}` or `{"line":N,"error":"field: …"}`.
    #[command(group(
        clap::ArgGroup::new("key_source")
            .required(true)
            .args(["key_file", "keystore", "mnemonic_file"])
    ))]
    Sign {
        /// File holding one private key in hex.
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// Keystore v3 file (chainsig's or geth's); its password from --password-file,
        /// --password-env or, on a terminal, a prompt.
        #[arg(long)]
        keystore: Option<PathBuf>,
        #[command(flatten)]
        password: PasswordArgs,
        #[command(flatten)]
        mnemonic: MnemonicArgs,
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
    /// Encrypt a raw hex key file into a keystore v3 file (mode 0600; an existing file is
    /// never overwritten).
    KeystoreEncrypt {
        /// File holding one private key in hex.
        #[arg(long)]
        key_file: PathBuf,
        #[command(flatten)]
        password: PasswordArgs,
        /// Key derivation.
        #[arg(long, value_enum, default_value = "scrypt")]
        kdf: KdfChoice,
        /// Output keystore file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Keys in a geth-style key directory (`UTC--…` files): new, import, list.
    #[command(subcommand)]
    Account(AccountCommand),
    /// BIP-39 mnemonics: new.
    #[command(subcommand)]
    Mnemonic(MnemonicCommand),
}

pub fn run(cmd: EthCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        EthCommand::Sign {
            key_file,
            keystore,
            password,
            mnemonic,
            input,
            chain_id,
            allow_unprotected,
            fail_on_invalid,
        } => {
            if keystore.is_none() && password.is_given() {
                bail!("--password-file, --password-env: only with --keystore");
            }
            let key = match (key_file, keystore) {
                (Some(f), _) => PrivateKey::from_key_file(&f)?,
                (None, Some(k)) => {
                    let password = password.require("Keystore password: ", false)?;
                    keystore::decrypt_file(&k, password.as_bytes())
                        .with_context(|| format!("{}", k.display()))?
                }
                (None, None) => mnemonic.keys(1)?.pop().context("mnemonic-file: no key")?,
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
            password,
            kdf,
            out,
        } => {
            let key = PrivateKey::from_key_file(&key_file)?;
            if out.exists() {
                bail!("out: {}: exists; refusing to overwrite it", out.display());
            }
            let password = password.require("Password for the keystore: ", true)?;
            let document = keystore::encrypt(&key, password.as_bytes(), kdf.kdf())?;
            keydir::write_new(&out, document.as_bytes())?;
            println!("{}", key.address());
            Ok(ExitCode::SUCCESS)
        }
        EthCommand::Account(cmd) => account::run_account(cmd),
        EthCommand::Mnemonic(cmd) => account::run_mnemonic(cmd),
    }
}

/// Lines signed together at most: from a file, groups of eight of them sign in AVX-512 IFMA lanes
/// (`chainsig_eth::signing::sign_prehash_batch`); from a pipe, a chunk is whatever has arrived,
/// so a line that comes alone is answered at once.
const SIGN_CHUNK: usize = 1024;

/// Answers the lines in input order, chunk by chunk (see [`SIGN_CHUNK`]); the output is flushed
/// after each chunk, so a pipe sees each answer right after its request. The signatures of a
/// chunk are made in one batch, byte for byte those of one-at-a-time signing (RFC 6979).
fn sign_lines(
    key: &PrivateKey,
    policy: &ChainPolicy,
    input: Option<&Path>,
    fail_on_invalid: bool,
) -> anyhow::Result<ExitCode> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failed = false;
    let mut scratch = Vec::with_capacity(256);
    for chunk in crate::input::text_chunks(crate::input::open(input)?, SIGN_CHUNK) {
        let chunk = chunk.context("reading input")?;
        // Each line's transaction, checked; the valid ones signed together, in order.
        let checked = (0..chunk.len())
            .map(|k| match chunk.line(k) {
                Err(reason) if reason == crate::input::TOO_LONG => {
                    Err(chainsig_eth::EthError::field("json", reason))
                }
                Err(_) => Err(chainsig_eth::EthError::field("json", "line is not UTF-8")),
                Ok(text) if text.trim().is_empty() => {
                    Err(chainsig_eth::EthError::field("json", "empty line"))
                }
                Ok(text) => TxRequest::from_json_str(text)
                    .and_then(|request| request.typed_for(key, policy))
                    .map(|tx| (tx, key)),
            })
            .collect();
        let outcomes = chainsig_eth::tx::sign_checked(checked, &mut scratch);
        for (k, outcome) in outcomes.into_iter().enumerate() {
            let number = chunk.number(k);
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
        }
        out.flush()?;
    }
    Ok(if fail_on_invalid && failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
