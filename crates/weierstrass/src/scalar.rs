//! Integers mod the group order n, kept as plain (not Montgomery) integers in [0, n): the
//! verifier mostly adds and compares, and the few products convert in and out of Montgomery form
//! on the fly. All operations are branch-free in the values, so they serve secret scalars.

use crate::curve::{Curve, Sm2};
use crate::limbs::{self, Limbs, Modulus};
use core::marker::PhantomData;

/// The SM2 group order with its Montgomery constants.
pub(crate) const N: Modulus = Sm2::N;

/// An integer in [0, n) for the curve C.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct GroupScalar<C: Curve>(pub(crate) Limbs, PhantomData<C>);

/// An SM2 scalar.
pub(crate) type Scalar = GroupScalar<Sm2>;

impl<C: Curve> zeroize::Zeroize for GroupScalar<C> {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl<C: Curve> GroupScalar<C> {
    #[cfg(test)]
    pub(crate) const ZERO: Self = GroupScalar([0; 4], PhantomData);
    pub(crate) const ONE: Self = GroupScalar([1, 0, 0, 0], PhantomData);

    /// From an integer already below n.
    pub(crate) const fn new(value: Limbs) -> Self {
        GroupScalar(value, PhantomData)
    }

    /// Exactly the integers 0 ≤ v < n; `None` otherwise.
    pub(crate) fn from_bytes(bytes: &[u8; 32]) -> Option<Self> {
        let value = limbs::from_be_bytes(bytes);
        if limbs::lt(&value, &C::N.m) {
            Some(Self::new(value))
        } else {
            None
        }
    }

    /// Any 256-bit integer, reduced mod n (one subtraction suffices since 2n > 2²⁵⁶).
    pub(crate) fn reduce_bytes(bytes: &[u8; 32]) -> Self {
        Self::reduce(&limbs::from_be_bytes(bytes))
    }

    pub(crate) fn reduce(value: &Limbs) -> Self {
        Self::new(limbs::reduce_once(value, 0, &C::N.m))
    }

    pub(crate) fn to_bytes(self) -> [u8; 32] {
        limbs::to_be_bytes(&self.0)
    }

    pub(crate) fn is_zero(&self) -> bool {
        limbs::is_zero(&self.0)
    }

    pub(crate) fn add(&self, other: &Self) -> Self {
        Self::new(limbs::add_mod(&self.0, &other.0, &C::N.m))
    }

    pub(crate) fn sub(&self, other: &Self) -> Self {
        Self::new(limbs::sub_mod(&self.0, &other.0, &C::N.m))
    }

    #[cfg(test)]
    pub(crate) fn neg(&self) -> Self {
        Self::ZERO.sub(self)
    }

    pub(crate) fn mul(&self, other: &Self) -> Self {
        // (a·b·R⁻¹)·R²·R⁻¹ = a·b.
        let t = limbs::mont_mul(&self.0, &other.0, &C::N);
        Self::new(limbs::mont_mul(&t, &C::N.r2, &C::N))
    }

    /// self^(n−2) = self⁻¹ (0 for 0). The exponent is public, so the fixed 4-bit window is
    /// indexed by exponent digits only: constant time in self.
    pub(crate) fn invert(&self) -> Self {
        let exponent = limbs::sub(&C::N.m, &[2, 0, 0, 0]).0;
        let base = limbs::mont_mul(&self.0, &C::N.r2, &C::N);
        let acc = limbs::mont_pow(&base, &exponent, &C::N);
        Self::new(limbs::mont_mul(&acc, &[1, 0, 0, 0], &C::N))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chainsig_core::curve::SM2;
    use num_bigint::BigUint;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn big(s: &Scalar) -> BigUint {
        BigUint::from_bytes_be(&s.to_bytes())
    }

    fn n() -> BigUint {
        BigUint::from_bytes_be(&SM2.n)
    }

    fn bytes_of(v: &BigUint) -> [u8; 32] {
        let mut bytes = [0u8; 32];
        let b = v.to_bytes_be();
        bytes[32 - b.len()..].copy_from_slice(&b);
        bytes
    }

    #[test]
    fn constants_come_from_the_curve() {
        assert_eq!(BigUint::from_bytes_be(&limbs::to_be_bytes(&N.m)), n());
        let inv = BigUint::from(N.inv);
        let two64 = BigUint::from(1u32) << 64;
        assert_eq!(
            (inv * BigUint::from(N.m[0]) + 1u32) % two64,
            BigUint::from(0u32)
        );
    }

    #[test]
    fn arithmetic_matches_bigint() {
        let n = n();
        let two256 = BigUint::from(1u32) << 256;
        let mut values = vec![
            BigUint::from(0u32),
            BigUint::from(1u32),
            &n - 1u32,
            &n - 2u32,
            &n >> 1,
        ];
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        for _ in 0..300 {
            let mut bytes = [0u8; 32];
            rng.fill(&mut bytes);
            values.push(BigUint::from_bytes_be(&bytes) % &n);
        }
        for (i, a) in values.iter().enumerate() {
            let b = &values[(i * 5 + 1) % values.len()];
            let sa = Scalar::from_bytes(&bytes_of(a)).unwrap();
            let sb = Scalar::from_bytes(&bytes_of(b)).unwrap();
            assert_eq!(big(&sa.add(&sb)), (a + b) % &n);
            assert_eq!(big(&sa.sub(&sb)), (a + &n - b) % &n);
            assert_eq!(big(&sa.neg()), (&n - a) % &n);
            assert_eq!(big(&sa.mul(&sb)), (a * b) % &n, "mul {a} {b}");
            assert_eq!(big(&sa.invert()), a.modpow(&(&n - 2u32), &n), "invert {a}");
        }
        // Reduction of any 256-bit value, including n itself and 2^256 − 1.
        for v in [
            n.clone(),
            &n + 1u32,
            &two256 - 1u32,
            &two256 - &n,
            BigUint::from(5u32),
        ] {
            assert_eq!(big(&Scalar::reduce_bytes(&bytes_of(&v))), &v % &n);
        }
        assert!(Scalar::from_bytes(&bytes_of(&n)).is_none());
        assert!(Scalar::from_bytes(&bytes_of(&(&n - 1u32))).is_some());
    }
}
