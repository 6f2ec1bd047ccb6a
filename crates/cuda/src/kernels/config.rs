//! The compile-time switches of one verification kernel ([`KernelConfig`]): its mode, inversion,
//! key form, layout, register cap, product routine and the small-batch forms (compact, lane
//! pairs, quads, split), with the symbol name and instantiation line each combination gets.

use crate::{Inversion, Mode};

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
    /// products of the point formulas (kernels/lanes.cuh). It halves the chain of dependent
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
    /// few warps share an SM. The ECDSA modules' default, whose one kernel also serves the sizes
    /// where fetch dominates; the SM2 default kernel was no faster with it (BENCHMARKS.md).
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

    pub(crate) fn instantiate(&self) -> String {
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
                            ..KernelConfig::default()
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

    /// The default kernel ([`KernelConfig::default`]).
    pub fn default_fast() -> KernelConfig {
        KernelConfig::default()
    }
}

/// The default kernel: fast mode, full keys, column-major, even/odd products, capped at 128
/// registers (16 warps an SM), no small-batch form. Full keys: recovering y from a compressed key
/// costs about 420 multiplications per verification, more than the 32 bytes per record it saves
/// on PCIe. The cap: the extra warps it lets in hide more latency than the spills it causes
/// (they stay in L1) cost; [`KernelConfig::spill_budget`] bounds them. The measurements are in
/// BENCHMARKS.md.
impl Default for KernelConfig {
    fn default() -> KernelConfig {
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
    /// trade-off with a little headroom, so a change that spills more is caught. The spills each
    /// capped kernel showed on sm_90 with NVRTC 13.0 are in BENCHMARKS.md; the budgets leave
    /// about 20% above them.
    pub fn spill_budget(&self) -> u32 {
        match self.max_registers {
            Some(cap) if self.mode == Mode::Fast && cap <= 128 && self.rolled => 448,
            Some(cap) if self.mode == Mode::Fast && cap <= 128 => 384,
            Some(_) if self.mode == Mode::Fast => 112,
            _ => 0,
        }
    }
}
