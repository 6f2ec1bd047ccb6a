//! ECDSA on NIST P-256 through RustCrypto's `p256` (well kept, pure Rust, prehash verification).
//! `ring` and `aws-lc-rs` verify only messages they hash themselves, but records may carry a digest.

use chainsig_core::curve::P256;
use chainsig_core::PreparedItem;
use p256::ecdsa::signature::hazmat::PrehashVerifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::elliptic_curve::sec1::Sec1Point;

/// Verifies one prepared item; `low_s` rejects s > n/2, otherwise either s is accepted.
pub fn verify(item: &PreparedItem, low_s: bool) -> bool {
    if low_s && P256.is_high_s(&item.s) {
        return false;
    }
    // from_scalars rejects r or s equal to zero or ≥ n.
    let Ok(sig) = Signature::from_scalars(item.r, item.s) else {
        return false;
    };
    let point = Sec1Point::<p256::NistP256>::from_affine_coordinates(
        &item.px.into(),
        &item.py.into(),
        false,
    );
    let Ok(key) = VerifyingKey::from_sec1_point(&point) else {
        return false;
    };
    key.verify_prehash(&item.e, &sig).is_ok()
}
