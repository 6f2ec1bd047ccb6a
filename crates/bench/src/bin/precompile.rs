//! Fills the kernel cache (`CHAINSIG_CACHE_DIR`) with every module the CUDA backend loads under
//! this environment: the configuration `CHAINSIG_CUDA_CONFIG` names (as the CLI reads it) and the
//! defines of `CHAINSIG_NVRTC_DEFINES`. Needs libnvrtc, not a GPU: run it here, carry the cache,
//! and the GPU machine's time goes to measuring rather than compiling.
//!
//! Usage: `precompile [ARCH]` (default sm_90), with LD_LIBRARY_PATH naming libnvrtc.

use chainsig_cuda::{precompile, CudaConfig};
use clap::Parser;

/// Fills the kernel cache with every module the CUDA backend loads (needs NVRTC, not a GPU).
#[derive(Parser)]
struct Args {
    /// The device architecture to compile for.
    #[arg(default_value = "sm_90")]
    arch: String,
}

fn main() -> Result<(), String> {
    let arch = Args::parse().arch;
    let config = CudaConfig::from_env()?;
    let started = std::time::Instant::now();
    let modules = precompile(&config, &arch).map_err(|e| e.to_string())?;
    println!(
        "{modules} modules for {arch} in the cache ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
