//! The three curves through their RustCrypto crates: key decoding and encoding, hashing, and the
//! reference verdicts. Everything the kit knows about a curve goes through here, so no verdict
//! and no public key depends on the code under test.

use chainsig_core::{Algorithm, PreparedItem};
use sha2::Digest as _;

/// The default SM2 distinguishing identifier (GB/T 32918.2's example, "1234567812345678").
pub const SM2_DEFAULT_ID: &str = "1234567812345678";

pub use chainsig_core::Verdicts;

/// (x, y) of a SEC1 key (compressed or not), or `None` when RustCrypto refuses it.
pub fn decode_key(alg: Algorithm, sec1: &[u8]) -> Option<([u8; 32], [u8; 32])> {
    let uncompressed: Vec<u8> = match alg {
        Algorithm::Sm2 => {
            use sm2::elliptic_curve::sec1::ToSec1Point;
            let key = sm2::PublicKey::from_sec1_bytes(sec1).ok()?;
            key.as_affine().to_sec1_point(false).as_bytes().to_vec()
        }
        Algorithm::P256 => p256::ecdsa::VerifyingKey::from_sec1_bytes(sec1)
            .ok()?
            .to_sec1_point(false)
            .as_bytes()
            .to_vec(),
        Algorithm::Secp256k1 => k256::ecdsa::VerifyingKey::from_sec1_bytes(sec1)
            .ok()?
            .to_sec1_point(false)
            .as_bytes()
            .to_vec(),
    };
    Some((
        uncompressed[1..33].try_into().ok()?,
        uncompressed[33..65].try_into().ok()?,
    ))
}

/// SEC1 encoding of the affine point (x, y), which must be on the curve.
pub fn encode_key(x: &[u8; 32], y: &[u8; 32], compressed: bool) -> Vec<u8> {
    if compressed {
        let mut out = vec![2 | (y[31] & 1)];
        out.extend_from_slice(x);
        out
    } else {
        [&[4u8][..], x, y].concat()
    }
}

/// Z_A = SM3(ENTL ‖ ID ‖ a ‖ b ‖ Gx ‖ Gy ‖ Px ‖ Py) (GB/T 32918.2 §5.5), ENTL the bit length of ID.
pub fn sm2_z_a(id: &[u8], px: &[u8; 32], py: &[u8; 32]) -> [u8; 32] {
    let c = &chainsig_core::curve::SM2;
    let mut h = sm3::Sm3::new();
    h.update(((id.len() * 8) as u16).to_be_bytes());
    h.update(id);
    for part in [&c.a, &c.b, &c.gx, &c.gy, px, py] {
        h.update(part);
    }
    h.finalize().into()
}

/// The digest a signature of `alg` is over: SM3(Z_A ‖ msg) for SM2 (identifier `sm2_id`),
/// Keccak-256 for secp256k1 (as Ethereum), SHA-256 for P-256: each algorithm's default hash in
/// the `verify` format.
pub fn message_digest(
    alg: Algorithm,
    msg: &[u8],
    sm2_id: &[u8],
    key: (&[u8; 32], &[u8; 32]),
) -> [u8; 32] {
    match alg {
        Algorithm::Sm2 => {
            let za = sm2_z_a(sm2_id, key.0, key.1);
            let mut h = sm3::Sm3::new();
            h.update(za);
            h.update(msg);
            h.finalize().into()
        }
        Algorithm::Secp256k1 => sha3::Keccak256::digest(msg).into(),
        Algorithm::P256 => sha2::Sha256::digest(msg).into(),
    }
}

/// Whether s is above n/2 (the high one of s and n − s).
pub fn is_high_s(alg: Algorithm, s: &[u8; 32]) -> bool {
    alg.curve().is_high_s(s)
}

/// The reference's verdicts on a prepared record of `alg` (r or s out of range, or a key off the
/// curve, is a rejection).
pub fn reference_verdicts(alg: Algorithm, item: &PreparedItem) -> Verdicts {
    let mut sec1 = [4u8; 65];
    sec1[1..33].copy_from_slice(&item.px);
    sec1[33..].copy_from_slice(&item.py);
    match alg {
        Algorithm::Sm2 => {
            use sm2::dsa::signature::hazmat::PrehashVerifier;
            let any_s = sm2_parts(SM2_DEFAULT_ID, item)
                .is_some_and(|(sig, vk)| vk.verify_prehash(&item.e, &sig).is_ok());
            Verdicts {
                any_s,
                low_s: any_s,
            }
        }
        Algorithm::P256 => {
            use p256::ecdsa::signature::hazmat::PrehashVerifier;
            let low = crate::corruption::low_of(alg, &item.s);
            let any_s = match (
                p256::ecdsa::Signature::from_scalars(item.r, low),
                p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1),
            ) {
                (Ok(sig), Ok(vk)) => vk.verify_prehash(&item.e, &sig).is_ok(),
                _ => false,
            };
            Verdicts {
                any_s,
                low_s: any_s && !is_high_s(alg, &item.s),
            }
        }
        Algorithm::Secp256k1 => {
            use k256::ecdsa::signature::hazmat::PrehashVerifier;
            // k256 refuses a high s outright: judge the low one of the pair, then apply the rule.
            let low = crate::corruption::low_of(alg, &item.s);
            let any_s = match (
                k256::ecdsa::Signature::from_scalars(item.r, low),
                k256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1),
            ) {
                (Ok(sig), Ok(vk)) => vk.verify_prehash(&item.e, &sig).is_ok(),
                _ => false,
            };
            Verdicts {
                any_s,
                low_s: any_s && !is_high_s(alg, &item.s),
            }
        }
    }
}

/// RustCrypto's SM2 signature and key for raw bytes under identifier `id`; `None` when either
/// does not parse.
fn sm2_parts(
    id: &str,
    item: &PreparedItem,
) -> Option<(sm2::dsa::Signature, sm2::dsa::VerifyingKey)> {
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(&item.r);
    sig[32..].copy_from_slice(&item.s);
    let sig = sm2::dsa::Signature::from_slice(&sig).ok()?;
    let mut sec1 = [4u8; 65];
    sec1[1..33].copy_from_slice(&item.px);
    sec1[33..].copy_from_slice(&item.py);
    let vk = sm2::dsa::VerifyingKey::from_sec1_bytes(id, &sec1).ok()?;
    Some((sig, vk))
}

/// RustCrypto's verdict on an SM2 record that carries its message and identifier: the `sm2` crate
/// computes Z_A and hashes the message itself.
pub fn reference_verify_sm2_message(id: &[u8], msg: &[u8], item: &PreparedItem) -> bool {
    use sm2::dsa::signature::Verifier;
    let Ok(id) = std::str::from_utf8(id) else {
        return false;
    };
    sm2_parts(id, item).is_some_and(|(sig, vk)| vk.verify(msg, &sig).is_ok())
}
