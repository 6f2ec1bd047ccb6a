//! Hex fields as the CLI formats define them: upper or lower case, with or without `0x`.

use crate::error::RecordError;

/// Decodes a hex field, naming `field` in the error.
pub fn decode(field: &'static str, text: &str) -> Result<Vec<u8>, RecordError> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    hex::decode(digits).map_err(|e| RecordError::new(field, format!("bad hex ({e})")))
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
