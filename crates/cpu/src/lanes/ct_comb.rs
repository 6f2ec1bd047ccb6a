//! k·G in eight lanes in constant time, for signing: the fixed-base comb of Lim and Lee ("More
//! flexible exponentiation with precomputation", CRYPTO '94) over the table of G that
//! verification reads with gathers ([`super::g_table`]: entry (i, j) = (j + 1)·64ⁱ·G, affine,
//! 43 windows of 32 entries), read here so that neither the instruction stream nor any memory
//! address depends on the secret scalar.
//!
//! # How the secret stays out of the timing
//! - **Recoding** ([`super::g_table::recode`]): k is replaced by n − k when that is smaller (a
//!   masked blend), then cut into 43 signed digits in [−31, 32] with shifts, vector compares and
//!   masked subtractions: a fixed number of the same instructions for every k (which limbs a
//!   window straddles depends on the window's number only).
//! - **Lookup** ([`lookup`]): each window reads all 32 entries of its row of the table, at
//!   addresses fixed by the window number alone, and keeps the lane's entry with a mask
//!   (`vpcmpeqq` then `vpblendmq`); a zero digit matches no entry. The mask lives in a mask
//!   register and is only ever an operand of blends, never a branch condition or an index.
//!   This is the masked scan of Intel's crypto_mb (`extract_point_affine_`, the eight-buffer
//!   table read of its `mbx_nistp256_ecdsa_sign_mb8` path) and the idea of libsecp256k1's
//!   `secp256k1_ecmult_gen` table reads.
//! - **Sign**: a negative digit negates y by a masked blend of y and −y (both always computed).
//! - **Addition** ([`add_affine_ct`]): the mixed Jacobian–affine addition of [`super::point`]
//!   without its exceptional-case branch: every lane always computes the general formula, and the
//!   two cases that occur, "the accumulator is still infinity" and "the digit is zero", are masked
//!   blends of the result. The formula's exceptions (P + P and P + (−P)) cannot occur here: after
//!   windows 0..i the accumulator is A·G with the integer |A| ≤ 32·(64ⁱ − 1)/63 < 64ⁱ, and the
//!   entry is D·64ⁱ·G with 1 ≤ |D| ≤ 32, so A ≠ ±D·64ⁱ; k < 2²⁵⁵ makes the top digit at most 8,
//!   so |A| + |D·64ⁱ| < 2²⁵⁵ + 2²⁵¹ < n, hence A·G ≠ ±D·64ⁱ·G; and A ≠ 0 once any digit was
//!   non-zero (the top non-zero digit outweighs the rest). The comb therefore needs no doubling
//!   and no test of H or R.
//! - **Field arithmetic** ([`super::field`]): IFMA multiply-adds, shifts, masked adds and blends,
//!   all of fixed latency; reductions fold with masks, never with branches.
//!
//! Cost per eight scalars: 43 mixed additions (8M + 3S each) and 43 scans of 32 entries × 10
//! limbs.

use super::field::{splat, Fe8, Mask};
use super::g_table::{recode, table, CombDigits, ENTRIES, ENTRY_WORDS, WINDOWS};
use super::modulus::LIMBS;
use super::mul::split;
use super::point::{Fp, Jac8, LaneCurve};
use core::arch::x86_64::*;
use zeroize::Zeroize;

/// Entry |d| of window `window` in every lane (zero where d = 0), reading the whole row of the
/// table: the addresses depend on `window` only.
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
pub(crate) fn lookup<C: LaneCurve>(
    table: &[u64],
    window: usize,
    magnitude: __m512i,
) -> (Fp<C>, Fp<C>) {
    let row = &table[window * ENTRIES * ENTRY_WORDS..(window + 1) * ENTRIES * ENTRY_WORDS];
    let zero = _mm512_setzero_si512();
    let mut x = [zero; LIMBS];
    let mut y = [zero; LIMBS];
    for (e, entry) in row.chunks_exact(ENTRY_WORDS).enumerate() {
        let hit = _mm512_cmpeq_epi64_mask(magnitude, splat(e as u64 + 1));
        for j in 0..LIMBS {
            x[j] = _mm512_mask_blend_epi64(hit, x[j], splat(entry[j]));
            y[j] = _mm512_mask_blend_epi64(hit, y[j], splat(entry[LIMBS + j]));
        }
    }
    (Fp::<C>::from_limbs(x), Fp::<C>::from_limbs(y))
}

/// acc + (x, y) in the lanes of `active` (others keep acc), where the affine point is never ±acc
/// (see the module docs): the general formula of [`Jac8::add_affine`] in every lane, with the
/// infinite accumulator and the inactive lanes patched by blends.
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
pub(crate) fn add_affine_ct<C: LaneCurve>(
    acc: &Jac8<C>,
    x: &Fp<C>,
    y: &Fp<C>,
    active: Mask,
) -> Jac8<C> {
    let z1z1 = acc.z.square();
    let u2 = x.mul(&z1z1);
    let s2 = y.mul(&acc.z.mul(&z1z1));
    let h = u2.sub(&acc.x);
    let r = s2.sub(&acc.y).double();
    let i = h.double().square();
    let j = h.mul(&i);
    let v = acc.x.mul(&i);
    let x3 = r.square().sub(&j).sub(&v.double());
    let y3 = r.mul(&v.sub(&x3)).sub(&acc.y.mul(&j).double());
    let z3 = acc.z.mul(&h).double();
    let sum = Jac8 {
        x: x3,
        y: y3,
        z: z3,
        inf: 0,
    };
    let sum = sum.select(acc.inf, &Jac8::from_affine(x, y));
    acc.select(active, &sum)
}

/// k·G for scalars k in [1, n), plain integers in every lane, in constant time. The digits are
/// wiped before returning; the caller wipes k and the result.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn mul_base_ct<C: LaneCurve>(k: &Fe8<C::N>) -> Jac8<C> {
    let table = table::<C>();
    let mut digits: CombDigits = recode(k);
    let mut acc = Jac8::<C>::infinity();
    for (window, digit) in digits.iter().enumerate() {
        let (magnitude, negative, nonzero) = split(*digit);
        let (x, mut y) = lookup::<C>(table, window, magnitude);
        y = y.select(negative, &y.neg());
        acc = add_affine_ct(&acc, &x, &y, nonzero);
    }
    digits.zeroize();
    acc
}

/// The affine coordinates of finite points, fully reduced and out of Montgomery form, in
/// constant time: Z⁻¹ by the lanes' constant-time inversion ([`super::invert`]). The point's
/// Jacobian coordinates and Z⁻¹ are wiped (they depend on the path the comb took).
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn to_affine_ct<C: LaneCurve>(point: &mut Jac8<C>) -> (Fp<C>, Fp<C>) {
    let mut z_inv = point.z.invert();
    let mut z_inv2 = z_inv.square();
    let x = point.x.mul(&z_inv2).out_of_mont();
    let y = point.y.mul(&z_inv2).mul(&z_inv).out_of_mont();
    for value in [
        &mut point.x,
        &mut point.y,
        &mut point.z,
        &mut z_inv,
        &mut z_inv2,
    ] {
        value.wipe();
    }
    (x, y)
}

/// The lookups of [`mul_base_ct`] alone on secp256k1's table, folded into one word so none is
/// optimised away: what the timing test measures as "the comb lookup" (digits in [−32, 32]).
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn lookups_for_timing(digits: &[[i64; 8]; WINDOWS]) -> u64 {
    let table = table::<super::curves::K256Curve>();
    let mut fold = _mm512_setzero_si512();
    for (window, digit) in digits.iter().enumerate() {
        // SAFETY: 64 readable bytes.
        let digit = unsafe { _mm512_loadu_si512(digit.as_ptr().cast()) };
        let (magnitude, _, _) = split(digit);
        let (x, y) = lookup::<super::curves::K256Curve>(table, window, magnitude);
        for j in 0..LIMBS {
            fold = _mm512_xor_si512(fold, _mm512_xor_si512(x.0[j], y.0[j]));
        }
    }
    let mut words = [0u64; 8];
    // SAFETY: 64 writable bytes.
    unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), fold) };
    words.iter().fold(0, |a, w| a ^ w)
}
