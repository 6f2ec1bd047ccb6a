//! The fixed-base comb of G shared by verification and signing: entry (i, j) = (j + 1)·64ⁱ·G,
//! affine, Montgomery form, reduced below p, for [`WINDOWS`] windows of [`WINDOW_BITS`] bits and
//! [`ENTRIES`] entries each (Lim and Lee, "More flexible exponentiation with precomputation",
//! CRYPTO '94), and the signed recoding of a scalar into its windows.
//!
//! k·G is then Σ dᵢ·64ⁱ·G: one mixed addition a window and no doubling. Verification reads a
//! lane's entry with gathers ([`super::mul::mul_base`]), whose cost hardly depends on a row's
//! length; signing must read every entry of a row with masks ([`super::ct_comb`]). Six-bit
//! windows take 43 additions (8M + 3S, about 0.43 µs each for eight lanes on this machine)
//! where four-bit ones took 64, for rows four times as long: for signing's scans (a compare and
//! ten blends an entry) the 21 additions saved outweigh the longer rows about six to one;
//! seven-bit windows (37 additions, 64 entries) measured slower for the signer (a lane call of
//! 40.5 µs against 39.4). The table is 110 KB a curve (43 × 32 entries of 80 bytes).
//!
//! Built once per process and curve from G: the first row by the variable-base window of
//! [`super::mul::mul_window`], each next row by six doublings of the row before, eight entries
//! a group, each group made affine by one inversion of its eight lanes (about a thousand
//! doublings and 172 eight-lane inversions in all).

use super::field::{lt_int, splat, Fe8};
use super::modulus::{LaneModulus, LIMBS};
use super::point::{Fp, Jac8, LaneCurve};
use core::arch::x86_64::*;

/// Bits per window.
pub(crate) const WINDOW_BITS: usize = 6;
/// Entries per window: |d|·64ⁱ·G for |d| in 1..=32.
pub(crate) const ENTRIES: usize = 1 << (WINDOW_BITS - 1);
/// Windows of `bits` bits enough for any k < 2²⁵⁵ (k or n − k, the smaller), the top window's
/// bits plus a carry staying within a digit's magnitude, so no carry is left over.
pub(crate) const fn windows_for(bits: usize) -> usize {
    let w = 255usize.div_ceil(bits);
    if 255 - bits * (w - 1) < bits {
        w
    } else {
        w + 1
    }
}
/// Windows of the comb.
pub(crate) const WINDOWS: usize = windows_for(WINDOW_BITS);
const _: () = assert!(WINDOWS == 43 && ENTRIES == 32);
/// u64 words per affine entry: x then y, five limbs each.
pub(crate) const ENTRY_WORDS: usize = 2 * LIMBS;
const _: () = assert!(
    ENTRY_WORDS == 10,
    "the gather index multiplies by 10 with shifts"
);
/// Entries in eight-lane groups, as the table is built.
const GROUPS: usize = ENTRIES / 8;

/// Signed digits, one vector per window (lane l's digit in 64-bit element l).
pub(crate) type CombDigits = [__m512i; WINDOWS];

/// Recodes k in [0, n), a plain integer in every lane, into the comb's [`WINDOWS`] signed digits
/// in [−32, 32] (the top one in [−8, 8]) with Σ dᵢ·64ⁱ ≡ k mod n ([`signed_digits`]); the
/// constant-time signer recodes its nonces with it.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn recode<N: LaneModulus>(u: &Fe8<N>) -> CombDigits {
    signed_digits::<N, WINDOW_BITS, WINDOWS>(u)
}

/// Recodes k in [0, n), a plain integer in every lane, into `COUNT` signed digits of `BITS`
/// bits, each in [−2^(BITS−1), 2^(BITS−1)], with Σ dᵢ·2^(BITS·i) ≡ k mod n: k becomes n − k
/// where that is smaller (so k < 2²⁵⁵ and `COUNT` = [`windows_for`]`(BITS)` leaves no carry),
/// and the digits are negated there. Branch-free and of fixed length (masks and blends; which
/// limbs a window reads depends on its number only), so constant time in k. The comb's 6-bit
/// digits and verification's 4-bit window ([`super::mul::recode`]) both come from here.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn signed_digits<N: LaneModulus, const BITS: usize, const COUNT: usize>(
    u: &Fe8<N>,
) -> [__m512i; COUNT] {
    const { assert!(COUNT == windows_for(BITS)) };
    let u = u.canonical();
    let n_minus_u = u.neg().canonical();
    let flip = lt_int(&n_minus_u.0, &u.0);
    let mut k = u.select(flip, &n_minus_u);
    let zero = _mm512_setzero_si512();
    let one = splat(1);
    let half = splat(1 << (BITS - 1));
    let full = splat(1 << BITS);
    let low_bits = splat((1 << BITS) - 1);
    let mut carry = zero;
    let mut digits = [zero; COUNT];
    for (i, digit) in digits.iter_mut().enumerate() {
        let (bit, limb) = (BITS * i % 52, BITS * i / 52);
        let mut bits = _mm512_srlv_epi64(k.0[limb], splat(bit as u64));
        if bit + BITS > 52 && limb + 1 < LIMBS {
            let above = _mm512_sllv_epi64(k.0[limb + 1], splat((52 - bit) as u64));
            bits = _mm512_or_si512(bits, above);
        }
        let v = _mm512_add_epi64(_mm512_and_si512(bits, low_bits), carry);
        let big = _mm512_cmpgt_epi64_mask(v, half);
        let d = _mm512_mask_sub_epi64(v, big, v, full);
        carry = _mm512_maskz_mov_epi64(big, one);
        *digit = _mm512_mask_sub_epi64(d, flip, zero, d);
    }
    k.wipe();
    digits
}

/// Builds the table (public data): row 0 is (1..=32)·G, four groups of eight lanes by the
/// variable-base window; row i is 64 times row i − 1.
#[target_feature(enable = "avx512f,avx512ifma")]
fn build<C: LaneCurve>() -> Vec<u64> {
    let gx = Fp::<C>::constant(&super::modulus::radix52_from_be(&C::PARAMS.gx)).to_mont();
    let gy = Fp::<C>::constant(&super::modulus::radix52_from_be(&C::PARAMS.gy)).to_mont();
    let mut rows: [Jac8<C>; GROUPS] = core::array::from_fn(|group| {
        let multiples: [[u64; LIMBS]; 8] = core::array::from_fn(|lane| {
            let mut limbs = [0; LIMBS];
            limbs[0] = (group * 8 + lane + 1) as u64;
            limbs
        });
        let digits = super::mul::recode(&Fe8::<C::N>::load(&multiples));
        super::mul::mul_window::<C>(&digits, &gx, &gy)
    });
    let mut table = vec![0u64; WINDOWS * ENTRIES * ENTRY_WORDS];
    for window in 0..WINDOWS {
        for (group, row) in rows.iter_mut().enumerate() {
            if window > 0 {
                for _ in 0..WINDOW_BITS {
                    *row = row.double();
                }
            }
            debug_assert_eq!(row.inf, 0);
            let z_inv = row.z.invert_public();
            let z_inv2 = z_inv.square();
            let x = row.x.mul(&z_inv2).canonical().store();
            let y = row.y.mul(&z_inv2).mul(&z_inv).canonical().store();
            for lane in 0..8 {
                let at = (window * ENTRIES + group * 8 + lane) * ENTRY_WORDS;
                table[at..at + LIMBS].copy_from_slice(&x[lane]);
                table[at + LIMBS..at + ENTRY_WORDS].copy_from_slice(&y[lane]);
            }
        }
    }
    table
}

/// The table of G for curve C, built on first use.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn table<C: LaneCurve>() -> &'static [u64] {
    if let Some(table) = C::g_table_cell().get() {
        return table;
    }
    let table = build::<C>();
    C::g_table_cell().get_or_init(|| table)
}
