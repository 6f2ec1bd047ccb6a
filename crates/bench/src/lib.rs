//! chainsig-bench: the benchmarks and device programs of chainsig's GPU crates, kept out of the
//! libraries (`publish = false`). It enables the `bench` feature of chainsig-cuda and
//! chainsig-ctru-cuda, whose timing and test hooks it calls.
//!
//! Modules:
//! - [`sweep`]: the SM2 / ECDSA benchmark sweep (the Fig. 3 and Table 1 experiments of the seed
//!   paper, 基于GPU的区块链交易验签加速技术, and the ablations), each point's verdicts checked.
//! - [`ctru`]: the CTRU-Prime product and KEM timing on the GPU, their checks, and the CPU
//!   baselines, one file per job.
//!
//! Programs (src/bin/, command lines in README.md): `device_check` (the GPU machine's SM2 / ECDSA
//! acceptance run), `ctru_device_check` (the CTRU one), `kernel_census` (static instruction
//! counts of the kernels), `precompile` (fills the kernel cache without a GPU).

pub mod ctru;
pub mod sweep;

/// The median every report here gives (chainsig-gpu's, one implementation for all).
pub use chainsig_gpu::median;
