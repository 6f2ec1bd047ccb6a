//! chainsig-cpu: the CPU side of chainsig.
//!
//! - [`prepare`]: stage 1 for every backend (SEC1 decoding, hashing, Z_A cache).
//! - [`CpuBackend`]: SM2, secp256k1 and P-256 verification and Ethereum sender recovery on every
//!   core through rayon, in groups of eight records on AVX-512 IFMA ([`lanes`]) or one record at
//!   a time otherwise.

pub mod ecdsa_p256;
pub mod ecdsa_secp256k1;
pub mod lanes;
pub mod pipeline;
pub mod prepare;
pub mod rfc6979;
pub mod sm2;

use chainsig_core::backend::{Backend, BackendError, CPU};
use chainsig_core::raw_sm2::{RawOutcome, RawSm2Batch};
use chainsig_core::{Algorithm, Batch, Bitmap, PreparedItem, RecordError, RecoverItem, Recovered};
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
    /// Whether verification runs in lanes, or why the requested path cannot run.
    lanes: Result<bool, String>,
}

impl CpuBackend {
    /// Uses rayon's global pool: every core; the path as `CHAINSIG_CPU_LANES` asks
    /// ([`lanes::LaneMode::from_env`]).
    pub fn new() -> Self {
        CpuBackend {
            pool: None,
            lanes: lanes::LaneMode::from_env().and_then(lanes::LaneMode::resolve),
        }
    }

    /// The same backend on the path `mode` asks for, whatever the environment says.
    pub fn with_lane_mode(mut self, mode: lanes::LaneMode) -> Self {
        self.lanes = mode.resolve();
        self
    }

    /// Whether verification runs in lanes (an error when the requested path cannot run).
    pub fn uses_lanes(&self) -> Result<bool, BackendError> {
        self.lanes
            .clone()
            .map_err(|reason| BackendError::Unavailable {
                backend: CPU.into(),
                reason,
            })
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
        Ok(CpuBackend {
            pool: Some(pool),
            ..CpuBackend::new()
        })
    }

    fn run<T: Send>(&self, job: impl FnOnce() -> T + Send) -> T {
        match &self.pool {
            Some(pool) => pool.install(job),
            None => job(),
        }
    }
}

/// The error of a lane group on a CPU without the lanes (resolved modes rule it out beforehand).
fn lanes_missing() -> BackendError {
    BackendError::Unavailable {
        backend: CPU.into(),
        reason: "this CPU lacks AVX-512F with IFMA".into(),
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
        if self.uses_lanes()? {
            // Groups of eight, the last one ragged; verdicts come back in item order.
            let groups: Vec<[bool; lanes::LANES]> = self.run(|| {
                (0..len.div_ceil(lanes::LANES))
                    .into_par_iter()
                    .map(|g| {
                        let range = g * lanes::LANES..len.min((g + 1) * lanes::LANES);
                        let items: Vec<PreparedItem> = range.map(|i| batch.item(i)).collect();
                        lanes::verify_items(alg, low_s, &items).ok_or_else(lanes_missing)
                    })
                    .collect::<Result<_, _>>()
            })?;
            return Ok(Bitmap::from_bools(
                groups.iter().flatten().copied().take(len),
            ));
        }
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

    /// Prepared here as [`prepare::Preparer`] prepares them (the fallback of a backend that takes
    /// them raw), then verified.
    fn verify_raw_sm2(&self, batch: &RawSm2Batch) -> Result<RawOutcome, BackendError> {
        let preparer = prepare::Preparer::new();
        let prepared: Vec<Result<PreparedItem, RecordError>> = self.run(|| {
            (0..batch.len())
                .into_par_iter()
                .map(|i| preparer.prepare_raw_sm2(&batch.item(i)))
                .collect()
        });
        let mut errors = Vec::new();
        let mut items = Vec::with_capacity(prepared.len());
        for (i, p) in prepared.into_iter().enumerate() {
            match p {
                Ok(item) => items.push(item),
                Err(e) => {
                    errors.push((i, e));
                    items.push(PreparedItem::default());
                }
            }
        }
        let mut verdicts = self.verify_batch(&Batch::from_items(Algorithm::Sm2, false, &items))?;
        for (i, _) in &errors {
            verdicts.set(*i, false);
        }
        Ok(RawOutcome { verdicts, errors })
    }

    fn recovers(&self) -> bool {
        true
    }

    fn recover_batch(&self, items: &[RecoverItem]) -> Result<Vec<Option<Recovered>>, BackendError> {
        let rule = ecdsa_secp256k1::SRule::LowOnly;
        if self.uses_lanes()? {
            // Groups of eight, the last one ragged; results come back in item order.
            let groups: Vec<[Option<Recovered>; lanes::LANES]> = self.run(|| {
                items
                    .par_chunks(lanes::LANES)
                    .map(|group| lanes::recover_items(rule, group).ok_or_else(lanes_missing))
                    .collect::<Result<_, _>>()
            })?;
            return Ok(groups.into_iter().flatten().take(items.len()).collect());
        }
        Ok(self.run(|| {
            items
                .par_iter()
                .map(|item| ecdsa_secp256k1::recover(item, rule))
                .collect()
        }))
    }
}

/// A registry holding the CPU backend, the base every surface adds accelerators to.
///
/// Test builds (the `fault-injection` feature, which the test suites enable and release builds
/// do not) read the switch `CHAINSIG_FAULT`: when it holds a fault plan
/// (`chainsig_core::fault`), a backend named `fault` is added that works as the CPU backend except
/// for the calls the plan chooses, and is preferred by `auto` for batches of any size, as a GPU
/// would be for large ones. The command line, the service and the C ABI all start from here, so
/// each can be run against a failing accelerator on a machine without one.
pub fn cpu_registry() -> chainsig_core::Registry {
    let mut registry = chainsig_core::Registry::new();
    let cpu = std::sync::Arc::new(CpuBackend::new());
    registry.register(cpu.clone());
    #[cfg(feature = "fault-injection")]
    add_fault_backend(&mut registry, cpu);
    registry
}

/// The `CHAINSIG_FAULT` switch of [`cpu_registry`]; a plan that does not read leaves the `fault`
/// backend unavailable, saying why.
#[cfg(feature = "fault-injection")]
fn add_fault_backend(registry: &mut chainsig_core::Registry, cpu: std::sync::Arc<CpuBackend>) {
    use chainsig_core::fault::{FaultPlan, FaultyBackend, FAULT_BACKEND};
    let Ok(text) = std::env::var("CHAINSIG_FAULT") else {
        return;
    };
    match FaultPlan::parse(&text) {
        Ok(plan) => {
            registry.register(std::sync::Arc::new(FaultyBackend::new(
                FAULT_BACKEND,
                cpu,
                plan,
            )));
            registry.set_gpu_crossover(1);
        }
        Err(why) => registry.register_unavailable(FAULT_BACKEND, format!("CHAINSIG_FAULT: {why}")),
    }
}
