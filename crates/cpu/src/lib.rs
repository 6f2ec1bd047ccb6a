//! chainsig-cpu: the CPU side of chainsig.
//!
//! - [`prepare`]: stage 1 for every backend (SEC1 decoding, hashing, Z_A cache).
//! - [`CpuBackend`]: SM2, secp256k1 and P-256 verification on every core through rayon, 64
//!   records (one verdict word) per task so threads never share a word.

pub mod ecdsa_p256;
pub mod ecdsa_secp256k1;
pub mod pipeline;
pub mod prepare;
pub mod sm2;

use chainsig_core::backend::{Backend, BackendError, CPU};
use chainsig_core::{Algorithm, Batch, Bitmap, PreparedItem, RecoverItem, Recovered};
use rayon::prelude::*;

/// Verifies one prepared item on this thread.
pub fn verify_item(alg: Algorithm, low_s: bool, item: &PreparedItem) -> bool {
    match alg {
        Algorithm::Sm2 => sm2::verify(item),
        Algorithm::Secp256k1 => ecdsa_secp256k1::verify(item, low_s),
        Algorithm::P256 => ecdsa_p256::verify(item, low_s),
    }
}

/// The CPU backend: every algorithm, on a rayon pool (the global one unless a thread count is given).
pub struct CpuBackend {
    pool: Option<rayon::ThreadPool>,
}

impl CpuBackend {
    /// Uses rayon's global pool: every core.
    pub fn new() -> Self {
        CpuBackend { pool: None }
    }

    /// Uses its own pool of `threads` threads (1 measures a single core).
    pub fn with_threads(threads: usize) -> Result<Self, BackendError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| BackendError::Unavailable {
                backend: CPU.into(),
                reason: format!("cannot start {threads} threads: {e}"),
            })?;
        Ok(CpuBackend { pool: Some(pool) })
    }

    fn run<T: Send>(&self, job: impl FnOnce() -> T + Send) -> T {
        match &self.pool {
            Some(pool) => pool.install(job),
            None => job(),
        }
    }
}

impl Default for CpuBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        CPU
    }

    fn supports(&self, _alg: Algorithm) -> bool {
        true
    }

    fn verify_batch(&self, batch: &Batch) -> Result<Bitmap, BackendError> {
        let (alg, low_s, len) = (batch.alg(), batch.low_s(), batch.len());
        // Record by record, so that even a few dozen records are spread over every core (a
        // GPU backend hands this backend the few records it would be slowest at).
        let verdicts: Vec<bool> = self.run(|| {
            (0..len)
                .into_par_iter()
                .map(|i| verify_item(alg, low_s, &batch.item(i)))
                .collect()
        });
        Ok(Bitmap::from_bools(verdicts))
    }

    fn recovers(&self) -> bool {
        true
    }

    fn recover_batch(&self, items: &[RecoverItem]) -> Result<Vec<Option<Recovered>>, BackendError> {
        Ok(self.run(|| {
            items
                .par_iter()
                .map(|item| ecdsa_secp256k1::recover(item, ecdsa_secp256k1::SRule::LowOnly))
                .collect()
        }))
    }
}

/// A registry holding the CPU backend, the base every surface adds accelerators to.
pub fn cpu_registry() -> chainsig_core::Registry {
    let mut registry = chainsig_core::Registry::new();
    registry.register(std::sync::Arc::new(CpuBackend::new()));
    registry
}
