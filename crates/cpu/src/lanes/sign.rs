//! secp256k1 ECDSA signing (SEC 1 §4.1.3) eight signatures per call, in constant time, with the
//! bytes of libsecp256k1's `secp256k1_ecdsa_sign_recoverable`: the RFC 6979 nonce
//! ([`crate::rfc6979`], the function chainsig-eth hands to libsecp256k1), low s (libsecp256k1
//! always normalises, as EIP-2 requires of Ethereum transactions) and the recovery id. The shape
//! is that of Intel's crypto_mb `mbx_nistp256_ecdsa_sign_mb8` (eight independent signatures in
//! the eight 64-bit lanes of AVX-512 IFMA registers), written here over the lanes' own field
//! code ([`super::field`]) for secp256k1.
//!
//! # Per lane, all eight at once
//! 1. k = RFC 6979 nonce of (d, z), attempt 0, per lane (HMAC-SHA256 in eight 32-bit lanes,
//!    [`super::nonce`]; constant time in d).
//! 2. R = k·G by the constant-time comb ([`super::ct_comb`]).
//! 3. x(R), y(R): Z⁻¹ of the eight lanes by Montgomery's trick across them and one
//!    constant-time safegcd inversion ([`super::invert`]), so the affine conversion is constant
//!    time.
//! 4. r = x(R) mod n: x < p < 2n, so one masked subtraction; the recovery id's bit 1 is that
//!    "x ≥ n" mask, its bit 0 the parity of y(R) (a masked test of the low limb).
//! 5. s = k⁻¹·(z + r·d) mod n, k⁻¹ by the same batched inversion in the scalar lanes.
//! 6. Low s: where s > n/2 (a vector compare of s with n − s), s becomes n − s by a masked blend
//!    and bit 0 of the recovery id flips (R becomes −R), as libsecp256k1 does.
//!
//! # The variable-time exits (probability about 2⁻¹²⁸ each)
//! RFC 6979 asks for the next nonce when k is 0 or ≥ n, and ECDSA for a new k when r = 0 or
//! s = 0. Each happens for a random input with probability below 2⁻¹²⁷; the lanes compute the
//! three conditions as masks, and a lane where one holds is signed again, alone, by libsecp256k1
//! with its own RFC 6979 nonce function (same bytes: it retries with the next nonce). That branch
//! is the only one on secret-derived data, and it reveals only that such a rare event happened.
//! Lanes past a ragged group's items sign a stand-in (d = 1, z = 0) and are dropped.
//!
//! # Review of secret-dependent branches and indices (all of this file, [`super::ct_comb`],
//! [`super::field`], [`super::point`]'s `select`/`from_affine`, [`super::mul::recode`]/`split`)
//! - Key and nonce bytes enter the lanes through `radix52_from_be` (shifts and masks) and
//!   [`Fe8::load`] (fixed addresses).
//! - No `if`, `match` or loop bound depends on d, k, their digits, R or s, except the rare exit
//!   above; every choice is a blend (`vpblendmq`) under a mask register, every comparison a
//!   vector compare into a mask.
//! - No address depends on them: the comb scans whole table rows ([`super::ct_comb::lookup`]);
//!   the inversion's lane shifts are fixed permutations, and its one scalar inversion
//!   (`crypto-bigint`'s `invert_odd_mod`, Bernstein–Yang safegcd) runs a fixed number of steps.
//! - The recovery id and the output bytes are public (they are the signature).
//! - Verification's comb ([`super::mul::mul_base`], gathers) and addition
//!   ([`super::point::Jac8::add_affine`], which branches when a doubling occurs) are not used.
//!
//! Measured, not only reviewed: `cargo bench -p chainsig-cpu --bench lanes_ct` runs a dudect-style
//! test (Reparaz, Balasch, Verbauwhede, "Dude, is my code constant time?", DATE 2017): a fixed
//! key against random keys, Welch's t over millions of timings of this signer and of the comb's
//! lookups alone; BENCHMARKS.md has its output. Valgrind's memcheck cannot check this code (it
//! does not implement AVX-512).
//!
//! # Secrets in memory
//! The key and nonce bytes, their limb arrays, the digits, k, k⁻¹ and the intermediate sums are
//! wiped with `zeroize` before returning; register copies are outside what Rust can wipe.

use super::ct_comb::{mul_base_ct, to_affine_ct};
use super::curves::K256Curve;
use super::field::{splat, Fe8, Mask};
use super::modulus::{be_from_radix52, radix52_from_be, LaneModulus, LIMBS};
use super::nonce::nonces;
use super::point::LaneCurve;
use core::arch::x86_64::*;
use secp256k1::ecdsa::{RecoverableSignature, RecoveryId};
use secp256k1::{Message, Secp256k1, SecretKey, SignOnly};
use std::sync::OnceLock;
use zeroize::{Zeroize, Zeroizing};

type Curve = K256Curve;
type Scalar = Fe8<<K256Curve as LaneCurve>::N>;
type Column = [[u64; LIMBS]; 8];

/// libsecp256k1's context for the rare lane that leaves the lanes (see the module docs).
fn fallback_context() -> &'static Secp256k1<SignOnly> {
    static CONTEXT: OnceLock<Secp256k1<SignOnly>> = OnceLock::new();
    CONTEXT.get_or_init(Secp256k1::signing_only)
}

/// libsecp256k1's signature of one item: the same bytes, by definition of the lanes' contract.
pub(crate) fn sign_one(key: &SecretKey, digest: &[u8; 32]) -> RecoverableSignature {
    fallback_context().sign_ecdsa_recoverable(Message::from_digest(*digest), key)
}

/// The lanes' outputs before they become signatures: r, s and the recovery id per lane, and the
/// lanes that must be signed again by libsecp256k1.
struct LaneSignatures {
    r: Column,
    s: Column,
    recovery_id: [u8; 8],
    redo: Mask,
}

/// The arithmetic of steps 2–6 on limb columns: d (keys), k (nonces; lanes where k is 0 or
/// ≥ n are flagged in `redo`), z (digests, any 256-bit value).
#[target_feature(enable = "avx512f,avx512ifma")]
fn sign_columns(d: &Column, k: &Column, z: &Column) -> LaneSignatures {
    let mut k = Scalar::load(k);
    let mut d = Scalar::load(d);
    // z < 2²⁵⁶ < 2n: inside the lanes' [0, 2n) invariant; reduced by the arithmetic below.
    let z = Scalar::load(z);
    let n = Scalar::constant(&<<Curve as LaneCurve>::N as LaneModulus>::M.m);
    let k_bad = k.is_zero() | !super::field::lt_int(&k.0, &n.0);

    let mut point = mul_base_ct::<Curve>(&k);
    // R's affine coordinates are public (r and the recovery id give R).
    let (x, y) = to_affine_ct(&mut point);
    let y_odd = _mm512_test_epi64_mask(y.0[0], splat(1));

    // x < p < 2n: as a scalar it is inside [0, 2n), and canonical() is x mod n.
    let x_over_n = !super::field::lt_int(&x.0, &n.0);
    let r = Scalar::from_limbs(x.0).canonical();
    let r_zero = r.is_zero();

    // s = k⁻¹(z + r·d): k⁻¹ in Montgomery form times a plain value is plain.
    let mut k_inv = k.to_mont().invert();
    let mut rd = r.to_mont().mul(&d);
    let mut sum = z.add(&rd);
    let s = k_inv.mul(&sum).canonical();
    let s_zero = s.is_zero();
    let n_minus_s = s.neg().canonical();
    let high = super::field::lt_int(&n_minus_s.0, &s.0);
    let s = s.select(high, &n_minus_s);
    for value in [&mut k, &mut d, &mut k_inv, &mut rd, &mut sum] {
        value.wipe();
    }

    let parity = y_odd ^ high;
    LaneSignatures {
        r: r.store(),
        s: s.store(),
        recovery_id: core::array::from_fn(|lane| {
            ((parity >> lane) & 1) | (((x_over_n >> lane) & 1) << 1)
        }),
        redo: k_bad | r_zero | s_zero,
    }
}

/// Signs up to eight (key, digest) pairs; signature i for pair i, each byte for byte
/// libsecp256k1's `sign_ecdsa_recoverable`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
pub(crate) fn sign_group(keys: &[&SecretKey], digests: &[[u8; 32]]) -> Vec<RecoverableSignature> {
    assert!(keys.len() == digests.len() && keys.len() <= 8);
    let mut one = [0u8; 32];
    one[31] = 1;
    let mut secrets = Zeroizing::new([one; 8]);
    let mut messages = [[0u8; 32]; 8];
    for (lane, (key, digest)) in keys.iter().zip(digests).enumerate() {
        secrets[lane] = key.secret_bytes();
        messages[lane] = *digest;
    }
    let mut nonce_bytes = Zeroizing::new([[0u8; 32]; 8]);
    nonces(&secrets, &messages, &mut nonce_bytes);
    let mut d = Zeroizing::new(secrets.map(|s| radix52_from_be(&s)));
    let mut k = Zeroizing::new(nonce_bytes.map(|b| radix52_from_be(&b)));
    let z = messages.map(|m| radix52_from_be(&m));
    let lanes = sign_columns(&d, &k, &z);
    d.zeroize();
    k.zeroize();
    (0..keys.len())
        .map(|lane| {
            if lanes.redo >> lane & 1 == 1 {
                return sign_one(keys[lane], &digests[lane]);
            }
            let mut compact = [0u8; 64];
            compact[..32].copy_from_slice(&be_from_radix52(&lanes.r[lane]));
            compact[32..].copy_from_slice(&be_from_radix52(&lanes.s[lane]));
            let id = RecoveryId::try_from(i32::from(lanes.recovery_id[lane]))
                .expect("a recovery id below 4");
            RecoverableSignature::from_compact(&compact, id).expect("r and s in [1, n)")
        })
        .collect()
}
