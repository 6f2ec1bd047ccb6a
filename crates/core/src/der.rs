//! Strict DER for ECDSA/SM2 signatures: `SEQUENCE { INTEGER r, INTEGER s }`.
//!
//! Hand-written because it is a few dozen lines and must be exactly as strict as consensus code
//! demands: minimal lengths (short form below 128, one long-form byte above), minimal integer
//! encodings, no negative integers, no trailing bytes.

/// Why a DER signature was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DerError {
    #[error("not a DER SEQUENCE")]
    NotSequence,
    #[error("DER length is wrong or not minimal")]
    BadLength,
    #[error("not a DER INTEGER")]
    NotInteger,
    #[error("DER INTEGER is empty, negative or not minimally encoded")]
    BadInteger,
    #[error("DER INTEGER is longer than 32 bytes")]
    IntegerTooLarge,
    #[error("trailing bytes after the DER signature")]
    TrailingBytes,
}

/// Parses a strict DER signature into (r, s) as 32-byte big-endian values.
pub fn parse_signature(der: &[u8]) -> Result<([u8; 32], [u8; 32]), DerError> {
    let (tag, body, rest) = read_tlv(der)?;
    if tag != 0x30 {
        return Err(DerError::NotSequence);
    }
    if !rest.is_empty() {
        return Err(DerError::TrailingBytes);
    }
    let (r, body) = read_integer(body)?;
    let (s, body) = read_integer(body)?;
    if !body.is_empty() {
        return Err(DerError::TrailingBytes);
    }
    Ok((r, s))
}

/// Encodes (r, s) as DER (minimal form). Used by `gen` and tests.
pub fn encode_signature(r: &[u8; 32], s: &[u8; 32]) -> Vec<u8> {
    let mut body = Vec::with_capacity(72);
    for v in [r, s] {
        let start = v.iter().position(|&b| b != 0).unwrap_or(31);
        let digits = &v[start..];
        let pad = digits[0] & 0x80 != 0;
        body.push(0x02);
        body.push((digits.len() + pad as usize) as u8);
        if pad {
            body.push(0);
        }
        body.extend_from_slice(digits);
    }
    let mut out = Vec::with_capacity(body.len() + 3);
    out.push(0x30);
    if body.len() >= 0x80 {
        out.push(0x81);
    }
    out.push(body.len() as u8);
    out.extend_from_slice(&body);
    out
}

/// Reads one tag-length-value; returns (tag, value, remaining input).
fn read_tlv(input: &[u8]) -> Result<(u8, &[u8], &[u8]), DerError> {
    let (&tag, rest) = input.split_first().ok_or(DerError::BadLength)?;
    let (&first, rest) = rest.split_first().ok_or(DerError::BadLength)?;
    let (len, rest) = match first {
        0..=0x7f => (first as usize, rest),
        0x81 => {
            let (&len, rest) = rest.split_first().ok_or(DerError::BadLength)?;
            if len < 0x80 {
                return Err(DerError::BadLength); // should have used the short form
            }
            (len as usize, rest)
        }
        _ => return Err(DerError::BadLength), // no signature needs more than one length byte
    };
    if rest.len() < len {
        return Err(DerError::BadLength);
    }
    Ok((tag, &rest[..len], &rest[len..]))
}

fn read_integer(input: &[u8]) -> Result<([u8; 32], &[u8]), DerError> {
    let (tag, value, rest) = read_tlv(input)?;
    if tag != 0x02 {
        return Err(DerError::NotInteger);
    }
    match value {
        [] => return Err(DerError::BadInteger),
        [first, ..] if first & 0x80 != 0 => return Err(DerError::BadInteger),
        [0, second, ..] if second & 0x80 == 0 => return Err(DerError::BadInteger),
        _ => {}
    }
    let digits = if value[0] == 0 && value.len() > 1 {
        &value[1..]
    } else {
        value
    };
    if digits.len() > 32 {
        return Err(DerError::IntegerTooLarge);
    }
    let mut out = [0u8; 32];
    out[32 - digits.len()..].copy_from_slice(digits);
    Ok((out, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn be(v: u64) -> [u8; 32] {
        let mut out = [0u8; 32];
        out[24..].copy_from_slice(&v.to_be_bytes());
        out
    }

    #[test]
    fn round_trip_including_high_bit_and_zero_values() {
        let mut high = [0xffu8; 32];
        high[0] = 0x80;
        for (r, s) in [
            (be(1), be(2)),
            (high, be(0x80)),
            (be(0), high),
            (high, high),
        ] {
            let der = encode_signature(&r, &s);
            assert_eq!(parse_signature(&der), Ok((r, s)));
        }
        // 0x80 needs a padding zero: 02 02 00 80
        assert_eq!(
            encode_signature(&be(0x80), &be(1)),
            vec![0x30, 0x07, 2, 2, 0, 0x80, 2, 1, 1]
        );
    }

    #[test]
    fn rejects_non_strict_forms() {
        let ok = [0x30, 0x06, 2, 1, 1, 2, 1, 2];
        assert!(parse_signature(&ok).is_ok());
        let cases: &[(&[u8], DerError)] = &[
            (&[0x31, 0x06, 2, 1, 1, 2, 1, 2], DerError::NotSequence),
            (&[0x30, 0x07, 2, 1, 1, 2, 1, 2], DerError::BadLength),
            (&[0x30, 0x81, 0x06, 2, 1, 1, 2, 1, 2], DerError::BadLength),
            (&[0x30, 0x06, 3, 1, 1, 2, 1, 2], DerError::NotInteger),
            (&[0x30, 0x06, 2, 1, 0x81, 2, 1, 2], DerError::BadInteger),
            (&[0x30, 0x07, 2, 2, 0, 1, 2, 1, 2], DerError::BadInteger),
            (&[0x30, 0x05, 2, 0, 2, 1, 2], DerError::BadInteger),
            (&[0x30, 0x06, 2, 1, 1, 2, 1, 2, 0], DerError::TrailingBytes),
            (
                &[0x30, 0x08, 2, 1, 1, 2, 1, 2, 5, 0],
                DerError::TrailingBytes,
            ),
            (&[], DerError::BadLength),
        ];
        for (der, want) in cases {
            assert_eq!(parse_signature(der), Err(*want), "{der:02x?}");
        }
        let mut long = vec![0x30, 0x26, 2, 33, 1];
        long.extend_from_slice(&[0u8; 32]);
        long.extend_from_slice(&[2, 1, 1]);
        assert_eq!(parse_signature(&long), Err(DerError::IntegerTooLarge));
    }
}
