//! The public face of the CUDA backend: [`CudaBackend`], the `chainsig_core::Backend` it
//! implements, and [`Ticket`]s for batches queued to its worker thread. The backend holds one
//! engine (`engine`) per configured device or logical shard, and every entry point shares its
//! batch among them through [`crate::shards`]: split in proportion to each device's measured
//! rate, parts run side by side, a failed part redone on the other devices, answers merged in
//! order. With one device a batch goes whole to its engine, uncopied; with several, a prepared
//! batch's parts are staged straight from it, other kinds' parts copied. With the `bench` feature,
//! the timing and test hooks the benchmarks and device checks use (chainsig-bench) are public
//! here too; they run on the first device.

use crate::engine::{Engine, Needs};
use crate::messages::MessageBatch;
use crate::raw::{RawOutcome, RawSm2Batch, RawVerdicts};
use crate::shards::{part, ShardStats, Shards};
use crate::signers::SignerTables;
use crate::CudaConfig;
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::{Backend, BackendError, TxAnswer};
use chainsig_core::batch::{Batch, RecoverItem, Recovered};
use chainsig_core::bitmap::Bitmap;
use chainsig_gpu::{device_err, Resources};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

/// Name under which the backend registers (that under which chainsig-gpu reports GPU failures).
pub const NAME: &str = chainsig_gpu::BACKEND_NAME;

type Job = (Arc<Batch>, mpsc::Sender<Result<Bitmap, BackendError>>);

/// One opened device, or one logical shard of a device: an engine of its own, shared by the
/// calls in progress (each runs on a slot set of its own) and locked for writing only to load a
/// module, the known signers or the host helper.
pub(crate) struct Device {
    ordinal: usize,
    name: String,
    engine: RwLock<Engine>,
    /// Nanoseconds callers have waited for the engine's lock, summed ([`PipelineTimes::queue`]).
    queued: AtomicU64,
}

impl Device {
    /// The engine for a call, with what the call `needs` loaded first (under the write lock, by
    /// the first call that needs it), its context bound to the calling thread.
    pub(crate) fn engine(
        &self,
        what: &'static str,
        needs: Needs,
    ) -> Result<RwLockReadGuard<'_, Engine>, BackendError> {
        let asked = Instant::now();
        let poisoned = || BackendError::from(device_err(what, "poisoned lock"));
        let mut engine = self.engine.read().map_err(|_| poisoned())?;
        if !engine.has(needs) {
            drop(engine);
            self.engine_mut(what)?.load(needs)?;
            engine = self.engine.read().map_err(|_| poisoned())?;
        }
        self.count_queue(asked);
        engine.bind()?;
        Ok(engine)
    }

    /// The engine alone (no call runs meanwhile), its context bound to the calling thread.
    pub(crate) fn engine_mut(
        &self,
        what: &'static str,
    ) -> Result<RwLockWriteGuard<'_, Engine>, BackendError> {
        let asked = Instant::now();
        let engine = self
            .engine
            .write()
            .map_err(|_| BackendError::from(device_err(what, "poisoned lock")))?;
        self.count_queue(asked);
        engine.bind()?;
        Ok(engine)
    }

    fn count_queue(&self, asked: Instant) {
        let waited = u64::try_from(asked.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.queued.fetch_add(waited, Ordering::Relaxed);
    }
}

/// What [`CudaBackend::devices`] tells of one engine.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// The ordinal among the devices the driver shows (repeated for logical shards of one card).
    pub ordinal: usize,
    /// The driver's name of the card.
    pub name: String,
    /// Records done, time, measured rate and failures so far.
    pub stats: ShardStats,
}

/// SM2 and ECDSA batch verification on every CUDA device configured ([`CudaConfig::devices`]),
/// each batch shared among them ([`crate::shards`]).
pub struct CudaBackend {
    pub(crate) shards: Arc<Shards<Device>>,
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
    /// Of `stage`: making a slot's pinned and device buffers larger for a chunk larger than any
    /// it held before (a pinned allocation, and a device free that may wait for the device).
    pub grow: std::time::Duration,
    /// Waiting for chunks' copies and kernels to complete, and taking their verdicts.
    pub wait: std::time::Duration,
    /// Turning a finished chunk's answer rows into the caller's answers (raw transactions:
    /// fault, address and key per record).
    pub decode: std::time::Duration,
    /// Callers waiting for the engine (while a module loads) or for a slot set (more calls at
    /// once than an engine's sets), summed over callers.
    pub queue: std::time::Duration,
}

impl PipelineTimes {
    /// Adds `other`'s times to these.
    pub fn add(&mut self, other: &PipelineTimes) {
        self.stage += other.stage;
        self.grow += other.grow;
        self.wait += other.wait;
        self.decode += other.decode;
        self.queue += other.queue;
    }

    /// The time spent since `before` (an earlier reading of the same backend).
    pub fn since(&self, before: &PipelineTimes) -> PipelineTimes {
        PipelineTimes {
            stage: self.stage - before.stage,
            grow: self.grow - before.grow,
            wait: self.wait - before.wait,
            decode: self.decode - before.decode,
            queue: self.queue - before.queue,
        }
    }
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
    /// Opens the configured devices ([`CudaConfig::devices`]: every visible one by default), one
    /// engine each, side by side: each compiles (or loads from the cache) the configured kernels
    /// and uploads the fixed-base table; engines of the same architecture share the compiled
    /// modules. Fails with `Unavailable` when there is no driver, GPU or NVRTC, or when any
    /// device listed cannot be opened (the error names its ordinal): a device list is honoured
    /// exactly or refused.
    pub fn new(cfg: CudaConfig) -> Result<Self, BackendError> {
        cfg.validate().map_err(unavailable)?;
        let driver = chainsig_gpu::driver_available();
        if driver {
            crate::engine::build_tables_early();
        }
        let ordinals = if driver {
            cfg.devices.open_list().map_err(unavailable)?
        } else {
            vec![0] // opening it reports the missing driver
        };
        let opened: Vec<Result<_, BackendError>> = std::thread::scope(|scope| {
            let jobs: Vec<_> = ordinals
                .iter()
                .map(|&o| scope.spawn(move || Engine::open(cfg, o)))
                .collect();
            jobs.into_iter()
                .map(|j| {
                    j.join()
                        .unwrap_or_else(|_| Err(unavailable("opening a device panicked")))
                })
                .collect()
        });
        let (mut devices, mut resources, mut from_cache) = (Vec::new(), Vec::new(), true);
        for (&ordinal, result) in ordinals.iter().zip(opened) {
            let (engine, res, cached) = result.map_err(|e| on_device(ordinal, &ordinals, e))?;
            if devices.is_empty() {
                resources = res;
            }
            from_cache &= cached;
            devices.push(Device {
                ordinal,
                name: engine.device_name(),
                engine: RwLock::new(engine),
                queued: AtomicU64::new(0),
            });
        }
        Ok(CudaBackend {
            shards: Arc::new(Shards::new(devices, cfg.shard_below)),
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

    /// ptxas's report on the loaded kernel (registers, stack, spills), of the first device.
    pub fn resources(&self) -> &[Resources] {
        &self.resources
    }

    /// Whether every device's kernels came from a cache (disk, or this process's memory).
    pub fn loaded_from_cache(&self) -> bool {
        self.from_cache
    }

    /// Each engine in order: its device and what it has done (records, time, measured rate,
    /// failed parts, records redone for others).
    pub fn devices(&self) -> Vec<DeviceInfo> {
        self.shards
            .devices()
            .iter()
            .zip(self.shards.stats())
            .map(|(d, stats)| DeviceInfo {
                ordinal: d.ordinal,
                name: d.name.clone(),
                stats,
            })
            .collect()
    }

    /// The engines' pipeline host time so far, summed over devices ([`PipelineTimes`]).
    pub fn pipeline_times(&self) -> PipelineTimes {
        let mut sum = PipelineTimes::default();
        for d in self.shards.devices() {
            sum.queue += Duration::from_nanos(d.queued.load(Ordering::Relaxed));
            if let Ok(e) = d.engine.read() {
                sum.add(&e.times());
            }
        }
        sum
    }

    /// The first device's engine, for the hooks that time or check one device's kernels.
    #[cfg(feature = "bench")]
    pub(crate) fn first_engine(
        &self,
        what: &'static str,
    ) -> Result<RwLockWriteGuard<'_, Engine>, BackendError> {
        self.shards.devices()[0].engine_mut(what)
    }

    /// Queues a batch; batches are verified first come, first served by one worker thread, each
    /// shared among the devices as `verify_batch` does (known signers' records through their
    /// tables).
    pub fn submit(&self, batch: Arc<Batch>) -> Result<Ticket, BackendError> {
        check_batch(&batch)?;
        let (tx, rx) = mpsc::channel();
        let mut jobs = self
            .jobs
            .lock()
            .map_err(|_| device_err("submit", "poisoned lock"))?;
        if jobs.is_none() {
            let (jtx, jrx) = mpsc::channel::<Job>();
            let shards = self.shards.clone();
            std::thread::Builder::new()
                .name("chainsig-cuda-worker".into())
                .spawn(move || {
                    for (batch, reply) in jrx {
                        let _ = reply.send(verify_any(&shards, &batch));
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
    /// not shrink with the batch. Without a helper, or above `most`, they run on the GPU. Every
    /// device gets the helper (for the records outside the known signers of its part).
    pub fn set_host_helper(&self, host: Arc<dyn Backend>, most: usize) -> Result<(), BackendError> {
        self.shards.each(|d| {
            d.engine_mut("set host helper")?
                .set_host(host.clone(), most);
            Ok(())
        })
    }

    /// SM2 records from their own bytes ([`crate::raw`]): each key decoded and checked, Z_A and e
    /// computed, all on the GPU; records of known signers through their tables. A verdict and a
    /// fault code per record, in order. Through the registry ([`Backend::verify_raw_sm2`]) a GPU
    /// failure sends the batch to the CPU backend, which prepares it as the CPU path does.
    pub fn verify_raw(&self, batch: &RawSm2Batch) -> Result<RawVerdicts, BackendError> {
        self.shards.run(batch.len(), |d, r| {
            d.engine("verify raw", Needs::RawSm2)?
                .verify_raw(&part(batch, r))
        })
    }

    /// Loads on every device the modules that `upcoming` work needs, which its first batch would
    /// otherwise load while holding the engine ([`crate::engine::Upcoming`]): a caller that knows
    /// its algorithm calls this on a thread of its own while it reads its first records. A
    /// module that cannot load or fails its check returns the error its first batch would get.
    pub fn warm_up(&self, upcoming: crate::Upcoming) -> Result<(), BackendError> {
        let needs = Needs::coming(upcoming, self.takes_raw_sm2());
        self.shards.each(|d| d.engine("warm up", needs).map(drop))
    }

    /// Loads the known signers' fixed-base tables (464 KB of GPU memory each) on every device,
    /// replacing any loaded before; a [`crate::signers::SignerBatch`] names its signers by their
    /// index in `tables`. Fast mode only. Fails if any device fails (the devices that loaded
    /// them keep them, and the next load replaces them).
    pub fn load_signers(&self, tables: &SignerTables) -> Result<(), BackendError> {
        self.shards
            .each(|d| d.engine_mut("load signers")?.load_signers(tables))
    }
}

/// Any batch the backend takes, shared among the devices: SM2 through each engine's known
/// signers (when loaded) and default kernel, ECDSA through the curve's kernels.
fn verify_any(shards: &Shards<Device>, batch: &Batch) -> Result<Bitmap, BackendError> {
    shards.run(batch.len(), |d, r| {
        d.engine("verify", Needs::verifying(batch.alg()))?
            .verify_part(batch, r)
    })
}

/// An error opening device `ordinal`, naming it when several were asked for.
fn on_device(ordinal: usize, all: &[usize], e: BackendError) -> BackendError {
    if all.len() == 1 {
        return e;
    }
    match e {
        BackendError::Unavailable { backend, reason } => BackendError::Unavailable {
            backend,
            reason: format!("device {ordinal}: {reason}"),
        },
        BackendError::Device { backend, reason } => BackendError::Device {
            backend,
            reason: format!("device {ordinal}: {reason}"),
        },
        other => other,
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
        verify_any(&self.shards, batch)
    }

    fn recovers(&self) -> bool {
        true
    }

    /// Ethereum's sender recovery on the GPU: the key by the ECDSA module's recovery kernel (s
    /// above n/2 refused), the address by Keccak-256 on the host's cores.
    fn recover_batch(&self, items: &[RecoverItem]) -> Result<Vec<Option<Recovered>>, BackendError> {
        self.shards.run(items.len(), |d, r| {
            d.engine("recover", Needs::Curve(Algorithm::Secp256k1))?
                .recover(&items[r])
        })
    }

    fn recovers_transactions(&self) -> bool {
        true
    }

    /// Raw transactions through [`CudaBackend::recover_raw`] (the `ethtx` module), staged from
    /// the caller's slices; its fault numbers are `TxAnswer`'s.
    fn recover_transactions(&self, txs: &[&[u8]]) -> Result<Vec<TxAnswer>, BackendError> {
        use rayon::prelude::*;
        let answers = self.recover_raw(txs)?;
        Ok(answers
            .into_par_iter()
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
        self.shards.run(batch.len(), |d, r| {
            d.engine("verify", Needs::Sm3)?
                .verify_messages(&part(batch, r))
        })
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
