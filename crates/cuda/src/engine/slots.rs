//! One stream's buffers (a slot of the pipeline): pinned staging and device memory for the input,
//! the verdict words, the messages to hash and the recovered keys, each grown when a chunk needs
//! more and reused otherwise; the chunk in flight; and its harvest once its event completes.
//!
//! Slots come in sets, one set per call in progress ([`SlotPool`]): a call stages its chunks into
//! its own set's pinned buffers and launches on its own streams while other calls do the same,
//! so the engine is shared, not held. Until 2026-12-08 one set belonged to the engine and a call
//! held the engine for its whole pipeline; on an H100, 10⁶ SM2 records from JSON Lines then spent
//! 0.10–0.15 s staging with the engine held and their callers 0.19–0.24 s queueing for it, of a
//! 0.29 s run (BENCHMARKS.md, "The GPU user paths after the staging pool"). CUDA takes launches
//! and copies on different streams from several threads at once; the GPU interleaves the sets'
//! kernels as it does one set's streams.

use crate::backend::PipelineTimes;
use crate::stage::sec1;
use chainsig_core::backend::BackendError;
use chainsig_core::batch::Recovered;
use chainsig_gpu::cudarc::driver::{CudaContext, CudaStream};
use chainsig_gpu::{device_err, DevBuf, Event, Pinned};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// An engine's slot sets: those free, and how many exist.
pub(super) struct SlotPool {
    ctx: Arc<CudaContext>,
    streams: usize,
    /// The most sets it makes ([`crate::CudaConfig::calls_at_once`]).
    most: usize,
    state: Mutex<PoolState>,
    returned: Condvar,
    /// The host time of the calls that ran on its sets, added as each call ends: their staging,
    /// waiting and decoding, the sets' buffer growth (as each set comes back) and the waits for
    /// a set (`queue`).
    times: Mutex<PipelineTimes>,
}

struct PoolState {
    free: Vec<Vec<Slot>>,
    made: usize,
}

/// A call's slots, taken from the pool and given back when dropped.
pub(super) struct SlotSet<'a> {
    pool: &'a SlotPool,
    slots: Vec<Slot>,
}

impl SlotPool {
    /// A pool of at most `most` sets of `streams` slots on `ctx`, one set made now (the others
    /// when calls overlap).
    pub(super) fn new(
        ctx: &Arc<CudaContext>,
        streams: usize,
        most: usize,
    ) -> Result<SlotPool, BackendError> {
        let pool = SlotPool {
            ctx: ctx.clone(),
            streams,
            most: most.max(1),
            state: Mutex::new(PoolState {
                free: Vec::new(),
                made: 0,
            }),
            returned: Condvar::new(),
            times: Mutex::new(PipelineTimes::default()),
        };
        let first = pool.make()?;
        let mut state = pool.lock()?;
        state.free.push(first);
        state.made = 1;
        drop(state);
        Ok(pool)
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, PoolState>, BackendError> {
        self.state
            .lock()
            .map_err(|_| device_err("slot pool", "poisoned lock").into())
    }

    fn make(&self) -> Result<Vec<Slot>, BackendError> {
        (0..self.streams).map(|_| Slot::new(&self.ctx)).collect()
    }

    /// A free set, a new one while fewer than `most` exist, or the next one given back.
    /// The caller's thread must have the engine's context bound (a new set's streams and events
    /// are made in it).
    pub(super) fn take(&self) -> Result<SlotSet<'_>, BackendError> {
        let asked = Instant::now();
        let mut state = self.lock()?;
        let slots = loop {
            if let Some(slots) = state.free.pop() {
                break slots;
            }
            if state.made < self.most {
                state.made += 1;
                drop(state);
                return match self.make() {
                    Ok(slots) => Ok(SlotSet { pool: self, slots }),
                    Err(e) => {
                        // Not made after all: another call may try again.
                        if let Ok(mut state) = self.lock() {
                            state.made -= 1;
                        }
                        Err(e)
                    }
                };
            }
            state = self
                .returned
                .wait(state)
                .map_err(|_| device_err("slot pool", "poisoned lock"))?;
        };
        drop(state);
        self.add_times(&PipelineTimes {
            queue: asked.elapsed(),
            ..PipelineTimes::default()
        });
        Ok(SlotSet { pool: self, slots })
    }

    /// Adds a call's host time to the pool's.
    pub(super) fn add_times(&self, call: &PipelineTimes) {
        if let Ok(mut times) = self.times.lock() {
            times.add(call);
        }
    }

    /// The host time of the calls so far.
    pub(super) fn times(&self) -> PipelineTimes {
        self.times.lock().map(|t| *t).unwrap_or_default()
    }
}

impl std::ops::Deref for SlotSet<'_> {
    type Target = [Slot];
    fn deref(&self) -> &[Slot] {
        &self.slots
    }
}

impl std::ops::DerefMut for SlotSet<'_> {
    fn deref_mut(&mut self) -> &mut [Slot] {
        &mut self.slots
    }
}

impl Drop for SlotSet<'_> {
    /// Back to the pool, its growth time counted; a chunk still pending belongs to a failed call
    /// and is forgotten once its stream has stopped.
    fn drop(&mut self) {
        let mut slots = std::mem::take(&mut self.slots);
        let mut grown = Duration::ZERO;
        for slot in &mut slots {
            // A call that unwound may have left copies in flight into these buffers.
            if slot.pending.take().is_some() || std::thread::panicking() {
                let _ = slot.stream.synchronize();
            }
            grown += std::mem::take(&mut slot.grown);
        }
        self.pool.add_times(&PipelineTimes {
            grow: grown,
            ..PipelineTimes::default()
        });
        if let Ok(mut state) = self.pool.lock() {
            state.free.push(slots);
        }
        self.pool.returned.notify_one();
    }
}

// SAFETY: a slot is used by one thread at a time (its set is taken from the pool under the pool's
// lock, and given back whole); its buffers are plain pinned and device addresses and its stream
// and event handles, valid on any thread that has the engine's context bound.
unsafe impl Send for Slot {}

/// One stream's buffers. `pending` is the chunk whose bitmap words are in flight to `pin_out`
/// (and, for a recovery chunk, whose keys are in flight to `pin_keys`).
pub(super) struct Slot {
    pub(super) stream: Arc<CudaStream>,
    pub(super) pin_in: Pinned<u32>,
    pub(super) pin_out: Pinned<u64>,
    pub(super) dev_in: DevBuf,
    pub(super) dev_out: DevBuf,
    /// Hashing input (Z_A, offsets, message bytes) of the chunk, for batches that carry messages.
    pub(super) pin_msg: Pinned<u32>,
    pub(super) dev_msg: DevBuf,
    /// Recovered keys of the chunk: 16 rows (x, then y) of the chunk's padded length.
    pub(super) pin_keys: Pinned<u32>,
    pub(super) dev_keys: DevBuf,
    pub(super) done: Event,
    pub(super) pending: Option<Pending>,
    /// Time spent making the buffers larger ([`crate::PipelineTimes::grow`]).
    pub(super) grown: std::time::Duration,
}

/// The chunk a slot has in flight.
#[derive(Clone, Copy)]
pub(super) struct Pending {
    pub(super) work: usize,
    pub(super) first: usize,
    pub(super) items: usize,
    /// The chunk's padded length when it brings recovered keys back, else 0.
    pub(super) keys_stride: usize,
    /// Whether it brings fault codes back (a raw chunk: a byte a record in `pin_keys`).
    pub(super) faults: bool,
}

/// What the pipeline brings back for each work: verdict words, for a recovery work each
/// request's signer, and for a raw work each record's fault code (empty for the others).
pub(super) struct Outputs {
    pub(super) words: Vec<Vec<u64>>,
    pub(super) signers: Vec<Vec<Option<Recovered>>>,
    pub(super) faults: Vec<Vec<u8>>,
}

impl Slot {
    /// A slot on a new stream of `ctx`, its buffers at their smallest.
    pub(super) fn new(ctx: &Arc<CudaContext>) -> Result<Slot, BackendError> {
        Ok(Slot {
            stream: ctx
                .new_stream()
                .map_err(|e| device_err("cuStreamCreate", e))?,
            pin_in: Pinned::new(1)?,
            pin_out: Pinned::new(1)?,
            dev_in: DevBuf::new(4)?,
            dev_out: DevBuf::new(8)?,
            pin_msg: Pinned::new(1)?,
            dev_msg: DevBuf::new(4)?,
            pin_keys: Pinned::new(1)?,
            dev_keys: DevBuf::new(4)?,
            done: Event::new(false)?,
            pending: None,
            grown: std::time::Duration::ZERO,
        })
    }

    /// Grows the buffers to hold a chunk of `in_words` input words, `out_words` verdict words and
    /// `key_words` recovered-key words (call after [`Slot::harvest`]: nothing may be in flight).
    pub(super) fn reserve(
        &mut self,
        in_words: usize,
        out_words: usize,
        key_words: usize,
    ) -> Result<(), BackendError> {
        let started = std::time::Instant::now();
        if self.pin_keys.len() < key_words {
            self.pin_keys = Pinned::new(key_words)?;
            self.dev_keys = DevBuf::new(key_words * 4)?;
        }
        if self.pin_in.len() < in_words {
            self.pin_in = Pinned::new(in_words)?;
            self.dev_in = DevBuf::new(in_words * 4)?;
        }
        if self.pin_out.len() < out_words {
            self.pin_out = Pinned::new(out_words)?;
            self.dev_out = DevBuf::new(out_words * 8)?;
        }
        self.grown += started.elapsed();
        Ok(())
    }

    /// Grows the message buffers to hold `msg_words` words, with a quarter more room: a chunk's
    /// bytes vary with its records (messages, compressed or whole keys, transactions), and buffers
    /// grown to the exact size were made again at nearly every new largest chunk, each time a
    /// pinned allocation and a device free (which may wait for the whole device) while the
    /// engine was held.
    pub(super) fn reserve_messages(&mut self, msg_words: usize) -> Result<(), BackendError> {
        let started = std::time::Instant::now();
        if self.pin_msg.len() < msg_words {
            let words = msg_words + msg_words / 4;
            self.pin_msg = Pinned::new(words)?;
            self.dev_msg = DevBuf::new(words * 4)?;
        }
        self.grown += started.elapsed();
        Ok(())
    }

    /// Waits for the chunk in flight, if any, and copies its verdict words (and recovered
    /// signers) into `out`.
    pub(super) fn harvest(&mut self, out: &mut Outputs) -> Result<(), BackendError> {
        let slot = self;
        if let Some(p) = slot.pending.take() {
            slot.done.sync()?;
            let w0 = p.first / 64;
            let n = p.items.div_ceil(64);
            out.words[p.work][w0..w0 + n].copy_from_slice(&slot.pin_out.as_slice()[..n]);
            if p.faults {
                // The kernel wrote one byte a record; the words hold them in memory order.
                let codes = slot.pin_keys.as_slice()[..p.items.div_ceil(4)]
                    .iter()
                    .flat_map(|w| w.to_ne_bytes());
                for (dst, code) in out.faults[p.work][p.first..p.first + p.items]
                    .iter_mut()
                    .zip(codes)
                {
                    *dst = code;
                }
            }
            if p.keys_stride > 0 {
                // The keys come back column-major (word j of key i at j·stride + i); each
                // recovered one becomes its SEC1 form and address here, on the host's cores,
                // while the GPU runs the other streams' chunks.
                use rayon::prelude::*;
                let (rows, bits) = (slot.pin_keys.as_slice(), slot.pin_out.as_slice());
                let signers = &mut out.signers[p.work][p.first..p.first + p.items];
                crate::stage::on_stagers(|| {
                    signers.par_iter_mut().enumerate().for_each(|(i, signer)| {
                        if bits[i / 64] >> (i % 64) & 1 == 1 {
                            let key: [u32; 16] =
                                std::array::from_fn(|j| rows[j * p.keys_stride + i]);
                            *signer = Some(Recovered::from_pubkey(sec1(&key)));
                        }
                    });
                });
            }
        }
        Ok(())
    }
}
