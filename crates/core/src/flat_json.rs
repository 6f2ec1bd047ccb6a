//! A scanner for the common shape of a JSON Lines record: one flat object whose members are
//! strings without escapes, `true`, `false`, `null` or small integers. It borrows every string
//! from the line, so a record is read without building a `serde_json::Value` (a map, and a heap
//! string for every key and value).
//!
//! It is written by hand because it is a fast path, not a parser: it accepts a strict subset of
//! JSON (RFC 8259) and answers `None` for anything outside it — an escape, a nested value, a
//! float, a duplicate key, a syntax error — and the caller then reads the line with serde_json as
//! before. So a line the scanner accepts means what serde_json would make of it, and every line
//! it refuses gets serde_json's answer and error, word for word.

/// A member's value, as far as the records use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar<'a> {
    /// A string without escapes or control characters: its text, quotes removed.
    Str(&'a str),
    /// `true`, `false`, `null` or an integer (the records read none of these as a field's text).
    Other,
}

/// Scans `line` as one flat object, calling `member(key, value)` for each member in order; answers
/// `None` when the line is not in the subset above or when `member` answers `None`.
pub fn scan<'a>(
    line: &'a str,
    mut member: impl FnMut(&'a str, Scalar<'a>) -> Option<()>,
) -> Option<()> {
    let bytes = line.as_bytes();
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_space(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return (skip_space(bytes, at + 1) == bytes.len()).then_some(());
    }
    loop {
        let (key, next) = string(line, at)?;
        at = skip_space(bytes, next);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(bytes, at + 1);
        let (value, next) = match bytes.get(at)? {
            b'"' => {
                let (text, next) = string(line, at)?;
                (Scalar::Str(text), next)
            }
            _ => (Scalar::Other, literal(bytes, at)?),
        };
        member(key, value)?;
        at = skip_space(bytes, next);
        match bytes.get(at)? {
            b',' => at = skip_space(bytes, at + 1),
            b'}' => return (skip_space(bytes, at + 1) == bytes.len()).then_some(()),
            _ => return None,
        }
    }
}

/// JSON's whitespace (RFC 8259 §2), from `at` on.
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The string opening at `at`, without its quotes, and the index after its closing quote; `None`
/// for an escape or a control character (which serde_json decodes or refuses).
fn string(line: &str, at: usize) -> Option<(&str, usize)> {
    let bytes = line.as_bytes();
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let rest = &bytes[start..];
    // Eight bytes at a time up to the first word holding a quote, a backslash or a control
    // character, then byte by byte to it.
    let mut len = 0;
    while let Some(word) = rest.get(len..len + 8) {
        if special(u64::from_le_bytes(word.try_into().expect("8 bytes"))) {
            break;
        }
        len += 8;
    }
    while len < rest.len() && !matches!(rest[len], b'"' | b'\\' | 0..=0x1f) {
        len += 1;
    }
    if rest.get(len) != Some(&b'"') {
        return None;
    }
    // `line` is a str and both ends are ASCII quotes, so the slice falls on character boundaries.
    Some((&line[start..start + len], start + len + 1))
}

/// Whether any of the eight bytes of `word` is a quote, a backslash or below 0x20 (the
/// classic has-zero-byte and has-less-than tests on a word: exact as a yes or no).
fn special(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control != 0
}

/// `true`, `false`, `null` or an integer of at most 18 digits (no fraction, no exponent, no
/// leading zero: JSON's grammar, kept where serde_json's value is exact) at `at`; the index
/// after it.
fn literal(bytes: &[u8], at: usize) -> Option<usize> {
    for word in [&b"true"[..], b"false", b"null"] {
        if bytes[at..].starts_with(word) {
            return Some(at + word.len());
        }
    }
    let digits_from = at + usize::from(bytes[at] == b'-');
    let digits = bytes[digits_from..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let leading_zero = digits > 1 && bytes[digits_from] == b'0';
    if digits == 0 || digits > 18 || leading_zero {
        return None;
    }
    let end = digits_from + digits;
    // A fraction or an exponent follows: leave the number to serde_json.
    if matches!(bytes.get(end), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(line: &str) -> Option<Vec<(String, Option<String>)>> {
        let mut out = Vec::new();
        scan(line, |k, v| {
            out.push((
                k.to_string(),
                match v {
                    Scalar::Str(s) => Some(s.to_string()),
                    Scalar::Other => None,
                },
            ));
            Some(())
        })?;
        Some(out)
    }

    #[test]
    fn flat_objects_are_scanned_in_order() {
        let got = members(r#" { "a" : "x y" ,"b":true,"c":-12, "d":null,"e":"é"} "#).unwrap();
        let want = [
            ("a", Some("x y")),
            ("b", None),
            ("c", None),
            ("d", None),
            ("e", Some("é")),
        ];
        assert_eq!(got.len(), want.len());
        for ((k, v), (wk, wv)) in got.iter().zip(want) {
            assert_eq!((k.as_str(), v.as_deref()), (wk, wv));
        }
        assert_eq!(members("{}").unwrap(), vec![]);
    }

    #[test]
    fn everything_outside_the_subset_is_left_to_serde_json() {
        for line in [
            "",
            "[]",
            "{",
            "{}x",
            r#"{"a":"x"}}"#,
            r#"{"a":"x",}"#,
            r#"{"a" "x"}"#,
            r#"{"a":"x\"y"}"#,
            r#"{"a\u0062":"x"}"#,
            "{\"a\":\"x\ty\"}",
            r#"{"a":[1]}"#,
            r#"{"a":{}}"#,
            r#"{"a":1.5}"#,
            r#"{"a":1e3}"#,
            r#"{"a":01}"#,
            r#"{"a":-}"#,
            r#"{"a":tru}"#,
            r#"{"a":1234567890123456789}"#,
            r#"{a:"x"}"#,
            r#"{"a":"x""#,
        ] {
            assert!(members(line).is_none(), "{line:?}");
        }
    }

    #[test]
    fn the_word_test_finds_every_special_byte_in_every_place() {
        for b in 0..=255u8 {
            for place in 0..8 {
                let mut word = [b'a'; 8];
                word[place] = b;
                let want = b == b'"' || b == b'\\' || b < 0x20;
                assert_eq!(special(u64::from_le_bytes(word)), want, "{b:#x} at {place}");
            }
        }
        // Strings longer than a word, with the end in every place.
        for n in 0..20 {
            let text = "x".repeat(n);
            assert_eq!(
                members(&format!(r#"{{"k":"{text}"}}"#)).unwrap()[0]
                    .1
                    .as_deref(),
                Some(text.as_str())
            );
            assert!(members(&format!("{{\"k\":\"{text}\\n\"}}")).is_none());
            assert!(members(&format!("{{\"k\":\"{text}\u{1}\"}}")).is_none());
        }
    }

    #[test]
    fn the_callback_can_refuse() {
        assert!(scan(r#"{"a":"x"}"#, |_, _| None).is_none());
    }
}
