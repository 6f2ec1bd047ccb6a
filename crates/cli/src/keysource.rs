//! Key and password arguments shared by `eth sign`, `eth account`, `eth keystore-encrypt` and
//! `serve`: a password from a file (`--password-file`), an environment variable
//! (`--password-env`) or, when standard input is a terminal and neither is given, a prompt
//! without echo (`rpassword`); and keys from a BIP-39 mnemonic file along a BIP-32 path.
//!
//! Passwords, phrases and passphrases stay in buffers that wipe themselves
//! (`chainsig_eth::password::Password`, `Zeroizing`).

use std::fs::File;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use chainsig_eth::hd::{self, HdPath};
use chainsig_eth::password::Password;
use chainsig_eth::PrivateKey;
use zeroize::Zeroizing;

/// Where a keystore password comes from.
#[derive(clap::Args)]
pub struct PasswordArgs {
    /// File holding the keystore password (one trailing newline is ignored).
    #[arg(long, conflicts_with = "password_env")]
    pub password_file: Option<PathBuf>,
    /// Environment variable holding the keystore password (taken exactly).
    #[arg(long, value_name = "VAR")]
    pub password_env: Option<String>,
}

impl PasswordArgs {
    /// Whether `--password-file` or `--password-env` was given.
    pub fn is_given(&self) -> bool {
        self.password_file.is_some() || self.password_env.is_some()
    }

    /// The password of `--password-file` or `--password-env`, if either was given.
    pub fn given(&self) -> anyhow::Result<Option<Password>> {
        Ok(match (&self.password_file, &self.password_env) {
            (Some(file), _) => Some(Password::from_file(file, "password-file")?),
            (None, Some(name)) => Some(Password::from_env(name)?),
            (None, None) => None,
        })
    }

    /// The given password or, when standard input is a terminal, one asked there (twice with
    /// `confirm`, for a new key); otherwise an error saying how to give one.
    pub fn require(&self, prompt: &str, confirm: bool) -> anyhow::Result<Password> {
        if let Some(password) = self.given()? {
            return Ok(password);
        }
        if !std::io::stdin().is_terminal() {
            bail!("password: give --password-file or --password-env (standard input is not a terminal to ask on)");
        }
        ask(prompt, confirm)
    }
}

/// Asks for a password on the terminal without echo.
pub fn ask(prompt: &str, confirm: bool) -> anyhow::Result<Password> {
    let first =
        Zeroizing::new(rpassword::prompt_password(prompt).context("password: cannot read")?);
    if confirm {
        let again = Zeroizing::new(
            rpassword::prompt_password("Repeat the password: ").context("password: cannot read")?,
        );
        if *first != *again {
            bail!("password: the two entries differ");
        }
    }
    Ok(Password::new(Zeroizing::new(first.as_bytes().to_vec())))
}

/// Keys from a BIP-39 mnemonic.
#[derive(clap::Args)]
pub struct MnemonicArgs {
    /// File holding a BIP-39 mnemonic (English): its key at --hd-path signs.
    #[arg(long)]
    pub mnemonic_file: Option<PathBuf>,
    /// BIP-32 path of the mnemonic's key [default: m/44'/60'/0'/0/0].
    #[arg(long, requires = "mnemonic_file")]
    pub hd_path: Option<String>,
    /// File holding the mnemonic's BIP-39 passphrase (default: none; one trailing newline is
    /// ignored, as for password files).
    #[arg(long, requires = "mnemonic_file")]
    pub passphrase_file: Option<PathBuf>,
}

impl MnemonicArgs {
    /// The keys at --hd-path and the `count - 1` after it along its last step; none without
    /// --mnemonic-file.
    pub fn keys(&self, count: u32) -> anyhow::Result<Vec<PrivateKey>> {
        let Some(file) = &self.mnemonic_file else {
            return Ok(Vec::new());
        };
        let path = HdPath::parse(self.hd_path.as_deref().unwrap_or(hd::DEFAULT_PATH))?;
        let phrase = read_secret_text(file, "mnemonic-file")?;
        let passphrase = match &self.passphrase_file {
            Some(p) => {
                let text = read_secret_text(p, "passphrase-file")?;
                let kept = text.strip_suffix('\n').unwrap_or(&text);
                Zeroizing::new(kept.strip_suffix('\r').unwrap_or(kept).to_owned())
            }
            None => Zeroizing::new(String::new()),
        };
        Ok(hd::mnemonic_keys(&phrase, &passphrase, &path, count)?)
    }
}

/// The whole text of a file holding a secret, in a buffer that wipes itself.
pub fn read_secret_text(path: &Path, what: &str) -> anyhow::Result<Zeroizing<String>> {
    let mut text = Zeroizing::new(String::new());
    File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .with_context(|| format!("{what}: cannot read {}", crate::input::shown(path)))?;
    Ok(text)
}
