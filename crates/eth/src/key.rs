//! Private keys: parsing, the Ethereum address, and zeroisation.

use crate::EthError;
use alloy_primitives::{keccak256, Address};
use secp256k1::{PublicKey, SecretKey};
use std::fmt;
use zeroize::Zeroizing;

/// A secp256k1 private key with its address computed once.
///
/// The secret is wiped when the key is dropped and never shown by `Debug`, which prints the address.
pub struct PrivateKey {
    secret: SecretKey,
    public: PublicKey,
    address: Address,
}

impl PrivateKey {
    /// A key from its 32 big-endian bytes; fails for zero and for values not below the group order.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, EthError> {
        let secret = SecretKey::from_byte_array(*bytes).map_err(|_| {
            EthError::field(
                "key",
                "not a valid secp256k1 private key (zero or not below the group order)",
            )
        })?;
        let public = PublicKey::from_secret_key(crate::signing::verify_context(), &secret);
        let address = address_of(&public);
        Ok(PrivateKey {
            secret,
            public,
            address,
        })
    }

    /// A new key from the operating system's randomness.
    pub fn random() -> Self {
        loop {
            let mut bytes = Zeroizing::new([0u8; 32]);
            rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, bytes.as_mut());
            // Zero or a value not below the group order: probability below 2^-127; draw again.
            if let Ok(key) = Self::from_bytes(&bytes) {
                return key;
            }
        }
    }

    /// A key from hex (64 digits, optional `0x`, surrounding whitespace ignored, as in a key file).
    pub fn from_hex(text: &str) -> Result<Self, EthError> {
        let text = text.trim();
        let digits = text
            .strip_prefix("0x")
            .or_else(|| text.strip_prefix("0X"))
            .unwrap_or(text);
        if digits.len() != 64 {
            return Err(EthError::field(
                "key",
                format!("expected 64 hex digits, found {}", digits.len()),
            ));
        }
        let mut bytes = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(digits, bytes.as_mut())
            .map_err(|_| EthError::field("key", "not hex"))?;
        Self::from_bytes(&bytes)
    }

    /// Reads a raw hex key file (a few hundred bytes at most).
    pub fn from_key_file(path: &std::path::Path) -> Result<Self, EthError> {
        let bytes = crate::keydir::read_bounded(path, 1 << 10, "key-file")?;
        let text = std::str::from_utf8(&bytes).map_err(|_| EthError::field("key", "not hex"))?;
        Self::from_hex(text)
    }

    /// The key's Ethereum address.
    pub fn address(&self) -> Address {
        self.address
    }

    /// The uncompressed public key `04 ‖ x ‖ y`.
    pub fn public_key_uncompressed(&self) -> [u8; 65] {
        self.public.serialize_uncompressed()
    }

    /// The secret bytes, in a buffer that wipes itself.
    pub fn to_bytes(&self) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(self.secret.secret_bytes())
    }

    pub(crate) fn secret(&self) -> &SecretKey {
        &self.secret
    }
}

impl Clone for PrivateKey {
    fn clone(&self) -> Self {
        PrivateKey {
            secret: self.secret,
            public: self.public,
            address: self.address,
        }
    }
}

impl Drop for PrivateKey {
    fn drop(&mut self) {
        self.secret.non_secure_erase();
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateKey")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// The address of a public key: the last 20 bytes of keccak256(x ‖ y).
pub fn address_of(public: &PublicKey) -> Address {
    let uncompressed = public.serialize_uncompressed();
    Address::from_slice(&keccak256(&uncompressed[1..])[12..])
}
