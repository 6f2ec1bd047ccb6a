//! Quantities: the one rule by which every front end (the CLI, JSON-RPC, REST) reads a number.
//!
//! A quantity is either a `0x`-prefixed hex string (Ethereum's JSON-RPC encoding, as geth's
//! `hexutil` reads it) or a JSON integer written as plain digits. A JSON integer is read from its
//! text (serde_json's `arbitrary_precision` keeps it), never through `f64`, so every value up to
//! 2^256 − 1 is exact. Everything else is refused with an error that names the field and says what
//! to write instead:
//!
//! * a decimal *string* (`"10"`): the old rule read it as hex (16), which signs a different
//!   nonce or moves a different amount than the caller meant; now it is refused, with the hex
//!   spelling and the JSON integer suggested;
//! * fractions, exponents (`1e+20`) and negative numbers;
//! * a value wider than the field (64 bits for a nonce or gas, 128 for fees, 256 for a value).
//!
//! Errors quote at most 80 characters of what was sent ([`chainsig_core::error::quote`]).

use alloy_primitives::U256;
use chainsig_core::error::quote as quoted;
use serde_json::Value;

use crate::EthError;

/// A quantity of up to 256 bits.
pub fn u256(value: &Value, field: &str) -> Result<U256, EthError> {
    match value {
        Value::String(text) => hex_quantity(text, field),
        Value::Number(number) => integer_text(&number.to_string(), field),
        _ => Err(EthError::field(
            field.to_owned(),
            "expected a quantity: a 0x-prefixed hex string or a JSON integer",
        )),
    }
}

/// A quantity of up to 128 bits (fees).
pub fn u128(value: &Value, field: &str) -> Result<u128, EthError> {
    narrow(u256(value, field)?, field, 128)
}

/// A quantity of up to 64 bits (nonces, gas, chain ids).
pub fn u64(value: &Value, field: &str) -> Result<u64, EthError> {
    narrow(u256(value, field)?, field, 64)
}

fn narrow<T: TryFrom<U256>>(value: U256, field: &str, bits: u32) -> Result<T, EthError> {
    T::try_from(value).map_err(|_| {
        EthError::field(
            field.to_owned(),
            format!("{value:#x} exceeds {bits} bits (at most 2^{bits} − 1)"),
        )
    })
}

fn hex_quantity(text: &str, field: &str) -> Result<U256, EthError> {
    let Some(digits) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) else {
        return Err(EthError::field(field.to_owned(), not_hex_advice(text)));
    };
    if digits.is_empty() {
        return Err(EthError::field(
            field.to_owned(),
            "empty hex quantity \"0x\" (zero is \"0x0\")",
        ));
    }
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(EthError::field(
            field.to_owned(),
            format!("{} is not a hex quantity", quoted(text)),
        ));
    }
    let significant = digits.trim_start_matches('0');
    if significant.len() > 64 {
        return Err(EthError::field(
            field.to_owned(),
            "exceeds 256 bits (at most 2^256 − 1)",
        ));
    }
    if significant.is_empty() {
        return Ok(U256::ZERO);
    }
    U256::from_str_radix(significant, 16).map_err(|e| {
        EthError::field(
            field.to_owned(),
            format!("{} is not a hex quantity: {e}", quoted(text)),
        )
    })
}

/// The longest decimal string for which the refusal spells out the accepted forms: past it the
/// two spellings alone would outgrow an error message (the quoted input is already cut).
const ADVICE_DIGITS: usize = 40;

/// Why a string without `0x` is refused, with the spellings that would be accepted when the
/// string is short decimal digits.
fn not_hex_advice(text: &str) -> String {
    let decimal =
        !text.is_empty() && text.len() <= ADVICE_DIGITS && text.bytes().all(|b| b.is_ascii_digit());
    if decimal {
        if let Ok(value) = U256::from_str_radix(text, 10) {
            return format!(
                "the string {} is not a quantity: strings must be 0x-prefixed hex; \
                 write {value:#x} or the JSON integer {value} (without quotes)",
                quoted(text)
            );
        }
    }
    format!(
        "the string {} is not a quantity: write 0x-prefixed hex (for example \"0x1a\") \
         or a JSON integer",
        quoted(text)
    )
}

/// A JSON number from its text: plain digits only.
fn integer_text(text: &str, field: &str) -> Result<U256, EthError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        let why = if text.starts_with('-') {
            "is negative"
        } else {
            "is not an integer written in plain digits (no fraction, no exponent)"
        };
        return Err(EthError::field(
            field.to_owned(),
            format!(
                "the number {} {why}; write the exact integer's digits or 0x-prefixed hex",
                quoted(text)
            ),
        ));
    }
    U256::from_str_radix(text, 10).map_err(|_| {
        EthError::field(
            field.to_owned(),
            "exceeds 256 bits (at most 2^256 − 1)".to_owned(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn hex_strings_and_plain_integers_are_exact() {
        assert_eq!(u64(&json!("0x10"), "nonce").unwrap(), 16);
        assert_eq!(u64(&json!("0X0"), "nonce").unwrap(), 0);
        assert_eq!(u64(&json!("0x0000a"), "nonce").unwrap(), 10);
        assert_eq!(u64(&parse("10"), "nonce").unwrap(), 10);
        // 100 ETH in wei: above 2^64, exact from the number's text.
        assert_eq!(
            u256(&parse("100000000000000000000"), "value").unwrap(),
            U256::from(100_000_000_000_000_000_000u128)
        );
        let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
        assert_eq!(u256(&parse(max), "value").unwrap(), U256::MAX);
        assert_eq!(
            u256(&json!(format!("0x{}", "f".repeat(64))), "value").unwrap(),
            U256::MAX
        );
        assert_eq!(u64(&json!("0xffffffffffffffff"), "gas").unwrap(), u64::MAX);
    }

    #[test]
    fn refusals_of_long_decimal_strings_stay_short() {
        // Found by the tx_json fuzzer: a long run of digits made the advice (hex and integer
        // spellings of the value) outgrow the message.
        let long = format!(
            "{}51{}5144581044581090589941527",
            "0".repeat(84),
            "0".repeat(44)
        );
        let forty = "1".repeat(ADVICE_DIGITS);
        for text in [long.as_str(), forty.as_str(), &"9".repeat(78)] {
            let e = u256(&json!(text), "gas").unwrap_err();
            let n = e.message().chars().count();
            assert!(n <= 240, "{n} characters: {}", e.message());
        }
        // At the limit the spellings are still given.
        let e = u256(&json!(forty), "gas").unwrap_err();
        assert!(e.message().contains("JSON integer 1111"), "{}", e.message());
    }

    #[test]
    fn everything_else_is_refused_by_name() {
        let refused = |v: Value, field: &str| {
            let e = u256(&v, field).unwrap_err();
            assert_eq!(e.field_name(), field, "{v}");
            e.message().to_owned()
        };
        let decimal = refused(json!("1000000000000000000"), "value");
        assert!(decimal.contains("0xde0b6b3a7640000"), "{decimal}");
        assert!(decimal.contains("1000000000000000000"), "{decimal}");
        assert!(refused(json!("10"), "nonce").contains("0xa"));
        refused(json!("ff"), "value");
        refused(json!(""), "value");
        refused(json!("0x"), "value");
        refused(json!("0xg1"), "value");
        refused(json!("-0x1"), "value");
        refused(parse("1e+20"), "value");
        refused(parse("1E3"), "value");
        refused(parse("1.0"), "value");
        refused(parse("-1"), "value");
        refused(parse("0.5"), "value");
        refused(json!(true), "value");
        refused(json!(null), "value");
        refused(json!([1]), "value");
        let max_plus_one =
            "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        refused(parse(max_plus_one), "value");
        refused(json!(format!("0x1{}", "0".repeat(64))), "value");
        assert!(u64(&json!("0x10000000000000000"), "nonce")
            .unwrap_err()
            .message()
            .contains("64 bits"));
        assert!(u128(
            &parse("340282366920938463463374607431768211456"),
            "maxFeePerGas"
        )
        .is_err());
    }

    #[test]
    fn long_values_are_quoted_short() {
        let long = "9".repeat(10_000);
        let message = u256(&json!(long), "value").unwrap_err().to_string();
        assert!(message.len() < 400, "{} bytes", message.len());
        assert!(message.contains("10000 characters"));
        let message = u256(&json!(format!("0x{}", "z".repeat(10_000))), "value")
            .unwrap_err()
            .to_string();
        assert!(message.len() < 400);
    }
}
