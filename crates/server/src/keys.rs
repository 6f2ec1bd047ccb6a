//! Loading the signing keys: a directory of keystore v3 files `NAME.json`, each with its password
//! in `NAME.pass` beside it (the layout `chainsig serve --keys DIR` documents).
//!
//! Every problem names the file at fault; passwords and keys never reach a message or a log line
//! (the eth crate wipes them on drop).

use chainsig_eth::{keystore, Signer};
use std::path::{Path, PathBuf};

/// Why the key directory could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error("cannot list {dir}: {source}")]
    List {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{keystore}: no password file {password} beside it")]
    NoPassword {
        keystore: PathBuf,
        password: PathBuf,
    },
    #[error("{file}: {reason}")]
    Keystore { file: PathBuf, reason: String },
    #[error("{dir} holds no keystore (NAME.json with NAME.pass)")]
    Empty { dir: PathBuf },
}

/// Decrypts every `NAME.json` in `dir` with its `NAME.pass` into one [`Signer`].
/// Files are read in name order; other files are ignored. A directory without keys is an error,
/// since a signer with nothing to sign with is a misconfiguration.
pub fn load_dir(dir: &Path) -> Result<Signer, KeysError> {
    let list = |source| KeysError::List {
        dir: dir.to_path_buf(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(list)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(list)?;
    files.retain(|p| p.extension().is_some_and(|e| e == "json") && p.is_file());
    files.sort();
    let mut signer = Signer::new();
    for keystore_file in files {
        let password = keystore_file.with_extension("pass");
        if !password.is_file() {
            return Err(KeysError::NoPassword {
                keystore: keystore_file,
                password,
            });
        }
        let key = keystore::decrypt_files(&keystore_file, &password).map_err(|e| {
            KeysError::Keystore {
                file: keystore_file.clone(),
                reason: e.to_string(),
            }
        })?;
        let address = signer.add_key(key);
        tracing::info!(file = %keystore_file.display(), %address, "key loaded");
    }
    if signer.addresses().is_empty() {
        return Err(KeysError::Empty {
            dir: dir.to_path_buf(),
        });
    }
    Ok(signer)
}
