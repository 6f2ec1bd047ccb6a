//! ECDSA on NIST P-256 through our own a = −3 arithmetic (`chainsig_weierstrass::p256`: the SM2 field code
//! with P-256's constants, since both primes are ≡ −1 mod 2⁶⁴). It replaced RustCrypto `p256`,
//! which measured about 3× slower per core; `ring` and `aws-lc-rs` verify only messages they hash
//! themselves, but records may carry a digest. The cross-check tests compare it with `ring`.

use chainsig_core::curve::P256;
use chainsig_core::PreparedItem;

/// Verifies one prepared item; `low_s` rejects s > n/2, otherwise either s is accepted.
pub fn verify(item: &PreparedItem, low_s: bool) -> bool {
    if low_s && P256.is_high_s(&item.s) {
        return false;
    }
    match chainsig_weierstrass::p256::PublicKey::from_affine(&item.px, &item.py) {
        Ok(key) => chainsig_weierstrass::p256::verify_prehashed(&key, &item.e, &item.r, &item.s),
        Err(_) => false,
    }
}
