//! Stage 1 of the pipeline on the host: decoded records become prepared items.
//!
//! Keys are checked against their curve (SEC1, with decompression) and messages are hashed, so
//! every backend, CPU or GPU, receives only validated affine keys and 32-byte digests. SM2's Z_A
//! depends only on the signer (identifier and key), so it is cached: a chain sees the same signers
//! again and again, and Z_A is a whole SM3 computation over 210 bytes.
//!
//! Compressed keys are most of a batch's preparation when it holds them (a square root each,
//! about 4 µs in libsecp256k1, against about 0.5 µs for everything else a record needs): where
//! the CPU has AVX-512 IFMA, [`Preparer::decompress_keys`] makes them whole eight at a time in
//! lanes ([`crate::lanes::decompress_keys`]) before the records are prepared, and a key the
//! lanes refuse is decoded again alone, for the error [`decode_pubkey`] words.

use crate::lanes;
use chainsig_core::raw_sm2::RawSm2Item;
use chainsig_core::record::{Payload, VerifyRecord};
use chainsig_core::{hash, Algorithm, HashAlg, PreparedItem, RecordError};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Mutex;

/// An affine key, x and y big-endian.
pub type AffineKey = ([u8; 32], [u8; 32]);

/// Decodes a SEC1 key of `alg` into affine (x, y), big-endian.
pub fn decode_pubkey(alg: Algorithm, sec1: &[u8]) -> Result<AffineKey, RecordError> {
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

/// The record's key: `key` when it was decoded already, else decoded here.
fn key_of(record: &VerifyRecord, key: Option<AffineKey>) -> Result<AffineKey, RecordError> {
    match key {
        Some(key) => Ok(key),
        None => decode_pubkey(record.alg, &record.pubkey),
    }
}

/// Z_A by (identifier, x‖y of the key).
type ZaCache = HashMap<(Vec<u8>, [u8; 64]), [u8; 32]>;

/// Turns decoded records into prepared items; shared by all threads of a run.
pub struct Preparer {
    /// Whether compressed keys are decompressed in lanes (the CPU has them, and
    /// `CHAINSIG_CPU_LANES` does not turn them off).
    lanes: bool,
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
            lanes: lanes::LaneMode::from_env()
                .and_then(lanes::LaneMode::resolve)
                .unwrap_or(false),
            za_cache: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }
}

impl Preparer {
    pub fn new() -> Self {
        Self::default()
    }

    /// A preparer that decompresses keys in lanes or not, whatever the CPU and the environment.
    pub fn with_lanes(mut self, lanes: bool) -> Self {
        self.lanes = lanes && lanes::available();
        self
    }

    /// The affine key of every record `wanted` picks whose key is compressed (`02`/`03` ‖ x),
    /// decompressed eight at a time in lanes on every core: entry i for record i, `None` for the
    /// others and for a key the lanes refuse (its record decodes it alone, for the error). Empty
    /// where the lanes are off.
    pub fn decompress_keys(
        &self,
        records: &[Result<VerifyRecord, RecordError>],
        wanted: impl Fn(&VerifyRecord) -> bool + Sync,
    ) -> Vec<Option<AffineKey>> {
        if !self.lanes {
            return Vec::new();
        }
        let mut keys = vec![None; records.len()];
        for alg in Algorithm::ALL {
            let (at, compressed): (Vec<usize>, Vec<[u8; 33]>) = records
                .iter()
                .enumerate()
                .filter_map(|(i, r)| match r {
                    Ok(rec) if rec.alg == alg && wanted(rec) => {
                        let key: [u8; 33] = rec.pubkey.as_slice().try_into().ok()?;
                        matches!(key[0], 2 | 3).then_some((i, key))
                    }
                    _ => None,
                })
                .unzip();
            let ys: Vec<Option<[u8; 32]>> = compressed
                .par_chunks(lanes::LANES)
                .with_min_len(16)
                .flat_map_iter(|group| {
                    let ys = lanes::decompress_keys(alg, group).unwrap_or([None; lanes::LANES]);
                    ys.into_iter().take(group.len())
                })
                .collect();
            for ((i, key), y) in at.into_iter().zip(&compressed).zip(ys) {
                keys[i] = y.map(|y| (key[1..].try_into().expect("32 bytes"), y));
            }
        }
        keys
    }

    /// `record` prepared: its key checked (or taken from `key`, decoded already by
    /// [`Preparer::decompress_keys`]) and its digest computed.
    pub fn prepare(
        &self,
        record: &VerifyRecord,
        key: Option<AffineKey>,
    ) -> Result<PreparedItem, RecordError> {
        let (px, py) = key_of(record, key)?;
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
        key: Option<AffineKey>,
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
        Some(key_of(record, key).map(|(px, py)| {
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
