//! The packed row format: signatures (and raw transactions) as self-describing binary rows, the
//! one record layout of the C ABI (`cs_verify`, `cs_submit`, `cs_recover_transactions`), the Go
//! binding and `chainsig verify --rows`. docs/integration.md describes it for users; this module
//! frames rows ([`frame`]), reads them ([`parse_row`], [`parse_tx_row`]) and writes them
//! ([`push_row`]).
//!
//! A row is a 12-byte header, the fields it announces, zero padding to a multiple of 8 bytes and
//! an optional 8-byte tag. Every length is in the header, before the bytes it covers, so a row is
//! framed by checking its lengths against what remains and never read out of bounds; reserved
//! bytes, padding and unknown flags must be zero, so a misframed buffer is refused record by
//! record instead of being read as other records.
//!
//! Written by hand: the format is ours, and reading it is a few bounds-checked slice reads; a
//! serialisation crate would bring a format of its own.

use crate::algorithm::{Algorithm, HashAlg};
use crate::error::RecordError;
use crate::record::{Payload, VerifyRecord, DEFAULT_SM2_ID};
use std::fmt;

/// Bytes of the fixed row header.
pub const HEADER_LEN: usize = 12;
/// Rows start on multiples of this many bytes (from the start of their buffer or file).
pub const ALIGN: usize = 8;
/// The smallest signature row: header, a 33-byte key, r‖s, an empty message, padded.
pub const MIN_LEN: usize = 112;
/// The smallest transaction row: the header of an empty transaction, padded.
pub const TX_MIN_LEN: usize = 16;
/// Bytes of r‖s: r then s, each 32 bytes big-endian.
pub const SIG_LEN: usize = 64;
/// Bytes of a digest (SM2's e, ECDSA's z).
pub const DIGEST_LEN: usize = 32;
/// The longest SM2 identifier: its bit length must fit ENTL's two bytes (GB/T 32918.2).
pub const MAX_SM2_ID_LEN: usize = 8191;
/// Bytes of the optional tag ([`FLAG_TAG`]).
pub const TAG_LEN: usize = 8;

/// Algorithm byte: SM2 (GB/T 32918.2) on sm2p256v1.
pub const ALG_SM2: u8 = 1;
/// Algorithm byte: ECDSA on secp256k1.
pub const ALG_SECP256K1: u8 = 2;
/// Algorithm byte: ECDSA on NIST P-256.
pub const ALG_P256: u8 = 3;
/// Algorithm byte of a transaction row: a raw signed Ethereum transaction of `msg_len` bytes,
/// no key, no r‖s; `pubkey_len` and `id_len` 0, the only flag [`FLAG_TAG`].
pub const ALG_ETH_TX: u8 = 4;

/// Flag: the payload is a message, hashed by the verifier; without it a 32-byte digest.
pub const FLAG_MESSAGE: u8 = 0x01;
/// Flag (ECDSA only): reject s above n/2 (BIP 62/146, EIP-2).
pub const FLAG_LOW_S: u8 = 0x02;
/// Flag (SM2 only): the row carries the signer's identifier; without it the standard default.
pub const FLAG_SM2_ID: u8 = 0x04;
/// Flag: an 8-byte tag of the caller's ends the row, framed and never read.
pub const FLAG_TAG: u8 = 0x08;
/// Bits 4–6 of the flags: the hash of a message row, a `HASH_*` code shifted left by this.
pub const HASH_SHIFT: u8 = 4;
/// Hash code: the algorithm's own (SM2: SM3 with Z_A; secp256k1: Keccak-256; P-256: SHA-256).
pub const HASH_DEFAULT: u8 = 0;
/// Hash code: SM3 (the only one SM2 accepts).
pub const HASH_SM3: u8 = 1;
/// Hash code: Keccak-256 (Ethereum's, not SHA3-256).
pub const HASH_KECCAK256: u8 = 2;
/// Hash code: SHA-256.
pub const HASH_SHA256: u8 = 3;
/// Hash code: SHA3-256 (FIPS 202).
pub const HASH_SHA3_256: u8 = 4;

const KNOWN_FLAGS: u8 = FLAG_MESSAGE | FLAG_LOW_S | FLAG_SM2_ID | FLAG_TAG | 0x70;

/// What is wrong with a framed row, in the C ABI's three record codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFault {
    /// An algorithm byte the reader does not take (a transaction row where signatures are read,
    /// or the other way round, or an unknown byte).
    Algorithm,
    /// Unknown flag bits, non-zero reserved or padding bytes, a hash the algorithm does not use,
    /// low-s on SM2, an identifier on an ECDSA row.
    Format,
    /// A length out of range: a key neither 33 nor 65 bytes, a digest not 32, an identifier
    /// longer than 8191 bytes, a field too long for its header field (when writing).
    Length,
}

/// A row refused: its fault and why, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    pub fault: RowFault,
    pub why: String,
}

impl RowError {
    fn new(fault: RowFault, why: impl Into<String>) -> Self {
        RowError {
            fault,
            why: why.into(),
        }
    }
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for RowError {}

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
    let h = row.get(..HEADER_LEN)?;
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
    let sig_len = if h.alg == ALG_ETH_TX { 0 } else { SIG_LEN };
    HEADER_LEN
        .checked_add(h.pubkey_len)?
        .checked_add(sig_len)?
        .checked_add(h.msg_len)?
        .checked_add(h.id_len)
}

/// The whole length of the row its header announces, or `None` when there is no whole header.
/// At most 2³² + 2¹⁶ + 352 bytes, whatever the header says.
pub fn announced_len(rest: &[u8]) -> Option<usize> {
    let h = header(rest)?;
    let len = body_len(&h)?.checked_next_multiple_of(ALIGN)?;
    if h.flags & FLAG_TAG != 0 {
        len.checked_add(TAG_LEN)
    } else {
        Some(len)
    }
}

/// The length of the row at the start of `rest`, when it fits in `rest`.
pub fn frame(rest: &[u8]) -> Option<usize> {
    announced_len(rest).filter(|&len| len <= rest.len())
}

/// The padding (and tag) after a row's fields: the padding must be zero.
fn padding_is_zero(h: &Header, row: &[u8], body: usize) -> bool {
    let tag = if h.flags & FLAG_TAG != 0 { TAG_LEN } else { 0 };
    row[body..row.len() - tag].iter().all(|&b| b == 0)
}

/// Decodes one framed signature row (`row` is exactly the bytes [`frame`] gave): the record and
/// its low-s rule.
pub fn parse_row(row: &[u8]) -> Result<(VerifyRecord, bool), RowError> {
    use RowFault::{Format, Length};
    let (Some(h), Some(_)) = (header(row), frame(row)) else {
        return Err(RowError::new(Length, "not a whole row"));
    };
    let alg = match h.alg {
        ALG_SM2 => Algorithm::Sm2,
        ALG_SECP256K1 => Algorithm::Secp256k1,
        ALG_P256 => Algorithm::P256,
        ALG_ETH_TX => {
            return Err(RowError::new(
                RowFault::Algorithm,
                "a transaction row (algorithm byte 4), not a signature",
            ))
        }
        other => {
            return Err(RowError::new(
                RowFault::Algorithm,
                format!("algorithm byte {other}"),
            ))
        }
    };
    if h.reserved != 0 || h.reserved2 != 0 {
        return Err(RowError::new(Format, "reserved header bytes are not zero"));
    }
    if h.flags & !KNOWN_FLAGS != 0 {
        return Err(RowError::new(
            Format,
            format!("unknown flag bits 0x{:02x}", h.flags & !KNOWN_FLAGS),
        ));
    }
    let low_s = h.flags & FLAG_LOW_S != 0;
    if low_s && alg == Algorithm::Sm2 {
        return Err(RowError::new(
            Format,
            "the low-s flag applies to ECDSA only",
        ));
    }
    if h.pubkey_len != 33 && h.pubkey_len != 65 {
        return Err(RowError::new(
            Length,
            format!("pubkey_len {} (expected 33 or 65)", h.pubkey_len),
        ));
    }
    let body = body_len(&h).expect("a framed row has a length");
    if !padding_is_zero(&h, row, body) {
        return Err(RowError::new(Format, "padding bytes are not zero"));
    }

    let mut at = HEADER_LEN;
    let mut take = |n: usize| {
        let field = &row[at..at + n];
        at += n;
        field
    };
    let pubkey = take(h.pubkey_len);
    let sig = take(SIG_LEN);
    let payload_bytes = take(h.msg_len);
    let id = take(h.id_len);

    let hash_code = (h.flags >> HASH_SHIFT) & 0x07;
    let payload = if h.flags & FLAG_MESSAGE != 0 {
        let hash = match hash_code {
            HASH_DEFAULT => alg.default_hash(),
            HASH_SM3 => HashAlg::Sm3,
            HASH_KECCAK256 => HashAlg::Keccak256,
            HASH_SHA256 => HashAlg::Sha256,
            HASH_SHA3_256 => HashAlg::Sha3_256,
            other => return Err(RowError::new(Format, format!("unknown hash {other}"))),
        };
        if (alg == Algorithm::Sm2) != (hash == HashAlg::Sm3) {
            return Err(RowError::new(
                Format,
                format!("{alg} does not hash with {hash}"),
            ));
        }
        Payload::Message {
            msg: payload_bytes.to_vec(),
            hash,
        }
    } else {
        if hash_code != HASH_DEFAULT {
            return Err(RowError::new(Format, "a hash is named on a digest row"));
        }
        match <[u8; 32]>::try_from(payload_bytes) {
            Ok(digest) => Payload::Digest(digest),
            Err(_) => {
                return Err(RowError::new(
                    Length,
                    format!("msg_len {} of a digest row (expected 32)", h.msg_len),
                ))
            }
        }
    };

    let sm2_id = if h.flags & FLAG_SM2_ID != 0 {
        if alg != Algorithm::Sm2 {
            return Err(RowError::new(Format, "only SM2 rows carry an identifier"));
        }
        if h.id_len > MAX_SM2_ID_LEN {
            return Err(RowError::new(
                Length,
                format!("id_len {} (at most {MAX_SM2_ID_LEN})", h.id_len),
            ));
        }
        id.to_vec()
    } else {
        if h.id_len != 0 {
            return Err(RowError::new(
                Format,
                format!("id_len {} without the identifier flag", h.id_len),
            ));
        }
        DEFAULT_SM2_ID.to_vec()
    };

    Ok((
        VerifyRecord {
            alg,
            pubkey: pubkey.to_vec(),
            payload,
            r: sig[..32].try_into().expect("32 bytes"),
            s: sig[32..].try_into().expect("32 bytes"),
            sm2_id,
        },
        low_s,
    ))
}

/// Decodes one framed transaction row: the transaction's bytes, borrowed from `row`. Whether
/// they are a transaction is the decoder's question, not the framing's.
pub fn parse_tx_row(row: &[u8]) -> Result<&[u8], RowError> {
    use RowFault::{Format, Length};
    let (Some(h), Some(_)) = (header(row), frame(row)) else {
        return Err(RowError::new(Length, "not a whole row"));
    };
    if h.alg != ALG_ETH_TX {
        return Err(RowError::new(
            RowFault::Algorithm,
            format!("algorithm byte {} (a transaction row's is 4)", h.alg),
        ));
    }
    if h.reserved != 0 || h.reserved2 != 0 {
        return Err(RowError::new(Format, "reserved header bytes are not zero"));
    }
    if h.flags & !FLAG_TAG != 0 {
        return Err(RowError::new(
            Format,
            format!(
                "flag bits 0x{:02x} on a transaction row (only the tag flag applies)",
                h.flags & !FLAG_TAG
            ),
        ));
    }
    if h.pubkey_len != 0 || h.id_len != 0 {
        return Err(RowError::new(
            Length,
            format!(
                "pubkey_len {} and id_len {} on a transaction row (expected 0 and 0)",
                h.pubkey_len, h.id_len
            ),
        ));
    }
    let body = body_len(&h).expect("a framed row has a length");
    if !padding_is_zero(&h, row, body) {
        return Err(RowError::new(Format, "padding bytes are not zero"));
    }
    Ok(&row[HEADER_LEN..body])
}

/// Rows of one low-s rule, with their places among all rows: what a verifier taking one rule a
/// call ([`crate::Registry`]'s `verify`) is given.
#[derive(Debug, Default)]
pub struct RuleGroup {
    /// The rows' indices, ascending.
    pub indices: Vec<usize>,
    pub records: Vec<Result<VerifyRecord, RecordError>>,
}

/// Parsed rows sorted by their low-s rule, `[without, with]`, each in row order; a row that did
/// not parse goes to `refused` with its index instead.
pub fn group_by_low_s<E>(
    parsed: impl IntoIterator<Item = Result<(VerifyRecord, bool), E>>,
    mut refused: impl FnMut(usize, E),
) -> [RuleGroup; 2] {
    let mut groups: [RuleGroup; 2] = Default::default();
    for (i, row) in parsed.into_iter().enumerate() {
        match row {
            Ok((record, low_s)) => {
                let group = &mut groups[usize::from(low_s)];
                group.indices.push(i);
                group.records.push(Ok(record));
            }
            Err(e) => refused(i, e),
        }
    }
    groups
}

/// The hash code of a message row's hash: its own for the algorithm's default (so a row says
/// no more than it must), else the hash's code.
fn hash_code(alg: Algorithm, hash: HashAlg) -> u8 {
    if hash == alg.default_hash() {
        return HASH_DEFAULT;
    }
    match hash {
        HashAlg::Sm3 => HASH_SM3,
        HashAlg::Keccak256 => HASH_KECCAK256,
        HashAlg::Sha256 => HASH_SHA256,
        HashAlg::Sha3_256 => HASH_SHA3_256,
    }
}

/// Appends `record` as one row (with `low_s`, ECDSA only) to `out`, which must hold whole rows
/// (its length a multiple of 8). Refuses what a row cannot say: a key longer than 255 bytes, a
/// message of 2³² bytes or more, an identifier past [`MAX_SM2_ID_LEN`], low-s on SM2; a key
/// that is not 33 or 65 bytes is written as it is (the reader refuses it, as a verifier would).
pub fn push_row(out: &mut Vec<u8>, record: &VerifyRecord, low_s: bool) -> Result<(), RowError> {
    use RowFault::{Format, Length};
    debug_assert!(out.len() % ALIGN == 0, "rows start on 8 bytes");
    let alg = match record.alg {
        Algorithm::Sm2 => ALG_SM2,
        Algorithm::Secp256k1 => ALG_SECP256K1,
        Algorithm::P256 => ALG_P256,
    };
    let pubkey_len = u8::try_from(record.pubkey.len())
        .map_err(|_| RowError::new(Length, format!("a {}-byte key", record.pubkey.len())))?;
    let (mut flags, payload): (u8, &[u8]) = match &record.payload {
        Payload::Digest(digest) => (0, digest),
        Payload::Message { msg, hash } => (
            FLAG_MESSAGE | (hash_code(record.alg, *hash) << HASH_SHIFT),
            msg,
        ),
    };
    let msg_len = u32::try_from(payload.len())
        .map_err(|_| RowError::new(Length, format!("a {}-byte message", payload.len())))?;
    if low_s {
        if record.alg == Algorithm::Sm2 {
            return Err(RowError::new(
                Format,
                "the low-s flag applies to ECDSA only",
            ));
        }
        flags |= FLAG_LOW_S;
    }
    let id: &[u8] = if record.alg == Algorithm::Sm2 && record.sm2_id != DEFAULT_SM2_ID {
        if record.sm2_id.len() > MAX_SM2_ID_LEN {
            return Err(RowError::new(
                Length,
                format!("a {}-byte identifier", record.sm2_id.len()),
            ));
        }
        flags |= FLAG_SM2_ID;
        &record.sm2_id
    } else {
        &[]
    };
    out.extend_from_slice(&[alg, flags, 0, 0]);
    out.extend_from_slice(&msg_len.to_le_bytes());
    out.extend_from_slice(&(id.len() as u16).to_le_bytes());
    out.extend_from_slice(&[pubkey_len, 0]);
    out.extend_from_slice(&record.pubkey);
    out.extend_from_slice(&record.r);
    out.extend_from_slice(&record.s);
    out.extend_from_slice(payload);
    out.extend_from_slice(id);
    out.resize(out.len().next_multiple_of(ALIGN), 0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(alg: Algorithm, payload: Payload, id: &[u8]) -> VerifyRecord {
        VerifyRecord {
            alg,
            pubkey: vec![2; 33],
            payload,
            r: [7; 32],
            s: [9; 32],
            sm2_id: id.to_vec(),
        }
    }

    #[test]
    fn rows_written_read_back_as_the_same_records() {
        let message = |hash| Payload::Message {
            msg: b"abc".to_vec(),
            hash,
        };
        let cases = [
            (
                record(Algorithm::Sm2, message(HashAlg::Sm3), DEFAULT_SM2_ID),
                false,
            ),
            (
                record(Algorithm::Sm2, message(HashAlg::Sm3), b"alice"),
                false,
            ),
            (record(Algorithm::Sm2, Payload::Digest([1; 32]), b""), false),
            (
                record(
                    Algorithm::Secp256k1,
                    message(HashAlg::Sha256),
                    DEFAULT_SM2_ID,
                ),
                true,
            ),
            (
                record(Algorithm::P256, Payload::Digest([3; 32]), DEFAULT_SM2_ID),
                false,
            ),
        ];
        for (rec, low_s) in cases {
            let mut out = Vec::new();
            push_row(&mut out, &rec, low_s).unwrap();
            assert_eq!(out.len() % ALIGN, 0);
            assert_eq!(frame(&out), Some(out.len()));
            let (back, back_low_s) = parse_row(&out).unwrap();
            assert_eq!(back_low_s, low_s);
            // ECDSA rows carry no identifier: they read back with the default one.
            let want_id = if rec.alg == Algorithm::Sm2 {
                rec.sm2_id.clone()
            } else {
                DEFAULT_SM2_ID.to_vec()
            };
            assert_eq!(back.sm2_id, want_id);
            assert_eq!(
                (back.alg, &back.pubkey, &back.payload, back.r, back.s),
                (rec.alg, &rec.pubkey, &rec.payload, rec.r, rec.s)
            );
        }
    }

    #[test]
    fn a_row_cut_anywhere_does_not_frame() {
        let mut out = Vec::new();
        let rec = record(Algorithm::Sm2, Payload::Digest([1; 32]), DEFAULT_SM2_ID);
        push_row(&mut out, &rec, false).unwrap();
        for cut in 0..out.len() {
            assert_eq!(frame(&out[..cut]), None, "cut at {cut}");
        }
        assert!(
            push_row(&mut Vec::new(), &rec, true).is_err(),
            "low-s on SM2"
        );
    }
}
