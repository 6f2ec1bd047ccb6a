//! The engine behind [`crate::CudaBackend`]: the opened device, its loaded modules and the chunk
//! pipeline every verification runs through. A batch (or several works run together) is cut into
//! chunks over K streams: pinned staging → async copy in → (SM3 on the GPU) → kernel → async copy
//! of the bitmap words (and recovered keys) out → event, so copies and kernels of different
//! chunks overlap.
//!
//! - this file: opening the device and the SM2 modules, the pipeline ([`Engine::pipeline`],
//!   `launch_chunks`) and the work kinds it runs;
//! - [`ecdsa`]: a curve's ECDSA module, loaded and checked at its first batch; sender recovery;
//! - [`signers`]: known signers' tables and the split of a batch into known and other records;
//! - [`sm3`]: e = SM3(Z_A ‖ M) on the GPU before verification (GB/T 32918.2);
//! - [`raw`]: SM2 records from their own bytes: keys decoded and checked, Z_A and e computed on
//!   the GPU before verification;
//! - [`modules`]: compiling the modules, at open and ahead of time ([`precompile`]);
//! - [`selftest`]: the checks a module passes before it gives a verdict;
//! - [`slots`]: one stream's pinned and device buffers, grown on demand, and the harvest of a
//!   finished chunk; the sets of slots calls take, so that several run at once;
//! - [`warm`]: what a call needs loaded, and the modules of the work a caller announces, loaded
//!   before its first batch;
//! - `timing` (the `bench` feature): the kernel alone, timed with CUDA events.
//!
//! Sharing: the backend holds an engine behind a read-write lock. Loading a module (an ECDSA
//! curve's, SM3's, the raw paths') takes it for writing, once; every call takes it for reading
//! and runs its pipeline on a slot set of its own ([`slots::SlotPool`]), so calls stage, copy
//! and launch side by side.
//!
//! Buffers and events are chainsig-gpu's raw RAII wrappers: the pipeline manages its own
//! synchronisation (a slot's buffers are reused only after its event completes), so cudarc's
//! per-buffer event tracking is not wanted.

mod ecdsa;
mod ethtx;
mod modules;
mod raw;
mod selftest;
mod signers;
mod slots;
mod sm3;
#[cfg(feature = "bench")]
mod timing;
mod warm;

use crate::backend::{unavailable, NAME};
use crate::host;
use crate::kernels::{self, KernelConfig};
use crate::launch::{launch_shape, pick_kernel, round_chunk, Loaded};
use crate::messages::MessageBatch;
use crate::raw::RawPart;
use crate::signers::{StageSigned, SIGNED_ROWS};
use crate::stage::{chunk_words, on_stagers, stage, stage_recover};
use crate::CudaConfig;
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::{Backend, BackendError};
use chainsig_core::batch::{Batch, RecoverItem};
use chainsig_core::bitmap::Bitmap;
use chainsig_gpu::cudarc;
use chainsig_gpu::cudarc::driver::{
    result, sys, CudaContext, CudaFunction, LaunchConfig, PushKernelArg,
};
use chainsig_gpu::fault::{self, Op};
use chainsig_gpu::{device_err, DevBuf, Resources};
use ecdsa::{loaded_ecdsa, EcdsaKernels};
use modules::compile_sm2_modules;
pub use modules::precompile;
use slots::{Outputs, Pending, Slot, SlotPool};
use std::sync::Arc;
use std::time::Instant;
pub(crate) use warm::Needs;
pub use warm::Upcoming;

/// The opened device and everything loaded on it; calls share it ([`crate::backend`] holds it
/// behind a read-write lock: loading writes, calls read, each with a slot set of its own).
pub(crate) struct Engine {
    ctx: Arc<CudaContext>,
    func: Loaded,
    /// Forms of `func` for smaller batches, each with the largest batch it takes, smallest first
    /// ([`CudaConfig::small_kernels`]).
    small: Vec<(Loaded, usize)>,
    /// `cs_field_check`, the arithmetic self-test in the same module.
    check: CudaFunction,
    gtab: DevBuf,
    slots: SlotPool,
    cfg: CudaConfig,
    /// The device's architecture ("sm_90"), for modules compiled after open.
    arch: String,
    /// The device's multiprocessors ([`Loaded::block_for`]).
    sms: u32,
    /// `cs_sm3_e`, compiled at the first batch that carries messages.
    sm3: Option<CudaFunction>,
    /// `cs_verify_signed` from the main module (fast mode only).
    signed: Option<Loaded>,
    /// The known signers' tables on the device, with their numbering and key encodings.
    ktabs: Option<KnownTables>,
    /// A host backend for the few records of a batch outside the known signers, and the most
    /// records it takes ([`CudaBackend::set_host_helper`]).
    host: Option<(Arc<dyn Backend>, usize)>,
    /// The ECDSA curves' kernels, each loaded at the curve's first batch.
    ecdsa: Vec<EcdsaKernels>,
    /// The raw-transaction kernel, loaded at the first batch of raw transactions.
    ethtx: Option<ethtx::EthtxKernel>,
    /// The raw SM2 module's kernels, loaded at the first batch of raw SM2 records.
    raw: Option<raw::RawKernels>,
}

/// Records `first..first + len` of a batch, staged straight from the batch's rows: a device's
/// part of a batch shared among several engines needs no copy of its own.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    batch: &'a Batch,
    first: usize,
    len: usize,
}

impl<'a> Rows<'a> {
    /// Every record of `batch`.
    fn all(batch: &'a Batch) -> Rows<'a> {
        Rows {
            batch,
            first: 0,
            len: batch.len(),
        }
    }

    /// Records `range` of `batch`.
    fn part(batch: &'a Batch, range: std::ops::Range<usize>) -> Rows<'a> {
        assert!(
            range.start <= range.end && range.end <= batch.len(),
            "part {range:?} of {}",
            batch.len()
        );
        Rows {
            batch,
            first: range.start,
            len: range.len(),
        }
    }
}

/// The loaded known signers: their tables one after another on the device, their numbering, and
/// their keys' SEC1 encodings for raw records (built once here, not per batch).
struct KnownTables {
    buf: DevBuf,
    index: crate::signers::SignerIndex,
    encodings: crate::raw::KnownEncodings,
}

/// Messages to hash on the GPU (record i of the work is message i) and the SM3 kernel.
type Hashing<'a> = Option<(&'a MessageBatch, &'a CudaFunction)>;

/// What the chunk pipeline verifies.
#[derive(Clone, Copy)]
enum Work<'a> {
    /// Records with their keys; with messages (record i of the rows is message i, so the rows
    /// are a whole batch), e is hashed on the GPU first.
    Records(Rows<'a>, Hashing<'a>),
    /// Records of known signers, against the tables in `ktabs`; with messages, e is hashed on the
    /// GPU first (e is the first row of both layouts, so the SM3 kernel serves both).
    Signed(&'a dyn StageSigned, Hashing<'a>),
    /// ECDSA records with their keys (P-256 or secp256k1), through the curve's loaded kernels.
    Ecdsa(Rows<'a>),
    /// Public-key recovery on the curve of the algorithm: verdicts and keys.
    Recover(Algorithm, &'a [RecoverItem]),
    /// SM2 records from their bytes, fresh signers (`None`) or known ones with their numbers:
    /// the raw kernel writes the verification input and a fault per record ([`raw`]).
    Raw(RawPart<'a>, Option<&'a [u32]>, &'a CudaFunction),
}

impl Work<'_> {
    fn len(&self) -> usize {
        match self {
            Work::Records(rows, _) | Work::Ecdsa(rows) => rows.len,
            Work::Signed(b, _) => b.len(),
            Work::Recover(_, items) => items.len(),
            Work::Raw(part, ..) => part.len(),
        }
    }

    fn hashing(&self) -> Hashing<'_> {
        match self {
            Work::Records(_, h) | Work::Signed(_, h) => *h,
            Work::Ecdsa(_) | Work::Recover(..) | Work::Raw(..) => None,
        }
    }
}

/// The buffers are freed (as the fields drop, after this) in the engine's own context, whichever
/// thread drops it: with several devices that thread's current context may be another's.
impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
    }
}

// SAFETY: the raw pointers in Engine's own buffers (the G table, the known signers' tables) are
// written only through `&mut Engine` (the backend's write lock) and only read by kernels
// otherwise; the slots' buffers are used by the one call that took their set from the pool.
unsafe impl Send for Engine {}
// SAFETY: as for Send: through `&Engine` calls read the loaded modules and tables and write only
// their own slot set and the pool's mutex-guarded times.
unsafe impl Sync for Engine {}

impl Engine {
    /// Opens device `ordinal` (of those the driver shows) with `cfg`'s kernels; the modules of an
    /// architecture already loaded by this process come from memory (chainsig-gpu's compile
    /// cache), so a second engine of the same card model compiles nothing.
    pub(crate) fn open(
        cfg: CudaConfig,
        ordinal: usize,
    ) -> Result<(Engine, Vec<Resources>, bool), BackendError> {
        cfg.validate().map_err(unavailable)?;
        let chainsig_gpu::Opened { ctx, arch, .. } = chainsig_gpu::open(ordinal)?;
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| device_err("multiprocessor count", e))? as u32;
        let small = cfg.small_kernels();
        let (kernels, compiled): (Vec<KernelConfig>, Vec<chainsig_gpu::Compiled>) =
            compile_sm2_modules(&cfg, &arch)?.into_iter().unzip();
        let mut modules = Vec::new();
        for (k, c) in kernels.iter().zip(&compiled) {
            let module = ctx
                .load_module(cudarc::nvrtc::Ptx::from_binary(c.cubin.clone()))
                .map_err(|e| device_err("cuModuleLoadData", e))?;
            let func = module
                .load_function(&k.name())
                .map_err(|e| device_err("cuModuleGetFunction", e))?;
            // The main kernel first, then the forms for small batches.
            let block = if modules.is_empty() {
                cfg.block_size
            } else {
                cfg.small_block_size
            };
            modules.push((module, Loaded::new(func, k, block)?));
        }
        let mut modules = modules.into_iter();
        let (module, func) = modules.next().expect("the main module is first");
        let small: Vec<(Loaded, usize)> = modules
            .zip(&small)
            .map(|((_, f), &(_, below))| (f, below))
            .collect();
        let check = module
            .load_function("cs_field_check")
            .map_err(|e| device_err("cuModuleGetFunction", e))?;
        let signed = if cfg.kernel.mode == crate::Mode::Fast {
            let func = module
                .load_function(kernels::SIGNED_KERNEL)
                .map_err(|e| device_err("cuModuleGetFunction", e))?;
            // The known-signer entry runs the module's lanes, never the split.
            let kernel = KernelConfig {
                split: false,
                ..cfg.kernel
            };
            Some(Loaded::new(func, &kernel, cfg.block_size)?)
        } else {
            None
        };
        // The fixed-base table, built by the kernels' own arithmetic on the host and checked on-curve.
        let table = gtable()?;
        let gtab = DevBuf::new(table.len() * 4)?;
        // SAFETY: gtab holds exactly table.len() words; synchronous copy.
        unsafe { result::memcpy_htod_sync(gtab.ptr(), table) }
            .map_err(|e| device_err("upload table", e))?;
        let slots = SlotPool::new(&ctx, cfg.streams, cfg.calls_at_once)?;
        let res = compiled
            .iter()
            .flat_map(|c| chainsig_gpu::parse_resources(&c.log))
            .collect();
        let from_cache = compiled.iter().all(|c| c.from_cache);
        let engine = Engine {
            ctx,
            func,
            small,
            check,
            gtab,
            slots,
            sms,
            cfg,
            arch,
            sm3: None,
            signed,
            ktabs: None,
            host: None,
            ecdsa: Vec::new(),
            ethtx: None,
            raw: None,
        };
        engine.check_field_arithmetic()?;
        Ok((engine, res, from_cache))
    }

    /// Host time of the calls so far: staging, waiting, decoding, growing buffers and waiting
    /// for a slot set ([`crate::PipelineTimes`]; the backend adds its own lock's queue).
    pub(crate) fn times(&self) -> crate::backend::PipelineTimes {
        self.slots.times()
    }

    /// Adds a call's host time to the engine's.
    fn add_times(&self, call: &crate::backend::PipelineTimes) {
        self.slots.add_times(call);
    }

    /// Makes the engine's context the calling thread's, as every entry does first: a batch's
    /// parts run on threads of their own, and buffers are allocated in the current context.
    pub(crate) fn bind(&self) -> Result<(), BackendError> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| device_err("bind context", e).into())
    }

    /// The device's name as the driver gives it ("NVIDIA H100 80GB HBM3").
    pub(crate) fn device_name(&self) -> String {
        self.ctx
            .name()
            .unwrap_or_else(|e| format!("unnamed ({e:?})"))
    }

    fn chunk_len(&self, len: usize) -> usize {
        self.cfg.chunk_len(len)
    }

    /// Records `range` of a batch the backend takes ([`crate::backend::check_batch`]): SM2
    /// through the known signers' tables or the default kernel, ECDSA through the curve's
    /// kernels; verdict i for record `range.start + i`. Staged straight from the batch (SM2 of
    /// unknown signers, ECDSA), or, with known signers loaded, split by signer from a copy of
    /// the range (the split copies the others anyway).
    pub(crate) fn verify_part(
        &self,
        batch: &Batch,
        range: std::ops::Range<usize>,
    ) -> Result<Bitmap, BackendError> {
        match batch.alg() {
            Algorithm::Sm2 if self.ktabs.is_some() => {
                self.verify_known(&crate::shards::part(batch, range))
            }
            Algorithm::Sm2 => self.run(Work::Records(Rows::part(batch, range), None)),
            _ => self.verify_ecdsa(batch, range),
        }
    }

    pub(crate) fn verify(&self, batch: &Batch) -> Result<Bitmap, BackendError> {
        self.run(Work::Records(Rows::all(batch), None))
    }

    /// The chunk pipeline over one work.
    fn run(&self, work: Work) -> Result<Bitmap, BackendError> {
        Ok(self.run_all(&[work])?.pop().expect("one work, one bitmap"))
    }

    /// The chunk pipeline: each work cut into chunks (the chunk length set by all the works
    /// together, so a small work is one chunk), the chunks spread over the streams in order, one
    /// bitmap per work. A work with messages has each chunk's digests computed on the GPU by the
    /// SM3 kernel (into the e rows of the staged input) just before its verification kernel.
    fn run_all(&self, works: &[Work]) -> Result<Vec<Bitmap>, BackendError> {
        let out = self.pipeline(works)?;
        Ok(out
            .words
            .into_iter()
            .zip(works)
            .map(|(words, work)| Bitmap::from_words(words, work.len()))
            .collect())
    }

    /// The chunk pipeline of [`Engine::run_all`], with the recovered keys of recovery works, on a
    /// slot set taken for the call.
    fn pipeline(&self, works: &[Work]) -> Result<Outputs, BackendError> {
        let mut out = Outputs {
            words: works
                .iter()
                .map(|w| vec![0u64; w.len().div_ceil(64)])
                .collect(),
            signers: works
                .iter()
                .map(|w| match w {
                    Work::Recover(_, items) => vec![None; items.len()],
                    _ => Vec::new(),
                })
                .collect(),
            faults: works
                .iter()
                .map(|w| match w {
                    Work::Raw(part, ..) => vec![0; part.len()],
                    _ => Vec::new(),
                })
                .collect(),
        };
        let total: usize = works.iter().map(Work::len).sum();
        if total == 0 {
            return Ok(out);
        }
        self.bind()?;
        let chunk = self.chunk_len(total);
        let mut slots = self.slots.take()?;
        let mut times = crate::backend::PipelineTimes::default();
        let mut run = || -> Result<(), BackendError> {
            let mut c = 0; // chunks launched, over every work
            for (w, &work) in works.iter().enumerate() {
                c = self.launch_chunks(&mut slots, &mut times, w, work, chunk, c, &mut out)?;
            }
            let waited = Instant::now();
            for slot in slots.iter_mut() {
                slot.harvest(&mut out)?;
            }
            times.wait += waited.elapsed();
            Ok(())
        };
        let ran = run();
        self.add_times(&times);
        if let Err(e) = ran {
            abandon(&mut slots);
            return Err(e);
        }
        Ok(out)
    }

    /// Stages and launches the chunks of work `w` on `slots`, chunk numbers from `c` on (chunk
    /// `c` goes to slot `c mod slots`, after that slot's previous chunk is harvested). Returns
    /// the next chunk number.
    #[allow(clippy::too_many_arguments)]
    fn launch_chunks(
        &self,
        slots: &mut [Slot],
        times: &mut crate::backend::PipelineTimes,
        w: usize,
        work: Work,
        chunk: usize,
        mut c: usize,
        out: &mut Outputs,
    ) -> Result<usize, BackendError> {
        let len = work.len();
        let no_small: &[(Loaded, usize)] = &[];
        let (kernel, small, gtab, k) = match work {
            Work::Records(..) | Work::Raw(_, None, _) => (
                &self.func,
                &self.small[..],
                self.gtab.ptr(),
                self.cfg.kernel,
            ),
            Work::Signed(..) | Work::Raw(_, Some(_), _) => (
                self.signed
                    .as_ref()
                    .expect("signers load only where the signed kernel exists"),
                no_small,
                self.gtab.ptr(),
                self.cfg.kernel,
            ),
            Work::Ecdsa(rows) => {
                let ecdsa = loaded_ecdsa(&self.ecdsa, rows.batch.alg());
                (
                    ecdsa.kernel(rows.batch.low_s()),
                    no_small,
                    ecdsa.gtab.ptr(),
                    ecdsa.config,
                )
            }
            Work::Recover(alg, _) => {
                let ecdsa = loaded_ecdsa(&self.ecdsa, alg);
                (&ecdsa.recover, no_small, ecdsa.gtab.ptr(), ecdsa.config)
            }
        };
        let ktabs = self.ktabs.as_ref().map_or(0, |t| t.buf.ptr());
        let nslots = slots.len();
        // One kernel and block for the whole work: its chunks run side by side on the GPU. A
        // work of less than one round spreads over every multiprocessor (spread_small).
        let func = pick_kernel(kernel, small, len);
        let round = func.round(self.sms);
        let block = if self.cfg.spread_small && len < round {
            func.tail_block(len, self.sms)
        } else {
            func.block_for(len, self.sms)
        };
        let chunk = if self.cfg.round_chunks && self.cfg.chunk_items.is_none() {
            round_chunk(chunk, len, round)
        } else {
            chunk
        };
        for i0 in (0..len).step_by(chunk) {
            let m = chunk.min(len - i0);
            let mp = m.next_multiple_of(64);
            let (grid, out_words) = launch_shape(mp, block, func.threads);
            let in_words = match work {
                Work::Records(..) | Work::Ecdsa(_) | Work::Raw(_, None, _) => chunk_words(&k, mp),
                Work::Signed(..) | Work::Raw(_, Some(_), _) => SIGNED_ROWS * mp,
                Work::Recover(..) => kernels::RECOVER_ROWS * mp,
            };
            let keys_stride = if let Work::Recover(..) = work { mp } else { 0 };
            // A raw chunk's fault codes come back in the keys' buffers, a byte a record.
            let fault_words = if let Work::Raw(..) = work { mp / 4 } else { 0 };
            let slot = &mut slots[c % nslots];
            c += 1;
            let waited = Instant::now();
            slot.harvest(out)?;
            let staged = Instant::now();
            times.wait += staged - waited;
            slot.reserve(in_words, out_words, (16 * keys_stride).max(fault_words))?;
            let pin_in = slot.pin_in.as_mut_slice();
            match work {
                Work::Records(rows, _) | Work::Ecdsa(rows) => on_stagers(|| {
                    stage(rows.batch, &k, rows.first + i0, m, mp, pin_in);
                }),
                Work::Signed(batch, _) => on_stagers(|| batch.stage(i0, m, mp, pin_in)),
                Work::Recover(_, items) => {
                    on_stagers(|| stage_recover(&items[i0..i0 + m], mp, pin_in));
                }
                // The raw kernel writes the whole input on the device.
                Work::Raw(..) => {}
            }
            let s = slot.stream.cu_stream();
            if let Work::Raw(part, signers, kernel) = work {
                raw::prepare_chunk(slot, part, signers, kernel, ktabs, i0, m, mp)?;
            } else {
                fault::check(Op::Copy, "copy in")?;
                // SAFETY: pinned and device buffers hold in_words / out_words; the pinned buffers
                // are not touched again until `done` has completed (harvest syncs on it first).
                unsafe {
                    result::memcpy_htod_async(
                        slot.dev_in.ptr(),
                        &slot.pin_in.as_slice()[..in_words],
                        s,
                    )
                    .map_err(|e| device_err("copy in", e))?;
                }
            }
            if let Some((mb, sm3)) = work.hashing() {
                sm3::hash_chunk(slot, mb, sm3, i0, m, mp)?;
            }
            times.stage += staged.elapsed();
            let (din, dout, gt) = (slot.dev_in.ptr(), slot.dev_out.ptr(), gtab);
            let (stride, count) = (mp as u32, m as u32);
            let cfg = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (block, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut b = slot.stream.launch_builder(&func.func);
            b.arg(&din).arg(&stride).arg(&count).arg(&gt);
            if let Work::Signed(..) | Work::Raw(_, Some(_), _) = work {
                b.arg(&ktabs);
            }
            b.arg(&dout);
            let dkeys = slot.dev_keys.ptr();
            if keys_stride > 0 {
                b.arg(&dkeys);
            }
            fault::check(Op::Launch, "kernel launch")?;
            // SAFETY: argument types match the kernel's (u64 pointers, u32 stride and count, and
            // for cs_verify_signed the tables' pointer before the output's, for the recovery
            // kernel the keys' pointer after it).
            unsafe { b.launch(cfg) }.map_err(|e| device_err("kernel launch", e))?;
            fault::check(Op::Copy, "copy out")?;
            // SAFETY: as for the copy in (pin_keys and dev_keys hold 16 keys_stride words).
            unsafe {
                result::memcpy_dtoh_async(&mut slot.pin_out.as_mut_slice()[..out_words], dout, s)
                    .map_err(|e| device_err("copy out", e))?;
                if keys_stride > 0 {
                    let keys = &mut slot.pin_keys.as_mut_slice()[..16 * keys_stride];
                    result::memcpy_dtoh_async(keys, dkeys, s)
                        .map_err(|e| device_err("copy keys out", e))?;
                }
                if fault_words > 0 {
                    let faults = &mut slot.pin_keys.as_mut_slice()[..fault_words];
                    result::memcpy_dtoh_async(faults, dkeys, s)
                        .map_err(|e| device_err("copy faults out", e))?;
                }
            }
            slot.done.record(&slot.stream)?;
            slot.pending = Some(Pending {
                work: w,
                first: i0,
                items: m,
                keys_stride,
                faults: fault_words > 0,
            });
        }
        Ok(c)
    }
}

/// After a failed pipeline: forgets the chunks still pending, which belong to the failed works
/// (left pending, the next pipeline would harvest them into its own outputs), once their streams
/// have stopped using the slots' buffers. A stream that cannot be synchronised (a lost context) is
/// left to the error already being reported.
fn abandon(slots: &mut [Slot]) {
    for slot in slots {
        slot.pending = None;
        let _ = slot.stream.synchronize();
    }
}

impl Engine {
    /// Lets `host` verify a batch's records outside the known signers when they are at most
    /// `most` ([`crate::CudaBackend::set_host_helper`]).
    pub(crate) fn set_host(&mut self, host: Arc<dyn Backend>, most: usize) {
        self.host = Some((host, most));
    }
}

/// Starts building the fixed-base tables of SM2, secp256k1 and P-256 on threads of their own,
/// once per process (each is 0.15–0.19 s of one core, built by the kernels' own arithmetic on the
/// host): the SM2 one is then made while a device opens (its context and modules), and an ECDSA
/// curve's first batch finds its table made rather than building it while callers wait; on an
/// H100 the first secp256k1 batch of `chainsig verify` took 0.22 s, against 0.02–0.03 s for
/// the next ones. Whoever needs a table first waits for the thread building it (a `OnceLock`).
pub(crate) fn build_tables_early() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let jobs: [(&str, fn()); 3] = [
            ("sm2", || drop(gtable())),
            ("secp256k1", || {
                drop(ecdsa::ecdsa_gtable(Algorithm::Secp256k1))
            }),
            ("p256", || drop(ecdsa::ecdsa_gtable(Algorithm::P256))),
        ];
        for (curve, job) in jobs {
            // A thread that cannot start leaves its table to be built where it is first needed.
            let _ = std::thread::Builder::new()
                .name(format!("chainsig-table-{curve}"))
                .spawn(job);
        }
    });
}

fn gtable() -> Result<&'static [u32], BackendError> {
    static TABLE: std::sync::OnceLock<Result<Vec<u32>, String>> = std::sync::OnceLock::new();
    TABLE
        .get_or_init(host::build_gtable)
        .as_deref()
        .map_err(|e| BackendError::Device {
            backend: NAME.into(),
            reason: e.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three tables built at once on their threads (the host builds keep their scratch state
    /// per thread) are the tables each curve's build gives alone.
    #[test]
    fn tables_built_side_by_side_equal_each_built_alone() {
        build_tables_early();
        assert_eq!(gtable().unwrap(), host::build_gtable().unwrap().as_slice());
        for alg in [Algorithm::Secp256k1, Algorithm::P256] {
            let alone = ecdsa::ecdsa_host_curve(alg)
                .unwrap()
                .ecdsa()
                .unwrap()
                .build_gtable()
                .unwrap();
            assert_eq!(ecdsa::ecdsa_gtable(alg).unwrap(), alone.as_slice(), "{alg}");
        }
    }
}
