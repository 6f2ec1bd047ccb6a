//! RustCrypto references in chainsig-cuda's word layout, for its kernel tests (feature `cuda`).

use chainsig_cuda::codegen::{words_from_be, Words};

/// A point's affine coordinates as the kernels hold them: 8 little-endian words each.
pub fn affine_words(pt: &sm2::AffinePoint) -> (Words, Words) {
    let (x, y) = crate::signer::sm2_affine(&sm2::ProjectivePoint::from(*pt));
    (words_from_be(&x), words_from_be(&y))
}

/// Entry (j, m) of P's fixed-base table in signed windows of `bits` bits, m·2^(bits·j)·P, by
/// RustCrypto: its index in the table and the 16 words the kernels store there (x, then y).
pub fn table_entry_reference(
    p: &sm2::ProjectivePoint,
    bits: usize,
    j: usize,
    m: usize,
) -> (usize, [u32; 16]) {
    let mut k = sm2::Scalar::from(m as u64);
    for _ in 0..bits * j {
        k = k.double();
    }
    let (x, y) = affine_words(&(*p * k).to_affine());
    let mut words = [0u32; 16];
    words[..8].copy_from_slice(&x);
    words[8..].copy_from_slice(&y);
    (j * (1 << (bits - 1)) + m - 1, words)
}
