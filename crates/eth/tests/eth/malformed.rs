//! Malformed requests and raw transactions give errors that name the field, never panics.

use chainsig_eth::{decode_raw, PrivateKey, TxRequest};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::{json, Value};

fn base_1559() -> Value {
    json!({
        "chainId": "0x1", "nonce": "0x0", "gas": "0x5208", "to": "0x3535353535353535353535353535353535353535",
        "value": "0x1", "data": "0x", "maxFeePerGas": "0x64", "maxPriorityFeePerGas": "0x1"
    })
}

fn error_field(value: &Value) -> String {
    TxRequest::from_json(value)
        .unwrap_err()
        .field_name()
        .to_owned()
}

fn with(mut value: Value, key: &str, field: Value) -> Value {
    value[key] = field;
    value
}

fn without(mut value: Value, key: &str) -> Value {
    value.as_object_mut().unwrap().remove(key);
    value
}

#[test]
fn each_error_names_its_field() {
    let b = base_1559;
    assert!(TxRequest::from_json(&b()).is_ok());
    let cases: Vec<(Value, &str)> = vec![
        (with(b(), "maxFeePerGas", json!("0x0")), "maxFeePerGas"),
        (without(b(), "maxPriorityFeePerGas"), "maxPriorityFeePerGas"),
        (
            with(without(b(), "maxFeePerGas"), "type", json!("0x2")),
            "maxFeePerGas",
        ),
        (without(b(), "nonce"), "nonce"),
        (without(b(), "gas"), "gas"),
        (with(b(), "nonce", json!("0xzz")), "nonce"),
        (with(b(), "nonce", json!(-1)), "nonce"),
        (with(b(), "nonce", json!(1.5)), "nonce"),
        (with(b(), "nonce", json!("0x10000000000000000")), "nonce"),
        (with(b(), "nonce", json!("")), "nonce"),
        (with(b(), "nonce", json!(true)), "nonce"),
        (with(b(), "gas", json!([1])), "gas"),
        (
            with(b(), "value", json!(format!("0x1{}", "0".repeat(64)))),
            "value",
        ),
        (
            with(b(), "maxFeePerGas", json!(format!("0x1{}", "0".repeat(32)))),
            "maxFeePerGas",
        ),
        (with(b(), "to", json!("0x1234")), "to"),
        (
            with(
                b(),
                "to",
                json!("0xzz35353535353535353535353535353535353535"),
            ),
            "to",
        ),
        (with(b(), "to", json!(5)), "to"),
        (with(b(), "from", json!("0x12")), "from"),
        (with(b(), "data", json!("0x123")), "data"),
        (with(b(), "data", json!("0xgg")), "data"),
        (with(b(), "input", json!("0x12")), "input"),
        (with(b(), "gasPrice", json!("0x1")), "gasPrice"),
        (with(b(), "type", json!("0x3")), "maxFeePerBlobGas"),
        (with(b(), "type", json!("0x0")), "maxFeePerGas"),
        (with(b(), "accessList", json!({})), "accessList"),
        (with(b(), "accessList", json!([5])), "accessList[0]"),
        (
            with(b(), "accessList", json!([{"storageKeys": []}])),
            "accessList[0].address",
        ),
        (
            with(
                b(),
                "accessList",
                json!([{"address": "0x3535353535353535353535353535353535353535", "storageKeys": ["0x01"]}]),
            ),
            "accessList[0].storageKeys[0]",
        ),
        (json!({"nonce": 0, "gas": 21000}), "gasPrice"),
        (
            json!({"nonce": 0, "gas": 21000, "gasPrice": 1, "accessList": [], "type": 0}),
            "accessList",
        ),
        // Quantities: decimal strings, fractions, exponents and negatives are refused by name.
        (with(b(), "nonce", json!("10")), "nonce"),
        (with(b(), "value", json!("1000000000000000000")), "value"),
        (
            with(b(), "value", serde_json::from_str("1e+20").unwrap()),
            "value",
        ),
        (with(b(), "gas", json!("5208")), "gas"),
        // Types 3 and 4: their fields, their rules.
        (
            with(
                with(b(), "blobVersionedHashes", json!([])),
                "maxFeePerBlobGas",
                json!("0x1"),
            ),
            "blobVersionedHashes",
        ),
        (
            with(
                with(
                    b(),
                    "blobVersionedHashes",
                    json!([format!("0x02{}", "00".repeat(31))]),
                ),
                "maxFeePerBlobGas",
                json!("0x1"),
            ),
            "blobVersionedHashes[0]",
        ),
        (
            with(
                with(
                    b(),
                    "blobVersionedHashes",
                    json!([format!("0x01{}", "00".repeat(31))]),
                ),
                "maxFeePerBlobGas",
                json!("0x1"),
            )
            .as_object()
            .map(|o| {
                let mut o = o.clone();
                o.remove("to");
                Value::Object(o)
            })
            .unwrap(),
            "to",
        ),
        (
            with(b(), "maxFeePerBlobGas", json!("0x1")),
            "blobVersionedHashes",
        ),
        (with(b(), "type", json!("0x4")), "authorizationList"),
        (
            with(b(), "authorizationList", json!([])),
            "authorizationList",
        ),
        (
            with(
                b(),
                "authorizationList",
                json!([{"chainId": "0x1", "address": "0x3535353535353535353535353535353535353535", "nonce": "0x0", "yParity": "0x2", "r": "0x1", "s": "0x1"}]),
            ),
            "authorizationList[0].yParity",
        ),
        (
            with(
                b(),
                "authorizationList",
                json!([{"chainId": "1", "address": "0x3535353535353535353535353535353535353535", "nonce": "0x0", "yParity": "0x0", "r": "0x1", "s": "0x1"}]),
            ),
            "authorizationList[0].chainId",
        ),
        (with(b(), "blobs", json!(["0x00"])), "blobs"),
        (with(b(), "type", json!("0x5")), "type"),
        (json!([1, 2]), "json"),
        (json!("text"), "json"),
    ];
    for (value, field) in cases {
        assert_eq!(error_field(&value), field, "{value}");
    }
    let err = TxRequest::from_json(&with(b(), "maxFeePerGas", json!("0x0"))).unwrap_err();
    assert_eq!(err.to_string(), "maxFeePerGas: below maxPriorityFeePerGas");
    assert_eq!(
        TxRequest::from_json_str("{not json")
            .unwrap_err()
            .field_name(),
        "json"
    );
}

#[test]
fn accepted_spellings() {
    // Quantities as JSON integers or 0x-hex; bytes with or without 0x; `input` for `data`;
    // `gasLimit` for `gas`; null `to` creates.
    let a = TxRequest::from_json(&json!({
        "chainId": 1, "nonce": 5, "gas": 21000, "gasPrice": 7, "to": null, "input": "0xabcd"
    }))
    .unwrap();
    let b = TxRequest::from_json(&json!({
        "chainId": "0x1", "nonce": "0X5", "gasLimit": "0x5208", "gasPrice": "0x07", "data": "ABCD", "input": "0xabcd"
    }))
    .unwrap();
    assert_eq!(a, b);
    assert_eq!(a.to, None);
    // 100 ETH as a JSON integer: above 2^64, exact.
    let big: Value = serde_json::from_str(
        r#"{"chainId": 1, "nonce": 0, "gas": 21000, "gasPrice": 1, "value": 100000000000000000000}"#,
    )
    .unwrap();
    assert_eq!(
        TxRequest::from_json(&big).unwrap().value,
        alloy_primitives::U256::from(100_000_000_000_000_000_000u128)
    );
}

#[test]
fn from_must_match_the_key() {
    let key =
        PrivateKey::from_hex("4646464646464646464646464646464646464646464646464646464646464646")
            .unwrap();
    let good = with(
        base_1559(),
        "from",
        json!("0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f"),
    );
    assert!(TxRequest::from_json(&good).unwrap().sign(&key).is_ok());
    let bad = with(
        base_1559(),
        "from",
        json!("0x0000000000000000000000000000000000000001"),
    );
    assert_eq!(
        TxRequest::from_json(&bad)
            .unwrap()
            .sign(&key)
            .unwrap_err()
            .field_name(),
        "from"
    );
}

#[test]
fn random_mutations_never_panic() {
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    let text = base_1559().to_string();
    for _ in 0..3000 {
        let mut bytes = text.clone().into_bytes();
        for _ in 0..rng.gen_range(1..4) {
            let at = rng.gen_range(0..bytes.len());
            bytes[at] = b"0x1fgz\"{}[],:- 9e"[rng.gen_range(0..17)];
        }
        if let Ok(s) = std::str::from_utf8(&bytes) {
            let _ = TxRequest::from_json_str(s);
        }
    }
    for _ in 0..3000 {
        let len = rng.gen_range(0..120);
        let mut raw: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if !raw.is_empty() && rng.gen_bool(0.5) {
            raw[0] = rng.gen_range(0..4);
        }
        let _ = decode_raw(&raw);
    }
}

#[test]
fn decode_refuses_high_s_and_other_types() {
    // The EIP-155 example with s replaced by n - s (and v flipped) must be refused as not low-s.
    let raw = hex::decode("f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83").unwrap();
    let n = alloy_primitives::U256::from_str_radix(
        "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141",
        16,
    )
    .unwrap();
    let s = alloy_primitives::U256::from_be_slice(&raw[raw.len() - 32..]);
    let mut high = raw.clone();
    let len = high.len();
    high[len - 32..].copy_from_slice(&(n - s).to_be_bytes::<32>());
    high[len - 67] = 0x26; // v 37 ↔ 38
    assert_eq!(decode_raw(&high).unwrap_err().field_name(), "s");
    let mut trailing = raw.clone();
    trailing.push(0);
    assert_eq!(decode_raw(&trailing).unwrap_err().field_name(), "tx");
    assert_eq!(decode_raw(&[0x05, 0xc0]).unwrap_err().field_name(), "tx");
    assert_eq!(decode_raw(&[]).unwrap_err().field_name(), "tx");
}
