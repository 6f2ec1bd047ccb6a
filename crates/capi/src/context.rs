//! A context: the registry of backends a node opened, its known SM2 signers, its worker threads
//! for submitted batches, and the verification and recovery (of signatures and of raw
//! transactions) the entry points call.
//!
//! Handles given to C are numbers from a counter, never addresses, looked up in a table on every
//! call: a closed, never-opened or garbage handle is answered with `CS_ERR_CLOSED` instead of
//! being dereferenced, and a handle is never reused, so a stale one cannot reach a newer context.

use crate::rows::{ParsedRow, ParsedTxRow};
use crate::status::*;
use chainsig_core::backend::CPU;
use chainsig_core::rows::group_by_low_s;
use chainsig_core::{Algorithm, RecordError, RecoverItem, Recovered, Registry};
use chainsig_cpu::pipeline::{verify_records, Verdict};
use chainsig_cpu::prepare::{decode_pubkey, Preparer};
use chainsig_cuda::signers::SignerKey;
use chainsig_cuda::startup::{self, KnownSignersError};
use chainsig_cuda::{CudaBackend, CudaConfig, NAME as CUDA};
use chainsig_eth::rawtx::TxFault;
use chainsig_eth::recover::recover_transactions;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;

/// Worker threads per context for submitted batches: two keep a batch being verified while the
/// next is prepared; each batch itself runs on every core.
const WORKERS: usize = 2;

type Job = Box<dyn FnOnce() + Send>;

/// The queue to a context's workers.
enum Jobs {
    /// No batch submitted yet: no threads.
    Idle,
    Running(mpsc::Sender<Job>),
    /// `cs_close` was called: no more batches.
    Closed,
}

/// One open context.
pub struct Context {
    /// `auto`, `cpu` or `cuda`: the registry name every batch is verified under.
    backend: String,
    registry: Registry,
    /// The CUDA backend when it started, for loading known signers.
    cuda: Option<Arc<CudaBackend>>,
    preparer: Preparer,
    jobs: Mutex<Jobs>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

/// Verdicts of one batch in the caller's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Bit i % 64 of word i / 64: record i valid.
    pub bitmap: Vec<u64>,
    /// `CS_OK` or a `CS_REC_*` code per record.
    pub errors: Vec<i32>,
    /// The first record's error, for `cs_last_error`.
    pub note: Option<String>,
}

/// One recovered batch in the caller's layout.
pub struct RecoveredBatch {
    pub signers: Vec<Option<Recovered>>,
    pub errors: Vec<i32>,
    pub note: Option<String>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn contexts() -> &'static RwLock<HashMap<u64, Arc<Context>>> {
    static CONTEXTS: OnceLock<RwLock<HashMap<u64, Arc<Context>>>> = OnceLock::new();
    CONTEXTS.get_or_init(Default::default)
}

/// A fresh handle number, never 0 and never reused.
pub fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// The context behind handle `id`.
pub fn lookup(id: u64) -> Result<Arc<Context>, Failure> {
    let map = contexts().read().unwrap_or_else(|e| e.into_inner());
    map.get(&id)
        .cloned()
        .ok_or_else(|| Failure::new(CS_ERR_CLOSED, "the context is NULL, closed or unknown"))
}

/// Removes handle `id` and stops its workers once the batches queued before finish.
pub fn close(id: u64) -> Result<(), Failure> {
    let ctx = contexts()
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&id)
        .ok_or_else(|| Failure::new(CS_ERR_CLOSED, "the context is NULL, closed or unknown"))?;
    *ctx.jobs.lock().unwrap_or_else(|e| e.into_inner()) = Jobs::Closed;
    let workers = std::mem::take(&mut *ctx.workers.lock().unwrap_or_else(|e| e.into_inner()));
    for worker in workers {
        // A worker never panics (jobs catch their own); a join error would only mean it did.
        let _ = worker.join();
    }
    Ok(())
}

impl Context {
    /// Opens backends for `backend` (`auto`, `cpu` or `cuda`); `cuda_config` is a JSON object of
    /// CUDA configuration overrides (as `CHAINSIG_CUDA_CONFIG`, which is read when it is `None`).
    /// Returns the new handle.
    pub fn open(backend: &str, cuda_config: Option<&str>) -> Result<u64, Failure> {
        let arg = |why: String| Failure::new(CS_ERR_ARGUMENT, why);
        if !matches!(backend, "auto" | CPU | CUDA) {
            return Err(arg(format!(
                "backend {:?} (expected auto, cpu or cuda)",
                clip(backend)
            )));
        }
        let mut registry = chainsig_cpu::cpu_registry();
        let mut cuda = None;
        if backend == CPU {
            if cuda_config.is_some() {
                return Err(arg(
                    "a CUDA configuration was given for the cpu backend".into()
                ));
            }
        } else {
            let config = match cuda_config {
                Some(json) => CudaConfig::default()
                    .with_overrides(json)
                    .map_err(|e| arg(format!("cuda_config: {}", clip(&e))))?,
                None => match CudaConfig::from_env() {
                    Ok(config) => config,
                    Err(e) if backend == CUDA => return Err(arg(e)),
                    Err(e) => {
                        registry.register_unavailable(CUDA, e);
                        CudaConfig::default()
                    }
                },
            };
            if registry.get(CUDA).is_err() {
                cuda = startup::start(&mut registry, config);
            }
            if backend == CUDA {
                if let Err(e) = registry.get(CUDA) {
                    return Err(Failure::new(CS_ERR_BACKEND, e.to_string()));
                }
            }
        }
        let id = next_id();
        let ctx = Context {
            backend: backend.to_string(),
            registry,
            cuda,
            preparer: Preparer::new(),
            jobs: Mutex::new(Jobs::Idle),
            workers: Mutex::new(Vec::new()),
        };
        contexts()
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Arc::new(ctx));
        Ok(id)
    }

    /// Verifies parsed rows: each low-s rule's records through the chainsig pipeline (which
    /// groups them by algorithm, picks the backend and falls back to the CPU under `auto`).
    pub fn verify(&self, rows: Vec<ParsedRow>) -> Result<Verified, Failure> {
        let n = rows.len();
        let mut out = Verified {
            bitmap: vec![0; n.div_ceil(64)],
            errors: vec![CS_OK; n],
            note: None,
        };
        let groups = group_by_low_s(rows, |i, (code, why)| out.fail(i, code, &why));
        for (low_s, group) in groups.iter().enumerate() {
            if group.records.is_empty() {
                continue;
            }
            let outcome = verify_records(
                &self.registry,
                &self.backend,
                low_s == 1,
                &self.preparer,
                &group.records,
            )
            .map_err(|e| Failure::new(CS_ERR_BACKEND, e.to_string()))?;
            for (&i, verdict) in group.indices.iter().zip(outcome.verdicts) {
                match verdict {
                    Verdict::Valid => out.bitmap[i / 64] |= 1 << (i % 64),
                    Verdict::Invalid => {}
                    Verdict::Error(e) => out.fail(i, record_code(&e), &e.to_string()),
                }
            }
        }
        Ok(out)
    }

    /// Ethereum sender recovery (s above n/2 refused, EIP-2) for `items` of 97 bytes each:
    /// digest, r, s, v.
    pub fn recover(&self, items: &[u8]) -> Result<RecoveredBatch, Failure> {
        let n = items.len() / crate::CS_RECOVER_ITEM_LEN;
        let mut errors = vec![CS_OK; n];
        let mut note = None;
        let mut wanted = Vec::with_capacity(n);
        let mut requests = Vec::with_capacity(n);
        for (i, item) in items.chunks_exact(crate::CS_RECOVER_ITEM_LEN).enumerate() {
            let v = item[96];
            if v > 1 {
                errors[i] = CS_REC_RECOVERY_ID;
                note.get_or_insert_with(|| format!("record {i}: v is {v} (expected 0 or 1)"));
                continue;
            }
            let field =
                |k: usize| -> [u8; 32] { item[32 * k..32 * k + 32].try_into().expect("32") };
            wanted.push(i);
            requests.push(RecoverItem {
                digest: field(0),
                r: field(1),
                s: field(2),
                recovery_id: v,
            });
        }
        let mut signers = vec![None; n];
        if !requests.is_empty() {
            let (found, _) = self
                .registry
                .recover(&self.backend, &requests)
                .map_err(|e| Failure::new(CS_ERR_BACKEND, e.to_string()))?;
            for (i, signer) in wanted.into_iter().zip(found) {
                signers[i] = signer;
            }
        }
        Ok(RecoveredBatch {
            signers,
            errors,
            note,
        })
    }

    /// The senders of raw signed Ethereum transactions, one per row (`CS_ALG_ETH_TX` rows parsed
    /// by [`crate::rows::parse_tx_rows`]), through `chainsig_eth::recover::recover_transactions`:
    /// on the GPU under `cuda` (and `auto` for large batches), else on the CPU, the errors the CPU
    /// path's either way.
    pub fn recover_transactions(&self, rows: Vec<ParsedTxRow>) -> Result<RecoveredBatch, Failure> {
        let n = rows.len();
        let mut out = RecoveredBatch {
            signers: vec![None; n],
            errors: vec![CS_OK; n],
            note: None,
        };
        let mut wanted = Vec::with_capacity(n);
        let mut txs = Vec::with_capacity(n);
        for (i, row) in rows.into_iter().enumerate() {
            match row {
                Ok(tx) => {
                    wanted.push(i);
                    txs.push(tx);
                }
                Err((code, why)) => out.fail(i, code, &why),
            }
        }
        if txs.is_empty() {
            return Ok(out);
        }
        let recovered = recover_transactions(&self.registry, &self.backend, &txs)
            .map_err(|e| Failure::new(CS_ERR_BACKEND, e.to_string()))?;
        for (i, result) in wanted.into_iter().zip(recovered.results) {
            match result {
                Ok(signer) => out.signers[i] = Some(signer),
                Err(e) => out.fail(i, tx_code(e.fault), &e.to_string()),
            }
        }
        Ok(out)
    }

    /// Replaces the known SM2 signers (uncompressed SEC1 keys). With the CUDA backend their
    /// records are verified through per-key tables; the CPU needs nothing, so there the keys are
    /// only checked.
    pub fn load_signers(&self, keys: &[u8]) -> Result<(), Failure> {
        let keys: Vec<SignerKey> = keys
            .chunks_exact(crate::CS_SIGNER_KEY_LEN)
            .enumerate()
            .map(|(i, sec1)| {
                decode_pubkey(Algorithm::Sm2, sec1)
                    .map_err(|e| Failure::new(CS_ERR_ARGUMENT, format!("signer {i}: {e}")))
            })
            .collect::<Result<_, _>>()?;
        let Some(cuda) = &self.cuda else {
            return Ok(());
        };
        // As `chainsig verify --signers`: a few records per core outside the set run on the CPU
        // beside the GPU's known part.
        startup::load_known_signers(cuda, &self.registry, &keys)
            .map(drop)
            .map_err(|e| {
                let why = match e {
                    KnownSignersError::Tables(why) => why,
                    KnownSignersError::Load(e) => e.to_string(),
                };
                Failure::new(CS_ERR_BACKEND, why)
            })
    }

    /// Runs `job` on this context's workers, starting them on first use.
    pub fn spawn(&self, job: Job) -> Result<(), Failure> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Jobs::Idle = *jobs {
            let (tx, rx) = mpsc::channel::<Job>();
            let rx = Arc::new(Mutex::new(rx));
            let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
            for k in 0..WORKERS {
                let rx = rx.clone();
                let worker = std::thread::Builder::new()
                    .name(format!("chainsig-capi-{k}"))
                    .spawn(move || loop {
                        let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        match next {
                            Ok(job) => job(),
                            Err(_) => break, // the context closed and the queue is empty
                        }
                    })
                    .map_err(|e| {
                        Failure::new(CS_ERR_INTERNAL, format!("cannot start a worker: {e}"))
                    })?;
                workers.push(worker);
            }
            *jobs = Jobs::Running(tx);
        }
        match &*jobs {
            Jobs::Running(tx) => tx
                .send(job)
                .map_err(|_| Failure::new(CS_ERR_INTERNAL, "the workers stopped")),
            _ => Err(Failure::new(CS_ERR_CLOSED, "the context is closed")),
        }
    }
}

impl Verified {
    fn fail(&mut self, i: usize, code: i32, why: &str) {
        self.errors[i] = code;
        self.note
            .get_or_insert_with(|| format!("record {i}: {}", clip(why)));
    }
}

impl RecoveredBatch {
    fn fail(&mut self, i: usize, code: i32, why: &str) {
        self.errors[i] = code;
        self.note
            .get_or_insert_with(|| format!("record {i}: {}", clip(why)));
    }
}

/// The record code of a transaction's fault (the CPU path's cause, which the GPU's shares).
fn tx_code(fault: TxFault) -> i32 {
    match fault {
        TxFault::Empty => CS_REC_TX_EMPTY,
        TxFault::TooLong => CS_REC_TX_TOO_LONG,
        TxFault::UnsupportedType => CS_REC_TX_TYPE,
        TxFault::MalformedRlp => CS_REC_TX_RLP,
        TxFault::TrailingBytes => CS_REC_TX_TRAILING,
        TxFault::BadV => CS_REC_TX_V,
        TxFault::HighS => CS_REC_TX_HIGH_S,
        TxFault::BadRs => CS_REC_TX_RS,
        TxFault::NoKey => CS_REC_TX_NO_KEY,
    }
}

/// The record code for a preparation error (they name the field).
fn record_code(e: &RecordError) -> i32 {
    match e.field {
        "pubkey" => CS_REC_PUBKEY,
        _ => CS_REC_FORMAT,
    }
}
