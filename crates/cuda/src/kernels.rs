//! Kernel source assembly, NVRTC compilation for the device's architecture, and the on-disk cache.
//!
//! The source is the generated curve header followed by the kernels/ files and one instantiation
//! line per configuration; it is compiled straight to CUBIN (`--gpu-architecture=sm_XY`), so the
//! driver never JIT-compiles PTX, and the CUBIN is cached under a hash of source, options and arch.

use crate::codegen;
use crate::{Inversion, Mode};
use chainsig_core::curve::CurveParams;
use sha2::{Digest, Sha256};
use std::path::PathBuf;

const TYPES: &str = include_str!("../kernels/cs_types.h");
const ARITH: &str = include_str!("../kernels/cs_arith.cuh");
const VERIFY: &str = include_str!("../kernels/cs_verify.cuh");
const ECDSA: &str = include_str!("../kernels/cs_ecdsa.cuh");
const KERNELS: &str = include_str!("../kernels/cs_kernels.cuh");
const SM3: &str = include_str!("../kernels/cs_sm3.cuh");

/// The SM3 hashing kernel's name (a module of its own, so changing it never invalidates the cached
/// verification kernels, and verification alone never compiles it).
pub const SM3_KERNEL: &str = "cs_sm3_e";

/// The known-signer kernel's name ([`crate::signers`]): every module with a fast-mode kernel holds
/// one, compiled with that module's register cap and switches.
pub const SIGNED_KERNEL: &str = "cs_verify_signed";

/// The ECDSA kernels of a curve's ECDSA module ([`ecdsa_source`]): either s accepted, and low-s
/// (s > n/2 rejected, as [`chainsig_core::Batch::low_s`] asks).
pub const ECDSA_KERNEL: &str = "cs_verify_ecdsa";
pub const ECDSA_LOW_S_KERNEL: &str = "cs_verify_ecdsa_low_s";
/// The public-key recovery kernel of an ECDSA module (Ethereum's sender recovery).
pub const RECOVER_KERNEL: &str = "cs_recover_ecdsa_keys";
/// Rows of a recovery chunk: e, r, s (8 words each) and the recovery ids (kernels/cs_kernels.cuh).
pub const RECOVER_ROWS: usize = 25;

/// The compile-time switches of one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct KernelConfig {
    pub mode: Mode,
    pub inversion: Inversion,
    /// Public keys sent as x and a parity bit; y recovered on the GPU.
    pub compress: bool,
    /// Item-major ("array of structures") input instead of column-major; an ablation only.
    pub row_major: bool,
    /// Register cap per thread (`--maxrregcount`), trading registers for occupancy; None: ptxas's choice.
    pub max_registers: Option<u32>,
    /// How the 256 × 256-bit products are formed on the GPU (the host build has one portable path).
    pub product: Product,
    /// Fast mode only: the doubling is called, not inlined, so the kernel holds one copy of it.
    /// Small batches leave one warp per scheduler, which then waits on instruction fetch more than
    /// on arithmetic; there the compact kernel is faster, at high occupancy the inlined one is.
    #[serde(default)]
    pub compact: bool,
    /// Two threads per signature (a lane pair), each forming one of every two independent
    /// products of the point formulas (kernels/cs_arith.cuh). It halves the chain of dependent
    /// multiplications a signature waits on and doubles the threads: for batches too small to fill
    /// the GPU. Its blocks are a multiple of 64 threads.
    #[serde(default)]
    pub pair: bool,
    /// Fast mode, lane pairs, column-major only: the fixed-base product s·G on lane pairs of its
    /// own, beside the pairs that walk t·P (four threads per signature), so a signature no longer
    /// waits on the 32 table additions. The backend gives it blocks of at least 256 threads.
    #[serde(default)]
    pub split: bool,
    /// Lane pairs grouped in quads, which form the four independent products of each of the
    /// point addition's middle steps at once (five steps instead of eight; the doubling's steps
    /// stay pairs): four threads per signature, eight with `split`.
    #[serde(default)]
    pub quad: bool,
    /// The window walk's doublings as a loop (`CS_ROLL_DOUBLINGS`): its body then holds one
    /// doubling instead of one for each bit of the window, which a warp fetches in less time when
    /// few warps share an SM. The ECDSA modules' default (H100, 2026-12-06: P-256 at 1024
    /// signatures 1.31 ms against 2.47, at 2²⁰ 55.1 against 55.6 ms); the SM2 default kernel
    /// was no faster with it (±1.5% by size, BENCHMARKS.md).
    #[serde(default)]
    pub rolled: bool,
}

/// The GPU's 256 × 256-bit product (an ablation switch; `EvenOdd` is the default).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum Product {
    /// Row by row: a chain of low words, then a chain of high words (the first implementation).
    RowChains,
    /// Low and high word of each partial product in one chain, into even- and odd-offset
    /// accumulators, which ptxas fuses into 64-bit IMAD.WIDE; squares formed by a dedicated routine.
    #[default]
    EvenOdd,
}

impl KernelConfig {
    /// The kernel's symbol name.
    pub fn name(&self) -> String {
        let mode = match self.mode {
            Mode::Paper => "paper",
            Mode::Separate => "separate",
            Mode::Fast => "fast",
        };
        let inv = match self.inversion {
            Inversion::Euclid => "euclid",
            Inversion::Fermat => "fermat",
        };
        let cap = self
            .max_registers
            .map(|r| format!("_r{r}"))
            .unwrap_or_default();
        let product = match self.product {
            Product::RowChains => "_rowmul",
            Product::EvenOdd => "",
        };
        format!(
            "cs_verify_{mode}_{inv}_{}_{}{cap}{product}{}{}{}",
            if self.compress { "ckey" } else { "fullkey" },
            if self.row_major { "rows" } else { "cols" },
            if self.compact && self.mode == Mode::Fast {
                "_compact"
            } else {
                ""
            },
            match (self.pair, self.quad, self.split) {
                (true, true, true) => "_quad_split",
                (true, true, false) => "_quad",
                (true, false, true) => "_split",
                (true, false, false) => "_pair",
                _ => "",
            },
            if self.rolled { "_rolled" } else { "" }
        )
    }

    fn instantiate(&self) -> String {
        if self.is_split() {
            return format!(
                "CS_INSTANTIATE_SPLIT({}, {})\n",
                self.name(),
                i32::from(self.compress)
            );
        }
        format!(
            "CS_INSTANTIATE({}, {}, {}, {}, {})\n",
            self.name(),
            self.mode.code(),
            self.inversion.code(),
            i32::from(self.compress),
            i32::from(self.row_major)
        )
    }

    /// Every distinct combination of the switches (modes × inversions × key forms × layouts).
    pub fn all() -> Vec<KernelConfig> {
        let mut v = Vec::new();
        for mode in [Mode::Fast, Mode::Paper, Mode::Separate] {
            for inversion in [Inversion::Euclid, Inversion::Fermat] {
                if mode == Mode::Fast && inversion == Inversion::Fermat {
                    continue; // the fast mode compares without inverting: one kernel serves both
                }
                for compress in [true, false] {
                    for row_major in [false, true] {
                        v.push(KernelConfig {
                            mode,
                            inversion,
                            compress,
                            row_major,
                            max_registers: None,
                            product: Product::EvenOdd,
                            compact: false,
                            pair: false,
                            split: false,
                            quad: false,
                            rolled: false,
                        });
                    }
                }
            }
        }
        // The default fast kernel (full keys, capped at 128 registers: 16 warps an SM), and the
        // previous defaults (168 registers; compressed keys at 160) for the comparison.
        v.push(KernelConfig::default_fast());
        v.push(KernelConfig {
            max_registers: Some(168),
            ..KernelConfig::default_fast()
        });
        v.push(KernelConfig {
            compress: true,
            max_registers: Some(160),
            ..KernelConfig::default_fast()
        });
        // The first product routine, kept for the ablation.
        v.push(KernelConfig {
            product: Product::RowChains,
            ..KernelConfig::default_fast()
        });
        // The default's compact form and its lane-pair forms, for small batches.
        v.push(KernelConfig::default_fast().compacted());
        v.push(KernelConfig::default_fast().compacted().paired());
        v.push(KernelConfig::default_fast().paired());
        v.push(KernelConfig::default_fast().compacted().split());
        v.push(KernelConfig::default_fast().compacted().quad().split());
        v
    }

    /// The same kernel with two threads per signature (see `pair`).
    pub fn paired(self) -> KernelConfig {
        KernelConfig { pair: true, ..self }
    }

    /// The same kernel with s·G on lane pairs of its own (see `split`).
    pub fn split(self) -> KernelConfig {
        KernelConfig {
            pair: true,
            split: true,
            ..self
        }
    }

    /// The same kernel with its lane pairs grouped in quads (see `quad`).
    pub fn quad(self) -> KernelConfig {
        KernelConfig {
            pair: true,
            quad: true,
            rolled: false,
            ..self
        }
    }

    /// Whether the split entry applies (it exists for fast mode, column-major, lane pairs).
    pub fn is_split(&self) -> bool {
        self.split && self.pair && self.mode == Mode::Fast && !self.row_major
    }

    /// Threads per signature: the lanes of a group (4 for a quad, 2 for a pair, else 1), twice
    /// that for a split kernel.
    pub fn threads_per_item(&self) -> u32 {
        let lanes = match (self.pair, self.quad) {
            (true, true) => 4,
            (true, false) => 2,
            _ => 1,
        };
        if self.is_split() {
            2 * lanes
        } else {
            lanes
        }
    }

    /// The same kernel with the doubling called instead of inlined (see `compact`).
    pub fn compacted(self) -> KernelConfig {
        KernelConfig {
            compact: true,
            ..self
        }
    }

    /// The default kernel: fast mode, full keys, column-major, even/odd products, capped at 128
    /// registers (16 warps an SM). Full keys: on the H200 (2026-12-03, 2¹⁹ fresh records) they
    /// gave 1.52 × 10⁷/s against 1.44 × 10⁷/s for compressed keys, whose y costs about 420
    /// multiplications per verification, more than the 32 bytes per record it saves on PCIe.
    /// The cap: 128 registers in blocks of 512 threads gave 1.97 × 10⁷/s at 2²⁰ and 10.7 ms at
    /// 172032, where 168 registers (12 warps an SM, the previous default) gave 1.77 × 10⁷/s and
    /// 11.8 ms (H200, 2026-12-05, BENCHMARKS.md): the extra warps hide more latency than the
    /// spills (324 B stored by the inlined kernel, which stay in L1) cost;
    /// [`KernelConfig::spill_budget`] bounds them.
    pub fn default_fast() -> KernelConfig {
        KernelConfig {
            mode: Mode::Fast,
            inversion: Inversion::Euclid,
            compress: false,
            row_major: false,
            max_registers: Some(128),
            product: Product::EvenOdd,
            compact: false,
            pair: false,
            split: false,
            quad: false,
            rolled: false,
        }
    }
}

impl KernelConfig {
    /// Bytes of spill stores or loads ptxas may report before the NVRTC gate fails: none for a
    /// kernel compiled without a register cap; for the capped fast kernels, the measured
    /// trade-off with a little headroom, so a change that spills more is caught. On sm_90 with
    /// NVRTC 13.0: at 128 registers the inlined SM2 kernel stores 300 B and ECDSA recovery 364 B,
    /// rolled (the ECDSA default) 400 B, which the H100 ran faster all the same (2026-12-06);
    /// above it, 80 B at 168 registers and 100 B of loads for compressed keys at 160.
    pub fn spill_budget(&self) -> u32 {
        match self.max_registers {
            Some(cap) if self.mode == Mode::Fast && cap <= 128 && self.rolled => 448,
            Some(cap) if self.mode == Mode::Fast && cap <= 128 => 384,
            Some(_) if self.mode == Mode::Fast => 112,
            _ => 0,
        }
    }
}

/// The kernels' common source for one curve: the prelude, the generated curve header, the
/// arithmetic, both verifications and the kernel entries, none of them instantiated yet.
fn common_source(curve: &CurveParams) -> Result<String, codegen::CodegenError> {
    let mut s = String::new();
    s.push_str(TYPES);
    s.push('\n');
    s.push_str(&codegen::curve_header(curve)?);
    for part in [ARITH, VERIFY, ECDSA, KERNELS] {
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

/// Source of the SM3 module (`cs_sm3_e`): the type prelude and kernels/cs_sm3.cuh.
pub fn sm3_source() -> String {
    format!("{TYPES}\n{SM3}\n")
}

/// NVRTC options for an architecture such as "sm_90", plus the words of `CHAINSIG_NVRTC_DEFINES`
/// (for example `-DCS_RARE_CALL`): compile-time ablations of the kernels, measured without a
/// rebuild of the binary. They are part of the cache key like every other option.
pub fn options(arch: &str) -> Vec<String> {
    let mut opts = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        "--ptxas-options=-v".into(),
    ];
    if let Ok(extra) = std::env::var("CHAINSIG_NVRTC_DEFINES") {
        opts.extend(extra.split_whitespace().map(str::to_string));
    }
    opts
}

/// A compiled module and what ptxas said about it.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub cubin: Vec<u8>,
    pub log: String,
    pub from_cache: bool,
}

/// Registers, stack and spills of one kernel, read from the ptxas report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Resources {
    pub kernel: String,
    pub registers: u32,
    pub stack_bytes: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

fn number_before(line: &str, marker: &str) -> Option<u32> {
    let idx = line.find(marker)?;
    line[..idx].split_whitespace().last()?.parse().ok()
}

/// Parses ptxas `-v` output ("Compiling entry function 'x'", "N bytes stack frame, N bytes spill
/// stores, N bytes spill loads", "Used N registers").
pub fn parse_resources(log: &str) -> Vec<Resources> {
    let mut out: Vec<Resources> = Vec::new();
    for line in log.lines() {
        if let Some(pos) = line.find("Compiling entry function '") {
            let rest = &line[pos + "Compiling entry function '".len()..];
            let name = rest.split('\'').next().unwrap_or("").to_string();
            out.push(Resources {
                kernel: name,
                registers: 0,
                stack_bytes: 0,
                spill_stores: 0,
                spill_loads: 0,
            });
        } else if let Some(cur) = out.last_mut() {
            if let Some(v) = number_before(line, "bytes stack frame") {
                cur.stack_bytes = v;
            }
            if let Some(v) = number_before(line, "bytes spill stores") {
                cur.spill_stores = v;
            }
            if let Some(v) = number_before(line, "bytes spill loads") {
                cur.spill_loads = v;
            }
            if let Some(v) = number_before(line, "registers") {
                cur.registers = v;
            }
        }
    }
    out
}

/// Where compiled kernels are kept: `$CHAINSIG_CACHE_DIR`, else `$XDG_CACHE_HOME/chainsig`, else
/// `~/.cache/chainsig`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("CHAINSIG_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("chainsig"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("chainsig"))
}

/// The cache key: SHA-256 over source, options and architecture.
pub fn cache_key(src: &str, opts: &[String], arch: &str) -> String {
    let mut h = Sha256::new();
    h.update(src.as_bytes());
    for o in opts {
        h.update([0u8]);
        h.update(o.as_bytes());
    }
    h.update([1u8]);
    h.update(arch.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the NVRTC library can be loaded here (cudarc would panic on first use otherwise).
pub fn nvrtc_available() -> bool {
    cudarc::get_lib_name_candidates("nvrtc")
        .iter()
        // SAFETY: loading NVRTC runs no initialisation code with preconditions.
        .any(|name| unsafe { libloading::Library::new(name) }.is_ok())
}

/// For tests that need NVRTC but no GPU: true when it can be loaded. Otherwise prints why the test
/// is skipped and returns false, or panics when `CHAINSIG_REQUIRE_NVRTC=1` (as ci/nvrtc-check.sh
/// sets), so a CI run that meant to compile the kernels cannot pass by skipping.
pub fn nvrtc_or_skip() -> bool {
    if nvrtc_available() {
        return true;
    }
    assert!(
        std::env::var("CHAINSIG_REQUIRE_NVRTC").as_deref() != Ok("1"),
        "CHAINSIG_REQUIRE_NVRTC=1 but libnvrtc cannot be loaded (LD_LIBRARY_PATH?)"
    );
    eprintln!("skipped: libnvrtc not found; run crates/cuda/ci/nvrtc-check.sh");
    false
}

/// Compiles with NVRTC (no cache).
pub fn compile_uncached(src: &str, opts: &[String]) -> Result<Compiled, String> {
    use cudarc::nvrtc::{result, sys};
    if !nvrtc_available() {
        return Err("the NVRTC library (libnvrtc.so) cannot be loaded: install the CUDA toolkit or the nvidia-cuda-nvrtc wheel and put its lib/ on LD_LIBRARY_PATH".into());
    }
    let csrc =
        std::ffi::CString::new(src).map_err(|_| "kernel source holds a NUL byte".to_string())?;
    let prog =
        result::create_program(&csrc, None).map_err(|e| format!("nvrtcCreateProgram: {e:?}"))?;
    // SAFETY: prog was created above and is destroyed exactly once below.
    let compiled = unsafe { result::compile_program(prog, opts) };
    // SAFETY: as above.
    let log_raw = unsafe { result::get_program_log(prog) }.unwrap_or_default();
    let log = {
        let bytes: Vec<u8> = log_raw
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let out = match compiled {
        Err(e) => Err(format!("NVRTC compilation failed ({e:?}):\n{log}")),
        Ok(()) => {
            let mut size = 0usize;
            // SAFETY: prog compiled successfully; the buffer has the size NVRTC reports.
            unsafe {
                let r = sys::nvrtcGetCUBINSize(prog, &mut size);
                if r != sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
                    let _ = result::destroy_program(prog);
                    return Err(format!(
                        "nvrtcGetCUBINSize: {r:?} (was an sm_XY architecture given?)"
                    ));
                }
                let mut cubin = vec![0u8; size];
                let r = sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut std::ffi::c_char);
                if r != sys::nvrtcResult::NVRTC_SUCCESS {
                    let _ = result::destroy_program(prog);
                    return Err(format!("nvrtcGetCUBIN: {r:?}"));
                }
                Ok(Compiled {
                    cubin,
                    log,
                    from_cache: false,
                })
            }
        }
    };
    // SAFETY: prog is valid and not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

/// Compiles through the disk cache: a hit needs no NVRTC at all.
pub fn compile_cached(src: &str, arch: &str) -> Result<Compiled, String> {
    compile_cached_with(src, arch, options(arch))
}

/// As [`compile_cached`] with explicit options.
pub fn compile_cached_with(src: &str, arch: &str, opts: Vec<String>) -> Result<Compiled, String> {
    let key = cache_key(src, &opts, arch);
    let dir = cache_dir();
    if let Some(dir) = &dir {
        let bin = dir.join(format!("{key}.cubin"));
        if let Ok(cubin) = std::fs::read(&bin) {
            let log = std::fs::read_to_string(dir.join(format!("{key}.log"))).unwrap_or_default();
            return Ok(Compiled {
                cubin,
                log,
                from_cache: true,
            });
        }
    }
    let compiled = compile_uncached(src, &opts)?;
    if let Some(dir) = &dir {
        // The cache is an optimisation: failing to write it is not an error.
        if std::fs::create_dir_all(dir).is_ok() {
            let tmp = dir.join(format!("{key}.cubin.{}", std::process::id()));
            if std::fs::write(&tmp, &compiled.cubin).is_ok() {
                let _ = std::fs::write(dir.join(format!("{key}.log")), &compiled.log);
                let _ = std::fs::rename(&tmp, dir.join(format!("{key}.cubin")));
            }
        }
    }
    Ok(compiled)
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
