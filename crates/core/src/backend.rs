//! The `Backend` trait every verifier implements, and the registry that chooses one by name.

use crate::algorithm::Algorithm;
use crate::batch::{Batch, RecoverItem, Recovered};
use crate::bitmap::Bitmap;
use crate::messages::MessageBatch;
use crate::raw_sm2::{RawOutcome, RawSm2Batch};
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The backend cannot run here (no driver, no GPU, library missing).
    #[error("backend {backend} is unavailable: {reason}")]
    Unavailable { backend: String, reason: String },
    /// The backend does not implement this algorithm or operation.
    #[error("backend {backend} does not support {what}")]
    Unsupported { backend: String, what: String },
    /// The device failed while working; the batch can be retried elsewhere.
    #[error("device error in backend {backend}: {reason}")]
    Device { backend: String, reason: String },
    /// The request itself is wrong for this backend (such as a record naming a signer that was
    /// never loaded); retrying elsewhere would not help.
    #[error("backend {backend} refused the request: {reason}")]
    Input { backend: String, reason: String },
    #[error("unknown backend {0:?}")]
    UnknownName(String),
}

/// A batch verifier. Implementations must give verdict `i` for item `i`, lose none and reorder none.
pub trait Backend: Send + Sync {
    fn name(&self) -> &str;

    fn supports(&self, alg: Algorithm) -> bool;

    /// Verifies every item of `batch`; slots that failed preparation come back invalid.
    fn verify_batch(&self, batch: &Batch) -> Result<Bitmap, BackendError>;

    /// SM2 records that carry their messages: e = SM3(Z_A ‖ M) for each, then the verdicts. A
    /// backend that hashes on its own device overrides this; the default hashes here, one record
    /// after another, and verifies the digests.
    fn verify_messages(&self, batch: &MessageBatch) -> Result<Bitmap, BackendError> {
        self.verify_batch(&batch.to_digest_batch())
    }

    /// Whether the backend decodes keys and hashes SM2 records on its own device
    /// ([`Backend::verify_raw_sm2`]), so that the caller sends them as their bytes unprepared.
    fn takes_raw_sm2(&self) -> bool {
        false
    }

    /// SM2 records that carry their message, as their bytes (keys unchecked): a verdict per
    /// record, or the error the CPU path reports for the record's key. Backends that prepare
    /// records as the CPU path does (the CPU backend, the fallback) and those that take them raw
    /// implement it.
    fn verify_raw_sm2(&self, batch: &RawSm2Batch) -> Result<RawOutcome, BackendError> {
        let _ = batch;
        Err(BackendError::Unsupported {
            backend: self.name().to_string(),
            what: "SM2 records as their bytes".into(),
        })
    }

    /// Whether [`Backend::recover_batch`] is implemented: `auto` sends recovery only to backends
    /// that recover, whatever else they verify.
    fn recovers(&self) -> bool {
        false
    }

    /// Ethereum sender recovery: the signer of each item, or `None` when recovery fails
    /// (including s above n/2, which Ethereum rejects).
    fn recover_batch(&self, items: &[RecoverItem]) -> Result<Vec<Option<Recovered>>, BackendError> {
        let _ = items;
        Err(BackendError::Unsupported {
            backend: self.name().to_string(),
            what: "recovery".into(),
        })
    }

    /// Whether [`Backend::recover_transactions`] is implemented: the backend decodes raw signed
    /// Ethereum transactions on its own device. The CPU does not: there the host decodes them
    /// (`chainsig_eth::rawtx::recover_raw`, which this crate cannot reach).
    fn recovers_transactions(&self) -> bool {
        false
    }

    /// The sender of each raw signed Ethereum transaction (EIP-2718 envelopes of types 1–4, or
    /// legacy RLP lists), answer i for transaction i: RLP, the signing payload's Keccak-256,
    /// recovery and the address on the device. A refusal is a [`TxAnswer`]'s fault number.
    fn recover_transactions(&self, txs: &[&[u8]]) -> Result<Vec<TxAnswer>, BackendError> {
        let _ = txs;
        Err(BackendError::Unsupported {
            backend: self.name().to_string(),
            what: "raw transactions".into(),
        })
    }
}

/// One raw transaction's answer from a backend that decodes transactions on its device: the
/// sender, or the number of why there is none. The numbers are those of
/// `chainsig_eth::rawtx::TxFault` (1 to 9, the same cause as the CPU path's error), or
/// [`TX_DEFER`].
pub type TxAnswer = Result<Recovered, u32>;

/// The fault number of a transaction the device leaves to the host to decode (a blob
/// transaction in its network form, with its sidecar): not a refusal.
pub const TX_DEFER: u32 = 10;

/// Backends by name, with the reasons for the ones that could not start.
///
/// `auto` prefers an accelerator for batches of at least `gpu_crossover` items, the CPU below it
/// (a GPU round trip costs more than it saves on small batches), and falls back to the CPU when the
/// accelerator fails, so no record is lost.
#[derive(Default, Clone)]
pub struct Registry {
    backends: Vec<Arc<dyn Backend>>,
    unavailable: Vec<(String, String)>,
    gpu_crossover: usize,
}

/// The name of the backend that is always present and is the fallback.
pub const CPU: &str = "cpu";

impl Registry {
    pub fn new() -> Self {
        Registry {
            gpu_crossover: 4096,
            ..Default::default()
        }
    }

    pub fn register(&mut self, backend: Arc<dyn Backend>) {
        self.backends.retain(|b| b.name() != backend.name());
        self.backends.push(backend);
    }

    /// Records that a backend could not start, so `get` can say why.
    pub fn register_unavailable(&mut self, name: &str, reason: impl Into<String>) {
        self.unavailable.push((name.to_string(), reason.into()));
    }

    pub fn set_gpu_crossover(&mut self, items: usize) {
        self.gpu_crossover = items;
    }

    pub fn names(&self) -> Vec<&str> {
        self.backends.iter().map(|b| b.name()).collect()
    }

    /// The backend called `name`, or why it is missing.
    pub fn get(&self, name: &str) -> Result<Arc<dyn Backend>, BackendError> {
        if let Some(b) = self.backends.iter().find(|b| b.name() == name) {
            return Ok(b.clone());
        }
        match self.unavailable.iter().find(|(n, _)| n == name) {
            Some((n, reason)) => Err(BackendError::Unavailable {
                backend: n.clone(),
                reason: reason.clone(),
            }),
            None => Err(BackendError::UnknownName(name.to_string())),
        }
    }

    /// The best backend for `alg` and a batch of `len` items under `name` (`auto` or a backend name).
    pub fn select(
        &self,
        name: &str,
        alg: Algorithm,
        len: usize,
    ) -> Result<Arc<dyn Backend>, BackendError> {
        self.select_by(name, len, |b| b.supports(alg), || alg.to_string())
    }

    /// The backend `name` names if it can (`can`), or under `auto` the first accelerator that can
    /// for a batch of at least the crossover, else the CPU.
    fn select_by(
        &self,
        name: &str,
        len: usize,
        can: impl Fn(&dyn Backend) -> bool,
        what: impl Fn() -> String,
    ) -> Result<Arc<dyn Backend>, BackendError> {
        if name != "auto" {
            let backend = self.get(name)?;
            if !can(backend.as_ref()) {
                return Err(BackendError::Unsupported {
                    backend: name.to_string(),
                    what: what(),
                });
            }
            return Ok(backend);
        }
        let accelerator = self
            .backends
            .iter()
            .find(|b| b.name() != CPU && can(b.as_ref()));
        match accelerator {
            Some(b) if len >= self.gpu_crossover => Ok(b.clone()),
            _ => self.get(CPU),
        }
    }

    /// Runs `work` on the backend `select` picks for `alg` and `len` items; under `auto`, when that
    /// is not the CPU and it fails, runs it on the CPU instead. Returns the result and the name of
    /// the backend that produced it.
    fn run_with_fallback<T>(
        &self,
        name: &str,
        alg: Algorithm,
        len: usize,
        work: impl Fn(&dyn Backend) -> Result<T, BackendError>,
    ) -> Result<(T, String), BackendError> {
        let backend = self.select(name, alg, len)?;
        self.run_on(name, backend, work)
    }

    /// Runs `work` on `backend`; under `auto`, when that is not the CPU and it fails, on the CPU.
    fn run_on<T>(
        &self,
        name: &str,
        backend: Arc<dyn Backend>,
        work: impl Fn(&dyn Backend) -> Result<T, BackendError>,
    ) -> Result<(T, String), BackendError> {
        match contained(backend.as_ref(), &work) {
            Ok(out) => Ok((out, backend.name().to_string())),
            Err(err) if name == "auto" && backend.name() != CPU => {
                tracing::warn!(backend = backend.name(), error = %err, "falling back to the CPU");
                let cpu = self.get(CPU)?;
                Ok((contained(cpu.as_ref(), &work)?, CPU.to_string()))
            }
            Err(err) => Err(err),
        }
    }

    /// Verifies on the backend `select` picks, with the CPU fallback of `auto`. Returns the
    /// verdicts and the name of the backend that produced them.
    pub fn verify(&self, name: &str, batch: &Batch) -> Result<(Bitmap, String), BackendError> {
        self.run_with_fallback(name, batch.alg(), batch.len(), |b| {
            answered(b, batch.len(), b.verify_batch(batch)?)
        })
    }

    /// SM2 records with messages on the backend `select` picks, with the same CPU fallback as
    /// [`Registry::verify`].
    pub fn verify_messages(
        &self,
        name: &str,
        batch: &MessageBatch,
    ) -> Result<(Bitmap, String), BackendError> {
        self.run_with_fallback(name, Algorithm::Sm2, batch.len(), |b| {
            answered(b, batch.len(), b.verify_messages(batch)?)
        })
    }

    /// SM2 records as their bytes on the backend `select` picks, with the same CPU fallback as
    /// [`Registry::verify`].
    pub fn verify_raw_sm2(
        &self,
        name: &str,
        batch: &RawSm2Batch,
    ) -> Result<(RawOutcome, String), BackendError> {
        self.run_with_fallback(name, Algorithm::Sm2, batch.len(), |b| {
            answered(b, batch.len(), b.verify_raw_sm2(batch)?)
        })
    }

    /// Raw Ethereum transactions' senders on a backend that decodes transactions on its own
    /// device ([`Backend::recovers_transactions`]): the backend `name` names, or under `auto` the
    /// first accelerator that does, for batches of at least the crossover. Returns its answers
    /// and its name, or `None` when the host is to decode the transactions itself: under `cpu`,
    /// with a named backend that does not decode them, under `auto` without such an accelerator
    /// or below the crossover, and under `auto` when the device failed (the CPU fallback of
    /// [`Registry::verify`]). A backend named but unavailable, or failing when named, is an error.
    pub fn recover_transactions(
        &self,
        name: &str,
        txs: &[&[u8]],
    ) -> Result<Option<(Vec<TxAnswer>, String)>, BackendError> {
        let device = if name == "auto" {
            let accelerator = self
                .backends
                .iter()
                .find(|b| b.name() != CPU && b.recovers_transactions());
            match accelerator {
                Some(b) if txs.len() >= self.gpu_crossover => b.clone(),
                _ => return Ok(None),
            }
        } else {
            let backend = self.get(name)?;
            if !backend.recovers_transactions() {
                return Ok(None);
            }
            backend
        };
        let work = |b: &dyn Backend| answered(b, txs.len(), b.recover_transactions(txs)?);
        match contained(device.as_ref(), &work) {
            Ok(answers) => Ok(Some((answers, device.name().to_string()))),
            Err(err) if name == "auto" => {
                tracing::warn!(backend = device.name(), error = %err, "falling back to the CPU");
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }

    /// Ethereum sender recovery on the backend `select` picks, with the same CPU fallback as
    /// [`Registry::verify`]. Returns the signers and the name of the backend that found them.
    pub fn recover(
        &self,
        name: &str,
        items: &[RecoverItem],
    ) -> Result<(Vec<Option<Recovered>>, String), BackendError> {
        let backend = self.select_by(name, items.len(), |b| b.recovers(), || "recovery".into())?;
        self.run_on(name, backend, |b| {
            answered(b, items.len(), b.recover_batch(items)?)
        })
    }
}

/// `work` on `backend`, with a panic inside it (a bug in a backend or its driver binding) turned
/// into a device error: under `auto` the CPU then takes the work, and no caller (the C ABI
/// included) sees a panic from a backend.
fn contained<T>(
    backend: &dyn Backend,
    work: &impl Fn(&dyn Backend) -> Result<T, BackendError>,
) -> Result<T, BackendError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(backend))).unwrap_or_else(
        |panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(BackendError::Device {
                backend: backend.name().to_string(),
                reason: format!("panicked: {}", crate::error::quote(&what)),
            })
        },
    )
}

/// Answers of any kind that can be counted: verdicts or recovered signers.
trait Answers {
    fn count(&self) -> usize;
}

impl Answers for Bitmap {
    fn count(&self) -> usize {
        self.len()
    }
}

impl Answers for RawOutcome {
    fn count(&self) -> usize {
        self.len()
    }
}

impl Answers for Vec<Option<Recovered>> {
    fn count(&self) -> usize {
        self.len()
    }
}

impl Answers for Vec<TxAnswer> {
    fn count(&self) -> usize {
        self.len()
    }
}

/// `answer` when it holds exactly one result per item, else a device error: a backend that
/// answers short or long (a broken device, a bug) would otherwise shift every later verdict onto
/// the wrong record. Under `auto` the error sends the work to the CPU like any other failure.
fn answered<T: Answers>(backend: &dyn Backend, items: usize, answer: T) -> Result<T, BackendError> {
    if answer.count() == items {
        return Ok(answer);
    }
    Err(BackendError::Device {
        backend: backend.name().to_string(),
        reason: format!("answered {} results for {items} items", answer.count()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend whose verdict is "r is odd"; optionally it always fails.
    struct Fake {
        name: &'static str,
        fails: bool,
    }

    impl Backend for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn supports(&self, alg: Algorithm) -> bool {
            alg == Algorithm::Sm2
        }
        fn verify_batch(&self, batch: &Batch) -> Result<Bitmap, BackendError> {
            if self.fails {
                return Err(BackendError::Device {
                    backend: self.name.into(),
                    reason: "boom".into(),
                });
            }
            Ok(Bitmap::from_bools(
                (0..batch.len()).map(|i| batch.item(i).r[31] & 1 == 1),
            ))
        }
    }

    fn batch(len: usize) -> Batch {
        let mut b = Batch::with_capacity(Algorithm::Sm2, false, len);
        for i in 0..len {
            let mut item = crate::batch::PreparedItem::default();
            item.r[31] = i as u8;
            b.push(&item);
        }
        b
    }

    #[test]
    fn auto_uses_the_accelerator_above_the_crossover_and_falls_back() {
        let mut reg = Registry::new();
        reg.register(Arc::new(Fake {
            name: CPU,
            fails: false,
        }));
        reg.register(Arc::new(Fake {
            name: "gpu",
            fails: true,
        }));
        reg.set_gpu_crossover(10);
        assert_eq!(reg.select("auto", Algorithm::Sm2, 9).unwrap().name(), CPU);
        assert_eq!(
            reg.select("auto", Algorithm::Sm2, 10).unwrap().name(),
            "gpu"
        );
        let (map, used) = reg.verify("auto", &batch(20)).unwrap();
        assert_eq!(used, CPU);
        assert_eq!(map.count_valid(), 10);
        // Asked for by name, a failure is reported, not hidden.
        assert!(matches!(
            reg.verify("gpu", &batch(20)),
            Err(BackendError::Device { .. })
        ));
    }

    #[test]
    fn an_answer_of_the_wrong_length_is_a_device_failure() {
        use crate::fault::{FaultPlan, FaultyBackend};
        let cpu: Arc<dyn Backend> = Arc::new(Fake {
            name: CPU,
            fails: false,
        });
        let plan = FaultPlan::parse("short:1-2").unwrap();
        let mut reg = Registry::new();
        reg.register(cpu.clone());
        reg.register(Arc::new(FaultyBackend::new("gpu", cpu, plan)));
        reg.set_gpu_crossover(1);
        // Under auto the short answer is replaced by the CPU's whole one.
        let (map, used) = reg.verify("auto", &batch(20)).unwrap();
        assert_eq!((map.len(), map.count_valid(), used.as_str()), (20, 10, CPU));
        // Asked for by name, it is refused, naming the counts.
        let err = reg.verify("gpu", &batch(20)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "device error in backend gpu: answered 19 results for 20 items"
        );
        // Past the plan, the wrapped backend answers.
        assert_eq!(reg.verify("gpu", &batch(20)).unwrap().1, "gpu");
    }

    #[test]
    fn a_panicking_backend_is_a_device_failure_not_a_panic() {
        use crate::fault::{FaultPlan, FaultyBackend};
        let cpu: Arc<dyn Backend> = Arc::new(Fake {
            name: CPU,
            fails: false,
        });
        let plan = FaultPlan::parse("panic:1-2").unwrap();
        let mut reg = Registry::new();
        reg.register(cpu.clone());
        reg.register(Arc::new(FaultyBackend::new("gpu", cpu, plan)));
        reg.set_gpu_crossover(1);
        let (map, used) = reg.verify("auto", &batch(20)).unwrap();
        assert_eq!((map.count_valid(), used.as_str()), (10, CPU));
        let err = reg.verify("gpu", &batch(20)).unwrap_err().to_string();
        assert!(
            err.starts_with("device error in backend gpu: panicked: \"injected panic on call 2"),
            "{err}"
        );
    }

    /// Verifies every algorithm and recovers only when `recovers`; counts its recoveries.
    struct Recoverer {
        name: &'static str,
        recovers: bool,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl Backend for Recoverer {
        fn name(&self) -> &str {
            self.name
        }
        fn supports(&self, _alg: Algorithm) -> bool {
            true
        }
        fn verify_batch(&self, batch: &Batch) -> Result<Bitmap, BackendError> {
            Ok(Bitmap::from_bools((0..batch.len()).map(|_| true)))
        }
        fn recovers(&self) -> bool {
            self.recovers
        }
        fn recover_batch(
            &self,
            items: &[RecoverItem],
        ) -> Result<Vec<Option<Recovered>>, BackendError> {
            self.calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(vec![None; items.len()])
        }
    }

    #[test]
    fn recovery_goes_only_to_backends_that_recover() {
        let backend = |name, recovers| {
            Arc::new(Recoverer {
                name,
                recovers,
                calls: Default::default(),
            })
        };
        let (cpu, gpu) = (backend(CPU, true), backend("gpu", false));
        let mut reg = Registry::new();
        reg.register(cpu.clone());
        reg.register(gpu.clone());
        reg.set_gpu_crossover(1);
        let item = RecoverItem {
            digest: [1; 32],
            r: [2; 32],
            s: [3; 32],
            recovery_id: 0,
        };
        let items = vec![item; 4];
        // The accelerator verifies secp256k1, but recovery under auto goes to the CPU directly.
        assert_eq!(
            reg.select("auto", Algorithm::Secp256k1, 4).unwrap().name(),
            "gpu"
        );
        let (_, used) = reg.recover("auto", &items).unwrap();
        assert_eq!(used, CPU);
        assert_eq!(gpu.calls.load(std::sync::atomic::Ordering::Relaxed), 0);
        assert_eq!(cpu.calls.load(std::sync::atomic::Ordering::Relaxed), 1);
        // Asked for by name, it is refused as unsupported.
        assert!(matches!(
            reg.recover("gpu", &items),
            Err(BackendError::Unsupported { .. })
        ));
    }

    /// Decodes "transactions" on its device: a one-byte transaction `[k]` answers fault `k`
    /// (0: a sender whose address is 20 bytes of the transaction's length); optionally it fails.
    struct TxDevice {
        name: &'static str,
        fails: bool,
    }

    impl Backend for TxDevice {
        fn name(&self) -> &str {
            self.name
        }
        fn supports(&self, _alg: Algorithm) -> bool {
            false
        }
        fn verify_batch(&self, _batch: &Batch) -> Result<Bitmap, BackendError> {
            unreachable!("not a verifier")
        }
        fn recovers_transactions(&self) -> bool {
            true
        }
        fn recover_transactions(&self, txs: &[&[u8]]) -> Result<Vec<TxAnswer>, BackendError> {
            if self.fails {
                return Err(BackendError::Device {
                    backend: self.name.into(),
                    reason: "boom".into(),
                });
            }
            Ok(txs
                .iter()
                .map(|tx| match tx.first() {
                    Some(&k) if k > 0 => Err(u32::from(k)),
                    _ => Ok(Recovered {
                        pubkey: [4; 65],
                        address: [tx.len() as u8; 20],
                    }),
                })
                .collect())
        }
    }

    #[test]
    fn transactions_go_to_a_device_that_decodes_them_or_back_to_the_host() {
        let fake_cpu = Arc::new(Fake {
            name: CPU,
            fails: false,
        });
        let mut reg = Registry::new();
        reg.register(fake_cpu);
        reg.set_gpu_crossover(3);
        let txs: Vec<&[u8]> = vec![&[0, 0], &[TX_DEFER as u8], &[7]];
        // No device: the host decodes, under every name that exists.
        assert!(reg.recover_transactions("auto", &txs).unwrap().is_none());
        assert!(reg.recover_transactions(CPU, &txs).unwrap().is_none());
        reg.register_unavailable("gpu", "no driver");
        assert!(matches!(
            reg.recover_transactions("gpu", &txs),
            Err(BackendError::Unavailable { .. })
        ));

        let mut with_device = reg.clone();
        with_device.register(Arc::new(TxDevice {
            name: "gpu",
            fails: false,
        }));
        let (answers, used) = with_device
            .recover_transactions("auto", &txs)
            .unwrap()
            .unwrap();
        assert_eq!(used, "gpu");
        assert_eq!(answers[0].unwrap().address, [2; 20]);
        assert_eq!(answers[1..], [Err(TX_DEFER), Err(7)]);
        // Below the crossover auto keeps them on the host; named, the device takes any batch.
        assert!(with_device
            .recover_transactions("auto", &txs[..2])
            .unwrap()
            .is_none());
        assert!(with_device
            .recover_transactions("gpu", &txs[..1])
            .unwrap()
            .is_some());

        // A failing device: auto falls back to the host, the name reports it.
        let mut failing = reg.clone();
        failing.register(Arc::new(TxDevice {
            name: "gpu",
            fails: true,
        }));
        assert!(failing
            .recover_transactions("auto", &txs)
            .unwrap()
            .is_none());
        assert!(matches!(
            failing.recover_transactions("gpu", &txs),
            Err(BackendError::Device { .. })
        ));

        // A short answer is a device failure too (it would shift every later answer).
        use crate::fault::{FaultPlan, FaultyBackend};
        let device: Arc<dyn Backend> = Arc::new(TxDevice {
            name: "inner",
            fails: false,
        });
        let mut short = reg.clone();
        short.register(Arc::new(FaultyBackend::new(
            "gpu",
            device,
            FaultPlan::parse("short:1-2").unwrap(),
        )));
        assert!(short.recover_transactions("auto", &txs).unwrap().is_none());
        let err = short.recover_transactions("gpu", &txs).unwrap_err();
        assert_eq!(
            err.to_string(),
            "device error in backend gpu: answered 2 results for 3 items"
        );
    }

    #[test]
    fn missing_backends_say_why() {
        let mut reg = Registry::new();
        reg.register_unavailable("cuda", "no CUDA driver found");
        let err = reg.get("cuda").err().unwrap();
        assert_eq!(
            err.to_string(),
            "backend cuda is unavailable: no CUDA driver found"
        );
        assert_eq!(
            reg.get("tpu").err().unwrap(),
            BackendError::UnknownName("tpu".into())
        );
        reg.register(Arc::new(Fake {
            name: CPU,
            fails: false,
        }));
        assert!(matches!(
            reg.select(CPU, Algorithm::P256, 1),
            Err(BackendError::Unsupported { .. })
        ));
    }
}
