//! EIP-7702 authorizations: the tuple `(chain_id, address, nonce)` an account signs to delegate its
//! code to `address`, carried in a type-4 transaction's `authorizationList`.
//!
//! The signing hash is keccak256(0x05 ‖ rlp([chain_id, address, nonce])) (EIP-7702, `MAGIC` 0x05),
//! computed by alloy's [`Authorization::signature_hash`]; the signature is the same RFC 6979 low-s
//! ECDSA as a transaction's, with `yParity` in {0, 1}.

use alloy_eips::eip7702::{Authorization, SignedAuthorization};
use alloy_primitives::U256;
use serde_json::{json, Map, Value};

use crate::chain::ChainPolicy;
use crate::key::PrivateKey;
use crate::quantity;
use crate::signing::sign_prehash;
use crate::tx::json::{address, object};
use crate::EthError;

/// Reads an unsigned authorization `{chainId, address, nonce}`; errors name `prefix.field`.
pub fn parse(value: &Value, prefix: &str) -> Result<Authorization, EthError> {
    let fields = object(value, prefix)?;
    let field = |name: &str| -> Result<&Value, EthError> {
        fields
            .get(name)
            .filter(|v| !v.is_null())
            .ok_or_else(|| EthError::field(join(prefix, name), "missing"))
    };
    Ok(Authorization {
        chain_id: quantity::u256(field("chainId")?, &join(prefix, "chainId"))?,
        address: address(field("address")?, &join(prefix, "address"))?,
        nonce: quantity::u64(field("nonce")?, &join(prefix, "nonce"))?,
    })
}

/// Reads a signed authorization `{chainId, address, nonce, yParity, r, s}` (a type-4 list item).
pub fn parse_signed(value: &Value, prefix: &str) -> Result<SignedAuthorization, EthError> {
    let inner = parse(value, prefix)?;
    let fields = object(value, prefix)?;
    let field = |name: &str| -> Result<U256, EthError> {
        let v = fields
            .get(name)
            .filter(|v| !v.is_null())
            .ok_or_else(|| EthError::field(join(prefix, name), "missing"))?;
        quantity::u256(v, &join(prefix, name))
    };
    let y_parity = field("yParity")?;
    if y_parity > U256::from(1) {
        return Err(EthError::field(
            join(prefix, "yParity"),
            format!("{y_parity:#x} is not 0 or 1"),
        ));
    }
    Ok(SignedAuthorization::new_unchecked(
        inner,
        y_parity.to::<u8>(),
        field("r")?,
        field("s")?,
    ))
}

/// Signs `authorization` with `key`, after `policy`'s check of chain id 0.
pub fn sign(
    authorization: Authorization,
    key: &PrivateKey,
    policy: &ChainPolicy,
) -> Result<SignedAuthorization, EthError> {
    if authorization.chain_id.is_zero() {
        policy.check_unprotected(
            "chainId",
            "an authorization for chain id 0 (valid on every chain)",
        )?;
    }
    let signature = sign_prehash(key.secret(), &authorization.signature_hash());
    Ok(authorization.into_signed(signature))
}

/// The JSON form geth and eth-account use: hex quantities, checksummed address.
pub fn to_json(auth: &SignedAuthorization) -> Value {
    let mut out = Map::new();
    out.insert("chainId".into(), json!(format!("{:#x}", auth.chain_id)));
    out.insert("address".into(), json!(auth.address.to_checksum(None)));
    out.insert("nonce".into(), json!(format!("{:#x}", auth.nonce)));
    out.insert("yParity".into(), json!(format!("{:#x}", auth.y_parity())));
    out.insert("r".into(), json!(format!("{:#x}", auth.r())));
    out.insert("s".into(), json!(format!("{:#x}", auth.s())));
    Value::Object(out)
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}
