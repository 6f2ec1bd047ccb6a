//! Loading, ahead of a run, the modules its first batch would otherwise load: the raw SM2 module
//! (and its self-test), an ECDSA curve's module (and its self-test), the raw-transaction kernel.
//! Each is loaded once per engine, at the first batch that needs it, with the engine's lock held,
//! so every worker's first chunk waits behind it. A caller that knows what is coming
//! ([`crate::CudaBackend::warm_up`]) loads it while it reads and parses its first chunks. On an
//! H100 (BENCHMARKS.md, "The GPU user paths after the staging pool") the loads cost 3.2 ms for
//! the raw SM2 module, 34–38 ms for an ECDSA curve's module and self-test and 3.0 ms for the
//! transaction kernel: the 40–66 ms first SM2 chunks of earlier timelines were mostly not the
//! module.

use super::Engine;
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::BackendError;

/// Work a caller is about to send, whose modules [`crate::CudaBackend::warm_up`] loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upcoming {
    /// Signatures of this algorithm (SM2: from their bytes, the raw path, where the backend
    /// takes raw records; its digest path is loaded when the device opens).
    Verify(Algorithm),
    /// Sender recovery on this curve's prepared records.
    Recover(Algorithm),
    /// Raw Ethereum transactions to their senders.
    RawTransactions,
}

impl Engine {
    /// Loads what `upcoming` needs, as its first batch would: a module already loaded costs
    /// nothing; a module that fails its check is refused here as it would be there (the error
    /// is the caller's to keep or drop: the first batch meets it again).
    pub(crate) fn warm_up(
        &mut self,
        upcoming: Upcoming,
        takes_raw_sm2: bool,
    ) -> Result<(), BackendError> {
        match upcoming {
            Upcoming::Verify(Algorithm::Sm2) if takes_raw_sm2 => self.raw_kernels().map(drop),
            Upcoming::Verify(Algorithm::Sm2) => Ok(()),
            Upcoming::Verify(alg) | Upcoming::Recover(alg) => self.ecdsa(alg),
            Upcoming::RawTransactions => self.ethtx(),
        }
    }
}
