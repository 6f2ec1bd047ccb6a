//! The ways a record is spoiled, one list for every data set the kit makes.
//!
//! Each kind is applied to an honest signature right after signing; which kinds a data set draws
//! from depends only on what its records can express ([`Form`]). See the crate documentation for
//! why each kind is there.

use chainsig_core::{be256, Algorithm};
use rand::{Rng, RngCore};

/// How a record was spoiled (or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Corruption {
    None,
    /// One bit of r flipped.
    FlipR,
    /// One bit of s flipped.
    FlipS,
    /// r = 0.
    RZero,
    /// s = 0.
    SZero,
    /// r = n, n + 1, n + 2 or near 2²⁵⁶ (all ones but the last byte).
    RAtLeastN,
    /// s = n, n + 1, n + 2 or near 2²⁵⁶.
    SAtLeastN,
    /// r and s exchanged.
    SwapRS,
    /// One bit of the message flipped (an empty message becomes one zero byte).
    FlipMessage,
    /// The message replaced by fresh random bytes of the same length.
    ReplaceMessage,
    /// One random byte appended to the message.
    ExtendMessage,
    /// One bit of the digest flipped, the message left alone (records that carry only e).
    FlipDigest,
    /// One bit of the key's x flipped, retried until it is again a curve point: a wrong key that
    /// passes every key check.
    FlipKey,
    /// The key of another signer (of the same set, when records are signed by a set).
    OtherSigner,
    /// SM2: another distinguishing identifier, so Z_A and e differ.
    OtherId,
}

/// What a data set's records carry, which decides the kinds they can be spoiled by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `chainsig gen`'s lines: a message of the length asked for, the default hash and identifier.
    Lines,
    /// Prepared records (e, r, s, key) for the batch engines: also the digest itself.
    Digests,
    /// SM2 records that carry message and identifier (GPU hashing): also length and identifier.
    Sm2Messages,
}

impl Corruption {
    /// Every kind that spoils a record, in the order records draw from.
    pub const ALL: [Corruption; 15] = [
        Corruption::FlipR,
        Corruption::FlipS,
        Corruption::FlipMessage,
        Corruption::FlipKey,
        Corruption::RZero,
        Corruption::SZero,
        Corruption::RAtLeastN,
        Corruption::SAtLeastN,
        Corruption::OtherSigner,
        Corruption::SwapRS,
        Corruption::ReplaceMessage,
        Corruption::FlipDigest,
        Corruption::ExtendMessage,
        Corruption::OtherId,
        Corruption::None,
    ];

    /// Whether records of `form` can carry this kind.
    pub fn fits(self, form: Form) -> bool {
        match self {
            Corruption::None => false,
            // A line's message has the length asked for, and a prepared record has no message.
            Corruption::ExtendMessage => form == Form::Sm2Messages,
            // Only a prepared record writes e itself.
            Corruption::FlipDigest => form == Form::Digests,
            // Only message records carry an identifier.
            Corruption::OtherId => form == Form::Sm2Messages,
            _ => true,
        }
    }

    /// The kinds records of `form` draw from, uniformly.
    pub fn kinds(form: Form) -> Vec<Corruption> {
        Corruption::ALL
            .into_iter()
            .filter(|c| c.fits(form))
            .collect()
    }
}

pub(crate) fn flip_bit(bytes: &mut [u8], rng: &mut impl Rng) {
    let bit = rng.gen_range(0..bytes.len() * 8);
    bytes[bit / 8] ^= 1 << (bit % 8);
}

/// A value of r or s that no signature has: n, n + 1, n + 2, or all ones but a random last byte.
pub(crate) fn at_least_n(alg: Algorithm, rng: &mut impl RngCore) -> [u8; 32] {
    match rng.gen_range(0..4u8) {
        small @ 0..=2 => be256::add_small(&alg.curve().n, small),
        _ => {
            let mut v = [0xffu8; 32];
            v[31] = rng.gen();
            v
        }
    }
}

/// n − s for s in [1, n − 1] (the other valid s of an ECDSA signature); other values unchanged.
pub fn negate_s(alg: Algorithm, s: &[u8; 32]) -> [u8; 32] {
    let n = &alg.curve().n;
    if s == &[0u8; 32] || s.as_slice() >= n.as_slice() {
        return *s;
    }
    be256::sub(n, s)
}

/// The low one of s and n − s (values out of range are left alone, to be refused).
pub fn low_of(alg: Algorithm, s: &[u8; 32]) -> [u8; 32] {
    if alg.curve().is_high_s(s) {
        negate_s(alg, s)
    } else {
        *s
    }
}

/// The high one of s and n − s.
pub fn high_of(alg: Algorithm, s: &[u8; 32]) -> [u8; 32] {
    if alg.curve().is_high_s(s) {
        *s
    } else {
        negate_s(alg, s)
    }
}
