//! One batch over several devices: [`Shards`] cuts a batch of `len` records into contiguous
//! parts, one per device, in proportion to each device's measured rate, runs the parts at the
//! same time (a thread per device), and puts the answers back together in record order
//! ([`Parts`]). A device that fails on its part has that part redone by the others, cut among
//! them the same way; only when every device has failed does the batch fail, with the last
//! device's error, and the caller (the registry) verifies it on the CPU as for one GPU. Nothing is
//! lost, repeated or reordered: every record belongs to exactly one part that succeeded.
//!
//! - Rates: records per second of each part's wall time (copies, kernels and merging included),
//!   smoothed over the parts a device has done ([`SMOOTHING`]); parts too short to measure
//!   throughput ([`MEASURE_FROM`]) are counted but do not move it. Until a device has a rate the
//!   devices share equally (a device without one counts as the mean of those with one).
//! - Small batches (below `whole_below`, `CudaConfig::shard_below`) go whole to one device: the
//!   least busy, the fastest among equals, since splitting them saves less than a device's
//!   fixed latency.
//! - Parts start and end at multiples of [`ALIGN`] records, so that each part's verdicts are
//!   whole words of the batch's bitmap and merging is a copy of words.
//! - A device that fails its parts again and again gets half the share for each failure in a
//!   row (its parts still redone by the others), so a lost card soon costs little and one that
//!   failed once is back to its rate after its next success.
//! - Only errors that another device may not repeat are redone elsewhere: a device error or an
//!   unavailable module. An error in the request itself (`Input`, `Unsupported`) is returned at
//!   once, since every device would give it.
//!
//! The layer is generic over the device type `D` and the work (a closure from a device and a
//! range of records to that part's answer), so the host tests below drive it with fake devices:
//! fast and slow, one that fails, all failing. The CUDA backend's devices are its engines
//! ([`crate::backend`]).

use crate::raw::RawVerdicts;
use chainsig_core::backend::BackendError;
use chainsig_core::bitmap::Bitmap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Parts are cut at multiples of this many records: one 64-bit word of verdicts, and the padding
/// every kernel works in.
pub const ALIGN: usize = 64;

/// The weight of the newest part's rate in a device's smoothed rate: the last two parts count
/// about as much as everything before, so a device slowed by other work is seen within a batch
/// or two, and one long part's noise does not swing the split.
pub const SMOOTHING: f64 = 0.5;

/// Parts of fewer records than this do not change a device's rate: their wall time is mostly the
/// fixed latency of a launch (about a millisecond), not throughput.
pub const MEASURE_FROM: usize = 4096;

/// What one device has done since the backend opened.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ShardStats {
    /// Records answered (parts that succeeded).
    pub records: u64,
    /// Wall time of those parts, in seconds.
    pub seconds: f64,
    /// Smoothed records per second, once a part of [`MEASURE_FROM`] records or more has run.
    pub rate: Option<f64>,
    /// Parts that failed on this device (each redone on the others, or reported).
    pub failures: u64,
    /// Records of other devices' failed parts that this device answered.
    pub redone: u64,
    /// Parts failed in a row, since this device's last success: each halves its share.
    pub failing: u32,
}

/// An answer that can be put together from the answers of consecutive parts, in order.
pub trait Parts: Sized {
    /// The answer of the records of `parts`, one after another.
    fn concat(parts: Vec<Self>) -> Self;
}

impl Parts for Bitmap {
    fn concat(parts: Vec<Bitmap>) -> Bitmap {
        let len: usize = parts.iter().map(Bitmap::len).sum();
        let aligned = parts
            .iter()
            .take(parts.len().saturating_sub(1))
            .all(|p| p.len() % 64 == 0);
        if aligned {
            let mut words = Vec::with_capacity(len.div_ceil(64));
            for p in &parts {
                words.extend_from_slice(p.words());
            }
            Bitmap::from_words(words, len)
        } else {
            Bitmap::from_bools(parts.iter().flat_map(Bitmap::iter))
        }
    }
}

impl<T> Parts for Vec<T> {
    fn concat(parts: Vec<Vec<T>>) -> Vec<T> {
        let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for p in parts {
            out.extend(p);
        }
        out
    }
}

impl Parts for RawVerdicts {
    fn concat(parts: Vec<RawVerdicts>) -> RawVerdicts {
        let mut faults = Vec::with_capacity(parts.iter().map(RawVerdicts::len).sum());
        let mut maps = Vec::with_capacity(parts.len());
        for p in parts {
            faults.extend_from_slice(&p.faults);
            maps.push(p.verdicts);
        }
        RawVerdicts {
            verdicts: Bitmap::concat(maps),
            faults,
        }
    }
}

/// A batch that can be cut into contiguous parts, each a batch of its own.
pub trait Cut: Clone {
    /// Records `range`, in order, as a batch of their own.
    fn cut(&self, range: Range<usize>) -> Self;
    fn records(&self) -> usize;
}

/// Records `range` of `batch`: the batch itself, uncopied, when the range is all of it (one
/// device, or a batch not worth splitting); otherwise a copy of the range.
pub fn part<B: Cut>(batch: &B, range: Range<usize>) -> std::borrow::Cow<'_, B> {
    if range.start == 0 && range.end == batch.records() {
        std::borrow::Cow::Borrowed(batch)
    } else {
        std::borrow::Cow::Owned(batch.cut(range))
    }
}

impl Cut for chainsig_core::batch::Batch {
    fn cut(&self, range: Range<usize>) -> Self {
        self.range(range)
    }
    fn records(&self) -> usize {
        self.len()
    }
}

impl Cut for chainsig_core::messages::MessageBatch {
    fn cut(&self, range: Range<usize>) -> Self {
        self.range(range)
    }
    fn records(&self) -> usize {
        self.len()
    }
}

impl Cut for chainsig_core::raw_sm2::RawSm2Batch {
    fn cut(&self, range: Range<usize>) -> Self {
        self.range(range)
    }
    fn records(&self) -> usize {
        self.len()
    }
}

/// Devices sharing batches, with what each has done.
pub struct Shards<D> {
    devices: Vec<D>,
    stats: Vec<Mutex<ShardStats>>,
    /// Parts running on each device now (a small batch goes to an idle one).
    busy: Vec<AtomicUsize>,
    whole_below: usize,
}

/// A part of a batch planned for a device.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Part {
    device: usize,
    range: Range<usize>,
    /// Whether it is (a piece of) another device's failed part.
    redo: bool,
}

/// Whether another device may succeed where one failed: a device error or a module that did not
/// load there. The request's own errors would recur on every device.
fn retryable(e: &BackendError) -> bool {
    matches!(
        e,
        BackendError::Device { .. } | BackendError::Unavailable { .. }
    )
}

impl<D: Sync> Shards<D> {
    /// Devices in order; batches of fewer than `whole_below` records are not split.
    ///
    /// # Panics
    /// With no device: the backend opens at least one or fails before.
    pub fn new(devices: Vec<D>, whole_below: usize) -> Shards<D> {
        assert!(!devices.is_empty(), "sharding over no device");
        let n = devices.len();
        Shards {
            devices,
            stats: (0..n).map(|_| Mutex::new(ShardStats::default())).collect(),
            busy: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            whole_below,
        }
    }

    pub fn devices(&self) -> &[D] {
        &self.devices
    }

    /// Each device's record so far, in device order.
    pub fn stats(&self) -> Vec<ShardStats> {
        (0..self.devices.len()).map(|d| self.stat(d)).collect()
    }

    fn stat(&self, d: usize) -> ShardStats {
        *self.stats[d]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on every device at the same time (loading tables, setting a helper); the first
    /// error in device order, if any, after all have finished.
    pub fn each(
        &self,
        f: impl Fn(&D) -> Result<(), BackendError> + Sync,
    ) -> Result<(), BackendError> {
        if let [only] = &self.devices[..] {
            return f(only);
        }
        let f = &f;
        std::thread::scope(|scope| {
            let jobs: Vec<_> = self
                .devices
                .iter()
                .map(|d| scope.spawn(move || f(d)))
                .collect();
            let results: Vec<_> = jobs.into_iter().map(join).collect();
            results.into_iter().collect()
        })
    }

    /// The answer for records `0..len`: `work(device, range)` answers a part; parts run at the
    /// same time on their devices, failed parts are redone on the devices that have not failed,
    /// and the answers are put together in order.
    pub fn run<T, F>(&self, len: usize, work: F) -> Result<T, BackendError>
    where
        T: Parts + Send,
        F: Fn(&D, Range<usize>) -> Result<T, BackendError> + Sync,
    {
        let all: Vec<usize> = (0..self.devices.len()).collect();
        let mut plan = if len < self.whole_below || all.len() == 1 {
            vec![Part {
                device: self.pick(),
                range: 0..len,
                redo: false,
            }]
        } else {
            self.split(0..len, &all, false)
        };
        let mut done: Vec<(usize, T)> = Vec::with_capacity(plan.len());
        let mut failed = vec![false; all.len()];
        loop {
            let results = self.round(&plan, &work);
            let (mut again, mut last_error) = (Vec::new(), None);
            for (part, result) in plan.into_iter().zip(results) {
                match result {
                    Ok(answer) => done.push((part.range.start, answer)),
                    Err(e) if !retryable(&e) => return Err(e),
                    Err(e) => {
                        failed[part.device] = true;
                        again.push(part.range);
                        last_error = Some(e);
                    }
                }
            }
            let Some(error) = last_error else { break };
            let survivors: Vec<usize> = all.iter().copied().filter(|&d| !failed[d]).collect();
            if survivors.is_empty() {
                return Err(error);
            }
            plan = again
                .into_iter()
                .flat_map(|r| self.split(r, &survivors, true))
                .collect();
        }
        if done.len() == 1 {
            // One part (one device, or a batch not worth splitting): its answer as it is, not
            // copied into a new one (2^20 transactions' answers are 92 MB).
            return Ok(done.pop().expect("one part").1);
        }
        done.sort_by_key(|(start, _)| *start);
        Ok(T::concat(done.into_iter().map(|(_, a)| a).collect()))
    }

    /// Runs the parts of one round, each device's parts in order on a thread of its own (the
    /// calling thread when there is one part), and gives their results in plan order.
    fn round<T, F>(&self, plan: &[Part], work: &F) -> Vec<Result<T, BackendError>>
    where
        T: Send,
        F: Fn(&D, Range<usize>) -> Result<T, BackendError> + Sync,
    {
        if let [part] = plan {
            return vec![self.run_part(part, work)];
        }
        let mut results: Vec<Option<Result<T, BackendError>>> = plan.iter().map(|_| None).collect();
        std::thread::scope(|scope| {
            let jobs: Vec<_> = (0..self.devices.len())
                .filter_map(|d| {
                    let mine: Vec<(usize, &Part)> = plan
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| p.device == d)
                        .collect();
                    (!mine.is_empty()).then(|| {
                        let at: Vec<usize> = mine.iter().map(|(k, _)| *k).collect();
                        let job = scope.spawn(move || {
                            mine.into_iter()
                                .map(|(_, p)| self.run_part(p, work))
                                .collect::<Vec<_>>()
                        });
                        (at, job)
                    })
                })
                .collect();
            for (at, job) in jobs {
                match job.join() {
                    Ok(answers) => {
                        for (k, a) in at.into_iter().zip(answers) {
                            results[k] = Some(a);
                        }
                    }
                    Err(_) => {
                        for k in at {
                            results[k] = Some(Err(panicked()));
                        }
                    }
                }
            }
        });
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(panicked())))
            .collect()
    }

    /// One part on its device, timed into the device's record.
    fn run_part<T, F>(&self, part: &Part, work: &F) -> Result<T, BackendError>
    where
        F: Fn(&D, Range<usize>) -> Result<T, BackendError>,
    {
        let d = part.device;
        self.busy[d].fetch_add(1, Ordering::SeqCst);
        let started = Instant::now();
        let answer = work(&self.devices[d], part.range.clone());
        let seconds = started.elapsed().as_secs_f64();
        self.busy[d].fetch_sub(1, Ordering::SeqCst);
        let mut stats = self.stats[d]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = part.range.len();
        match &answer {
            Ok(_) => {
                stats.failing = 0;
                stats.records += n as u64;
                stats.seconds += seconds;
                if part.redo {
                    stats.redone += n as u64;
                }
                if n >= MEASURE_FROM && seconds > 0.0 {
                    let now = n as f64 / seconds;
                    stats.rate = Some(match stats.rate {
                        Some(r) => (1.0 - SMOOTHING) * r + SMOOTHING * now,
                        None => now,
                    });
                }
            }
            Err(_) => {
                stats.failures += 1;
                stats.failing += 1;
            }
        }
        answer
    }

    /// Each device's weight in a split among `among`: its rate, or the mean of the others' rates
    /// where it has none yet (1 where none has one: an equal split), halved for each part it
    /// has failed in a row. A card that keeps failing gets ever smaller parts (each still
    /// redone by the others) until its share rounds to nothing; one that failed once is back to
    /// its rate after its next success.
    fn weights(&self, among: &[usize]) -> Vec<f64> {
        let stats: Vec<ShardStats> = among.iter().map(|&d| self.stat(d)).collect();
        let known: Vec<f64> = stats.iter().filter_map(|s| s.rate).collect();
        let fill = if known.is_empty() {
            1.0
        } else {
            known.iter().sum::<f64>() / known.len() as f64
        };
        stats
            .iter()
            .map(|s| s.rate.unwrap_or(fill) * 0.5f64.powi(s.failing.min(64) as i32))
            .collect()
    }

    /// `range` cut among the devices `among` in proportion to their weights, at multiples of
    /// [`ALIGN`] (the last part ends where the range does), empty parts left out; at least one
    /// part, even for an empty range.
    fn split(&self, range: Range<usize>, among: &[usize], redo: bool) -> Vec<Part> {
        let weights = self.weights(among);
        let total: f64 = weights.iter().sum();
        let len = range.len();
        let mut parts = Vec::with_capacity(among.len());
        let (mut start, mut cumulative) = (range.start, 0.0);
        for (k, (&device, w)) in among.iter().zip(&weights).enumerate() {
            cumulative += w;
            let end = if k + 1 == among.len() {
                range.end
            } else {
                let share = (len as f64 * cumulative / total / ALIGN as f64).round() as usize;
                (range.start + share * ALIGN).clamp(start, range.end)
            };
            if end > start {
                parts.push(Part {
                    device,
                    range: start..end,
                    redo,
                });
            }
            start = end;
        }
        if parts.is_empty() {
            let heaviest = (0..among.len())
                .max_by(|&a, &b| weights[a].total_cmp(&weights[b]).then(b.cmp(&a)))
                .expect("at least one device");
            parts.push(Part {
                device: among[heaviest],
                range,
                redo,
            });
        }
        parts
    }

    /// The device for a batch not worth splitting: the least busy, the fastest among those, the
    /// first among equals.
    fn pick(&self) -> usize {
        let all: Vec<usize> = (0..self.devices.len()).collect();
        let weights = self.weights(&all);
        let busy = |d: usize| self.busy[d].load(Ordering::SeqCst);
        all.into_iter()
            .min_by(|&a, &b| {
                busy(a)
                    .cmp(&busy(b))
                    .then(weights[b].total_cmp(&weights[a]))
                    .then(a.cmp(&b))
            })
            .expect("at least one device")
    }
}

fn panicked() -> BackendError {
    chainsig_gpu::device_err("shard", "a device's thread panicked").into()
}

fn join(
    job: std::thread::ScopedJoinHandle<'_, Result<(), BackendError>>,
) -> Result<(), BackendError> {
    job.join().unwrap_or_else(|_| Err(panicked()))
}

#[cfg(test)]
#[path = "shards_tests.rs"]
mod tests;
