//! NIST known-answer files (`PQCkemKAT_*.rsp`): parsing, and re-deriving each record from its seed.

use crate::kem::{self, Ciphertext, SecretKey};
use crate::rng::NistDrbg;
use crate::ParamSet;
use chainsig_core::error::quote;

/// One record of a `.rsp` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KatRecord {
    /// `count`.
    pub count: u64,
    /// Line number of the record's first line (1-based), for messages.
    pub line: usize,
    /// `seed` (48 bytes for a well-formed file).
    pub seed: Vec<u8>,
    /// `pk`.
    pub pk: Vec<u8>,
    /// `sk`.
    pub sk: Vec<u8>,
    /// `ct`.
    pub ct: Vec<u8>,
    /// `ss`.
    pub ss: Vec<u8>,
}

/// A file that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

#[derive(Default)]
struct Partial {
    line: usize,
    count: Option<u64>,
    seed: Option<Vec<u8>>,
    pk: Option<Vec<u8>>,
    sk: Option<Vec<u8>>,
    ct: Option<Vec<u8>>,
    ss: Option<Vec<u8>>,
}

impl Partial {
    fn is_empty(&self) -> bool {
        self.count.is_none()
            && self.seed.is_none()
            && self.pk.is_none()
            && self.sk.is_none()
            && self.ct.is_none()
            && self.ss.is_none()
    }

    fn finish(self) -> Result<KatRecord, ParseError> {
        let line = self.line;
        let missing = |name: &str| ParseError {
            line,
            message: format!("record without `{name}`"),
        };
        Ok(KatRecord {
            count: self.count.ok_or_else(|| missing("count"))?,
            line,
            seed: self.seed.ok_or_else(|| missing("seed"))?,
            pk: self.pk.ok_or_else(|| missing("pk"))?,
            sk: self.sk.ok_or_else(|| missing("sk"))?,
            ct: self.ct.ok_or_else(|| missing("ct"))?,
            ss: self.ss.ok_or_else(|| missing("ss"))?,
        })
    }
}

/// Parse a `.rsp` file: `#` comment lines, records of `key = value` lines separated by blank lines.
pub fn parse_rsp(text: &str) -> Result<Vec<KatRecord>, ParseError> {
    let mut records = Vec::new();
    let mut current = Partial::default();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if trimmed.starts_with('#') {
            continue;
        }
        if trimmed.is_empty() {
            if !current.is_empty() {
                records.push(std::mem::take(&mut current).finish()?);
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once('=') else {
            return Err(ParseError {
                line,
                message: format!("expected `key = value`, got {}", quote(trimmed)),
            });
        };
        let (key, value) = (key.trim(), value.trim());
        if current.is_empty() {
            current.line = line;
        }
        let bytes = || {
            hex::decode(value).map_err(|e| ParseError {
                line,
                message: format!("{key}: invalid hex ({e})"),
            })
        };
        let duplicate = |present: bool| {
            if present {
                Err(ParseError {
                    line,
                    message: format!("{key}: given twice in one record"),
                })
            } else {
                Ok(())
            }
        };
        match key {
            "count" => {
                duplicate(current.count.is_some())?;
                current.count = Some(value.parse().map_err(|_| ParseError {
                    line,
                    message: format!("count: not a number: {}", quote(value)),
                })?);
            }
            "seed" => {
                duplicate(current.seed.is_some())?;
                current.seed = Some(bytes()?);
            }
            "pk" => {
                duplicate(current.pk.is_some())?;
                current.pk = Some(bytes()?);
            }
            "sk" => {
                duplicate(current.sk.is_some())?;
                current.sk = Some(bytes()?);
            }
            "ct" => {
                duplicate(current.ct.is_some())?;
                current.ct = Some(bytes()?);
            }
            "ss" => {
                duplicate(current.ss.is_some())?;
                current.ss = Some(bytes()?);
            }
            // Other keys (e.g. `msg` in some NIST files) carry nothing we check.
            _ => {}
        }
    }
    if !current.is_empty() {
        records.push(current.finish()?);
    }
    Ok(records)
}

/// The result of checking one record: the fields that did not match (empty when it passed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KatOutcome {
    /// The record's `count`.
    pub count: u64,
    /// Human-readable mismatches, e.g. `"pk differs"`, `"decaps(sk, ct) differs from ss"`.
    pub failures: Vec<String>,
}

impl KatOutcome {
    /// True when every comparison held.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Re-derive a record from its seed (NIST DRBG → keygen → encaps), compare pk, sk, ct and ss, and
/// check that decapsulating the file's ct with the file's sk gives the file's ss.
pub fn check_record(set: ParamSet, record: &KatRecord) -> KatOutcome {
    let mut failures = Vec::new();
    match <&[u8; 48]>::try_from(record.seed.as_slice()) {
        Err(_) => failures.push(format!(
            "seed: expected 48 bytes, got {}",
            record.seed.len()
        )),
        Ok(seed) => {
            let mut drbg = NistDrbg::new(seed);
            let (pk, sk) = kem::keygen(set, &mut drbg);
            let (ct, ss) = kem::encaps(&pk, &mut drbg);
            for (name, ours, theirs) in [
                ("pk", pk.as_bytes(), record.pk.as_slice()),
                ("sk", sk.as_bytes(), record.sk.as_slice()),
                ("ct", ct.as_bytes(), record.ct.as_slice()),
                ("ss", ss.as_bytes().as_slice(), record.ss.as_slice()),
            ] {
                if ours != theirs {
                    failures.push(format!("{name} differs"));
                }
            }
        }
    }
    match (
        SecretKey::from_bytes(set, &record.sk),
        Ciphertext::from_bytes(set, &record.ct),
    ) {
        (Ok(sk), Ok(ct)) => match kem::decaps(&sk, &ct) {
            Ok(ss) if ss.as_bytes().as_slice() == record.ss.as_slice() => {}
            Ok(_) => failures.push("decaps(sk, ct) differs from ss".to_string()),
            Err(e) => failures.push(format!("decaps: {e}")),
        },
        (Err(e), _) | (_, Err(e)) => failures.push(format!("decaps not run: {e}")),
    }
    if record.ss.len() != crate::params::SS_BYTES {
        failures.push(format!(
            "ss: expected {} bytes, got {}",
            crate::params::SS_BYTES,
            record.ss.len()
        ));
    }
    KatOutcome {
        count: record.count,
        failures,
    }
}

/// Summary of a whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KatReport {
    /// Outcomes of the records that failed, in file order.
    pub failed: Vec<KatOutcome>,
    /// Number of records that passed.
    pub passed: usize,
}

/// Check every record of a parsed file.
pub fn check_all(set: ParamSet, records: &[KatRecord]) -> KatReport {
    let mut failed = Vec::new();
    let mut passed = 0;
    for record in records {
        let outcome = check_record(set, record);
        if outcome.passed() {
            passed += 1;
        } else {
            failed.push(outcome);
        }
    }
    KatReport { failed, passed }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_reports_bad_lines_and_missing_fields() {
        assert!(parse_rsp("# x\n\ncount = 0\nseed = zz\n")
            .unwrap_err()
            .message
            .contains("seed: invalid hex"));
        let missing = parse_rsp("count = 0\nseed = 00\n\n").unwrap_err();
        assert_eq!(missing.line, 1);
        assert!(missing.message.contains("pk"));
        assert!(parse_rsp("count 0\n").is_err());
        assert!(parse_rsp("count = 0\ncount = 1\n")
            .unwrap_err()
            .message
            .contains("twice"));
        assert_eq!(parse_rsp("# header\n\n").unwrap(), vec![]);
        // A long bad line is quoted in part, with its length.
        let long = "x".repeat(10_000);
        let message = parse_rsp(&long).unwrap_err().message;
        assert!(message.len() < 200, "{message}");
        assert!(message.contains("(10000 characters)"), "{message}");
        let message = parse_rsp(&format!("count = {long}")).unwrap_err().message;
        assert!(message.len() < 200, "{message}");
    }

    #[test]
    fn a_corrupted_record_fails_with_named_fields() {
        let set = ParamSet::Ctru653;
        let p = set.params();
        let record = KatRecord {
            count: 7,
            line: 1,
            seed: vec![0; 48],
            pk: vec![0; p.pk_bytes],
            sk: vec![0; p.sk_bytes()],
            ct: vec![0; 3],
            ss: vec![0; 32],
        };
        let outcome = check_record(set, &record);
        assert!(!outcome.passed());
        for field in ["pk differs", "sk differs", "ct differs", "ss differs"] {
            assert!(
                outcome.failures.iter().any(|f| f == field),
                "{field}: {:?}",
                outcome.failures
            );
        }
        assert!(outcome
            .failures
            .iter()
            .any(|f| f.contains("ct: expected 898 bytes, got 3")));
    }
}
