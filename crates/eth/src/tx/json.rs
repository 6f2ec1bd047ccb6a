//! The `eth_signTransaction` request object read from JSON, field by field, every error naming the
//! field. Quantities follow the one rule of [`crate::quantity`]; byte strings are hex, with or
//! without `0x` (a byte string has only one reading, so the prefix changes nothing).

use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_primitives::{Address, B256};
use serde_json::{Map, Value};

use super::{TxRequest, TxType};
use crate::quantity::{self, quoted};
use crate::EthError;

/// The fields a request may carry only to send blobs over the network. The signer signs the
/// transaction itself; the sidecar (blobs, commitments, proofs) is not part of what is signed.
const SIDECAR_FIELDS: &[&str] = &["blobs", "commitments", "proofs", "sidecar"];

impl TxRequest {
    /// Parses a JSON text holding one request object.
    pub fn from_json_str(text: &str) -> Result<Self, EthError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| EthError::field("json", format!("not JSON: {e}")))?;
        Self::from_json(&value)
    }

    /// Parses the request object; every error names the offending field. The chain id may be
    /// absent here: a [`crate::ChainPolicy`] fills it in or refuses the request when it signs.
    pub fn from_json(value: &Value) -> Result<Self, EthError> {
        let fields = object(value, "json")?;
        if let Some(name) = SIDECAR_FIELDS.iter().find(|f| present(fields, f).is_some()) {
            return Err(EthError::field(
                *name,
                "blob sidecars are not signed: send the transaction without blobs, \
                 commitments and proofs (blobVersionedHashes commit to them)",
            ));
        }
        let tx_type = match present(fields, "type") {
            None => None,
            Some(v) => Some(match quantity::u64(v, "type")? {
                0 => TxType::Legacy,
                1 => TxType::Eip2930,
                2 => TxType::Eip1559,
                3 => TxType::Eip4844,
                4 => TxType::Eip7702,
                other => {
                    return Err(EthError::field(
                        "type",
                        format!("unsupported transaction type {other:#x} (0x0 to 0x4 are signed)"),
                    ));
                }
            }),
        };
        let gas = match (present(fields, "gas"), present(fields, "gasLimit")) {
            (Some(v), _) => quantity::u64(v, "gas")?,
            (None, Some(v)) => quantity::u64(v, "gasLimit")?,
            (None, None) => return Err(EthError::field("gas", "missing")),
        };
        let input = match (present(fields, "data"), present(fields, "input")) {
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
        let optional_u128 = |name: &str| {
            present(fields, name)
                .map(|v| quantity::u128(v, name))
                .transpose()
        };
        let request = TxRequest {
            from: present(fields, "from")
                .map(|v| address(v, "from"))
                .transpose()?,
            tx_type,
            chain_id: present(fields, "chainId")
                .map(|v| quantity::u64(v, "chainId"))
                .transpose()?,
            nonce: quantity::u64(
                present(fields, "nonce").ok_or_else(|| EthError::field("nonce", "missing"))?,
                "nonce",
            )?,
            gas,
            to: present(fields, "to")
                .map(|v| address(v, "to"))
                .transpose()?,
            value: present(fields, "value")
                .map(|v| quantity::u256(v, "value"))
                .transpose()?
                .unwrap_or_default(),
            input: input.into(),
            gas_price: optional_u128("gasPrice")?,
            max_fee_per_gas: optional_u128("maxFeePerGas")?,
            max_priority_fee_per_gas: optional_u128("maxPriorityFeePerGas")?,
            access_list: present(fields, "accessList").map(access_list).transpose()?,
            max_fee_per_blob_gas: optional_u128("maxFeePerBlobGas")?,
            blob_versioned_hashes: present(fields, "blobVersionedHashes")
                .map(blob_hashes)
                .transpose()?,
            authorization_list: present(fields, "authorizationList")
                .map(authorization_list)
                .transpose()?,
        };
        request.resolve_type()?;
        Ok(request)
    }
}

/// `value` as a JSON object; `field` names it in the error.
pub(crate) fn object<'a>(
    value: &'a Value,
    field: &str,
) -> Result<&'a Map<String, Value>, EthError> {
    value
        .as_object()
        .ok_or_else(|| EthError::field(field.to_owned(), "expected a JSON object"))
}

/// A field that is present and not null.
pub(crate) fn present<'a>(fields: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    fields.get(name).filter(|v| !v.is_null())
}

fn hex_digits<'a>(value: &'a Value, field: &str) -> Result<&'a str, EthError> {
    let text = value
        .as_str()
        .ok_or_else(|| EthError::field(field.to_owned(), "expected a hex string"))?;
    Ok(text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text))
}

/// Bytes written in hex.
pub(crate) fn hex_bytes(value: &Value, field: &str) -> Result<Vec<u8>, EthError> {
    let digits = hex_digits(value, field)?;
    hex::decode(digits).map_err(|e| {
        EthError::field(
            field.to_owned(),
            format!("{} is not hex bytes: {e}", quoted(digits)),
        )
    })
}

/// Exactly `N` bytes written in hex.
pub(crate) fn fixed_hex<const N: usize>(value: &Value, field: &str) -> Result<[u8; N], EthError> {
    let digits = hex_digits(value, field)?;
    if digits.len() != 2 * N {
        return Err(EthError::field(
            field.to_owned(),
            format!("expected {N} bytes, found {} hex digits", digits.len()),
        ));
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(digits, &mut out).map_err(|e| {
        EthError::field(
            field.to_owned(),
            format!("{} is not hex: {e}", quoted(digits)),
        )
    })?;
    Ok(out)
}

/// A 20-byte address in hex (checksum casing is not required).
pub(crate) fn address(value: &Value, field: &str) -> Result<Address, EthError> {
    fixed_hex::<20>(value, field).map(Address::from)
}

fn array<'a>(value: &'a Value, field: &str) -> Result<&'a Vec<Value>, EthError> {
    value
        .as_array()
        .ok_or_else(|| EthError::field(field.to_owned(), "expected an array"))
}

fn access_list(value: &Value) -> Result<AccessList, EthError> {
    let items = array(value, "accessList")?;
    let mut list = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let fields = object(item, &format!("accessList[{i}]"))?;
        let address = address(
            fields
                .get("address")
                .ok_or_else(|| EthError::field(format!("accessList[{i}].address"), "missing"))?,
            &format!("accessList[{i}].address"),
        )?;
        let keys_field = format!("accessList[{i}].storageKeys");
        let keys = match fields.get("storageKeys") {
            None | Some(Value::Null) => Vec::new(),
            Some(keys) => array(keys, &keys_field)?
                .iter()
                .enumerate()
                .map(|(j, k)| fixed_hex::<32>(k, &format!("{keys_field}[{j}]")).map(B256::from))
                .collect::<Result<Vec<_>, _>>()?,
        };
        list.push(AccessListItem {
            address,
            storage_keys: keys,
        });
    }
    Ok(AccessList(list))
}

/// EIP-4844's versioned hashes, 32 bytes each (their version byte is checked with the type).
fn blob_hashes(value: &Value) -> Result<Vec<B256>, EthError> {
    array(value, "blobVersionedHashes")?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            fixed_hex::<32>(item, &format!("blobVersionedHashes[{i}]")).map(B256::from)
        })
        .collect()
}

fn authorization_list(
    value: &Value,
) -> Result<Vec<alloy_eips::eip7702::SignedAuthorization>, EthError> {
    array(value, "authorizationList")?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            crate::authorization::parse_signed(item, &format!("authorizationList[{i}]"))
        })
        .collect()
}
