//! Ethereum transaction signing for chainsig.
//!
//! * [`tx`]: the `eth_signTransaction` request ([`TxRequest`]), transactions of types 0–4 (legacy
//!   with or without EIP-155, EIP-2930, EIP-1559, EIP-4844 without its sidecar, EIP-7702) built
//!   with alloy's types, signed into a [`SignedTx`] (raw envelope, hash, sender), and
//!   [`decode_raw`] for raw signed transactions.
//! * [`quantity`]: the one strict rule for numbers in requests (0x-hex strings or exact integers).
//! * [`chain`]: [`ChainPolicy`], the chain id a signer fills in or insists on, and the opt-in for
//!   signatures without replay protection.
//! * [`authorization`]: EIP-7702 authorization tuples, signed on their own or inside a type-4
//!   transaction; [`eip712`]: EIP-712 typed data.
//! * [`signing`]: RFC 6979 low-s ECDSA through libsecp256k1 with per-thread blinded contexts.
//! * [`key`], [`keystore`], [`hd`]: raw keys, Web3 Secret Storage v3 files (hostile ones refused
//!   before any work), BIP-39/BIP-32 wallets and new mnemonics.
//! * [`keydir`], [`password`]: geth-style keystore directories (`UTC--…` files, 0600, never
//!   overwritten) and passwords from files or the environment.
//! * [`Signer`]: keys held by address, the API a signing server builds on.
//! * [`rawtx`]: raw transactions' senders with their refusals sorted ([`rawtx::TxFault`]), the CPU
//!   reference for device decoders, and the length-prefixed file format of `chainsig recover --raw`.
//! * [`recover`]: senders of raw transactions and bare signatures, as `chainsig recover` reads them.
//! * [`batch`]: the user's transactions signed in bulk (`chainsig eth sign-bulk`), nonces per sender.
//! * [`bulk`]: generated filler transactions signed on every core (`sign-bulk --random`, benchmarks),
//!   with latency statistics.
//!
//! Secrets (keys, derived keys, seeds, passwords read by this crate) live in buffers that wipe
//! themselves on drop and never appear in `Debug` output or in error messages.

pub mod authorization;
pub mod batch;
pub mod bulk;
pub mod chain;
pub mod eip712;
pub mod hd;
pub mod key;
pub mod keydir;
pub mod keystore;
pub mod password;
pub mod quantity;
pub mod rawtx;
pub mod recover;
pub mod rfc6979;
pub mod signing;
pub mod tx;

use alloy_eips::eip7702::{Authorization, SignedAuthorization};
use alloy_primitives::{eip191_hash_message, Address, Signature, B256};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

pub use chain::ChainPolicy;
pub use key::PrivateKey;
pub use tx::decode::{decode_raw, DecodedTx};
pub use tx::{SignedTx, TxRequest, TxType};

/// An error that names the field (or input) at fault, shown as `field: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EthError {
    field: Cow<'static, str>,
    message: String,
}

impl EthError {
    /// An error about `field`.
    pub fn field(field: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        EthError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The field at fault.
    pub fn field_name(&self) -> &str {
        &self.field
    }

    /// What is wrong with it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for EthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for EthError {}

/// Keys held by address, and the chain they sign for; signs transactions, EIP-191 messages,
/// EIP-712 typed data, EIP-7702 authorizations and raw hashes.
#[derive(Default, Debug)]
pub struct Signer {
    keys: BTreeMap<Address, PrivateKey>,
    policy: ChainPolicy,
}

impl Signer {
    /// A signer without keys.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the chain this signer signs transactions and authorizations for (see [`ChainPolicy`]).
    pub fn set_policy(&mut self, policy: ChainPolicy) {
        self.policy = policy;
    }

    /// The chain policy in force.
    pub fn policy(&self) -> &ChainPolicy {
        &self.policy
    }

    /// Adds a key and returns its address (a key already held is replaced by the same key).
    pub fn add_key(&mut self, key: PrivateKey) -> Address {
        let address = key.address();
        self.keys.insert(address, key);
        address
    }

    /// The addresses held, in ascending order.
    pub fn addresses(&self) -> Vec<Address> {
        self.keys.keys().copied().collect()
    }

    /// The key for `address`.
    pub fn key(&self, address: &Address) -> Option<&PrivateKey> {
        self.keys.get(address)
    }

    /// The address that signs a request with this `from`: `from` itself when a key is held for
    /// it, the only key's when `from` is absent.
    pub fn sender(&self, from: Option<Address>) -> Result<Address, EthError> {
        self.key_for(from).map(PrivateKey::address)
    }

    pub(crate) fn key_for(&self, from: Option<Address>) -> Result<&PrivateKey, EthError> {
        match from {
            Some(address) => self
                .keys
                .get(&address)
                .ok_or_else(|| EthError::field("from", format!("no key for {address}"))),
            None if self.keys.len() == 1 => Ok(self.keys.values().next().expect("one key")),
            None if self.keys.is_empty() => {
                Err(EthError::field("from", "this signer holds no keys"))
            }
            None => Err(EthError::field(
                "from",
                "missing (the signer holds more than one key)",
            )),
        }
    }

    /// Signs a transaction with the key of its `from` (or the only key when `from` is absent),
    /// under this signer's [`ChainPolicy`].
    pub fn sign_transaction(&self, request: &TxRequest) -> Result<SignedTx, EthError> {
        request.sign_with(self.key_for(request.from)?, &self.policy)
    }

    /// Signs many transactions as [`Signer::sign_transaction`] signs each (the same bytes, each
    /// answer in its request's place), the valid ones together: eight at a time in AVX-512 IFMA
    /// lanes where the CPU has them (`CHAINSIG_CPU_LANES`, [`signing::lanes_for_batches`]).
    pub fn sign_transactions(&self, requests: &[TxRequest]) -> Vec<Result<SignedTx, EthError>> {
        let checked = requests
            .iter()
            .map(|request| {
                let key = self.key_for(request.from)?;
                Ok((request.typed_for(key, &self.policy)?, key))
            })
            .collect();
        tx::sign_checked(checked, &mut Vec::with_capacity(256))
    }

    /// Signs an EIP-7702 authorization with `address`'s key (chain id 0 only when unprotected
    /// signing is allowed).
    pub fn sign_authorization(
        &self,
        address: &Address,
        authorization: Authorization,
    ) -> Result<SignedAuthorization, EthError> {
        authorization::sign(authorization, self.key_for(Some(*address))?, &self.policy)
    }

    /// `eth_sign` / `personal_sign`: signs keccak256("\x19Ethereum Signed Message:\n" ‖ len ‖ message);
    /// returns r ‖ s ‖ v with v = 27 + y parity.
    pub fn sign_eip191(&self, address: &Address, message: &[u8]) -> Result<[u8; 65], EthError> {
        self.sign_hash(address, &eip191_hash_message(message))
    }

    /// Signs a 32-byte hash as it is; returns r ‖ s ‖ v with v = 27 + y parity.
    pub fn sign_hash(&self, address: &Address, hash: &B256) -> Result<[u8; 65], EthError> {
        let key = self.key_for(Some(*address))?;
        Ok(signing::sign_prehash(key.secret(), hash).as_bytes())
    }
}

/// Recovers the address that signed an EIP-191 message (`v` 27/28 or 0/1 in the last byte).
pub fn recover_eip191(message: &[u8], signature: &[u8; 65]) -> Result<Address, EthError> {
    recover_hash(&eip191_hash_message(message), signature)
}

/// Recovers the address that signed a hash, from r ‖ s ‖ v (`v` 27/28 or 0/1).
pub fn recover_hash(hash: &B256, signature: &[u8; 65]) -> Result<Address, EthError> {
    let parity = match signature[64] {
        0 | 27 => false,
        1 | 28 => true,
        v => {
            return Err(EthError::field(
                "v",
                format!("expected 0, 1, 27 or 28, found {v}"),
            ))
        }
    };
    let signature = Signature::from_bytes_and_parity(&signature[..64], parity);
    Ok(signing::recover_prehash(hash, &signature)?.1)
}
