//! `chainsig eth account new | import | list` and `chainsig eth mnemonic new`: keys kept as geth
//! and clef keep them (`chainsig_eth::keydir`), so a key directory moves between the tools.
//!
//! `new` and `import` print the account's address on standard output and the file's path on
//! standard error; `list` prints geth's lines, `Account #i: {address} keystore://path`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use chainsig_eth::hd::{self, HdPath};
use chainsig_eth::keydir;
use chainsig_eth::PrivateKey;

use crate::eth::KdfChoice;
use crate::keysource::PasswordArgs;

#[derive(clap::Subcommand)]
pub enum AccountCommand {
    /// Create a random key and store it encrypted in the key directory, in a file named as geth
    /// names it (mode 0600); prints the address.
    New {
        #[command(flatten)]
        dir: KeystoreDir,
    },
    /// Encrypt the hex private key of KEYFILE into the key directory (refused when the directory
    /// holds that account already); prints the address.
    Import {
        /// File holding one private key in hex.
        keyfile: PathBuf,
        #[command(flatten)]
        dir: KeystoreDir,
    },
    /// List the accounts of the key directory, in file name order, without decrypting them.
    List {
        /// The key directory.
        #[arg(long)]
        keystore: PathBuf,
    },
}

/// Where and how a new key file is written.
#[derive(clap::Args)]
pub struct KeystoreDir {
    /// The key directory (created with mode 0700 when missing).
    #[arg(long)]
    keystore: PathBuf,
    #[command(flatten)]
    password: PasswordArgs,
    /// Key derivation of the new file.
    #[arg(long, value_enum, default_value = "scrypt")]
    kdf: KdfChoice,
}

#[derive(clap::Subcommand)]
pub enum MnemonicCommand {
    /// A new BIP-39 English mnemonic from the operating system's randomness, written to --out.
    New {
        /// Words in the phrase.
        #[arg(long, value_enum, default_value = "12")]
        words: WordCount,
        /// File to create (mode 0600, never over an existing file), or `-` for standard output.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum WordCount {
    /// 128 bits of entropy.
    #[value(name = "12")]
    Twelve,
    /// 256 bits of entropy.
    #[value(name = "24")]
    TwentyFour,
}

pub fn run_account(cmd: AccountCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        AccountCommand::New { dir } => store(&PrivateKey::random(), &dir),
        AccountCommand::Import { keyfile, dir } => {
            store(&PrivateKey::from_key_file(&keyfile)?, &dir)
        }
        AccountCommand::List { keystore } => {
            let accounts = keydir::accounts(&keystore)?;
            for (file, reason) in &accounts.unreadable {
                eprintln!("skipping {}: {reason}", file.display());
            }
            let mut out = std::io::stdout().lock();
            for (index, (file, address)) in accounts.found.iter().enumerate() {
                writeln!(
                    out,
                    "Account #{index}: {{{}}} keystore://{}",
                    hex::encode(address),
                    absolute(file).display()
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn store(key: &PrivateKey, dir: &KeystoreDir) -> anyhow::Result<ExitCode> {
    let password = dir
        .password
        .require("Password for the new key file: ", true)?;
    let path = keydir::store(&dir.keystore, key, password.as_bytes(), dir.kdf.kdf())?;
    println!("{}", key.address());
    eprintln!("Path of the secret key file: {}", absolute(&path).display());
    Ok(ExitCode::SUCCESS)
}

pub fn run_mnemonic(cmd: MnemonicCommand) -> anyhow::Result<ExitCode> {
    let MnemonicCommand::New { words, out } = cmd;
    let phrase = hd::generate_mnemonic(match words {
        WordCount::Twelve => 12,
        WordCount::TwentyFour => 24,
    })?;
    let mut line = zeroize::Zeroizing::new(phrase.as_bytes().to_vec());
    line.push(b'\n');
    if out == Path::new("-") {
        std::io::stdout()
            .lock()
            .write_all(&line)
            .context("writing the mnemonic")?;
    } else {
        keydir::write_new(&out, &line)?;
    }
    let first = hd::mnemonic_keys(&phrase, "", &HdPath::parse(hd::DEFAULT_PATH)?, 1)?;
    eprintln!(
        "first account ({}): {}",
        hd::DEFAULT_PATH,
        first[0].address()
    );
    Ok(ExitCode::SUCCESS)
}

/// The path made absolute against the working directory (no symbolic link resolved), as geth
/// shows a key file's URL.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
