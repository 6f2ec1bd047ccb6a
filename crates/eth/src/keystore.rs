//! Web3 Secret Storage (keystore v3): read and write, scrypt or PBKDF2-HMAC-SHA256, AES-128-CTR.
//!
//! The format is small and fully specified, so it is written here on the RustCrypto primitives
//! rather than pulling a keystore crate with its own, older copies of them.

use aes::Aes128;
use alloy_primitives::keccak256;
use chainsig_core::error::quote;
use ctr::cipher::{KeyIvInit, StreamCipher};
use rand::RngCore;
use serde_json::{json, Map, Value};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::key::PrivateKey;
use crate::EthError;

type Aes128Ctr = ctr::Ctr128BE<Aes128>;

/// The largest scrypt working set we agree to allocate for a keystore (128·r·n bytes).
const SCRYPT_MEMORY_LIMIT: u64 = 2 << 30;

/// Key derivation for a new keystore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kdf {
    /// scrypt with n = 2^log_n.
    Scrypt { log_n: u8, r: u32, p: u32 },
    /// PBKDF2-HMAC-SHA256 with c iterations.
    Pbkdf2 { c: u32 },
}

impl Kdf {
    /// geth's standard parameters: scrypt n = 2^18, r = 8, p = 1.
    pub const STANDARD: Kdf = Kdf::Scrypt {
        log_n: 18,
        r: 8,
        p: 1,
    };
    /// geth's light parameters: scrypt n = 2^12, r = 8, p = 6.
    pub const LIGHT: Kdf = Kdf::Scrypt {
        log_n: 12,
        r: 8,
        p: 6,
    };
}

/// The salt, IV and id of a keystore being written (random in [`encrypt`]).
#[derive(Clone, Debug)]
pub struct KeystoreNonces {
    pub salt: [u8; 32],
    pub iv: [u8; 16],
    pub uuid: [u8; 16],
}

impl KeystoreNonces {
    /// Fresh random values.
    pub fn random(rng: &mut impl RngCore) -> Self {
        let mut nonces = KeystoreNonces {
            salt: [0; 32],
            iv: [0; 16],
            uuid: [0; 16],
        };
        rng.fill_bytes(&mut nonces.salt);
        rng.fill_bytes(&mut nonces.iv);
        rng.fill_bytes(&mut nonces.uuid);
        nonces.uuid[6] = (nonces.uuid[6] & 0x0f) | 0x40; // version 4
        nonces.uuid[8] = (nonces.uuid[8] & 0x3f) | 0x80; // RFC 4122 variant
        nonces
    }
}

/// Encrypts `key` into a keystore v3 JSON text with fresh random salt, IV and id.
pub fn encrypt(key: &PrivateKey, password: &[u8], kdf: Kdf) -> Result<String, EthError> {
    encrypt_with(
        key,
        password,
        kdf,
        &KeystoreNonces::random(&mut rand::rngs::OsRng),
    )
}

/// Encrypts `key` with the given salt, IV and id (for reproducible files and known answers).
pub fn encrypt_with(
    key: &PrivateKey,
    password: &[u8],
    kdf: Kdf,
    nonces: &KeystoreNonces,
) -> Result<String, EthError> {
    let kdfparams = match kdf {
        Kdf::Scrypt { log_n, r, p } => {
            json!({"dklen": 32, "n": 1u64 << log_n, "r": r, "p": p, "salt": hex::encode(nonces.salt)})
        }
        Kdf::Pbkdf2 { c } => {
            json!({"dklen": 32, "c": c, "prf": "hmac-sha256", "salt": hex::encode(nonces.salt)})
        }
    };
    let derived = derive_key(&kdf, password, &nonces.salt)?;
    let mut ciphertext = *key.to_bytes();
    Aes128Ctr::new_from_slices(&derived[..16], &nonces.iv)
        .expect("16-byte key and IV")
        .apply_keystream(&mut ciphertext);
    let mac = mac(&derived, &ciphertext);
    let u = hex::encode(nonces.uuid);
    let id = format!(
        "{}-{}-{}-{}-{}",
        &u[..8],
        &u[8..12],
        &u[12..16],
        &u[16..20],
        &u[20..]
    );
    let document = json!({
        "address": hex::encode(key.address()),
        "crypto": {
            "cipher": "aes-128-ctr",
            "cipherparams": {"iv": hex::encode(nonces.iv)},
            "ciphertext": hex::encode(ciphertext),
            "kdf": match kdf { Kdf::Scrypt { .. } => "scrypt", Kdf::Pbkdf2 { .. } => "pbkdf2" },
            "kdfparams": kdfparams,
            "mac": hex::encode(mac),
        },
        "id": id,
        "version": 3,
    });
    Ok(serde_json::to_string_pretty(&document).expect("JSON value serialises"))
}

/// Decrypts a keystore v3 JSON text. A wrong password is reported as a MAC mismatch.
pub fn decrypt(json_text: &str, password: &[u8]) -> Result<PrivateKey, EthError> {
    let document: Value = serde_json::from_str(json_text)
        .map_err(|e| EthError::field("keystore", format!("not JSON: {e}")))?;
    let version = document.get("version").and_then(Value::as_u64);
    if version != Some(3) {
        return Err(EthError::field("version", "expected 3"));
    }
    let crypto = document
        .get("crypto")
        .or_else(|| document.get("Crypto"))
        .and_then(Value::as_object)
        .ok_or_else(|| EthError::field("crypto", "missing"))?;
    let cipher = string(crypto, "cipher", "crypto.cipher")?;
    if cipher != "aes-128-ctr" {
        return Err(EthError::field(
            "crypto.cipher",
            format!("unsupported cipher {}", quote(cipher)),
        ));
    }
    let params = crypto
        .get("cipherparams")
        .and_then(Value::as_object)
        .ok_or_else(|| EthError::field("crypto.cipherparams", "missing"))?;
    let iv = hex_field(params, "iv", "crypto.cipherparams.iv")?;
    if iv.len() != 16 {
        return Err(EthError::field(
            "crypto.cipherparams.iv",
            "expected 16 bytes",
        ));
    }
    let ciphertext = hex_field(crypto, "ciphertext", "crypto.ciphertext")?;
    if ciphertext.len() != 32 {
        return Err(EthError::field(
            "crypto.ciphertext",
            format!("expected 32 bytes, found {}", ciphertext.len()),
        ));
    }
    let expected_mac = hex_field(crypto, "mac", "crypto.mac")?;
    let kdf_params = crypto
        .get("kdfparams")
        .and_then(Value::as_object)
        .ok_or_else(|| EthError::field("crypto.kdfparams", "missing"))?;
    let salt = hex_field(kdf_params, "salt", "crypto.kdfparams.salt")?;
    let dklen = number(kdf_params, "dklen", "crypto.kdfparams.dklen")?;
    if dklen != 32 {
        return Err(EthError::field("crypto.kdfparams.dklen", "expected 32"));
    }
    let kdf = match string(crypto, "kdf", "crypto.kdf")? {
        "scrypt" => {
            let n = number(kdf_params, "n", "crypto.kdfparams.n")?;
            if n < 2 || !n.is_power_of_two() {
                return Err(EthError::field(
                    "crypto.kdfparams.n",
                    "must be a power of two above 1",
                ));
            }
            let r = u32::try_from(number(kdf_params, "r", "crypto.kdfparams.r")?)
                .map_err(|_| EthError::field("crypto.kdfparams.r", "too large"))?;
            let p = u32::try_from(number(kdf_params, "p", "crypto.kdfparams.p")?)
                .map_err(|_| EthError::field("crypto.kdfparams.p", "too large"))?;
            if 128 * u64::from(r) * n > SCRYPT_MEMORY_LIMIT {
                return Err(EthError::field(
                    "crypto.kdfparams.n",
                    "needs more than 2 GiB of memory",
                ));
            }
            Kdf::Scrypt {
                log_n: n.trailing_zeros() as u8,
                r,
                p,
            }
        }
        "pbkdf2" => {
            let prf = string(kdf_params, "prf", "crypto.kdfparams.prf")?;
            if prf != "hmac-sha256" {
                return Err(EthError::field(
                    "crypto.kdfparams.prf",
                    format!("unsupported {}", quote(prf)),
                ));
            }
            let c = u32::try_from(number(kdf_params, "c", "crypto.kdfparams.c")?)
                .map_err(|_| EthError::field("crypto.kdfparams.c", "too large"))?;
            if c == 0 {
                return Err(EthError::field("crypto.kdfparams.c", "must be positive"));
            }
            Kdf::Pbkdf2 { c }
        }
        other => {
            return Err(EthError::field(
                "crypto.kdf",
                format!("unsupported {}", quote(other)),
            ))
        }
    };
    let derived = derive_key(&kdf, password, &salt)?;
    let mac = mac(&derived, &ciphertext);
    let same = expected_mac.len() == 32
        && mac
            .iter()
            .zip(&expected_mac)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if !same {
        return Err(EthError::field(
            "password",
            "wrong password or corrupted keystore (MAC mismatch)",
        ));
    }
    let mut secret = Zeroizing::new([0u8; 32]);
    secret.copy_from_slice(&ciphertext);
    Aes128Ctr::new_from_slices(&derived[..16], &iv)
        .expect("16-byte key and IV")
        .apply_keystream(secret.as_mut());
    PrivateKey::from_bytes(&secret)
}

/// Reads a keystore file and a password file (the password is the file's text less one trailing newline).
pub fn decrypt_files(
    keystore: &std::path::Path,
    password_file: &std::path::Path,
) -> Result<PrivateKey, EthError> {
    let text = std::fs::read_to_string(keystore).map_err(|e| {
        EthError::field(
            "keystore",
            format!("cannot read {}: {e}", keystore.display()),
        )
    })?;
    let password = Zeroizing::new(std::fs::read(password_file).map_err(|e| {
        EthError::field(
            "password-file",
            format!("cannot read {}: {e}", password_file.display()),
        )
    })?);
    decrypt(&text, trim_newline(&password))
}

/// A password file's content without its final line ending.
pub fn trim_newline(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

fn derive_key(kdf: &Kdf, password: &[u8], salt: &[u8]) -> Result<Zeroizing<[u8; 32]>, EthError> {
    let mut derived = Zeroizing::new([0u8; 32]);
    match *kdf {
        Kdf::Scrypt { log_n, r, p } => {
            let params = scrypt::Params::new(log_n, r, p).map_err(|e| {
                EthError::field(
                    "crypto.kdfparams",
                    format!("invalid scrypt parameters: {e}"),
                )
            })?;
            scrypt::scrypt(password, salt, &params, derived.as_mut())
                .expect("32-byte output is valid");
        }
        Kdf::Pbkdf2 { c } => pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, c, derived.as_mut()),
    }
    Ok(derived)
}

fn mac(derived: &[u8; 32], ciphertext: &[u8]) -> [u8; 32] {
    let mut input = Vec::with_capacity(16 + ciphertext.len());
    input.extend_from_slice(&derived[16..32]);
    input.extend_from_slice(ciphertext);
    keccak256(&input).0
}

fn string<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<&'a str, EthError> {
    object
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| EthError::field(field, "missing or not a string"))
}

fn number(object: &Map<String, Value>, key: &str, field: &'static str) -> Result<u64, EthError> {
    object
        .get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| EthError::field(field, "missing or not an integer"))
}

fn hex_field(
    object: &Map<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<Vec<u8>, EthError> {
    let text = string(object, key, field)?;
    hex::decode(text.strip_prefix("0x").unwrap_or(text))
        .map_err(|_| EthError::field(field, "not hex"))
}
