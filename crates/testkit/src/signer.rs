//! Signing keys of the three algorithms on RustCrypto's arithmetic.
//!
//! Keys are drawn from the record's ChaCha stream exactly as earlier versions of `chainsig gen`
//! drew them, so a seed still names the same keys. SM2 signatures use chainsig-weierstrass's hedged nonce
//! derivation (k = SM3(domain ‖ d ‖ e ‖ 32 random bytes ‖ counter)), re-stated here, so that the
//! files `chainsig gen` writes stay the same for a seed; the curve arithmetic that turns the nonce
//! into (r, s) is RustCrypto's. ECDSA signatures are RustCrypto's RFC 6979 signatures, low s (the
//! same bytes libsecp256k1 gives for secp256k1).

use chainsig_core::Algorithm;
use rand::{Rng, RngCore};
use sm2::elliptic_curve::ff::PrimeField;
use sm2::elliptic_curve::ops::Reduce;

/// A signing key of one algorithm with its public point.
#[derive(Clone)]
pub enum Signer {
    Sm2 {
        d: sm2::Scalar,
        x: [u8; 32],
        y: [u8; 32],
    },
    Secp256k1(k256::ecdsa::SigningKey),
    P256(p256::ecdsa::SigningKey),
}

impl Signer {
    /// A uniformly random key (rejection sampling; SM2 keys in [1, n − 2], as the standard asks).
    pub fn random(alg: Algorithm, rng: &mut impl RngCore) -> Signer {
        match alg {
            Algorithm::Sm2 => loop {
                let mut bytes = zeroize::Zeroizing::new([0u8; 32]);
                rng.fill_bytes(bytes.as_mut());
                if let Some(key) = Signer::sm2_from_bytes(&bytes) {
                    break key;
                }
            },
            Algorithm::Secp256k1 => loop {
                let bytes: [u8; 32] = rng.gen();
                if let Ok(key) = k256::ecdsa::SigningKey::from_bytes(&bytes.into()) {
                    break Signer::Secp256k1(key);
                }
            },
            Algorithm::P256 => loop {
                let bytes: [u8; 32] = rng.gen();
                if let Ok(key) = p256::ecdsa::SigningKey::from_bytes(&bytes.into()) {
                    break Signer::P256(key);
                }
            },
        }
    }

    /// The SM2 key d, if 1 ≤ d ≤ n − 2 (d = n − 1 makes 1 + d ≡ 0 and cannot sign).
    pub fn sm2_from_bytes(bytes: &[u8; 32]) -> Option<Signer> {
        let d = Option::<sm2::Scalar>::from(sm2::Scalar::from_repr((*bytes).into()))?;
        if bool::from(d.is_zero()) || bool::from((d + sm2::Scalar::ONE).is_zero()) {
            return None;
        }
        let (x, y) = sm2_affine(&(sm2::ProjectivePoint::GENERATOR * d));
        Some(Signer::Sm2 { d, x, y })
    }

    /// The public point (x, y).
    pub fn public_xy(&self) -> ([u8; 32], [u8; 32]) {
        match self {
            Signer::Sm2 { x, y, .. } => (*x, *y),
            Signer::Secp256k1(sk) => xy(sk.verifying_key().to_sec1_point(false).as_bytes()),
            Signer::P256(sk) => xy(sk.verifying_key().to_sec1_point(false).as_bytes()),
        }
    }

    /// The public key in SEC1, compressed or not.
    pub fn public_sec1(&self, compressed: bool) -> Vec<u8> {
        let (x, y) = self.public_xy();
        crate::curves::encode_key(&x, &y, compressed)
    }

    /// The digest a signature of `msg` is over (SM2 with the default identifier).
    pub fn digest(&self, alg: Algorithm, msg: &[u8]) -> [u8; 32] {
        let (x, y) = self.public_xy();
        crate::curves::message_digest(alg, msg, crate::curves::SM2_DEFAULT_ID.as_bytes(), (&x, &y))
    }

    /// r ‖ s over `digest`; SM2 draws its hedging bytes from `rng`, ECDSA is deterministic.
    pub fn sign(&self, digest: &[u8; 32], rng: &mut impl RngCore) -> [u8; 64] {
        use p256::ecdsa::signature::hazmat::PrehashSigner;
        match self {
            Signer::Sm2 { d, .. } => sm2_sign_hedged(d, digest, rng),
            Signer::Secp256k1(sk) => {
                let sig: k256::ecdsa::Signature = sk.sign_prehash(digest).expect("32-byte prehash");
                sig.normalize_s().to_bytes().into()
            }
            Signer::P256(sk) => {
                let sig: p256::ecdsa::Signature = sk.sign_prehash(digest).expect("32-byte prehash");
                sig.to_bytes().into()
            }
        }
    }
}

fn xy(uncompressed: &[u8]) -> ([u8; 32], [u8; 32]) {
    (
        uncompressed[1..33].try_into().expect("65-byte SEC1"),
        uncompressed[33..65].try_into().expect("65-byte SEC1"),
    )
}

/// The affine coordinates of a finite SM2 point.
pub(crate) fn sm2_affine(p: &sm2::ProjectivePoint) -> ([u8; 32], [u8; 32]) {
    use sm2::elliptic_curve::sec1::ToSec1Point;
    xy(p.to_affine().to_sec1_point(false).as_bytes())
}

/// An integer below 2²⁵⁶ reduced mod n.
pub(crate) fn sm2_reduce(bytes: &[u8; 32]) -> sm2::Scalar {
    <sm2::Scalar as Reduce<sm2::U256>>::reduce(&sm2::U256::from_be_slice(bytes))
}

/// SM2 signing (GB/T 32918.2 §6.1) with the nonce k: r = (e + x₁) mod n, s = (1 + d)⁻¹(k − r·d);
/// `None` when k ∉ [1, n − 1], r = 0, r + k = n or s = 0.
pub(crate) fn sm2_sign_with_nonce(d: &sm2::Scalar, e: &[u8; 32], k: &[u8; 32]) -> Option<[u8; 64]> {
    let k = Option::<sm2::Scalar>::from(sm2::Scalar::from_repr((*k).into()))?;
    if bool::from(k.is_zero()) {
        return None;
    }
    let (x1, _) = sm2_affine(&(sm2::ProjectivePoint::GENERATOR * k));
    let r = sm2_reduce(e) + sm2_reduce(&x1);
    if bool::from(r.is_zero()) || bool::from((r + k).is_zero()) {
        return None;
    }
    let inv = Option::<sm2::Scalar>::from((sm2::Scalar::ONE + d).invert())?;
    let s = inv * (k - r * d);
    if bool::from(s.is_zero()) {
        return None;
    }
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(&r.to_repr());
    out[32..].copy_from_slice(&s.to_repr());
    Some(out)
}

/// chainsig-weierstrass's hedged signing: nonce k = SM3("chainsig-weierstrass hedged nonce" ‖ d ‖ e ‖ 32 bytes
/// of `rng` ‖ counter), retried with the next counter until it signs.
fn sm2_sign_hedged(d: &sm2::Scalar, e: &[u8; 32], rng: &mut impl RngCore) -> [u8; 64] {
    use sm3::Digest;
    for counter in 0u32.. {
        let mut noise = zeroize::Zeroizing::new([0u8; 32]);
        rng.fill_bytes(noise.as_mut());
        let mut h = sm3::Sm3::new();
        h.update(b"chainsig-weierstrass hedged nonce");
        h.update(d.to_repr());
        h.update(e);
        h.update(noise.as_ref());
        h.update(counter.to_be_bytes());
        let k = zeroize::Zeroizing::new(<[u8; 32]>::from(h.finalize()));
        if let Some(sig) = sm2_sign_with_nonce(d, e, &k) {
            return sig;
        }
    }
    unreachable!("a nonce signs with probability 1 − 2⁻²⁵⁵ per try")
}
