//! Raw signed transactions as a stream of records: the sender of each ([`recover_raw`]), every
//! refusal sorted into a [`TxFault`] that a device decoder can report as the same number, and the
//! length-prefixed binary format ([`frames`]) that `chainsig recover --raw` reads.
//!
//! [`recover_raw`] is the CPU reference for any other decoder of raw transactions (the GPU's,
//! `chainsig-cuda`'s `ethtx.cuh`): alloy decodes the EIP-2718 envelope exactly as
//! [`crate::decode_raw`] does, and the fault is read off alloy's error. alloy folds every failure of
//! an untyped (legacy) transaction into "unexpected type 0", so for those the legacy decoder is
//! run once more on its own to learn the real reason (a bad `v` or malformed RLP).

pub mod corpus;
pub mod frames;

use alloy_consensus::transaction::RlpEcdsaDecodableTx;
use alloy_consensus::TxLegacy;
use alloy_eips::eip2718::Eip2718Error;
use alloy_primitives::{Signature, B256, U256};
use chainsig_core::Recovered;
use std::fmt;

use crate::signing::{recover_prehash_any_s, HALF_ORDER};
use crate::tx::decode::open_envelope;
use crate::EthError;

/// The largest raw transaction taken, in bytes: geth's transaction-pool limit (`txMaxSize`,
/// 4 × 32 KiB). A blob transaction's network form with even one blob is larger; its signed form
/// (what senders are recovered from) is not.
pub const MAX_RAW_TX_LEN: usize = 128 * 1024;

/// Why no sender comes from a raw transaction. The numbers are shared with the device decoder
/// (`crates/cuda/kernels/ethtx.cuh`), which reports them per record; 0 there means a sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum TxFault {
    /// No bytes at all.
    Empty = 1,
    /// Longer than [`MAX_RAW_TX_LEN`].
    TooLong = 2,
    /// A type byte other than 1–4 (EIP-2718 types; a `0x00` prefix is not legacy's encoding).
    UnsupportedType = 3,
    /// The RLP is malformed or non-canonical, or a field does not fit its type.
    MalformedRlp = 4,
    /// Bytes left after the transaction.
    TrailingBytes = 5,
    /// Legacy `v` neither 27, 28 nor an EIP-155 value (35 + 2 chain id + parity), or a typed
    /// transaction's `y_parity` neither 0 nor 1.
    BadV = 6,
    /// s above n/2 (refused since Homestead, EIP-2).
    HighS = 7,
    /// r or s zero or not below the group order n.
    BadRs = 8,
    /// r is no point's x: no public key recovers.
    NoKey = 9,
}

impl TxFault {
    /// Every fault, in code order.
    pub const ALL: [TxFault; 9] = [
        TxFault::Empty,
        TxFault::TooLong,
        TxFault::UnsupportedType,
        TxFault::MalformedRlp,
        TxFault::TrailingBytes,
        TxFault::BadV,
        TxFault::HighS,
        TxFault::BadRs,
        TxFault::NoKey,
    ];

    /// The number a device decoder reports for this fault.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The fault a device decoder's number names (`None` for 0, a sender, and unknown numbers).
    pub fn from_code(code: u32) -> Option<TxFault> {
        TxFault::ALL.into_iter().find(|f| f.code() == code)
    }
}

/// A raw transaction refused: its [`TxFault`] and the message the CLI and service print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawTxError {
    /// Why, as a number a device decoder shares.
    pub fault: TxFault,
    field: &'static str,
    message: String,
}

impl RawTxError {
    fn new(fault: TxFault, field: &'static str, message: impl Into<String>) -> Self {
        RawTxError {
            fault,
            field,
            message: message.into(),
        }
    }
}

impl RawTxError {
    pub(crate) fn empty() -> Self {
        RawTxError::new(TxFault::Empty, "tx", "empty")
    }

    pub(crate) fn trailing(count: usize) -> Self {
        RawTxError::new(
            TxFault::TrailingBytes,
            "tx",
            format!("{count} trailing bytes after the transaction"),
        )
    }
}

impl fmt::Display for RawTxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for RawTxError {}

impl From<RawTxError> for EthError {
    fn from(e: RawTxError) -> Self {
        EthError::field(e.field, e.message)
    }
}

/// The refusal of an envelope alloy would not decode, sorted into its fault.
pub(crate) fn decode_fault(raw: &[u8], error: Eip2718Error) -> RawTxError {
    let not_decoded = |fault, detail: &dyn fmt::Display| {
        RawTxError::new(fault, "tx", format!("does not decode: {detail}"))
    };
    if raw.first().is_some_and(|&b| b >= 0x80) {
        // No type byte (EIP-2718 types are 0x00-0x7f), so legacy: alloy's envelope reports any
        // failure there as "unexpected type 0"; the legacy decoder alone says what it was.
        let mut rest = raw;
        return match TxLegacy::rlp_decode_signed(&mut rest) {
            Err(e) => not_decoded(rlp_fault(&e), &e),
            Ok(_) => not_decoded(TxFault::MalformedRlp, &error),
        };
    }
    match &error {
        Eip2718Error::UnexpectedType(_) => not_decoded(TxFault::UnsupportedType, &error),
        Eip2718Error::RlpError(alloy_rlp::Error::Custom("unexpected tx type")) => {
            not_decoded(TxFault::UnsupportedType, &error)
        }
        Eip2718Error::RlpError(e) => not_decoded(rlp_fault(e), &error),
        // Eip2718Error is non-exhaustive; a new kind of refusal is at least not a sender.
        #[allow(unreachable_patterns)]
        _ => not_decoded(TxFault::MalformedRlp, &error),
    }
}

/// The fault of an RLP error from a transaction's decoder: the two parity refusals (alloy's
/// legacy `v` and typed `y_parity` checks) are a bad v, everything else malformed RLP.
fn rlp_fault(e: &alloy_rlp::Error) -> TxFault {
    match e {
        alloy_rlp::Error::Custom("invalid parity value")
        | alloy_rlp::Error::Custom("invalid bool value, must be 0 or 1") => TxFault::BadV,
        _ => TxFault::MalformedRlp,
    }
}

/// The signer of `hash` under an Ethereum transaction's signature, with the refusals sorted:
/// high s first (as [`crate::signing::recover_prehash`] checks it), then r and s in range, then
/// the recovery itself.
fn signer(hash: &B256, signature: &Signature) -> Result<Recovered, RawTxError> {
    if signature.s() > HALF_ORDER {
        return Err(RawTxError::new(
            TxFault::HighS,
            "s",
            "above n/2 (not low-s)",
        ));
    }
    let zero = U256::ZERO;
    if signature.r() == zero || signature.s() == zero || signature.r() >= secp256k1_order() {
        return Err(RawTxError::new(
            TxFault::BadRs,
            "signature",
            "r or s is zero or not below the group order",
        ));
    }
    let (pubkey, address) = recover_prehash_any_s(hash, signature)
        .map_err(|e| RawTxError::new(TxFault::NoKey, "signature", e.message().to_owned()))?;
    Ok(Recovered {
        pubkey,
        address: address.into_array(),
    })
}

/// secp256k1's group order n.
fn secp256k1_order() -> U256 {
    U256::from_limbs([
        0xbfd2_5e8c_d036_4141,
        0xbaae_dce6_af48_a03b,
        0xffff_ffff_ffff_fffe,
        0xffff_ffff_ffff_ffff,
    ])
}

/// The sender of one raw signed transaction (an EIP-2718 envelope of type 1–4 or a legacy RLP
/// list), or why there is none. Records above [`MAX_RAW_TX_LEN`] bytes are refused unread.
pub fn recover_raw(raw: &[u8]) -> Result<Recovered, RawTxError> {
    if raw.len() > MAX_RAW_TX_LEN {
        return Err(RawTxError::new(
            TxFault::TooLong,
            "tx",
            format!("{} bytes, above the limit of {MAX_RAW_TX_LEN}", raw.len()),
        ));
    }
    let (_, _, signing_hash, signature) = open_envelope(raw)?;
    signer(&signing_hash, &signature)
}

#[cfg(test)]
mod tests;
