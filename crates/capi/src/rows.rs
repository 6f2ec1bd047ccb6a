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
//! Written by hand: the format is ours (it is the C ABI), and the parser is a few bounds-checked
//! slice reads; a serialisation crate would bring a format of its own.

use crate::status::*;
use chainsig_core::record::{Payload, VerifyRecord, DEFAULT_SM2_ID};
use chainsig_core::{Algorithm, HashAlg};

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

const KNOWN_FLAGS: u8 = CS_FLAG_MESSAGE | CS_FLAG_LOW_S | CS_FLAG_SM2_ID | CS_FLAG_TAG | 0x70;

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
        match frame(&buf[at..]) {
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

/// The header's fields.
struct Header {
    alg: u8,
    flags: u8,
    reserved: u16,
    msg_len: usize,
    id_len: usize,
    pubkey_len: usize,
    reserved2: u8,
}

fn header(row: &[u8]) -> Option<Header> {
    let h = row.get(..CS_ROW_HEADER_LEN)?;
    Some(Header {
        alg: h[0],
        flags: h[1],
        reserved: u16::from_le_bytes([h[2], h[3]]),
        msg_len: u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize,
        id_len: u16::from_le_bytes([h[8], h[9]]) as usize,
        pubkey_len: h[10] as usize,
        reserved2: h[11],
    })
}

/// Unpadded length of a row's fields (the tag excluded), with overflow checked. A transaction
/// row has no r‖s field.
fn body_len(h: &Header) -> Option<usize> {
    let sig_len = if h.alg == CS_ALG_ETH_TX {
        0
    } else {
        CS_SIG_LEN
    };
    CS_ROW_HEADER_LEN
        .checked_add(h.pubkey_len)?
        .checked_add(sig_len)?
        .checked_add(h.msg_len)?
        .checked_add(h.id_len)
}

/// The total length of the row at the start of `rest`, when it fits in `rest`.
fn frame(rest: &[u8]) -> Option<usize> {
    let h = header(rest)?;
    let mut len = body_len(&h)?.checked_next_multiple_of(CS_ROW_ALIGN)?;
    if h.flags & CS_FLAG_TAG != 0 {
        len = len.checked_add(8)?;
    }
    (len <= rest.len()).then_some(len)
}

/// Decodes one framed row (`row` is exactly its bytes).
fn parse_row(row: &[u8]) -> ParsedRow {
    let h = header(row).expect("framed rows hold a header");
    let alg = match h.alg {
        CS_ALG_SM2 => Algorithm::Sm2,
        CS_ALG_SECP256K1 => Algorithm::Secp256k1,
        CS_ALG_P256 => Algorithm::P256,
        CS_ALG_ETH_TX => {
            return Err((
                CS_REC_ALGORITHM,
                "a transaction row (CS_ALG_ETH_TX): cs_recover_transactions reads it".into(),
            ))
        }
        other => return Err((CS_REC_ALGORITHM, format!("algorithm byte {other}"))),
    };
    let format_err = |why: String| Err((CS_REC_FORMAT, why));
    let length_err = |why: String| Err((CS_REC_LENGTH, why));
    if h.reserved != 0 || h.reserved2 != 0 {
        return format_err("reserved header bytes are not zero".into());
    }
    if h.flags & !KNOWN_FLAGS != 0 {
        return format_err(format!(
            "unknown flag bits 0x{:02x}",
            h.flags & !KNOWN_FLAGS
        ));
    }
    let low_s = h.flags & CS_FLAG_LOW_S != 0;
    if low_s && alg == Algorithm::Sm2 {
        return format_err("the low-s flag applies to ECDSA only".into());
    }
    if h.pubkey_len != 33 && h.pubkey_len != 65 {
        return length_err(format!("pubkey_len {} (expected 33 or 65)", h.pubkey_len));
    }
    let body = body_len(&h).expect("framed rows have a length");
    let tag = if h.flags & CS_FLAG_TAG != 0 { 8 } else { 0 };
    if row[body..row.len() - tag].iter().any(|&b| b != 0) {
        return format_err("padding bytes are not zero".into());
    }

    let mut at = CS_ROW_HEADER_LEN;
    let mut take = |n: usize| {
        let field = &row[at..at + n];
        at += n;
        field
    };
    let pubkey = take(h.pubkey_len).to_vec();
    let sig = take(CS_SIG_LEN);
    let r: [u8; 32] = sig[..32].try_into().expect("32 bytes");
    let s: [u8; 32] = sig[32..].try_into().expect("32 bytes");
    let payload_bytes = take(h.msg_len);
    let id = take(h.id_len);

    let hash_bits = (h.flags >> CS_HASH_SHIFT) & 0x07;
    let payload = if h.flags & CS_FLAG_MESSAGE != 0 {
        let hash = match hash_bits {
            CS_HASH_DEFAULT => alg.default_hash(),
            CS_HASH_SM3 => HashAlg::Sm3,
            CS_HASH_KECCAK256 => HashAlg::Keccak256,
            CS_HASH_SHA256 => HashAlg::Sha256,
            CS_HASH_SHA3_256 => HashAlg::Sha3_256,
            other => return format_err(format!("unknown hash {other}")),
        };
        if (alg == Algorithm::Sm2) != (hash == HashAlg::Sm3) {
            return format_err(format!("{alg} does not hash with {hash}"));
        }
        Payload::Message {
            msg: payload_bytes.to_vec(),
            hash,
        }
    } else {
        if hash_bits != CS_HASH_DEFAULT {
            return format_err("a hash is named on a digest row".into());
        }
        match <[u8; 32]>::try_from(payload_bytes) {
            Ok(digest) => Payload::Digest(digest),
            Err(_) => {
                return length_err(format!(
                    "msg_len {} of a digest row (expected 32)",
                    h.msg_len
                ))
            }
        }
    };

    let sm2_id = if h.flags & CS_FLAG_SM2_ID != 0 {
        if alg != Algorithm::Sm2 {
            return format_err("only SM2 rows carry an identifier".into());
        }
        if h.id_len > CS_MAX_SM2_ID_LEN {
            return length_err(format!("id_len {} (at most 8191)", h.id_len));
        }
        id.to_vec()
    } else {
        if h.id_len != 0 {
            return format_err(format!("id_len {} without the identifier flag", h.id_len));
        }
        DEFAULT_SM2_ID.to_vec()
    };

    Ok((
        VerifyRecord {
            alg,
            pubkey,
            payload,
            r,
            s,
            sm2_id,
        },
        low_s,
    ))
}

/// Decodes one framed transaction row (`row` is exactly its bytes): the transaction's bytes.
/// Whether they are a transaction is the decoder's question, not the framing's.
fn parse_tx_row(row: &[u8]) -> ParsedTxRow<'_> {
    let h = header(row).expect("framed rows hold a header");
    if h.alg != CS_ALG_ETH_TX {
        return Err((
            CS_REC_ALGORITHM,
            format!(
                "algorithm byte {} (a transaction row is CS_ALG_ETH_TX, 4)",
                h.alg
            ),
        ));
    }
    if h.reserved != 0 || h.reserved2 != 0 {
        return Err((CS_REC_FORMAT, "reserved header bytes are not zero".into()));
    }
    if h.flags & !CS_FLAG_TAG != 0 {
        return Err((
            CS_REC_FORMAT,
            format!(
                "flag bits 0x{:02x} on a transaction row (only CS_FLAG_TAG applies)",
                h.flags & !CS_FLAG_TAG
            ),
        ));
    }
    if h.pubkey_len != 0 || h.id_len != 0 {
        return Err((
            CS_REC_LENGTH,
            format!(
                "pubkey_len {} and id_len {} on a transaction row (expected 0 and 0)",
                h.pubkey_len, h.id_len
            ),
        ));
    }
    let body = body_len(&h).expect("framed rows have a length");
    let tag = if h.flags & CS_FLAG_TAG != 0 { 8 } else { 0 };
    if row[body..row.len() - tag].iter().any(|&b| b != 0) {
        return Err((CS_REC_FORMAT, "padding bytes are not zero".into()));
    }
    Ok(&row[CS_ROW_HEADER_LEN..body])
}
