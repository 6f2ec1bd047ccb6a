//! The CTRU-Prime benchmark, shared by the `ctru_device_check` program and `chainsig bench --kem
//! ctru`: one implementation of the GPU correctness check, the GPU timing sweep and the CPU
//! baselines they are compared with.
//!
//! * [`run_gpu`] ([`products`]): for every n of a [`Plan`] ([`report`]), both products and every
//!   [`Method`]: (1) correctness, a random batch in the KEM's ranges (257 instances, not a
//!   multiple of 32) plus extreme instances ([`operands`]), every instance against
//!   `chainsig_ctru`'s schoolbook product, and at batch [`CROSS_CHECK_BATCH`] the three methods
//!   against each other with 64 sampled instances against the schoolbook; (2) timing over the
//!   plan's batch sizes with CUDA events (`GpuPolyMul::time_batch`), each size against the
//!   single-core CPU NTT ([`cpu_ntt_us`]).
//! * [`cpu`]: [`cpu_ntt_us`], one product by `chainsig_ctru::ntt::NttMultiplier` on the calling
//!   thread; [`cpu_kem`], keygen / encaps / decaps per second over a batch, on one core and on
//!   every core of the rayon pool, each decapsulated key checked against the encapsulated one.
//! * [`run_gpu_kem`] ([`kem`]): the whole KEM in batch on the GPU (`GpuKem`): for every n, (1)
//!   correctness on a fresh random key pair, GPU encaps against the CPU encaps on the same seeds
//!   and GPU decaps against the CPU decaps on the honest ciphertexts and tampered copies (which
//!   must take the rejection path), and (2) batch encaps and decaps per second over
//!   [`KEM_SIZES`] with CUDA events, every timed batch's decapsulated keys checked against its
//!   encapsulated ones.
//!
//! Hand-written because the figures are this project's own (Fig. 6 of the seed paper,
//! 基于GPU的区块链交易验签加速技术, re-run on our GPU); criterion measures single functions on
//! the CPU and knows nothing of CUDA events or batch sweeps.

pub mod cpu;
pub mod kem;
pub mod operands;
pub mod products;
pub mod report;
#[cfg(test)]
mod tests;

pub use chainsig_ctru_cuda::Method;
pub use cpu::*;
pub use kem::*;
pub use operands::*;
pub use products::*;
pub use report::*;
