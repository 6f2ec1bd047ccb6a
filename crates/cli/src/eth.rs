//! `chainsig eth …`: Ethereum transactions. Signing, keys and encodings live in `chainsig-eth`; this
//! module parses arguments, streams records and formats answers.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use chainsig_eth::bulk::{bench_single, sign_bulk, BulkConfig};
use chainsig_eth::hd::EthWallet;
use chainsig_eth::keydir;
use chainsig_eth::keystore::{self, Kdf};
use chainsig_eth::{decode_raw, PrivateKey, TxRequest, TxType};
use zeroize::Zeroizing;

use crate::account::{self, AccountCommand, MnemonicCommand};
use crate::keysource::{MnemonicArgs, PasswordArgs};

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
    },
    /// Sign N generated transactions from the wallets m/44'/60'/0'/0/i of a mnemonic; writes JSON lines
    /// `{"from","nonce","hash","raw"}` (wallet k mod W, nonce k div W, round robin).
    SignBulk {
        /// File holding the BIP-39 mnemonic (English).
        #[arg(long)]
        mnemonic_file: PathBuf,
        /// File holding the BIP-39 passphrase (default: none).
        #[arg(long)]
        passphrase_file: Option<PathBuf>,
        /// Number of wallets W.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        wallets: u32,
        /// Number of transactions N.
        #[arg(long)]
        count: u64,
        /// Chain id.
        #[arg(long)]
        chain_id: u64,
        /// Transaction type.
        #[arg(long = "type", value_enum)]
        tx_type: BulkType,
        /// Signing threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Seed of the pseudo-random filler fields (to, value, fees).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
        /// Print rate and latency percentiles (p50, p99, p99.9) to stderr.
        #[arg(long)]
        stats: bool,
    },
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
            sign_lines(&key, input.as_deref())
        }
        EthCommand::SignBulk {
            mnemonic_file,
            passphrase_file,
            wallets,
            count,
            chain_id,
            tx_type,
            threads,
            seed,
            out,
            stats,
        } => {
            let phrase = read_secret_text(&mnemonic_file, "mnemonic-file")?;
            let passphrase = match passphrase_file {
                Some(p) => read_secret_text(&p, "passphrase-file")?,
                None => Zeroizing::new(String::new()),
            };
            let wallet = EthWallet::from_mnemonic(&phrase, &passphrase)?;
            let keys = (0..wallets)
                .map(|i| wallet.key(i))
                .collect::<Result<Vec<_>, _>>()?;
            let threads = threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
                .max(1);
            let config = BulkConfig {
                count,
                chain_id,
                tx_type: match tx_type {
                    BulkType::Eip1559 => TxType::Eip1559,
                    BulkType::Eip2930 => TxType::Eip2930,
                    BulkType::Legacy => TxType::Legacy,
                },
                threads,
                seed,
            };
            let file =
                File::create(&out).with_context(|| format!("cannot create {}", out.display()))?;
            let writer = BufWriter::with_capacity(1 << 20, file);
            let bar = io::stderr().is_terminal().then(|| {
                let bar = indicatif::ProgressBar::new(count);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{bar:40} {pos}/{len} tx {per_sec} eta {eta}",
                    )
                    .expect("valid progress template"),
                );
                bar
            });
            let mut progress = |done: u64| {
                if let Some(bar) = &bar {
                    bar.set_position(done);
                }
            };
            let result = sign_bulk(&keys, &config, writer, &mut progress)
                .with_context(|| format!("writing {}", out.display()))?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            if stats {
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

pub(crate) fn read_secret_text(path: &Path, what: &str) -> anyhow::Result<Zeroizing<String>> {
    let mut text = Zeroizing::new(String::new());
    File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .with_context(|| format!("{what}: cannot read {}", path.display()))?;
    Ok(text)
}

fn sign_lines(key: &PrivateKey, input: Option<&Path>) -> anyhow::Result<ExitCode> {
    let reader: Box<dyn BufRead> = match input {
        None => Box::new(BufReader::new(io::stdin().lock())),
        Some(p) if p == Path::new("-") => Box::new(BufReader::new(io::stdin().lock())),
        Some(p) => Box::new(BufReader::new(
            File::open(p).with_context(|| format!("cannot read {}", p.display()))?,
        )),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for (index, line) in reader.split(b'\n').enumerate() {
        let line = line.context("reading input")?;
        let number = index + 1;
        let outcome = match std::str::from_utf8(&line) {
            Err(_) => Err(chainsig_eth::EthError::field("json", "line is not UTF-8")),
            Ok(text) if text.trim().is_empty() => {
                Err(chainsig_eth::EthError::field("json", "empty line"))
            }
            Ok(text) => TxRequest::from_json_str(text).and_then(|request| request.sign(key)),
        };
        match outcome {
            Ok(signed) => writeln!(
                out,
                "{{\"line\":{number},\"raw\":\"0x{}\",\"hash\":\"{}\",\"from\":\"{}\"}}",
                hex::encode(&signed.raw),
                signed.hash,
                signed.from.to_checksum(None)
            )?,
            Err(e) => writeln!(
                out,
                "{{\"line\":{number},\"error\":{}}}",
                serde_json::to_string(&e.to_string())?
            )?,
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
