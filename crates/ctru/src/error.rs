//! Errors: every one names the field that was wrong, and none carries secret material.

/// What went wrong with an input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A byte string had the wrong length for the parameter set.
    #[error("{field}: expected {expected} bytes, got {got}")]
    WrongLength {
        /// Which input (`pk`, `sk`, `ct`, `seed`, …).
        field: &'static str,
        /// The length the parameter set requires.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A polynomial had the wrong number of coefficients.
    #[error("{field}: expected {expected} coefficients, got {got}")]
    WrongDegree {
        /// Which operand.
        field: &'static str,
        /// n for the parameter set.
        expected: usize,
        /// The number given.
        got: usize,
    },
    /// The small operand of a multiplication is outside the range for which the NTT product is exact.
    #[error(
        "{field}: coefficient magnitude {got} exceeds {limit}, the NTT product would not be exact"
    )]
    SmallOperandOutOfRange {
        /// Which operand.
        field: &'static str,
        /// The largest magnitude allowed.
        limit: i32,
        /// The largest magnitude found.
        got: i32,
    },
    /// No CTRU-Prime parameter set has this n.
    #[error("params: unknown parameter set {0} (expected 653, 761 or 1277)")]
    UnknownParams(String),
}
