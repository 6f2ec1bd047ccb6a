//! Whether the CUDA driver and NVRTC can be loaded here, and opening a device.
//!
//! cudarc loads both libraries at first use and panics when they are missing, so every entry
//! point checks first and reports [`Error::Unavailable`] instead.

use crate::error::{device_err, Error};
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// Whether a CUDA driver library can be loaded here (cudarc would panic on first use otherwise).
pub fn driver_available() -> bool {
    cudarc::get_lib_name_candidates("cuda")
        .iter()
        // SAFETY: loading libcuda runs no initialisation with preconditions.
        .any(|name| unsafe { libloading::Library::new(name) }.is_ok())
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
    eprintln!("skipped: libnvrtc not found; run .ci/nvrtc-check.sh");
    false
}

/// An opened device: its context and compute capability.
pub struct Opened {
    pub ctx: Arc<CudaContext>,
    /// (major, minor), e.g. (9, 0).
    pub capability: (i32, i32),
    /// The NVRTC architecture of the device, e.g. "sm_90": kernels are compiled for it exactly,
    /// so the driver never JIT-compiles PTX.
    pub arch: String,
}

/// Opens CUDA device `ordinal`: [`Error::Unavailable`] without a driver or without that device.
pub fn open(ordinal: usize) -> Result<Opened, Error> {
    if !driver_available() {
        return Err(Error::Unavailable(
            "no CUDA driver (libcuda.so) found on this machine".into(),
        ));
    }
    let ctx = CudaContext::new(ordinal)
        .map_err(|e| Error::Unavailable(format!("cannot open CUDA device {ordinal}: {e:?}")))?;
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| device_err("compute capability", e))?;
    Ok(Opened {
        ctx,
        capability: (major, minor),
        arch: format!("sm_{major}{minor}"),
    })
}
