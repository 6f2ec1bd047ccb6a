//! chainsig-cuda: batch verification of SM2 signatures, and of ECDSA over P-256 and secp256k1, on
//! an NVIDIA GPU.
//!
//! The kernels (kernels/*.cuh, CUDA C++) are compiled at first use by NVRTC for the device's own
//! architecture and cached on disk; the curve constants are generated from `chainsig_core::curve`.
//! The same arithmetic is compiled for the host by build.rs so CI checks it without a GPU.

pub mod backend;
pub mod codegen;
pub mod host;
pub mod kernel;
pub mod known_answers;
pub mod messages;
pub mod signers;
pub mod sweep;

/// How s·G + t·P is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// The seed paper: window-1 simultaneous multiplication, table {∞, G, P, G+P}, co-Z additions.
    Paper,
    /// s·G from the fixed-base table and t·P by window-1 double-and-add, added at the end.
    Separate,
    /// Fixed-base table for G, signed 4-bit window for P, comparison without inversion.
    Fast,
}

impl Mode {
    pub(crate) fn code(self) -> i32 {
        match self {
            Mode::Paper => 0,
            Mode::Separate => 1,
            Mode::Fast => 2,
        }
    }
}

/// Field inversion used to return to affine coordinates (paper and separate modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Inversion {
    /// Binary extended Euclid.
    Euclid,
    /// Fermat's little theorem, a^(p−2).
    Fermat,
}

impl Inversion {
    pub(crate) fn code(self) -> i32 {
        match self {
            Inversion::Euclid => 0,
            Inversion::Fermat => 1,
        }
    }
}

/// A prepared record as the kernels' little-endian words.
pub trait HostWords {
    fn host_words(&self) -> host::HostRecord;
}

impl HostWords for chainsig_core::PreparedItem {
    fn host_words(&self) -> host::HostRecord {
        host::HostRecord {
            e: codegen::words_from_be(&self.e),
            r: codegen::words_from_be(&self.r),
            s: codegen::words_from_be(&self.s),
            px: codegen::words_from_be(&self.px),
            py: codegen::words_from_be(&self.py),
        }
    }
}
