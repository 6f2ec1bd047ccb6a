//! The constant-time check of the signers, after libsecp256k1's `ctime_tests.c`.
//!
//! Each check marks the secret inputs (the secret key, the nonce or the randomness it is made
//! from) undefined with a valgrind client request ([`chainsig_core::checkmem`]), signs, and marks
//! the outputs defined again before they are compared or printed. Run under
//! `valgrind --error-exitcode=1`, memcheck then reports every conditional branch and every memory
//! address that depends on a secret, and the run fails. Decisions that are public by design
//! (whether a key is in range, whether a nonce gave r = 0) are declassified by the signers
//! themselves, one bit each, as libsecp256k1 does.
//!
//! What is covered:
//! - SM2 (`chainsig-weierstrass`): secret-key parsing and public-key derivation, signing with a given
//!   nonce, and hedged signing whose random input is marked secret as it is drawn.
//! - secp256k1 (`chainsig-eth`'s signing path): libsecp256k1's recoverable signing with our RFC 6979
//!   nonce function, in a context made with libsecp256k1's declassify flag and randomised from a
//!   secret seed, as the service's per-thread contexts are. Libsecp256k1 honours that flag only when
//!   built with `-DVALGRIND`, which CI passes for this build (RELIABILITY.md).
//!
//! Every signature is checked against RustCrypto's `sm2` and `k256`, so a check that "passes" by
//! signing nothing, or signing wrongly, fails instead. [`self_test_leak`] branches on a secret
//! byte and indexes a table with it: memcheck must report it, which shows the check can fail.

use chainsig_core::checkmem::{classify, declassify};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// A generator whose output is marked secret as it is drawn (the randomness of hedged signing).
struct SecretRng(ChaCha20Rng);

impl RngCore for SecretRng {
    fn next_u32(&mut self) -> u32 {
        let v = self.0.next_u32();
        classify(&v);
        v
    }
    fn next_u64(&mut self) -> u64 {
        let v = self.0.next_u64();
        classify(&v);
        v
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest);
        classify(dest);
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

/// `rounds` SM2 keys, each signing with a secret nonce and by hedged signing; returns the number
/// of signatures made (each verified by RustCrypto `sm2`).
pub fn sm2_signing(rounds: usize) -> Result<usize, String> {
    use sm2::dsa::signature::hazmat::PrehashVerifier;
    let mut rng = ChaCha20Rng::seed_from_u64(0xc7_5132);
    let mut hedge = SecretRng(ChaCha20Rng::seed_from_u64(0xc7_5133));
    let mut signed = 0;
    for round in 0..rounds {
        let mut d = [0u8; 32];
        rng.fill_bytes(&mut d);
        classify(&d);
        // The accept/reject decision is public by design (declassified inside).
        let Ok(key) = chainsig_weierstrass::SecretKey::from_bytes(&d) else {
            continue;
        };
        let public = key.public_key().to_uncompressed();
        declassify(&public);
        let vk = sm2::dsa::VerifyingKey::from_sec1_bytes("1234567812345678", &public)
            .map_err(|e| format!("SM2 round {round}: public key refused by RustCrypto: {e}"))?;
        let mut e = [0u8; 32];
        rng.fill_bytes(&mut e);
        let mut k = [0u8; 32];
        rng.fill_bytes(&mut k);
        classify(&k);
        let with_nonce = chainsig_weierstrass::sign_prehashed_with_nonce(&key, &e, &k);
        let hedged = chainsig_weierstrass::sign_prehashed(&key, &e, &mut hedge);
        for sig in with_nonce.into_iter().chain([hedged]) {
            declassify(&sig);
            let sig = sm2::dsa::Signature::from_slice(&sig)
                .map_err(|e| format!("SM2 round {round}: signature out of range: {e}"))?;
            vk.verify_prehash(&e, &sig)
                .map_err(|_| format!("SM2 round {round}: RustCrypto rejects our signature"))?;
            signed += 1;
        }
    }
    Ok(signed)
}

/// libsecp256k1's flag for a context that declassifies its public-by-design decisions
/// (`SECP256K1_CONTEXT_DECLASSIFY` in secp256k1.h).
const CONTEXT_DECLASSIFY: u32 = 1 | (1 << 10);

/// `rounds` secp256k1 keys signing through `chainsig_eth::signing::sign_recoverable_in`; returns
/// the number of signatures (each checked by RustCrypto `k256`: recovers the signer, low s).
pub fn secp256k1_signing(rounds: usize) -> Result<usize, String> {
    use k256::ecdsa::{RecoveryId, Signature, SigningKey, VerifyingKey};
    use secp256k1::ffi;
    // libsecp256k1 refuses the declassify flag outside memcheck (and aborts under memcheck when
    // it was built without -DVALGRIND, saying so).
    let declassify_flag = if chainsig_core::checkmem::running_on_valgrind() {
        CONTEXT_DECLASSIFY
    } else {
        0
    };
    // SAFETY: a fresh context, destroyed below and not used after; the wrapper is ManuallyDrop.
    let raw = unsafe { ffi::secp256k1_context_create(ffi::SECP256K1_START_SIGN | declassify_flag) };
    let mut secp = unsafe { secp256k1::Secp256k1::from_raw_signing_only(raw) };
    let mut rng = ChaCha20Rng::seed_from_u64(0xc7_256b);
    // Blinding from a secret seed, as the service's thread contexts are randomised.
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    classify(&seed);
    secp.seeded_randomize(&seed);
    let mut result = Ok(0);
    for round in 0..rounds {
        let mut bytes = [0u8; 32];
        rng.fill_bytes(&mut bytes);
        let (Ok(secret), Ok(reference)) = (
            secp256k1::SecretKey::from_byte_array(bytes),
            SigningKey::from_bytes(&bytes.into()),
        ) else {
            continue;
        };
        classify(&secret);
        let mut hash = [0u8; 32];
        rng.fill_bytes(&mut hash);
        let recoverable = chainsig_eth::signing::sign_recoverable_in(&secp, &secret, &hash.into());
        declassify(&recoverable);
        let sig = chainsig_eth::signing::signature_of(&recoverable);
        let rs: [u8; 64] = sig.as_bytes()[..64].try_into().expect("65-byte signature");
        let check = Signature::from_slice(&rs)
            .ok()
            .filter(|s| s.normalize_s() == *s)
            .and_then(|s| {
                let id = RecoveryId::new(sig.v(), false);
                VerifyingKey::recover_from_prehash(&hash, &s, id).ok()
            });
        if check.as_ref() != Some(reference.verifying_key()) {
            result = Err(format!(
                "secp256k1 round {round}: k256 does not recover the signer from a low-s signature"
            ));
            break;
        }
        result = result.map(|n| n + 1);
    }
    // SAFETY: made by secp256k1_context_create above; `secp` is not used after this.
    unsafe { ffi::secp256k1_context_destroy(raw) };
    result
}

/// A deliberate leak: a branch on a secret byte and a table lookup at a secret index. Memcheck
/// must report both; the CI step runs this mode and requires the failure.
pub fn self_test_leak() -> u64 {
    static TABLE: [u64; 256] = {
        let mut t = [0u64; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            i += 1;
        }
        t
    };
    let mut secret = [0u8; 32];
    ChaCha20Rng::seed_from_u64(0x1eac).fill_bytes(&mut secret);
    classify(&secret);
    let looked_up = TABLE[usize::from(std::hint::black_box(secret[1]))];
    let branched = if std::hint::black_box(secret[0]) & 1 == 1 {
        std::hint::black_box(looked_up).rotate_left(7)
    } else {
        std::hint::black_box(looked_up ^ 0x55)
    };
    declassify(&branched);
    branched
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outside valgrind the marks do nothing and the checks still sign and verify: what the CI
    /// step relies on apart from memcheck's findings.
    #[test]
    fn checks_sign_and_verify_natively() {
        assert_eq!(sm2_signing(3), Ok(6));
        assert_eq!(secp256k1_signing(3), Ok(3));
        assert_eq!(self_test_leak(), self_test_leak());
    }
}
