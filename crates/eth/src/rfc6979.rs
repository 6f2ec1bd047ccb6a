//! RFC 6979 nonces (HMAC-SHA256 DRBG) for secp256k1, handed to libsecp256k1 as its nonce function.
//!
//! Why our own: libsecp256k1's built-in nonce function runs its portable C SHA-256, about twenty
//! compressions per signature; RustCrypto's `sha2` uses the CPU's SHA extensions where present, and
//! the benchmark (`sign_prehash_libsecp_nonce` against `sign_prehash_context_blinded_per_thread`)
//! measures the difference. The bytes are the same as libsecp256k1's `nonce_function_rfc6979` with
//! no extra data: seed = key ‖ (message mod n), K and V per RFC 6979 §3.2, one more DRBG output per
//! retry. Tests check signatures against libsecp256k1's own nonce function and against k256.

use alloy_primitives::U256;
use hmac::{Hmac, KeyInit, Mac};
use secp256k1::ffi::types::{c_int, c_uchar, c_uint, c_void};
use sha2::Sha256;
use zeroize::Zeroize;

type HmacSha256 = Hmac<Sha256>;

/// The group order n.
const ORDER: U256 = U256::from_limbs([
    0xbfd2_5e8c_d036_4141,
    0xbaae_dce6_af48_a03b,
    0xffff_ffff_ffff_fffe,
    0xffff_ffff_ffff_ffff,
]);

fn keyed(key: &[u8; 32]) -> HmacSha256 {
    <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC takes any key length")
}

fn finish(mac: HmacSha256, out: &mut [u8; 32]) {
    out.copy_from_slice(&mac.finalize().into_bytes());
}

/// Nonce number `attempt` (0 first) for `secret` and the 32-byte message `message`.
pub fn nonce(secret: &[u8; 32], message: &[u8; 32], attempt: u32, out: &mut [u8; 32]) {
    let mut reduced = U256::from_be_bytes(*message);
    if reduced >= ORDER {
        reduced -= ORDER;
    }
    let reduced: [u8; 32] = reduced.to_be_bytes();
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

/// libsecp256k1's `secp256k1_nonce_function` shape. Refuses (returns 0) extra data or an algorithm
/// tag, which this crate never passes, so it can never silently differ from RFC 6979.
///
/// # Safety
/// libsecp256k1 passes valid pointers: 32 writable bytes at `nonce32`, 32 readable at `msg32` and `key32`.
pub(crate) unsafe extern "C" fn nonce_function(
    nonce32: *mut c_uchar,
    msg32: *const c_uchar,
    key32: *const c_uchar,
    algo16: *const c_uchar,
    data: *mut c_void,
    attempt: c_uint,
) -> c_int {
    if !algo16.is_null() || !data.is_null() {
        return 0;
    }
    // SAFETY: the pointers come from libsecp256k1's signing call, each for 32 bytes.
    let (out, message, secret) = unsafe {
        (
            &mut *nonce32.cast::<[u8; 32]>(),
            &*msg32.cast::<[u8; 32]>(),
            &*key32.cast::<[u8; 32]>(),
        )
    };
    nonce(secret, message, attempt, out);
    1
}
