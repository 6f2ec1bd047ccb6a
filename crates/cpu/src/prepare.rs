//! Stage 1 of the pipeline on the host: decoded records become prepared items.
//!
//! Keys are checked against their curve (SEC1, with decompression) and messages are hashed, so
//! every backend, CPU or GPU, receives only validated affine keys and 32-byte digests. SM2's Z_A
//! depends only on the signer (identifier and key), so it is cached: a chain sees the same signers
//! again and again, and Z_A is a whole SM3 computation over 210 bytes.

use chainsig_core::raw_sm2::RawSm2Item;
use chainsig_core::record::{Payload, VerifyRecord};
use chainsig_core::{hash, Algorithm, HashAlg, PreparedItem, RecordError};
use std::collections::HashMap;
use std::sync::Mutex;

/// Decodes a SEC1 key of `alg` into affine (x, y), big-endian.
pub fn decode_pubkey(alg: Algorithm, sec1: &[u8]) -> Result<([u8; 32], [u8; 32]), RecordError> {
    let uncompressed: [u8; 65] = match alg {
        Algorithm::Sm2 => chainsig_weierstrass::PublicKey::from_sec1(sec1)
            .map_err(|e| RecordError::new("pubkey", e.to_string()))?
            .to_uncompressed(),
        Algorithm::Secp256k1 => {
            check_sec1_shape(sec1)?;
            secp256k1::PublicKey::from_slice(sec1)
                .map_err(|_| RecordError::new("pubkey", "point is not on the curve"))?
                .serialize_uncompressed()
        }
        Algorithm::P256 => chainsig_weierstrass::p256::PublicKey::from_sec1(sec1)
            .map_err(|e| RecordError::new("pubkey", e.to_string()))?
            .to_uncompressed(),
    };
    let mut x = [0u8; 32];
    let mut y = [0u8; 32];
    x.copy_from_slice(&uncompressed[1..33]);
    y.copy_from_slice(&uncompressed[33..]);
    Ok((x, y))
}

/// The length and prefix checks, so the libraries' failures can only mean "not on the curve"
/// (or, compressed, "no such point").
fn check_sec1_shape(sec1: &[u8]) -> Result<(), RecordError> {
    match (sec1.first(), sec1.len()) {
        (Some(4), 65) | (Some(2 | 3), 33) => Ok(()),
        (Some(0), 1) => Err(RecordError::new("pubkey", "point at infinity")),
        (Some(4), n) | (Some(2 | 3), n) => Err(RecordError::new(
            "pubkey",
            format!("wrong length {n} for its prefix"),
        )),
        (Some(p), _) => Err(RecordError::new(
            "pubkey",
            format!("unknown SEC1 prefix 0x{p:02x}"),
        )),
        (None, _) => Err(RecordError::new("pubkey", "empty")),
    }
}

/// Z_A by (identifier, x‖y of the key).
type ZaCache = HashMap<(Vec<u8>, [u8; 64]), [u8; 32]>;

/// Turns decoded records into prepared items; shared by all threads of a run.
pub struct Preparer {
    /// The Z_A cache in shards chosen by the key, so that the threads preparing a batch of
    /// fresh signers do not queue on one lock (every record looks its signer up, and inserts it
    /// when new).
    za_cache: [Mutex<ZaCache>; ZA_SHARDS],
}

/// Shards of the Z_A cache.
const ZA_SHARDS: usize = 64;

/// Distinct signers kept in each shard of the Z_A cache before it is cleared (a few MB in all).
const ZA_CACHE_LIMIT: usize = (1 << 16) / ZA_SHARDS;

impl Default for Preparer {
    fn default() -> Self {
        Preparer {
            za_cache: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }
}

impl Preparer {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn prepare(&self, record: &VerifyRecord) -> Result<PreparedItem, RecordError> {
        let (px, py) = decode_pubkey(record.alg, &record.pubkey)?;
        let e = match &record.payload {
            Payload::Digest(d) => *d,
            Payload::Message {
                msg,
                hash: HashAlg::Sm3,
            } if record.alg == Algorithm::Sm2 => {
                let za = self.z_a(&record.sm2_id, &px, &py);
                hash::sm3_concat(&[&za, msg])
            }
            Payload::Message { msg, hash: alg } => hash::digest(*alg, msg),
        };
        Ok(PreparedItem {
            e,
            r: record.r,
            s: record.s,
            px,
            py,
        })
    }

    /// For an SM2 record that carries its message, to be hashed by a backend that hashes itself:
    /// the checked key and the signature (e left zero), the signer's Z_A and the message; `None`
    /// for any other record, which [`Preparer::prepare`] handles.
    #[allow(clippy::type_complexity)]
    pub fn prepare_unhashed<'r>(
        &self,
        record: &'r VerifyRecord,
    ) -> Option<Result<(PreparedItem, [u8; 32], &'r [u8]), RecordError>> {
        let Payload::Message {
            msg,
            hash: HashAlg::Sm3,
        } = &record.payload
        else {
            return None;
        };
        if record.alg != Algorithm::Sm2 {
            return None;
        }
        Some(decode_pubkey(record.alg, &record.pubkey).map(|(px, py)| {
            let za = self.z_a(&record.sm2_id, &px, &py);
            let item = PreparedItem {
                e: [0; 32],
                r: record.r,
                s: record.s,
                px,
                py,
            };
            (item, za, msg.as_slice())
        }))
    }

    /// An SM2 record that carries its message, from its bytes (as a backend that takes raw
    /// records gets it, `chainsig_core::raw_sm2`): the steps of [`Preparer::prepare`] for it.
    pub fn prepare_raw_sm2(&self, it: &RawSm2Item) -> Result<PreparedItem, RecordError> {
        let (px, py) = decode_pubkey(Algorithm::Sm2, it.pubkey)?;
        let za = self.z_a(it.id, &px, &py);
        Ok(PreparedItem {
            e: hash::sm3_concat(&[&za, it.msg]),
            r: *it.r,
            s: *it.s,
            px,
            py,
        })
    }

    /// Z_A for an SM2 signer, from the cache when this signer was seen before.
    pub fn z_a(&self, id: &[u8], px: &[u8; 32], py: &[u8; 32]) -> [u8; 32] {
        let mut key_bytes = [0u8; 64];
        key_bytes[..32].copy_from_slice(px);
        key_bytes[32..].copy_from_slice(py);
        let cache_key = (id.to_vec(), key_bytes);
        // x's low bits are as good as random across signers.
        let shard = &self.za_cache[usize::from(px[31]) % ZA_SHARDS];
        if let Some(za) = shard.lock().expect("cache lock").get(&cache_key) {
            return *za;
        }
        let za = hash::sm2_z_a(id, px, py);
        let mut cache = shard.lock().expect("cache lock");
        if cache.len() >= ZA_CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(cache_key, za);
        za
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_a_agrees_with_the_sm2_crate_and_is_cached() {
        let sk = chainsig_weierstrass::SecretKey::from_bytes(&[7u8; 32]).unwrap();
        let pk = sk.public_key();
        let prep = Preparer::new();
        let want = chainsig_weierstrass::z_a(b"ALICE", &pk);
        assert_eq!(prep.z_a(b"ALICE", &pk.x(), &pk.y()), want);
        assert_eq!(prep.z_a(b"ALICE", &pk.x(), &pk.y()), want);
        assert_ne!(prep.z_a(b"BOB", &pk.x(), &pk.y()), want);
    }

    #[test]
    fn key_errors_are_named() {
        for alg in Algorithm::ALL {
            for (bytes, reason) in [
                (vec![], "empty"),
                (vec![0u8], "point at infinity"),
                (vec![5u8; 33], "prefix"),
                (vec![4u8; 33], "length"),
                (vec![4u8; 65], "curve"),
            ] {
                let err = decode_pubkey(alg, &bytes).unwrap_err();
                assert_eq!(err.field, "pubkey");
                assert!(!err.reason.is_empty(), "{alg} {reason}");
            }
        }
    }
}
