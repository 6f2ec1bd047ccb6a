//! chainsig-weierstrass: arithmetic on short-Weierstrass curves with a = −3, and the two
//! curves of that family chainsig needs: SM2 signatures (GB/T 32918.2, GM/T 0003.2) on sm2p256v1,
//! and ECDSA verification on NIST P-256 ([`p256`]).
//!
//! Hand-written rather than taken from a general elliptic-curve library because verification
//! throughput is the product here: the arithmetic is specialised to short Weierstrass curves with
//! a = −3 whose 256-bit prime is ≡ −1 mod 2⁶⁴ (4×64-bit limbs, Montgomery multiplication whose
//! quotient digit is the low limb, a = −3 doubling, mixed additions against a precomputed table
//! of G, wNAF recoding, and an inversion-free final comparison), generic over the curve and
//! monomorphised so each curve's constants are compile-time constants in its own copy. SM2 and
//! P-256 both qualify. The same code is the reference the GPU kernels are checked against. The
//! curve constants come from [`chainsig_core::curve::SM2`] and [`chainsig_core::curve::P256`];
//! nothing is typed twice.
//!
//! Verification is variable time (its inputs are public). Key generation, public-key derivation
//! and signing run in constant time in the secret values: a fixed-base comb with masked table
//! lookups, Fermat inversions, and branch-free field and scalar arithmetic. The only decisions
//! taken on secrets are accept/reject bits (a secret key out of range, a nonce that gives no
//! signature), each declared public through `chainsig_core::checkmem`. CI checks this: the
//! `ctime` program of chainsig-testkit marks the key and nonce secret and runs signing under
//! valgrind's memcheck, which reports any branch or memory address that depends on them
//! (RELIABILITY.md, "Constant time").

#[macro_use]
mod public_key;

mod curve;
#[cfg(test)]
mod exhaustive_tests;
mod field;
mod limbs;
pub mod p256;
/// 32 big-endian bytes as four little-endian 64-bit limbs (a `const fn`, for constants built at
/// compile time by the crates above, such as chainsig-cpu's radix-2⁵² moduli).
pub use limbs::from_be_bytes as limbs_from_be_bytes;
mod point;
mod scalar;

use curve::{Curve, Sm2};
use field::FieldElement;
use point::Affine;
use rand::{CryptoRng, RngCore};
use scalar::Scalar;
use sm3::{Digest, Sm3};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use chainsig_core::checkmem;
use chainsig_core::curve::SM2;

/// Why a key was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("public key has the wrong length (expected 33 or 65 bytes)")]
    Length,
    #[error("public key has an unknown SEC1 prefix (expected 02, 03 or 04)")]
    Prefix,
    #[error("public key coordinate is not below the field prime p")]
    CoordinateOutOfRange,
    #[error("public key x coordinate has no square root: no point has it")]
    NoSquareRoot,
    #[error("point is not on the curve")]
    NotOnCurve,
    #[error("public key is the point at infinity")]
    Infinity,
    #[error("secret key is not in [1, n-2]")]
    SecretOutOfRange,
}

public_key_type!(
    /// A validated SM2 public key: an affine point on the curve, never the point at infinity.
    Sm2,
    "PublicKey"
);

/// SEC1 decoding shared by every curve: `04‖x‖y` or `02/03‖x`; `00` is infinity.
pub(crate) fn affine_from_sec1<C: Curve>(bytes: &[u8]) -> Result<Affine<C>, KeyError> {
    match bytes {
        [0x00] => Err(KeyError::Infinity),
        [0x04, rest @ ..] if rest.len() == 64 => {
            let x: &[u8; 32] = rest[..32].try_into().expect("32 bytes");
            let y: &[u8; 32] = rest[32..].try_into().expect("32 bytes");
            affine_from_coordinates(x, y)
        }
        [prefix @ (0x02 | 0x03), rest @ ..] if rest.len() == 32 => {
            let x: &[u8; 32] = rest.try_into().expect("32 bytes");
            decompress(x, *prefix == 0x03)
        }
        _ if bytes.len() == 33 || bytes.len() == 65 => Err(KeyError::Prefix),
        _ => Err(KeyError::Length),
    }
}

/// Both coordinates below p and the point on the curve.
pub(crate) fn affine_from_coordinates<C: Curve>(
    x: &[u8; 32],
    y: &[u8; 32],
) -> Result<Affine<C>, KeyError> {
    let x = FieldElement::<C>::from_bytes(x).ok_or(KeyError::CoordinateOutOfRange)?;
    let y = FieldElement::<C>::from_bytes(y).ok_or(KeyError::CoordinateOutOfRange)?;
    let point = Affine { x, y };
    if !point.is_on_curve() {
        return Err(KeyError::NotOnCurve);
    }
    Ok(point)
}

fn decompress<C: Curve>(x: &[u8; 32], y_is_odd: bool) -> Result<Affine<C>, KeyError> {
    let x = FieldElement::<C>::from_bytes(x).ok_or(KeyError::CoordinateOutOfRange)?;
    let y = point::curve_rhs(&x).sqrt().ok_or(KeyError::NoSquareRoot)?;
    // y = 0 would be a point of order 2, which these prime-order curves do not have.
    let y = if y.is_odd() == y_is_odd { y } else { y.neg() };
    Ok(Affine { x, y })
}

/// A secret key d in [1, n−2], with its public key and (1 + d)⁻¹ precomputed for signing.
/// Zeroised on drop; `Debug` shows only the public key.
#[derive(Clone)]
pub struct SecretKey {
    d: Scalar,
    /// (1 + d)⁻¹ mod n.
    d_plus_1_inv: Scalar,
    public: PublicKey,
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.d.0.zeroize();
        self.d_plus_1_inv.0.zeroize();
    }
}

impl ZeroizeOnDrop for SecretKey {}

impl core::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SecretKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl SecretKey {
    /// A uniformly random key, d in [1, n−2] (rejection sampling).
    pub fn random(rng: &mut (impl RngCore + CryptoRng)) -> SecretKey {
        loop {
            let mut bytes = Zeroizing::new([0u8; 32]);
            rng.fill_bytes(bytes.as_mut());
            if let Ok(key) = SecretKey::from_bytes(&bytes) {
                return key;
            }
        }
    }

    /// From 32 big-endian bytes; d must be in [1, n−2] (d = n−1 would make 1 + d ≡ 0).
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<SecretKey, KeyError> {
        let mut value = Zeroizing::new(limbs::from_be_bytes(bytes));
        let n_minus_1 = limbs::sub(&scalar::N.m, &[1, 0, 0, 0]).0;
        // Both checks are branch-free; only the accept/reject bit is revealed (declared public
        // for the constant-time check).
        let in_range = !limbs::is_zero(&value) & limbs::lt(&value, &n_minus_1);
        if !checkmem::public_bit(in_range) {
            return Err(KeyError::SecretOutOfRange);
        }
        let d = Scalar::new(*value);
        value.zeroize();
        let d_plus_1_inv = d.add(&Scalar::ONE).invert();
        // d in [1, n − 2] gives a finite point: no branch on its (secret) Z.
        let point = point::mul_base_ct::<Sm2>(&d.0).to_affine_finite();
        Ok(SecretKey {
            d,
            d_plus_1_inv,
            public: PublicKey { point },
        })
    }

    pub fn to_bytes(&self) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(self.d.to_bytes())
    }

    pub fn public_key(&self) -> PublicKey {
        self.public
    }
}

/// Z_A = SM3(ENTL ‖ ID ‖ a ‖ b ‖ Gx ‖ Gy ‖ Px ‖ Py), ENTL the bit length of ID as two big-endian
/// bytes. The standard limits ID to 8191 bytes; a longer ID's bit length is taken mod 2¹⁶.
pub fn z_a(id: &[u8], key: &PublicKey) -> [u8; 32] {
    let entl = ((id.len() as u64 * 8) as u16).to_be_bytes();
    let mut hasher = Sm3::new();
    hasher.update(entl);
    hasher.update(id);
    hasher.update(SM2.a);
    hasher.update(SM2.b);
    hasher.update(SM2.gx);
    hasher.update(SM2.gy);
    hasher.update(key.x());
    hasher.update(key.y());
    hasher.finalize().into()
}

/// e = SM3(Z_A ‖ M).
pub fn message_digest(z_a: &[u8; 32], msg: &[u8]) -> [u8; 32] {
    let mut hasher = Sm3::new();
    hasher.update(z_a);
    hasher.update(msg);
    hasher.finalize().into()
}

/// Verifies (r, s) on the prehashed e (steps 1, 4, 5, 6 of the standard). False on any failure:
/// r or s outside [1, n−1], t = 0, s·G + t·P at infinity, or (e + x1) mod n ≠ r.
pub fn verify_prehashed(key: &PublicKey, e: &[u8; 32], r: &[u8; 32], s: &[u8; 32]) -> bool {
    let (Some(r), Some(s)) = (Scalar::from_bytes(r), Scalar::from_bytes(s)) else {
        return false;
    };
    if r.is_zero() || s.is_zero() {
        return false;
    }
    let t = r.add(&s);
    if t.is_zero() {
        return false;
    }
    let sum = point::lincomb_vartime(&s.0, &t.0, &key.point);
    if sum.is_infinity() {
        return false;
    }
    // x1 must satisfy x1 ≡ r − e (mod n).
    let e = Scalar::reduce_bytes(e);
    sum.x_mod_n_equals(&r.sub(&e).0)
}

/// Signs the prehashed e, returning r‖s (big-endian).
///
/// The nonce is hedged: k = SM3(domain ‖ d ‖ e ‖ 32 bytes from `rng` ‖ counter), rejection-sampled
/// into [1, n−1], so a weak or repeating `rng` does not by itself expose the key. Retries on
/// r = 0, r + k = n and s = 0. The bound is `RngCore` only, as the callers use it; pass a
/// cryptographic generator all the same.
pub fn sign_prehashed(key: &SecretKey, e: &[u8; 32], rng: &mut impl RngCore) -> [u8; 64] {
    let mut counter: u32 = 0;
    loop {
        let mut noise = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(noise.as_mut());
        let mut hasher = Sm3::new();
        hasher.update(b"chainsig-weierstrass hedged nonce");
        hasher.update(key.d.to_bytes());
        hasher.update(e);
        hasher.update(noise.as_ref());
        hasher.update(counter.to_be_bytes());
        let k = Zeroizing::new(<[u8; 32]>::from(hasher.finalize()));
        counter = counter.wrapping_add(1);
        if let Some(signature) = sign_prehashed_with_nonce(key, e, &k) {
            return signature;
        }
    }
}

/// Signs the prehashed e with the nonce k (big-endian). `None` when k is not in [1, n−1] or gives
/// r = 0, r + k = n or s = 0.
///
/// Constant time in d and k: every step runs whatever the values, and the one decision, whether
/// this k gives a signature, is revealed as a single bit, as libsecp256k1 reveals its own.
pub fn sign_prehashed_with_nonce(key: &SecretKey, e: &[u8; 32], k: &[u8; 32]) -> Option<[u8; 64]> {
    let k_int = Zeroizing::new(limbs::from_be_bytes(k));
    let k_ok = !limbs::is_zero(&k_int) & limbs::lt(&k_int, &scalar::N.m);
    // An unusable k is replaced by 1 so the same work is done; its result is thrown away below.
    let k = Zeroizing::new(Scalar::new(limbs::select(
        u64::from(k_ok).wrapping_neg(),
        &k_int,
        &[1, 0, 0, 0],
    )));
    // k in [1, n − 1] gives a finite point: no branch on its (secret) Z.
    let point = point::mul_base_ct::<Sm2>(&k.0).to_affine_finite();
    let x1 = Scalar::reduce(&point.x.to_int());
    let r = Scalar::reduce_bytes(e).add(&x1);
    // s = (1 + d)⁻¹ · (k − r·d)
    let s = key.d_plus_1_inv.mul(&k.sub(&r.mul(&key.d)));
    let signs = k_ok & !r.is_zero() & !r.add(&k).is_zero() & !s.is_zero();
    if !checkmem::public_bit(signs) {
        return None;
    }
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(&r.to_bytes());
    out[32..].copy_from_slice(&s.to_bytes());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_secret() {
        let key = SecretKey::from_bytes(&[0x11; 32]).unwrap();
        let shown = format!("{key:?}");
        assert!(!shown.contains("1111"), "{shown}");
        assert!(shown.contains("SecretKey"));
    }

    /// The rare branch of the final comparison: x1 in [n, p), so x1 mod n = x1 − n. Random
    /// signatures reach it with probability about 2⁻¹²⁸, so build one: pick R with such an x,
    /// then the key P = t⁻¹·(R − s·G), so that s·G + t·P = R.
    #[test]
    fn verification_handles_x1_at_least_n() {
        use crate::point::tests::mul_reference;
        use sm2::dsa::signature::hazmat::PrehashVerifier;
        let (x_int, point) = point::tests::point_with_x_above_n::<Sm2>();
        assert!(limbs::lt(&x_int, &field::P.m));
        let s = Scalar::reduce_bytes(&[0x37; 32]);
        let r = Scalar::reduce_bytes(&[0xa5; 32]);
        let t = r.add(&s);
        let s_g = mul_reference(&s.0, &point::GENERATOR);
        let diff = point
            .to_jacobian()
            .add_vartime(&s_g.neg())
            .to_affine()
            .unwrap();
        let key_point = mul_reference(&t.invert().0, &diff).to_affine().unwrap();
        let key = PublicKey { point: key_point };
        // e = r − (x1 mod n)
        let x1_mod_n = Scalar::reduce(&x_int);
        let e = r.sub(&x1_mod_n).to_bytes();
        assert!(verify_prehashed(&key, &e, &r.to_bytes(), &s.to_bytes()));
        // The verdict of the independent implementation, and a near miss.
        let theirs = sm2::dsa::VerifyingKey::from_sec1_bytes("1", &key.to_uncompressed()).unwrap();
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&r.to_bytes());
        sig[32..].copy_from_slice(&s.to_bytes());
        let sig = sm2::dsa::Signature::from_bytes(&sig.into()).unwrap();
        assert!(theirs.verify_prehash(&e, &sig).is_ok());
        let e_off = r.sub(&x1_mod_n).add(&Scalar::ONE).to_bytes();
        assert!(!verify_prehashed(
            &key,
            &e_off,
            &r.to_bytes(),
            &s.to_bytes()
        ));
    }

    #[test]
    fn public_keys_debug_as_their_compressed_encoding() {
        let sm2_g = PublicKey::from_affine(&SM2.gx, &SM2.gy).unwrap();
        assert_eq!(
            format!("{sm2_g:?}"),
            format!("PublicKey({})", hex::encode(sm2_g.to_compressed()))
        );
        let nist = chainsig_core::curve::P256;
        let p256_g = p256::PublicKey::from_affine(&nist.gx, &nist.gy).unwrap();
        assert_eq!(
            format!("{p256_g:?}"),
            format!("p256::PublicKey({})", hex::encode(p256_g.to_compressed()))
        );
    }

    #[test]
    fn errors_display_clearly() {
        assert_eq!(
            KeyError::NotOnCurve.to_string(),
            "point is not on the curve"
        );
    }
}
