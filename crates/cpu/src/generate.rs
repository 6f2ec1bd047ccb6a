//! Signed test data: fresh keys, honest signatures, and honest signatures corrupted in varied ways.
//!
//! Record `i` of a run depends only on (seed, i): each record draws from its own ChaCha stream, so
//! the same seed gives the same file whatever the thread count, and records can be made in parallel.

use crate::prepare::Preparer;
use chainsig_core::record::{Payload, VerifyRecord, DEFAULT_SM2_ID};
use chainsig_core::{hash, Algorithm, PreparedItem};
use p256::ecdsa::signature::hazmat::PrehashSigner;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// How a record was spoiled (or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corruption {
    None,
    FlipR,
    FlipS,
    FlipMessage,
    /// A bit of the compressed key flipped (retried until the result is still a point).
    FlipKey,
    /// r = 0, s = 0, r = n, s ≥ n.
    ROutOfRange,
    SOutOfRange,
    /// The key of a different signer.
    OtherSigner,
}

impl Corruption {
    const ALL_INVALID: [Corruption; 7] = [
        Corruption::FlipR,
        Corruption::FlipS,
        Corruption::FlipMessage,
        Corruption::FlipKey,
        Corruption::ROutOfRange,
        Corruption::SOutOfRange,
        Corruption::OtherSigner,
    ];
}

/// One generated record, in the `verify` format's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedRecord {
    pub alg: Algorithm,
    /// SEC1; compressed for odd indices, uncompressed for even ones.
    pub pubkey: Vec<u8>,
    pub msg: Vec<u8>,
    /// The digest the signature is over: e = SM3(Z_A ‖ msg) for SM2 (default identifier), else the
    /// algorithm's default hash of msg.
    pub digest: [u8; 32],
    pub sig: [u8; 64],
    pub corruption: Corruption,
}

impl GeneratedRecord {
    pub fn expect_valid(&self) -> bool {
        self.corruption == Corruption::None
    }

    /// The record as `verify` decodes it: carrying the message (hashed during preparation) or
    /// only its digest.
    pub fn to_verify_record(&self, with_message: bool) -> VerifyRecord {
        let payload = if with_message {
            Payload::Message {
                msg: self.msg.clone(),
                hash: self.alg.default_hash(),
            }
        } else {
            Payload::Digest(self.digest)
        };
        let (r, s) = self.sig.split_at(32);
        VerifyRecord {
            alg: self.alg,
            pubkey: self.pubkey.clone(),
            payload,
            r: r.try_into().expect("32 bytes"),
            s: s.try_into().expect("32 bytes"),
            sm2_id: DEFAULT_SM2_ID.to_vec(),
        }
    }
}

/// Records `0..n` of `spec`, prepared for a batch (in parallel), with the verdict each should get.
pub fn prepared_items(spec: &GenSpec, n: usize) -> (Vec<PreparedItem>, Vec<bool>) {
    prepare_all(spec, n, None)
}

fn prepare_all(spec: &GenSpec, n: usize, pool: Option<u64>) -> (Vec<PreparedItem>, Vec<bool>) {
    let preparer = Preparer::new();
    let pairs: Vec<(PreparedItem, bool)> = (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let g = make_record(spec, i, pool);
            let item = preparer
                .prepare(&g.to_verify_record(false))
                .expect("generated keys are valid");
            (item, g.expect_valid())
        })
        .collect();
    pairs.into_iter().unzip()
}

/// Parameters of a generated data set.
#[derive(Debug, Clone, Copy)]
pub struct GenSpec {
    pub alg: Algorithm,
    pub seed: u64,
    pub invalid_ratio: f64,
    pub msg_len: usize,
}

/// Makes record `index` of the data set `spec`.
pub fn record(spec: &GenSpec, index: u64) -> GeneratedRecord {
    make_record(spec, index, None)
}

/// Record `index` of `spec` signed by key `index mod signers` of a fixed set, as a permissioned
/// chain's endorsers and clients sign; a record spoiled as `OtherSigner` takes another key of the
/// set (one spoiled as `FlipKey` still gets a key outside it).
pub fn record_in_pool(spec: &GenSpec, index: u64, signers: u64) -> GeneratedRecord {
    make_record(spec, index, Some(signers))
}

/// Key k of the signer set of `spec` (see [`record_in_pool`]).
fn pool_signer(spec: &GenSpec, k: u64) -> Signer {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ 0x9e37_79b9_7f4a_7c15);
    rng.set_stream(k);
    Signer::random(spec.alg, &mut rng)
}

/// The uncompressed SEC1 public keys of the signer set of `spec`, key k at index k.
pub fn pool_public_keys(spec: &GenSpec, signers: u64) -> Vec<Vec<u8>> {
    (0..signers.max(1))
        .into_par_iter()
        .map(|k| pool_signer(spec, k).public_sec1(false))
        .collect()
}

/// Records `0..n` of `spec` by a set of `signers` keys ([`record_in_pool`]), prepared, with the
/// verdict each should get.
pub fn prepared_items_in_pool(
    spec: &GenSpec,
    n: usize,
    signers: u64,
) -> (Vec<PreparedItem>, Vec<bool>) {
    prepare_all(spec, n, Some(signers))
}

fn make_record(spec: &GenSpec, index: u64, pool: Option<u64>) -> GeneratedRecord {
    let pool = pool.map(|k| k.max(1));
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    rng.set_stream(index);
    let mut msg = vec![0u8; spec.msg_len];
    rng.fill_bytes(&mut msg);
    let corruption = if rng.gen_bool(spec.invalid_ratio.clamp(0.0, 1.0)) {
        Corruption::ALL_INVALID[rng.gen_range(0..Corruption::ALL_INVALID.len())]
    } else {
        Corruption::None
    };
    let signer = match pool {
        Some(k) => pool_signer(spec, index % k),
        None => Signer::random(spec.alg, &mut rng),
    };
    let digest = signer.digest(&msg);
    let mut sig = signer.sign(&digest, &mut rng);
    let compressed = index % 2 == 1;
    let mut pubkey = signer.public_sec1(compressed);
    let n = spec.alg.curve().n;
    match corruption {
        Corruption::None => {}
        Corruption::FlipR => flip_bit(&mut sig[..32], &mut rng),
        Corruption::FlipS => flip_bit(&mut sig[32..], &mut rng),
        Corruption::FlipMessage => {
            if msg.is_empty() {
                msg.push(0); // the empty message becomes a different one
            } else {
                flip_bit(&mut msg, &mut rng)
            }
        }
        Corruption::FlipKey => pubkey = flipped_key(spec.alg, &pubkey, &mut rng),
        Corruption::ROutOfRange => sig[..32].copy_from_slice(&out_of_range(&n, &mut rng)),
        Corruption::SOutOfRange => sig[32..].copy_from_slice(&out_of_range(&n, &mut rng)),
        Corruption::OtherSigner => {
            let other = match pool {
                Some(k) if k > 1 => pool_signer(spec, (index % k + rng.gen_range(1..k)) % k),
                _ => Signer::random(spec.alg, &mut rng),
            };
            pubkey = other.public_sec1(compressed)
        }
    }
    let digest = if corruption == Corruption::FlipMessage {
        signer.digest(&msg)
    } else {
        digest
    };
    GeneratedRecord {
        alg: spec.alg,
        pubkey,
        msg,
        digest,
        sig,
        corruption,
    }
}

fn flip_bit(bytes: &mut [u8], rng: &mut impl Rng) {
    let bit = rng.gen_range(0..bytes.len() * 8);
    bytes[bit / 8] ^= 1 << (bit % 8);
}

/// 0, n, or a value above n.
fn out_of_range(n: &[u8; 32], rng: &mut impl Rng) -> [u8; 32] {
    match rng.gen_range(0..3) {
        0 => [0u8; 32],
        1 => *n,
        _ => {
            let mut v = [0xffu8; 32];
            v[31] = rng.gen();
            v
        }
    }
}

/// Flips a bit of the x coordinate until the compressed key is again a point, then re-encodes.
fn flipped_key(alg: Algorithm, sec1: &[u8], rng: &mut impl Rng) -> Vec<u8> {
    let (x, y) = crate::prepare::decode_pubkey(alg, sec1).expect("generated keys are valid");
    loop {
        let mut compressed = vec![2 | (y[31] & 1)];
        compressed.extend_from_slice(&x);
        flip_bit(&mut compressed[1..], rng);
        if let Ok((nx, ny)) = crate::prepare::decode_pubkey(alg, &compressed) {
            return if sec1.len() == 33 {
                compressed
            } else {
                [&[4u8][..], &nx, &ny].concat()
            };
        }
    }
}

/// A freshly generated key of one algorithm.
enum Signer {
    Sm2(chainsig_sm2::SecretKey),
    Secp256k1(secp256k1::SecretKey),
    P256(p256::ecdsa::SigningKey),
}

impl Signer {
    fn random(alg: Algorithm, rng: &mut ChaCha8Rng) -> Signer {
        match alg {
            Algorithm::Sm2 => Signer::Sm2(chainsig_sm2::SecretKey::random(rng)),
            Algorithm::Secp256k1 => loop {
                if let Ok(key) = secp256k1::SecretKey::from_byte_array(rng.gen()) {
                    break Signer::Secp256k1(key);
                }
            },
            Algorithm::P256 => loop {
                let bytes: [u8; 32] = rng.gen();
                if let Ok(key) = p256::ecdsa::SigningKey::from_bytes(&bytes.into()) {
                    break Signer::P256(key);
                }
            },
        }
    }

    fn public_sec1(&self, compressed: bool) -> Vec<u8> {
        match self {
            Signer::Sm2(sk) => {
                let pk = sk.public_key();
                if compressed {
                    pk.to_compressed().to_vec()
                } else {
                    pk.to_uncompressed().to_vec()
                }
            }
            Signer::Secp256k1(sk) => {
                let pk = sk.public_key(crate::ecdsa_secp256k1::context());
                if compressed {
                    pk.serialize().to_vec()
                } else {
                    pk.serialize_uncompressed().to_vec()
                }
            }
            Signer::P256(sk) => sk
                .verifying_key()
                .to_sec1_point(compressed)
                .as_bytes()
                .to_vec(),
        }
    }

    fn digest(&self, msg: &[u8]) -> [u8; 32] {
        match self {
            Signer::Sm2(sk) => {
                let za = chainsig_sm2::z_a(DEFAULT_SM2_ID, &sk.public_key());
                chainsig_sm2::message_digest(&za, msg)
            }
            Signer::Secp256k1(_) => hash::digest(Algorithm::Secp256k1.default_hash(), msg),
            Signer::P256(_) => hash::digest(Algorithm::P256.default_hash(), msg),
        }
    }

    fn sign(&self, digest: &[u8; 32], rng: &mut ChaCha8Rng) -> [u8; 64] {
        match self {
            Signer::Sm2(sk) => chainsig_sm2::sign_prehashed(sk, digest, rng),
            Signer::Secp256k1(sk) => {
                let msg = secp256k1::Message::from_digest(*digest);
                crate::ecdsa_secp256k1::context()
                    .sign_ecdsa(msg, sk)
                    .serialize_compact()
            }
            Signer::P256(sk) => {
                let sig: p256::ecdsa::Signature = sk.sign_prehash(digest).expect("32-byte prehash");
                sig.to_bytes().into()
            }
        }
    }
}

#[cfg(test)]
mod pool_tests {
    use super::*;

    #[test]
    fn pool_records_are_signed_by_keys_of_the_set_and_verify_as_expected() {
        let spec = GenSpec {
            alg: Algorithm::Sm2,
            seed: 77,
            invalid_ratio: 0.3,
            msg_len: 40,
        };
        let keys = pool_public_keys(&spec, 5);
        assert_eq!(keys.len(), 5);
        let set: std::collections::HashSet<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|k| (k[1..33].to_vec(), k[33..65].to_vec()))
            .collect();
        assert_eq!(set.len(), 5, "distinct keys");
        let (items, verdicts) = prepared_items_in_pool(&spec, 120, 5);
        let mut signers_seen = std::collections::HashSet::new();
        let mut outside = 0;
        for (i, item) in items.iter().enumerate() {
            let key = (item.px.to_vec(), item.py.to_vec());
            let g = record_in_pool(&spec, i as u64, 5);
            if set.contains(&key) {
                signers_seen.insert(key);
            } else {
                outside += 1;
                assert_eq!(g.corruption, Corruption::FlipKey, "record {i}");
            }
            let valid = crate::verify_item(Algorithm::Sm2, false, item);
            assert_eq!(valid, verdicts[i], "record {i} ({:?})", g.corruption);
        }
        assert_eq!(signers_seen.len(), 5);
        assert!(outside < 20);
        assert!(verdicts.iter().filter(|v| !**v).count() > 10);
    }
}
