//! The double-scalar multiplication of verification, u₁·G + u₂·Q, in eight lanes.
//!
//! Q, a different point in every lane, takes a 4-bit window: u₂ is recoded into 64 signed 4-bit
//! digits in [−7, 8] after replacing u₂ by n − u₂ when that is smaller (and negating every
//! digit), so u₂ < 2²⁵⁵ and no carry digit is left over; a table of 1·Q … 8·Q is built per group,
//! four doublings and one addition per digit, the entry picked per lane by masks. G takes the
//! fixed-base comb of [`super::g_table`] (43 windows of 6 bits), read per lane with gathers: 43
//! mixed additions and no doubling. Everything is public in verification, so the data-dependent
//! gather addresses are harmless here (they would not be in signing, [`super::ct_comb`]).

use super::field::{Fe8, Mask};
use super::g_table::{self, CombDigits, ENTRIES, ENTRY_WORDS, WINDOWS};
use super::modulus::{LaneModulus, LIMBS};
use super::point::{Cached8, Fp, Jac8, LaneCurve};
use core::arch::x86_64::*;

/// Signed digits, one vector per 4-bit window (lane l's digit in 64-bit element l).
pub(crate) type Digits = [__m512i; 64];

/// Recodes u in [0, n), a plain integer in every lane, into 64 signed 4-bit digits in [−7, 8]
/// for [`mul_window`] ([`g_table::signed_digits`]).
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn recode<N: LaneModulus>(u: &Fe8<N>) -> Digits {
    g_table::signed_digits::<N, 4, 64>(u)
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

/// Σ dᵢ·64ⁱ·G with the comb of [`super::g_table`]: one gathered mixed addition per window.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn mul_base<C: LaneCurve>(digits: &CombDigits) -> Jac8<C> {
    let table = g_table::table::<C>();
    assert_eq!(table.len(), WINDOWS * ENTRIES * ENTRY_WORDS);
    let one = _mm512_set1_epi64(1);
    let mut acc = Jac8::<C>::infinity();
    for (i, &d) in digits.iter().enumerate() {
        let (magnitude, negative, nonzero) = split(d);
        // Lanes with digit 0 read entry 0 and discard it.
        let entry = _mm512_sub_epi64(_mm512_max_epi64(magnitude, one), one);
        // (window entry) · 10 words, as 8x + 2x (a 64-bit lane product would need AVX-512DQ).
        let index = _mm512_add_epi64(entry, _mm512_set1_epi64((i * ENTRIES) as i64));
        let words = _mm512_add_epi64(_mm512_slli_epi64::<3>(index), _mm512_slli_epi64::<1>(index));
        let gather = |offset: usize| {
            // SAFETY: entry < ENTRIES and i < WINDOWS, so every index plus offset <
            // ENTRY_WORDS stays inside the table, whose length was checked above.
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
    let from_g = mul_base::<C>(&g_table::recode(u1));
    from_q.add_cached(&Cached8::new(&from_g), 0xff)
}
