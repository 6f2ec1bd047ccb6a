//! Loading the signing keys ([`KeySource`]): a key directory of keystore v3 files, chainsig's
//! `NAME.json` and geth's `UTC--<time>--<address>` alike, and keys derived already (from a
//! mnemonic, by the command line).
//!
//! A key file's password is `NAME.pass` beside it (`NAME.json` → `NAME.pass`, a geth file →
//! its whole name plus `.pass`) when that file exists, and otherwise the one password given for
//! all ([`KeySource::password`]); a key file with neither stops the start. Keystores are input:
//! `chainsig_eth::keystore` refuses hostile key-derivation parameters before any work, and the
//! whole load is bounded in time ([`KeySource::timeout`]): past it the start is refused naming the
//! file being decrypted (that derivation is abandoned on its thread, which ends with the process).
//!
//! Every problem names the file at fault; passwords and keys never reach a message or a log line
//! (the eth crate wipes them on drop).

use chainsig_eth::keydir;
use chainsig_eth::password::Password;
use chainsig_eth::{keystore, EthError, PrivateKey, Signer};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long loading the keys may take unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the service's keys come from.
#[derive(Clone, Debug)]
pub struct KeySource {
    /// A key directory (`NAME.json` and geth's `UTC--…` files; other files are ignored).
    pub dir: Option<PathBuf>,
    /// The password of every key file that has no `.pass` file beside it.
    pub password: Option<Password>,
    /// Keys derived already (from a mnemonic).
    pub derived: Vec<PrivateKey>,
    /// The most time decrypting the directory may take; `None`: as long as it takes.
    pub timeout: Option<Duration>,
}

impl KeySource {
    /// The keys of `dir`, each with its `.pass` file, within [`DEFAULT_TIMEOUT`].
    pub fn dir(dir: &Path) -> Self {
        KeySource {
            dir: Some(dir.to_path_buf()),
            password: None,
            derived: Vec::new(),
            timeout: Some(DEFAULT_TIMEOUT),
        }
    }
}

/// Why the keys could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error("{0}")]
    List(EthError),
    #[error("{keystore}: no password: neither {password} beside it nor a password for all files")]
    NoPassword {
        keystore: PathBuf,
        password: PathBuf,
    },
    #[error("{file}: {reason}")]
    Keystore { file: PathBuf, reason: String },
    #[error("{file}: loading the keys took more than {limit:?} (--keys-timeout-secs) while decrypting this file; {loaded} of {total} files were loaded")]
    Timeout {
        file: PathBuf,
        limit: Duration,
        loaded: usize,
        total: usize,
    },
    #[error("{dir} holds no key file (NAME.json, or geth's UTC--… files)")]
    Empty { dir: PathBuf },
    #[error("no keys: give a key directory or a mnemonic")]
    NoSource,
}

/// Decrypts every key file of `dir` with its `NAME.pass` into one [`Signer`] (see [`load`]).
pub fn load_dir(dir: &Path) -> Result<Signer, KeysError> {
    load(&KeySource::dir(dir))
}

/// The key files of `dir` that have no `.pass` file beside them (the ones that need the password
/// for all files).
pub fn files_without_password(dir: &Path) -> Result<Vec<PathBuf>, KeysError> {
    let files = keydir::key_files(dir).map_err(KeysError::List)?;
    Ok(files
        .into_iter()
        .filter(|f| !keydir::password_file_for(f).is_file())
        .collect())
}

/// Loads the keys of `source` into one [`Signer`]: the derived keys, then the key files in name
/// order. Every key file must have a password before any is decrypted. A key directory without
/// key files is an error, and so is a source without keys, since a signer with nothing to sign
/// with is a misconfiguration.
pub fn load(source: &KeySource) -> Result<Signer, KeysError> {
    let mut signer = Signer::new();
    for key in &source.derived {
        let address = signer.add_key(key.clone());
        tracing::info!(%address, "derived key loaded");
    }
    let Some(dir) = &source.dir else {
        if source.derived.is_empty() {
            return Err(KeysError::NoSource);
        }
        return Ok(signer);
    };
    let files = keydir::key_files(dir).map_err(KeysError::List)?;
    if files.is_empty() {
        return Err(KeysError::Empty {
            dir: dir.to_path_buf(),
        });
    }
    let mut plan = Vec::with_capacity(files.len());
    for file in files {
        let beside = keydir::password_file_for(&file);
        let password = if beside.is_file() {
            PasswordFrom::Beside(beside)
        } else if let Some(password) = &source.password {
            PasswordFrom::Given(password.clone())
        } else {
            return Err(KeysError::NoPassword {
                keystore: file,
                password: beside,
            });
        };
        plan.push((file, password));
    }
    for (file, key) in decrypt_within(plan, source.timeout)? {
        let address = signer.add_key(key);
        tracing::info!(file = %file.display(), %address, "key loaded");
    }
    Ok(signer)
}

/// Where one key file's password comes from.
enum PasswordFrom {
    Beside(PathBuf),
    Given(Password),
}

fn decrypt_one(file: &Path, password: &PasswordFrom) -> Result<PrivateKey, EthError> {
    match password {
        PasswordFrom::Beside(path) => {
            let password = Password::from_file(path, "password-file")?;
            keystore::decrypt_file(file, password.as_bytes())
        }
        PasswordFrom::Given(password) => keystore::decrypt_file(file, password.as_bytes()),
    }
}

/// Decrypts the files of `plan` in order on a thread of their own, so that the wait can be
/// bounded: a key derivation cannot be interrupted, but it can be left behind.
fn decrypt_within(
    plan: Vec<(PathBuf, PasswordFrom)>,
    timeout: Option<Duration>,
) -> Result<Vec<(PathBuf, PrivateKey)>, KeysError> {
    let total = plan.len();
    let deadline = timeout.map(|t| (Instant::now() + t, t));
    // The file being decrypted: the first one until the worker moves on (it may not have started
    // when the time is up).
    let first = plan
        .first()
        .map(|(file, _)| file.clone())
        .unwrap_or_default();
    let current = Arc::new(Mutex::new(first));
    let (sender, answers) = mpsc::channel();
    let worker_current = Arc::clone(&current);
    std::thread::Builder::new()
        .name("chainsig-keys".into())
        .spawn(move || {
            for (file, password) in plan {
                *worker_current.lock().unwrap_or_else(|e| e.into_inner()) = file.clone();
                let outcome = decrypt_one(&file, &password);
                if sender.send((file, outcome)).is_err() {
                    return; // the caller gave up waiting
                }
            }
        })
        .map_err(|e| KeysError::Keystore {
            file: PathBuf::from("--keys"),
            reason: format!("cannot start the loading thread: {e}"),
        })?;
    let mut loaded = Vec::with_capacity(total);
    while loaded.len() < total {
        let answer = match deadline {
            None => answers.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some((at, _)) => answers.recv_timeout(at.saturating_duration_since(Instant::now())),
        };
        match answer {
            Ok((file, Ok(key))) => loaded.push((file, key)),
            Ok((file, Err(e))) => {
                return Err(KeysError::Keystore {
                    file,
                    reason: e.to_string(),
                })
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(KeysError::Timeout {
                    file: current.lock().unwrap_or_else(|e| e.into_inner()).clone(),
                    limit: deadline.map_or(Duration::ZERO, |(_, t)| t),
                    loaded: loaded.len(),
                    total,
                })
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(KeysError::Keystore {
                    file: current.lock().unwrap_or_else(|e| e.into_inner()).clone(),
                    reason: "the loading thread stopped".into(),
                })
            }
        }
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chainsig_eth::keystore::Kdf;
    use zeroize::Zeroizing;

    fn key(byte: u8) -> PrivateKey {
        PrivateKey::from_bytes(&[byte; 32]).unwrap()
    }

    fn write_keystore(dir: &Path, name: &str, key: &PrivateKey, password: &[u8], kdf: Kdf) {
        let text = keystore::encrypt(key, password, kdf).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn password(text: &str) -> Option<Password> {
        Some(Password::new(Zeroizing::new(text.as_bytes().to_vec())))
    }

    #[test]
    fn geth_files_with_one_password_and_pass_files_beside() {
        let dir = tempfile::tempdir().unwrap();
        let geth_name =
            "UTC--2016-03-22T12-57-55.920751759Z--1a642f0e3c3af545e7acbd38b07251b3990914f1";
        let fast = Kdf::Pbkdf2 { c: 2 };
        write_keystore(dir.path(), geth_name, &key(1), b"shared", fast);
        write_keystore(dir.path(), "own.json", &key(2), b"own", fast);
        std::fs::write(dir.path().join("own.pass"), "own\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a key").unwrap();
        // Without the shared password, the geth file is refused by name before any decryption.
        let mut source = KeySource::dir(dir.path());
        match load(&source) {
            Err(KeysError::NoPassword { keystore, password }) => {
                assert!(keystore.ends_with(geth_name));
                assert!(password.ends_with(format!("{geth_name}.pass")));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            files_without_password(dir.path()).unwrap(),
            [dir.path().join(geth_name)]
        );
        source.password = password("shared");
        let signer = load(&source).unwrap();
        assert_eq!(signer.addresses().len(), 2);
        assert!(signer.key(&key(1).address()).is_some());
        assert!(signer.key(&key(2).address()).is_some());
        // A wrong shared password names the file.
        source.password = password("not-it");
        let err = load(&source).unwrap_err().to_string();
        assert!(err.contains(geth_name) && err.contains("password"), "{err}");
        assert!(!err.contains("not-it"), "{err}");
        // Derived keys join the directory's.
        source.password = password("shared");
        source.derived = vec![key(3)];
        assert_eq!(load(&source).unwrap().addresses().len(), 3);
        source.dir = None;
        assert_eq!(load(&source).unwrap().addresses(), [key(3).address()]);
        source.derived.clear();
        assert!(matches!(load(&source), Err(KeysError::NoSource)));
    }

    #[test]
    fn hostile_keystore_is_refused_at_once_by_name() {
        let dir = tempfile::tempdir().unwrap();
        write_keystore(dir.path(), "a.json", &key(1), b"pw", Kdf::Pbkdf2 { c: 2 });
        let mut document: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("a.json")).unwrap())
                .unwrap();
        document["crypto"]["kdf"] = "scrypt".into();
        document["crypto"]["kdfparams"] =
            serde_json::json!({"dklen": 32, "n": 2, "r": 1, "p": 1u64 << 29, "salt": "00"});
        std::fs::write(dir.path().join("b.json"), document.to_string()).unwrap();
        let mut source = KeySource::dir(dir.path());
        source.password = password("pw");
        let start = Instant::now();
        let err = load(&source).unwrap_err().to_string();
        assert!(start.elapsed() < Duration::from_secs(1));
        assert!(
            err.contains("b.json") && err.contains("crypto.kdfparams.p"),
            "{err}"
        );
    }

    #[test]
    fn slow_loading_is_cut_off_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        // About a tenth of a second each on one core; the limit is a millisecond.
        write_keystore(
            dir.path(),
            "a.json",
            &key(1),
            b"pw",
            Kdf::Pbkdf2 { c: 300_000 },
        );
        std::fs::copy(dir.path().join("a.json"), dir.path().join("b.json")).unwrap();
        let mut source = KeySource::dir(dir.path());
        source.password = password("pw");
        source.timeout = Some(Duration::from_millis(1));
        match load(&source) {
            Err(KeysError::Timeout {
                file,
                loaded,
                total,
                ..
            }) => {
                assert!(file.ends_with("a.json"), "{file:?}");
                assert_eq!((loaded, total), (0, 2));
            }
            other => panic!("{other:?}"),
        }
        source.timeout = None;
        assert_eq!(load(&source).unwrap().addresses().len(), 1);
    }
}
