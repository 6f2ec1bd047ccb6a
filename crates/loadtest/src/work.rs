//! What the HTTP scenarios send and how each answer is checked: `eth_signTransaction` bodies with
//! distinct nonces (`sign`), `chainsig_verifyBatch` bodies drawn from a pool of generated batches
//! whose verdicts are known (`verify`). An answer is parsed into typed structs rather than
//! `serde_json::Value` trees, and is an *error* when it is not what was asked: a JSON-RPC error, an
//! id other than the request's, a transaction that is not a signed EIP-1559 envelope or (one in
//! [`FULL_CHECK_EVERY`]) does not recover to the account, a verdict that disagrees with the
//! generator's.

use crate::args::Plan;
use chainsig_testkit::{record, GenSpec};
use rayon::prelude::*;
use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};

/// Verify batches are drawn round-robin from this many pre-generated distinct batches at most.
const VERIFY_POOL: usize = 32;
/// One signing answer in this many is decoded in full and its sender recovered and compared
/// (the others are checked for shape: a type-2 raw transaction in hex). Decoding every answer
/// would spend the client's CPU, which shares the machine with the server, on recovery.
pub(crate) const FULL_CHECK_EVERY: u64 = 64;

/// What each worker sends and how it checks the answer.
pub(crate) enum Work {
    Sign {
        from: String,
    },
    Verify {
        /// Pre-serialised record arrays and the verdicts the generator expects for them.
        pool: Vec<(String, Vec<bool>)>,
    },
}

impl Work {
    pub(crate) fn body(&self, index: u64) -> String {
        match self {
            Work::Sign { from } => format!(
                concat!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"eth_signTransaction","params":[{{"#,
                    r#""from":"{from}","chainId":"0x1","nonce":"0x{i:x}","#,
                    r#""maxPriorityFeePerGas":"0x3b9aca00","maxFeePerGas":"0x77359400","#,
                    r#""gas":"0x5208","to":"0x3535353535353535353535353535353535353535","#,
                    r#""value":"0x1","data":"0x"}}]}}"#
                ),
                i = index,
                from = from
            ),
            Work::Verify { pool } => {
                let (records, _) = &pool[index as usize % pool.len()];
                format!(
                    r#"{{"jsonrpc":"2.0","id":{index},"method":"chainsig_verifyBatch","params":[{records}]}}"#
                )
            }
        }
    }

    /// Checks one answer (geth's `{raw, tx}` for a signature); `Err` says what is wrong with it.
    pub(crate) fn check(&self, index: u64, body: &[u8]) -> Result<(), String> {
        match self {
            Work::Sign { from } => {
                let answer: Answer<SignedAnswer> = parse_answer(index, body)?;
                let result = answer
                    .result
                    .ok_or_else(|| format!("request {index}: result: missing"))?;
                let raw = result
                    .raw
                    .strip_prefix("0x")
                    .ok_or_else(|| format!("request {index}: result: not a hex string"))?;
                let bytes =
                    hex::decode(raw).map_err(|e| format!("request {index}: result: {e}"))?;
                // An EIP-1559 envelope: type byte 2, then an RLP list.
                if bytes.len() < 70 || bytes[0] != 2 || bytes[1] < 0xc0 {
                    return Err(format!(
                        "request {index}: result: not a signed EIP-1559 transaction"
                    ));
                }
                if index % FULL_CHECK_EVERY == 0 {
                    let decoded = chainsig_eth::decode_raw(&bytes)
                        .map_err(|e| format!("request {index}: result: {e}"))?;
                    if !format!("{:?}", decoded.from).eq_ignore_ascii_case(from) {
                        return Err(format!(
                            "request {index}: result: recovers to {:?}, not {from}",
                            decoded.from
                        ));
                    }
                }
                Ok(())
            }
            Work::Verify { pool } => {
                let answer: Answer<Vec<VerdictAnswer>> = parse_answer(index, body)?;
                let verdicts = answer
                    .result
                    .ok_or_else(|| format!("request {index}: result: missing"))?;
                let (_, expected) = &pool[index as usize % pool.len()];
                if verdicts.len() != expected.len() {
                    return Err(format!(
                        "request {index}: result: {} verdicts for {} records",
                        verdicts.len(),
                        expected.len()
                    ));
                }
                for (i, (verdict, valid)) in verdicts.iter().zip(expected).enumerate() {
                    let agrees = if *valid {
                        verdict.valid == Some(true)
                    } else {
                        verdict.valid == Some(false) || verdict.error.is_some()
                    };
                    if !agrees {
                        return Err(format!(
                            "request {index}: record {i}: verdict {verdict:?}, generator says valid={valid}"
                        ));
                    }
                }
                Ok(())
            }
        }
    }
}

/// The part of `eth_signTransaction`'s `{raw, tx}` the load test checks.
#[derive(Deserialize)]
struct SignedAnswer {
    raw: String,
}

/// A JSON-RPC answer, typed: `id` as given (compared with the request's as a JSON value, so `3`
/// and `"3"` differ), `error` present even when it is `null`, and the scenario's `result`.
#[derive(Deserialize)]
struct Answer<R> {
    #[serde(default)]
    id: Value,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
    result: Option<R>,
}

/// One verdict of `chainsig_verifyBatch`: `{"valid": bool}` or `{"error": "..."}`.
#[derive(Deserialize, Debug)]
struct VerdictAnswer {
    valid: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// A field that is there, whatever its value (`null` included): `Some`. With `#[serde(default)]`
/// an absent field is `None`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Parses an answer and checks its envelope: the id is the request's, and there is no error.
fn parse_answer<'a, R: Deserialize<'a>>(index: u64, body: &'a [u8]) -> Result<Answer<R>, String> {
    let answer: Answer<R> =
        serde_json::from_slice(body).map_err(|e| format!("request {index}: body: {e}"))?;
    if answer.id != json!(index) {
        return Err(format!(
            "request {index}: id: answered {} instead",
            answer.id
        ));
    }
    if let Some(error) = &answer.error {
        return Err(format!("request {index}: JSON-RPC error {error}"));
    }
    Ok(answer)
}

/// The verify scenario's bodies: at most [`VERIFY_POOL`] distinct batches of `plan.batch`
/// generated records (a share corrupted), each serialised once, with the generator's verdicts.
pub(crate) fn verify_pool(plan: &Plan) -> Vec<(String, Vec<bool>)> {
    let batches = (plan.requests.min(VERIFY_POOL as u64)) as usize;
    let spec = GenSpec {
        alg: plan.alg,
        seed: 0x10ad_7e57,
        invalid_ratio: plan.invalid_ratio,
        msg_len: 64,
    };
    (0..batches)
        .map(|b| {
            let generated: Vec<(Value, bool)> = (0..plan.batch)
                .into_par_iter()
                .map(|j| {
                    let g = record(&spec, (b * plan.batch + j) as u64);
                    (
                        json!({
                            "alg": plan.alg.to_string(),
                            "pubkey": hex::encode(&g.pubkey),
                            "msg": hex::encode(&g.msg),
                            "sig": hex::encode(g.sig),
                        }),
                        g.expect_valid(),
                    )
                })
                .collect();
            let (records, expected): (Vec<Value>, Vec<bool>) = generated.into_iter().unzip();
            (Value::Array(records).to_string(), expected)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chainsig_eth::PrivateKey;

    #[test]
    fn sign_bodies_have_distinct_nonces() {
        let work = Work::Sign {
            from: "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f".into(),
        };
        let a: Value = serde_json::from_str(&work.body(10)).unwrap();
        let b: Value = serde_json::from_str(&work.body(11)).unwrap();
        assert_eq!(a["params"][0]["nonce"], "0xa");
        assert_eq!(b["params"][0]["nonce"], "0xb");
        assert_eq!(a["id"], 10);
    }

    #[test]
    fn wrong_answers_are_errors() {
        let work = Work::Verify {
            pool: vec![("[]".into(), vec![true, false])],
        };
        let good = br#"{"jsonrpc":"2.0","id":3,"result":[{"valid":true},{"valid":false}]}"#;
        assert!(work.check(3, good).is_ok());
        let flipped = br#"{"jsonrpc":"2.0","id":3,"result":[{"valid":true},{"valid":true}]}"#;
        assert!(work.check(3, flipped).unwrap_err().contains("record 1"));
        assert!(work.check(4, good).unwrap_err().contains("id"));
        let short = br#"{"jsonrpc":"2.0","id":3,"result":[{"valid":true}]}"#;
        assert!(work.check(3, short).is_err());
        let error = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"x"}}"#;
        assert!(work.check(3, error).unwrap_err().contains("-32000"));
        // A verdict that is neither valid nor an error, and an error verdict for a valid record.
        let neither = br#"{"jsonrpc":"2.0","id":3,"result":[{"valid":true},{}]}"#;
        assert!(work.check(3, neither).unwrap_err().contains("record 1"));
        let erred = br#"{"jsonrpc":"2.0","id":3,"result":[{"error":"sig: bad"},{"valid":false}]}"#;
        assert!(work.check(3, erred).unwrap_err().contains("record 0"));
        let null_error =
            br#"{"jsonrpc":"2.0","id":3,"error":null,"result":[{"valid":true},{"valid":false}]}"#;
        assert!(work
            .check(3, null_error)
            .unwrap_err()
            .contains("JSON-RPC error"));
    }

    #[test]
    fn wrong_sign_answers_are_errors() {
        let key = PrivateKey::from_hex(
            "4646464646464646464646464646464646464646464646464646464646464646",
        )
        .unwrap();
        let from = format!("{:?}", key.address());
        let work = Work::Sign { from };
        let body: Value = serde_json::from_str(&work.body(64)).unwrap();
        let request = chainsig_eth::TxRequest::from_json(&body["params"][0]).unwrap();
        let raw = format!("0x{}", hex::encode(request.sign(&key).unwrap().raw));
        // geth's {raw, tx}: the check reads `raw`.
        let answer = |id: u64, raw: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"raw":{raw},"tx":{{}}}}}}"#)
                .into_bytes()
        };
        // 64 is a fully checked index: decoded and its sender recovered.
        assert!(work.check(64, &answer(64, &format!("\"{raw}\""))).is_ok());
        assert!(work
            .check(65, &answer(64, &format!("\"{raw}\"")))
            .unwrap_err()
            .contains("id"));
        let other = Work::Sign {
            from: format!("{:?}", alloy_primitives::Address::repeat_byte(7)),
        };
        assert!(other
            .check(64, &answer(64, &format!("\"{raw}\"")))
            .unwrap_err()
            .contains("recovers to"));
        assert!(work
            .check(64, &answer(64, &format!("\"{}\"", &raw[2..])))
            .unwrap_err()
            .contains("not a hex string"));
        assert!(work
            .check(64, &answer(64, "\"0x02c0\""))
            .unwrap_err()
            .contains("not a signed EIP-1559"));
        assert!(work
            .check(64, br#"{"jsonrpc":"2.0","id":64,"result":null}"#)
            .unwrap_err()
            .contains("missing"));
        assert!(work
            .check(64, &answer(64, "7"))
            .unwrap_err()
            .contains("body"));
        let no_result = br#"{"jsonrpc":"2.0","id":64}"#;
        assert!(work.check(64, no_result).unwrap_err().contains("missing"));
    }
}
