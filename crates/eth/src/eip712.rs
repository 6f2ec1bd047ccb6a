//! EIP-712 typed structured data: `eth_signTypedData_v4` and clef's `account_signTypedData`.
//!
//! The signed hash is keccak256(0x19 ‖ 0x01 ‖ domainSeparator ‖ hashStruct(message)) (EIP-712,
//! "Specification of the eth_signTypedData JSON RPC"), with nested structs, arrays of any depth,
//! dynamic `bytes`/`string` hashed as the standard says. The encoding is alloy-dyn-abi's
//! [`TypedData`], the implementation alloy's signers use; ours is only reading the request and
//! signing the hash, so that every error names its place in the request.

use alloy_dyn_abi::TypedData;
use alloy_primitives::B256;
use serde_json::Value;

use crate::EthError;
use chainsig_core::error::quote as quoted;

/// Reads typed data given as a JSON object or as its JSON text (ethers and viem send the text,
/// web3.py the object); errors name `field`.
///
/// Integers are exact at any size: web3.py writes a uint256 as a JSON number, ethers and viem as
/// decimal text. alloy reads numbers only up to 64 bits, so a wider JSON integer is handed to it
/// as its decimal text (kept exact by serde_json's `arbitrary_precision`), which alloy reads
/// exactly and checks against the field's type.
pub fn parse(value: &Value, field: &str) -> Result<TypedData, EthError> {
    let not_json = |e: serde_json::Error| {
        EthError::field(
            field.to_owned(),
            format!("not EIP-712 typed data: {}", quoted(&e.to_string())),
        )
    };
    let mut value = match value {
        Value::String(text) => serde_json::from_str::<Value>(text).map_err(not_json)?,
        Value::Object(_) => value.clone(),
        _ => {
            return Err(EthError::field(
                field.to_owned(),
                "expected the typed data as a JSON object or its JSON text",
            ))
        }
    };
    wide_integers_as_text(&mut value);
    serde_json::from_value::<TypedData>(value).map_err(|e| {
        EthError::field(
            field.to_owned(),
            format!("not EIP-712 typed data: {}", quoted(&e.to_string())),
        )
    })
}

/// Replaces every JSON integer outside the 64-bit range with its decimal text.
fn wide_integers_as_text(value: &mut Value) {
    match value {
        Value::Number(number) if number.as_u64().is_none() && number.as_i64().is_none() => {
            let text = number.to_string();
            let digits = text.strip_prefix('-').unwrap_or(&text);
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                *value = Value::String(text);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(wide_integers_as_text),
        Value::Object(fields) => fields.values_mut().for_each(wide_integers_as_text),
        _ => {}
    }
}

/// The hash an EIP-712 signature signs.
pub fn signing_hash(data: &TypedData, field: &str) -> Result<B256, EthError> {
    data.eip712_signing_hash().map_err(|e| {
        EthError::field(
            field.to_owned(),
            format!("cannot be encoded: {}", quoted(&e.to_string())),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The example of EIP-712 itself ("Mail" from "Cow" to "Bob"), with its published hash.
    #[test]
    fn the_standard_example_hashes_as_published() {
        let mail = json!({
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "chainId", "type": "uint256"},
                    {"name": "verifyingContract", "type": "address"}
                ],
                "Person": [
                    {"name": "name", "type": "string"},
                    {"name": "wallet", "type": "address"}
                ],
                "Mail": [
                    {"name": "from", "type": "Person"},
                    {"name": "to", "type": "Person"},
                    {"name": "contents", "type": "string"}
                ]
            },
            "primaryType": "Mail",
            "domain": {
                "name": "Ether Mail",
                "version": "1",
                "chainId": 1,
                "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"
            },
            "message": {
                "from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
                "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
                "contents": "Hello, Bob!"
            }
        });
        let expected = "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2";
        let from_object = signing_hash(&parse(&mail, "params[1]").unwrap(), "params[1]").unwrap();
        assert_eq!(format!("{from_object}"), expected);
        let text = Value::String(mail.to_string());
        let from_text = signing_hash(&parse(&text, "params[1]").unwrap(), "params[1]").unwrap();
        assert_eq!(from_object, from_text);
    }

    /// A uint256 above 2^128 and an int256 below −2^128 as JSON numbers hash as their decimal text.
    #[test]
    fn wide_json_integers_are_exact() {
        let typed = |amount: &str, delta: &str| -> Value {
            serde_json::from_str(&format!(
                r#"{{"types": {{"EIP712Domain": [{{"name": "chainId", "type": "uint256"}}],
                    "Pay": [{{"name": "amount", "type": "uint256"}}, {{"name": "delta", "type": "int256"}}]}},
                  "primaryType": "Pay", "domain": {{"chainId": 1}},
                  "message": {{"amount": {amount}, "delta": {delta}}}}}"#
            ))
            .unwrap()
        };
        let big = "340282366920938463463374607431768211457";
        let negative = "-1606938044258990275541962092341162602522202993782792835301376";
        let from_numbers = typed(big, negative);
        let from_text = typed(&format!("\"{big}\""), &format!("\"{negative}\""));
        let hash = |v: &Value| signing_hash(&parse(v, "p").unwrap(), "p").unwrap();
        assert_eq!(hash(&from_numbers), hash(&from_text));
        assert_ne!(hash(&from_numbers), hash(&typed("1", "1")));
        // Too wide for the type: refused, not wrapped.
        let too_wide = typed(&format!("1{}", "0".repeat(78)), "0");
        assert!(parse(&too_wide, "p")
            .and_then(|t| signing_hash(&t, "p"))
            .is_err());
        // A fraction is never an integer.
        assert!(parse(&typed("1.5", "0"), "p")
            .and_then(|t| signing_hash(&t, "p"))
            .is_err());
    }

    #[test]
    fn malformed_typed_data_is_refused_by_name() {
        for bad in [json!(5), json!("not json"), json!({"types": 1})] {
            let e = parse(&bad, "params[1]").unwrap_err();
            assert_eq!(e.field_name(), "params[1]");
        }
    }
}
