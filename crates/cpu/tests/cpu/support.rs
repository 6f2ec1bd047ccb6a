//! Helpers the lane test modules share.

use chainsig_cpu::lanes;
use num_bigint::BigUint;

/// `v` as 32 big-endian bytes (`v` < 2²⁵⁶).
pub fn be(v: &BigUint) -> [u8; 32] {
    let mut out = [0u8; 32];
    let b = v.to_bytes_be();
    out[32 - b.len()..].copy_from_slice(&b);
    out
}

/// The group order n of `curve`.
pub fn order(curve: &chainsig_core::curve::CurveParams) -> BigUint {
    BigUint::from_bytes_be(&curve.n)
}

/// True, after saying so, where this CPU has no AVX-512 IFMA: the lane tests then skip.
pub fn lanes_missing() -> bool {
    let missing = !lanes::available();
    if missing {
        eprintln!("skipped: this CPU lacks AVX-512 IFMA");
    }
    missing
}
