//! Hex fields as the CLI formats define them: upper or lower case, with or without `0x`.
//!
//! Decoding is a table lookup per digit, by hand: the hex crate's decoder spent about twenty
//! instructions a digit, the largest cost of reading a record (its keys, message and signature
//! are hundreds of digits). The hex crate still words the errors: a field the table refuses is
//! decoded again by it, so an error names the bad character and its place as it always has.

use crate::error::RecordError;

/// The value of each hex digit, and `0xff` for every other byte.
const DIGIT: [u8; 256] = {
    let mut table = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// Decodes a hex field, naming `field` in the error.
pub fn decode(field: &'static str, text: &str) -> Result<Vec<u8>, RecordError> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if digits.len() % 2 == 0 {
        let mut out = vec![0u8; digits.len() / 2];
        if decode_to(digits.as_bytes(), &mut out) {
            return Ok(out);
        }
    }
    hex::decode(digits).map_err(|e| RecordError::new(field, format!("bad hex ({e})")))
}

/// Decodes pairs of digits into `out` (one byte a pair); false if any byte is not a digit.
fn decode_to(digits: &[u8], out: &mut [u8]) -> bool {
    let mut seen = 0u8;
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let (high, low) = (DIGIT[usize::from(pair[0])], DIGIT[usize::from(pair[1])]);
        seen |= high | low;
        *byte = (high << 4) | (low & 0x0f);
    }
    // Digits are below 16; a non-digit's 0xff sets the high bits.
    seen & 0xf0 == 0
}

/// Decodes a hex field that must be exactly `N` bytes long.
pub fn decode_array<const N: usize>(
    field: &'static str,
    text: &str,
) -> Result<[u8; N], RecordError> {
    exact(field, &decode(field, text)?)
}

/// `bytes` as an array of exactly `N` bytes (a field that arrived as bytes, not hex text), with
/// the same error as [`decode_array`].
pub fn exact<const N: usize>(field: &'static str, bytes: &[u8]) -> Result<[u8; N], RecordError> {
    <[u8; N]>::try_from(bytes)
        .map_err(|_| RecordError::new(field, format!("expected {N} bytes, got {}", bytes.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_case() {
        assert_eq!(decode("f", "0xAbCd").unwrap(), vec![0xab, 0xcd]);
        assert_eq!(decode("f", "abcd").unwrap(), vec![0xab, 0xcd]);
        assert_eq!(decode("f", "").unwrap(), Vec::<u8>::new());
        assert_eq!(
            decode("f", "0123456789abcdefABCDEF").unwrap(),
            hex::decode("0123456789abcdefABCDEF").unwrap()
        );
        // Every byte that is not a digit, in either place of a pair, is refused as the hex
        // crate refuses it.
        for b in 0..=255u8 {
            for text in [format!("1{}", b as char), format!("{}1", b as char)] {
                let want = hex::decode(&text).map_err(|e| format!("f: bad hex ({e})"));
                let got = decode("f", &text).map_err(|e| e.to_string());
                assert_eq!(got, want, "{text:?}");
            }
        }
        assert_eq!(decode("f", "0xabc").unwrap_err().field, "f");
        assert!(decode("sig", "zz")
            .unwrap_err()
            .to_string()
            .starts_with("sig: bad hex"));
        assert_eq!(
            decode_array::<2>("digest", "0x010203")
                .unwrap_err()
                .to_string(),
            "digest: expected 2 bytes, got 3"
        );
    }
}
