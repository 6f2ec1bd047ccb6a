//! Typed protobuf transactions to [`TxRequest`]: byte lengths checked, quantities without
//! leading zeros, every error naming the proto field it came from.

use super::*;

fn address(field: &str, bytes: &[u8]) -> Result<Address, pb::ItemError> {
    if bytes.len() != 20 {
        return Err(invalid(
            field,
            format!("expected 20 bytes, found {}", bytes.len()),
        ));
    }
    Ok(Address::from_slice(bytes))
}

/// A big-endian unsigned integer of at most `max` significant bytes.
fn significant<'a>(field: &str, bytes: &'a [u8], max: usize) -> Result<&'a [u8], pb::ItemError> {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    let digits = &bytes[start..];
    if digits.len() > max {
        return Err(invalid(
            field,
            format!(
                "a {}-bit quantity is too large ({} significant bytes)",
                max * 8,
                digits.len()
            ),
        ));
    }
    Ok(digits)
}

fn quantity_u128(field: &str, bytes: &[u8]) -> Result<u128, pb::ItemError> {
    let digits = significant(field, bytes, 16)?;
    Ok(digits.iter().fold(0u128, |n, b| (n << 8) | u128::from(*b)))
}

fn quantity_u256(field: &str, bytes: &[u8]) -> Result<U256, pb::ItemError> {
    let digits = significant(field, bytes, 32)?;
    Ok(U256::from_be_slice(digits))
}

/// EIP-4844's versioned hashes (`None` when there are none, as JSON-RPC's absent field).
fn blob_hashes(hashes: Vec<Vec<u8>>) -> Result<Option<Vec<B256>>, pb::ItemError> {
    if hashes.is_empty() {
        return Ok(None);
    }
    hashes
        .iter()
        .enumerate()
        .map(|(i, hash)| {
            let field = format!("tx.blob_versioned_hashes[{i}]");
            if hash.len() != 32 {
                return Err(invalid(
                    &field,
                    format!("expected 32 bytes, found {}", hash.len()),
                ));
            }
            Ok(B256::from_slice(hash))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// EIP-7702's signed authorizations (`None` when there are none).
fn authorizations(
    list: Vec<pb::Authorization>,
) -> Result<Option<Vec<SignedAuthorization>>, pb::ItemError> {
    if list.is_empty() {
        return Ok(None);
    }
    list.into_iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |name: &str| format!("tx.authorization_list[{i}].{name}");
            if item.y_parity > 1 {
                return Err(invalid(&field("y_parity"), "must be 0 or 1"));
            }
            let inner = Authorization {
                chain_id: quantity_u256(&field("chain_id"), &item.chain_id)?,
                address: address(&field("address"), &item.address)?,
                nonce: item.nonce,
            };
            Ok(SignedAuthorization::new_unchecked(
                inner,
                item.y_parity as u8,
                quantity_u256(&field("r"), &item.r)?,
                quantity_u256(&field("s"), &item.s)?,
            ))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The [`TxRequest`] a proto transaction stands for, checked as JSON-RPC checks its object.
pub fn tx_request(tx: pb::Transaction) -> Result<TxRequest, pb::ItemError> {
    let tx_type = match tx.r#type {
        None => None,
        Some(0) => Some(TxType::Legacy),
        Some(1) => Some(TxType::Eip2930),
        Some(2) => Some(TxType::Eip1559),
        Some(3) => Some(TxType::Eip4844),
        Some(4) => Some(TxType::Eip7702),
        Some(other) => {
            return Err(invalid(
                "tx.type",
                format!("unsupported transaction type 0x{other:x}"),
            ))
        }
    };
    let access_list = match tx.access_list {
        None => None,
        Some(list) => {
            let mut items = Vec::with_capacity(list.items.len());
            for (i, item) in list.items.into_iter().enumerate() {
                let address =
                    address(&format!("tx.access_list.items[{i}].address"), &item.address)?;
                let mut storage_keys = Vec::with_capacity(item.storage_keys.len());
                for (j, key) in item.storage_keys.iter().enumerate() {
                    if key.len() != 32 {
                        return Err(invalid(
                            &format!("tx.access_list.items[{i}].storage_keys[{j}]"),
                            format!("expected 32 bytes, found {}", key.len()),
                        ));
                    }
                    storage_keys.push(B256::from_slice(key));
                }
                items.push(AccessListItem {
                    address,
                    storage_keys,
                });
            }
            Some(AccessList(items))
        }
    };
    let request = TxRequest {
        from: if tx.from.is_empty() {
            None
        } else {
            Some(address("tx.from", &tx.from)?)
        },
        tx_type,
        chain_id: tx.chain_id,
        nonce: tx.nonce,
        gas: tx.gas,
        to: if tx.to.is_empty() {
            None
        } else {
            Some(address("tx.to", &tx.to)?)
        },
        value: quantity_u256("tx.value", &tx.value)?,
        input: tx.data.into(),
        gas_price: tx
            .gas_price
            .map(|b| quantity_u128("tx.gas_price", &b))
            .transpose()?,
        max_fee_per_gas: tx
            .max_fee_per_gas
            .map(|b| quantity_u128("tx.max_fee_per_gas", &b))
            .transpose()?,
        max_priority_fee_per_gas: tx
            .max_priority_fee_per_gas
            .map(|b| quantity_u128("tx.max_priority_fee_per_gas", &b))
            .transpose()?,
        access_list,
        max_fee_per_blob_gas: tx
            .max_fee_per_blob_gas
            .map(|b| quantity_u128("tx.max_fee_per_blob_gas", &b))
            .transpose()?,
        blob_versioned_hashes: blob_hashes(tx.blob_versioned_hashes)?,
        authorization_list: authorizations(tx.authorization_list)?,
    };
    request
        .resolve_type()
        .map_err(|e| invalid(&format!("tx.{}", proto_field(e.field_name())), e.message()))?;
    Ok(request)
}
