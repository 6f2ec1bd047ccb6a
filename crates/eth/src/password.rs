//! Keystore passwords: read from a file or an environment variable into a buffer that wipes
//! itself, and never shown by `Debug` or in an error.
//!
//! A password file holds the password less one final line ending (`\n` or `\r\n`), as geth's
//! `--password` file and `clef` do, so `echo secret > pw` gives the password `secret`. An
//! environment variable is taken byte for byte. Asking on a terminal is the command line's job.

use std::ffi::OsString;
use std::fmt;
use std::path::Path;

use zeroize::Zeroizing;

use crate::keydir::read_bounded;
use crate::EthError;

/// The longest password file read (anything longer is not a password file).
const PASSWORD_FILE_LIMIT: u64 = 64 << 10;

/// A keystore password.
#[derive(Clone)]
pub struct Password(Zeroizing<Vec<u8>>);

impl Password {
    /// A password from its bytes.
    pub fn new(bytes: Zeroizing<Vec<u8>>) -> Self {
        Password(bytes)
    }

    /// The content of `path` less one final line ending; errors name `field` and the path.
    pub fn from_file(path: &Path, field: &'static str) -> Result<Self, EthError> {
        let mut bytes = read_bounded(path, PASSWORD_FILE_LIMIT, field)?;
        let kept = trim_newline(&bytes).len();
        bytes.truncate(kept);
        Ok(Password(bytes))
    }

    /// The value of the environment variable `name`, exactly; a variable that is not set is an
    /// error naming it (an unset variable is never taken for an empty password).
    pub fn from_env(name: &str) -> Result<Self, EthError> {
        let value: OsString = std::env::var_os(name).ok_or_else(|| {
            EthError::field(
                "password-env",
                format!("the environment variable {name:.80} is not set"),
            )
        })?;
        Ok(Password(Zeroizing::new(os_bytes(value))))
    }

    /// The password's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(..)")
    }
}

#[cfg(unix)]
fn os_bytes(value: OsString) -> Vec<u8> {
    std::os::unix::ffi::OsStringExt::into_vec(value)
}

#[cfg(not(unix))]
fn os_bytes(value: OsString) -> Vec<u8> {
    value.to_string_lossy().into_owned().into_bytes()
}

/// A password file's content without its final line ending.
pub fn trim_newline(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_ending_is_trimmed_and_no_more() {
        assert_eq!(trim_newline(b"pw\n"), b"pw");
        assert_eq!(trim_newline(b"pw\r\n"), b"pw");
        assert_eq!(trim_newline(b"pw\n\n"), b"pw\n");
        assert_eq!(trim_newline(b" pw "), b" pw ");
    }

    #[test]
    fn debug_hides_the_password() {
        let password = Password::new(Zeroizing::new(b"hunter2".to_vec()));
        assert_eq!(format!("{password:?}"), "Password(..)");
    }

    #[test]
    fn an_unset_variable_is_an_error_naming_it() {
        let err = Password::from_env("CHAINSIG_TEST_SURELY_UNSET_VARIABLE").unwrap_err();
        assert_eq!(err.field_name(), "password-env");
        assert!(err
            .message()
            .contains("CHAINSIG_TEST_SURELY_UNSET_VARIABLE"));
    }

    #[test]
    fn a_file_is_read_less_its_line_ending() {
        let path = std::env::temp_dir().join(format!("chainsig-pw-{}", std::process::id()));
        std::fs::write(&path, "secret\n").unwrap();
        let password = Password::from_file(&path, "password-file").unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(password.as_bytes(), b"secret");
        let err = Password::from_file(&path, "password-file").unwrap_err();
        assert_eq!(err.field_name(), "password-file");
        assert!(!err.message().contains("secret"));
    }
}
