//! Transactions: the `eth_signTransaction` request object, building alloy's typed transactions from
//! it, signing, the raw EIP-2718 envelope and its hash, and decoding raw signed transactions.
//!
//! Encoding is alloy's (alloy-consensus types, alloy-rlp). The criterion bench
//! (`eip1559_alloy_encode_and_hashes_only`) puts building, both RLP encodings, the envelope and both
//! keccak hashes at about 2.5 µs of a ~22–34 µs signed transaction on the 2-core development
//! machine; the rest is libsecp256k1's signature, so a hand-written encoder could not reach the
//! target either and is not worth its risk.

use alloy_consensus::{
    SignableTransaction, Signed, Transaction, TxEip1559, TxEip2930, TxEnvelope, TxLegacy,
    TypedTransaction,
};
use alloy_eips::eip2718::{Decodable2718, Encodable2718, Typed2718};
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_primitives::{keccak256, Address, Bytes, Signature, TxKind, B256, U256};
use serde_json::{Map, Value};

use crate::key::PrivateKey;
use crate::signing::{recover_prehash, sign_prehash};
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
}

impl TxType {
    /// The EIP-2718 type byte.
    pub fn byte(self) -> u8 {
        match self {
            TxType::Legacy => 0,
            TxType::Eip2930 => 1,
            TxType::Eip1559 => 2,
        }
    }
}

/// The transaction object of `eth_signTransaction`, parsed and checked field by field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxRequest {
    /// `from`: when present, must be the signing key's address.
    pub from: Option<Address>,
    /// `type`, when given explicitly.
    pub tx_type: Option<TxType>,
    /// `chainId`; absent means a pre-EIP-155 legacy transaction.
    pub chain_id: Option<u64>,
    /// `nonce`.
    pub nonce: u64,
    /// `gas` (or `gasLimit`).
    pub gas: u64,
    /// `to`; `None` creates a contract.
    pub to: Option<Address>,
    /// `value` in wei.
    pub value: U256,
    /// `data` (or `input`).
    pub input: Bytes,
    /// `gasPrice` (legacy and EIP-2930).
    pub gas_price: Option<u128>,
    /// `maxFeePerGas` (EIP-1559).
    pub max_fee_per_gas: Option<u128>,
    /// `maxPriorityFeePerGas` (EIP-1559).
    pub max_priority_fee_per_gas: Option<u128>,
    /// `accessList` (EIP-2930 and EIP-1559).
    pub access_list: Option<AccessList>,
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
    /// The envelope's type.
    pub tx_type: TxType,
    /// The signature (y parity, r, s).
    pub signature: Signature,
}

impl TxRequest {
    /// Parses a JSON text holding one request object.
    pub fn from_json_str(text: &str) -> Result<Self, EthError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| EthError::field("json", e.to_string()))?;
        Self::from_json(&value)
    }

    /// Parses the request object; every error names the offending field.
    pub fn from_json(value: &Value) -> Result<Self, EthError> {
        let object = value
            .as_object()
            .ok_or_else(|| EthError::field("json", "expected a JSON object"))?;
        let tx_type = match present(object, "type") {
            None => None,
            Some(v) => Some(match quantity_u64(v, "type")? {
                0 => TxType::Legacy,
                1 => TxType::Eip2930,
                2 => TxType::Eip1559,
                other => {
                    return Err(EthError::field(
                        "type",
                        format!("unsupported transaction type 0x{other:x}"),
                    ));
                }
            }),
        };
        let gas = match (present(object, "gas"), present(object, "gasLimit")) {
            (Some(v), _) => quantity_u64(v, "gas")?,
            (None, Some(v)) => quantity_u64(v, "gasLimit")?,
            (None, None) => return Err(EthError::field("gas", "missing")),
        };
        let input = match (present(object, "data"), present(object, "input")) {
            (Some(d), Some(i)) => {
                let data = hex_bytes(d, "data")?;
                if data != hex_bytes(i, "input")? {
                    return Err(EthError::field("input", "differs from data"));
                }
                data
            }
            (Some(d), None) => hex_bytes(d, "data")?,
            (None, Some(i)) => hex_bytes(i, "input")?,
            (None, None) => Vec::new(),
        };
        let request = TxRequest {
            from: present(object, "from")
                .map(|v| address(v, "from"))
                .transpose()?,
            tx_type,
            chain_id: present(object, "chainId")
                .map(|v| quantity_u64(v, "chainId"))
                .transpose()?,
            nonce: quantity_u64(
                present(object, "nonce").ok_or_else(|| EthError::field("nonce", "missing"))?,
                "nonce",
            )?,
            gas,
            to: present(object, "to")
                .map(|v| address(v, "to"))
                .transpose()?,
            value: present(object, "value")
                .map(|v| quantity_u256(v, "value"))
                .transpose()?
                .unwrap_or_default(),
            input: input.into(),
            gas_price: present(object, "gasPrice")
                .map(|v| quantity_u128(v, "gasPrice"))
                .transpose()?,
            max_fee_per_gas: present(object, "maxFeePerGas")
                .map(|v| quantity_u128(v, "maxFeePerGas"))
                .transpose()?,
            max_priority_fee_per_gas: present(object, "maxPriorityFeePerGas")
                .map(|v| quantity_u128(v, "maxPriorityFeePerGas"))
                .transpose()?,
            access_list: present(object, "accessList").map(access_list).transpose()?,
        };
        request.resolve_type()?;
        Ok(request)
    }

    /// Decides the envelope type from `type` and the fee fields, checking that they agree.
    pub fn resolve_type(&self) -> Result<TxType, EthError> {
        let has_1559_fees =
            self.max_fee_per_gas.is_some() || self.max_priority_fee_per_gas.is_some();
        let chosen = match self.tx_type {
            Some(t) => t,
            None if has_1559_fees => TxType::Eip1559,
            None if self.gas_price.is_some() && self.access_list.is_some() => TxType::Eip2930,
            None if self.gas_price.is_some() => TxType::Legacy,
            None => {
                return Err(EthError::field(
                    "gasPrice",
                    "missing (or maxFeePerGas and maxPriorityFeePerGas)",
                ))
            }
        };
        match chosen {
            TxType::Legacy | TxType::Eip2930 => {
                if has_1559_fees {
                    let field = if self.max_fee_per_gas.is_some() {
                        "maxFeePerGas"
                    } else {
                        "maxPriorityFeePerGas"
                    };
                    return Err(EthError::field(
                        field.to_owned(),
                        "not allowed without EIP-1559 (type 0x2)",
                    ));
                }
                if self.gas_price.is_none() {
                    return Err(EthError::field("gasPrice", "missing"));
                }
                if chosen == TxType::Legacy && self.access_list.is_some() {
                    return Err(EthError::field(
                        "accessList",
                        "not allowed in a legacy (type 0x0) transaction",
                    ));
                }
            }
            TxType::Eip1559 => {
                if self.gas_price.is_some() {
                    return Err(EthError::field(
                        "gasPrice",
                        "not allowed in an EIP-1559 transaction",
                    ));
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
            }
        }
        if chosen != TxType::Legacy && self.chain_id.is_none() {
            return Err(EthError::field(
                "chainId",
                "missing (required for typed transactions)",
            ));
        }
        Ok(chosen)
    }

    /// The unsigned alloy transaction.
    pub fn to_typed(&self) -> Result<TypedTransaction, EthError> {
        let to = self.to.map_or(TxKind::Create, TxKind::Call);
        let access_list = self.access_list.clone().unwrap_or_default();
        Ok(match self.resolve_type()? {
            TxType::Legacy => TypedTransaction::Legacy(TxLegacy {
                chain_id: self.chain_id,
                nonce: self.nonce,
                gas_price: self.gas_price.unwrap_or_default(),
                gas_limit: self.gas,
                to,
                value: self.value,
                input: self.input.clone(),
            }),
            TxType::Eip2930 => TypedTransaction::Eip2930(TxEip2930 {
                chain_id: self.chain_id.unwrap_or_default(),
                nonce: self.nonce,
                gas_price: self.gas_price.unwrap_or_default(),
                gas_limit: self.gas,
                to,
                value: self.value,
                access_list,
                input: self.input.clone(),
            }),
            TxType::Eip1559 => TypedTransaction::Eip1559(TxEip1559 {
                chain_id: self.chain_id.unwrap_or_default(),
                nonce: self.nonce,
                gas_limit: self.gas,
                max_fee_per_gas: self.max_fee_per_gas.unwrap_or_default(),
                max_priority_fee_per_gas: self.max_priority_fee_per_gas.unwrap_or_default(),
                to,
                value: self.value,
                access_list,
                input: self.input.clone(),
            }),
        })
    }

    /// The hash that is signed.
    pub fn signing_hash(&self) -> Result<B256, EthError> {
        Ok(self.to_typed()?.signature_hash())
    }

    /// Signs with `key`; `from`, when present, must be the key's address.
    pub fn sign(&self, key: &PrivateKey) -> Result<SignedTx, EthError> {
        if let Some(from) = self.from {
            if from != key.address() {
                return Err(EthError::field(
                    "from",
                    format!("{from} is not the key's address {}", key.address()),
                ));
            }
        }
        Ok(sign_typed(self.to_typed()?, key))
    }
}

/// Signs an alloy transaction: signing hash, RFC 6979 low-s signature, envelope, hash.
pub fn sign_typed(tx: TypedTransaction, key: &PrivateKey) -> SignedTx {
    let mut buf = Vec::with_capacity(256);
    sign_typed_into(tx, key, &mut buf)
}

/// As [`sign_typed`], with a scratch buffer reused across calls.
pub fn sign_typed_into(tx: TypedTransaction, key: &PrivateKey, scratch: &mut Vec<u8>) -> SignedTx {
    scratch.clear();
    tx.encode_for_signing(scratch);
    let signature = sign_prehash(key.secret(), &keccak256(&scratch[..]));
    let tx_type = match tx {
        TypedTransaction::Legacy(_) => TxType::Legacy,
        TypedTransaction::Eip2930(_) => TxType::Eip2930,
        _ => TxType::Eip1559,
    };
    let envelope: TxEnvelope = Signed::new_unhashed(tx, signature).into();
    let mut raw = Vec::with_capacity(envelope.encode_2718_len());
    envelope.encode_2718(&mut raw);
    let hash = keccak256(&raw);
    SignedTx {
        raw,
        hash,
        from: key.address(),
        tx_type,
        signature,
    }
}

/// A raw signed transaction taken apart: alloy's envelope, its signing hash, and the recovered sender.
#[derive(Clone, Debug)]
pub struct DecodedTx {
    /// The envelope as alloy decodes it.
    pub envelope: TxEnvelope,
    /// The type (legacy, EIP-2930 or EIP-1559; other types are refused).
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

/// Decodes a raw signed legacy, EIP-2930 or EIP-1559 transaction and recovers its sender.
pub fn decode_raw(raw: &[u8]) -> Result<DecodedTx, EthError> {
    if raw.is_empty() {
        return Err(EthError::field("tx", "empty"));
    }
    let mut rest = raw;
    let envelope = TxEnvelope::decode_2718(&mut rest)
        .map_err(|e| EthError::field("tx", format!("does not decode: {e}")))?;
    if !rest.is_empty() {
        return Err(EthError::field(
            "tx",
            format!("{} trailing bytes after the transaction", rest.len()),
        ));
    }
    let (tx_type, signing_hash, signature) = match &envelope {
        TxEnvelope::Legacy(s) => (TxType::Legacy, s.signature_hash(), *s.signature()),
        TxEnvelope::Eip2930(s) => (TxType::Eip2930, s.signature_hash(), *s.signature()),
        TxEnvelope::Eip1559(s) => (TxType::Eip1559, s.signature_hash(), *s.signature()),
        other => {
            return Err(EthError::field(
                "tx",
                format!("unsupported transaction type 0x{:x}", other.ty()),
            ));
        }
    };
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

impl DecodedTx {
    /// The fields as an `eth_getTransactionByHash`-style JSON object (hex quantities).
    pub fn to_json(&self) -> Value {
        let tx = &self.envelope;
        let signature = match tx {
            TxEnvelope::Legacy(s) => *s.signature(),
            TxEnvelope::Eip2930(s) => *s.signature(),
            TxEnvelope::Eip1559(s) => *s.signature(),
            _ => unreachable!("decode_raw refuses other types"),
        };
        let mut out = Map::new();
        out.insert("type".into(), format!("0x{:x}", self.tx_type.byte()).into());
        if let Some(chain_id) = tx.chain_id() {
            out.insert("chainId".into(), quantity(U256::from(chain_id)));
        }
        out.insert("nonce".into(), quantity(U256::from(tx.nonce())));
        out.insert("gas".into(), quantity(U256::from(tx.gas_limit())));
        match self.tx_type {
            TxType::Eip1559 => {
                out.insert(
                    "maxFeePerGas".into(),
                    quantity(U256::from(tx.max_fee_per_gas())),
                );
                let tip = tx.max_priority_fee_per_gas().unwrap_or_default();
                out.insert("maxPriorityFeePerGas".into(), quantity(U256::from(tip)));
            }
            _ => {
                out.insert(
                    "gasPrice".into(),
                    quantity(U256::from(tx.gas_price().unwrap_or_default())),
                );
            }
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
                    serde_json::json!({
                        "address": item.address.to_checksum(None),
                        "storageKeys": item.storage_keys.iter().map(|k| format!("{k}")).collect::<Vec<_>>(),
                    })
                })
                .collect();
            out.insert("accessList".into(), Value::Array(items));
        }
        let v = match (self.tx_type, tx.chain_id()) {
            (TxType::Legacy, Some(c)) => u128::from(c) * 2 + 35 + u128::from(signature.v()),
            (TxType::Legacy, None) => 27 + u128::from(signature.v()),
            _ => u128::from(signature.v()),
        };
        out.insert("v".into(), quantity(U256::from(v)));
        if self.tx_type != TxType::Legacy {
            out.insert(
                "yParity".into(),
                format!("0x{:x}", u8::from(signature.v())).into(),
            );
        }
        out.insert("r".into(), quantity(signature.r()));
        out.insert("s".into(), quantity(signature.s()));
        out.insert("hash".into(), format!("{}", self.hash).into());
        out.insert(
            "signingHash".into(),
            format!("{}", self.signing_hash).into(),
        );
        out.insert("from".into(), self.from.to_checksum(None).into());
        Value::Object(out)
    }
}

fn quantity(v: U256) -> Value {
    Value::String(format!("{v:#x}"))
}

/// A field that is present and not null.
fn present<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    object.get(name).filter(|v| !v.is_null())
}

fn strip_0x(s: &str) -> &str {
    s.strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s)
}

/// A quantity: a hex string (with or without `0x`) or a non-negative JSON integer.
fn quantity_u256(value: &Value, field: &str) -> Result<U256, EthError> {
    match value {
        Value::String(s) => {
            let digits = strip_0x(s);
            if digits.is_empty() {
                return Err(EthError::field(field.to_owned(), "empty quantity"));
            }
            if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(EthError::field(
                    field.to_owned(),
                    format!("not a hex quantity: {}", chainsig_core::error::quote(s)),
                ));
            }
            let digits = digits.trim_start_matches('0');
            if digits.len() > 64 {
                return Err(EthError::field(field.to_owned(), "exceeds 256 bits"));
            }
            U256::from_str_radix(if digits.is_empty() { "0" } else { digits }, 16)
                .map_err(|e| EthError::field(field.to_owned(), format!("not a hex quantity: {e}")))
        }
        Value::Number(n) => match n.as_u64() {
            Some(v) => Ok(U256::from(v)),
            None => Err(EthError::field(
                field.to_owned(),
                format!("not a non-negative integer: {n}"),
            )),
        },
        _ => Err(EthError::field(
            field.to_owned(),
            "expected a hex string or an integer",
        )),
    }
}

fn quantity_u128(value: &Value, field: &str) -> Result<u128, EthError> {
    u128::try_from(quantity_u256(value, field)?)
        .map_err(|_| EthError::field(field.to_owned(), "exceeds 128 bits"))
}

fn quantity_u64(value: &Value, field: &str) -> Result<u64, EthError> {
    u64::try_from(quantity_u256(value, field)?)
        .map_err(|_| EthError::field(field.to_owned(), "exceeds 64 bits"))
}

fn hex_string<'a>(value: &'a Value, field: &str) -> Result<&'a str, EthError> {
    value
        .as_str()
        .map(strip_0x)
        .ok_or_else(|| EthError::field(field.to_owned(), "expected a hex string"))
}

fn hex_bytes(value: &Value, field: &str) -> Result<Vec<u8>, EthError> {
    hex::decode(hex_string(value, field)?)
        .map_err(|e| EthError::field(field.to_owned(), format!("bad hex: {e}")))
}

fn fixed_hex<const N: usize>(value: &Value, field: &str) -> Result<[u8; N], EthError> {
    let digits = hex_string(value, field)?;
    if digits.len() != 2 * N {
        return Err(EthError::field(
            field.to_owned(),
            format!("expected {N} bytes, found {} hex digits", digits.len()),
        ));
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(digits, &mut out)
        .map_err(|e| EthError::field(field.to_owned(), format!("bad hex: {e}")))?;
    Ok(out)
}

fn address(value: &Value, field: &str) -> Result<Address, EthError> {
    fixed_hex::<20>(value, field).map(Address::from)
}

fn access_list(value: &Value) -> Result<AccessList, EthError> {
    let items = value
        .as_array()
        .ok_or_else(|| EthError::field("accessList", "expected an array"))?;
    let mut list = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let object = item
            .as_object()
            .ok_or_else(|| EthError::field(format!("accessList[{i}]"), "expected an object"))?;
        let address = address(
            object
                .get("address")
                .ok_or_else(|| EthError::field(format!("accessList[{i}].address"), "missing"))?,
            &format!("accessList[{i}].address"),
        )?;
        let keys_field = format!("accessList[{i}].storageKeys");
        let keys = match object.get("storageKeys") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(keys)) => keys
                .iter()
                .enumerate()
                .map(|(j, k)| fixed_hex::<32>(k, &format!("{keys_field}[{j}]")).map(B256::from))
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(EthError::field(keys_field, "expected an array")),
        };
        list.push(AccessListItem {
            address,
            storage_keys: keys,
        });
    }
    Ok(AccessList(list))
}
