//! The kernels' arithmetic compiled for the CPU (kernels/host_shim.cpp, the portable C++ path).
//! Used to build the fixed-base table at run time and, in tests, to check the kernels' verification
//! routine against the Rust reference without a GPU.

use crate::codegen::Words;

mod curves;
mod field_check;
pub mod raw;
pub use curves::{EcdsaHost, HostCurve, Modulus};
pub use field_check::{field_check_compare, field_check_inputs};

/// Window width of G's fixed-base table (signed windows; layout in kernels/ecmult.cuh).
pub const GTABLE_BITS: usize = 13;
/// Window width of a known signer's key table.
pub const KTABLE_BITS: usize = 9;

/// Words of a fixed-base table in signed windows of `bits` bits: ⌈256 / bits⌉ windows of
/// 2^(bits−1) affine points of 16 words.
pub const fn table_words(bits: usize) -> usize {
    256usize.div_ceil(bits) * (1 << (bits - 1)) * 16
}

/// Words in G's table: 20 × 4096 points, 5 MB.
pub const GTABLE_WORDS: usize = table_words(GTABLE_BITS);
/// Words in a key table: 29 × 256 points, 464 KB.
pub const KTABLE_WORDS: usize = table_words(KTABLE_BITS);

mod ffi {
    extern "C" {
        pub fn cs_host_verify(
            mode: i32,
            inv: i32,
            compress: i32,
            e: *const u32,
            r: *const u32,
            s: *const u32,
            px: *const u32,
            py: *const u32,
            parity: u32,
            gtab: *const u32,
        ) -> i32;
        pub fn cs_host_verify_lanes2(
            e: *const u32,
            r: *const u32,
            s: *const u32,
            px: *const u32,
            py: *const u32,
            gtab: *const u32,
        ) -> i32;
        pub fn cs_host_verify_lanes4(
            e: *const u32,
            r: *const u32,
            s: *const u32,
            px: *const u32,
            py: *const u32,
            gtab: *const u32,
        ) -> i32;
        pub fn cs_host_mul_count() -> u64;
        pub fn cs_host_mul_count_reset();
        pub fn cs_host_fe_mul(a: *const u32, b: *const u32, r: *mut u32);
        pub fn cs_host_reduce_wide(t: *const u32, r: *mut u32);
        pub fn cs_host_fe_mul_small(k: u32, a: *const u32, r: *mut u32) -> i32;
        pub fn cs_host_fe_inv(method: i32, a: *const u32, r: *mut u32);
        pub fn cs_host_decompress(x: *const u32, parity: u32, y: *mut u32) -> i32;
        pub fn cs_host_table_words(key: i32) -> u64;
        pub fn cs_host_build_gtable(out: *mut u32);
        pub fn cs_host_build_key_table(x: *const u32, y: *const u32, out: *mut u32);
        pub fn cs_host_verify_signed(
            e: *const u32,
            r: *const u32,
            s: *const u32,
            gtab: *const u32,
            ktab: *const u32,
        ) -> i32;
        pub fn cs_host_on_curve(x: *const u32, y: *const u32) -> i32;
        pub fn cs_host_mul_window(
            modified: i32,
            t: *const u32,
            px: *const u32,
            py: *const u32,
            x: *mut u32,
            y: *mut u32,
        ) -> i32;
        pub fn cs_host_sm3_e(za: *const u32, msg: *const u8, len: u32, e: *mut u32);
        // kernels/host_ecdsa.cpp, compiled once per ECDSA curve (exports prefixed cs_p256_,
        // cs_k256_): declared for each by ecdsa_ffi! below.
    }
}

/// One signature's operands as the kernel sees them (little-endian words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostRecord {
    pub e: Words,
    pub r: Words,
    pub s: Words,
    pub px: Words,
    pub py: Words,
}

/// e = SM3(Z_A ‖ msg) by the GPU module's hashing routine (kernels/sm3.cuh), as 32 big-endian
/// bytes; `za` is Z_A as bytes.
pub fn sm3_e(za: &[u8; 32], msg: &[u8]) -> [u8; 32] {
    let len = u32::try_from(msg.len()).expect("host SM3 takes messages below 4 GiB");
    let za_words: [u32; 8] = std::array::from_fn(|j| {
        u32::from_be_bytes(za[4 * j..4 * j + 4].try_into().expect("4 bytes"))
    });
    let mut limbs = [0u32; 8];
    // SAFETY: za_words holds 8 words, msg holds len bytes, limbs has room for 8 words.
    unsafe { ffi::cs_host_sm3_e(za_words.as_ptr(), msg.as_ptr(), len, limbs.as_mut_ptr()) };
    crate::codegen::be_from_words(&limbs)
}

/// Runs the kernels' `cs_verify` on the CPU. `gtab` must hold the fixed-base table for the
/// separate and fast modes.
pub fn verify(
    mode: crate::Mode,
    inv: crate::Inversion,
    compress: bool,
    rec: &HostRecord,
    gtab: &[u32],
) -> bool {
    assert_eq!(
        gtab.len(),
        GTABLE_WORDS,
        "fixed-base table has the wrong size"
    );
    let parity = rec.py[0] & 1;
    // SAFETY: every pointer refers to 8 readable words (the table to GTABLE_WORDS), and the C++
    // routine only reads them.
    let v = unsafe {
        ffi::cs_host_verify(
            mode.code(),
            inv.code(),
            i32::from(compress),
            rec.e.as_ptr(),
            rec.r.as_ptr(),
            rec.s.as_ptr(),
            rec.px.as_ptr(),
            rec.py.as_ptr(),
            parity,
            gtab.as_ptr(),
        )
    };
    assert!(v >= 0, "host shim does not know this configuration");
    v == 1
}

/// t·P by the kernels' variable-base window (`mul_window_in`), affine, or None at infinity.
/// `modified` picks the quad kernels' walk in modified Jacobian coordinates instead of the
/// Jacobian walk of the one-thread and pair kernels; t must be in [1, n).
pub fn mul_window(modified: bool, t: &Words, px: &Words, py: &Words) -> Option<(Words, Words)> {
    let (mut x, mut y) = ([0u32; 8], [0u32; 8]);
    // SAFETY: t, px and py are 8 readable words each; x and y have room for 8 words each.
    let finite = unsafe {
        ffi::cs_host_mul_window(
            i32::from(modified),
            t.as_ptr(),
            px.as_ptr(),
            py.as_ptr(),
            x.as_mut_ptr(),
            y.as_mut_ptr(),
        )
    };
    (finite == 1).then_some((x, y))
}

/// The fast mode's verification (full key) as the pair (`lanes` = 2) or quad (4) kernels run it,
/// each lane on an emulated lane of its own with the kernels' shuffles between them
/// (kernels/host_lanes.cpp). None when the lanes reach different verdicts.
pub fn verify_lanes(lanes: u32, rec: &HostRecord, gtab: &[u32]) -> Option<bool> {
    assert_eq!(gtab.len(), GTABLE_WORDS, "G table has the wrong size");
    let f = match lanes {
        2 => ffi::cs_host_verify_lanes2,
        4 => ffi::cs_host_verify_lanes4,
        _ => panic!("the lane kernels have 2 or 4 lanes, not {lanes}"),
    };
    // SAFETY: 8-word operands and a table of GTABLE_WORDS words, only read.
    let v = unsafe {
        f(
            rec.e.as_ptr(),
            rec.r.as_ptr(),
            rec.s.as_ptr(),
            rec.px.as_ptr(),
            rec.py.as_ptr(),
            gtab.as_ptr(),
        )
    };
    (v >= 0).then_some(v == 1)
}

/// Field multiplications done by this thread's host arithmetic since the last reset.
pub fn mul_count() -> u64 {
    // SAFETY: reads a thread-local counter.
    unsafe { ffi::cs_host_mul_count() }
}

/// Resets this thread's multiplication counter.
pub fn mul_count_reset() {
    // SAFETY: writes a thread-local counter.
    unsafe { ffi::cs_host_mul_count_reset() }
}

/// a·b mod p by the kernel routine.
pub fn fe_mul(a: &Words, b: &Words) -> Words {
    let mut r = [0u32; 8];
    // SAFETY: 8-word inputs and output.
    unsafe { ffi::cs_host_fe_mul(a.as_ptr(), b.as_ptr(), r.as_mut_ptr()) };
    r
}

/// k·a mod p for k ∈ {3, 4, 8} and a < p by the point formulas' small-constant product
/// (`fe_mul_small`); None for another k.
pub fn fe_mul_small(k: u32, a: &Words) -> Option<Words> {
    let mut r = [0u32; 8];
    // SAFETY: an 8-word input and output.
    let known = unsafe { ffi::cs_host_fe_mul_small(k, a.as_ptr(), r.as_mut_ptr()) };
    (known == 1).then_some(r)
}

/// t mod p for any 512-bit t (little-endian words) by the kernels' reduction.
pub fn reduce_wide(t: &[u32; 16]) -> Words {
    let mut r = [0u32; 8];
    // SAFETY: a 16-word input and an 8-word output.
    unsafe { ffi::cs_host_reduce_wide(t.as_ptr(), r.as_mut_ptr()) };
    r
}

/// a⁻¹ mod p by the kernel routine (Euclid or Fermat); 0 maps to 0.
pub fn fe_inv(inv: crate::Inversion, a: &Words) -> Words {
    let mut r = [0u32; 8];
    // SAFETY: 8-word input and output.
    unsafe { ffi::cs_host_fe_inv(inv.code(), a.as_ptr(), r.as_mut_ptr()) };
    r
}

/// y for abscissa x and parity, or None when x ≥ p or no point has this x.
pub fn decompress(x: &Words, parity: u32) -> Option<Words> {
    let mut y = [0u32; 8];
    // SAFETY: 8-word input and output.
    let ok = unsafe { ffi::cs_host_decompress(x.as_ptr(), parity, y.as_mut_ptr()) };
    (ok == 1).then_some(y)
}

/// Whether (x, y) is on the curve.
pub fn on_curve(x: &Words, y: &Words) -> bool {
    // SAFETY: 8-word inputs.
    unsafe { ffi::cs_host_on_curve(x.as_ptr(), y.as_ptr()) == 1 }
}

/// The table sizes the C++ side was compiled with: (G's, a key's), in words.
pub fn table_words_compiled() -> (usize, usize) {
    // SAFETY: reads two constants.
    let (g, k) = unsafe { (ffi::cs_host_table_words(0), ffi::cs_host_table_words(1)) };
    (g as usize, k as usize)
}

/// The buffers below are sized by this file's constants and filled by the C++ side: they must agree.
fn assert_table_sizes_agree() {
    assert_eq!(
        table_words_compiled(),
        (GTABLE_WORDS, KTABLE_WORDS),
        "host.rs and ecmult.cuh disagree on the table sizes"
    );
}

/// Builds G's fixed-base table m·2^(13j)·G and checks that every entry lies on the curve.
pub fn build_gtable() -> Result<Vec<u32>, String> {
    assert_table_sizes_agree();
    let mut t = vec![0u32; GTABLE_WORDS];
    // SAFETY: the buffer holds exactly the GTABLE_WORDS words the routine writes.
    unsafe { ffi::cs_host_build_gtable(t.as_mut_ptr()) };
    entries_on_curve(HostCurve::Sm2, &t)
        .map_err(|i| format!("fixed-base table entry {i} is not on the curve"))?;
    Ok(t)
}

/// Builds the fixed-base table m·2^(9j)·P of a known signer's key P = (x, y), refusing a key off
/// the curve, and checks every entry.
pub fn build_key_table(x: &Words, y: &Words) -> Result<Vec<u32>, String> {
    if !on_curve(x, y) {
        return Err("the public key is not a point of the curve".into());
    }
    assert_table_sizes_agree();
    let mut t = vec![0u32; KTABLE_WORDS];
    // SAFETY: 8-word inputs; the buffer holds exactly the KTABLE_WORDS words the routine writes.
    unsafe { ffi::cs_host_build_key_table(x.as_ptr(), y.as_ptr(), t.as_mut_ptr()) };
    entries_on_curve(HostCurve::Sm2, &t)
        .map_err(|i| format!("table entry {i} is not on the curve"))?;
    Ok(t)
}

/// The index of the first table entry off the curve, if any.
fn entries_on_curve(curve: HostCurve, table: &[u32]) -> Result<(), usize> {
    for (i, e) in table.chunks_exact(16).enumerate() {
        let x: Words = e[..8].try_into().expect("8 words");
        let y: Words = e[8..].try_into().expect("8 words");
        if !curve.on_curve(&x, &y) {
            return Err(i);
        }
    }
    Ok(())
}

/// Runs the kernels' `cs_verify_signed` on the CPU: the signature (e, r, s) of the signer whose
/// table [`build_key_table`] made.
pub fn verify_signed(e: &Words, r: &Words, s: &Words, gtab: &[u32], ktab: &[u32]) -> bool {
    assert_eq!(gtab.len(), GTABLE_WORDS, "G table has the wrong size");
    assert_eq!(ktab.len(), KTABLE_WORDS, "key table has the wrong size");
    // SAFETY: 8-word operands and tables of GTABLE_WORDS and KTABLE_WORDS words, only read.
    unsafe {
        ffi::cs_host_verify_signed(
            e.as_ptr(),
            r.as_ptr(),
            s.as_ptr(),
            gtab.as_ptr(),
            ktab.as_ptr(),
        ) == 1
    }
}
