//! The public face of the CUDA backend: [`CudaBackend`], the `chainsig_core::Backend` it
//! implements, and [`Ticket`]s for batches queued to its worker thread. The work itself is the
//! engine's (`engine`); with the `bench` feature, the timing and test hooks the
//! benchmarks and device checks use (chainsig-bench) are public here too.

use crate::engine::Engine;
use crate::messages::MessageBatch;
use crate::raw::{RawOutcome, RawSm2Batch, RawVerdicts};
use crate::signers::SignerTables;
use crate::CudaConfig;
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::{Backend, BackendError, TxAnswer};
use chainsig_core::batch::{Batch, RecoverItem, Recovered};
use chainsig_core::bitmap::Bitmap;
use chainsig_gpu::{device_err, Resources};
use std::sync::{mpsc, Arc, Mutex};

/// Name under which the backend registers (that under which chainsig-gpu reports GPU failures).
pub const NAME: &str = chainsig_gpu::BACKEND_NAME;

type Job = (Arc<Batch>, mpsc::Sender<Result<Bitmap, BackendError>>);

/// SM2 batch verification on a CUDA GPU.
pub struct CudaBackend {
    pub(crate) engine: Arc<Mutex<Engine>>,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    resources: Vec<Resources>,
    from_cache: bool,
    cfg: CudaConfig,
}

/// Host time the engine's chunk pipeline has spent since the backend opened, for a caller's
/// phase breakdown (`chainsig verify --stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PipelineTimes {
    /// Copying chunks into the pinned staging buffers in the kernels' layouts (messages too).
    pub stage: std::time::Duration,
    /// Waiting for chunks' copies and kernels to complete, and taking their verdicts.
    pub wait: std::time::Duration,
}

/// A submitted batch; `confirm` waits for its verdicts.
pub struct Ticket {
    rx: mpsc::Receiver<Result<Bitmap, BackendError>>,
}

impl Ticket {
    /// Waits for the batch's verdict bitmap.
    pub fn confirm(self) -> Result<Bitmap, BackendError> {
        self.rx
            .recv()
            .unwrap_or_else(|_| Err(device_err("worker", "the verification worker stopped").into()))
    }
}

impl CudaBackend {
    /// Opens the device, compiles (or loads from the cache) the configured kernel and uploads the
    /// fixed-base table. Fails with `Unavailable` when there is no driver, GPU or NVRTC.
    pub fn new(cfg: CudaConfig) -> Result<Self, BackendError> {
        let (engine, resources, from_cache) = Engine::open(cfg)?;
        Ok(CudaBackend {
            engine: Arc::new(Mutex::new(engine)),
            jobs: Mutex::new(None),
            resources,
            from_cache,
            cfg,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &CudaConfig {
        &self.cfg
    }

    /// ptxas's report on the loaded kernel (registers, stack, spills).
    pub fn resources(&self) -> &[Resources] {
        &self.resources
    }

    /// Whether the kernel came from the disk cache.
    pub fn loaded_from_cache(&self) -> bool {
        self.from_cache
    }

    /// The engine pipeline's host time so far ([`PipelineTimes`]).
    pub fn pipeline_times(&self) -> PipelineTimes {
        self.engine.lock().map(|e| e.times).unwrap_or_default()
    }

    /// Queues a batch; batches are verified first come, first served by one worker thread (known
    /// signers' records through their tables, as in `verify_batch`).
    pub fn submit(&self, batch: Arc<Batch>) -> Result<Ticket, BackendError> {
        check_batch(&batch)?;
        let (tx, rx) = mpsc::channel();
        let mut jobs = self
            .jobs
            .lock()
            .map_err(|_| device_err("submit", "poisoned lock"))?;
        if jobs.is_none() {
            let (jtx, jrx) = mpsc::channel::<Job>();
            let engine = self.engine.clone();
            std::thread::Builder::new()
                .name("chainsig-cuda-worker".into())
                .spawn(move || {
                    for (batch, reply) in jrx {
                        let r = match engine.lock() {
                            Ok(mut e) => e.verify_any(&batch),
                            Err(_) => Err(device_err("worker", "poisoned lock").into()),
                        };
                        let _ = reply.send(r);
                    }
                })
                .map_err(|e| device_err("spawn worker", e))?;
            *jobs = Some(jtx);
        }
        jobs.as_ref()
            .expect("worker started above")
            .send((batch, tx))
            .map_err(|_| device_err("submit", "the verification worker stopped"))?;
        Ok(Ticket { rx })
    }

    /// Lets `host` (the CPU backend) verify the records of a batch outside the known signers when
    /// they are at most `most`, at the same time as the GPU verifies the known ones: for a few
    /// records the host's cores finish sooner than the GPU's default kernel, whose latency does
    /// not shrink with the batch. Without a helper, or above `most`, they run on the GPU.
    pub fn set_host_helper(&self, host: Arc<dyn Backend>, most: usize) -> Result<(), BackendError> {
        self.engine
            .lock()
            .map_err(|_| device_err("set host helper", "poisoned lock"))?
            .set_host(host, most);
        Ok(())
    }

    /// SM2 records from their own bytes ([`crate::raw`]): each key decoded and checked, Z_A and e
    /// computed, all on the GPU; records of known signers through their tables. A verdict and a
    /// fault code per record, in order. Through the registry ([`Backend::verify_raw_sm2`]) a GPU
    /// failure sends the batch to the CPU backend, which prepares it as the CPU path does.
    pub fn verify_raw(&self, batch: &RawSm2Batch) -> Result<RawVerdicts, BackendError> {
        self.engine
            .lock()
            .map_err(|_| device_err("verify raw", "poisoned lock"))?
            .verify_raw(batch)
    }

    /// Loads the known signers' fixed-base tables (464 KB of GPU memory each), replacing any loaded
    /// before; a [`crate::signers::SignerBatch`] names its signers by their index in `tables`. Fast mode only.
    pub fn load_signers(&self, tables: &SignerTables) -> Result<(), BackendError> {
        self.engine
            .lock()
            .map_err(|_| device_err("load signers", "poisoned lock"))?
            .load_signers(tables)
    }
}

/// SM2 batches (the low-s rule is ECDSA's) and ECDSA batches (P-256, secp256k1).
pub(crate) fn check_batch(batch: &Batch) -> Result<(), BackendError> {
    if !supported(batch.alg()) {
        return Err(BackendError::Unsupported {
            backend: NAME.into(),
            what: batch.alg().to_string(),
        });
    }
    if batch.alg() == Algorithm::Sm2 && batch.low_s() {
        return Err(BackendError::Unsupported {
            backend: NAME.into(),
            what: "the low-s rule (ECDSA only)".into(),
        });
    }
    Ok(())
}

/// The algorithms the backend verifies: SM2, and ECDSA on P-256 and secp256k1; it also recovers
/// Ethereum's senders (secp256k1).
fn supported(alg: Algorithm) -> bool {
    matches!(alg, Algorithm::Sm2 | Algorithm::P256 | Algorithm::Secp256k1)
}

impl Backend for CudaBackend {
    fn name(&self) -> &str {
        NAME
    }

    fn supports(&self, alg: Algorithm) -> bool {
        supported(alg)
    }

    /// SM2: with known signers loaded, their records go through their tables
    /// ([`crate::signers`]). ECDSA: the curve's kernels, loaded and checked at its first batch.
    fn verify_batch(&self, batch: &Batch) -> Result<Bitmap, BackendError> {
        check_batch(batch)?;
        self.engine
            .lock()
            .map_err(|_| device_err("verify", "poisoned lock"))?
            .verify_any(batch)
    }

    fn recovers(&self) -> bool {
        true
    }

    /// Ethereum's sender recovery on the GPU: the key by the ECDSA module's recovery kernel (s
    /// above n/2 refused), the address by Keccak-256 on the host's cores.
    fn recover_batch(&self, items: &[RecoverItem]) -> Result<Vec<Option<Recovered>>, BackendError> {
        self.engine
            .lock()
            .map_err(|_| device_err("recover", "poisoned lock"))?
            .recover(items)
    }

    fn recovers_transactions(&self) -> bool {
        true
    }

    /// Raw transactions through [`CudaBackend::recover_raw`] (the `ethtx` module), packed into one
    /// buffer; its fault numbers are `TxAnswer`'s.
    fn recover_transactions(&self, txs: &[&[u8]]) -> Result<Vec<TxAnswer>, BackendError> {
        let batch = crate::ethtx::RawBatch::pack(txs.iter().copied());
        let answers = self.recover_raw(&batch)?;
        Ok(answers
            .into_iter()
            .map(|a| a.map(|(address, pubkey)| Recovered { pubkey, address }))
            .collect())
    }

    /// Only where [`CudaConfig::raw_sm2`] turns the raw path on, and the kernel layout has it
    /// (not the compressed-key or row-major ablations).
    fn takes_raw_sm2(&self) -> bool {
        self.cfg.raw_sm2 && !self.cfg.kernel.row_major && !self.cfg.kernel.compress
    }

    fn verify_raw_sm2(&self, batch: &RawSm2Batch) -> Result<RawOutcome, BackendError> {
        Ok(self.verify_raw(batch)?.into_outcome())
    }

    /// e = SM3(Z_A ‖ M) is computed on the GPU for each chunk, then the chunk is verified as
    /// usual (with known signers loaded, their records through their tables). Verdict i is
    /// record i.
    fn verify_messages(&self, batch: &MessageBatch) -> Result<Bitmap, BackendError> {
        self.engine
            .lock()
            .map_err(|_| device_err("verify", "poisoned lock"))?
            .verify_messages(batch)
    }
}

pub(crate) fn unavailable(reason: impl Into<String>) -> BackendError {
    BackendError::Unavailable {
        backend: NAME.into(),
        reason: reason.into(),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_driver_means_a_clear_unavailable_error() {
        if chainsig_gpu::driver_available() {
            eprintln!("skipped: a CUDA driver is present here");
            return;
        }
        match CudaBackend::new(CudaConfig::default()) {
            Err(BackendError::Unavailable { backend, reason }) => {
                assert_eq!(backend, NAME);
                assert!(reason.contains("CUDA driver"), "{reason}");
            }
            Err(e) => panic!("wrong error: {e}"),
            Ok(_) => panic!("opened a CUDA device without a driver"),
        }
    }
}
