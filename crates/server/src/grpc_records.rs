//! gRPC's typed `VerifyRecord` and `RecoverRecord` (proto/chainsig.proto) turned into the records
//! of the `verify` and `recover` formats. The fields arrive as bytes, so nothing is hex-decoded
//! here: each message is mapped onto [`VerifyFields`] or [`recover_signature`], whose rules are the
//! JSON Lines front end's, so a record is accepted or refused with the same words whichever way it
//! came. A bad record is an error in its own place; the rest of the batch goes on. A request's
//! records, typed or JSON texts, are decoded here one by one ([`verify_records`],
//! [`recover_records`]): the service and the `grpc_messages` fuzz target run the same code.

use crate::grpc::pb;
use chainsig_core::hexstr;
use chainsig_core::record::{
    parse_recover_line, parse_verify_line, recover_signature, split_sig, RecoverRecord,
    VerifyDefaults, VerifyFields, VerifyRecord,
};
use chainsig_core::{Algorithm, HashAlg, RecordError};

/// A request's records, JSON texts or typed, never both.
pub enum Records<T> {
    Json(Vec<String>),
    Typed(Vec<T>),
}

impl<T> Records<T> {
    /// The records of a request that gave `json`, `typed`, or neither (an empty batch).
    pub fn of(json: Vec<String>, typed: Vec<T>) -> Result<Self, String> {
        match (json.is_empty(), typed.is_empty()) {
            (false, false) => Err("records: give records (JSON) or items (typed), not both".into()),
            (true, false) => Ok(Records::Typed(typed)),
            _ => Ok(Records::Json(json)),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Records::Json(json) => json.len(),
            Records::Typed(typed) => typed.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The algorithm a typed record names; `None` for UNSPECIFIED (the request's default applies).
pub fn algorithm(value: i32) -> Result<Option<Algorithm>, String> {
    match pb::Algorithm::try_from(value) {
        Ok(pb::Algorithm::Unspecified) => Ok(None),
        Ok(pb::Algorithm::Sm2) => Ok(Some(Algorithm::Sm2)),
        Ok(pb::Algorithm::Secp256k1) => Ok(Some(Algorithm::Secp256k1)),
        Ok(pb::Algorithm::P256) => Ok(Some(Algorithm::P256)),
        Err(_) => Err(format!("unknown algorithm {value}")),
    }
}

/// The defaults a `VerifyBatchRequest` sets for its records: its `alg` (UNSPECIFIED: none) and
/// its `hash` (empty: none). The error names the request field.
pub fn verify_defaults(alg: i32, hash: &str) -> Result<VerifyDefaults, String> {
    Ok(VerifyDefaults {
        alg: algorithm(alg).map_err(|e| format!("alg: {e}"))?,
        hash: if hash.is_empty() {
            None
        } else {
            Some(hash.parse::<HashAlg>().map_err(|e| format!("hash: {e}"))?)
        },
    })
}

/// A verify request's records, each decoded alone: one result per record, in order.
pub fn verify_records(
    records: Records<pb::VerifyRecord>,
    defaults: &VerifyDefaults,
) -> Vec<Result<VerifyRecord, RecordError>> {
    match records {
        Records::Json(lines) => lines
            .iter()
            .map(|line| parse_verify_line(line, defaults))
            .collect(),
        Records::Typed(items) => items
            .into_iter()
            .map(|item| verify_record(item, defaults))
            .collect(),
    }
}

/// A recover request's records, each decoded alone: one result per record, in order.
pub fn recover_records(
    records: Records<pb::RecoverRecord>,
) -> Vec<Result<RecoverRecord, RecordError>> {
    match records {
        Records::Json(lines) => lines.iter().map(|line| parse_recover_line(line)).collect(),
        Records::Typed(items) => items.into_iter().map(recover_record).collect(),
    }
}

/// A typed verify record, checked by the rules of the `verify` format.
pub fn verify_record(
    item: pb::VerifyRecord,
    defaults: &VerifyDefaults,
) -> Result<VerifyRecord, RecordError> {
    let alg = algorithm(item.alg).map_err(|e| RecordError::new("alg", e))?;
    let hash = if item.hash.is_empty() {
        None
    } else {
        Some(
            item.hash
                .parse::<HashAlg>()
                .map_err(|e| RecordError::new("hash", e))?,
        )
    };
    VerifyFields {
        alg,
        pubkey: item.pubkey,
        msg: item.msg,
        digest: item.digest,
        hash,
        sig: item.sig,
        sig_der: item.sig_der,
        id: item.id,
    }
    .into_record(defaults)
}

/// A typed recover record: a raw transaction, or a signature over a digest.
pub fn recover_record(item: pb::RecoverRecord) -> Result<RecoverRecord, RecordError> {
    match item.record {
        Some(pb::recover_record::Record::Tx(tx)) if tx.is_empty() => {
            Err(RecordError::new("tx", "empty"))
        }
        Some(pb::recover_record::Record::Tx(tx)) => Ok(RecoverRecord::Transaction(tx)),
        Some(pb::recover_record::Record::SignedDigest(signed)) => recover_signature(
            hexstr::exact("digest", &signed.digest)?,
            split_sig(&hexstr::exact::<64>("sig", &signed.sig)?),
            Some(u64::from(signed.v)),
        ),
        None => Err(RecordError::new("tx", "missing (give tx or signed_digest)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chainsig_core::record::{parse_verify_line, Payload};

    fn item() -> pb::VerifyRecord {
        pb::VerifyRecord {
            alg: pb::Algorithm::P256 as i32,
            pubkey: vec![4; 65],
            digest: Some(vec![7; 32]),
            sig: Some(vec![1; 64]),
            ..Default::default()
        }
    }

    #[test]
    fn a_typed_record_means_what_its_json_line_means() {
        let typed = verify_record(item(), &VerifyDefaults::default()).unwrap();
        let line = format!(
            r#"{{"alg":"p256","pubkey":"{}","digest":"{}","sig":"{}"}}"#,
            "04".repeat(65),
            "07".repeat(32),
            "01".repeat(64)
        );
        assert_eq!(
            typed,
            parse_verify_line(&line, &VerifyDefaults::default()).unwrap()
        );
        assert_eq!(typed.payload, Payload::Digest([7; 32]));
    }

    #[test]
    fn faults_are_named_by_field() {
        let defaults = VerifyDefaults::default();
        let field = |item: pb::VerifyRecord| verify_record(item, &defaults).unwrap_err().field;
        assert_eq!(field(pb::VerifyRecord { alg: 99, ..item() }), "alg");
        assert_eq!(field(pb::VerifyRecord { alg: 0, ..item() }), "alg");
        assert_eq!(
            field(pb::VerifyRecord {
                pubkey: vec![],
                ..item()
            }),
            "pubkey"
        );
        assert_eq!(
            field(pb::VerifyRecord {
                digest: Some(vec![7; 31]),
                ..item()
            }),
            "digest"
        );
        assert_eq!(
            field(pb::VerifyRecord {
                msg: Some(b"abc".to_vec()),
                ..item()
            }),
            "digest"
        );
        assert_eq!(
            field(pb::VerifyRecord {
                sig: None,
                ..item()
            }),
            "sig"
        );
        assert_eq!(
            field(pb::VerifyRecord {
                sig_der: Some(vec![0x30, 0]),
                ..item()
            }),
            "sig_der"
        );
        assert_eq!(
            field(pb::VerifyRecord {
                id: Some(b"alice".to_vec()),
                ..item()
            }),
            "id"
        );
        assert_eq!(
            field(pb::VerifyRecord {
                alg: pb::Algorithm::Sm2 as i32,
                digest: None,
                msg: Some(vec![]),
                hash: "sha256".into(),
                ..item()
            }),
            "hash"
        );
    }

    #[test]
    fn an_empty_message_is_a_message() {
        let record = verify_record(
            pb::VerifyRecord {
                alg: pb::Algorithm::Sm2 as i32,
                digest: None,
                msg: Some(vec![]),
                id: Some(b"alice".to_vec()),
                ..item()
            },
            &VerifyDefaults::default(),
        )
        .unwrap();
        assert_eq!(
            record.payload,
            Payload::Message {
                msg: vec![],
                hash: HashAlg::Sm3
            }
        );
        assert_eq!(record.sm2_id, b"alice");
    }

    #[test]
    fn recover_records() {
        let signed = |v| pb::RecoverRecord {
            record: Some(pb::recover_record::Record::SignedDigest(pb::SignedDigest {
                digest: vec![9; 32],
                sig: vec![3; 64],
                v,
            })),
        };
        assert!(matches!(
            recover_record(signed(28)).unwrap(),
            RecoverRecord::Signature(item) if item.recovery_id == 1
        ));
        assert_eq!(recover_record(signed(2)).unwrap_err().field, "v");
        assert_eq!(
            recover_record(pb::RecoverRecord { record: None })
                .unwrap_err()
                .field,
            "tx"
        );
        assert_eq!(
            recover_record(pb::RecoverRecord {
                record: Some(pb::recover_record::Record::Tx(vec![])),
            })
            .unwrap_err()
            .field,
            "tx"
        );
    }
}
