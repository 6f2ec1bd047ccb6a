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

use crate::quantity::quoted;
use crate::EthError;

/// Reads typed data given as a JSON object or as its JSON text (ethers and viem send the text,
/// web3.py the object); errors name `field`.
pub fn parse(value: &Value, field: &str) -> Result<TypedData, EthError> {
    let parsed = match value {
        Value::String(text) => serde_json::from_str::<TypedData>(text),
        Value::Object(_) => serde_json::from_value::<TypedData>(value.clone()),
        _ => {
            return Err(EthError::field(
                field.to_owned(),
                "expected the typed data as a JSON object or its JSON text",
            ))
        }
    };
    parsed.map_err(|e| {
        EthError::field(
            field.to_owned(),
            format!("not EIP-712 typed data: {}", quoted(&e.to_string())),
        )
    })
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

    #[test]
    fn malformed_typed_data_is_refused_by_name() {
        for bad in [json!(5), json!("not json"), json!({"types": 1})] {
            let e = parse(&bad, "params[1]").unwrap_err();
            assert_eq!(e.field_name(), "params[1]");
        }
    }
}
