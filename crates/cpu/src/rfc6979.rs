//! RFC 6979 nonces (HMAC-SHA256 DRBG, §3.2) for secp256k1: the deterministic k of every signature
//! chainsig makes, in lanes ([`crate::lanes::sign_secp256k1`]) and through libsecp256k1 (chainsig-eth
//! hands [`nonce`] to it as its nonce function).
//!
//! Why our own rather than RustCrypto's `rfc6979`: the DRBG keeps each HMAC key's padded state and
//! clones it instead of re-keying per call, and both sides need the retry numbering of
//! libsecp256k1's `nonce_function_rfc6979` (attempt i is the i-th DRBG output). The bytes are
//! libsecp256k1's with no extra data: seed = key ‖ (message mod n), K and V per RFC 6979 §3.2, one
//! more DRBG output per retry. chainsig-eth's tests check them against RustCrypto's `rfc6979` (retries
//! included) and against libsecp256k1's built-in nonce function (whole signatures).

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::Zeroize;

type HmacSha256 = Hmac<Sha256>;

fn keyed(key: &[u8; 32]) -> HmacSha256 {
    <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC takes any key length")
}

fn finish(mac: HmacSha256, out: &mut [u8; 32]) {
    out.copy_from_slice(&mac.finalize().into_bytes());
}

/// The message reduced mod n (RFC 6979's bits2octets for a 256-bit order): a 256-bit value is
/// below 2n, so one conditional subtraction. The message is public.
pub(crate) fn reduce_mod_n(message: &[u8; 32]) -> [u8; 32] {
    let n = &chainsig_core::curve::SECP256K1.n;
    if message < n {
        return *message;
    }
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = i16::from(message[i]) - i16::from(n[i]) - borrow;
        borrow = i16::from(d < 0);
        out[i] = d.rem_euclid(256) as u8;
    }
    out
}

/// Nonce number `attempt` (0 first) for `secret` and the 32-byte message `message`, into `out`.
pub fn nonce(secret: &[u8; 32], message: &[u8; 32], attempt: u32, out: &mut [u8; 32]) {
    let reduced = reduce_mod_n(message);
    let mut k = [0u8; 32];
    let mut v = [1u8; 32];
    for separator in [0u8, 1] {
        let mut mac = keyed(&k);
        mac.update(&v);
        mac.update(&[separator]);
        mac.update(secret);
        mac.update(&reduced);
        finish(mac, &mut k);
        let mut mac = keyed(&k);
        mac.update(&v);
        finish(mac, &mut v);
    }
    let mut state = keyed(&k);
    for i in 0..=attempt {
        if i > 0 {
            let mut mac = state.clone();
            mac.update(&v);
            mac.update(&[0]);
            finish(mac, &mut k);
            state = keyed(&k);
            let mut mac = state.clone();
            mac.update(&v);
            finish(mac, &mut v);
        }
        let mut mac = state.clone();
        mac.update(&v);
        finish(mac, &mut v);
    }
    out.copy_from_slice(&v);
    k.zeroize();
    v.zeroize();
}

#[cfg(test)]
mod tests {
    use super::reduce_mod_n;
    use num_bigint::BigUint;

    #[test]
    fn messages_at_and_above_n_are_reduced() {
        let n = BigUint::from_bytes_be(&chainsig_core::curve::SECP256K1.n);
        for add in [0u32, 1, 5] {
            let m = &n + add;
            let mut bytes = [0u8; 32];
            bytes.copy_from_slice(&m.to_bytes_be());
            assert_eq!(
                BigUint::from_bytes_be(&reduce_mod_n(&bytes)),
                BigUint::from(add)
            );
        }
        let top = [0xffu8; 32];
        let want = (BigUint::from_bytes_be(&top)) % &n;
        assert_eq!(BigUint::from_bytes_be(&reduce_mod_n(&top)), want);
        let small = [7u8; 32];
        assert_eq!(reduce_mod_n(&small), small);
    }
}
