//! The registry the commands use: the CPU backend always, accelerators when they start.

use chainsig_core::Registry;
use std::sync::Arc;

/// Backends for a run that asked for `requested` (`auto`, `cpu`, `cuda`). Accelerators are only
/// started when they may be used, so `--backend cpu` never touches a GPU driver. When the GPU
/// cannot start, the reason is kept: `--backend cuda` reports it, `auto` uses the CPU.
pub fn registry(requested: &str) -> Registry {
    let mut registry = chainsig_cpu::cpu_registry();
    if requested != chainsig_core::backend::CPU {
        match chainsig_cuda::backend::CudaBackend::new(chainsig_cuda::backend::CudaConfig::default())
        {
            Ok(cuda) => registry.register(Arc::new(cuda)),
            Err(chainsig_core::BackendError::Unavailable { reason, .. }) => {
                registry.register_unavailable(chainsig_cuda::backend::NAME, reason)
            }
            Err(other) => {
                registry.register_unavailable(chainsig_cuda::backend::NAME, other.to_string())
            }
        }
    }
    registry
}
