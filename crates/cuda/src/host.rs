//! The kernels' arithmetic compiled for the CPU (kernels/host_shim.cpp, the portable C++ path).
//! Used to build the fixed-base table at run time and, in tests, to check the kernels' verification
//! routine against the Rust reference without a GPU.

use crate::codegen::Words;

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

/// The C ABI of one build of kernels/host_ecdsa.cpp, under its prefix.
macro_rules! ecdsa_ffi {
    ($module:ident, $verify:literal, $recover:literal, $scalar:literal, $fe_mul:literal,
     $reduce:literal, $gtable:literal, $on_curve:literal, $batch_inverse:literal) => {
        mod $module {
            extern "C" {
                #[link_name = $verify]
                pub fn verify_ecdsa(
                    low_s: i32,
                    e: *const u32,
                    r: *const u32,
                    s: *const u32,
                    px: *const u32,
                    py: *const u32,
                    gtab: *const u32,
                ) -> i32;
                #[link_name = $recover]
                pub fn recover_ecdsa(
                    e: *const u32,
                    r: *const u32,
                    s: *const u32,
                    id: u32,
                    gtab: *const u32,
                    x: *mut u32,
                    y: *mut u32,
                ) -> i32;
                #[link_name = $scalar]
                pub fn scalar_op(op: i32, a: *const u32, b: *const u32, r: *mut u32);
                #[link_name = $fe_mul]
                pub fn fe_mul(a: *const u32, b: *const u32, r: *mut u32);
                #[link_name = $reduce]
                pub fn reduce_wide(t: *const u32, r: *mut u32);
                #[link_name = $gtable]
                pub fn build_gtable(out: *mut u32);
                #[link_name = $on_curve]
                pub fn on_curve(x: *const u32, y: *const u32) -> i32;
                #[link_name = $batch_inverse]
                pub fn batch_inverse(
                    modulus: i32,
                    x: *const u32,
                    used: *const i32,
                    out: *mut u32,
                ) -> i32;
            }
        }
    };
}
ecdsa_ffi!(
    p256_ffi,
    "cs_p256_verify_ecdsa",
    "cs_p256_recover_ecdsa",
    "cs_p256_scalar_op",
    "cs_p256_fe_mul",
    "cs_p256_reduce_wide",
    "cs_p256_build_gtable",
    "cs_p256_on_curve",
    "cs_p256_batch_inverse"
);
ecdsa_ffi!(
    k256_ffi,
    "cs_k256_verify_ecdsa",
    "cs_k256_recover_ecdsa",
    "cs_k256_scalar_op",
    "cs_k256_fe_mul",
    "cs_k256_reduce_wide",
    "cs_k256_build_gtable",
    "cs_k256_on_curve",
    "cs_k256_batch_inverse"
);

/// The modulus of a kernel routine that works mod p or mod n (the values of the kernels'
/// CS_MOD_P and CS_MOD_N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modulus {
    /// The field prime p.
    Field = 0,
    /// The group order n.
    Order = 1,
}

/// The curves the host builds of the kernels are compiled for: SM2 (kernels/host_shim.cpp, every
/// routine) and the ECDSA curves (kernels/host_ecdsa.cpp, the ECDSA path; see [`EcdsaHost`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostCurve {
    Sm2,
    P256,
    Secp256k1,
}

impl HostCurve {
    pub fn params(self) -> &'static chainsig_core::curve::CurveParams {
        match self {
            HostCurve::Sm2 => &chainsig_core::curve::SM2,
            HostCurve::P256 => &chainsig_core::curve::P256,
            HostCurve::Secp256k1 => &chainsig_core::curve::SECP256K1,
        }
    }

    /// The curve's ECDSA host build; None for SM2.
    pub fn ecdsa(self) -> Option<EcdsaHost> {
        match self {
            HostCurve::Sm2 => None,
            HostCurve::P256 => Some(EcdsaHost(HostCurve::P256)),
            HostCurve::Secp256k1 => Some(EcdsaHost(HostCurve::Secp256k1)),
        }
    }

    /// a·b mod p by this curve's build of the kernels' field product.
    pub fn fe_mul(self, a: &Words, b: &Words) -> Words {
        let mut r = [0u32; 8];
        let f = match self {
            HostCurve::Sm2 => ffi::cs_host_fe_mul,
            HostCurve::P256 => p256_ffi::fe_mul,
            HostCurve::Secp256k1 => k256_ffi::fe_mul,
        };
        // SAFETY: 8-word inputs and output.
        unsafe { f(a.as_ptr(), b.as_ptr(), r.as_mut_ptr()) };
        r
    }

    /// Whether (x, y) is on this curve, by its build's arithmetic.
    pub fn on_curve(self, x: &Words, y: &Words) -> bool {
        let f = match self {
            HostCurve::Sm2 => ffi::cs_host_on_curve,
            HostCurve::P256 => p256_ffi::on_curve,
            HostCurve::Secp256k1 => k256_ffi::on_curve,
        };
        // SAFETY: 8-word inputs.
        unsafe { f(x.as_ptr(), y.as_ptr()) == 1 }
    }
}

/// The kernels' ECDSA path compiled for one curve (kernels/host_ecdsa.cpp); made by
/// [`HostCurve::ecdsa`] for the ECDSA curves only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EcdsaHost(HostCurve);

const NOT_ECDSA: &str = "EcdsaHost is made for the ECDSA curves only";

impl EcdsaHost {
    pub fn curve(self) -> HostCurve {
        self.0
    }

    /// Runs the kernels' `cs_verify_ecdsa` on the CPU; `gtab` is the curve's [`Self::build_gtable`].
    pub fn verify(self, low_s: bool, rec: &HostRecord, gtab: &[u32]) -> bool {
        assert_eq!(gtab.len(), GTABLE_WORDS, "G table has the wrong size");
        let f = match self.0 {
            HostCurve::P256 => p256_ffi::verify_ecdsa,
            HostCurve::Secp256k1 => k256_ffi::verify_ecdsa,
            HostCurve::Sm2 => unreachable!("{NOT_ECDSA}"),
        };
        // SAFETY: 8-word operands and a table of GTABLE_WORDS words, only read.
        unsafe {
            f(
                i32::from(low_s),
                rec.e.as_ptr(),
                rec.r.as_ptr(),
                rec.s.as_ptr(),
                rec.px.as_ptr(),
                rec.py.as_ptr(),
                gtab.as_ptr(),
            ) == 1
        }
    }

    /// Runs the kernels' `cs_recover_ecdsa` on the CPU: the affine key (x, y) that signed digest
    /// e with (r, s), R's y parity being `id`, or None (see kernels/ecdsa.cuh).
    pub fn recover(
        self,
        e: &Words,
        r: &Words,
        s: &Words,
        id: u32,
        gtab: &[u32],
    ) -> Option<(Words, Words)> {
        assert_eq!(gtab.len(), GTABLE_WORDS, "G table has the wrong size");
        let f = match self.0 {
            HostCurve::P256 => p256_ffi::recover_ecdsa,
            HostCurve::Secp256k1 => k256_ffi::recover_ecdsa,
            HostCurve::Sm2 => unreachable!("{NOT_ECDSA}"),
        };
        let (mut x, mut y) = ([0u32; 8], [0u32; 8]);
        // SAFETY: 8-word operands and outputs, a table of GTABLE_WORDS words, only read.
        let ok = unsafe {
            f(
                e.as_ptr(),
                r.as_ptr(),
                s.as_ptr(),
                id,
                gtab.as_ptr(),
                x.as_mut_ptr(),
                y.as_mut_ptr(),
            )
        };
        (ok == 1).then_some((x, y))
    }

    fn scalar_op(self, op: i32, a: &Words, b: &Words) -> Words {
        let f = match self.0 {
            HostCurve::P256 => p256_ffi::scalar_op,
            HostCurve::Secp256k1 => k256_ffi::scalar_op,
            HostCurve::Sm2 => unreachable!("{NOT_ECDSA}"),
        };
        let mut r = [0u32; 8];
        // SAFETY: 8-word inputs and output.
        unsafe { f(op, a.as_ptr(), b.as_ptr(), r.as_mut_ptr()) };
        r
    }

    /// a·b mod n by the kernels' Montgomery products, for a, b < n.
    pub fn scalar_mul(self, a: &Words, b: &Words) -> Words {
        self.scalar_op(0, a, b)
    }

    /// a⁻¹ mod n by the kernels' binary Euclid, for 0 < a < n.
    pub fn scalar_inv(self, a: &Words) -> Words {
        self.scalar_op(1, a, &[0; 8])
    }

    /// The inverses of a warp's 32 values as the kernels share one inversion among the lanes
    /// (`warp_batch_inv`, lanes and shuffles emulated), mod n or mod p: x⁻¹ where `used`, 1
    /// elsewhere. None when the lanes disagreed on their shuffles. Each used x must be in [1, m).
    pub fn warp_inverse(
        self,
        modulus: Modulus,
        x: &[Words; 32],
        used: &[bool; 32],
    ) -> Option<[Words; 32]> {
        let f = match self.0 {
            HostCurve::P256 => p256_ffi::batch_inverse,
            HostCurve::Secp256k1 => k256_ffi::batch_inverse,
            HostCurve::Sm2 => unreachable!("{NOT_ECDSA}"),
        };
        let flat: Vec<u32> = x.iter().flatten().copied().collect();
        let used: Vec<i32> = used.iter().map(|&u| u as i32).collect();
        let mut out = vec![0u32; 32 * 8];
        // SAFETY: 32 × 8 words in and out, 32 flags.
        let agreed = unsafe {
            f(
                modulus as i32,
                flat.as_ptr(),
                used.as_ptr(),
                out.as_mut_ptr(),
            )
        } == 1;
        agreed.then(|| std::array::from_fn(|k| out[8 * k..8 * k + 8].try_into().unwrap()))
    }

    /// t mod p for any 512-bit t, by the kernels' generated reduction.
    pub fn reduce_wide(self, t: &[u32; 16]) -> Words {
        let f = match self.0 {
            HostCurve::P256 => p256_ffi::reduce_wide,
            HostCurve::Secp256k1 => k256_ffi::reduce_wide,
            HostCurve::Sm2 => unreachable!("{NOT_ECDSA}"),
        };
        let mut r = [0u32; 8];
        // SAFETY: 16-word input, 8-word output.
        unsafe { f(t.as_ptr(), r.as_mut_ptr()) };
        r
    }

    /// The curve's G table in the layout of SM2's (the same windows), every entry checked on the
    /// curve.
    pub fn build_gtable(self) -> Result<Vec<u32>, String> {
        assert_table_sizes_agree();
        let f = match self.0 {
            HostCurve::P256 => p256_ffi::build_gtable,
            HostCurve::Secp256k1 => k256_ffi::build_gtable,
            HostCurve::Sm2 => unreachable!("{NOT_ECDSA}"),
        };
        let mut t = vec![0u32; GTABLE_WORDS];
        // SAFETY: the buffer holds exactly the GTABLE_WORDS words the routine writes.
        unsafe { f(t.as_mut_ptr()) };
        entries_on_curve(self.0, &t).map_err(|i| {
            format!(
                "{} fixed-base table entry {i} is not on the curve",
                self.0.params().name
            )
        })?;
        Ok(t)
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

/// Operand pairs for the GPU field self-test: edge values (0, 1, p − 1, p, 2²⁵⁶ − 1, single
/// words and bits at the top, alternating patterns) paired with each other, then random words.
pub fn field_check_inputs(curve: HostCurve, count: usize, seed: u64) -> (Vec<Words>, Vec<Words>) {
    use rand::{RngCore, SeedableRng};
    let p = crate::codegen::words_from_be(&curve.params().p);
    let mut p_minus_1 = p;
    p_minus_1[0] -= 1; // p is odd
    let mut edges: Vec<Words> = vec![
        [0; 8],
        [1, 0, 0, 0, 0, 0, 0, 0],
        p_minus_1,
        p,
        [u32::MAX; 8],
        [0, 0, 0, 0, 0, 0, 0, 1 << 31],
        [0x5555_5555; 8],
        [0xaaaa_aaaa; 8],
    ];
    for w in 0..8 {
        let mut v = [0u32; 8];
        v[w] = u32::MAX;
        edges.push(v);
    }
    let mut a = Vec::with_capacity(count);
    let mut b = Vec::with_capacity(count);
    'edges: for x in &edges {
        for y in &edges {
            if a.len() == count {
                break 'edges;
            }
            a.push(*x);
            b.push(*y);
        }
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut random = || {
        let mut w = [0u32; 8];
        w.iter_mut().for_each(|x| *x = rng.next_u32());
        w
    };
    while a.len() < count {
        a.push(random());
        b.push(random());
    }
    (a, b)
}

/// The exact 512-bit product, by plain schoolbook (independent of the kernels' code).
fn wide_product(a: &Words, b: &Words) -> [u32; 16] {
    let mut t = [0u32; 16];
    for (i, &x) in a.iter().enumerate() {
        let mut carry = 0u64;
        for (j, &y) in b.iter().enumerate() {
            let v = t[i + j] as u64 + x as u64 * y as u64 + carry;
            t[i + j] = v as u32;
            carry = v >> 32;
        }
        t[i + 8] = carry as u32;
    }
    t
}

/// Compares the GPU self-test's words with the exact wide products and the host build's reduced
/// ones; one line per differing item (at most 8), empty when all agree.
pub fn field_check_compare(
    curve: HostCurve,
    a: &[Words],
    b: &[Words],
    got: &[[u32; 48]],
) -> Vec<String> {
    let mut diffs = Vec::new();
    if got.len() != a.len().min(b.len()) {
        diffs.push(format!("{} results for {} pairs", got.len(), a.len()));
        return diffs;
    }
    for (i, ((x, y), g)) in a.iter().zip(b).zip(got).enumerate() {
        let parts: [(&str, Vec<u32>, &[u32]); 4] = [
            ("a*b", wide_product(x, y).to_vec(), &g[0..16]),
            ("a^2", wide_product(x, x).to_vec(), &g[16..32]),
            ("a*b mod p", curve.fe_mul(x, y).to_vec(), &g[32..40]),
            ("a^2 mod p", curve.fe_mul(x, x).to_vec(), &g[40..48]),
        ];
        for (what, want, have) in parts {
            if want.as_slice() != have && diffs.len() < 8 {
                diffs.push(format!(
                    "item {i}, {what}: a={x:08x?} b={y:08x?} want {want:08x?} got {have:08x?}"
                ));
            }
        }
    }
    diffs
}

#[cfg(test)]
mod field_check_tests {
    use super::*;

    #[test]
    fn host_products_pass_their_own_check() {
        let (a, b) = field_check_inputs(HostCurve::Sm2, 600, 7);
        assert_eq!(a.len(), 600);
        let got: Vec<[u32; 48]> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| {
                let mut g = [0u32; 48];
                g[..16].copy_from_slice(&wide_product(x, y));
                g[16..32].copy_from_slice(&wide_product(x, x));
                g[32..40].copy_from_slice(&fe_mul(x, y));
                g[40..48].copy_from_slice(&fe_mul(x, x));
                g
            })
            .collect();
        assert!(field_check_compare(HostCurve::Sm2, &a, &b, &got).is_empty());
        // One flipped bit in any part is reported.
        for word in [0, 20, 35, 47] {
            let mut bad = got.clone();
            bad[300][word] ^= 1 << 9;
            let diffs = field_check_compare(HostCurve::Sm2, &a, &b, &bad);
            assert_eq!(diffs.len(), 1, "{diffs:?}");
            assert!(diffs[0].starts_with("item 300"));
        }
    }

    #[test]
    fn wide_product_matches_u128_arithmetic() {
        let a: Words = [u32::MAX, u32::MAX, 3, 0, 0, 0, 0, 0];
        let b: Words = [u32::MAX, 7, 0, 0, 0, 0, 0, 0];
        let x = (u32::MAX as u128) | ((u32::MAX as u128) << 32) | (3u128 << 64);
        let y = (u32::MAX as u128) | (7u128 << 32);
        // x < 2^66 and y < 2^35: the product fits in 101 bits.
        let want = x * y;
        let t = wide_product(&a, &b);
        let got = (0..4).fold(0u128, |acc, k| acc | ((t[k] as u128) << (32 * k)));
        assert_eq!(got, want);
        assert!(t[4..].iter().all(|&w| w == 0));
    }
}
