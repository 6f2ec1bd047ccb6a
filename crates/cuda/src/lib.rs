//! chainsig-cuda: batch verification of SM2 signatures (GB/T 32918.2), and of ECDSA over P-256 and
//! secp256k1 (FIPS 186-5, SEC 1), on an NVIDIA GPU; Ethereum sender recovery on secp256k1.
//!
//! The kernels (kernels/*.cuh, CUDA C++) are compiled at first use by NVRTC for the device's own
//! architecture and cached on disk (chainsig-gpu); the curve constants are generated from
//! `chainsig_core::curve`. The same arithmetic is compiled for the host by build.rs so CI checks
//! it without a GPU.
//!
//! Modules, from the public face down:
//! - [`backend`]: [`CudaBackend`], the `chainsig_core::Backend` it implements, and tickets.
//! - [`shards`]: one batch over several devices (or logical shards of one): parts in proportion
//!   to each device's measured rate, run side by side, a failed part redone on the others,
//!   answers merged in order.
//! - [`startup`]: opening the backend as the CLI and the C API do, known signers loaded.
//! - [`config`]: [`CudaConfig`], its defaults and its JSON / environment overrides; which
//!   devices are opened ([`Devices`]).
//! - `engine` (private): the opened device, its modules and the chunk pipeline; ECDSA, known
//!   signers, SM3 on the GPU and the self-tests.
//! - `launch` (private): launch geometry (blocks, grids, chunks, which kernel a batch runs).
//! - [`stage`]: the kernels' input layouts, and keys read back from their words.
//! - [`kernels`]: source assembly of each module and its NVRTC options; [`KernelConfig`].
//! - [`codegen`]: the generated curve header and the byte/word conversions.
//! - [`host`]: the kernels' arithmetic compiled for the host (tests and table building).
//! - [`ethtx`]: raw Ethereum transactions to senders: the module, its batch layout, its host build.
//! - [`signers`]: known signers' tables, their index and batches.
//! - [`messages`]: staging of messages for the SM3 kernel.
//! - [`known_answers`]: the embedded records and verdicts of the ECDSA start-up self-test.
//! - `hooks` (the `bench` feature): timing and test hooks for chainsig-bench.

pub mod backend;
pub mod codegen;
pub mod config;
mod engine;
pub mod ethtx;
#[cfg(feature = "bench")]
mod hooks;
pub mod host;
pub mod kernels;
pub mod known_answers;
mod launch;
pub mod messages;
pub mod raw;
pub mod shards;
pub mod signers;
pub mod stage;
pub mod startup;

pub use backend::{CudaBackend, DeviceInfo, PipelineTimes, Ticket, NAME};
pub use config::{CudaConfig, Devices};
pub use engine::{precompile, Upcoming};
pub use kernels::KernelConfig;

/// How s·G + t·P is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// The method of the paper 基于GPU的区块链交易验签加速技术 (GPU-based acceleration of
    /// blockchain transaction signature verification): window-1 simultaneous multiplication, table {∞, G, P, G+P}, co-Z additions.
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
