//! Errors that belong to one record: they name the field, and never stop the rest of a batch.
//!
//! Input is hostile until checked, and error messages travel to logs and terminals: a value an
//! error quotes goes through [`quote`], which keeps at most [`QUOTE_LIMIT`] characters of it and
//! says how long the whole was, so a 10 MB bad field makes a one-line error, not a 10 MB one.

use std::fmt;

/// The most characters of an offending value an error message quotes.
pub const QUOTE_LIMIT: usize = 80;

/// The longest reason a [`RecordError`] keeps; longer ones are cut like [`quote`] cuts values.
/// A safety net for reasons built from text this crate does not control (a library's message).
pub const REASON_LIMIT: usize = 240;

/// `value` quoted for an error message: in double quotes with Rust escapes (so control characters
/// and newlines stay visible and on one line), cut once the quoted text reaches [`QUOTE_LIMIT`]
/// characters, with an ellipsis and the value's total length: `"aaaa…" (10000 characters)`.
/// The limit counts escapes as written (`\u{7f}` is six characters), so no value, however
/// strange, makes the quote longer.
pub fn quote(value: &str) -> String {
    let mut quoted = String::from("\"");
    let mut shown = 0;
    for c in value.chars() {
        // As `{:?}` writes a string: a single quote needs no escape between double quotes.
        let escaped = c.escape_debug().to_string();
        let escaped = if c == '\'' { "'" } else { escaped.as_str() };
        let width = escaped.chars().count();
        if shown + width > QUOTE_LIMIT {
            quoted.push_str("\"…");
            return format!("{quoted} ({} characters)", value.chars().count());
        }
        shown += width;
        quoted.push_str(escaped);
    }
    quoted.push('"');
    quoted
}

/// `text` cut after `limit` characters with an ellipsis and the total length; unchanged when
/// shorter. For messages that are already prose, where [`quote`]'s quotes would mislead.
pub fn shorten(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} characters)", &text[..cut], text.chars().count()),
    }
}

/// Why one record could not be checked. Displayed as `field: reason`, e.g.
/// `pubkey: point is not on the curve`. Never carries secret material.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub field: &'static str,
    pub reason: String,
}

impl RecordError {
    /// A record error; a reason longer than [`REASON_LIMIT`] characters is shortened.
    pub fn new(field: &'static str, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        let reason = if reason.len() > REASON_LIMIT {
            shorten(&reason, REASON_LIMIT)
        } else {
            reason
        };
        RecordError { field, reason }
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.field, self.reason)
        }
    }
}

impl std::error::Error for RecordError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_keeps_short_values_and_cuts_long_ones() {
        assert_eq!(quote("rsa"), "\"rsa\"");
        assert_eq!(quote("a\nb"), "\"a\\nb\"");
        for text in ["it's", "tab\there", "quote\"d", "nul\0"] {
            assert_eq!(quote(text), format!("{text:?}"));
        }
        let exact = "x".repeat(QUOTE_LIMIT);
        assert_eq!(quote(&exact), format!("\"{exact}\""));
        let long = "y".repeat(10_000);
        let quoted = quote(&long);
        assert_eq!(
            quoted,
            format!("\"{}\"… (10000 characters)", "y".repeat(QUOTE_LIMIT))
        );
        // Cut on a character boundary, counted in characters.
        let wide = "é".repeat(200);
        assert!(quote(&wide).ends_with("… (200 characters)"));
        // Escapes count as written: 80 DEL characters would be 480 characters escaped.
        let control = format!("0x353{}", "\u{7f}".repeat(80));
        let quoted = quote(&control);
        assert!(quoted.chars().count() <= QUOTE_LIMIT + 30, "{quoted}");
        assert!(quoted.starts_with("\"0x353\\u{7f}"), "{quoted}");
        assert!(quoted.ends_with("… (85 characters)"), "{quoted}");
    }

    #[test]
    fn long_reasons_are_cut() {
        let e = RecordError::new("msg", "z".repeat(5000));
        assert!(e.reason.chars().count() < REASON_LIMIT + 40, "{}", e.reason);
        assert!(e.reason.ends_with("… (5000 characters)"));
        assert_eq!(RecordError::new("msg", "short").reason, "short");
    }
}
