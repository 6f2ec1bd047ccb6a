//! The curves the host builds serve: SM2 (kernels/host_shim.cpp, every routine) and the ECDSA
//! curves (kernels/host_ecdsa.cpp compiled once per curve under the prefixes `cs_p256_` and
//! `cs_k256_`), with the ECDSA path's verification, recovery and scalar routines.

use super::{assert_table_sizes_agree, entries_on_curve, ffi, HostRecord, GTABLE_WORDS};
use crate::codegen::Words;

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
