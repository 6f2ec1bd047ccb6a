//! Keystore directories as geth and clef keep them: one Web3 Secret Storage file per key, named
//! `UTC--<time>--<address>`, where the time is the UTC creation time written ISO 8601-like with
//! `-` for `:` and nanoseconds (`2016-03-22T12-57-55.920751759Z`) and the address is 40 lowercase
//! hex digits without `0x`. chainsig also reads its own older layout, `NAME.json`.
//!
//! Files holding keys are created with mode 0600 and never over an existing file (`create_new`),
//! and a missing directory is created with mode 0700, as geth does: a key file readable by other
//! users, or one that silently replaced another key, loses money. Every file read here is bounded
//! in size, since a key directory may be shared with other tools and its files are input.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use alloy_primitives::Address;
use zeroize::Zeroizing;

use crate::keystore::{self, Kdf};
use crate::{EthError, PrivateKey};

/// The largest keystore file read (geth's are about 500 bytes).
pub const KEYSTORE_FILE_LIMIT: u64 = 64 << 10;

/// geth's file name for a key created at `at`: `UTC--2016-03-22T12-57-55.920751759Z--<address>`.
pub fn geth_file_name(address: &Address, at: time::OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    format!(
        "UTC--{:04}-{:02}-{:02}T{:02}-{:02}-{:02}.{:09}Z--{}",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.nanosecond(),
        hex::encode(address)
    )
}

/// Whether a file of this name in a key directory holds a key: geth's `UTC--…` files and
/// chainsig's `NAME.json`; hidden files, editor backups (`~`) and password files (`.pass`) do not.
pub fn is_key_file_name(name: &str) -> bool {
    if name.starts_with('.') || name.ends_with('~') || name.ends_with(".pass") {
        return false;
    }
    name.starts_with("UTC--") || name.ends_with(".json")
}

/// The password file that may sit beside a key file: `NAME.pass` for `NAME.json`, and the whole
/// name plus `.pass` for geth's names (whose time holds a `.`, so it is not an extension).
pub fn password_file_for(key_file: &Path) -> PathBuf {
    match key_file.extension() {
        Some(ext) if ext == "json" => key_file.with_extension("pass"),
        _ => {
            let mut name = key_file.as_os_str().to_owned();
            name.push(".pass");
            PathBuf::from(name)
        }
    }
}

/// The key files of `dir` (by [`is_key_file_name`], regular files only), in name order.
pub fn key_files(dir: &Path) -> Result<Vec<PathBuf>, EthError> {
    let list_error = |e: std::io::Error| {
        EthError::field("keystore", format!("cannot list {}: {e}", dir.display()))
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(list_error)? {
        let entry = entry.map_err(list_error)?;
        let path = entry.path();
        let named = entry.file_name().to_str().is_some_and(is_key_file_name);
        if named && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The address a keystore file declares, read without decrypting it (as `geth account list`).
pub fn declared_address(path: &Path) -> Result<Address, EthError> {
    let text = read_keystore_text(path)?;
    let document: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| EthError::field("keystore", format!("{}: not JSON: {e}", path.display())))?;
    keystore::declared_address(&document)?
        .ok_or_else(|| EthError::field("address", format!("{}: missing", path.display())))
}

/// The accounts of a key directory (see [`accounts`]).
#[derive(Debug, Default)]
pub struct Accounts {
    /// Each key file, in name order, with the address it declares.
    pub found: Vec<(PathBuf, Address)>,
    /// The key files whose address could not be read, each with the reason.
    pub unreadable: Vec<(PathBuf, EthError)>,
}

/// The accounts of a key directory, read without decrypting anything.
pub fn accounts(dir: &Path) -> Result<Accounts, EthError> {
    let mut accounts = Accounts::default();
    for file in key_files(dir)? {
        match declared_address(&file) {
            Ok(address) => accounts.found.push((file, address)),
            Err(e) => accounts.unreadable.push((file, e)),
        }
    }
    Ok(accounts)
}

/// Encrypts `key` under `password` into a new geth-named file in `dir` (created 0700 when
/// missing) and returns its path. Refuses a key that `dir` already holds, as `geth account
/// import` does, so one address never has two files with perhaps different passwords.
pub fn store(dir: &Path, key: &PrivateKey, password: &[u8], kdf: Kdf) -> Result<PathBuf, EthError> {
    ensure_dir(dir)?;
    let address = key.address();
    if let Some((existing, _)) = accounts(dir)?
        .found
        .into_iter()
        .find(|(_, a)| *a == address)
    {
        return Err(EthError::field(
            "key",
            format!("account {address} already exists in {}", existing.display()),
        ));
    }
    let document = keystore::encrypt(key, password, kdf)?;
    let path = dir.join(geth_file_name(&address, time::OffsetDateTime::now_utc()));
    write_new(&path, document.as_bytes())?;
    Ok(path)
}

/// Creates `dir` with mode 0700 (parents as needed) when it does not exist.
pub fn ensure_dir(dir: &Path) -> Result<(), EthError> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| EthError::field("keystore", format!("cannot create {}: {e}", dir.display())))
}

/// Writes a new secret file: mode 0600, and never over an existing file (the error names it).
/// A file left half written by a failed write is removed.
pub fn write_new(path: &Path, contents: &[u8]) -> Result<(), EthError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|e| {
        let reason = if e.kind() == std::io::ErrorKind::AlreadyExists {
            "exists; refusing to overwrite it".to_string()
        } else {
            format!("cannot create: {e}")
        };
        EthError::field("out", format!("{}: {reason}", path.display()))
    })?;
    if let Err(e) = file.write_all(contents).and_then(|()| file.sync_all()) {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(EthError::field(
            "out",
            format!("{}: cannot write: {e}", path.display()),
        ));
    }
    Ok(())
}

/// A keystore file's text (at most [`KEYSTORE_FILE_LIMIT`] bytes).
pub fn read_keystore_text(path: &Path) -> Result<Zeroizing<String>, EthError> {
    let bytes = read_bounded(path, KEYSTORE_FILE_LIMIT, "keystore")?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| EthError::field("keystore", format!("{}: not UTF-8", path.display())))?;
    Ok(Zeroizing::new(text.to_owned()))
}

/// Reads at most `limit` bytes of `path`; a longer file is an error naming `field` and the path
/// (so a key option pointed at a device or a huge file fails at once instead of filling memory).
pub(crate) fn read_bounded(
    path: &Path,
    limit: u64,
    field: &'static str,
) -> Result<Zeroizing<Vec<u8>>, EthError> {
    let read_error =
        |e: std::io::Error| EthError::field(field, format!("cannot read {}: {e}", path.display()));
    let file = File::open(path).map_err(read_error)?;
    let mut bytes = Zeroizing::new(Vec::new());
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(EthError::field(
            field,
            format!("{}: larger than {limit} bytes", path.display()),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geth_names() {
        let address: Address = "0x7ef5a6135f1fd6a02593eedc869c6d41d934aef8"
            .parse()
            .unwrap();
        let at =
            time::OffsetDateTime::from_unix_timestamp_nanos(1_458_651_475_920_751_759).unwrap();
        assert_eq!(
            geth_file_name(&address, at),
            "UTC--2016-03-22T12-57-55.920751759Z--7ef5a6135f1fd6a02593eedc869c6d41d934aef8"
        );
        let name = geth_file_name(&address, at);
        assert!(is_key_file_name(&name));
        assert!(is_key_file_name("main.json"));
        for other in [
            "main.pass",
            "README",
            ".hidden.json",
            "main.json~",
            "UTC--x.pass",
        ] {
            assert!(!is_key_file_name(other), "{other}");
        }
        assert_eq!(
            password_file_for(Path::new("/k").join(&name).as_path()),
            Path::new("/k").join(format!("{name}.pass"))
        );
        assert_eq!(
            password_file_for(Path::new("/k/main.json")),
            Path::new("/k/main.pass")
        );
    }
}
