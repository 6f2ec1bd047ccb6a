//! Starting the CUDA backend the way every front end does (the CLI's registry, the C API's
//! contexts): started and registered, or the reason it could not start registered in its place;
//! and known signers loaded, with the host's CPU backend as helper for the few records of a
//! batch outside them.

use crate::signers::{SignerKey, SignerTables};
use crate::{CudaBackend, CudaConfig, NAME};
use chainsig_core::backend::{BackendError, CPU};
use chainsig_core::Registry;
use std::sync::Arc;

/// Records per host core that a batch may have outside the known signers and still send to the
/// CPU helper, beside the GPU's known part: a few records cost 40–100 µs each on a core, where on
/// the GPU they would take a kernel's whole latency (about 1 ms with the small-batch kernels).
pub const HOST_HELPER_RECORDS_PER_CORE: usize = 8;

/// Starts the CUDA backend with `config` and registers it in `registry` under [`NAME`]; if it
/// cannot start, registers the reason instead (an unavailable backend's own reason, any other
/// error as it reads), so `auto` uses the CPU and `cuda` reports why. Returns the backend when it
/// started, for loading known signers later.
pub fn start(registry: &mut Registry, config: CudaConfig) -> Option<Arc<CudaBackend>> {
    match CudaBackend::new(config) {
        Ok(cuda) => {
            let cuda = Arc::new(cuda);
            registry.register(cuda.clone());
            Some(cuda)
        }
        Err(BackendError::Unavailable { reason, .. }) => {
            registry.register_unavailable(NAME, reason);
            None
        }
        Err(other) => {
            registry.register_unavailable(NAME, other.to_string());
            None
        }
    }
}

/// Why known signers could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KnownSignersError {
    /// A key's table could not be built (the message names the key by its index).
    #[error("{0}")]
    Tables(String),
    /// The device refused the tables, or the CPU helper could not be set.
    #[error("loading the known signers' tables: {0}")]
    Load(#[from] BackendError),
}

/// Replaces `cuda`'s known signers by `keys` (their tables built on the host's cores, 464 KB
/// each), and lets `registry`'s CPU backend verify the records of a batch outside them when they
/// are few ([`HOST_HELPER_RECORDS_PER_CORE`] per core). Returns the tables (for their count and
/// size).
pub fn load_known_signers(
    cuda: &CudaBackend,
    registry: &Registry,
    keys: &[SignerKey],
) -> Result<SignerTables, KnownSignersError> {
    let tables = SignerTables::build(keys).map_err(KnownSignersError::Tables)?;
    cuda.load_signers(&tables)?;
    let cpu = registry.get(CPU)?;
    cuda.set_host_helper(
        cpu,
        HOST_HELPER_RECORDS_PER_CORE * rayon::current_num_threads(),
    )?;
    Ok(tables)
}
