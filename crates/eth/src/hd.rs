//! BIP-39 mnemonics and BIP-32 derivation along BIP-44's Ethereum path `m/44'/60'/0'/0/i`.
//!
//! BIP-39 (word list, checksum, seed, and new phrases from the operating system's randomness)
//! comes from the `bip39` crate. BIP-32 private derivation is a
//! few lines on top of libsecp256k1 (`SecretKey::add_tweak`) and HMAC-SHA512, written here instead of
//! pulling a second elliptic-curve stack in with a BIP-32 crate; it is checked against BIP-32's
//! test vector 1 and the well-known development mnemonic's addresses.

use hmac::{Hmac, KeyInit, Mac};
use secp256k1::{PublicKey, Scalar, SecretKey};
use sha2::Sha512;
use zeroize::Zeroizing;

use crate::key::PrivateKey;
use crate::EthError;
use chainsig_core::error::quote;

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
        self.derive(&HdPath::parse(path)?)
    }

    /// Follows the steps of `path` from this node.
    pub fn derive(&self, path: &HdPath) -> Result<Self, EthError> {
        let mut node = ExtendedKey {
            secret: self.secret,
            chain_code: self.chain_code.clone(),
        };
        for &index in &path.0 {
            node = node.child(index)?;
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

/// The path wallets use for an Ethereum account's first key (BIP-44, coin type 60).
pub const DEFAULT_PATH: &str = "m/44'/60'/0'/0/0";

/// A BIP-32 derivation path: the child indices below the master key (hardened ones ≥ 2^31).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HdPath(Vec<u32>);

impl HdPath {
    /// Parses `m/44'/60'/0'/0/0`: `m`, then indices below 2^31, `'`, `h` or `H` marking hardened ones.
    pub fn parse(text: &str) -> Result<Self, EthError> {
        let mut steps = text.split('/');
        if steps.next() != Some("m") {
            return Err(EthError::field(
                "hd-path",
                format!("must start with m: {}", quote(text)),
            ));
        }
        steps
            .map(|step| {
                let (digits, hardened) = match step.strip_suffix(['\'', 'h', 'H']) {
                    Some(d) => (d, true),
                    None => (step, false),
                };
                let index: u32 =
                    digits
                        .parse()
                        .ok()
                        .filter(|i| *i < HARDENED)
                        .ok_or_else(|| {
                            EthError::field("hd-path", format!("bad step {}", quote(step)))
                        })?;
                Ok(if hardened { index | HARDENED } else { index })
            })
            .collect::<Result<_, _>>()
            .map(HdPath)
    }

    /// The `count` paths that follow this one along its last step (`…/0/0`, `…/0/1`, …), as
    /// wallets number the accounts of one mnemonic; the last step keeps its hardening and may
    /// not cross 2^31.
    pub fn accounts(&self, count: u32) -> Result<Vec<HdPath>, EthError> {
        let (&last, parent) = self
            .0
            .split_last()
            .ok_or_else(|| EthError::field("hd-path", "has no step to count accounts along"))?;
        let base = last & !HARDENED;
        if u64::from(base) + u64::from(count) > u64::from(HARDENED) {
            return Err(EthError::field(
                "hd-accounts",
                format!("{count} accounts from index {base} pass 2^31 - 1"),
            ));
        }
        Ok((0..count)
            .map(|i| {
                let mut steps = parent.to_vec();
                steps.push(last + i);
                HdPath(steps)
            })
            .collect())
    }
}

impl std::fmt::Display for HdPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("m")?;
        for &index in &self.0 {
            if index >= HARDENED {
                write!(f, "/{}'", index & !HARDENED)?;
            } else {
                write!(f, "/{index}")?;
            }
        }
        Ok(())
    }
}

/// The keys of a BIP-39 mnemonic at `count` paths from `path` along its last step (see
/// [`HdPath::accounts`]); the parent node is derived once.
pub fn mnemonic_keys(
    phrase: &str,
    passphrase: &str,
    path: &HdPath,
    count: u32,
) -> Result<Vec<PrivateKey>, EthError> {
    let paths = path.accounts(count)?;
    let seed = mnemonic_seed(phrase, passphrase)?;
    let parent_path = HdPath(path.0[..path.0.len() - 1].to_vec());
    let parent = ExtendedKey::from_seed(seed.as_ref())?.derive(&parent_path)?;
    paths
        .iter()
        .map(|p| {
            parent
                .child(*p.0.last().expect("one step at least"))?
                .private_key()
        })
        .collect()
}

/// A new BIP-39 English mnemonic of 12 or 24 words from the operating system's randomness.
pub fn generate_mnemonic(words: usize) -> Result<Zeroizing<String>, EthError> {
    let bytes = match words {
        12 => 16,
        24 => 32,
        _ => return Err(EthError::field("words", "must be 12 or 24")),
    };
    let mut entropy = Zeroizing::new([0u8; 32]);
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut entropy[..bytes]);
    let mnemonic = bip39::Mnemonic::from_entropy(&entropy[..bytes])
        .map_err(|e| EthError::field("words", e.to_string()))?;
    Ok(Zeroizing::new(mnemonic.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_print_and_count() {
        let path = HdPath::parse(DEFAULT_PATH).unwrap();
        assert_eq!(path.to_string(), DEFAULT_PATH);
        assert_eq!(
            HdPath::parse("m/44h/60H/0'/0/7").unwrap().to_string(),
            "m/44'/60'/0'/0/7"
        );
        let accounts = HdPath::parse("m/44'/60'/0'/0/5")
            .unwrap()
            .accounts(3)
            .unwrap();
        let shown: Vec<String> = accounts.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["m/44'/60'/0'/0/5", "m/44'/60'/0'/0/6", "m/44'/60'/0'/0/7"]
        );
        let hardened = HdPath::parse("m/44'/60'/2'").unwrap().accounts(2).unwrap();
        assert_eq!(hardened[1].to_string(), "m/44'/60'/3'");
        for bad in ["", "44'/60'", "m/x", "m/2147483648", "m//0"] {
            assert_eq!(
                HdPath::parse(bad).unwrap_err().field_name(),
                "hd-path",
                "{bad}"
            );
        }
        assert!(HdPath::parse("m").unwrap().accounts(1).is_err());
        let top = HdPath::parse("m/2147483646").unwrap();
        assert_eq!(top.accounts(2).unwrap().len(), 2);
        assert_eq!(top.accounts(3).unwrap_err().field_name(), "hd-accounts");
    }

    #[test]
    fn mnemonic_keys_match_the_wallet_and_single_derivations() {
        let phrase = "test test test test test test test test test test test junk";
        let wallet = EthWallet::from_mnemonic(phrase, "").unwrap();
        let path = HdPath::parse(DEFAULT_PATH).unwrap();
        let keys = mnemonic_keys(phrase, "", &path, 3).unwrap();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(key.address(), wallet.key(i as u32).unwrap().address());
        }
        let seed = mnemonic_seed(phrase, "").unwrap();
        let master = ExtendedKey::from_seed(seed.as_ref()).unwrap();
        let other = HdPath::parse("m/44'/60'/1'/0/4").unwrap();
        assert_eq!(
            mnemonic_keys(phrase, "", &other, 1).unwrap()[0].address(),
            master
                .derive(&other)
                .unwrap()
                .private_key()
                .unwrap()
                .address()
        );
    }

    #[test]
    fn generated_mnemonics_are_valid_and_fresh() {
        for words in [12, 24] {
            let a = generate_mnemonic(words).unwrap();
            let b = generate_mnemonic(words).unwrap();
            assert_ne!(*a, *b);
            let parsed = bip39::Mnemonic::parse_in(bip39::Language::English, a.as_str()).unwrap();
            assert_eq!(parsed.word_count(), words);
        }
        assert_eq!(generate_mnemonic(15).unwrap_err().field_name(), "words");
    }
}
