//! chainsig-gpu: the CUDA runtime that chainsig's two GPU crates (`chainsig-cuda`, signatures;
//! `chainsig-ctru-cuda`, the CTRU-Prime KEM) share, written once so they cannot drift apart.
//!
//! Modules:
//! - [`error`]: the one error type of a GPU call ([`Error`]) and its conversion into
//!   `chainsig_core`'s `BackendError`.
//! - [`driver`]: whether the CUDA driver and NVRTC can be loaded here, and opening a device.
//! - [`nvrtc`]: NVRTC options, compilation straight to CUBIN, and ptxas's resource report
//!   (registers, stack, spills).
//! - [`cache`]: the on-disk CUBIN cache, keyed by source, options and architecture.
//! - [`fault`]: the `fault-injection` switch that fails chosen launches and copies (tests only).
//! - [`memory`]: RAII page-locked host buffers ([`Pinned`]) and device buffers ([`DevBuf`]).
//! - [`timing`]: CUDA events, a stopwatch over a stream, and the median the benchmarks report.
//!
//! **Why hand-written over cudarc's safe layer.** The batch pipelines manage their own
//! synchronisation (a chunk's pinned buffers are reused only after its event completes), so
//! cudarc's per-buffer event tracking is not wanted for the buffers and events here; cudarc's
//! `result` layer is called directly, each call with its safety argument.

pub mod cache;
pub mod driver;
pub mod error;
pub mod fault;
pub mod memory;
pub mod nvrtc;
pub mod timing;

pub use driver::{driver_available, nvrtc_available, nvrtc_or_skip, open, Opened};
pub use error::{device_err, Error, BACKEND_NAME};
pub use memory::{DevBuf, Pinned};
pub use nvrtc::{
    compile_cached, compile_cached_with, compile_uncached, options, parse_resources, Compiled,
    Resources,
};
pub use timing::{median, Event, Stopwatch};

/// cudarc, as this crate uses it (the same version and features for every GPU crate).
pub use cudarc;
