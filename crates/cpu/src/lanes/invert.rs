//! The inverses of eight lanes at the cost of one inversion: Montgomery's trick across the lanes
//! (P. L. Montgomery, "Speeding the Pollard and elliptic curve methods of factorization", Math.
//! Comp. 48, 1987, §10.3.1), with the one inversion left to the constant-time safegcd of Bernstein
//! and Yang ("Fast constant-time gcd computation and modular inversion", TCHES 2019), as
//! `crypto-bigint` implements it for 256-bit odd moduli.
//!
//! Why not Fermat in the lanes: a^(m−2) costs about 330 lane multiplications (256 squarings and a
//! 4-bit window), 12.8 µs for the eight lanes on one core of the development machine (an Intel
//! Xeon with IFMA), where the prefix and suffix products below cost 8 and the scalar safegcd
//! 5.3 µs (2026-12-07). Signing does
//! two such inversions a call (k⁻¹ mod n and the comb's Z⁻¹ mod p), 40 % of a lane call of eight.
//!
//! # Steps
//! 1. Lanes holding 0 hold 1 instead (a masked blend), so one zero lane cannot spoil the product
//!    for the others; they give 0 at the end, as Fermat's a^(m−2) did.
//! 2. Inclusive prefix products pᵢ = a₀⋯aᵢ and suffix products qᵢ = aᵢ⋯a₇, each in three steps of
//!    "multiply by the lanes 1, 2, 4 places away" (Hillis and Steele's scan; lanes shifted in
//!    with `vpermq` under a mask, the empty ones filled with 1).
//! 3. The product P = p₇ leaves the lanes, fully reduced, and is inverted once, in constant time.
//! 4. aᵢ⁻¹ = pᵢ₋₁·qᵢ₊₁·P⁻¹ in every lane at once.
//!
//! # Constant time
//! For secrets (`PUBLIC` false) nothing here branches on or indexes by a lane's value: the zero
//! test is a vector compare into a mask, the substitutions are blends, the shifts fixed
//! permutations, and `invert_odd_mod` (not its `_vartime` twin, which public values take) runs a
//! fixed number of divsteps. The values that leave the lanes (P and P⁻¹, as integers and limbs)
//! are wiped before returning.

use super::field::{Fe8, Mask};
use super::modulus::{from_radix52, to_radix52, LaneModulus, LIMBS};
use core::arch::x86_64::*;
use crypto_bigint::{Odd, U256};
use zeroize::Zeroize;

/// Lane i of `v` moved `by` places up (to lane i + by) or down (to i − by), the lanes left empty
/// taking `fill`'s.
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
fn shifted<M: LaneModulus>(v: &Fe8<M>, fill: &Fe8<M>, by: usize, up: bool) -> Fe8<M> {
    let from: [u64; 8] = core::array::from_fn(|lane| {
        if up {
            lane.saturating_sub(by) as u64
        } else {
            (lane + by).min(7) as u64
        }
    });
    let keep: Mask = if up { 0xff << by } else { 0xff >> by };
    // SAFETY: `from` is 64 readable bytes; the unaligned load has no other requirement.
    let from = unsafe { _mm512_loadu_si512(from.as_ptr().cast()) };
    Fe8::from_limbs(core::array::from_fn(|j| {
        _mm512_mask_permutexvar_epi64(fill.0[j], keep, from, v.0[j])
    }))
}

/// a⁻¹ mod m in every lane (0 for 0), for `a` in Montgomery form; the result in Montgomery form.
/// `PUBLIC` values (verification's and recovery's, all public) take the variable-time safegcd,
/// about twice as fast; secrets the constant-time one.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn invert_lanes<M: LaneModulus, const PUBLIC: bool>(a: &Fe8<M>) -> Fe8<M> {
    let one = Fe8::<M>::one();
    let zero_lanes = a.is_zero();
    let mut values = a.select(zero_lanes, &one);
    let (mut prefix, mut suffix) = (values, values);
    for by in [1, 2, 4] {
        prefix = prefix.mul(&shifted(&prefix, &one, by, true));
        suffix = suffix.mul(&shifted(&suffix, &one, by, false));
    }
    let mut others = shifted(&prefix, &one, 1, true).mul(&shifted(&suffix, &one, 1, false));

    // Lane 7 of the prefix is the product, in Montgomery form: P·R mod m as an integer.
    let mut lanes = prefix.canonical().store();
    let mut words = from_radix52(&lanes[7]);
    let mut product = U256::from_words(words);
    let modulus = Odd::new(U256::from_words(from_radix52(&M::M.m)))
        .expect("the lanes' moduli are odd primes");
    // Never zero (zero lanes hold 1) and m is prime, so the inverse exists; 0 stands in otherwise.
    let inverse = if PUBLIC {
        product.invert_odd_mod_vartime(&modulus)
    } else {
        product.invert_odd_mod(&modulus)
    };
    let mut inverse = inverse.unwrap_or(U256::ZERO);
    let mut limbs: [u64; LIMBS] = to_radix52(&inverse.to_words());
    // As lane data the integer (P·R)⁻¹ stands for P⁻¹·R⁻², so two steps into Montgomery form
    // make it P⁻¹·R, the Montgomery form of P⁻¹.
    let mut inverse_lanes = Fe8::<M>::constant(&limbs).to_mont().to_mont();
    let result = others
        .mul(&inverse_lanes)
        .select(zero_lanes, &Fe8::<M>::zero());

    lanes.zeroize();
    words.zeroize();
    limbs.zeroize();
    product.zeroize();
    inverse.zeroize();
    for value in [
        &mut values,
        &mut prefix,
        &mut suffix,
        &mut others,
        &mut inverse_lanes,
    ] {
        value.wipe();
    }
    result
}
