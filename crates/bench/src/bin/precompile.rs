//! Fills the kernel cache (`CHAINSIG_CACHE_DIR`) with every module the CUDA backend loads under
//! this environment: the configuration `CHAINSIG_CUDA_CONFIG` names (as the CLI reads it) and the
//! defines of `CHAINSIG_NVRTC_DEFINES`. Needs libnvrtc, not a GPU: run it here, carry the cache,
//! and the GPU machine's time goes to measuring rather than compiling.
//!
//! Usage: `precompile [ARCH]` (default sm_90), with LD_LIBRARY_PATH naming libnvrtc.

use chainsig_cuda::backend::{precompile, CudaConfig};

fn main() -> Result<(), String> {
    let arch = std::env::args().nth(1).unwrap_or_else(|| "sm_90".into());
    let config = CudaConfig::from_env()?;
    let started = std::time::Instant::now();
    let modules = precompile(&config, &arch).map_err(|e| e.to_string())?;
    println!(
        "{modules} modules for {arch} in the cache ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
