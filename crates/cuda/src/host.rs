//! The kernels' arithmetic compiled for the CPU (kernels/host_shim.cpp, the portable C++ path).
//! Used to build the fixed-base table at run time and, in tests, to check the kernels' verification
//! routine against the Rust reference without a GPU.

use crate::codegen::Words;

/// Words in the fixed-base table: 32 × 255 affine points of 16 words.
pub const GTABLE_WORDS: usize = 32 * 255 * 16;

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
        pub fn cs_host_mul_count() -> u64;
        pub fn cs_host_mul_count_reset();
        pub fn cs_host_fe_mul(a: *const u32, b: *const u32, r: *mut u32);
        pub fn cs_host_fe_inv(method: i32, a: *const u32, r: *mut u32);
        pub fn cs_host_decompress(x: *const u32, parity: u32, y: *mut u32) -> i32;
        pub fn cs_host_build_gtable(out: *mut u32);
        pub fn cs_host_on_curve(x: *const u32, y: *const u32) -> i32;
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

/// Builds the fixed-base table b·256^j·G and checks that every entry lies on the curve.
pub fn build_gtable() -> Result<Vec<u32>, String> {
    let mut t = vec![0u32; GTABLE_WORDS];
    // SAFETY: the buffer holds exactly the GTABLE_WORDS words the routine writes.
    unsafe { ffi::cs_host_build_gtable(t.as_mut_ptr()) };
    for (i, e) in t.chunks_exact(16).enumerate() {
        let x: Words = e[..8].try_into().expect("8 words");
        let y: Words = e[8..].try_into().expect("8 words");
        if !on_curve(&x, &y) {
            return Err(format!("fixed-base table entry {i} is not on the curve"));
        }
    }
    Ok(t)
}
