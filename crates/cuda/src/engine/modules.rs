//! Compiling the modules a backend loads: its SM2 modules side by side at open, and every module
//! it may load into the disk cache ahead of time ([`precompile`]).

use crate::backend::unavailable;
use crate::kernels::{self, KernelConfig};
use crate::CudaConfig;
use chainsig_core::backend::BackendError;

/// Compiles, side by side on a first run and through the disk cache, the SM2 modules a backend of
/// `cfg` loads: its main kernel first, then its forms for small batches, one module each.
pub(super) fn compile_sm2_modules(
    cfg: &CudaConfig,
    arch: &str,
) -> Result<Vec<(KernelConfig, chainsig_gpu::Compiled)>, BackendError> {
    let kernels = cfg.sm2_kernels();
    let compiled: Vec<chainsig_gpu::Compiled> = std::thread::scope(|scope| {
        let jobs: Vec<_> = kernels
            .iter()
            .map(|k| {
                scope.spawn(move || kernels::compile_config(&chainsig_core::curve::SM2, k, arch))
            })
            .collect();
        jobs.into_iter()
            .map(|j| {
                j.join()
                    .unwrap_or_else(|_| Err("the NVRTC compile panicked".into()))
            })
            .collect::<Result<Vec<_>, String>>()
    })
    .map_err(unavailable)?;
    Ok(kernels.into_iter().zip(compiled).collect())
}

/// Compiles every module a backend of `cfg` may load on a device of architecture `arch` (the SM2
/// modules, the ECDSA module of each curve, the SM3 module, the raw SM2 module, the raw Ethereum
/// transaction module) into the disk cache, under the environment's `CHAINSIG_NVRTC_DEFINES`.
/// Needs NVRTC but no GPU: a GPU machine given the cache spends none of its time compiling. Returns the number of modules.
pub fn precompile(cfg: &CudaConfig, arch: &str) -> Result<usize, BackendError> {
    cfg.validate().map_err(unavailable)?;
    let mut modules = compile_sm2_modules(cfg, arch)?.len();
    let ecdsa = kernels::ecdsa_config(cfg.kernel.max_registers);
    for curve in [chainsig_core::curve::P256, chainsig_core::curve::SECP256K1] {
        kernels::compile_ecdsa(&curve, &ecdsa, arch).map_err(unavailable)?;
        modules += 1;
    }
    chainsig_gpu::compile_cached(&kernels::sm3_source(), arch).map_err(unavailable)?;
    kernels::compile_raw(arch).map_err(unavailable)?;
    crate::ethtx::compile(arch).map_err(unavailable)?;
    Ok(modules + 3)
}
