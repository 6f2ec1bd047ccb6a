//! The double-scalar multiplication of verification, u₁·G + u₂·Q, in eight lanes.
//!
//! Both scalars are recoded into 64 signed 4-bit digits in [−7, 8] after replacing u by n − u
//! when that is smaller (and negating every digit), so u < 2²⁵⁵ and no carry digit is left over.
//! Q, a different point in every lane, takes a 4-bit window: a table of 1·Q … 8·Q built per
//! group, four doublings and one addition per digit, the entry picked per lane by masks. G takes
//! a fixed-base comb of 64 × 8 affine points (d·16ⁱ·G), built once per process with the lanes
//! themselves, and read per lane with gathers: 64 mixed additions and no doubling. Everything is
//! public in verification, so the data-dependent gather addresses are harmless here (they would
//! not be in signing).

use super::field::{lt_int, Fe8, Mask};
use super::modulus::{LaneModulus, LIMBS};
use super::point::{Cached8, Fp, Jac8, LaneCurve};
use core::arch::x86_64::*;

/// Signed digits, one vector per 4-bit window (lane l's digit in 64-bit element l).
pub(crate) type Digits = [__m512i; 64];

/// Table entries per window of G (1·16ⁱ·G … 8·16ⁱ·G).
pub(crate) const G_ENTRIES: usize = 8;
/// u64 words per affine entry: x then y, five limbs each.
pub(crate) const ENTRY_WORDS: usize = 2 * LIMBS;
const _: () = assert!(
    ENTRY_WORDS == 10,
    "the gather index multiplies by 10 with shifts"
);

/// Recodes u in [0, n), a plain integer in every lane, into signed 4-bit digits. Branch-free and
/// of fixed length (masks and blends only), so the constant-time signer recodes its nonces with it.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn recode<N: LaneModulus>(u: &Fe8<N>) -> Digits {
    let u = u.canonical();
    let n_minus_u = u.neg().canonical();
    let flip = lt_int(&n_minus_u.0, &u.0);
    let k = u.select(flip, &n_minus_u);
    let zero = _mm512_setzero_si512();
    let one = _mm512_set1_epi64(1);
    let eight = _mm512_set1_epi64(8);
    let sixteen = _mm512_set1_epi64(16);
    let fifteen = _mm512_set1_epi64(15);
    let mut carry = zero;
    let mut digits = [zero; 64];
    for (i, digit) in digits.iter_mut().enumerate() {
        let shift = _mm512_set1_epi64(4 * (i % 13) as i64);
        let nibble = _mm512_and_si512(_mm512_srlv_epi64(k.0[i / 13], shift), fifteen);
        let v = _mm512_add_epi64(nibble, carry);
        let big = _mm512_cmpgt_epi64_mask(v, eight);
        let d = _mm512_mask_sub_epi64(v, big, v, sixteen);
        carry = _mm512_maskz_mov_epi64(big, one);
        *digit = _mm512_mask_sub_epi64(d, flip, zero, d);
    }
    digits
}

/// The lanes' digits, their magnitudes, and the masks of negative and non-zero digits.
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
pub(crate) fn split(d: __m512i) -> (__m512i, Mask, Mask) {
    let zero = _mm512_setzero_si512();
    (
        _mm512_abs_epi64(d),
        _mm512_cmplt_epi64_mask(d, zero),
        _mm512_cmpneq_epi64_mask(d, zero),
    )
}

/// Σ dᵢ·16ⁱ·Q for per-lane points Q (affine, Montgomery form, finite): the 4-bit window.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn mul_window<C: LaneCurve>(digits: &Digits, qx: &Fp<C>, qy: &Fp<C>) -> Jac8<C> {
    let q = Jac8::<C>::from_affine(qx, qy);
    let q_cached = Cached8::new(&q);
    let mut table = [q_cached; 8];
    table[1] = Cached8::new(&q.double());
    for k in 2..8 {
        table[k] = Cached8::new(&table[k - 1].point.add_cached(&q_cached, 0xff));
    }
    let mut acc = Jac8::<C>::infinity();
    for i in (0..64).rev() {
        if i != 63 {
            for _ in 0..4 {
                acc = acc.double();
            }
        }
        let (magnitude, negative, nonzero) = split(digits[i]);
        let mut entry = table[0];
        for (k, candidate) in table.iter().enumerate().skip(1) {
            let hit = _mm512_cmpeq_epi64_mask(magnitude, _mm512_set1_epi64(k as i64 + 1));
            entry = entry.select(hit, candidate);
        }
        acc = acc.add_cached(&entry.negate_where(negative), nonzero);
    }
    acc
}

/// The comb of G: entry (i, j) = (j + 1)·16ⁱ·G, affine, Montgomery form, reduced below p.
#[target_feature(enable = "avx512f,avx512ifma")]
fn build_g_table<C: LaneCurve>() -> Vec<u64> {
    let gx = Fp::<C>::constant(&super::modulus::radix52_from_be(&C::PARAMS.gx)).to_mont();
    let gy = Fp::<C>::constant(&super::modulus::radix52_from_be(&C::PARAMS.gy)).to_mont();
    let mut table = vec![0u64; 64 * G_ENTRIES * ENTRY_WORDS];
    for i in 0..64 {
        // Lane j multiplies by (j + 1)·16ⁱ: digit j + 1 in window i, zero elsewhere.
        let zero = _mm512_setzero_si512();
        let mut digits = [zero; 64];
        // SAFETY: 64 readable bytes.
        digits[i] = unsafe { _mm512_loadu_si512([1i64, 2, 3, 4, 5, 6, 7, 8].as_ptr().cast()) };
        let p = mul_window::<C>(&digits, &gx, &gy);
        debug_assert_eq!(p.inf, 0);
        let z_inv = p.z.invert_public();
        let z_inv2 = z_inv.square();
        let x = p.x.mul(&z_inv2).canonical().store();
        let y = p.y.mul(&z_inv2).mul(&z_inv).canonical().store();
        for j in 0..G_ENTRIES {
            let at = (i * G_ENTRIES + j) * ENTRY_WORDS;
            table[at..at + LIMBS].copy_from_slice(&x[j]);
            table[at + LIMBS..at + ENTRY_WORDS].copy_from_slice(&y[j]);
        }
    }
    table
}

/// The comb of G for curve C, built on first use.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn g_table<C: LaneCurve>() -> &'static [u64] {
    if let Some(table) = C::g_table_cell().get() {
        return table;
    }
    let table = build_g_table::<C>();
    C::g_table_cell().get_or_init(|| table)
}

/// Σ dᵢ·16ⁱ·G with the comb: one gathered mixed addition per window.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn mul_base<C: LaneCurve>(digits: &Digits) -> Jac8<C> {
    let table = g_table::<C>();
    assert_eq!(table.len(), 64 * G_ENTRIES * ENTRY_WORDS);
    let one = _mm512_set1_epi64(1);
    let mut acc = Jac8::<C>::infinity();
    for (i, &d) in digits.iter().enumerate() {
        let (magnitude, negative, nonzero) = split(d);
        // Lanes with digit 0 read entry 0 and discard it.
        let entry = _mm512_sub_epi64(_mm512_max_epi64(magnitude, one), one);
        // (window entry) · 10 words, as 8x + 2x (a 64-bit lane product would need AVX-512DQ).
        let index = _mm512_add_epi64(entry, _mm512_set1_epi64((i * G_ENTRIES) as i64));
        let words = _mm512_add_epi64(_mm512_slli_epi64::<3>(index), _mm512_slli_epi64::<1>(index));
        let gather = |offset: usize| {
            // SAFETY: entry < 8 and i < 64, so every index plus offset < ENTRY_WORDS stays
            // inside the table, whose length was checked above.
            unsafe { _mm512_i64gather_epi64::<8>(words, table.as_ptr().add(offset).cast()) }
        };
        let x = Fp::<C>::from_limbs(core::array::from_fn(gather));
        let y = Fp::<C>::from_limbs(core::array::from_fn(|j| gather(LIMBS + j)));
        let y = y.select(negative, &y.neg());
        acc = acc.add_affine(&x, &y, nonzero);
    }
    acc
}

/// u₁·G + u₂·Q for plain integers u₁, u₂ in [0, n) and affine Q (Montgomery form, finite).
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn lincomb<C: LaneCurve>(
    u1: &Fe8<C::N>,
    u2: &Fe8<C::N>,
    qx: &Fp<C>,
    qy: &Fp<C>,
) -> Jac8<C> {
    let from_q = mul_window::<C>(&recode(u2), qx, qy);
    let from_g = mul_base::<C>(&recode(u1));
    from_q.add_cached(&Cached8::new(&from_g), 0xff)
}
