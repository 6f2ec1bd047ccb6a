//! The records of the `verify` and `recover` commands (docs/formats.md), decoded into typed
//! values. Curve checks (is the key on the curve?) come later, in preparation.

use crate::algorithm::{Algorithm, HashAlg};
use crate::batch::RecoverItem;
use crate::der;
use crate::error::RecordError;
use crate::hexstr;
use serde_json::{Map, Value};

/// The SM2 identifier used when a record gives none: ASCII "1234567812345678".
pub const DEFAULT_SM2_ID: &[u8] = b"1234567812345678";

/// What was signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// A message still to be hashed with `hash` (for SM2 with Z_A prepended).
    Message { msg: Vec<u8>, hash: HashAlg },
    /// The 32-byte value already hashed (SM2's e, ECDSA's z).
    Digest([u8; 32]),
}

/// One decoded `verify` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyRecord {
    pub alg: Algorithm,
    /// SEC1 bytes, not yet checked against the curve.
    pub pubkey: Vec<u8>,
    pub payload: Payload,
    pub r: [u8; 32],
    pub s: [u8; 32],
    /// SM2 only: the signer's distinguishing identifier.
    pub sm2_id: Vec<u8>,
}

/// Defaults from the command line for fields a line leaves out.
#[derive(Debug, Clone, Copy, Default)]
pub struct VerifyDefaults {
    pub alg: Option<Algorithm>,
    pub hash: Option<HashAlg>,
}

/// Decodes one `verify` line.
///
/// A line of the usual shape (a flat object of plain strings) is read by [`crate::flat_json`]
/// without building a JSON value; any other line, and any line that fails, is read again through
/// serde_json, so every error reads as it always has.
pub fn parse_verify_line(
    line: &str,
    defaults: &VerifyDefaults,
) -> Result<VerifyRecord, RecordError> {
    if let Some(record) = parse_verify_flat(line, defaults) {
        return Ok(record);
    }
    parse_verify_object(&parse_object(line)?, defaults)
}

/// The fast path of [`parse_verify_line`]: the record when the line is a flat object whose
/// fields decode and obey the format's rules, else `None` (the caller then takes the slow path,
/// which gives the error). The fields and rules are those of [`parse_verify_object`].
fn parse_verify_flat(line: &str, defaults: &VerifyDefaults) -> Option<VerifyRecord> {
    const NAMES: [&str; 8] = [
        "alg", "hash", "pubkey", "msg", "digest", "sig", "sig_der", "id",
    ];
    let mut found: [Option<&str>; 8] = [None; 8];
    crate::flat_json::scan(line, |key, value| {
        let Some(slot) = NAMES.iter().position(|&n| n == key) else {
            return Some(()); // a field the format does not read, such as `expect`
        };
        match (value, found[slot]) {
            // A known field twice, or not a string: the slow path decides.
            (crate::flat_json::Scalar::Str(text), None) => {
                found[slot] = Some(text);
                Some(())
            }
            _ => None,
        }
    })?;
    let [alg, hash, pubkey, msg, digest, sig, sig_der, id] = found;
    let hex = |text: Option<&str>| -> Option<Option<Vec<u8>>> {
        text.map(|t| hexstr::decode("", t).ok())
            .map_or(Some(None), |v| v.map(Some))
    };
    VerifyFields {
        alg: match alg {
            Some(text) => Some(text.parse::<Algorithm>().ok()?),
            None => None,
        },
        hash: match hash {
            Some(text) => Some(text.parse::<HashAlg>().ok()?),
            None => None,
        },
        pubkey: hexstr::decode("pubkey", pubkey?).ok()?,
        msg: hex(msg)?,
        digest: hex(digest)?,
        sig: hex(sig)?,
        sig_der: hex(sig_der)?,
        id: hex(id)?,
    }
    .into_record(defaults)
    .ok()
}

/// Decodes one `verify` record already parsed as JSON (the server receives records this way).
pub fn parse_verify_value(
    value: &Value,
    defaults: &VerifyDefaults,
) -> Result<VerifyRecord, RecordError> {
    parse_verify_object(as_object(value)?, defaults)
}

fn parse_verify_object(
    obj: &Map<String, Value>,
    defaults: &VerifyDefaults,
) -> Result<VerifyRecord, RecordError> {
    let alg = match str_field(obj, "alg")? {
        Some(text) => Some(
            text.parse::<Algorithm>()
                .map_err(|e| RecordError::new("alg", e))?,
        ),
        None => None,
    };
    let hash = match str_field(obj, "hash")? {
        Some(text) => Some(
            text.parse::<HashAlg>()
                .map_err(|e| RecordError::new("hash", e))?,
        ),
        None => None,
    };
    let hex = |name: &'static str| -> Result<Option<Vec<u8>>, RecordError> {
        str_field(obj, name)?
            .map(|text| hexstr::decode(name, text))
            .transpose()
    };
    VerifyFields {
        alg,
        pubkey: hexstr::decode("pubkey", required(obj, "pubkey")?)?,
        msg: hex("msg")?,
        digest: hex("digest")?,
        hash,
        sig: hex("sig")?,
        sig_der: hex("sig_der")?,
        id: hex("id")?,
    }
    .into_record(defaults)
}

/// The fields of a `verify` record decoded from their encoding (hex text in a JSON line, bytes in
/// a gRPC `VerifyRecord`), before the rules that tie them together. Both front ends end in
/// [`VerifyFields::into_record`], so a record means the same thing whichever way it came, and is
/// refused with the same words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyFields {
    /// `None`: the request's or command line's default.
    pub alg: Option<Algorithm>,
    /// SEC1, compressed or uncompressed.
    pub pubkey: Vec<u8>,
    /// The message, to be hashed (give it or `digest`).
    pub msg: Option<Vec<u8>>,
    /// The 32-byte value already hashed.
    pub digest: Option<Vec<u8>>,
    /// How `msg` is hashed; `None`: the default's, else the algorithm's own.
    pub hash: Option<HashAlg>,
    /// r ‖ s, 64 bytes (give it or `sig_der`).
    pub sig: Option<Vec<u8>>,
    /// The signature as DER.
    pub sig_der: Option<Vec<u8>>,
    /// SM2 only: the signer's identifier (default [`DEFAULT_SM2_ID`]).
    pub id: Option<Vec<u8>>,
}

impl VerifyFields {
    /// Applies the rules of the `verify` format: one of msg and digest, one of sig and sig_der,
    /// SM2 hashes with SM3 (GB/T 32918.2) and alone carries an identifier, whose length in bits
    /// must fit ENTL's two bytes.
    pub fn into_record(self, defaults: &VerifyDefaults) -> Result<VerifyRecord, RecordError> {
        let alg = self
            .alg
            .or(defaults.alg)
            .ok_or_else(|| RecordError::new("alg", "missing (and no --alg given)"))?;
        if self.pubkey.is_empty() {
            return Err(RecordError::new("pubkey", "missing or empty"));
        }
        let payload = match (self.msg, self.digest) {
            (Some(_), Some(_)) => {
                return Err(RecordError::new("digest", "give msg or digest, not both"))
            }
            (Some(msg), None) => {
                let hash = self.hash.or(defaults.hash).unwrap_or(alg.default_hash());
                if alg == Algorithm::Sm2 && hash != HashAlg::Sm3 {
                    return Err(RecordError::new(
                        "hash",
                        format!("sm2 hashes with sm3, not {hash}"),
                    ));
                }
                Payload::Message { msg, hash }
            }
            (None, Some(digest)) => Payload::Digest(hexstr::exact("digest", &digest)?),
            (None, None) => return Err(RecordError::new("msg", "missing (give msg or digest)")),
        };
        let (r, s) = match (self.sig, self.sig_der) {
            (Some(_), Some(_)) => {
                return Err(RecordError::new("sig_der", "give sig or sig_der, not both"))
            }
            (Some(sig), None) => split_sig(&hexstr::exact::<64>("sig", &sig)?),
            (None, Some(der)) => der::parse_signature(&der)
                .map_err(|e| RecordError::new("sig_der", e.to_string()))?,
            (None, None) => return Err(RecordError::new("sig", "missing (give sig or sig_der)")),
        };
        let sm2_id = match (self.id, alg) {
            (None, _) => DEFAULT_SM2_ID.to_vec(),
            // ENTL is the identifier's length in bits, in two bytes.
            (Some(id), Algorithm::Sm2) if id.len() > 8191 => {
                return Err(RecordError::new("id", "longer than 8191 bytes"))
            }
            (Some(id), Algorithm::Sm2) => id,
            (Some(_), _) => {
                return Err(RecordError::new(
                    "id",
                    "only sm2 signatures carry an identifier",
                ))
            }
        };
        Ok(VerifyRecord {
            alg,
            pubkey: self.pubkey,
            payload,
            r,
            s,
            sm2_id,
        })
    }
}

/// One decoded `recover` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoverRecord {
    /// A raw signed transaction (legacy, EIP-2930 or EIP-1559 envelope).
    Transaction(Vec<u8>),
    /// A bare signature over a digest.
    Signature(RecoverItem),
}

/// Decodes one `recover` line.
pub fn parse_recover_line(line: &str) -> Result<RecoverRecord, RecordError> {
    parse_recover_object(&parse_object(line)?)
}

/// Decodes one `recover` record already parsed as JSON.
pub fn parse_recover_value(value: &Value) -> Result<RecoverRecord, RecordError> {
    parse_recover_object(as_object(value)?)
}

fn parse_recover_object(obj: &Map<String, Value>) -> Result<RecoverRecord, RecordError> {
    if let Some(tx) = str_field(obj, "tx")? {
        return Ok(RecoverRecord::Transaction(hexstr::decode("tx", tx)?));
    }
    let digest = hexstr::decode_array("digest", required(obj, "digest")?)?;
    let (r, s) = split_sig(&hexstr::decode_array::<64>("sig", required(obj, "sig")?)?);
    let v = match obj.get("v") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(text)) => {
            let digits = text.trim_start_matches("0x");
            u64::from_str_radix(digits, if text.starts_with("0x") { 16 } else { 10 }).ok()
        }
        None | Some(Value::Null) => return Err(RecordError::new("v", "missing")),
        Some(_) => None,
    };
    recover_signature(digest, (r, s), v)
}

/// A `recover` signature record from its parts: `v` is 0 or 1, or Ethereum's 27 or 28 (the
/// pre-EIP-155 encoding of the recovery id); anything else, or none, is refused.
pub fn recover_signature(
    digest: [u8; 32],
    (r, s): ([u8; 32], [u8; 32]),
    v: Option<u64>,
) -> Result<RecoverRecord, RecordError> {
    let recovery_id = match v {
        Some(0 | 27) => 0,
        Some(1 | 28) => 1,
        _ => return Err(RecordError::new("v", "expected 0, 1, 27 or 28")),
    };
    Ok(RecoverRecord::Signature(RecoverItem {
        digest,
        r,
        s,
        recovery_id,
    }))
}

fn parse_object(line: &str) -> Result<Map<String, Value>, RecordError> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(obj)) => Ok(obj),
        Ok(_) => Err(RecordError::new("", "bad JSON: expected an object")),
        Err(e) => Err(RecordError::new("", format!("bad JSON: {e}"))),
    }
}

fn as_object(value: &Value) -> Result<&Map<String, Value>, RecordError> {
    value
        .as_object()
        .ok_or_else(|| RecordError::new("", "bad JSON: expected an object"))
}

/// A string field, `None` when absent or null.
fn str_field<'a>(
    obj: &'a Map<String, Value>,
    name: &'static str,
) -> Result<Option<&'a str>, RecordError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RecordError::new(name, "expected a string")),
    }
}

fn required<'a>(obj: &'a Map<String, Value>, name: &'static str) -> Result<&'a str, RecordError> {
    str_field(obj, name)?.ok_or_else(|| RecordError::new(name, "missing"))
}

/// r and s of a 64-byte r ‖ s signature.
pub fn split_sig(sig: &[u8; 64]) -> ([u8; 32], [u8; 32]) {
    let (r, s) = sig.split_at(32);
    (
        r.try_into().expect("32 bytes"),
        s.try_into().expect("32 bytes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "04aabb";
    fn sig() -> String {
        "11".repeat(32) + &"22".repeat(32)
    }

    #[test]
    fn decodes_defaults_and_explicit_fields() {
        let line = format!(
            r#"{{"alg":"sm2","pubkey":"{KEY}","msg":"0x6162","sig":"{}"}}"#,
            sig()
        );
        let rec = parse_verify_line(&line, &VerifyDefaults::default()).unwrap();
        assert_eq!(rec.alg, Algorithm::Sm2);
        assert_eq!(
            rec.payload,
            Payload::Message {
                msg: b"ab".to_vec(),
                hash: HashAlg::Sm3
            }
        );
        assert_eq!(rec.sm2_id, DEFAULT_SM2_ID);
        assert_eq!((rec.r, rec.s), ([0x11; 32], [0x22; 32]));

        let line = format!(
            r#"{{"pubkey":"{KEY}","digest":"{}","sig_der":"3006020101020102"}}"#,
            "00".repeat(32)
        );
        let defaults = VerifyDefaults {
            alg: Some(Algorithm::P256),
            hash: None,
        };
        let rec = parse_verify_line(&line, &defaults).unwrap();
        assert_eq!(rec.payload, Payload::Digest([0; 32]));
        assert_eq!(rec.r[31], 1);
        assert_eq!(rec.s[31], 2);

        let line = format!(
            r#"{{"alg":"secp256k1","pubkey":"{KEY}","msg":"","sig":"{}"}}"#,
            sig()
        );
        let defaults = VerifyDefaults {
            alg: None,
            hash: Some(HashAlg::Sha256),
        };
        let rec = parse_verify_line(&line, &defaults).unwrap();
        assert_eq!(
            rec.payload,
            Payload::Message {
                msg: vec![],
                hash: HashAlg::Sha256
            }
        );
    }

    #[test]
    fn errors_name_the_field() {
        let d = VerifyDefaults::default();
        let s = sig();
        let cases = [
            ("not json".to_string(), ""),
            ("[1]".to_string(), ""),
            (
                format!(r#"{{"pubkey":"{KEY}","msg":"","sig":"{s}"}}"#),
                "alg",
            ),
            (
                format!(r#"{{"alg":"rsa","pubkey":"{KEY}","msg":"","sig":"{s}"}}"#),
                "alg",
            ),
            (
                format!(r#"{{"alg":"sm2","pubkey":"zz","msg":"","sig":"{s}"}}"#),
                "pubkey",
            ),
            (
                format!(r#"{{"alg":"sm2","pubkey":7,"msg":"","sig":"{s}"}}"#),
                "pubkey",
            ),
            (
                format!(r#"{{"alg":"sm2","pubkey":"{KEY}","sig":"{s}"}}"#),
                "msg",
            ),
            (
                format!(r#"{{"alg":"sm2","pubkey":"{KEY}","msg":"","hash":"sha256","sig":"{s}"}}"#),
                "hash",
            ),
            (
                format!(r#"{{"alg":"p256","pubkey":"{KEY}","digest":"00","sig":"{s}"}}"#),
                "digest",
            ),
            (
                format!(r#"{{"alg":"p256","pubkey":"{KEY}","msg":"","sig":"00"}}"#),
                "sig",
            ),
            (
                format!(r#"{{"alg":"p256","pubkey":"{KEY}","msg":"","sig_der":"3000"}}"#),
                "sig_der",
            ),
            (
                format!(r#"{{"alg":"p256","pubkey":"{KEY}","msg":"","sig":"{s}","id":"00"}}"#),
                "id",
            ),
        ];
        for (line, field) in cases {
            let err = parse_verify_line(&line, &d).unwrap_err();
            assert_eq!(err.field, field, "{line} -> {err}");
        }
    }

    #[test]
    fn errors_quote_long_values_in_part() {
        let d = VerifyDefaults::default();
        let huge = "q".repeat(10_000);
        let s = sig();
        for line in [
            format!(r#"{{"alg":"{huge}","pubkey":"{KEY}","msg":"","sig":"{s}"}}"#),
            format!(r#"{{"alg":"sm2","hash":"{huge}","pubkey":"{KEY}","msg":"","sig":"{s}"}}"#),
            format!(r#"{{"alg":"sm2","pubkey":"{huge}","msg":"","sig":"{s}"}}"#),
            format!(
                r#"{{"alg":"sm2","pubkey":"{KEY}","msg":"0{}","sig":"{s}"}}"#,
                "ab".repeat(5000)
            ),
            format!(
                r#"{{"alg":"sm2","pubkey":"{KEY}","msg":"","sig_der":"{}"}}"#,
                "30".repeat(5000)
            ),
        ] {
            let err = parse_verify_line(&line, &d).unwrap_err().to_string();
            assert!(err.len() <= 200, "{} bytes: {err}", err.len());
        }
        let err = parse_verify_line(
            &format!(r#"{{"alg":"{huge}","pubkey":"{KEY}","msg":"","sig":"{s}"}}"#),
            &d,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("… (10000 characters)"), "{err}");
        let err = parse_recover_line(&format!(r#"{{"tx":"{huge}"}}"#))
            .unwrap_err()
            .to_string();
        assert!(err.len() <= 200, "{err}");
    }

    /// The slow path alone: serde_json's value, then the format's rules.
    fn slow(line: &str, d: &VerifyDefaults) -> Result<VerifyRecord, RecordError> {
        parse_verify_object(&parse_object(line)?, d)
    }

    #[test]
    fn the_fast_path_agrees_with_serde_json_on_mutated_lines() {
        let s = sig();
        let templates = [
            format!(r#"{{"alg":"sm2","pubkey":"{KEY}","msg":"0x6162","sig":"{s}","expect":true}}"#),
            format!(
                r#" {{ "pubkey" : "{KEY}", "digest":"{}", "sig_der":"3006020101020102", "n": -7 }}"#,
                "00".repeat(32)
            ),
            format!(
                r#"{{"alg":"sm2","pubkey":"{KEY}","msg":"","sig":"{s}","id":"414c494345","hash":"sm3","x":null}}"#
            ),
            format!(
                r#"{{"alg":"secp256k1","pubkey":"{KEY}","msg":"00","hash":"keccak256","sig":"{s}"}}"#
            ),
        ];
        let defaults = [
            VerifyDefaults::default(),
            VerifyDefaults {
                alg: Some(Algorithm::P256),
                hash: Some(HashAlg::Sha256),
            },
        ];
        let alphabet = br#"{}[]":,\ 0x1aAf-.e"#;
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut fast_hits, mut checked) = (0, 0);
        for template in &templates {
            for _ in 0..1500 {
                let mut bytes = template.clone().into_bytes();
                for _ in 0..1 + next(3) {
                    let at = next(bytes.len());
                    match next(3) {
                        0 => bytes[at] = alphabet[next(alphabet.len())],
                        1 => {
                            bytes.remove(at);
                        }
                        _ => bytes.insert(at, alphabet[next(alphabet.len())]),
                    }
                }
                let Ok(line) = String::from_utf8(bytes) else {
                    continue;
                };
                for d in &defaults {
                    checked += 1;
                    let want = slow(&line, d);
                    if let Some(fast) = parse_verify_flat(&line, d) {
                        fast_hits += 1;
                        assert_eq!(Ok(&fast), want.as_ref(), "{line}");
                    }
                    assert_eq!(parse_verify_line(&line, d), want, "{line}");
                }
            }
            for d in &defaults {
                assert_eq!(
                    parse_verify_flat(template, d).as_ref(),
                    slow(template, d).ok().as_ref()
                );
            }
        }
        // Both paths were exercised.
        assert!(
            fast_hits > 100 && fast_hits < checked,
            "{fast_hits} of {checked}"
        );
    }

    #[test]
    fn recover_lines() {
        let s = sig();
        let line = format!(r#"{{"digest":"{}","sig":"{s}","v":28}}"#, "ab".repeat(32));
        match parse_recover_line(&line).unwrap() {
            RecoverRecord::Signature(item) => assert_eq!(item.recovery_id, 1),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_recover_line(r#"{"tx":"0x02c0"}"#).unwrap(),
            RecoverRecord::Transaction(vec![2, 0xc0])
        );
        let line = format!(r#"{{"digest":"{}","sig":"{s}","v":29}}"#, "ab".repeat(32));
        assert_eq!(parse_recover_line(&line).unwrap_err().field, "v");
    }
}
