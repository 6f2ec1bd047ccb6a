//! Eight elements mod m at once: [`Fe8`] holds limb j of eight lanes in one 512-bit register,
//! five registers per element (radix 2⁵², least significant limb first).
//!
//! Multiplication is the almost-Montgomery multiplication of Intel's crypto_mb (`ifma_amm52x5`),
//! operand scanning with `vpmadd52luq`/`vpmadd52huq`: for R = 2²⁶⁰ it returns a·b·R⁻¹ mod m as a
//! value below 2m, not necessarily below m. Because 16m < R, inputs may be as large as 4m and the
//! output stays below 2m, so additions need only fold back into [0, 2m) and a full reduction
//! happens only where a value is compared or leaves the lanes. (Gueron and Krasnov, "Fast prime
//! field elliptic curve cryptography with 256-bit primes", J. Cryptographic Engineering 2015, for
//! the almost-Montgomery bounds; Drucker and Gueron, "Fast modular squaring with AVX512IFMA" and
//! their multi-buffer IFMA work, for the lane layout.)
//!
//! Invariant of every [`Fe8`] this module returns: each limb below 2⁵², each value in [0, 2m).
//! Every function needs AVX-512F and IFMA; callers check the CPU first ([`super::available`]).

use super::modulus::{LaneModulus, LIMBS, MASK52};
use core::arch::x86_64::*;
use core::marker::PhantomData;

/// Eight values mod M, limb-major: `0[j]` holds limb j of lanes 0..8.
#[derive(Clone, Copy)]
pub(crate) struct Fe8<M: LaneModulus>(pub(crate) [__m512i; LIMBS], PhantomData<M>);

/// A lane mask: bit l for lane l.
pub(crate) type Mask = __mmask8;

#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
pub(crate) fn splat(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
fn splat_limbs(l: &[u64; LIMBS]) -> [__m512i; LIMBS] {
    [
        splat(l[0]),
        splat(l[1]),
        splat(l[2]),
        splat(l[3]),
        splat(l[4]),
    ]
}

/// Carries limbs that may be negative or above 2⁵² into the next, leaving limbs 0..4 in
/// [0, 2⁵²); the sign of the whole value ends up in limb 4.
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
fn carry_signed(mut l: [__m512i; LIMBS]) -> [__m512i; LIMBS] {
    let mask = splat(MASK52);
    for j in 0..LIMBS - 1 {
        let carry = _mm512_srai_epi64::<52>(l[j]);
        l[j] = _mm512_and_si512(l[j], mask);
        l[j + 1] = _mm512_add_epi64(l[j + 1], carry);
    }
    l
}

impl<M: LaneModulus> Fe8<M> {
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn from_limbs(l: [__m512i; LIMBS]) -> Self {
        Fe8(l, PhantomData)
    }

    /// The same constant in every lane (limbs normalised, value below 2m).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn constant(l: &[u64; LIMBS]) -> Self {
        Fe8(splat_limbs(l), PhantomData)
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn zero() -> Self {
        Self::constant(&[0; LIMBS])
    }

    /// 1 in Montgomery form.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn one() -> Self {
        Self::constant(&M::M.one)
    }

    /// From eight integers (lane l gets `values[l]`, 52-bit limbs normalised, each below 2m).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn load(values: &[[u64; LIMBS]; 8]) -> Self {
        let mut l = [_mm512_setzero_si512(); LIMBS];
        for (j, limb) in l.iter_mut().enumerate() {
            let column: [u64; 8] = core::array::from_fn(|lane| values[lane][j]);
            // SAFETY: `column` is 64 readable bytes; the unaligned load has no other requirement.
            *limb = unsafe { _mm512_loadu_si512(column.as_ptr().cast()) };
        }
        Fe8(l, PhantomData)
    }

    /// The eight lanes' limbs, as stored (not reduced: see [`Fe8::canonical`]).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn store(&self) -> [[u64; LIMBS]; 8] {
        let mut columns = [[0u64; 8]; LIMBS];
        for (j, column) in columns.iter_mut().enumerate() {
            // SAFETY: `column` is 64 writable bytes.
            unsafe { _mm512_storeu_si512(column.as_mut_ptr().cast(), self.0[j]) };
        }
        core::array::from_fn(|lane| core::array::from_fn(|j| columns[j][lane]))
    }

    /// a·b·2⁻²⁶⁰ mod m, below 2m, for a, b below 4m: crypto_mb's `ifma_amm52x5`.
    ///
    /// Each of the five rounds adds a·b_i, then u·m with u = r₀·(−m⁻¹) mod 2⁵² so that the low
    /// limb becomes divisible by 2⁵², and shifts one limb down. A limb collects at most about
    /// twenty 52-bit halves before the shift, far below 2⁶⁴. For p ≡ −1 mod 2⁵² (SM2, P-256),
    /// −p⁻¹ ≡ 1, so u is the low limb itself and its multiplication disappears.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn mul(&self, b: &Self) -> Self {
        let a = &self.0;
        let m = splat_limbs(&M::M.m);
        let k0 = splat(M::M.k0);
        let mask = splat(MASK52);
        let zero = _mm512_setzero_si512();
        let mut r = [zero; LIMBS + 1];
        for i in 0..LIMBS {
            let bi = b.0[i];
            for j in 0..LIMBS {
                r[j] = _mm512_madd52lo_epu64(r[j], a[j], bi);
                r[j + 1] = _mm512_madd52hi_epu64(r[j + 1], a[j], bi);
            }
            let u = if M::M.k0 == 1 {
                _mm512_and_si512(r[0], mask)
            } else {
                _mm512_madd52lo_epu64(zero, r[0], k0)
            };
            for j in 0..LIMBS {
                r[j] = _mm512_madd52lo_epu64(r[j], u, m[j]);
                r[j + 1] = _mm512_madd52hi_epu64(r[j + 1], u, m[j]);
            }
            // The low limb is now a multiple of 2⁵²: carry it up and shift one limb down.
            let carry = _mm512_srli_epi64::<52>(r[0]);
            r = [_mm512_add_epi64(r[1], carry), r[2], r[3], r[4], r[5], zero];
        }
        Fe8(carry_signed([r[0], r[1], r[2], r[3], r[4]]), PhantomData)
    }

    /// a²·2⁻²⁶⁰ mod m, below 2m, for a below 4m: the ten cross products once, doubled, then the
    /// five squares, then the five reduction rounds (80 multiply-adds where [`Fe8::mul`] needs 100;
    /// crypto_mb's `ifma_ams52x5`).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn square(&self) -> Self {
        let a = &self.0;
        let zero = _mm512_setzero_si512();
        let mut t = [zero; 2 * LIMBS];
        for i in 0..LIMBS {
            for j in i + 1..LIMBS {
                t[i + j] = _mm512_madd52lo_epu64(t[i + j], a[i], a[j]);
                t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a[i], a[j]);
            }
        }
        for limb in t.iter_mut() {
            *limb = _mm512_slli_epi64::<1>(*limb);
        }
        for i in 0..LIMBS {
            t[2 * i] = _mm512_madd52lo_epu64(t[2 * i], a[i], a[i]);
            t[2 * i + 1] = _mm512_madd52hi_epu64(t[2 * i + 1], a[i], a[i]);
        }
        Self::reduce_wide(t)
    }

    /// Montgomery reduction of a ten-limb product t (limbs up to about 2⁶⁰): t·2⁻²⁶⁰ mod m,
    /// below 2m when t < 16m².
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn reduce_wide(mut t: [__m512i; 2 * LIMBS]) -> Self {
        let m = splat_limbs(&M::M.m);
        let k0 = splat(M::M.k0);
        let mask = splat(MASK52);
        let zero = _mm512_setzero_si512();
        for i in 0..LIMBS {
            let u = if M::M.k0 == 1 {
                _mm512_and_si512(t[i], mask)
            } else {
                _mm512_madd52lo_epu64(zero, t[i], k0)
            };
            for j in 0..LIMBS {
                t[i + j] = _mm512_madd52lo_epu64(t[i + j], u, m[j]);
                t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], u, m[j]);
            }
            t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_srli_epi64::<52>(t[i]));
        }
        Fe8(carry_signed([t[5], t[6], t[7], t[8], t[9]]), PhantomData)
    }

    /// d for d ≥ 0, d + 2m for d < 0, given limbwise d in (−2m, 2m) with small limbs.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn fold(d: [__m512i; LIMBS]) -> Self {
        let d = carry_signed(d);
        let negative = _mm512_cmplt_epi64_mask(d[4], _mm512_setzero_si512());
        let m2 = splat_limbs(&M::M.m2);
        let mut s = d;
        for j in 0..LIMBS {
            s[j] = _mm512_mask_add_epi64(d[j], negative, d[j], m2[j]);
        }
        Fe8(carry_signed(s), PhantomData)
    }

    /// (a + b) mod m, below 2m.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn add(&self, b: &Self) -> Self {
        let m2 = splat_limbs(&M::M.m2);
        let d: [__m512i; LIMBS] =
            core::array::from_fn(|j| _mm512_sub_epi64(_mm512_add_epi64(self.0[j], b.0[j]), m2[j]));
        Self::fold(d)
    }

    /// (a − b) mod m, below 2m.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn sub(&self, b: &Self) -> Self {
        let d: [__m512i; LIMBS] = core::array::from_fn(|j| _mm512_sub_epi64(self.0[j], b.0[j]));
        Self::fold(d)
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn double(&self) -> Self {
        self.add(self)
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn neg(&self) -> Self {
        Self::zero().sub(self)
    }

    /// The value in [0, m): the only form in which equality is limb equality.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn canonical(&self) -> Self {
        let m = splat_limbs(&M::M.m);
        let d = carry_signed(core::array::from_fn(|j| _mm512_sub_epi64(self.0[j], m[j])));
        let below_m = _mm512_cmplt_epi64_mask(d[4], _mm512_setzero_si512());
        Fe8(
            core::array::from_fn(|j| _mm512_mask_blend_epi64(below_m, d[j], self.0[j])),
            PhantomData,
        )
    }

    /// Lanes whose value is 0 mod m.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn is_zero(&self) -> Mask {
        let c = self.canonical().0;
        let any = _mm512_or_si512(
            _mm512_or_si512(c[0], c[1]),
            _mm512_or_si512(_mm512_or_si512(c[2], c[3]), c[4]),
        );
        _mm512_cmpeq_epi64_mask(any, _mm512_setzero_si512())
    }

    /// Lanes where a ≡ b mod m.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn equals(&self, b: &Self) -> Mask {
        self.sub(b).is_zero()
    }

    /// Overwrites the value's memory with zeros (the signer's secrets; `zeroize`'s volatile
    /// writes, which the optimiser keeps).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn wipe(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }

    /// Lane l from `a` where bit l of `mask` is set, else from `self`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn select(&self, mask: Mask, a: &Self) -> Self {
        Fe8(
            core::array::from_fn(|j| _mm512_mask_blend_epi64(mask, self.0[j], a.0[j])),
            PhantomData,
        )
    }

    /// Into Montgomery form: x·R mod m, for x below 4m.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn to_mont(self) -> Self {
        self.mul(&Self::constant(&M::M.r2))
    }

    /// Out of Montgomery form, fully reduced: x·R⁻¹ mod m in [0, m) (how recovered keys and the
    /// tests leave the lanes; verification leaves them only through comparisons).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn out_of_mont(&self) -> Self {
        self.mul(&Self::constant(&[1, 0, 0, 0, 0])).canonical()
    }

    /// self^e for a public exponent e (the same in every lane), in Montgomery form, with a fixed
    /// 4-bit window: 256 squarings and 64 multiplications whatever e is.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(crate) fn pow(&self, e: &[u64; 4]) -> Self {
        let mut powers = [Self::one(); 16];
        for i in 1..16 {
            powers[i] = powers[i - 1].mul(self);
        }
        let mut acc = Self::one();
        for nibble_index in (0..64).rev() {
            for _ in 0..4 {
                acc = acc.square();
            }
            let nibble = (e[nibble_index / 16] >> ((nibble_index % 16) * 4)) & 0xf;
            acc = acc.mul(&powers[nibble as usize]);
        }
        acc
    }

    /// self⁻¹ mod m in every lane (0 for 0), in Montgomery form for a Montgomery-form input:
    /// Montgomery's trick across the lanes and one constant-time inversion
    /// ([`super::invert::invert_lanes`]).
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(crate) fn invert(&self) -> Self {
        super::invert::invert_lanes::<M, false>(self)
    }

    /// As [`Fe8::invert`], for public values only (verification, recovery): variable time.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(crate) fn invert_public(&self) -> Self {
        super::invert::invert_lanes::<M, true>(self)
    }
}

/// Lanes where a < b, for limbwise-normalised integers (no modulus involved).
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
pub(crate) fn lt_int(a: &[__m512i; LIMBS], b: &[__m512i; LIMBS]) -> Mask {
    let d = carry_signed(core::array::from_fn(|j| _mm512_sub_epi64(a[j], b[j])));
    _mm512_cmplt_epi64_mask(d[4], _mm512_setzero_si512())
}

/// a + b as integers, limbs normalised (the top limb keeps any excess).
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
pub(crate) fn add_int(a: &[__m512i; LIMBS], b: &[__m512i; LIMBS]) -> [__m512i; LIMBS] {
    carry_signed(core::array::from_fn(|j| _mm512_add_epi64(a[j], b[j])))
}
