//! Errors that belong to one record: they name the field, and never stop the rest of a batch.

use std::fmt;

/// Why one record could not be checked. Displayed as `field: reason`, e.g.
/// `pubkey: point is not on the curve`. Never carries secret material.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub field: &'static str,
    pub reason: String,
}

impl RecordError {
    pub fn new(field: &'static str, reason: impl Into<String>) -> Self {
        RecordError {
            field,
            reason: reason.into(),
        }
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
