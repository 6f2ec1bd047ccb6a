//! chainsig's C ABI: batch signature verification (SM2, secp256k1, P-256) and Ethereum sender
//! recovery (from signatures over digests, or from raw signed transactions) for a blockchain node
//! in C, C++ or Go, in process.
//!
//! The header `include/chainsig.h` is generated from this crate by cbindgen (the test
//! `header_is_current` fails when it drifts); its preamble (in `cbindgen.toml`) documents the row
//! layout, ownership and threading. This file holds the entry points only: each checks its
//! pointers, runs its body under [`status::guard`] (no panic crosses the ABI) and copies results
//! into the caller's buffers. Parsing is in [`rows`], backends and verification in [`context`],
//! submitted batches in [`ticket`].

#![allow(non_camel_case_types)]

pub mod context;
pub mod rows;
pub mod status;
pub mod ticket;

pub use rows::*;
pub use status::*;

use context::Context;
use std::ffi::{c_char, CStr};

/// An open verifier: its backends, known signers and worker threads. Opaque; a handle, not an
/// address, so a closed one is refused rather than read.
pub struct cs_context {
    _opaque: [u8; 0],
}

/// A batch submitted with `cs_submit`. Opaque.
pub struct cs_ticket {
    _opaque: [u8; 0],
}

/// Bytes of one `cs_recover` item: digest (32), r (32), s (32), v (1: 0 or 1), unpadded.
pub const CS_RECOVER_ITEM_LEN: usize = 97;
/// Bytes of one recovered address.
pub const CS_ADDRESS_LEN: usize = 20;
/// Bytes of one recovered public key: uncompressed SEC1 (0x04 ‖ x ‖ y).
pub const CS_PUBKEY_LEN: usize = 65;
/// Bytes of one known signer's key for `cs_load_signers`: uncompressed SEC1.
pub const CS_SIGNER_KEY_LEN: usize = 65;

fn ctx_id(ctx: *const cs_context) -> u64 {
    ctx as usize as u64
}

fn ticket_id(ticket: *const cs_ticket) -> u64 {
    ticket as usize as u64
}

fn null(what: &str) -> Failure {
    Failure::new(CS_ERR_NULL, format!("{what} is NULL"))
}

/// Refuses a bitmap argument (`name`, `words` 64-bit words) too small for a bit per each of the
/// `n` records (`what`: rows or items).
fn bitmap_holds(name: &str, words: usize, n: usize, what: &str) -> Result<(), Failure> {
    if words < n.div_ceil(64) {
        return Err(Failure::new(
            CS_ERR_ARGUMENT,
            format!("{name} {words} is too small for {n} {what}"),
        ));
    }
    Ok(())
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `ptr` is NULL or a NUL-terminated string.
unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(null(what));
    }
    CStr::from_ptr(ptr)
        .to_str()
        .map_err(|_| Failure::new(CS_ERR_ARGUMENT, format!("{what} is not UTF-8")))
}

/// Zeroes the caller's bitmap (every record invalid) so a failed call leaves nothing valid.
///
/// # Safety
/// `bitmap` is NULL or holds `words` words.
unsafe fn clear_bitmap(bitmap: *mut u64, words: usize) {
    if !bitmap.is_null() && words > 0 {
        std::slice::from_raw_parts_mut(bitmap, words).fill(0);
    }
}

/// Copies verdicts into the caller's bitmap and error array.
///
/// # Safety
/// `bitmap` holds `words` words; `errors` is NULL or holds `verified.errors.len()` entries.
unsafe fn deliver(
    verified: &context::Verified,
    bitmap: *mut u64,
    words: usize,
    errors: *mut i32,
) -> Result<Option<String>, Failure> {
    let n = verified.errors.len();
    bitmap_holds("bitmap_words", words, n, "rows")?;
    let out = std::slice::from_raw_parts_mut(bitmap, words);
    out[..verified.bitmap.len()].copy_from_slice(&verified.bitmap);
    if !errors.is_null() {
        std::slice::from_raw_parts_mut(errors, n).copy_from_slice(&verified.errors);
    }
    Ok(verified.note.clone())
}

/// Opens a verifier. `backend` is "auto" (the GPU for large batches when one starts, the CPU
/// otherwise and whenever the GPU fails), "cpu" or "cuda" (the GPU or an error; no fallback).
/// `cuda_config_or_null`: a JSON object of CUDA settings to override, or NULL to read the
/// environment variable CHAINSIG_CUDA_CONFIG; refused with "cpu". On success `*out` is the new
/// context; on failure `*out` is NULL and `cs_last_error(NULL)` says why.
///
/// # Safety
/// `backend` and `cuda_config_or_null` are NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cs_open(
    backend: *const c_char,
    cuda_config_or_null: *const c_char,
    out: *mut *mut cs_context,
) -> i32 {
    guard(0, || {
        if out.is_null() {
            return Err(null("out"));
        }
        *out = std::ptr::null_mut();
        let backend = text(backend, "backend")?;
        let config = match cuda_config_or_null.is_null() {
            true => None,
            false => Some(text(cuda_config_or_null, "cuda_config")?),
        };
        let id = Context::open(backend, config)?;
        *out = id as usize as *mut cs_context;
        Ok(None)
    })
}

/// Closes a context: waits for its submitted batches to finish (their tickets stay valid until
/// freed), then releases its backends. Any later use of `ctx` returns `CS_ERR_CLOSED`.
///
/// # Safety
/// None beyond passing a value `cs_open` returned or NULL; other values are refused.
#[no_mangle]
pub unsafe extern "C" fn cs_close(ctx: *mut cs_context) -> i32 {
    let id = ctx_id(ctx);
    // The context is gone either way: its messages on this thread go too, and a failure is
    // reported where calls without a usable context report theirs.
    status::set_last_error(id, None);
    guard(0, || context::close(id).map(|()| None))
}

/// The calling thread's message for its last failed call on `ctx` (NULL: calls that had no
/// usable context, such as a failed `cs_open` or a call with a closed context), or "" after a
/// success. After a successful `cs_verify` or `cs_wait`, names the first record with an error,
/// if any. Never NULL; valid until this thread's next call with the same context.
///
/// # Safety
/// None.
#[no_mangle]
pub extern "C" fn cs_last_error(ctx: *const cs_context) -> *const c_char {
    status::last_error(ctx_id(ctx))
}

/// A static English description of a status or record code. Never NULL.
#[no_mangle]
pub extern "C" fn cs_status_str(code: i32) -> *const c_char {
    status::describe(code).as_ptr()
}

/// Runs `body` with the context behind `ctx`; a missing context's message goes to the NULL slot.
fn with_context(
    ctx: *const cs_context,
    body: impl FnOnce(&std::sync::Arc<Context>) -> Result<Option<String>, Failure>,
) -> i32 {
    let id = ctx_id(ctx);
    match context::lookup(id) {
        Ok(context) => guard(id, || body(&context)),
        Err(failure) => guard(0, || Err(failure)),
    }
}

/// Verifies `n_rows` packed rows (layout above) in `rows[0..rows_len_bytes]`. Writes verdict i
/// to bit i % 64 of `bitmap_out[i / 64]` (1 = valid; bits past n_rows are 0) and, when
/// `errors_out_or_null` is not NULL, `CS_OK` or a `CS_REC_*` code to its entry i. A record with an
/// error is invalid; it never stops the others. Returns `CS_OK`, or a negative code with every
/// bitmap word zero.
///
/// # Safety
/// `rows` holds `rows_len_bytes` readable bytes, `bitmap_out` `bitmap_words` writable words,
/// `errors_out_or_null` is NULL or holds `n_rows` writable entries.
#[no_mangle]
pub unsafe extern "C" fn cs_verify(
    ctx: *mut cs_context,
    rows: *const u8,
    rows_len_bytes: usize,
    n_rows: usize,
    bitmap_out: *mut u64,
    bitmap_words: usize,
    errors_out_or_null: *mut i32,
) -> i32 {
    clear_bitmap(bitmap_out, bitmap_words);
    with_context(ctx, |context| {
        if bitmap_out.is_null() {
            return Err(null("bitmap_out"));
        }
        rows::check_buffer(rows, rows_len_bytes, n_rows, CS_ROW_MIN_LEN)?;
        bitmap_holds("bitmap_words", bitmap_words, n_rows, "rows")?;
        let bytes = std::slice::from_raw_parts(rows, rows_len_bytes);
        let verified = context.verify(rows::parse_rows(bytes, n_rows)?)?;
        deliver(&verified, bitmap_out, bitmap_words, errors_out_or_null)
    })
}

/// Ethereum sender recovery for `n` items of `CS_RECOVER_ITEM_LEN` bytes (digest ‖ r ‖ s ‖ v,
/// v = y parity 0 or 1: subtract 27, or 35 + 2·chain id, first) in `items[0..items_len_bytes]`.
/// As go-ethereum for transactions: s above n/2 is refused (EIP-2). For item i: bit i of
/// `found_out` is 1 when a signer was found; then `addresses_out[20·i..]` holds its address and,
/// when not NULL, `pubkeys_out_or_null[65·i..]` its uncompressed key; otherwise those bytes are 0.
/// `errors_out_or_null` gets `CS_OK` or `CS_REC_RECOVERY_ID` per item.
///
/// # Safety
/// `items` holds `items_len_bytes` bytes; `addresses_out` 20·n, `pubkeys_out_or_null` (if not
/// NULL) 65·n, `found_out` `found_words` words, `errors_out_or_null` (if not NULL) n entries.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cs_recover(
    ctx: *mut cs_context,
    items: *const u8,
    items_len_bytes: usize,
    n: usize,
    addresses_out: *mut u8,
    pubkeys_out_or_null: *mut u8,
    found_out: *mut u64,
    found_words: usize,
    errors_out_or_null: *mut i32,
) -> i32 {
    clear_bitmap(found_out, found_words);
    with_context(ctx, |context| {
        for (ptr, what) in [
            (items.is_null(), "items"),
            (addresses_out.is_null(), "addresses_out"),
            (found_out.is_null(), "found_out"),
        ] {
            if ptr {
                return Err(null(what));
            }
        }
        if n == 0 {
            return Err(Failure::new(CS_ERR_ARGUMENT, "n is 0"));
        }
        if n.checked_mul(CS_RECOVER_ITEM_LEN) != Some(items_len_bytes) {
            return Err(Failure::new(
                CS_ERR_ARGUMENT,
                format!("items_len_bytes {items_len_bytes} is not {n} × {CS_RECOVER_ITEM_LEN}"),
            ));
        }
        bitmap_holds("found_words", found_words, n, "items")?;
        let batch = context.recover(std::slice::from_raw_parts(items, items_len_bytes))?;
        deliver_recovered(
            &batch,
            addresses_out,
            pubkeys_out_or_null,
            found_out,
            found_words,
            errors_out_or_null,
        );
        Ok(batch.note)
    })
}

/// The senders of `n_rows` raw signed Ethereum transactions in transaction rows (`CS_ALG_ETH_TX`,
/// layout above) in `rows[0..rows_len_bytes]`: EIP-2718 envelopes of types 1–4 (EIP-2930,
/// EIP-1559, EIP-4844 without sidecar, EIP-7702) or legacy transactions with or without EIP-155.
/// With the `cuda` backend (and `auto` for batches of 4096 and more) each transaction is decoded,
/// hashed and recovered on the GPU; the answers, errors included, are the CPU's. For row i: bit i
/// of `found_out` is 1 when the sender was found; then `addresses_out[20·i..]` holds its address
/// and, when not NULL, `pubkeys_out_or_null[65·i..]` its uncompressed key; otherwise those bytes
/// are 0 and `errors_out_or_null[i]`, when not NULL, says why: a row code (`CS_REC_TRUNCATED`,
/// `CS_REC_ALGORITHM`, ...) or a transaction's (`CS_REC_TX_*`). `cs_last_error` then names the
/// first such record and its cause in words.
///
/// # Safety
/// `rows` holds `rows_len_bytes` bytes; `addresses_out` 20·n_rows, `pubkeys_out_or_null` (if not
/// NULL) 65·n_rows, `found_out` `found_words` words, `errors_out_or_null` (if not NULL) n_rows
/// entries.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cs_recover_transactions(
    ctx: *mut cs_context,
    rows: *const u8,
    rows_len_bytes: usize,
    n_rows: usize,
    addresses_out: *mut u8,
    pubkeys_out_or_null: *mut u8,
    found_out: *mut u64,
    found_words: usize,
    errors_out_or_null: *mut i32,
) -> i32 {
    clear_bitmap(found_out, found_words);
    with_context(ctx, |context| {
        for (ptr, what) in [
            (addresses_out.is_null(), "addresses_out"),
            (found_out.is_null(), "found_out"),
        ] {
            if ptr {
                return Err(null(what));
            }
        }
        rows::check_buffer(rows, rows_len_bytes, n_rows, CS_TX_ROW_MIN_LEN)?;
        bitmap_holds("found_words", found_words, n_rows, "rows")?;
        let bytes = std::slice::from_raw_parts(rows, rows_len_bytes);
        let batch = context.recover_transactions(rows::parse_tx_rows(bytes, n_rows)?)?;
        deliver_recovered(
            &batch,
            addresses_out,
            pubkeys_out_or_null,
            found_out,
            found_words,
            errors_out_or_null,
        );
        Ok(batch.note)
    })
}

/// Copies recovered signers into the caller's buffers: the address and (when wanted) key of each
/// one found with its bit set, zeros for the others, and the record codes.
///
/// # Safety
/// As `cs_recover` for `batch.signers.len()` items; `found` holds `found_words` words, enough
/// for them.
unsafe fn deliver_recovered(
    batch: &context::RecoveredBatch,
    addresses_out: *mut u8,
    pubkeys_out_or_null: *mut u8,
    found_out: *mut u64,
    found_words: usize,
    errors_out_or_null: *mut i32,
) {
    let n = batch.signers.len();
    let addresses = std::slice::from_raw_parts_mut(addresses_out, n * CS_ADDRESS_LEN);
    let mut pubkeys = (!pubkeys_out_or_null.is_null())
        .then(|| std::slice::from_raw_parts_mut(pubkeys_out_or_null, n * CS_PUBKEY_LEN));
    let found = std::slice::from_raw_parts_mut(found_out, found_words);
    for (i, signer) in batch.signers.iter().enumerate() {
        let address = &mut addresses[i * CS_ADDRESS_LEN..(i + 1) * CS_ADDRESS_LEN];
        let pubkey = pubkeys
            .as_mut()
            .map(|p| &mut p[i * CS_PUBKEY_LEN..(i + 1) * CS_PUBKEY_LEN]);
        match signer {
            Some(rec) => {
                found[i / 64] |= 1 << (i % 64);
                address.copy_from_slice(&rec.address);
                if let Some(pubkey) = pubkey {
                    pubkey.copy_from_slice(&rec.pubkey);
                }
            }
            None => {
                address.fill(0);
                if let Some(pubkey) = pubkey {
                    pubkey.fill(0);
                }
            }
        }
    }
    if !errors_out_or_null.is_null() {
        std::slice::from_raw_parts_mut(errors_out_or_null, n).copy_from_slice(&batch.errors);
    }
}

/// Queues `n_rows` rows for verification on the context's worker threads and returns at once;
/// the rows are copied, so the buffer may be reused on return. Shape errors (alignment, lengths,
/// NULLs) are reported here; `*out` is then NULL. Any number of tickets may be in flight.
///
/// # Safety
/// As `cs_verify` for `rows`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cs_submit(
    ctx: *mut cs_context,
    rows: *const u8,
    rows_len_bytes: usize,
    n_rows: usize,
    out: *mut *mut cs_ticket,
) -> i32 {
    with_context(ctx, |context| {
        if out.is_null() {
            return Err(null("out"));
        }
        *out = std::ptr::null_mut();
        rows::check_buffer(rows, rows_len_bytes, n_rows, CS_ROW_MIN_LEN)?;
        let copy = std::slice::from_raw_parts(rows, rows_len_bytes).to_vec();
        let id = ticket::submit(ctx_id(ctx), context.clone(), copy, n_rows)?;
        *out = id as usize as *mut cs_ticket;
        Ok(None)
    })
}

/// 1 when the ticket's batch has finished, 0 while it runs, a negative code for a bad ticket.
///
/// # Safety
/// None beyond passing a value `cs_submit` returned or NULL; other values are refused.
#[no_mangle]
pub unsafe extern "C" fn cs_poll(ticket: *mut cs_ticket) -> i32 {
    let mut done = false;
    let code = guard(0, || {
        done = ticket::lookup(ticket_id(ticket))?.is_done();
        Ok(None)
    });
    match code {
        CS_OK => i32::from(done),
        error => error,
    }
}

/// Waits for the ticket's batch and writes its results as `cs_verify` does (`errors_out_or_null`
/// holds the batch's n_rows entries). May be called again; the ticket stays until freed. The
/// message of a failure is `cs_last_error` of the ticket's context.
///
/// # Safety
/// `bitmap_out` holds `bitmap_words` words; `errors_out_or_null` is NULL or holds n_rows entries.
#[no_mangle]
pub unsafe extern "C" fn cs_wait(
    ticket: *mut cs_ticket,
    bitmap_out: *mut u64,
    bitmap_words: usize,
    errors_out_or_null: *mut i32,
) -> i32 {
    clear_bitmap(bitmap_out, bitmap_words);
    let ticket = match ticket::lookup(ticket_id(ticket)) {
        Ok(t) => t,
        Err(failure) => return guard(0, || Err(failure)),
    };
    guard(ticket.ctx, || {
        if bitmap_out.is_null() {
            return Err(null("bitmap_out"));
        }
        let verified = ticket.wait()?;
        deliver(&verified, bitmap_out, bitmap_words, errors_out_or_null)
    })
}

/// Releases a ticket (before or after its batch finishes).
///
/// # Safety
/// None beyond passing a value `cs_submit` returned or NULL; other values are refused.
#[no_mangle]
pub unsafe extern "C" fn cs_ticket_free(ticket: *mut cs_ticket) -> i32 {
    guard(0, || ticket::free(ticket_id(ticket)).map(|()| None))
}

/// Replaces the context's known SM2 signers with `n` keys of `CS_SIGNER_KEY_LEN` bytes
/// (uncompressed SEC1) at `pubkeys`; `n` = 0 (with `pubkeys` NULL or not) clears them. With the
/// CUDA backend, records by these signers are verified through per-key tables, several times as
/// fast; the CPU backend needs nothing, so there the keys are only checked. A key off the curve
/// fails the call (`CS_ERR_ARGUMENT`, naming it) and leaves the previous set in place.
///
/// # Safety
/// `pubkeys` holds 65·n bytes (or n is 0).
#[no_mangle]
pub unsafe extern "C" fn cs_load_signers(
    ctx: *mut cs_context,
    pubkeys: *const u8,
    n: usize,
) -> i32 {
    with_context(ctx, |context| {
        let keys: &[u8] = match (pubkeys.is_null(), n) {
            (_, 0) => &[],
            (true, _) => return Err(null("pubkeys")),
            (false, n) => {
                let len = n
                    .checked_mul(CS_SIGNER_KEY_LEN)
                    .ok_or_else(|| Failure::new(CS_ERR_ARGUMENT, format!("n {n} is too large")))?;
                std::slice::from_raw_parts(pubkeys, len)
            }
        };
        context.load_signers(keys).map(|()| None)
    })
}

/// The library's version, "MAJOR.MINOR.PATCH". Static, never NULL.
#[no_mangle]
pub extern "C" fn cs_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
