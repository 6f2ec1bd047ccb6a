//! Raw signed transactions taken apart ([`decode_raw`]: types 0–4, the sender recovered), and the
//! JSON of a signed transaction: [`DecodedTx::to_json`] for `chainsig eth decode`, and
//! [`DecodedTx::to_rpc_json`], the object geth's `eth_signTransaction` returns as `tx`.

use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{keccak256, Address, Signature, B256, U256};
use serde_json::{json, Map, Value};

use super::{SignedTx, TxType};
use crate::rawtx::{decode_fault, RawTxError};
use crate::signing::recover_prehash;
use crate::EthError;

/// A raw signed transaction taken apart: alloy's envelope, its signing hash, and the recovered sender.
#[derive(Clone, Debug)]
pub struct DecodedTx {
    /// The envelope as alloy decodes it.
    pub envelope: TxEnvelope,
    /// The type (0 to 4).
    pub tx_type: TxType,
    /// The hash the sender signed.
    pub signing_hash: B256,
    /// keccak256 of the raw bytes.
    pub hash: B256,
    /// The recovered sender.
    pub from: Address,
    /// The sender's uncompressed public key.
    pub public_key: [u8; 65],
}

/// The envelope of `raw`, its type, signing hash and signature, without recovering the sender;
/// a refusal carries its [`crate::rawtx::TxFault`].
pub(crate) fn open_envelope(
    raw: &[u8],
) -> Result<(TxEnvelope, TxType, B256, Signature), RawTxError> {
    if raw.is_empty() {
        return Err(RawTxError::empty());
    }
    let mut rest = raw;
    let envelope = TxEnvelope::decode_2718(&mut rest).map_err(|e| decode_fault(raw, e))?;
    if !rest.is_empty() {
        return Err(RawTxError::trailing(rest.len()));
    }
    let (tx_type, signing_hash, signature) = match &envelope {
        TxEnvelope::Legacy(s) => (TxType::Legacy, s.signature_hash(), *s.signature()),
        TxEnvelope::Eip2930(s) => (TxType::Eip2930, s.signature_hash(), *s.signature()),
        TxEnvelope::Eip1559(s) => (TxType::Eip1559, s.signature_hash(), *s.signature()),
        TxEnvelope::Eip4844(s) => (TxType::Eip4844, s.signature_hash(), *s.signature()),
        TxEnvelope::Eip7702(s) => (TxType::Eip7702, s.signature_hash(), *s.signature()),
    };
    Ok((envelope, tx_type, signing_hash, signature))
}

/// Decodes a raw signed transaction of type 0 to 4 and recovers its sender. A type-3 transaction
/// is read in its signed form, without the network sidecar.
pub fn decode_raw(raw: &[u8]) -> Result<DecodedTx, EthError> {
    let (envelope, tx_type, signing_hash, signature) = open_envelope(raw)?;
    let (public_key, from) = recover_prehash(&signing_hash, &signature)?;
    Ok(DecodedTx {
        tx_type,
        signing_hash,
        hash: keccak256(raw),
        from,
        public_key,
        envelope,
    })
}

impl SignedTx {
    /// The transaction as geth's `eth_signTransaction` returns it under `tx` (see
    /// [`DecodedTx::to_rpc_json`]); the sender is the signer, so nothing is recovered.
    pub fn to_rpc_json(&self) -> Value {
        let (envelope, tx_type, signing_hash, _) =
            open_envelope(&self.raw).expect("a transaction this crate encoded decodes");
        let mut object = fields_json(&envelope, tx_type, self.hash, signing_hash, self.from);
        add_rpc_fields(&mut object, &envelope, tx_type);
        Value::Object(object)
    }
}

fn signature_of(tx: &TxEnvelope) -> Signature {
    match tx {
        TxEnvelope::Legacy(s) => *s.signature(),
        TxEnvelope::Eip2930(s) => *s.signature(),
        TxEnvelope::Eip1559(s) => *s.signature(),
        TxEnvelope::Eip4844(s) => *s.signature(),
        TxEnvelope::Eip7702(s) => *s.signature(),
    }
}

impl DecodedTx {
    /// The fields as `chainsig eth decode` prints them: hex quantities, the signing hash and the sender.
    pub fn to_json(&self) -> Value {
        Value::Object(fields_json(
            &self.envelope,
            self.tx_type,
            self.hash,
            self.signing_hash,
            self.from,
        ))
    }

    /// The fields as geth's RPCTransaction has them for a transaction in no block: `to_json`'s,
    /// without `signingHash`, with `gasPrice` set to the fee cap for types 2–4 and null block fields.
    pub fn to_rpc_json(&self) -> Value {
        let mut object = fields_json(
            &self.envelope,
            self.tx_type,
            self.hash,
            self.signing_hash,
            self.from,
        );
        add_rpc_fields(&mut object, &self.envelope, self.tx_type);
        Value::Object(object)
    }
}

fn add_rpc_fields(object: &mut Map<String, Value>, tx: &TxEnvelope, tx_type: TxType) {
    object.remove("signingHash");
    if tx_type.has_fee_caps() {
        object.insert(
            "gasPrice".into(),
            quantity(U256::from(tx.max_fee_per_gas())),
        );
    }
    for name in ["blockHash", "blockNumber", "transactionIndex"] {
        object.insert(name.into(), Value::Null);
    }
}

fn fields_json(
    tx: &TxEnvelope,
    tx_type: TxType,
    hash: B256,
    signing_hash: B256,
    from: Address,
) -> Map<String, Value> {
    let signature = signature_of(tx);
    let mut out = Map::new();
    out.insert("type".into(), format!("{:#x}", tx_type.byte()).into());
    if let Some(chain_id) = tx.chain_id() {
        out.insert("chainId".into(), quantity(U256::from(chain_id)));
    }
    out.insert("nonce".into(), quantity(U256::from(tx.nonce())));
    out.insert("gas".into(), quantity(U256::from(tx.gas_limit())));
    if tx_type.has_fee_caps() {
        out.insert(
            "maxFeePerGas".into(),
            quantity(U256::from(tx.max_fee_per_gas())),
        );
        let tip = tx.max_priority_fee_per_gas().unwrap_or_default();
        out.insert("maxPriorityFeePerGas".into(), quantity(U256::from(tip)));
    } else {
        out.insert(
            "gasPrice".into(),
            quantity(U256::from(tx.gas_price().unwrap_or_default())),
        );
    }
    if let Some(blob_fee) = tx.max_fee_per_blob_gas() {
        out.insert("maxFeePerBlobGas".into(), quantity(U256::from(blob_fee)));
    }
    if let Some(hashes) = tx.blob_versioned_hashes() {
        let hashes: Vec<String> = hashes.iter().map(|h| format!("{h}")).collect();
        out.insert("blobVersionedHashes".into(), json!(hashes));
    }
    out.insert(
        "to".into(),
        tx.to()
            .map_or(Value::Null, |a| Value::String(a.to_checksum(None))),
    );
    out.insert("value".into(), quantity(tx.value()));
    out.insert(
        "input".into(),
        format!("0x{}", hex::encode(tx.input())).into(),
    );
    if let Some(list) = tx.access_list() {
        let items: Vec<Value> = list
            .iter()
            .map(|item| {
                json!({
                    "address": item.address.to_checksum(None),
                    "storageKeys": item.storage_keys.iter().map(|k| format!("{k}")).collect::<Vec<_>>(),
                })
            })
            .collect();
        out.insert("accessList".into(), Value::Array(items));
    }
    if let Some(list) = tx.authorization_list() {
        let items: Vec<Value> = list.iter().map(crate::authorization::to_json).collect();
        out.insert("authorizationList".into(), Value::Array(items));
    }
    let v = match (tx_type, tx.chain_id()) {
        (TxType::Legacy, Some(c)) => u128::from(c) * 2 + 35 + u128::from(signature.v()),
        (TxType::Legacy, None) => 27 + u128::from(signature.v()),
        _ => u128::from(signature.v()),
    };
    out.insert("v".into(), quantity(U256::from(v)));
    if tx_type != TxType::Legacy {
        out.insert(
            "yParity".into(),
            format!("{:#x}", u8::from(signature.v())).into(),
        );
    }
    out.insert("r".into(), quantity(signature.r()));
    out.insert("s".into(), quantity(signature.s()));
    out.insert("hash".into(), format!("{hash}").into());
    out.insert("signingHash".into(), format!("{signing_hash}").into());
    out.insert("from".into(), from.to_checksum(None).into());
    out
}

fn quantity(v: U256) -> Value {
    Value::String(format!("{v:#x}"))
}
