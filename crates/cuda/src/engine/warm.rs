//! What a call needs loaded ([`Needs`]), and loading, ahead of a run, the modules its first batch
//! would otherwise load: the raw SM2 module (and its self-test), an ECDSA curve's module (and its
//! self-test), the raw-transaction kernel, SM3's. Each is loaded once per engine, at the first
//! batch that needs it, with the engine's write lock held, so every worker's first chunk waits
//! behind it. A caller that knows what is coming
//! ([`crate::CudaBackend::warm_up`]) loads it while it reads and parses its first chunks. On an
//! H100 (BENCHMARKS.md, "The GPU user paths after the staging pool") the loads cost 3.2 ms for
//! the raw SM2 module, 34–38 ms for an ECDSA curve's module and self-test and 3.0 ms for the
//! transaction kernel: the 40–66 ms first SM2 chunks of earlier timelines were mostly not the
//! module.

use super::Engine;
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::BackendError;
use chainsig_gpu::device_err;

/// Work a caller is about to send, whose modules [`crate::CudaBackend::warm_up`] loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upcoming {
    /// Signatures of this algorithm (SM2: from their bytes, the raw path, where the backend
    /// takes raw records, else the SM3 kernel for records with messages; its digest path is
    /// loaded when the device opens).
    Verify(Algorithm),
    /// Sender recovery on this curve's prepared records.
    Recover(Algorithm),
    /// Raw Ethereum transactions to their senders.
    RawTransactions,
}

/// What a call needs loaded before it runs on a shared engine ([`crate::backend`] checks under
/// the read lock and loads under the write lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    /// The SM2 modules, loaded when the device opens.
    Nothing,
    /// An ECDSA curve's module (P-256 or secp256k1).
    Curve(Algorithm),
    /// The SM3 kernel, for SM2 records that carry their messages.
    Sm3,
    /// The raw SM2 module.
    RawSm2,
    /// The raw-transaction kernels (and secp256k1's module, whose recovery kernel they use).
    RawTransactions,
}

impl Needs {
    /// What `upcoming` work needs ([`crate::CudaBackend::warm_up`]): raw SM2 records where the
    /// backend takes them, else SM3 for SM2 records with messages.
    pub(crate) fn coming(upcoming: Upcoming, takes_raw_sm2: bool) -> Needs {
        match upcoming {
            Upcoming::Verify(Algorithm::Sm2) if takes_raw_sm2 => Needs::RawSm2,
            Upcoming::Verify(Algorithm::Sm2) => Needs::Sm3,
            Upcoming::Verify(alg) | Upcoming::Recover(alg) => Needs::Curve(alg),
            Upcoming::RawTransactions => Needs::RawTransactions,
        }
    }

    /// What a batch of `alg` needs: an ECDSA curve's module, or (SM2) nothing more.
    pub(crate) fn verifying(alg: Algorithm) -> Needs {
        match alg {
            Algorithm::Sm2 => Needs::Nothing,
            alg => Needs::Curve(alg),
        }
    }
}

impl Engine {
    /// Whether what `needs` names is loaded.
    pub(crate) fn has(&self, needs: Needs) -> bool {
        match needs {
            Needs::Nothing => true,
            Needs::Curve(alg) => self.ecdsa.iter().any(|k| k.alg == alg),
            Needs::Sm3 => self.sm3.is_some(),
            Needs::RawSm2 => self.raw.is_some(),
            Needs::RawTransactions => self.ethtx.is_some(),
        }
    }

    /// Loads (and checks) what `needs` names, if not loaded yet.
    pub(crate) fn load(&mut self, needs: Needs) -> Result<(), BackendError> {
        match needs {
            Needs::Nothing => Ok(()),
            Needs::Curve(alg) => self.ecdsa(alg),
            Needs::Sm3 => self.sm3_function().map(drop),
            Needs::RawSm2 => self.raw_kernels().map(drop),
            Needs::RawTransactions => self.ethtx(),
        }
    }

    /// An error for a call that reached the engine without what it needs loaded (the backend
    /// loads it first; this is the guard behind that, never a panic).
    pub(super) fn require(&self, needs: Needs) -> Result<(), BackendError> {
        if self.has(needs) {
            Ok(())
        } else {
            Err(device_err("engine", format!("{needs:?} not loaded before the call")).into())
        }
    }
}
