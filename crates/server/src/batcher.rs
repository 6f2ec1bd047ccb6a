//! Gathering verification requests from concurrent callers into batches.
//!
//! A backend's cost per signature falls with batch size (a GPU needs thousands in flight to pay
//! for its round trip), while each JSON-RPC caller sends only what it has. The batcher holds the
//! first request for a short window (or until enough records arrive), verifies everything that
//! came in meanwhile as one call to the registry, and hands each caller its own verdicts, in
//! order. The registry picks the backend (`auto`: the GPU for batches above its crossover when
//! one is present, the CPU otherwise) and re-runs a batch on the CPU when the GPU fails, so a
//! device failure neither fails nor loses a request.

use crate::metrics::Metrics;
use chainsig_core::record::VerifyRecord;
use chainsig_core::{RecordError, Registry};
use chainsig_cpu::pipeline::{verify_records, Verdict};
use chainsig_cpu::prepare::Preparer;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::Instant;

/// How the batcher gathers.
#[derive(Clone, Debug)]
pub struct BatcherConfig {
    /// How long the first request of a batch waits for others.
    pub window: Duration,
    /// A batch is sent as soon as it holds this many records.
    pub max_records: usize,
    /// Batches verified at the same time (each one already uses every core).
    pub in_flight: usize,
    /// The backend name given to the registry (`auto`, `cpu`, `cuda`).
    pub backend: String,
}

impl Default for BatcherConfig {
    fn default() -> Self {
        BatcherConfig {
            window: Duration::from_millis(2),
            max_records: 1 << 16,
            in_flight: 2,
            backend: "auto".into(),
        }
    }
}

/// Records to verify, already decoded.
pub type Records = Vec<Result<VerifyRecord, RecordError>>;

struct Job {
    records: Records,
    low_s: bool,
    reply: oneshot::Sender<Result<Vec<Verdict>, String>>,
}

/// The handle callers submit through; cheap to clone.
#[derive(Clone)]
pub struct Batcher {
    jobs: mpsc::Sender<Job>,
}

impl Batcher {
    /// Starts the gathering task on the current Tokio runtime.
    pub fn spawn(registry: Arc<Registry>, config: BatcherConfig, metrics: Metrics) -> Self {
        let (jobs, queue) = mpsc::channel(1024);
        tokio::spawn(gather(queue, registry, config, metrics));
        Batcher { jobs }
    }

    /// Verifies `records` (with or without the low-s rule) and returns one verdict per record,
    /// in order. Fails only when no backend could verify the batch.
    pub async fn verify(&self, records: Records, low_s: bool) -> Result<Vec<Verdict>, String> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, answer) = oneshot::channel();
        let job = Job {
            records,
            low_s,
            reply,
        };
        self.jobs
            .send(job)
            .await
            .map_err(|_| "the verification batcher has stopped".to_string())?;
        answer
            .await
            .map_err(|_| "the verification batch was dropped".to_string())?
    }
}

async fn gather(
    mut queue: mpsc::Receiver<Job>,
    registry: Arc<Registry>,
    config: BatcherConfig,
    metrics: Metrics,
) {
    let preparer = Arc::new(Preparer::new());
    let slots = Arc::new(Semaphore::new(config.in_flight.max(1)));
    while let Some(first) = queue.recv().await {
        let deadline = Instant::now() + config.window;
        let mut size = first.records.len();
        let mut jobs = vec![first];
        while size < config.max_records {
            match tokio::time::timeout_at(deadline, queue.recv()).await {
                Ok(Some(job)) => {
                    size += job.records.len();
                    jobs.push(job);
                }
                Ok(None) | Err(_) => break,
            }
        }
        // The low-s rule is a property of a whole batch: one batch per setting.
        let (strict, plain): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.low_s);
        for (group, low_s) in [(strict, true), (plain, false)] {
            if group.is_empty() {
                continue;
            }
            let Ok(permit) = slots.clone().acquire_owned().await else {
                return;
            };
            let (registry, preparer, metrics) =
                (registry.clone(), preparer.clone(), metrics.clone());
            let backend = config.backend.clone();
            tokio::task::spawn_blocking(move || {
                run_batch(&registry, &backend, low_s, &preparer, &metrics, group);
                drop(permit);
            });
        }
    }
}

/// Verifies the records of every job as one call and answers each job with its share.
fn run_batch(
    registry: &Registry,
    backend: &str,
    low_s: bool,
    preparer: &Preparer,
    metrics: &Metrics,
    jobs: Vec<Job>,
) {
    let mut records = Vec::with_capacity(jobs.iter().map(|j| j.records.len()).sum());
    let mut shares = Vec::with_capacity(jobs.len());
    for job in jobs {
        shares.push((job.records.len(), job.reply));
        records.extend(job.records);
    }
    match verify_records(registry, backend, low_s, preparer, &records) {
        Ok(outcome) => {
            for (alg, used, count) in &outcome.batches {
                metrics.verified(&alg.to_string(), used, *count);
                metrics.verify_batch(used);
            }
            let mut verdicts = outcome.verdicts.into_iter();
            for (len, reply) in shares {
                // A caller that went away no longer needs its answer.
                let _ = reply.send(Ok(verdicts.by_ref().take(len).collect()));
            }
        }
        Err(err) => {
            tracing::error!(error = %err, records = records.len(), "verification batch failed");
            for (_, reply) in shares {
                let _ = reply.send(Err(format!("verification failed: {err}")));
            }
        }
    }
}
