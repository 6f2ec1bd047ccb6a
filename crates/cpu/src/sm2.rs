//! SM2 verification through `chainsig-weierstrass`, our own arithmetic specialised to the SM2 prime.

use chainsig_core::PreparedItem;

/// Verifies one prepared item (e already computed, key already validated in preparation).
pub fn verify(item: &PreparedItem) -> bool {
    match chainsig_weierstrass::PublicKey::from_affine(&item.px, &item.py) {
        Ok(key) => chainsig_weierstrass::verify_prehashed(&key, &item.e, &item.r, &item.s),
        Err(_) => false,
    }
}
