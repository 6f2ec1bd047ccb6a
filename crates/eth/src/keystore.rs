//! Web3 Secret Storage (keystore v3): read and write, scrypt or PBKDF2-HMAC-SHA256, AES-128-CTR.
//!
//! The format is small and fully specified, so it is written here on the RustCrypto primitives
//! rather than pulling a keystore crate with its own, older copies of them.
//!
//! # Keystores are input
//!
//! A keystore file names its own key-derivation cost, so a hostile or corrupted file can ask for
//! terabytes of memory or hours of work before its MAC is ever checked. [`decrypt`] therefore
//! reads and checks every field first ([`Sealed`]) and derives nothing until all are within
//! these limits; a file outside them is refused with an error naming the parameter:
//!
//! | field | accepted | why |
//! | --- | --- | --- |
//! | `cipher` | `aes-128-ctr`, `iv` 16 bytes, `ciphertext` 32 bytes | the only cipher of version 3; a secp256k1 key is 32 bytes |
//! | `kdfparams.dklen` | 32 | AES key (16 bytes) and MAC key (16 bytes) |
//! | scrypt `n` | a power of two, 2 ..= 2^20 | geth writes 2^18 (standard) or 2^12 (light) |
//! | scrypt `r` | 1 ..= 16 | geth writes 8 |
//! | scrypt `p` | 1 ..= 16 | geth writes 1 (standard) or 6 (light) |
//! | scrypt memory `128·n·r` | at most 1 GiB | the standard setting needs 256 MiB |
//! | pbkdf2 `prf` | `hmac-sha256` | the only one the standard defines |
//! | pbkdf2 `c` | 1 ..= 10,000,000 | common wallets write 262,144; 10^7 costs a few seconds of a core |
//! | `mac` | 32 bytes | keccak256 output |
//!
//! The MAC, keccak256(derived[16..32] ‖ ciphertext), is compared in constant time (`subtle`)
//! before anything is decrypted, and a wrong password is reported as a MAC mismatch. When the file
//! declares an `address`, the decrypted key must have it.

use aes::Aes128;
use alloy_primitives::{keccak256, Address};
use ctr::cipher::{KeyIvInit, StreamCipher};
use rand::RngCore;
use serde_json::{json, Map, Value};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::key::PrivateKey;
use crate::EthError;
use chainsig_core::error::quote;

type Aes128Ctr = ctr::Ctr128BE<Aes128>;

/// The largest scrypt cost parameter `n` accepted.
pub const SCRYPT_MAX_N: u64 = 1 << 20;
/// The largest scrypt block size `r` accepted.
pub const SCRYPT_MAX_R: u64 = 16;
/// The largest scrypt parallelism `p` accepted.
pub const SCRYPT_MAX_P: u64 = 16;
/// The largest scrypt working set, 128·n·r bytes, accepted.
pub const SCRYPT_MAX_MEMORY: u64 = 1 << 30;
/// The most PBKDF2 iterations accepted.
pub const PBKDF2_MAX_C: u64 = 10_000_000;

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

    /// The scrypt parameters `n`, `r`, `p` if within the limits of the module docs.
    pub fn scrypt(n: u64, r: u64, p: u64) -> Result<Kdf, EthError> {
        if !(2..=SCRYPT_MAX_N).contains(&n) || !n.is_power_of_two() {
            return Err(EthError::field(
                "crypto.kdfparams.n",
                format!("{n} is not a power of two from 2 to 2^20"),
            ));
        }
        let in_range = |value: u64, max: u64, field: &'static str| {
            u32::try_from(value)
                .ok()
                .filter(|v| (1..=max).contains(&u64::from(*v)))
                .ok_or_else(|| EthError::field(field, format!("{value} is outside 1..={max}")))
        };
        let r = in_range(r, SCRYPT_MAX_R, "crypto.kdfparams.r")?;
        let p = in_range(p, SCRYPT_MAX_P, "crypto.kdfparams.p")?;
        let memory = 128 * n * u64::from(r);
        if memory > SCRYPT_MAX_MEMORY {
            return Err(EthError::field(
                "crypto.kdfparams.n",
                format!(
                    "n = {n} with r = {r} needs {} MiB, above 1 GiB",
                    memory >> 20
                ),
            ));
        }
        Ok(Kdf::Scrypt {
            log_n: n.trailing_zeros() as u8,
            r,
            p,
        })
    }

    /// PBKDF2-HMAC-SHA256 with `c` iterations if within the limits of the module docs.
    pub fn pbkdf2(c: u64) -> Result<Kdf, EthError> {
        u32::try_from(c)
            .ok()
            .filter(|c| (1..=PBKDF2_MAX_C).contains(&u64::from(*c)))
            .map(|c| Kdf::Pbkdf2 { c })
            .ok_or_else(|| {
                EthError::field(
                    "crypto.kdfparams.c",
                    format!("{c} is outside 1..={PBKDF2_MAX_C}"),
                )
            })
    }

    /// Checks these parameters against the limits (the ones a reader of the file will apply).
    pub fn check(self) -> Result<Kdf, EthError> {
        match self {
            Kdf::Scrypt { log_n, r, p } => Kdf::scrypt(
                1u64.checked_shl(u32::from(log_n)).unwrap_or(u64::MAX),
                u64::from(r),
                u64::from(p),
            ),
            Kdf::Pbkdf2 { c } => Kdf::pbkdf2(u64::from(c)),
        }
    }
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
/// Parameters outside the limits of the module docs are refused: nobody could read the file.
pub fn encrypt_with(
    key: &PrivateKey,
    password: &[u8],
    kdf: Kdf,
    nonces: &KeystoreNonces,
) -> Result<String, EthError> {
    let kdf = kdf.check()?;
    let kdfparams = match kdf {
        Kdf::Scrypt { log_n, r, p } => {
            json!({"dklen": 32, "n": 1u64 << log_n, "r": r, "p": p, "salt": hex::encode(nonces.salt)})
        }
        Kdf::Pbkdf2 { c } => {
            json!({"dklen": 32, "c": c, "prf": "hmac-sha256", "salt": hex::encode(nonces.salt)})
        }
    };
    let derived = derive_key(&kdf, password, &nonces.salt);
    let mut ciphertext = *key.to_bytes();
    apply_aes_ctr(&derived, &nonces.iv, &mut ciphertext);
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

/// Decrypts a keystore v3 JSON text. Every field is checked before any key derivation (see the
/// module docs for the limits); a wrong password is reported as a MAC mismatch.
pub fn decrypt(json_text: &str, password: &[u8]) -> Result<PrivateKey, EthError> {
    let document: Value = serde_json::from_str(json_text)
        .map_err(|e| EthError::field("keystore", format!("not JSON: {e}")))?;
    Sealed::parse(&document)?.open(password)
}

/// Reads a keystore file (at most 64 KiB) and decrypts it.
pub fn decrypt_file(path: &std::path::Path, password: &[u8]) -> Result<PrivateKey, EthError> {
    decrypt(&crate::keydir::read_keystore_text(path)?, password)
}

/// A keystore's fields, all checked and within limits, before any work is done on them.
pub struct Sealed {
    kdf: Kdf,
    salt: Vec<u8>,
    iv: [u8; 16],
    ciphertext: [u8; 32],
    mac: [u8; 32],
    address: Option<Address>,
}

impl Sealed {
    /// Reads and checks every field of a keystore v3 document; derives nothing.
    pub fn parse(document: &Value) -> Result<Self, EthError> {
        if document.get("version").and_then(Value::as_u64) != Some(3) {
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
        let cipherparams = object(crypto, "cipherparams", "crypto.cipherparams")?;
        let iv = fixed_hex(cipherparams, "iv", "crypto.cipherparams.iv")?;
        let ciphertext = fixed_hex(crypto, "ciphertext", "crypto.ciphertext")?;
        let mac = fixed_hex(crypto, "mac", "crypto.mac")?;
        let params = object(crypto, "kdfparams", "crypto.kdfparams")?;
        let dklen = number(params, "dklen", "crypto.kdfparams.dklen")?;
        if dklen != 32 {
            return Err(EthError::field(
                "crypto.kdfparams.dklen",
                format!("expected 32, found {dklen}"),
            ));
        }
        let kdf = match string(crypto, "kdf", "crypto.kdf")? {
            "scrypt" => Kdf::scrypt(
                number(params, "n", "crypto.kdfparams.n")?,
                number(params, "r", "crypto.kdfparams.r")?,
                number(params, "p", "crypto.kdfparams.p")?,
            )?,
            "pbkdf2" => {
                let prf = string(params, "prf", "crypto.kdfparams.prf")?;
                if prf != "hmac-sha256" {
                    return Err(EthError::field(
                        "crypto.kdfparams.prf",
                        format!("unsupported {}", quote(prf)),
                    ));
                }
                Kdf::pbkdf2(number(params, "c", "crypto.kdfparams.c")?)?
            }
            other => {
                return Err(EthError::field(
                    "crypto.kdf",
                    format!("unsupported {}", quote(other)),
                ))
            }
        };
        let salt = hex_field(params, "salt", "crypto.kdfparams.salt")?;
        Ok(Sealed {
            kdf,
            salt,
            iv,
            ciphertext,
            mac,
            address: declared_address(document)?,
        })
    }

    /// The key derivation the file asks for.
    pub fn kdf(&self) -> Kdf {
        self.kdf
    }

    /// Derives the key, checks the MAC in constant time, then decrypts and checks the address.
    pub fn open(&self, password: &[u8]) -> Result<PrivateKey, EthError> {
        let derived = derive_key(&self.kdf, password, &self.salt);
        let mac = mac(&derived, &self.ciphertext);
        if !bool::from(mac[..].ct_eq(&self.mac[..])) {
            return Err(EthError::field(
                "password",
                "wrong password or corrupted keystore (MAC mismatch)",
            ));
        }
        let mut secret = Zeroizing::new(self.ciphertext);
        apply_aes_ctr(&derived, &self.iv, secret.as_mut());
        let key = PrivateKey::from_bytes(&secret)?;
        match self.address {
            Some(declared) if declared != key.address() => Err(EthError::field(
                "address",
                format!(
                    "the file declares {declared} but its key is {}",
                    key.address()
                ),
            )),
            _ => Ok(key),
        }
    }
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealed")
            .field("kdf", &self.kdf)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// The `address` a keystore declares (optional in the standard; 40 hex digits, `0x` allowed).
pub(crate) fn declared_address(document: &Value) -> Result<Option<Address>, EthError> {
    let Some(value) = document.get("address") else {
        return Ok(None);
    };
    let text = value
        .as_str()
        .ok_or_else(|| EthError::field("address", "not a string"))?;
    let digits = text.strip_prefix("0x").unwrap_or(text);
    let mut bytes = [0u8; 20];
    hex::decode_to_slice(digits, &mut bytes)
        .map_err(|_| EthError::field("address", format!("not 40 hex digits: {}", quote(text))))?;
    Ok(Some(Address::from(bytes)))
}

fn derive_key(kdf: &Kdf, password: &[u8], salt: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut derived = Zeroizing::new([0u8; 32]);
    match *kdf {
        Kdf::Scrypt { log_n, r, p } => {
            // `Kdf::scrypt` admits only parameters that scrypt accepts too.
            let params = scrypt::Params::new(log_n, r, p).expect("parameters checked");
            scrypt::scrypt(password, salt, &params, derived.as_mut())
                .expect("32-byte output is valid");
        }
        Kdf::Pbkdf2 { c } => pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, c, derived.as_mut()),
    }
    derived
}

fn apply_aes_ctr(derived: &[u8; 32], iv: &[u8; 16], data: &mut [u8]) {
    Aes128Ctr::new_from_slices(&derived[..16], iv)
        .expect("16-byte key and IV")
        .apply_keystream(data);
}

fn mac(derived: &[u8; 32], ciphertext: &[u8; 32]) -> [u8; 32] {
    let mut input = [0u8; 48];
    input[..16].copy_from_slice(&derived[16..32]);
    input[16..].copy_from_slice(ciphertext);
    keccak256(input).0
}

fn object<'a>(
    parent: &'a Map<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<&'a Map<String, Value>, EthError> {
    parent
        .get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| EthError::field(field, "missing or not an object"))
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
        .ok_or_else(|| EthError::field(field, "missing or not a non-negative integer"))
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

fn fixed_hex<const N: usize>(
    object: &Map<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<[u8; N], EthError> {
    let bytes = hex_field(object, key, field)?;
    bytes
        .as_slice()
        .try_into()
        .map_err(|_| EthError::field(field, format!("expected {N} bytes, found {}", bytes.len())))
}
