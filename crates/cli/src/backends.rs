//! The registry the commands use: the CPU backend always, accelerators when they start.

use chainsig_core::Registry;

/// Backends for a run that asked for `requested` (`auto`, `cpu`, `cuda`). Accelerators are only
/// started when they may be used, so `--backend cpu` never touches a GPU driver.
pub fn registry(requested: &str) -> Registry {
    let mut registry = chainsig_cpu::cpu_registry();
    if requested != chainsig_core::backend::CPU {
        registry.register_unavailable("cuda", "the CUDA backend is not part of this build yet");
    }
    registry
}
