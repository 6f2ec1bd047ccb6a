//! RFC 6979 nonces (HMAC-SHA256 DRBG) for secp256k1, handed to libsecp256k1 as its nonce function.
//! The DRBG is chainsig-cpu's [`chainsig_cpu::rfc6979`], which the lane signer uses too; this
//! module is the C adapter.
//!
//! Why our own: libsecp256k1's built-in nonce function runs its portable C SHA-256, about twenty
//! compressions per signature; RustCrypto's `sha2` uses the CPU's SHA extensions where present, and
//! the benchmark (`sign_prehash_libsecp_nonce` against `sign_prehash_context_blinded_per_thread`)
//! measures the difference. The bytes are the same as libsecp256k1's `nonce_function_rfc6979` with
//! no extra data: seed = key ‖ (message mod n), K and V per RFC 6979 §3.2, one more DRBG output per
//! retry. Tests check signatures against libsecp256k1's own nonce function and against k256.

use secp256k1::ffi::types::{c_int, c_uchar, c_uint, c_void};

/// The nonce itself: one implementation for the lanes and for libsecp256k1 (chainsig-cpu's).
pub use chainsig_cpu::rfc6979::nonce;

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
