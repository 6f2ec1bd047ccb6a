//! BIP-39 mnemonics and BIP-32 derivation along BIP-44's Ethereum path `m/44'/60'/0'/0/i`.
//!
//! BIP-39 (word list, checksum, seed) comes from the `bip39` crate. BIP-32 private derivation is a
//! few lines on top of libsecp256k1 (`SecretKey::add_tweak`) and HMAC-SHA512, written here instead of
//! pulling a second elliptic-curve stack in with a BIP-32 crate; it is checked against BIP-32's
//! test vector 1 and the well-known development mnemonic's addresses.

use hmac::{Hmac, KeyInit, Mac};
use secp256k1::{PublicKey, Scalar, SecretKey};
use sha2::Sha512;
use zeroize::Zeroizing;

use crate::key::PrivateKey;
use crate::EthError;

/// The first hardened child index.
pub const HARDENED: u32 = 1 << 31;

/// A BIP-32 extended private key (key and chain code; both wiped on drop).
pub struct ExtendedKey {
    secret: SecretKey,
    chain_code: Zeroizing<[u8; 32]>,
}

impl Drop for ExtendedKey {
    fn drop(&mut self) {
        self.secret.non_secure_erase();
    }
}

impl std::fmt::Debug for ExtendedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExtendedKey { .. }")
    }
}

fn hmac_sha512(key: &[u8], parts: &[&[u8]]) -> Zeroizing<[u8; 64]> {
    let mut mac =
        <Hmac<Sha512> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(part);
    }
    let mut out = Zeroizing::new([0u8; 64]);
    out.copy_from_slice(&mac.finalize().into_bytes());
    out
}

impl ExtendedKey {
    /// The master key of a seed (16 to 64 bytes).
    pub fn from_seed(seed: &[u8]) -> Result<Self, EthError> {
        if !(16..=64).contains(&seed.len()) {
            return Err(EthError::field("seed", "must be 16 to 64 bytes"));
        }
        let i = hmac_sha512(b"Bitcoin seed", &[seed]);
        Self::from_halves(&i, None)
    }

    fn from_halves(i: &[u8; 64], parent: Option<&SecretKey>) -> Result<Self, EthError> {
        let mut left = Zeroizing::new([0u8; 32]);
        left.copy_from_slice(&i[..32]);
        let mut chain_code = Zeroizing::new([0u8; 32]);
        chain_code.copy_from_slice(&i[32..]);
        // BIP-32: I_L must be below n, and the child key non-zero; both fail with probability ~2^-127.
        let secret = match parent {
            None => SecretKey::from_byte_array(*left),
            Some(parent) => {
                let tweak = Scalar::from_be_bytes(*left)
                    .map_err(|_| EthError::field("path", "invalid child (I_L ≥ n)"))?;
                parent.add_tweak(&tweak)
            }
        }
        .map_err(|_| EthError::field("path", "invalid child key (BIP-32: use the next index)"))?;
        Ok(ExtendedKey { secret, chain_code })
    }

    /// Child `index` (hardened when index ≥ 2^31).
    pub fn child(&self, index: u32) -> Result<Self, EthError> {
        let index_bytes = index.to_be_bytes();
        let i = if index >= HARDENED {
            let secret = Zeroizing::new(self.secret.secret_bytes());
            hmac_sha512(
                self.chain_code.as_ref(),
                &[&[0u8], secret.as_ref(), &index_bytes],
            )
        } else {
            let public = PublicKey::from_secret_key(crate::signing::verify_context(), &self.secret)
                .serialize();
            hmac_sha512(self.chain_code.as_ref(), &[&public, &index_bytes])
        };
        Self::from_halves(&i, Some(&self.secret))
    }

    /// Follows a path such as `m/44'/60'/0'/0/0` (`'`, `h` or `H` mark hardened steps).
    pub fn derive_path(&self, path: &str) -> Result<Self, EthError> {
        let mut steps = path.split('/');
        if steps.next() != Some("m") {
            return Err(EthError::field("path", "must start with m"));
        }
        let mut node = ExtendedKey {
            secret: self.secret,
            chain_code: self.chain_code.clone(),
        };
        for step in steps {
            let (digits, hardened) = match step.strip_suffix(['\'', 'h', 'H']) {
                Some(d) => (d, true),
                None => (step, false),
            };
            let index: u32 = digits
                .parse()
                .ok()
                .filter(|i| *i < HARDENED)
                .ok_or_else(|| {
                    EthError::field(
                        "path",
                        format!("bad step {}", chainsig_core::error::quote(step)),
                    )
                })?;
            node = node.child(if hardened { index | HARDENED } else { index })?;
        }
        Ok(node)
    }

    /// The private key at this node.
    pub fn private_key(&self) -> Result<PrivateKey, EthError> {
        PrivateKey::from_bytes(&self.secret.secret_bytes())
    }

    /// The chain code.
    pub fn chain_code(&self) -> &[u8; 32] {
        &self.chain_code
    }
}

/// The BIP-39 seed of a mnemonic (English words, checksum checked) and passphrase.
pub fn mnemonic_seed(phrase: &str, passphrase: &str) -> Result<Zeroizing<[u8; 64]>, EthError> {
    let mnemonic = bip39::Mnemonic::parse(phrase.trim())
        .map_err(|e| EthError::field("mnemonic", e.to_string()))?;
    Ok(Zeroizing::new(mnemonic.to_seed(passphrase)))
}

/// An HD wallet positioned at `m/44'/60'/0'/0`, handing out the keys `m/44'/60'/0'/0/i`.
#[derive(Debug)]
pub struct EthWallet {
    account: ExtendedKey,
}

impl EthWallet {
    /// The wallet of a BIP-39 mnemonic and passphrase (empty for none).
    pub fn from_mnemonic(phrase: &str, passphrase: &str) -> Result<Self, EthError> {
        let seed = mnemonic_seed(phrase, passphrase)?;
        Self::from_seed(seed.as_ref())
    }

    /// The wallet of a BIP-32 seed.
    pub fn from_seed(seed: &[u8]) -> Result<Self, EthError> {
        Ok(EthWallet {
            account: ExtendedKey::from_seed(seed)?.derive_path("m/44'/60'/0'/0")?,
        })
    }

    /// The key `m/44'/60'/0'/0/index`.
    pub fn key(&self, index: u32) -> Result<PrivateKey, EthError> {
        if index >= HARDENED {
            return Err(EthError::field("index", "must be below 2^31"));
        }
        self.account.child(index)?.private_key()
    }
}
