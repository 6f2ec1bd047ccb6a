//! ECDSA verification on NIST P-256 (FIPS 186-5, SEC 1 §4.1.4) with this crate's arithmetic.
//!
//! Hand-written rather than delegated to RustCrypto `p256` for throughput: the field, scalar and
//! point code of the crate is generic over the curve and serves every short Weierstrass curve
//! with a = −3 whose prime is ≡ −1 mod 2⁶⁴ (so the Montgomery quotient digit is the low limb),
//! which P-256 (p = 2²⁵⁶ − 2²²⁴ + 2¹⁹² + 2⁹⁶ − 1) and SM2 both are. Its constants come from
//! [`chainsig_core::curve::P256`] and are converted at compile time; nothing is typed twice.
//!
//! Verification is variable time: every input of it is public.

use crate::curve::P256;
use crate::point;
use crate::scalar::GroupScalar;

pub use crate::KeyError;

type Scalar = GroupScalar<P256>;

public_key_type!(
    /// A validated P-256 public key: an affine point on the curve, never the point at infinity.
    P256,
    "p256::PublicKey"
);

/// ECDSA verification of (r, s) on the prehashed digest z (big-endian, 32 bytes; reduced mod n).
///
/// False when r or s is outside [1, n−1], when u1·G + u2·P is the point at infinity, or when
/// x(R) mod n ≠ r, where w = s⁻¹, u1 = z·w, u2 = r·w. Both s and n − s are accepted: a low-s
/// rule is the caller's to apply.
pub fn verify_prehashed(key: &PublicKey, z: &[u8; 32], r: &[u8; 32], s: &[u8; 32]) -> bool {
    let (Some(r), Some(s)) = (Scalar::from_bytes(r), Scalar::from_bytes(s)) else {
        return false;
    };
    if r.is_zero() || s.is_zero() {
        return false;
    }
    let z = Scalar::reduce_bytes(z);
    let w = s.invert();
    let u1 = z.mul(&w);
    let u2 = r.mul(&w);
    let sum = point::lincomb_vartime(&u1.0, &u2.0, &key.point);
    if sum.is_infinity() {
        return false;
    }
    sum.x_mod_n_equals(&r.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curve::Curve;
    use crate::field::FieldElement;
    use crate::limbs;
    use crate::point::tests::mul_reference;
    use crate::point::Affine;
    use ::p256::ecdsa::signature::hazmat::PrehashVerifier;

    #[test]
    fn constants_come_from_the_curve() {
        use num_bigint::BigUint;
        let params = chainsig_core::curve::P256;
        let p = BigUint::from_bytes_be(&params.p);
        assert_eq!(BigUint::from_bytes_be(&limbs::to_be_bytes(&P256::P.m)), p);
        assert_eq!(P256::P.inv, 1, "p ≡ −1 mod 2^64");
        let r = BigUint::from(1u32) << 256;
        assert_eq!(
            BigUint::from_bytes_be(&limbs::to_be_bytes(&P256::P.r2)),
            (&r * &r) % &p
        );
        assert_eq!(FieldElement::<P256>::CURVE_B.to_bytes(), params.b);
        let g = Affine::<P256>::GENERATOR;
        assert!(g.is_on_curve());
        assert_eq!(g.x.to_bytes(), params.gx);
        assert!(mul_reference(&P256::N.m, &g).is_infinity());
    }

    #[test]
    fn field_inversion_and_sqrt_match_bigint() {
        use num_bigint::BigUint;
        let p = BigUint::from_bytes_be(&chainsig_core::curve::P256.p);
        for seed in [0u8, 1, 2, 3, 0x5a, 0xfe] {
            let v = BigUint::from_bytes_be(&[seed.wrapping_mul(37) | 1; 32]) % &p;
            let mut bytes = [0u8; 32];
            let b = v.to_bytes_be();
            bytes[32 - b.len()..].copy_from_slice(&b);
            let fe = FieldElement::<P256>::from_bytes(&bytes).unwrap();
            let inv = BigUint::from_bytes_be(&fe.invert().to_bytes());
            assert_eq!(inv, v.modpow(&(&p - 2u32), &p));
            let root = v.modpow(&((&p + 1u32) >> 2), &p);
            let is_square = (&root * &root) % &p == v;
            assert_eq!(fe.sqrt().is_some(), is_square);
            if let Some(r) = fe.sqrt() {
                assert_eq!(BigUint::from_bytes_be(&r.to_bytes()), root);
            }
        }
    }

    /// The rare branch of the final comparison: x(R) in [n, p), so x(R) mod n = x(R) − n. Random
    /// signatures reach it with probability about 2⁻¹²⁸, so build one: pick R with such an x and
    /// r = x(R) − n, choose u1, u2, then P = u2⁻¹·(R − u1·G), s = r·u2⁻¹ and z = u1·s.
    #[test]
    fn verification_handles_x_at_least_n() {
        let (x_int, big_r) = point::tests::point_with_x_above_n::<P256>();
        assert!(limbs::lt(&x_int, &P256::P.m));
        let r = Scalar::reduce(&x_int);
        assert!(!r.is_zero());
        let u1 = Scalar::reduce_bytes(&[0x37; 32]);
        let u2 = Scalar::reduce_bytes(&[0xa5; 32]);
        let u1_g = mul_reference(&u1.0, &Affine::<P256>::GENERATOR);
        let diff = big_r
            .to_jacobian()
            .add_vartime(&u1_g.neg())
            .to_affine()
            .unwrap();
        let key_point = mul_reference(&u2.invert().0, &diff).to_affine().unwrap();
        let key = PublicKey { point: key_point };
        // u2 = r·w ⇒ s = w⁻¹ = r·u2⁻¹; u1 = z·w ⇒ z = u1·s.
        let s = r.mul(&u2.invert());
        let z = u1.mul(&s);
        let (r_b, s_b, z_b) = (r.to_bytes(), s.to_bytes(), z.to_bytes());
        assert!(verify_prehashed(&key, &z_b, &r_b, &s_b));
        // The independent implementation agrees, and a near miss fails in both.
        let theirs = ::p256::ecdsa::VerifyingKey::from_sec1_bytes(&key.to_uncompressed()).unwrap();
        let sig = ::p256::ecdsa::Signature::from_scalars(r_b, s_b).unwrap();
        assert!(theirs.verify_prehash(&z_b, &sig).is_ok());
        let z_off = z.add(&Scalar::ONE).to_bytes();
        assert!(!verify_prehashed(&key, &z_off, &r_b, &s_b));
        assert!(theirs.verify_prehash(&z_off, &sig).is_err());
    }
}
