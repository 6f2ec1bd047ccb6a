//! The curves the arithmetic serves: short Weierstrass curves with a = −3 over a 256-bit prime
//! p ≡ −1 mod 2⁶⁴ (so the Montgomery quotient digit is the low limb itself), with a prime group
//! order n > 2²⁵⁵. Each curve is a zero-sized marker type; every constant is derived at compile
//! time from its [`chainsig_core::curve::CurveParams`], and the checks below stop the build if a
//! curve does not fit those assumptions.

use crate::field::FieldElement;
use crate::limbs::{self, Modulus};
use crate::point::Affine;
use chainsig_core::curve::CurveParams;
use std::sync::OnceLock;

pub(crate) trait Curve: Copy + Eq + core::fmt::Debug + Send + Sync + 'static {
    const PARAMS: CurveParams;
    const P: Modulus = Modulus::new(limbs::from_be_bytes(&Self::PARAMS.p));
    const N: Modulus = Modulus::new(limbs::from_be_bytes(&Self::PARAMS.n));
    /// Compile-time proof of the assumptions (evaluated when the curve is first used).
    const CHECKED: () = check_params(&Self::PARAMS);

    /// self⁻¹ for a field element (0 for 0), constant time. The default is Fermat with a fixed
    /// 4-bit window; a curve may supply a shorter addition chain.
    #[inline]
    fn field_invert(x: &FieldElement<Self>) -> FieldElement<Self> {
        let exponent = limbs::sub(&Self::P.m, &[2, 0, 0, 0]).0;
        FieldElement::from_mont(limbs::mont_pow(&x.0, &exponent, &Self::P))
    }

    /// x^((p+1)/4), the square root candidate (p ≡ 3 mod 4).
    #[inline]
    fn field_sqrt_candidate(x: &FieldElement<Self>) -> FieldElement<Self> {
        let (p_plus_1, carry) = limbs::add(&Self::P.m, &[1, 0, 0, 0]);
        let exponent = [
            (p_plus_1[0] >> 2) | (p_plus_1[1] << 62),
            (p_plus_1[1] >> 2) | (p_plus_1[2] << 62),
            (p_plus_1[2] >> 2) | (p_plus_1[3] << 62),
            (p_plus_1[3] >> 2) | (carry << 62),
        ];
        FieldElement::from_mont(limbs::mont_pow(&x.0, &exponent, &Self::P))
    }

    /// Storage for the lazily built odd multiples of G (one static per curve).
    fn g_odd_multiples_cell() -> &'static OnceLock<Vec<Affine<Self>>>;
    /// Storage for the lazily built signed comb table of G.
    fn comb_cell() -> &'static OnceLock<Vec<[Affine<Self>; 8]>>;
}

const fn check_params(c: &CurveParams) {
    let p = limbs::from_be_bytes(&c.p);
    let a = limbs::from_be_bytes(&c.a);
    let n = limbs::from_be_bytes(&c.n);
    assert!(p[0] == u64::MAX, "p must be ≡ −1 mod 2^64");
    assert!(p[0] & 3 == 3, "p must be ≡ 3 mod 4 for the square root");
    let (p_minus_3, _) = limbs::sub(&p, &[3, 0, 0, 0]);
    assert!(
        a[0] == p_minus_3[0]
            && a[1] == p_minus_3[1]
            && a[2] == p_minus_3[2]
            && a[3] == p_minus_3[3],
        "a must be −3"
    );
    assert!(n[3] >> 63 == 1, "n must exceed 2^255");
    assert!(
        limbs::lt(&n, &p),
        "n < p is assumed by the final comparison"
    );
}

/// sm2p256v1.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Sm2;

impl Curve for Sm2 {
    const PARAMS: CurveParams = chainsig_core::curve::SM2;

    #[inline]
    fn field_invert(x: &FieldElement<Sm2>) -> FieldElement<Sm2> {
        x.invert_sm2_chain()
    }

    #[inline]
    fn field_sqrt_candidate(x: &FieldElement<Sm2>) -> FieldElement<Sm2> {
        x.sqrt_candidate_sm2_chain()
    }

    fn g_odd_multiples_cell() -> &'static OnceLock<Vec<Affine<Sm2>>> {
        static CELL: OnceLock<Vec<Affine<Sm2>>> = OnceLock::new();
        &CELL
    }

    fn comb_cell() -> &'static OnceLock<Vec<[Affine<Sm2>; 8]>> {
        static CELL: OnceLock<Vec<[Affine<Sm2>; 8]>> = OnceLock::new();
        &CELL
    }
}

/// NIST P-256 (secp256r1).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct P256;

impl Curve for P256 {
    const PARAMS: CurveParams = chainsig_core::curve::P256;

    fn g_odd_multiples_cell() -> &'static OnceLock<Vec<Affine<P256>>> {
        static CELL: OnceLock<Vec<Affine<P256>>> = OnceLock::new();
        &CELL
    }

    fn comb_cell() -> &'static OnceLock<Vec<[Affine<P256>; 8]>> {
        static CELL: OnceLock<Vec<[Affine<P256>; 8]>> = OnceLock::new();
        &CELL
    }
}
