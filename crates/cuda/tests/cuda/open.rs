//! Opening the backend for a GPU test, shared by this binary's GPU modules and the fault-injection
//! binary (`tests/gpu_fault.rs`, which includes this file).

use chainsig_cuda::{CudaBackend, CudaConfig};
use chainsig_gpu::driver_available;

/// The backend opened with `config`, or None (the test prints why and skips) without a driver or
/// a usable GPU; with `CHAINSIG_REQUIRE_GPU=1` that fails the test instead. Every GPU test opens
/// its backend here.
pub(crate) fn open_or_skip(config: CudaConfig) -> Option<CudaBackend> {
    let why = if !driver_available() {
        "no CUDA driver on this machine".to_string()
    } else {
        match CudaBackend::new(config) {
            Ok(b) => return Some(b),
            Err(e) => e.to_string(),
        }
    };
    assert!(
        std::env::var("CHAINSIG_REQUIRE_GPU").as_deref() != Ok("1"),
        "CHAINSIG_REQUIRE_GPU=1 but the GPU cannot be used: {why}"
    );
    eprintln!("skipped: {why}");
    None
}
