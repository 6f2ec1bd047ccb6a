//! ECDSA on secp256k1 through libsecp256k1 (the `secp256k1` crate): the implementation Bitcoin
//! Core ships, constant-time and among the fastest on x86-64. Verification and ecrecover.

use chainsig_core::curve::SECP256K1;
use chainsig_core::{PreparedItem, RecoverItem, Recovered};
use secp256k1::ecdsa::{RecoverableSignature, RecoveryId, Signature};
use secp256k1::{All, Message, PublicKey, Secp256k1};
use std::sync::OnceLock;

/// One context for the whole process: building one costs far more than a verification.
pub(crate) fn context() -> &'static Secp256k1<All> {
    static CONTEXT: OnceLock<Secp256k1<All>> = OnceLock::new();
    CONTEXT.get_or_init(Secp256k1::new)
}

/// Verifies one prepared item. `low_s` rejects s > n/2; otherwise s is normalised first, since
/// libsecp256k1 itself accepts only the low form.
pub fn verify(item: &PreparedItem, low_s: bool) -> bool {
    if low_s && SECP256K1.is_high_s(&item.s) {
        return false;
    }
    let mut compact = [0u8; 64];
    compact[..32].copy_from_slice(&item.r);
    compact[32..].copy_from_slice(&item.s);
    // parse_compact rejects r or s ≥ n; r = 0 or s = 0 fail inside verification.
    let Ok(mut sig) = Signature::from_compact(&compact) else {
        return false;
    };
    sig.normalize_s();
    let mut sec1 = [4u8; 65];
    sec1[1..33].copy_from_slice(&item.px);
    sec1[33..].copy_from_slice(&item.py);
    let Ok(key) = PublicKey::from_slice(&sec1) else {
        return false;
    };
    context()
        .verify_ecdsa(Message::from_digest(item.e), &sig, &key)
        .is_ok()
}

/// Which s values recovery accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SRule {
    /// Transactions since Homestead (EIP-2): s ≤ n/2 only.
    LowOnly,
    /// The ecrecover precompile: any s in [1, n−1].
    Any,
}

/// Ethereum's sender recovery: the signer, or `None` for r or s out of range (s > n/2 too under
/// [`SRule::LowOnly`]) or no such key.
pub fn recover(item: &RecoverItem, rule: SRule) -> Option<Recovered> {
    if (rule == SRule::LowOnly && SECP256K1.is_high_s(&item.s)) || item.recovery_id > 1 {
        return None;
    }
    let mut compact = [0u8; 64];
    compact[..32].copy_from_slice(&item.r);
    compact[32..].copy_from_slice(&item.s);
    let id = RecoveryId::try_from(i32::from(item.recovery_id)).ok()?;
    let sig = RecoverableSignature::from_compact(&compact, id).ok()?;
    let key = context()
        .recover_ecdsa(Message::from_digest(item.digest), &sig)
        .ok()?;
    Some(Recovered::from_pubkey(key.serialize_uncompressed()))
}
