//! Transactions: the `eth_signTransaction` request ([`TxRequest`]), alloy's typed transactions built
//! from it (types 0–4: legacy with or without EIP-155, EIP-2930, EIP-1559, EIP-4844 without its
//! sidecar, EIP-7702), signing into the raw EIP-2718 envelope and its hash, and decoding raw signed
//! transactions ([`decode`]).
//!
//! * [`json`]: the request object read from JSON.
//! * [`decode`]: raw signed transactions taken apart, and the geth-style JSON of a transaction.
//!
//! Encoding is alloy's (alloy-consensus types, alloy-rlp). The criterion bench
//! (`eip1559_alloy_encode_and_hashes_only`) puts building, both RLP encodings, the envelope and both
//! keccak hashes at about 2.5 µs of a ~22–34 µs signed transaction on the 2-core development
//! machine; the rest is libsecp256k1's signature, so a hand-written encoder could not reach the
//! target either and is not worth its risk.

pub mod decode;
pub mod json;

use alloy_consensus::{
    SignableTransaction, Signed, Transaction, TxEip1559, TxEip2930, TxEip4844, TxEip4844Variant,
    TxEip7702, TxEnvelope, TxLegacy, TypedTransaction,
};
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip2930::AccessList;
use alloy_eips::eip7702::SignedAuthorization;
use alloy_primitives::{keccak256, Address, Bytes, Signature, TxKind, B256, U256};

use crate::chain::ChainPolicy;
use crate::key::PrivateKey;
use crate::signing::sign_prehash;
use crate::EthError;

/// Which envelope a request becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxType {
    /// Type 0: legacy, EIP-155 when it has a chain id.
    Legacy,
    /// Type 1: EIP-2930, with an access list.
    Eip2930,
    /// Type 2: EIP-1559, with fee caps.
    Eip1559,
    /// Type 3: EIP-4844, with blob versioned hashes (signed without the sidecar).
    Eip4844,
    /// Type 4: EIP-7702, with an authorization list.
    Eip7702,
}

impl TxType {
    /// The EIP-2718 type byte.
    pub fn byte(self) -> u8 {
        match self {
            TxType::Legacy => 0,
            TxType::Eip2930 => 1,
            TxType::Eip1559 => 2,
            TxType::Eip4844 => 3,
            TxType::Eip7702 => 4,
        }
    }

    /// Whether the type carries EIP-1559's fee caps instead of a gas price.
    pub fn has_fee_caps(self) -> bool {
        matches!(self, TxType::Eip1559 | TxType::Eip4844 | TxType::Eip7702)
    }
}

/// The transaction object of `eth_signTransaction`, parsed and checked field by field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxRequest {
    /// `from`: when present, must be the signing key's address.
    pub from: Option<Address>,
    /// `type`, when given explicitly.
    pub tx_type: Option<TxType>,
    /// `chainId`; absent until a [`ChainPolicy`] fills it in (or allows a pre-EIP-155 legacy one).
    pub chain_id: Option<u64>,
    /// `nonce`.
    pub nonce: u64,
    /// `gas` (or `gasLimit`).
    pub gas: u64,
    /// `to`; `None` creates a contract (not allowed in types 3 and 4).
    pub to: Option<Address>,
    /// `value` in wei.
    pub value: U256,
    /// `data` (or `input`).
    pub input: Bytes,
    /// `gasPrice` (legacy and EIP-2930).
    pub gas_price: Option<u128>,
    /// `maxFeePerGas` (types 2–4).
    pub max_fee_per_gas: Option<u128>,
    /// `maxPriorityFeePerGas` (types 2–4).
    pub max_priority_fee_per_gas: Option<u128>,
    /// `accessList` (types 1–4).
    pub access_list: Option<AccessList>,
    /// `maxFeePerBlobGas` (type 3).
    pub max_fee_per_blob_gas: Option<u128>,
    /// `blobVersionedHashes` (type 3).
    pub blob_versioned_hashes: Option<Vec<B256>>,
    /// `authorizationList` (type 4), signed authorizations.
    pub authorization_list: Option<Vec<SignedAuthorization>>,
}

/// A signed transaction: the raw envelope, its hash and the sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedTx {
    /// The EIP-2718 envelope (a plain RLP list for legacy transactions).
    pub raw: Vec<u8>,
    /// keccak256 of `raw`.
    pub hash: B256,
    /// The signer.
    pub from: Address,
    /// The nonce signed (a bulk signer fills nonces in, so its caller reports them).
    pub nonce: u64,
    /// The envelope's type.
    pub tx_type: TxType,
    /// The signature (y parity, r, s).
    pub signature: Signature,
}

/// EIP-4844's `VERSIONED_HASH_VERSION_KZG`, the first byte of every blob versioned hash.
const VERSIONED_HASH_VERSION_KZG: u8 = 0x01;

/// A field that is set but does not belong to the chosen type.
fn not_allowed(field: &str, tx_type: TxType) -> EthError {
    EthError::field(
        field.to_owned(),
        format!("not allowed in a type {:#x} transaction", tx_type.byte()),
    )
}

impl TxRequest {
    /// Decides the envelope type from `type` and the fields present, checking that they agree.
    pub fn resolve_type(&self) -> Result<TxType, EthError> {
        if self.nonce == u64::MAX {
            // EIP-2681: a nonce of 2^64 − 1 leaves no next nonce; such a transaction is invalid.
            return Err(EthError::field(
                "nonce",
                "2^64 − 1 is not a valid nonce (EIP-2681: at most 2^64 − 2)",
            ));
        }
        let has_fee_caps =
            self.max_fee_per_gas.is_some() || self.max_priority_fee_per_gas.is_some();
        let has_blobs = self.blob_versioned_hashes.is_some() || self.max_fee_per_blob_gas.is_some();
        let chosen = match self.tx_type {
            Some(t) => t,
            None if self.authorization_list.is_some() => TxType::Eip7702,
            None if has_blobs => TxType::Eip4844,
            None if has_fee_caps => TxType::Eip1559,
            None if self.gas_price.is_some() && self.access_list.is_some() => TxType::Eip2930,
            None if self.gas_price.is_some() => TxType::Legacy,
            None => {
                return Err(EthError::field(
                    "gasPrice",
                    "missing (or maxFeePerGas and maxPriorityFeePerGas)",
                ))
            }
        };
        if chosen != TxType::Eip4844 {
            if self.blob_versioned_hashes.is_some() {
                return Err(not_allowed("blobVersionedHashes", chosen));
            }
            if self.max_fee_per_blob_gas.is_some() {
                return Err(not_allowed("maxFeePerBlobGas", chosen));
            }
        }
        if chosen != TxType::Eip7702 && self.authorization_list.is_some() {
            return Err(not_allowed("authorizationList", chosen));
        }
        if chosen == TxType::Legacy && self.access_list.is_some() {
            return Err(not_allowed("accessList", chosen));
        }
        if chosen.has_fee_caps() {
            if self.gas_price.is_some() {
                return Err(not_allowed("gasPrice", chosen));
            }
            let max_fee = self
                .max_fee_per_gas
                .ok_or_else(|| EthError::field("maxFeePerGas", "missing"))?;
            let priority = self
                .max_priority_fee_per_gas
                .ok_or_else(|| EthError::field("maxPriorityFeePerGas", "missing"))?;
            if max_fee < priority {
                return Err(EthError::field(
                    "maxFeePerGas",
                    "below maxPriorityFeePerGas",
                ));
            }
        } else {
            if self.max_fee_per_gas.is_some() {
                return Err(not_allowed("maxFeePerGas", chosen));
            }
            if self.max_priority_fee_per_gas.is_some() {
                return Err(not_allowed("maxPriorityFeePerGas", chosen));
            }
            if self.gas_price.is_none() {
                return Err(EthError::field("gasPrice", "missing"));
            }
        }
        match chosen {
            TxType::Eip4844 => {
                if self.to.is_none() {
                    return Err(EthError::field(
                        "to",
                        "missing (a blob transaction cannot create a contract)",
                    ));
                }
                if self.max_fee_per_blob_gas.is_none() {
                    return Err(EthError::field("maxFeePerBlobGas", "missing"));
                }
                let hashes = self.blob_versioned_hashes.as_deref().unwrap_or_default();
                if hashes.is_empty() {
                    return Err(EthError::field(
                        "blobVersionedHashes",
                        "missing or empty (a blob transaction carries at least one blob)",
                    ));
                }
                if let Some(i) = hashes
                    .iter()
                    .position(|h| h[0] != VERSIONED_HASH_VERSION_KZG)
                {
                    return Err(EthError::field(
                        format!("blobVersionedHashes[{i}]"),
                        format!(
                            "version byte {:#04x} is not the KZG version 0x01 (EIP-4844)",
                            hashes[i][0]
                        ),
                    ));
                }
            }
            TxType::Eip7702 => {
                if self.to.is_none() {
                    return Err(EthError::field(
                        "to",
                        "missing (an EIP-7702 transaction cannot create a contract)",
                    ));
                }
                if self.authorization_list.as_ref().is_none_or(Vec::is_empty) {
                    return Err(EthError::field(
                        "authorizationList",
                        "missing or empty (EIP-7702 requires at least one authorization)",
                    ));
                }
            }
            _ => {}
        }
        Ok(chosen)
    }

    /// The unsigned alloy transaction. A typed transaction needs its chain id by now.
    pub fn to_typed(&self) -> Result<TypedTransaction, EthError> {
        let tx_type = self.resolve_type()?;
        let chain_id = match (tx_type, self.chain_id) {
            (TxType::Legacy, _) => 0,
            (_, Some(id)) => id,
            (_, None) => {
                return Err(EthError::field(
                    "chainId",
                    "missing (required for typed transactions)",
                ))
            }
        };
        let kind = self.to.map_or(TxKind::Create, TxKind::Call);
        let to = self.to.unwrap_or_default();
        let access_list = self.access_list.clone().unwrap_or_default();
        let gas_price = self.gas_price.unwrap_or_default();
        let max_fee_per_gas = self.max_fee_per_gas.unwrap_or_default();
        let max_priority_fee_per_gas = self.max_priority_fee_per_gas.unwrap_or_default();
        let input = self.input.clone();
        Ok(match tx_type {
            TxType::Legacy => TypedTransaction::Legacy(TxLegacy {
                chain_id: self.chain_id,
                nonce: self.nonce,
                gas_price,
                gas_limit: self.gas,
                to: kind,
                value: self.value,
                input,
            }),
            TxType::Eip2930 => TypedTransaction::Eip2930(TxEip2930 {
                chain_id,
                nonce: self.nonce,
                gas_price,
                gas_limit: self.gas,
                to: kind,
                value: self.value,
                access_list,
                input,
            }),
            TxType::Eip1559 => TypedTransaction::Eip1559(TxEip1559 {
                chain_id,
                nonce: self.nonce,
                gas_limit: self.gas,
                max_fee_per_gas,
                max_priority_fee_per_gas,
                to: kind,
                value: self.value,
                access_list,
                input,
            }),
            TxType::Eip4844 => TypedTransaction::Eip4844(TxEip4844Variant::TxEip4844(TxEip4844 {
                chain_id,
                nonce: self.nonce,
                gas_limit: self.gas,
                max_fee_per_gas,
                max_priority_fee_per_gas,
                to,
                value: self.value,
                access_list,
                blob_versioned_hashes: self.blob_versioned_hashes.clone().unwrap_or_default(),
                max_fee_per_blob_gas: self.max_fee_per_blob_gas.unwrap_or_default(),
                input,
            })),
            TxType::Eip7702 => TypedTransaction::Eip7702(TxEip7702 {
                chain_id,
                nonce: self.nonce,
                gas_limit: self.gas,
                max_fee_per_gas,
                max_priority_fee_per_gas,
                to,
                value: self.value,
                access_list,
                authorization_list: self.authorization_list.clone().unwrap_or_default(),
                input,
            }),
        })
    }

    /// The hash that is signed.
    pub fn signing_hash(&self) -> Result<B256, EthError> {
        Ok(self.to_typed()?.signature_hash())
    }

    /// Signs with `key` under the strict policy: the request must name its chain, and an
    /// unprotected signature is refused. See [`TxRequest::sign_with`].
    pub fn sign(&self, key: &PrivateKey) -> Result<SignedTx, EthError> {
        self.sign_with(key, &ChainPolicy::default())
    }

    /// Signs with `key` after `policy` has filled in or checked the chain id; `from`, when present,
    /// must be the key's address.
    pub fn sign_with(&self, key: &PrivateKey, policy: &ChainPolicy) -> Result<SignedTx, EthError> {
        Ok(sign_typed(self.typed_for(key, policy)?, key))
    }

    /// The checks of [`TxRequest::sign_with`] and the transaction it signs, unsigned.
    pub fn typed_for(
        &self,
        key: &PrivateKey,
        policy: &ChainPolicy,
    ) -> Result<TypedTransaction, EthError> {
        if let Some(from) = self.from {
            if from != key.address() {
                return Err(EthError::field(
                    "from",
                    format!("{from} is not the key's address {}", key.address()),
                ));
            }
        }
        let mut request = self.clone();
        policy.apply(&mut request)?;
        request.to_typed()
    }
}

/// The [`TxType`] of an alloy transaction.
pub fn type_of(tx: &TypedTransaction) -> TxType {
    match tx {
        TypedTransaction::Legacy(_) => TxType::Legacy,
        TypedTransaction::Eip2930(_) => TxType::Eip2930,
        TypedTransaction::Eip1559(_) => TxType::Eip1559,
        TypedTransaction::Eip4844(_) => TxType::Eip4844,
        TypedTransaction::Eip7702(_) => TxType::Eip7702,
    }
}

/// Signs an alloy transaction: signing hash, RFC 6979 low-s signature, envelope, hash.
pub fn sign_typed(tx: TypedTransaction, key: &PrivateKey) -> SignedTx {
    let mut buf = Vec::with_capacity(256);
    sign_typed_into(tx, key, &mut buf)
}

/// As [`sign_typed`], with a scratch buffer reused across calls.
pub fn sign_typed_into(tx: TypedTransaction, key: &PrivateKey, scratch: &mut Vec<u8>) -> SignedTx {
    let signature = sign_prehash(key.secret(), &signing_hash_into(&tx, scratch));
    seal(tx, key, signature)
}

/// Signs many transactions as [`sign_typed`] signs each (the same bytes), the signatures in one
/// [`crate::signing::sign_prehash_batch`]: in lanes when `lanes` is true.
pub fn sign_typed_batch(
    txs: Vec<(TypedTransaction, &PrivateKey)>,
    lanes: bool,
    scratch: &mut Vec<u8>,
) -> Vec<SignedTx> {
    let hashes: Vec<B256> = txs
        .iter()
        .map(|(tx, _)| signing_hash_into(tx, scratch))
        .collect();
    let keys: Vec<&secp256k1::SecretKey> = txs.iter().map(|(_, key)| key.secret()).collect();
    let signatures = crate::signing::sign_prehash_batch(&keys, &hashes, lanes);
    txs.into_iter()
        .zip(signatures)
        .map(|((tx, key), signature)| seal(tx, key, signature))
        .collect()
}

/// Signs the checked transactions among `items` (each with its own key) as [`sign_typed`] signs
/// each, refused items keeping their errors in their places: the valid ones in one
/// [`sign_typed_batch`] (in lanes where `lanes`).
pub fn sign_checked_batch(
    items: Vec<Result<(TypedTransaction, &PrivateKey), EthError>>,
    lanes: bool,
    scratch: &mut Vec<u8>,
) -> Vec<Result<SignedTx, EthError>> {
    let mut valid = Vec::with_capacity(items.len());
    let slots: Vec<Result<(), EthError>> = items
        .into_iter()
        .map(|item| item.map(|checked| valid.push(checked)))
        .collect();
    let mut signed = sign_typed_batch(valid, lanes, scratch).into_iter();
    slots
        .into_iter()
        .map(|slot| slot.map(|()| signed.next().expect("one signature per valid item")))
        .collect()
}

/// [`sign_checked_batch`] in lanes as `CHAINSIG_CPU_LANES` says
/// ([`crate::signing::lanes_for_batches`]); a misconfigured switch refuses every item that was
/// not refused already, naming the variable.
pub fn sign_checked(
    items: Vec<Result<(TypedTransaction, &PrivateKey), EthError>>,
    scratch: &mut Vec<u8>,
) -> Vec<Result<SignedTx, EthError>> {
    match crate::signing::lanes_for_batches() {
        Ok(lanes) => sign_checked_batch(items, lanes, scratch),
        Err(e) => items
            .into_iter()
            .map(|item| item.and(Err(e.clone())))
            .collect(),
    }
}

/// The hash a transaction's signature signs (keccak of its signing encoding).
fn signing_hash_into(tx: &TypedTransaction, scratch: &mut Vec<u8>) -> B256 {
    scratch.clear();
    tx.encode_for_signing(scratch);
    keccak256(&scratch[..])
}

/// The signed envelope, its raw bytes and hash.
fn seal(tx: TypedTransaction, key: &PrivateKey, signature: Signature) -> SignedTx {
    let tx_type = type_of(&tx);
    let nonce = tx.nonce();
    let envelope: TxEnvelope = Signed::new_unhashed(tx, signature).into();
    let mut raw = Vec::with_capacity(envelope.encode_2718_len());
    envelope.encode_2718(&mut raw);
    let hash = keccak256(&raw);
    SignedTx {
        raw,
        hash,
        from: key.address(),
        nonce,
        tx_type,
        signature,
    }
}
