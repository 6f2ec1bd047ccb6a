//! SM2 signing (GB/T 32918.2 §6.1) of eight prehashed messages per call with given nonces, in
//! constant time, byte for byte [`chainsig_weierstrass::sign_prehashed_with_nonce`]:
//! (x₁, y₁) = k·G, r = (e + x₁) mod n, s = (1 + d)⁻¹·(k − r·d) mod n, and no signature for a
//! nonce outside [1, n − 1] or one that gives r = 0, r + k = n or s = 0.
//!
//! The method is that of the secp256k1 signer ([`super::sign`]): k·G by the constant-time comb
//! ([`super::ct_comb`]), the affine x₁ and (1 + d)⁻¹ by the lanes' constant-time inversion
//! (Montgomery's trick across the lanes and one safegcd, [`super::invert`]), every choice a
//! masked blend. The nonces come from the caller (chainsig's
//! scalar SM2 signer hedges them, SM3 over key, message and fresh randomness): the lanes sign
//! what they are given, as `sign_prehashed_with_nonce` does. The per-lane verdict "this nonce
//! signs" is the one value revealed, as there (and as libsecp256k1 reveals its own); it is false
//! with probability about 2⁻²⁵⁵ for a uniform nonce. Key bytes, nonces and intermediates are
//! wiped with `zeroize`; the review of secret-dependent branches and indices in [`super::sign`]
//! covers this file's arithmetic, which uses the same functions.

use super::ct_comb::{mul_base_ct, to_affine_ct};
use super::curves::Sm2Curve;
use super::field::{lt_int, Fe8};
use super::modulus::{be_from_radix52, radix52_from_be, LaneModulus, LIMBS};
use super::point::LaneCurve;
use zeroize::{Zeroize, Zeroizing};

type Curve = Sm2Curve;
type Scalar = Fe8<<Sm2Curve as LaneCurve>::N>;
type Column = [[u64; LIMBS]; 8];

/// Signs up to eight (key, e, k) triples; entry i is triple i's r‖s, `None` where its nonce does
/// not sign.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn sign_group(
    keys: &[&chainsig_weierstrass::SecretKey],
    digests: &[[u8; 32]],
    nonces: &[[u8; 32]],
) -> Vec<Option<[u8; 64]>> {
    assert!(keys.len() == digests.len() && keys.len() == nonces.len() && keys.len() <= 8);
    let mut one = [0u8; 32];
    one[31] = 1;
    let mut d: Zeroizing<Column> = Zeroizing::new([radix52_from_be(&one); 8]);
    let mut k: Zeroizing<Column> = Zeroizing::new([radix52_from_be(&one); 8]);
    let mut e: Column = [[0u64; LIMBS]; 8];
    for lane in 0..keys.len() {
        d[lane] = radix52_from_be(&keys[lane].to_bytes());
        k[lane] = radix52_from_be(&nonces[lane]);
        e[lane] = radix52_from_be(&digests[lane]);
    }
    let (r, s, signs) = sign_columns(&d, &k, &e);
    d.zeroize();
    k.zeroize();
    (0..keys.len())
        .map(|lane| {
            if signs >> lane & 1 == 0 {
                return None;
            }
            let mut out = [0u8; 64];
            out[..32].copy_from_slice(&be_from_radix52(&r[lane]));
            out[32..].copy_from_slice(&be_from_radix52(&s[lane]));
            Some(out)
        })
        .collect()
}

/// r, s and the lanes whose nonce signs, from limb columns of d (in [1, n − 2]), k (any 256-bit
/// value; lanes outside [1, n − 1] compute on k = 1 and do not sign) and e (any 256-bit value).
#[target_feature(enable = "avx512f,avx512ifma")]
fn sign_columns(d: &Column, k: &Column, e: &Column) -> (Column, Column, u8) {
    let n = Scalar::constant(&<<Curve as LaneCurve>::N as LaneModulus>::M.m);
    let one = Scalar::constant(&{
        let mut l = [0u64; LIMBS];
        l[0] = 1;
        l
    });
    let mut k = Scalar::load(k);
    // k below 2²⁵⁶ may exceed 2n, outside the lanes' invariant: compare first, then replace.
    let k_ok = !k.is_zero_int() & lt_int(&k.0, &n.0);
    k = one.select(k_ok, &k);
    let mut d = Scalar::load(d);
    // e < 2²⁵⁶ < 2n: inside the [0, 2n) invariant.
    let e = Scalar::load(e);

    let mut point = mul_base_ct::<Curve>(&k);
    let (x1, _) = to_affine_ct(&mut point);
    // x₁ < p < 2n: inside the invariant as a scalar.
    let r = e.add(&Scalar::from_limbs(x1.0)).canonical();

    // s = (1 + d)⁻¹·(k − r·d): the inverse in Montgomery form times a plain value is plain.
    let mut inv = d.add(&one).to_mont().invert();
    let mut rd = r.to_mont().mul(&d);
    let mut diff = k.sub(&rd);
    let s = inv.mul(&diff).canonical();
    let signs = k_ok & !r.is_zero() & !r.add(&k).is_zero() & !s.is_zero();
    for value in [&mut k, &mut d, &mut inv, &mut rd, &mut diff] {
        value.wipe();
    }
    (r.store(), s.store(), signs)
}

impl Scalar {
    /// Lanes whose limbs are all zero, for values not known to lie below 2n.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn is_zero_int(&self) -> u8 {
        use core::arch::x86_64::*;
        let any = self
            .0
            .iter()
            .fold(_mm512_setzero_si512(), |a, l| _mm512_or_si512(a, *l));
        _mm512_cmpeq_epi64_mask(any, _mm512_setzero_si512())
    }
}
