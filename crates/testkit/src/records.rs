//! The generator: record `index` of a data set, signed honestly and then, with the set's
//! probability, spoiled in one way ([`Corruption`]).
//!
//! Record `i` depends only on (seed, i): each record draws from its own ChaCha stream, so the same
//! seed gives the same records whatever the thread count, and records can be made in parallel.

use crate::corruption::{at_least_n, flip_bit, Corruption, Form};
use crate::curves::{decode_key, SM2_DEFAULT_ID};
use crate::signer::Signer;
use chainsig_core::record::{Payload, VerifyRecord};
use chainsig_core::{der, Algorithm, PreparedItem};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Parameters of a generated data set.
#[derive(Debug, Clone, Copy)]
pub struct GenSpec {
    pub alg: Algorithm,
    pub seed: u64,
    /// The share of records spoiled, in [0, 1].
    pub invalid_ratio: f64,
    /// Message length in bytes (message records of [`Form::Sm2Messages`] vary it instead).
    pub msg_len: usize,
}

/// One generated record, in the `verify` format's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedRecord {
    pub alg: Algorithm,
    /// SEC1; compressed for odd indices, uncompressed for even ones.
    pub pubkey: Vec<u8>,
    /// The key's affine coordinates (the same point as `pubkey`).
    pub px: [u8; 32],
    pub py: [u8; 32],
    pub msg: Vec<u8>,
    /// SM2's distinguishing identifier (the default one except for records of
    /// [`Form::Sm2Messages`]); empty for ECDSA.
    pub sm2_id: Vec<u8>,
    /// The digest the signature is checked against: e = SM3(Z_A ‖ msg) for SM2, else the
    /// algorithm's default hash of msg (a [`Corruption::FlipDigest`] record's differs from it).
    pub digest: [u8; 32],
    pub sig: [u8; 64],
    pub corruption: Corruption,
}

impl GeneratedRecord {
    /// The verdict by construction: honest signatures verify, spoiled ones do not.
    pub fn expect_valid(&self) -> bool {
        self.corruption == Corruption::None
    }

    pub fn r(&self) -> [u8; 32] {
        self.sig[..32].try_into().expect("64-byte signature")
    }

    pub fn s(&self) -> [u8; 32] {
        self.sig[32..].try_into().expect("64-byte signature")
    }

    /// The record as the batch engines take it.
    pub fn item(&self) -> PreparedItem {
        PreparedItem {
            e: self.digest,
            r: self.r(),
            s: self.s(),
            px: self.px,
            py: self.py,
        }
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
        VerifyRecord {
            alg: self.alg,
            pubkey: self.pubkey.clone(),
            payload,
            r: self.r(),
            s: self.s(),
            sm2_id: if self.sm2_id.is_empty() {
                SM2_DEFAULT_ID.as_bytes().to_vec()
            } else {
                self.sm2_id.clone()
            },
        }
    }

    /// Record `index` as a line of `chainsig gen` (docs/formats.md): `alg`, `pubkey`, `msg`,
    /// then `sig` (r‖s) or, for every fourth record, `sig_der`, then `expect`.
    pub fn to_json_line(&self, index: u64) -> String {
        let sig_field = if index % 4 == 3 {
            format!(
                r#""sig_der":"{}""#,
                hex::encode(der::encode_signature(&self.r(), &self.s()))
            )
        } else {
            format!(r#""sig":"{}""#, hex::encode(self.sig))
        };
        format!(
            r#"{{"alg":"{}","pubkey":"{}","msg":"{}",{sig_field},"expect":{}}}"#,
            self.alg,
            hex::encode(&self.pubkey),
            hex::encode(&self.msg),
            self.expect_valid()
        )
    }
}

/// Where a record's key comes from.
#[derive(Clone, Copy)]
pub(crate) enum Keys<'a> {
    /// A fresh key per record, from the record's own stream.
    Fresh,
    /// Key `index mod K` of the set of K keys of the spec, made when needed.
    Set(u64),
    /// The same set, already made (key k at index k).
    Made(&'a [Signer]),
}

impl Keys<'_> {
    fn len(&self) -> Option<u64> {
        match self {
            Keys::Fresh => None,
            Keys::Set(k) => Some((*k).max(1)),
            Keys::Made(keys) => Some(keys.len() as u64),
        }
    }

    fn get(&self, spec: &GenSpec, k: u64) -> Signer {
        match self {
            Keys::Made(keys) => keys[k as usize].clone(),
            _ => set_signer(spec, k),
        }
    }
}

/// Key k of the signer set of `spec` (see [`record_in_pool`]).
pub(crate) fn set_signer(spec: &GenSpec, k: u64) -> Signer {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ 0x9e37_79b9_7f4a_7c15);
    rng.set_stream(k);
    Signer::random(spec.alg, &mut rng)
}

/// The signer set of `spec`, key k at index k.
pub(crate) fn signer_set(spec: &GenSpec, signers: u64) -> Vec<Signer> {
    (0..signers.max(1))
        .into_par_iter()
        .map(|k| set_signer(spec, k))
        .collect()
}

/// Makes record `index` of the data set `spec`, signed by a fresh key.
pub fn record(spec: &GenSpec, index: u64) -> GeneratedRecord {
    make_record(spec, index, Keys::Fresh, Form::Lines)
}

/// Record `index` of `spec` signed by key `index mod signers` of a fixed set, as a permissioned
/// chain's endorsers and clients sign; a record spoiled as `OtherSigner` takes another key of the
/// set (one spoiled as `FlipKey` still gets a key outside it).
pub fn record_in_pool(spec: &GenSpec, index: u64, signers: u64) -> GeneratedRecord {
    make_record(spec, index, Keys::Set(signers), Form::Lines)
}

/// The uncompressed SEC1 public keys of the signer set of `spec`, key k at index k.
pub fn pool_public_keys(spec: &GenSpec, signers: u64) -> Vec<Vec<u8>> {
    signer_set(spec, signers)
        .iter()
        .map(|s| s.public_sec1(false))
        .collect()
}

/// Records `0..n` of `spec` (fresh keys), prepared for a batch, with the verdict each should get.
pub fn prepared_items(spec: &GenSpec, n: usize) -> (Vec<PreparedItem>, Vec<bool>) {
    prepare_all(spec, n, Keys::Fresh)
}

/// Records `0..n` of `spec` by a set of `signers` keys ([`record_in_pool`]), prepared, with the
/// verdict each should get.
pub fn prepared_items_in_pool(
    spec: &GenSpec,
    n: usize,
    signers: u64,
) -> (Vec<PreparedItem>, Vec<bool>) {
    let set = signer_set(spec, signers);
    prepare_all(spec, n, Keys::Made(&set))
}

fn prepare_all(spec: &GenSpec, n: usize, keys: Keys) -> (Vec<PreparedItem>, Vec<bool>) {
    (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let g = make_record(spec, i, keys, Form::Lines);
            (g.item(), g.expect_valid())
        })
        .unzip()
}

/// SM3 padding boundaries for message records: Z_A's 32 bytes come first, so lengths 23/24 put
/// the 0x80 byte and the length field on either side of the first block's end (32 + len = 55,
/// 56), 31/32/33 fill it exactly, and 87/88/95/96/151 do the same for the second and third.
const BOUNDARY_LENGTHS: [usize; 12] = [0, 1, 23, 24, 31, 32, 33, 87, 88, 95, 96, 151];

/// The identifier a set's SM2 key k signs under in message records: GB/T 32918.2's example
/// "ALICE123@YAHOO.COM" for one key in eight, the default for the rest.
pub(crate) fn sm2_id_of(k: u64) -> &'static str {
    if k % 8 == 7 {
        "ALICE123@YAHOO.COM"
    } else {
        SM2_DEFAULT_ID
    }
}

pub(crate) fn make_record(spec: &GenSpec, index: u64, keys: Keys, form: Form) -> GeneratedRecord {
    let alg = spec.alg;
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    rng.set_stream(index);
    let msg_len = match form {
        Form::Sm2Messages if rng.gen_range(0..4) == 0 => {
            BOUNDARY_LENGTHS[rng.gen_range(0..BOUNDARY_LENGTHS.len())]
        }
        Form::Sm2Messages => rng.gen_range(0..=300),
        _ => spec.msg_len,
    };
    let mut msg = vec![0u8; msg_len];
    rng.fill_bytes(&mut msg);
    let corruption = if rng.gen_bool(spec.invalid_ratio.clamp(0.0, 1.0)) {
        let kinds = Corruption::kinds(form);
        kinds[rng.gen_range(0..kinds.len())]
    } else {
        Corruption::None
    };
    let (signer, key_index) = match keys.len() {
        Some(k) => (keys.get(spec, index % k), index % k),
        None => (Signer::random(alg, &mut rng), 0),
    };
    let sm2_id: &str = match (alg, form) {
        (Algorithm::Sm2, Form::Sm2Messages) => sm2_id_of(key_index),
        (Algorithm::Sm2, _) => SM2_DEFAULT_ID,
        _ => "",
    };
    let (sx, sy) = signer.public_xy();
    let hash =
        |msg: &[u8], id: &str| crate::curves::message_digest(alg, msg, id.as_bytes(), (&sx, &sy));
    let mut digest = hash(&msg, sm2_id);
    let mut sig = signer.sign(&digest, &mut rng);
    let compressed = index % 2 == 1;
    let (mut px, mut py) = (sx, sy);
    let mut sm2_id = sm2_id.as_bytes().to_vec();
    match corruption {
        Corruption::None => {}
        Corruption::FlipR => flip_bit(&mut sig[..32], &mut rng),
        Corruption::FlipS => flip_bit(&mut sig[32..], &mut rng),
        Corruption::RZero => sig[..32].fill(0),
        Corruption::SZero => sig[32..].fill(0),
        Corruption::RAtLeastN => sig[..32].copy_from_slice(&at_least_n(alg, &mut rng)),
        Corruption::SAtLeastN => sig[32..].copy_from_slice(&at_least_n(alg, &mut rng)),
        Corruption::SwapRS => sig.rotate_left(32),
        Corruption::FlipMessage => {
            if msg.is_empty() {
                msg.push(0); // the empty message becomes a different one
            } else {
                flip_bit(&mut msg, &mut rng)
            }
        }
        Corruption::ReplaceMessage => {
            let old = msg.clone();
            while msg == old && !msg.is_empty() {
                rng.fill_bytes(&mut msg);
            }
            if msg.is_empty() {
                msg.push(rng.gen());
            }
        }
        Corruption::ExtendMessage => msg.push(rng.gen()),
        Corruption::FlipDigest => flip_bit(&mut digest, &mut rng),
        Corruption::FlipKey => (px, py) = flipped_key(alg, &sx, &sy, &mut rng),
        Corruption::OtherSigner => {
            let other = match keys.len() {
                Some(k) if k > 1 => keys.get(spec, (index % k + rng.gen_range(1..k)) % k),
                _ => loop {
                    let other = Signer::random(alg, &mut rng);
                    if other.public_xy() != (sx, sy) {
                        break other;
                    }
                },
            };
            (px, py) = other.public_xy();
        }
        Corruption::OtherId => {
            sm2_id = if sm2_id == SM2_DEFAULT_ID.as_bytes() {
                b"ALICE123@YAHOO.COM".to_vec()
            } else {
                SM2_DEFAULT_ID.as_bytes().to_vec()
            };
        }
    }
    if matches!(
        corruption,
        Corruption::FlipMessage | Corruption::ReplaceMessage | Corruption::ExtendMessage
    ) {
        // The digest follows the message; the signature is over the old one.
        digest = hash(
            &msg,
            std::str::from_utf8(&sm2_id).expect("ASCII identifier"),
        );
    }
    GeneratedRecord {
        alg,
        pubkey: crate::curves::encode_key(&px, &py, compressed),
        px,
        py,
        msg,
        sm2_id,
        digest,
        sig,
        corruption,
    }
}

/// Flips a bit of x until (x, parity of y) is again a point; that point's coordinates.
fn flipped_key(
    alg: Algorithm,
    x: &[u8; 32],
    y: &[u8; 32],
    rng: &mut impl Rng,
) -> ([u8; 32], [u8; 32]) {
    loop {
        let mut compressed = crate::curves::encode_key(x, y, true);
        flip_bit(&mut compressed[1..], rng);
        if let Some(point) = decode_key(alg, &compressed) {
            return point;
        }
    }
}
