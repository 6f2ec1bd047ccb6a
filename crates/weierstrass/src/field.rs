//! The field F_p of a [`Curve`] in Montgomery form (R = 2²⁵⁶); for SM2 p = 2²⁵⁶ − 2²²⁴ − 2⁹⁶ +
//! 2⁶⁴ − 1, for P-256 p = 2²⁵⁶ − 2²²⁴ + 2¹⁹² + 2⁹⁶ − 1. The code is generic over the curve and
//! monomorphised, so each prime's limbs are compile-time constants in its own copy.
//!
//! Because p ≡ −1 mod 2⁶⁴, −p⁻¹ mod 2⁶⁴ = 1 and every Montgomery step's quotient digit is simply the
//! low limb; the compiler sees the constant and drops that multiplication, and the products by
//! p's limbs are by constants. (A multiplication-free reduction using p + 1 = 2⁶⁴·(2¹⁹² − 2¹⁶⁰ −
//! 2³² + 1), both separated and interleaved with the product, measured no faster on x86-64 and
//! was dropped.) Values are kept fully reduced in [0, p), so equality is limb equality and zero
//! is all-zero limbs.

use crate::curve::{Curve, Sm2};
use crate::limbs::{self, Limbs};
use core::marker::PhantomData;

/// The SM2 field prime with its Montgomery constants (the tests' name for it).
#[cfg(test)]
pub(crate) const P: limbs::Modulus = Sm2::P;

/// An element of F_p in Montgomery form, fully reduced.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldElement<C: Curve>(pub(crate) Limbs, PhantomData<C>);

/// An element of the SM2 field.
pub(crate) type Fe = FieldElement<Sm2>;

impl<C: Curve> core::fmt::Debug for FieldElement<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let bytes = self.to_bytes();
        write!(f, "Fe(0x")?;
        for b in bytes {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// The SM2 coefficient b in Montgomery form, converted at compile time.
#[cfg(test)]
pub(crate) const B: Fe = FieldElement::<Sm2>::CURVE_B;

impl<C: Curve> FieldElement<C> {
    pub(crate) const ZERO: Self = FieldElement([0; 4], PhantomData);
    pub(crate) const ONE: Self = {
        #[allow(clippy::let_unit_value)]
        let () = C::CHECKED;
        FieldElement(C::P.r, PhantomData)
    };
    /// The curve coefficient b, converted at compile time.
    pub(crate) const CURVE_B: Self = Self::from_int(limbs::from_be_bytes(&C::PARAMS.b));

    /// From limbs already in Montgomery form and below p.
    #[inline(always)]
    pub(crate) const fn from_mont(value: Limbs) -> Self {
        FieldElement(value, PhantomData)
    }

    /// From an integer already below p.
    #[inline(always)]
    pub(crate) const fn from_int(value: Limbs) -> Self {
        FieldElement(limbs::mont_mul(&value, &C::P.r2, &C::P), PhantomData)
    }

    /// From 32 big-endian bytes; `None` when the value is not below p.
    pub(crate) fn from_bytes(bytes: &[u8; 32]) -> Option<Self> {
        let value = limbs::from_be_bytes(bytes);
        if limbs::lt(&value, &C::P.m) {
            Some(Self::from_int(value))
        } else {
            None
        }
    }

    /// The canonical integer in [0, p).
    #[inline(always)]
    pub(crate) fn to_int(self) -> Limbs {
        limbs::redc(
            [self.0[0], self.0[1], self.0[2], self.0[3], 0, 0, 0, 0],
            &C::P,
        )
    }

    pub(crate) fn to_bytes(self) -> [u8; 32] {
        limbs::to_be_bytes(&self.to_int())
    }

    #[inline(always)]
    pub(crate) fn is_zero(&self) -> bool {
        limbs::is_zero(&self.0)
    }

    pub(crate) fn is_odd(&self) -> bool {
        self.to_int()[0] & 1 == 1
    }

    #[inline(always)]
    pub(crate) fn add(&self, other: &Self) -> Self {
        Self::from_mont(limbs::add_mod(&self.0, &other.0, &C::P.m))
    }

    #[inline(always)]
    pub(crate) fn sub(&self, other: &Self) -> Self {
        Self::from_mont(limbs::sub_mod(&self.0, &other.0, &C::P.m))
    }

    #[inline(always)]
    pub(crate) fn double(&self) -> Self {
        self.add(self)
    }

    #[inline(always)]
    pub(crate) fn neg(&self) -> Self {
        Self::ZERO.sub(self)
    }

    #[inline(always)]
    pub(crate) fn mul(&self, other: &Self) -> Self {
        Self::from_mont(limbs::mont_mul(&self.0, &other.0, &C::P))
    }

    #[inline(always)]
    pub(crate) fn square(&self) -> Self {
        Self::from_mont(limbs::mont_sqr(&self.0, &C::P))
    }

    /// self^(2^k).
    #[inline(always)]
    pub(crate) fn square_n(&self, k: u32) -> Self {
        let mut x = *self;
        for _ in 0..k {
            x = x.square();
        }
        x
    }

    /// `mask` all ones picks `a`, zero picks `b`.
    #[inline(always)]
    pub(crate) fn select(mask: u64, a: &Self, b: &Self) -> Self {
        Self::from_mont(limbs::select(mask, &a.0, &b.0))
    }
}

/// SM2's own addition chains (shorter than the generic fixed-window power).
impl Fe {
    /// Powers a^(2^k − 1) for the k both exponent chains need.
    fn runs_of_ones(&self) -> (Fe, Fe, Fe) {
        let x1 = *self;
        let x2 = x1.square().mul(&x1);
        let x3 = x2.square().mul(&x1);
        let x6 = x3.square_n(3).mul(&x3);
        let x12 = x6.square_n(6).mul(&x6);
        let x15 = x12.square_n(3).mul(&x3);
        let x30 = x15.square_n(15).mul(&x15);
        let x31 = x30.square().mul(&x1);
        let x32 = x31.square().mul(&x1);
        (x30, x31, x32)
    }

    /// self^(p−2), which is self⁻¹ for self ≠ 0 (and 0 for 0). A fixed sequence of operations:
    /// constant time, so it serves secret values.
    pub(crate) fn invert_sm2_chain(&self) -> Fe {
        // p − 2, from the top bit: 31 ones, a zero, 128 ones, 32 zeros, 32 ones, 30 ones, 0, 1.
        let (x30, x31, x32) = self.runs_of_ones();
        let mut t = x31.square();
        for _ in 0..4 {
            t = t.square_n(32).mul(&x32);
        }
        t = t.square_n(32);
        t = t.square_n(32).mul(&x32);
        t = t.square_n(30).mul(&x30);
        t = t.square_n(2).mul(self);
        t
    }

    /// self^((p+1)/4) by SM2's addition chain.
    pub(crate) fn sqrt_candidate_sm2_chain(&self) -> Fe {
        // (p + 1)/4, from the top bit: 31 ones, a zero, 128 ones, 31 zeros, a one, 62 zeros.
        let (_, x31, x32) = self.runs_of_ones();
        let mut t = x31.square();
        for _ in 0..4 {
            t = t.square_n(32).mul(&x32);
        }
        t = t.square_n(32).mul(self);
        t.square_n(62)
    }
}

impl<C: Curve> FieldElement<C> {
    /// self^(p−2), which is self⁻¹ for self ≠ 0 (and 0 for 0); constant time, so it serves
    /// secret values.
    #[inline]
    pub(crate) fn invert(&self) -> Self {
        C::field_invert(self)
    }

    /// A square root when one exists: self^((p+1)/4), valid because p ≡ 3 mod 4.
    pub(crate) fn sqrt(&self) -> Option<Self> {
        let t = C::field_sqrt_candidate(self);
        if t.square() == *self {
            Some(t)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chainsig_core::curve::SM2;
    use num_bigint::BigUint;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn big(l: &Limbs) -> BigUint {
        BigUint::from_bytes_be(&limbs::to_be_bytes(l))
    }

    fn p() -> BigUint {
        BigUint::from_bytes_be(&SM2.p)
    }

    fn from_big(v: &BigUint) -> Fe {
        let mut bytes = [0u8; 32];
        let b = v.to_bytes_be();
        bytes[32 - b.len()..].copy_from_slice(&b);
        Fe::from_bytes(&bytes).expect("below p")
    }

    fn samples() -> Vec<BigUint> {
        let p = p();
        let one = BigUint::from(1u32);
        let two256 = BigUint::from(1u32) << 256;
        let mut v: Vec<BigUint> = vec![
            BigUint::from(0u32),
            one.clone(),
            BigUint::from(2u32),
            &p - 1u32,
            &p - 2u32,
            (&p - 1u32) >> 1,
            &two256 - &p,
            // values that reach into the top limbs after reduction
            (&two256 - 1u32) % &p,
            BigUint::from(u64::MAX),
            (BigUint::from(1u32) << 224) - 1u32,
            BigUint::from(1u32) << 255,
        ];
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for _ in 0..300 {
            let mut bytes = [0u8; 32];
            rng.fill(&mut bytes);
            // Half the samples have long runs of ones or zeros in some limbs.
            if rng.gen_bool(0.5) {
                for limb in 0..4 {
                    match rng.gen_range(0..3) {
                        0 => bytes[limb * 8..limb * 8 + 8].fill(0xff),
                        1 => bytes[limb * 8..limb * 8 + 8].fill(0),
                        _ => {}
                    }
                }
            }
            v.push(BigUint::from_bytes_be(&bytes) % &p);
        }
        v
    }

    #[test]
    fn constants_come_from_the_curve() {
        assert_eq!(big(&P.m), p());
        // a = p − 3: the doubling formula relies on it.
        assert_eq!(BigUint::from_bytes_be(&SM2.a), p() - 3u32);
        assert_eq!(P.inv, 1, "p ≡ −1 mod 2^64");
        assert_eq!(big(&Fe::ONE.to_int()), BigUint::from(1u32));
        assert_eq!(B.to_bytes(), SM2.b);
        let r = BigUint::from(1u32) << 256;
        assert_eq!(big(&P.r2), (&r * &r) % p());
    }

    #[test]
    fn arithmetic_matches_bigint() {
        let p = p();
        let xs = samples();
        for (i, a) in xs.iter().enumerate() {
            let b = &xs[(i * 7 + 3) % xs.len()];
            let (fa, fb) = (from_big(a), from_big(b));
            assert_eq!(big(&fa.to_int()), *a);
            assert_eq!(big(&fa.add(&fb).to_int()), (a + b) % &p, "add {a} {b}");
            assert_eq!(big(&fa.sub(&fb).to_int()), (a + &p - b) % &p, "sub {a} {b}");
            assert_eq!(big(&fa.neg().to_int()), (&p - a) % &p, "neg {a}");
            assert_eq!(big(&fa.double().to_int()), (a * 2u32) % &p);
            assert_eq!(big(&fa.mul(&fb).to_int()), (a * b) % &p, "mul {a} {b}");
            assert_eq!(big(&fa.square().to_int()), (a * a) % &p, "square {a}");
            let inv = fa.invert();
            assert_eq!(big(&inv.to_int()), a.modpow(&(&p - 2u32), &p), "invert {a}");
            let expected_root = a.modpow(&((&p + 1u32) >> 2), &p);
            let is_square = (&expected_root * &expected_root) % &p == *a;
            match fa.sqrt() {
                Some(root) => {
                    assert!(is_square);
                    assert_eq!(big(&root.to_int()), expected_root);
                }
                None => assert!(!is_square, "sqrt {a}"),
            }
        }
    }

    #[test]
    fn from_bytes_rejects_p_and_above() {
        assert!(Fe::from_bytes(&SM2.p).is_none());
        assert!(Fe::from_bytes(&[0xff; 32]).is_none());
        let mut below = SM2.p;
        below[31] -= 1;
        assert!(Fe::from_bytes(&below).is_some());
    }
}
