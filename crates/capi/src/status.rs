//! Status codes, the per-thread last-error messages, and the guard every entry point runs in.
//!
//! A call returns one `int32_t`: `CS_OK`, or a negative code for a call that did nothing useful.
//! Per-record outcomes go into the caller's `errors_out` array as `CS_OK` or a positive code; such
//! a record's verdict bit is 0. Messages are kept per calling thread and per context, so threads
//! sharing a context never read each other's (or a half-written) message.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Success; for a record: its verdict bit is meaningful.
pub const CS_OK: i32 = 0;

/// A required pointer argument was NULL.
pub const CS_ERR_NULL: i32 = -1;
/// An argument is out of range: zero rows, an unknown backend name, an output too small, a
/// buffer length that does not match the rows in it. `cs_last_error` names it.
pub const CS_ERR_ARGUMENT: i32 = -2;
/// The rows pointer is not 8-byte aligned, or the buffer length is not a multiple of 8.
pub const CS_ERR_ALIGNMENT: i32 = -3;
/// The context (or ticket) is NULL, closed or was never opened.
pub const CS_ERR_CLOSED: i32 = -4;
/// The backend asked for is unavailable, or failed (and was not `auto`, which falls back to the
/// CPU); nothing was verified.
pub const CS_ERR_BACKEND: i32 = -5;
/// An internal error (a caught panic); the call had no effect on its outputs beyond zeroing them.
pub const CS_ERR_INTERNAL: i32 = -6;

/// Record: the row runs past the end of the buffer (its lengths claim more bytes than remain).
pub const CS_REC_TRUNCATED: i32 = 1;
/// Record: a row before it was truncated, so where this one starts is unknown.
pub const CS_REC_UNREACHED: i32 = 2;
/// Record: the algorithm byte is not one the call takes: `CS_ALG_SM2`, `CS_ALG_SECP256K1` or
/// `CS_ALG_P256` for `cs_verify` and `cs_submit`, `CS_ALG_ETH_TX` for `cs_recover_transactions`.
pub const CS_REC_ALGORITHM: i32 = 3;
/// Record: unknown flag bits, non-zero reserved or padding bytes, a hash the algorithm does not
/// use, low-s on SM2, or an identifier on an ECDSA row.
pub const CS_REC_FORMAT: i32 = 4;
/// Record: a length out of range (key not 33 or 65 bytes, digest not 32, identifier over 8191).
pub const CS_REC_LENGTH: i32 = 5;
/// Record: the public key is not a point of the curve (or has a bad SEC1 prefix).
pub const CS_REC_PUBKEY: i32 = 6;
/// Recovery record: v is not 0 or 1.
pub const CS_REC_RECOVERY_ID: i32 = 7;
/// Transaction record: no bytes.
pub const CS_REC_TX_EMPTY: i32 = 11;
/// Transaction record: longer than 131072 bytes (geth's transaction-pool limit).
pub const CS_REC_TX_TOO_LONG: i32 = 12;
/// Transaction record: a type byte other than 1–4 (EIP-2718), or a first byte that is neither a
/// type nor a legacy RLP list.
pub const CS_REC_TX_TYPE: i32 = 13;
/// Transaction record: malformed or non-canonical RLP, or a field that does not fit its type.
pub const CS_REC_TX_RLP: i32 = 14;
/// Transaction record: bytes left after the transaction.
pub const CS_REC_TX_TRAILING: i32 = 15;
/// Transaction record: a legacy `v` neither 27, 28 nor an EIP-155 value, or a typed
/// transaction's `y_parity` neither 0 nor 1.
pub const CS_REC_TX_V: i32 = 16;
/// Transaction record: s above n/2, refused since Homestead (EIP-2).
pub const CS_REC_TX_HIGH_S: i32 = 17;
/// Transaction record: r or s zero or not below the group order.
pub const CS_REC_TX_RS: i32 = 18;
/// Transaction record: no public key recovers from the signature (r is no point's x).
pub const CS_REC_TX_NO_KEY: i32 = 19;

/// The English name of a status or record code, for logs; a static string, never NULL.
pub(crate) fn describe(code: i32) -> &'static std::ffi::CStr {
    match code {
        CS_OK => c"ok",
        CS_ERR_NULL => c"a required pointer was NULL",
        CS_ERR_ARGUMENT => c"an argument is out of range",
        CS_ERR_ALIGNMENT => c"rows buffer not 8-byte aligned or its length not a multiple of 8",
        CS_ERR_CLOSED => c"context or ticket is NULL, closed or unknown",
        CS_ERR_BACKEND => c"backend unavailable or failed",
        CS_ERR_INTERNAL => c"internal error",
        CS_REC_TRUNCATED => c"row truncated by the end of the buffer",
        CS_REC_UNREACHED => c"row after a truncated row",
        CS_REC_ALGORITHM => c"unknown algorithm, or a row of the other kind",
        CS_REC_FORMAT => c"malformed row (flags, reserved or padding bytes, hash)",
        CS_REC_LENGTH => c"length out of range",
        CS_REC_PUBKEY => c"public key not on the curve",
        CS_REC_RECOVERY_ID => c"recovery id not 0 or 1",
        CS_REC_TX_EMPTY => c"transaction: empty",
        CS_REC_TX_TOO_LONG => c"transaction: above 131072 bytes",
        CS_REC_TX_TYPE => c"transaction: unsupported type",
        CS_REC_TX_RLP => c"transaction: malformed RLP or a field out of range",
        CS_REC_TX_TRAILING => c"transaction: trailing bytes after it",
        CS_REC_TX_V => c"transaction: v or y_parity out of range",
        CS_REC_TX_HIGH_S => c"transaction: s above n/2 (EIP-2)",
        CS_REC_TX_RS => c"transaction: r or s zero or not below the group order",
        CS_REC_TX_NO_KEY => c"transaction: no public key recovers from the signature",
        _ => c"unknown code",
    }
}

/// Why a call failed: its code and a message for `cs_last_error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
}

thread_local! {
    /// The calling thread's last message for each context id (0: calls without a usable context).
    static LAST_ERROR: RefCell<HashMap<u64, CString>> = RefCell::new(HashMap::new());
}

/// Replaces the calling thread's message for context `ctx` (`None` clears it).
pub(crate) fn set_last_error(ctx: u64, message: Option<&str>) {
    LAST_ERROR.with(|map| {
        let mut map = map.borrow_mut();
        match message {
            // An interior NUL cannot come from our messages; replaced rather than lost.
            Some(text) => {
                let text = CString::new(text.replace('\0', "?")).expect("NULs replaced");
                map.insert(ctx, text);
            }
            None => {
                map.remove(&ctx);
            }
        }
    });
}

/// The calling thread's last message for context `ctx`, or "" (static). The pointer stays valid
/// until this thread's next chainsig call with the same context.
pub(crate) fn last_error(ctx: u64) -> *const c_char {
    LAST_ERROR.with(|map| match map.borrow().get(&ctx) {
        // The CString lives in the thread-local map until replaced; its buffer does not move.
        Some(text) => text.as_ptr(),
        None => c"".as_ptr(),
    })
}

/// Runs an entry point's body: catches panics, records the message under `ctx`, returns the code.
pub(crate) fn guard(ctx: u64, body: impl FnOnce() -> Result<Option<String>, Failure>) -> i32 {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(note)) => {
            set_last_error(ctx, note.as_deref());
            CS_OK
        }
        Ok(Err(failure)) => {
            set_last_error(ctx, Some(&failure.message));
            failure.code
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(ctx, Some(&format!("internal error: {}", clip(&what))));
            CS_ERR_INTERNAL
        }
    }
}

/// At most 80 characters of `text`, marked when cut (errors never echo long input).
pub(crate) fn clip(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(80).collect();
    if chars.next().is_some() {
        head + "…"
    } else {
        head
    }
}
