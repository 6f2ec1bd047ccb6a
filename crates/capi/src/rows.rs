//! The packed row format of `cs_verify`, `cs_submit` and `cs_recover_transactions`, and its
//! parser.
//!
//! A batch is one byte buffer of rows back to back, each row self-describing and padded to a
//! multiple of 8 bytes, so a node can append rows to a growing buffer without an index and the
//! library can walk it without allocating. Every length is checked against what remains of the
//! buffer before a byte is read: a row whose lengths run past the end is reported as
//! `CS_REC_TRUNCATED` (the rows after it as `CS_REC_UNREACHED`), never read out of bounds. Fields
//! are checked for what they may hold (reserved bytes zero, known flags, lengths in range), so a
//! misframed buffer is refused record by record rather than silently read as something else.
//!
//! A raw transaction's row (`CS_ALG_ETH_TX`) is framed the same way with no key and no r‖s (the
//! signature is inside the transaction): the header, then the transaction's `msg_len` bytes. One
//! framing ([`frame_rows`]) walks both kinds; each entry point then reads the rows it takes
//! ([`parse_rows`] signatures, [`parse_tx_rows`] transactions) and refuses the other kind as
//! `CS_REC_ALGORITHM`.
//!
//! The format itself, its framing and the reading of one row are `chainsig_core::rows`', which
//! `chainsig verify --rows` reads too; this module adds what is the C ABI's own: the constants
//! under their C names (literals, for cbindgen, each checked against the core's at compile
//! time), the buffer's call-level checks, and record codes.

use crate::status::*;
use chainsig_core::record::VerifyRecord;
use chainsig_core::rows::{self, RowError, RowFault};

/// Bytes of the fixed row header.
pub const CS_ROW_HEADER_LEN: usize = 12;
/// Rows start, and the buffer starts, on multiples of this many bytes.
pub const CS_ROW_ALIGN: usize = 8;
/// The smallest possible row: header, a 33-byte key, r‖s, an empty message, padded.
pub const CS_ROW_MIN_LEN: usize = 112;
/// The smallest possible transaction row: the header of an empty transaction, padded.
pub const CS_TX_ROW_MIN_LEN: usize = 16;
/// Bytes of r‖s: r then s, each 32 bytes big-endian.
pub const CS_SIG_LEN: usize = 64;
/// Bytes of a digest (SM2's e, ECDSA's z).
pub const CS_DIGEST_LEN: usize = 32;
/// The longest SM2 identifier: its bit length must fit ENTL's two bytes (GB/T 32918.2).
pub const CS_MAX_SM2_ID_LEN: usize = 8191;

/// Algorithm byte: SM2 (GB/T 32918.2) on sm2p256v1.
pub const CS_ALG_SM2: u8 = 1;
/// Algorithm byte: ECDSA on secp256k1.
pub const CS_ALG_SECP256K1: u8 = 2;
/// Algorithm byte: ECDSA on NIST P-256.
pub const CS_ALG_P256: u8 = 3;
/// Algorithm byte of a transaction row (`cs_recover_transactions`): a raw signed Ethereum
/// transaction (an EIP-2718 envelope of type 1–4 or a legacy RLP list) of `msg_len` bytes, with
/// no key and no r‖s field; `pubkey_len` and `id_len` are 0, and the only flag is `CS_FLAG_TAG`.
pub const CS_ALG_ETH_TX: u8 = 4;

/// Flag: the payload is a message of `msg_len` bytes, hashed by the library (SM2: SM3(Z_A ‖ M));
/// without it the payload is a 32-byte digest and `msg_len` must be 32.
pub const CS_FLAG_MESSAGE: u8 = 0x01;
/// Flag (ECDSA only): reject s above n/2, as Bitcoin (BIP 62/146) and Ethereum (EIP-2) do.
/// Without it both s and n − s verify.
pub const CS_FLAG_LOW_S: u8 = 0x02;
/// Flag (SM2 only): the row carries the signer's identifier (`id_len` bytes, possibly none).
/// Without it `id_len` must be 0 and the identifier is the standard default "1234567812345678".
pub const CS_FLAG_SM2_ID: u8 = 0x04;
/// Flag: the row ends with an 8-byte tag of the caller's (a transaction index, say) for its own
/// bookkeeping when rows are stored or forwarded; the library frames it and never reads it.
pub const CS_FLAG_TAG: u8 = 0x08;
/// Bits 4-6 of the flags: the hash of a message row, `CS_HASH_*` shifted left by this.
pub const CS_HASH_SHIFT: u8 = 4;
/// Hash: the algorithm's own (SM2: SM3 with Z_A; secp256k1: Keccak-256; P-256: SHA-256).
pub const CS_HASH_DEFAULT: u8 = 0;
/// Hash: SM3 (the only one SM2 accepts).
pub const CS_HASH_SM3: u8 = 1;
/// Hash: Keccak-256 (Ethereum's, not SHA3-256).
pub const CS_HASH_KECCAK256: u8 = 2;
/// Hash: SHA-256.
pub const CS_HASH_SHA256: u8 = 3;
/// Hash: SHA3-256 (FIPS 202).
pub const CS_HASH_SHA3_256: u8 = 4;

// The C names are the format's own values: a change on either side fails the build.
const _: () = {
    assert!(CS_ROW_HEADER_LEN == rows::HEADER_LEN && CS_ROW_ALIGN == rows::ALIGN);
    assert!(CS_ROW_MIN_LEN == rows::MIN_LEN && CS_TX_ROW_MIN_LEN == rows::TX_MIN_LEN);
    assert!(CS_SIG_LEN == rows::SIG_LEN && CS_DIGEST_LEN == rows::DIGEST_LEN);
    assert!(CS_MAX_SM2_ID_LEN == rows::MAX_SM2_ID_LEN);
    assert!(CS_ALG_SM2 == rows::ALG_SM2 && CS_ALG_SECP256K1 == rows::ALG_SECP256K1);
    assert!(CS_ALG_P256 == rows::ALG_P256 && CS_ALG_ETH_TX == rows::ALG_ETH_TX);
    assert!(CS_FLAG_MESSAGE == rows::FLAG_MESSAGE && CS_FLAG_LOW_S == rows::FLAG_LOW_S);
    assert!(CS_FLAG_SM2_ID == rows::FLAG_SM2_ID && CS_FLAG_TAG == rows::FLAG_TAG);
    assert!(CS_HASH_SHIFT == rows::HASH_SHIFT && CS_HASH_DEFAULT == rows::HASH_DEFAULT);
    assert!(CS_HASH_SM3 == rows::HASH_SM3 && CS_HASH_KECCAK256 == rows::HASH_KECCAK256);
    assert!(CS_HASH_SHA256 == rows::HASH_SHA256 && CS_HASH_SHA3_256 == rows::HASH_SHA3_256);
};

/// A row read as `T`, or its record code and why.
pub type RowResult<T> = Result<T, (i32, String)>;

/// One row's outcome: the record and its low-s rule, or a record code and why.
pub type ParsedRow = RowResult<(VerifyRecord, bool)>;

/// One transaction row's outcome: the transaction's bytes (where they lie in the caller's
/// buffer), or a record code and why.
pub type ParsedTxRow<'a> = RowResult<&'a [u8]>;

/// Checks the call-level shape of a rows buffer: alignment, length, row count, for rows of at
/// least `min_row` bytes ([`CS_ROW_MIN_LEN`] for signatures, [`CS_TX_ROW_MIN_LEN`] for
/// transactions).
pub fn check_buffer(
    ptr: *const u8,
    len: usize,
    n_rows: usize,
    min_row: usize,
) -> Result<(), Failure> {
    if ptr.is_null() {
        return Err(Failure::new(CS_ERR_NULL, "rows is NULL"));
    }
    if n_rows == 0 {
        return Err(Failure::new(CS_ERR_ARGUMENT, "n_rows is 0"));
    }
    if (ptr as usize) % CS_ROW_ALIGN != 0 || len % CS_ROW_ALIGN != 0 {
        return Err(Failure::new(
            CS_ERR_ALIGNMENT,
            format!("rows must start on 8 bytes and be a multiple of 8 long (length {len})"),
        ));
    }
    if len / min_row < n_rows {
        return Err(Failure::new(
            CS_ERR_ARGUMENT,
            format!("{len} bytes cannot hold {n_rows} rows (each at least {min_row} bytes)"),
        ));
    }
    Ok(())
}

/// Parses `n_rows` signature rows of `buf`. Fails only when rows end before the buffer does (the
/// count or a length is wrong: which records were meant is unknown).
pub fn parse_rows(buf: &[u8], n_rows: usize) -> Result<Vec<ParsedRow>, Failure> {
    frame_rows(buf, n_rows, parse_row)
}

/// Parses `n_rows` transaction rows of `buf`, as [`parse_rows`] does signature rows; each
/// transaction is borrowed from `buf`, not copied.
pub fn parse_tx_rows(buf: &[u8], n_rows: usize) -> Result<Vec<ParsedTxRow<'_>>, Failure> {
    frame_rows(buf, n_rows, parse_tx_row)
}

/// Walks `n_rows` rows of `buf` by their headers and reads each framed one with `parse`.
fn frame_rows<'a, T>(
    buf: &'a [u8],
    n_rows: usize,
    parse: impl Fn(&'a [u8]) -> RowResult<T>,
) -> Result<Vec<RowResult<T>>, Failure> {
    let mut rows = Vec::with_capacity(n_rows);
    let mut at = 0usize;
    for i in 0..n_rows {
        match rows::frame(&buf[at..]) {
            Some(len) => {
                rows.push(parse(&buf[at..at + len]));
                at += len;
            }
            None => {
                rows.push(Err((
                    CS_REC_TRUNCATED,
                    format!("row {i} at byte {at} runs past the end of the buffer"),
                )));
                for _ in i + 1..n_rows {
                    rows.push(Err((
                        CS_REC_UNREACHED,
                        format!("follows the truncated row {i}"),
                    )));
                }
                return Ok(rows);
            }
        }
    }
    if at != buf.len() {
        return Err(Failure::new(
            CS_ERR_ARGUMENT,
            format!(
                "{} bytes left after row {} (n_rows or a row's lengths are wrong)",
                buf.len() - at,
                n_rows - 1
            ),
        ));
    }
    Ok(rows)
}

/// The record code of a refused row.
fn code(e: RowError) -> (i32, String) {
    let code = match e.fault {
        RowFault::Algorithm => CS_REC_ALGORITHM,
        RowFault::Format => CS_REC_FORMAT,
        RowFault::Length => CS_REC_LENGTH,
    };
    (code, e.why)
}

fn parse_row(row: &[u8]) -> ParsedRow {
    rows::parse_row(row).map_err(code)
}

fn parse_tx_row(row: &[u8]) -> ParsedTxRow<'_> {
    rows::parse_tx_row(row).map_err(code)
}
