//! Kernel source assembly: the CUDA C++ of each module (SM2 verification kernels, a curve's ECDSA
//! module, SM3), the NVRTC options of a [`KernelConfig`], and compilation through chainsig-gpu.
//!
//! The source is the generated curve header ([`crate::codegen`]) followed by the kernels/ files
//! and one instantiation line per configuration; chainsig-gpu compiles it straight to CUBIN for
//! the device's architecture and caches it under a hash of source, options and architecture.

use crate::codegen;
use crate::Mode;
use chainsig_core::curve::CurveParams;
use chainsig_gpu::{compile_cached_with, options, Compiled};

mod config;
pub use config::{KernelConfig, Product};

// The kernel headers (crates/cuda/kernels/), concatenated in this order by `common_source` and
// `sm3_source`: the one list to edit when a header is added, split or renamed.

const TYPES: &str = include_str!("../kernels/types.h");
/// The kernels' layers after the curve header, each relying only on those before it (the
/// contract at the top of each file says what it assumes), then the entry points.
const LAYERS: [&str; 8] = [
    include_str!("../kernels/field.cuh"),
    include_str!("../kernels/lanes.cuh"),
    include_str!("../kernels/scalar.cuh"),
    include_str!("../kernels/point.cuh"),
    include_str!("../kernels/ecmult.cuh"),
    include_str!("../kernels/sm2.cuh"),
    include_str!("../kernels/ecdsa.cuh"),
    include_str!("../kernels/kernels.cuh"),
];
const SM3: &str = include_str!("../kernels/sm3.cuh");
/// The raw SM2 module's own headers, after SM3 (kernels/sm2raw.cuh says what they do).
const RAW: [&str; 3] = [
    include_str!("../kernels/sec1.cuh"),
    include_str!("../kernels/za.cuh"),
    include_str!("../kernels/sm2raw.cuh"),
];

/// The SM3 hashing kernel's name (a module of its own, so changing it never invalidates the cached
/// verification kernels, and verification alone never compiles it).
pub const SM3_KERNEL: &str = "cs_sm3_e";

/// The raw SM2 module's kernels ([`raw_source`]): records of fresh signers (the key decoded and
/// checked on the device) and of known signers (the key from their tables).
pub const RAW_KERNEL: &str = "cs_sm2_raw";
pub const RAW_SIGNED_KERNEL: &str = "cs_sm2_raw_signed";

/// The known-signer kernel's name ([`crate::signers`]): every module with a fast-mode kernel holds
/// one, compiled with that module's register cap and switches.
pub const SIGNED_KERNEL: &str = "cs_verify_signed";

/// The ECDSA kernels of a curve's ECDSA module ([`ecdsa_source`]): either s accepted, and low-s
/// (s > n/2 rejected, as [`chainsig_core::Batch::low_s`] asks).
pub const ECDSA_KERNEL: &str = "cs_verify_ecdsa";
pub const ECDSA_LOW_S_KERNEL: &str = "cs_verify_ecdsa_low_s";
/// The public-key recovery kernel of an ECDSA module (Ethereum's sender recovery).
pub const RECOVER_KERNEL: &str = "cs_recover_ecdsa_keys";
/// Rows of a recovery chunk: e, r, s (8 words each) and the recovery ids (kernels/kernels.cuh).
pub const RECOVER_ROWS: usize = 25;

/// The kernels' common source for one curve: the prelude, the generated curve header, the
/// arithmetic, both verifications and the kernel entries, none of them instantiated yet.
fn common_source(curve: &CurveParams) -> Result<String, codegen::CodegenError> {
    let mut s = String::new();
    s.push_str(TYPES);
    s.push('\n');
    s.push_str(&codegen::curve_header(curve)?);
    for part in LAYERS {
        s.push('\n');
        s.push_str(part);
    }
    s.push('\n');
    Ok(s)
}

/// Full CUDA C++ source for the given SM2 configurations of one curve.
pub fn source(
    curve: &CurveParams,
    configs: &[KernelConfig],
) -> Result<String, codegen::CodegenError> {
    let mut s = common_source(curve)?;
    for c in configs {
        s.push_str(&c.instantiate());
    }
    if configs.iter().any(|c| c.mode == Mode::Fast) {
        s.push_str(&format!("CS_INSTANTIATE_SIGNED({SIGNED_KERNEL})\n"));
    }
    Ok(s)
}

/// Source of a curve's ECDSA module: [`ECDSA_KERNEL`], [`ECDSA_LOW_S_KERNEL`] and
/// [`RECOVER_KERNEL`], one thread per signature, with the fast mode's multiplications (and
/// `cs_field_check`).
pub fn ecdsa_source(curve: &CurveParams) -> Result<String, codegen::CodegenError> {
    let mut s = common_source(curve)?;
    s.push_str(&format!(
        "CS_INSTANTIATE_ECDSA({ECDSA_KERNEL}, 0)\nCS_INSTANTIATE_ECDSA({ECDSA_LOW_S_KERNEL}, 1)\n\
         CS_INSTANTIATE_RECOVER({RECOVER_KERNEL})\n"
    ));
    Ok(s)
}

/// The switches an ECDSA module is compiled with: the default SM2 kernel's (fast mode, one thread
/// per signature, full keys), whose multiplications it shares, under the register cap the
/// backend's SM2 kernel has (`max_registers`), so that one block size suits both, and with the
/// walk's doublings rolled (see `rolled`): an ECDSA module has no lane kernels for small batches,
/// so its one kernel also serves the sizes where fetch dominates.
pub fn ecdsa_config(max_registers: Option<u32>) -> KernelConfig {
    KernelConfig {
        max_registers,
        rolled: true,
        ..KernelConfig::default_fast()
    }
}

/// Compiles (or loads from the cache) a curve's ECDSA module for `arch` with the switches `cfg`
/// (an [`ecdsa_config`]).
pub fn compile_ecdsa(
    curve: &CurveParams,
    cfg: &KernelConfig,
    arch: &str,
) -> Result<Compiled, String> {
    let src = ecdsa_source(curve).map_err(|e| e.0)?;
    compile_cached_with(&src, arch, config_options(cfg, arch))
}

/// Source of the SM3 module (`cs_sm3_e`): the type prelude and kernels/sm3.cuh.
pub fn sm3_source() -> String {
    format!("{TYPES}\n{SM3}\n")
}

/// Source of the raw SM2 module ([`RAW_KERNEL`], [`RAW_SIGNED_KERNEL`]): the prelude, SM2's curve
/// header, the arithmetic up to the fixed-base tables (field to ecmult: decompression, the
/// curve check, the key tables' size), SM3, then SEC1 decoding, Z_A and the entries. A module of
/// its own, as SM3's: it never invalidates the cached verification kernels.
pub fn raw_source() -> Result<String, codegen::CodegenError> {
    let mut s = String::new();
    s.push_str(TYPES);
    s.push('\n');
    s.push_str(&codegen::curve_header(&chainsig_core::curve::SM2)?);
    for part in LAYERS[..5].iter().chain([&SM3]).chain(&RAW) {
        s.push('\n');
        s.push_str(part);
    }
    s.push('\n');
    Ok(s)
}

/// Compiles (or loads from the cache) the raw SM2 module for `arch`: the fast mode's switches
/// without a register cap (one thread per record, no lanes).
pub fn compile_raw(arch: &str) -> Result<Compiled, String> {
    let src = raw_source().map_err(|e| e.0)?;
    let cfg = KernelConfig {
        max_registers: None,
        ..KernelConfig::default_fast()
    };
    compile_cached_with(&src, arch, config_options(&cfg, arch))
}

/// Compiles (or loads from the cache) the module holding the one kernel of `cfg` for `arch`, the
/// unit the backend loads.
pub fn compile_config(
    curve: &CurveParams,
    cfg: &KernelConfig,
    arch: &str,
) -> Result<Compiled, String> {
    let src = source(curve, &[*cfg]).map_err(|e| e.0)?;
    compile_cached_with(&src, arch, config_options(cfg, arch))
}

/// NVRTC options for the module of one configuration: the architecture's, then the register cap
/// and the switches that are module-wide defines (row-chain products, the compact doubling, lane
/// pairs).
pub fn config_options(cfg: &KernelConfig, arch: &str) -> Vec<String> {
    let mut opts = options(arch);
    if let Some(r) = cfg.max_registers {
        opts.push(format!("--maxrregcount={r}"));
    }
    if cfg.product == Product::RowChains {
        opts.push("-DCS_ROW_CHAINS=1".into());
    }
    if cfg.compact && cfg.mode == Mode::Fast {
        opts.push("-DCS_COMPACT=1".into());
    }
    if cfg.rolled {
        opts.push("-DCS_ROLL_DOUBLINGS=1".into());
    }
    if cfg.pair {
        opts.push("-DCS_PAIR=1".into());
        if cfg.quad {
            opts.push("-DCS_QUAD=1".into());
        }
    }
    opts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compact_switch_reaches_only_fast_mode_modules() {
        let define = "-DCS_COMPACT=1".to_string();
        let fast = KernelConfig::default_fast();
        assert!(!config_options(&fast, "sm_90").contains(&define));
        let compact = fast.compacted();
        let opts = config_options(&compact, "sm_90");
        assert!(opts.contains(&define));
        assert!(opts.contains(&"--maxrregcount=128".to_string()));
        let paper = KernelConfig {
            mode: Mode::Paper,
            ..compact
        };
        assert!(!config_options(&paper, "sm_90").contains(&define));
        assert!(!paper.name().ends_with("_compact"));
    }
}
