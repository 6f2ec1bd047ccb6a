//! The CUDA backend: device open, module load, fixed-base table upload, and the pipeline that cuts
//! a batch into chunks over K streams (pinned staging → async copy in → kernel → async copy of the
//! bitmap words out → event), so copies and kernels of different chunks overlap.
//!
//! Raw driver calls (through cudarc's `result` layer) are used for buffers and events: the batch
//! pipeline manages its own synchronisation, so cudarc's per-buffer event tracking is not wanted.

use crate::host;
use crate::kernel::{self, KernelConfig, Resources};
use crate::messages::MessageBatch;
use crate::signers::{SignerBatch, SignerTables, StageSigned, SIGNED_ROWS};
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::{Backend, BackendError};
use chainsig_core::batch::{Batch, RecoverItem, Recovered, LIMBS, OPERANDS, PY};
use chainsig_core::bitmap::Bitmap;
use cudarc::driver::{
    result, sys, CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg,
};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

use crate::codegen::Words;

/// Operand pairs of the field self-test run at every open (edge values first, then random).
const SELF_TEST_ITEMS: usize = 4096;

/// Name under which the backend registers.
pub const NAME: &str = "cuda";

/// Switches of the CUDA backend; the default is the fast mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CudaConfig {
    pub kernel: KernelConfig,
    /// CUDA streams the batch is spread over (1 to 16).
    pub streams: usize,
    /// Threads per block of the main kernel and the ECDSA kernels, a multiple of 32 up to 1024;
    /// a batch too small to give every multiprocessor a block gets smaller ones
    /// ([`Loaded::block_for`]).
    pub block_size: u32,
    /// Threads per block of the forms for small batches (compact, lane pairs, quads), a multiple
    /// of 32 up to 1024.
    #[serde(default = "default_small_block")]
    pub small_block_size: u32,
    /// Items per chunk; None cuts the batch into `streams` equal chunks of at least
    /// `min_chunk_items`.
    pub chunk_items: Option<usize>,
    /// The fewest items a chunk gets when the batch is cut into `streams` chunks: smaller chunks
    /// overlap too little to pay for their own copies and launches (H200, a batch of 4096 on the
    /// quad split kernel: 0.97 ms in one chunk, 1.03 in 2, 1.05 in 8).
    #[serde(default = "default_min_chunk")]
    pub min_chunk_items: usize,
    /// CUDA device ordinal.
    pub device: usize,
    /// Batches of at most this many items run the compact form of a fast-mode kernel
    /// ([`KernelConfig::compacted`]); 0 never does. On the H200 the compact kernel halves the
    /// time of a batch of 4096 and wins up to a few hundred thousand items, where the inlined one
    /// takes over (crates/cuda/README.md, "Instruction fetch").
    pub compact_below: usize,
    /// Batches of at most this many items run the split lane-pair form of a fast-mode kernel,
    /// four threads per signature: lane pairs for t·P and, beside them, for s·G
    /// ([`KernelConfig::split`]), compact; 0 never does. It shortens the chain each signature
    /// waits on where the batch leaves schedulers idle, and costs throughput where it does not.
    /// Its blocks are `small_block_size` rounded up to a multiple of 256.
    #[serde(default)]
    pub pairs_below: usize,
    /// Whether a work smaller than one round of the GPU (every multiprocessor full of its
    /// kernel) runs in one block per multiprocessor, as small as covers it ([`tail_block`]),
    /// instead of the configured block halved until every multiprocessor has one
    /// ([`Loaded::block_for`]). H200, 2026-12-06: 16384 signatures 1.83-1.90 ms against 2.75,
    /// 32768 2.49-2.56 against 2.95. Cutting the partial round off a larger work and spreading
    /// it the same way was slower (172032: 10.8 against 10.5 ms): a thread takes about as long
    /// with fewer warps beside it, and the cut-off chunks' blocks mix into the whole rounds.
    #[serde(default = "default_on")]
    pub spread_small: bool,
    /// Whether a work of at least one round of the GPU (every multiprocessor full of its kernel)
    /// is cut into chunks of one round each, instead of `streams` equal chunks; `chunk_items`
    /// overrides both. H100, 2026-12-06: 172032 signatures 10.44-10.51 ms against 10.67-10.77,
    /// 131072 7.45-7.55 against 7.57-7.90, 262144 14.06 against 14.36-14.42; chunks of half or a
    /// quarter of a round, or of two rounds, were slower.
    #[serde(default = "default_on")]
    pub round_chunks: bool,
    /// Batches of at most this many items run the same with quads ([`KernelConfig::quad`]),
    /// eight threads per signature; 0 (the default, [`QUADS_BELOW`]) never does. Above about 4096
    /// signatures its 256-thread blocks no longer fit one round on the H200.
    #[serde(default)]
    pub quads_below: usize,
}

impl Default for CudaConfig {
    fn default() -> Self {
        CudaConfig {
            kernel: KernelConfig::default_fast(),
            // Four streams: a work under one round is cut into `streams` chunks, and 65536
            // signatures took 3.74-3.78 ms in four against 4.24-4.37 in eight (H100, 2026-12-06,
            // three alternating runs; 32768 2.19-2.35 against 2.31-2.37); the sizes cut into
            // chunks of one round ran the same within 1% (172032: 9.16-9.17 against 9.06-9.24).
            streams: 4,
            // At 128 registers, one block of 512 threads an SM measured best: 53.3 ms for 2^20
            // records and 10.7 ms for 172032, against 54.9 and 11.1 with two blocks of 256 and
            // 68 and 12.7 with blocks of 64 or 128 (H200, 2026-12-05, BENCHMARKS.md).
            block_size: 512,
            small_block_size: SMALL_BLOCK,
            chunk_items: None,
            min_chunk_items: MIN_CHUNK_ITEMS,
            device: 0,
            compact_below: COMPACT_BELOW,
            pairs_below: PAIRS_BELOW,
            quads_below: QUADS_BELOW,
            spread_small: true,
            round_chunks: true,
        }
    }
}

fn default_on() -> bool {
    true
}

/// The default [`CudaConfig::compact_below`]. At 128 registers (H200, 2026-12-05) the compact
/// kernel in blocks of 256 took 4.89 ms for 65536 records against the inlined one's 5.12 (also
/// in blocks of 256), and 8.61 ms for 131072 against the inlined one's 7.86 in blocks of 512.
pub const COMPACT_BELOW: usize = 98_304;

/// The default [`CudaConfig::min_chunk_items`].
pub const MIN_CHUNK_ITEMS: usize = 4096;

fn default_min_chunk() -> usize {
    MIN_CHUNK_ITEMS
}

/// The default [`CudaConfig::small_block_size`]: a split kernel needs 256 threads a block (see
/// [`Loaded::new`]), and the compact kernel at 128 registers took 4.9 ms for 65536 records in
/// blocks of 256 (H200).
pub const SMALL_BLOCK: u32 = 256;

fn default_small_block() -> u32 {
    SMALL_BLOCK
}

/// The default [`CudaConfig::pairs_below`], from the H200 measurements: 16384 signatures take
/// 1.67 ms on the lane-pair split kernel (four threads each, about one round) against 1.83-1.90
/// on the compact one; 24576 take 2.98 ms on it, more than 32768 on the compact kernel (2.5 ms).
pub const PAIRS_BELOW: usize = 16_384;

/// The default [`CudaConfig::quads_below`]: none. Since the window's odd multiples share one Z
/// (commit 1e62982) the quads take longer than the lane pairs at every size they ran (H100,
/// 2026-12-05, same binary: 1.68 against 1.15 ms at 4096, 1.64 against 1.11 ms at 1024;
/// BENCHMARKS.md); they stay a switch.
pub const QUADS_BELOW: usize = 0;

// pick_kernel takes the first small-batch form that fits, so the bounds must grow in the order
// of small_kernels: quads (when on), then pairs, then the compact kernel.
const _: () = assert!(QUADS_BELOW < PAIRS_BELOW && PAIRS_BELOW < COMPACT_BELOW);

impl CudaConfig {
    /// The default configuration running kernel `k`: in the default block, or in the largest
    /// multiple of 64 threads that one multiprocessor's 65536 registers hold at `k`'s register
    /// cap (255, the most a thread may use, where it has none), so that any kernel opens.
    pub fn with_kernel(k: KernelConfig) -> CudaConfig {
        let base = CudaConfig::default();
        let registers = k.max_registers.unwrap_or(255).max(1);
        let fits = (65536 / registers) / 64 * 64;
        CudaConfig {
            kernel: k,
            block_size: base.block_size.min(fits.max(64)),
            ..base
        }
    }

    /// This configuration running exactly its kernel, over exactly its streams, at every batch
    /// size (for ablations, where a measurement must belong to the configuration it names).
    pub fn exact(self) -> CudaConfig {
        CudaConfig {
            compact_below: 0,
            pairs_below: 0,
            quads_below: 0,
            min_chunk_items: 1,
            spread_small: false,
            round_chunks: false,
            ..self
        }
    }

    /// The default configuration with the overrides of the environment variable
    /// `CHAINSIG_CUDA_CONFIG` ([`CudaConfig::with_overrides`]; unset or blank: the default). An
    /// error names the variable and the field.
    pub fn from_env() -> Result<CudaConfig, String> {
        match std::env::var("CHAINSIG_CUDA_CONFIG") {
            Ok(json) if !json.trim().is_empty() => CudaConfig::default()
                .with_overrides(&json)
                .map_err(|e| format!("CHAINSIG_CUDA_CONFIG: {e}")),
            _ => Ok(CudaConfig::default()),
        }
    }

    /// This configuration with the fields a JSON object names replaced, nested objects merged
    /// field by field: `{"block_size": 256, "kernel": {"max_registers": 128}}` changes those two
    /// and keeps the rest. For tuning on a machine without rebuilding (the CLI reads the
    /// environment variable `CHAINSIG_CUDA_CONFIG`). The result is validated; an error names the
    /// field.
    pub fn with_overrides(self, json: &str) -> Result<CudaConfig, String> {
        fn merge(base: &mut serde_json::Value, over: serde_json::Value) {
            match (base, over) {
                (serde_json::Value::Object(b), serde_json::Value::Object(o)) => {
                    for (k, v) in o {
                        merge(b.entry(k).or_insert(serde_json::Value::Null), v);
                    }
                }
                (b, o) => *b = o,
            }
        }
        let over: serde_json::Value =
            serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
        if !over.is_object() {
            return Err("expected a JSON object of CudaConfig fields".into());
        }
        let known = serde_json::to_value(self).map_err(|e| e.to_string())?;
        let mut merged = known.clone();
        merge(&mut merged, over);
        unknown_field(&merged, &known, "")?;
        let cfg: CudaConfig = serde_json::from_value(merged).map_err(|e| e.to_string())?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Items per chunk of a batch (or of the works run together) of `len` items.
    fn chunk_len(&self, len: usize) -> usize {
        let c = self.chunk_items.unwrap_or_else(|| {
            len.div_ceil(self.streams)
                .max(self.min_chunk_items.min(len))
        });
        c.max(1).next_multiple_of(64)
    }

    /// The kernels loaded beside the main one for smaller batches, each with the largest batch
    /// it takes, smallest first: the split quad form, the split lane-pair form, the compact form.
    fn small_kernels(&self) -> Vec<(KernelConfig, usize)> {
        let k = self.kernel;
        if k.mode != crate::Mode::Fast || k.compact || k.pair {
            return Vec::new();
        }
        [
            (k.compacted().quad().split(), self.quads_below),
            (k.compacted().split(), self.pairs_below),
            (k.compacted(), self.compact_below),
        ]
        .into_iter()
        .filter(|&(_, below)| below > 0)
        .collect()
    }
}

impl CudaConfig {
    fn validate(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.streams) {
            return Err(format!("streams must be 1..=16, got {}", self.streams));
        }
        for (name, block) in [
            ("block_size", self.block_size),
            ("small_block_size", self.small_block_size),
        ] {
            if block == 0 || block % 32 != 0 || block > 1024 {
                return Err(format!(
                    "{name} must be a multiple of 32 up to 1024, got {block}"
                ));
            }
        }
        if self.chunk_items == Some(0) {
            return Err("chunk_items must be positive".into());
        }
        Ok(())
    }
}

/// An error naming the first field of `merged` that `known` (a serialised configuration) lacks:
/// a misspelt override must not pass silently.
fn unknown_field(
    merged: &serde_json::Value,
    known: &serde_json::Value,
    path: &str,
) -> Result<(), String> {
    if let (serde_json::Value::Object(m), serde_json::Value::Object(k)) = (merged, known) {
        for (name, v) in m {
            let here = format!("{path}{name}");
            match k.get(name) {
                None => return Err(format!("unknown field `{here}`")),
                Some(kv) => unknown_field(v, kv, &format!("{here}."))?,
            }
        }
    }
    Ok(())
}

fn unavailable(reason: impl Into<String>) -> BackendError {
    BackendError::Unavailable {
        backend: NAME.into(),
        reason: reason.into(),
    }
}

fn device_err(what: &str, e: impl std::fmt::Debug) -> BackendError {
    BackendError::Device {
        backend: NAME.into(),
        reason: format!("{what}: {e:?}"),
    }
}

/// Whether a CUDA driver library can be loaded here (cudarc would panic on first use otherwise).
pub fn driver_available() -> bool {
    cudarc::get_lib_name_candidates("cuda")
        .iter()
        // SAFETY: loading libcuda runs no initialisation with preconditions.
        .any(|name| unsafe { libloading::Library::new(name) }.is_ok())
}

/// Page-locked host memory from cuMemHostAlloc.
struct Pinned<T: Copy> {
    ptr: *mut T,
    len: usize,
}

impl<T: Copy> Pinned<T> {
    fn new(len: usize) -> Result<Self, BackendError> {
        let bytes = len.max(1) * std::mem::size_of::<T>();
        // SAFETY: plain page-locked allocation; the memory is only read after being written.
        let ptr = unsafe { result::malloc_host(bytes, 0) }
            .map_err(|e| device_err("cuMemHostAlloc", e))?;
        Ok(Pinned {
            ptr: ptr as *mut T,
            len: len.max(1),
        })
    }
    fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: ptr holds len elements for the life of self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    fn as_slice(&self) -> &[T] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Copy> Drop for Pinned<T> {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemHostAlloc and is freed once.
        let _ = unsafe { result::free_host(self.ptr as *mut std::ffi::c_void) };
    }
}

/// Device memory from cuMemAlloc.
struct DevBuf {
    ptr: sys::CUdeviceptr,
}

impl DevBuf {
    fn new(bytes: usize) -> Result<Self, BackendError> {
        // SAFETY: plain allocation.
        let ptr = unsafe { result::malloc_sync(bytes.max(4)) }
            .map_err(|e| device_err("cuMemAlloc", e))?;
        Ok(DevBuf { ptr })
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemAlloc; all work using it has been synchronised.
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}

struct Event(sys::CUevent);

impl Event {
    fn new(timing: bool) -> Result<Self, BackendError> {
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        result::event::create(flags)
            .map(Event)
            .map_err(|e| device_err("cuEventCreate", e))
    }
    fn record(&self, s: &CudaStream) -> Result<(), BackendError> {
        // SAFETY: both handles are live.
        unsafe { result::event::record(self.0, s.cu_stream()) }
            .map_err(|e| device_err("cuEventRecord", e))
    }
    fn sync(&self) -> Result<(), BackendError> {
        // SAFETY: live event.
        unsafe { result::event::synchronize(self.0) }
            .map_err(|e| device_err("cuEventSynchronize", e))
    }
    fn elapsed_ms(&self, end: &Event) -> Result<f32, BackendError> {
        // SAFETY: both recorded and completed.
        unsafe { result::event::elapsed(self.0, end.0) }
            .map_err(|e| device_err("cuEventElapsedTime", e))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: destroyed once.
        let _ = unsafe { result::event::destroy(self.0) };
    }
}

/// One stream's buffers. `pending` is the chunk whose bitmap words are in flight to `pin_out`
/// (and, for a recovery chunk, whose keys are in flight to `pin_keys`).
struct Slot {
    stream: Arc<CudaStream>,
    pin_in: Pinned<u32>,
    pin_out: Pinned<u64>,
    dev_in: DevBuf,
    dev_out: DevBuf,
    /// Hashing input (Z_A, offsets, message bytes) of the chunk, for batches that carry messages.
    pin_msg: Pinned<u32>,
    dev_msg: DevBuf,
    /// Recovered keys of the chunk: 16 rows (x, then y) of the chunk's padded length.
    pin_keys: Pinned<u32>,
    dev_keys: DevBuf,
    done: Event,
    pending: Option<Pending>,
}

/// The chunk a slot has in flight.
#[derive(Clone, Copy)]
struct Pending {
    work: usize,
    first: usize,
    items: usize,
    /// The chunk's padded length when it brings recovered keys back, else 0.
    keys_stride: usize,
}

/// What the pipeline brings back for each work: verdict words, and for a recovery work each
/// request's signer (empty for the others).
struct Outputs {
    words: Vec<Vec<u64>>,
    signers: Vec<Vec<Option<Recovered>>>,
}

/// A loaded verification kernel, the threads it runs per signature, its block size, the least
/// and the most block it may be given, and the threads of it one multiprocessor holds.
struct Loaded {
    func: CudaFunction,
    threads: u32,
    block: u32,
    least: u32,
    most: u32,
    per_sm: u32,
}

impl Loaded {
    /// `block_size` is rounded up so that a block covers whole 32-signature halves of the bitmap
    /// words, which the kernels write, and a split block to at least 256 threads, so that its
    /// t·P half has a warp on each of the four schedulers of the multiprocessor (with 128, two
    /// blocks on one multiprocessor put two such warps on one scheduler: 8192 signatures took
    /// 1.9 ms instead of 1.15 on the H200). A block larger than the kernel's registers allow is
    /// refused by name.
    fn new(
        func: CudaFunction,
        kernel: &KernelConfig,
        block_size: u32,
    ) -> Result<Loaded, BackendError> {
        let threads = kernel.threads_per_item();
        let least = if kernel.is_split() { 256 } else { 64 }.max(32 * threads);
        let block = block_size.next_multiple_of(32 * threads).max(least);
        let most = func
            .get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
            .map_err(|e| device_err("cuFuncGetAttribute", e))? as u32;
        if block > most {
            return Err(unavailable(format!(
                "block_size {block} exceeds the {most} threads per block this kernel's registers allow"
            )));
        }
        let blocks = func
            .occupancy_max_active_blocks_per_multiprocessor(block, 0, None)
            .map_err(|e| device_err("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        Ok(Loaded {
            func,
            threads,
            block,
            least,
            most: most / (32 * threads) * (32 * threads),
            per_sm: blocks * block,
        })
    }

    /// The block size for a work of `items` signatures on a GPU of `sms` multiprocessors: the
    /// loaded one, halved while the work would fill fewer blocks than there are multiprocessors
    /// (down to the least block), so that a small batch spreads over the whole GPU instead of
    /// crowding a few multiprocessors with warps that then wait on each other. Large blocks
    /// suit large batches (512 threads at 128 registers: one block an SM).
    /// [`CudaConfig::spread_small`] puts [`Loaded::tail_block`] in its place for a work of less
    /// than one round.
    fn block_for(&self, items: usize, sms: u32) -> u32 {
        spread_block(self.block, self.least, self.threads, items, sms)
    }

    /// The signatures one round of the GPU holds: every multiprocessor full of this kernel.
    fn round(&self, sms: u32) -> usize {
        (sms as usize * self.per_sm as usize) / self.threads as usize
    }

    /// The block for a partial round of `items` signatures ([`tail_block`]), down to one warp of
    /// signatures (a split kernel's two halves of lane pairs: 128 threads). The least block of
    /// [`Loaded::block_for`] does not bind here: a spread round puts at most one block on a
    /// multiprocessor, so no two t·P warps of a split kernel share a scheduler.
    fn tail_block(&self, items: usize, sms: u32) -> u32 {
        tail_block(items, self.threads, 32 * self.threads, self.most, sms)
    }
}

/// [`Loaded::block_for`] for a kernel of `block` threads a block (at least `least`), `threads`
/// per item.
fn spread_block(mut block: u32, least: u32, threads: u32, items: usize, sms: u32) -> u32 {
    let all = items as u64 * u64::from(threads);
    while block / 2 >= least
        && (block / 2) % (32 * threads) == 0
        && all.div_ceil(u64::from(block)) < u64::from(sms)
    {
        block /= 2;
    }
    block
}

/// The block for a partial round of `items` signatures at `threads` each: one block on each
/// multiprocessor, as small as covers them all (a multiple of 32 × `threads`, between `least`
/// and `most`). In whole-round blocks a partial round would fill some multiprocessors and leave
/// the rest idle.
fn tail_block(items: usize, threads: u32, least: u32, most: u32, sms: u32) -> u32 {
    let per_sm = (items as u64 * u64::from(threads)).div_ceil(u64::from(sms.max(1)));
    let unit = u64::from(32 * threads);
    (per_sm.next_multiple_of(unit).min(u64::from(u32::MAX)) as u32).clamp(least, most.max(least))
}

/// The chunk of a work of `len` signatures whose kernel fills the GPU with `round`: one round
/// (a multiple of 64) where the work has at least one, else `chunk`.
fn round_chunk(chunk: usize, len: usize, round: usize) -> usize {
    if round >= 64 && len >= round {
        round / 64 * 64
    } else {
        chunk
    }
}

/// Grid and bitmap words of a launch over `mp` items (a multiple of 64) in blocks of `block`
/// threads (a multiple of 32 × threads), `threads` per item: each block covers block / threads
/// items and writes one 32-bit half word per 32 of them.
fn launch_shape(mp: usize, block: u32, threads: u32) -> (u32, usize) {
    let grid = (mp as u32 * threads).div_ceil(block);
    (grid, ((grid * block / threads) as usize).div_ceil(64))
}

/// A curve's ECDSA kernels (either s, and low-s) and its G table, loaded at the curve's first
/// batch ([`Engine::ecdsa`]).
struct EcdsaKernels {
    alg: Algorithm,
    /// The switches the module was compiled with (its layout and register cap).
    config: KernelConfig,
    any_s: Loaded,
    low_s: Loaded,
    recover: Loaded,
    gtab: DevBuf,
}

impl EcdsaKernels {
    fn kernel(&self, low_s: bool) -> &Loaded {
        if low_s {
            &self.low_s
        } else {
            &self.any_s
        }
    }
}

struct Engine {
    ctx: Arc<CudaContext>,
    func: Loaded,
    /// Forms of `func` for smaller batches, each with the largest batch it takes, smallest first
    /// ([`CudaConfig::small_kernels`]).
    small: Vec<(Loaded, usize)>,
    /// `cs_field_check`, the arithmetic self-test in the same module.
    check: CudaFunction,
    gtab: DevBuf,
    slots: Vec<Slot>,
    cfg: CudaConfig,
    /// The device's architecture ("sm_90"), for modules compiled after open.
    arch: String,
    /// The device's multiprocessors ([`Loaded::block_for`]).
    sms: u32,
    /// `cs_sm3_e`, compiled at the first batch that carries messages.
    sm3: Option<CudaFunction>,
    /// `cs_verify_signed` from the main module (fast mode only).
    signed: Option<Loaded>,
    /// The known signers' tables, one after another, and their numbering.
    ktabs: Option<(DevBuf, crate::signers::SignerIndex)>,
    /// A host backend for the few records of a batch outside the known signers, and the most
    /// records it takes ([`CudaBackend::set_host_helper`]).
    host: Option<(Arc<dyn Backend>, usize)>,
    /// The ECDSA curves' kernels, each loaded at the curve's first batch.
    ecdsa: Vec<EcdsaKernels>,
}

/// Messages to hash on the GPU (record i of the work is message i) and the SM3 kernel.
type Hashing<'a> = Option<(&'a MessageBatch, &'a CudaFunction)>;

/// What the chunk pipeline verifies.
#[derive(Clone, Copy)]
enum Work<'a> {
    /// Records with their keys; with messages, e is hashed on the GPU first.
    Records(&'a Batch, Hashing<'a>),
    /// Records of known signers, against the tables in `ktabs`; with messages, e is hashed on the
    /// GPU first (e is the first row of both layouts, so the SM3 kernel serves both).
    Signed(&'a dyn StageSigned, Hashing<'a>),
    /// ECDSA records with their keys (P-256 or secp256k1), through the curve's loaded kernels.
    Ecdsa(&'a Batch),
    /// Public-key recovery on the curve of the algorithm: verdicts and keys.
    Recover(Algorithm, &'a [RecoverItem]),
}

impl Work<'_> {
    fn len(&self) -> usize {
        match self {
            Work::Records(b, _) | Work::Ecdsa(b) => b.len(),
            Work::Signed(b, _) => b.len(),
            Work::Recover(_, items) => items.len(),
        }
    }

    fn hashing(&self) -> Hashing<'_> {
        match self {
            Work::Records(_, h) | Work::Signed(_, h) => *h,
            Work::Ecdsa(_) | Work::Recover(..) => None,
        }
    }
}

// SAFETY: the raw pointers in Engine's buffers are only touched while the Mutex is held.
unsafe impl Send for Engine {}

/// Words per item in the device layout.
fn rows(k: &KernelConfig) -> usize {
    if k.compress {
        4 * LIMBS
    } else {
        OPERANDS * LIMBS
    }
}

/// Device-layout words for a chunk of `m` items padded to `mp`.
fn chunk_words(k: &KernelConfig, mp: usize) -> usize {
    if k.row_major {
        mp * (rows(k) + usize::from(k.compress))
    } else {
        rows(k) * mp + if k.compress { mp / 32 } else { 0 }
    }
}

/// Copies items [i0, i0 + m) of the batch into `dst` in the kernel's layout (padded stride mp).
fn stage(batch: &Batch, k: &KernelConfig, i0: usize, m: usize, mp: usize, dst: &mut [u32]) {
    use rayon::prelude::*;
    let src = batch.words();
    let stride = batch.stride();
    let nrows = rows(k);
    if k.row_major {
        let width = nrows + usize::from(k.compress);
        dst[..m * width]
            .par_chunks_mut(width)
            .enumerate()
            .for_each(|(i, row)| {
                for r in 0..nrows {
                    row[r] = src[r * stride + i0 + i];
                }
                if k.compress {
                    row[nrows] = src[(PY * LIMBS) * stride + i0 + i] & 1;
                }
            });
        return;
    }
    let (cols, parity) = dst.split_at_mut(nrows * mp);
    let copy = |(r, d): (usize, &mut [u32])| {
        d[..m].copy_from_slice(&src[r * stride + i0..r * stride + i0 + m])
    };
    if m >= 16384 {
        cols.par_chunks_mut(mp).enumerate().for_each(copy);
    } else {
        cols.chunks_mut(mp).enumerate().for_each(copy);
    }
    if k.compress {
        let py0 = &src[(PY * LIMBS) * stride + i0..(PY * LIMBS) * stride + i0 + m];
        for (w, out) in parity[..mp / 32].iter_mut().enumerate() {
            let mut bits = 0u32;
            for b in 0..32 {
                if let Some(y) = py0.get(w * 32 + b) {
                    bits |= (y & 1) << b;
                }
            }
            *out = bits;
        }
    }
}

/// Stages recovery items in the recovery kernel's rows (e, r, s as little-endian words, then the
/// recovery ids), padded stride `mp`.
fn stage_recover(items: &[RecoverItem], mp: usize, dst: &mut [u32]) {
    use rayon::prelude::*;
    let word = |bytes: &[u8; 32], j: usize| {
        u32::from_be_bytes(bytes[28 - 4 * j..32 - 4 * j].try_into().expect("4 bytes"))
    };
    let fill = |(row, d): (usize, &mut [u32])| {
        let (operand, j) = (row / LIMBS, row % LIMBS);
        for (slot, item) in d.iter_mut().zip(items) {
            *slot = match operand {
                0 => word(&item.digest, j),
                1 => word(&item.r, j),
                2 => word(&item.s, j),
                _ => u32::from(item.recovery_id),
            };
        }
    };
    let rows = &mut dst[..kernel::RECOVER_ROWS * mp];
    if items.len() >= 16384 {
        rows.par_chunks_mut(mp).enumerate().for_each(fill);
    } else {
        rows.chunks_mut(mp).enumerate().for_each(fill);
    }
}

/// Kernel-only timing of one launch over a whole batch already on the device.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct KernelTiming {
    pub ms: f32,
}

/// The kernel for a batch of `len` items: the first small-batch form that takes it, else the main.
fn pick_kernel<'a>(main: &'a Loaded, small: &'a [(Loaded, usize)], len: usize) -> &'a Loaded {
    small
        .iter()
        .find(|(_, below)| len <= *below)
        .map_or(main, |(k, _)| k)
}

/// Compiles, side by side on a first run and through the disk cache, the SM2 modules a backend of
/// `cfg` loads: its main kernel first, then its forms for small batches, one module each.
fn compile_sm2_modules(
    cfg: &CudaConfig,
    arch: &str,
) -> Result<Vec<(KernelConfig, kernel::Compiled)>, BackendError> {
    let kernels: Vec<KernelConfig> = std::iter::once(cfg.kernel)
        .chain(cfg.small_kernels().into_iter().map(|(k, _)| k))
        .collect();
    let compiled: Vec<kernel::Compiled> = std::thread::scope(|scope| {
        let jobs: Vec<_> = kernels
            .iter()
            .map(|k| {
                scope.spawn(move || kernel::compile_config(&chainsig_core::curve::SM2, k, arch))
            })
            .collect();
        jobs.into_iter()
            .map(|j| {
                j.join()
                    .unwrap_or_else(|_| Err("the NVRTC compile panicked".into()))
            })
            .collect::<Result<Vec<_>, String>>()
    })
    .map_err(unavailable)?;
    Ok(kernels.into_iter().zip(compiled).collect())
}

/// Compiles every module a backend of `cfg` may load on a device of architecture `arch` (the SM2
/// modules, the ECDSA module of each curve, the SM3 module) into the disk cache, under the
/// environment's `CHAINSIG_NVRTC_DEFINES`. Needs NVRTC but no GPU: a GPU machine given the cache
/// spends none of its time compiling. Returns the number of modules.
pub fn precompile(cfg: &CudaConfig, arch: &str) -> Result<usize, BackendError> {
    cfg.validate().map_err(unavailable)?;
    let mut modules = compile_sm2_modules(cfg, arch)?.len();
    let ecdsa = kernel::ecdsa_config(cfg.kernel.max_registers);
    for curve in [chainsig_core::curve::P256, chainsig_core::curve::SECP256K1] {
        kernel::compile_ecdsa(&curve, &ecdsa, arch).map_err(unavailable)?;
        modules += 1;
    }
    kernel::compile_cached(&kernel::sm3_source(), arch).map_err(unavailable)?;
    Ok(modules + 1)
}

impl Engine {
    fn open(cfg: CudaConfig) -> Result<(Engine, Vec<Resources>, bool), BackendError> {
        cfg.validate().map_err(unavailable)?;
        if !driver_available() {
            return Err(unavailable(
                "no CUDA driver (libcuda.so) found on this machine",
            ));
        }
        let ctx = CudaContext::new(cfg.device)
            .map_err(|e| unavailable(format!("cannot open CUDA device {}: {e:?}", cfg.device)))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| device_err("compute capability", e))?;
        let arch = format!("sm_{major}{minor}");
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| device_err("multiprocessor count", e))? as u32;
        let small = cfg.small_kernels();
        let (kernels, compiled): (Vec<KernelConfig>, Vec<kernel::Compiled>) =
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
                .load_function(kernel::SIGNED_KERNEL)
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
        unsafe { result::memcpy_htod_sync(gtab.ptr, table) }
            .map_err(|e| device_err("upload table", e))?;
        let mut slots = Vec::new();
        for _ in 0..cfg.streams {
            slots.push(Slot {
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
            });
        }
        let res = compiled
            .iter()
            .flat_map(|c| kernel::parse_resources(&c.log))
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
        };
        // A product miscompiled for this device must never produce a verdict: check the kernel's
        // field arithmetic against the host build before accepting work.
        let (a, b) = host::field_check_inputs(host::HostCurve::Sm2, SELF_TEST_ITEMS, 0x5e1f_7e57);
        let got = engine.field_check(&engine.check, &a, &b)?;
        if let Some(diff) = host::field_check_compare(host::HostCurve::Sm2, &a, &b, &got).first() {
            return Err(unavailable(format!(
                "the GPU's field arithmetic disagrees with the host build ({}): {diff}",
                cfg.kernel.name()
            )));
        }
        Ok((engine, res, from_cache))
    }

    /// Runs a module's `cs_field_check` over operand pairs: 48 result words per pair (see
    /// cs_kernels.cuh).
    fn field_check(
        &self,
        check: &CudaFunction,
        a: &[Words],
        b: &[Words],
    ) -> Result<Vec<[u32; 48]>, BackendError> {
        let n = a.len().min(b.len());
        if n == 0 {
            return Ok(Vec::new());
        }
        let flat = |v: &[Words]| v[..n].iter().flatten().copied().collect::<Vec<u32>>();
        let (ha, hb) = (flat(a), flat(b));
        let (da, db, dout) = (
            DevBuf::new(n * 32)?,
            DevBuf::new(n * 32)?,
            DevBuf::new(n * 48 * 4)?,
        );
        // SAFETY: each buffer holds exactly the words copied; synchronous copies.
        unsafe {
            result::memcpy_htod_sync(da.ptr, &ha).map_err(|e| device_err("copy in", e))?;
            result::memcpy_htod_sync(db.ptr, &hb).map_err(|e| device_err("copy in", e))?;
        }
        let stream = &self.slots[0].stream;
        let cfg = LaunchConfig {
            grid_dim: ((n as u32).div_ceil(128), 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        let (pa, pb, cnt, po) = (da.ptr, db.ptr, n as u32, dout.ptr);
        let mut launch = stream.launch_builder(check);
        launch.arg(&pa).arg(&pb).arg(&cnt).arg(&po);
        // SAFETY: argument types match cs_field_check; buffers are sized for n items.
        unsafe { launch.launch(cfg) }.map_err(|e| device_err("kernel launch", e))?;
        stream
            .synchronize()
            .map_err(|e| device_err("synchronize", e))?;
        let mut out = vec![0u32; n * 48];
        // SAFETY: sizes as allocated; the stream has finished.
        unsafe { result::memcpy_dtoh_sync(&mut out, dout.ptr) }
            .map_err(|e| device_err("copy out", e))?;
        Ok(out
            .chunks_exact(48)
            .map(|c| c.try_into().expect("48 words"))
            .collect())
    }

    fn chunk_len(&self, len: usize) -> usize {
        self.cfg.chunk_len(len)
    }

    /// Loads the ECDSA module of `alg`'s curve (compiled by NVRTC or taken from the cache) and its
    /// G table on first use, and checks it: its field products against the host build's, then
    /// verdicts on fresh records against RustCrypto's. A failed check leaves it unloaded and
    /// reports why.
    fn ecdsa(&mut self, alg: Algorithm) -> Result<(), BackendError> {
        if !self.ecdsa.iter().any(|k| k.alg == alg) {
            let kernels = self.load_ecdsa(alg)?;
            self.ecdsa.push(kernels);
            if let Err(e) = self.ecdsa_self_test(alg) {
                self.ecdsa.retain(|k| k.alg != alg);
                return Err(e);
            }
        }
        Ok(())
    }

    fn load_ecdsa(&self, alg: Algorithm) -> Result<EcdsaKernels, BackendError> {
        let curve = ecdsa_host_curve(alg)?;
        self.ctx
            .bind_to_thread()
            .map_err(|e| device_err("bind context", e))?;
        let config = kernel::ecdsa_config(self.cfg.kernel.max_registers);
        let compiled =
            kernel::compile_ecdsa(curve.params(), &config, &self.arch).map_err(unavailable)?;
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
            .map_err(|e| device_err("cuModuleLoadData (ECDSA)", e))?;
        let load = |name: &str| {
            let func = module
                .load_function(name)
                .map_err(|e| device_err("cuModuleGetFunction (ECDSA)", e))?;
            Loaded::new(func, &config, self.cfg.block_size)
        };
        let (any_s, low_s) = (
            load(kernel::ECDSA_KERNEL)?,
            load(kernel::ECDSA_LOW_S_KERNEL)?,
        );
        let recover = load(kernel::RECOVER_KERNEL)?;
        let check = module
            .load_function("cs_field_check")
            .map_err(|e| device_err("cuModuleGetFunction (ECDSA)", e))?;
        let (a, b) = host::field_check_inputs(curve, SELF_TEST_ITEMS, 0x9256);
        let got = self.field_check(&check, &a, &b)?;
        if let Some(diff) = host::field_check_compare(curve, &a, &b, &got).first() {
            return Err(unavailable(format!(
                "the GPU's {alg} field arithmetic disagrees with the host build: {diff}"
            )));
        }
        let table = ecdsa_gtable(alg)?;
        let gtab = DevBuf::new(table.len() * 4)?;
        // SAFETY: gtab holds exactly table.len() words; synchronous copy.
        unsafe { result::memcpy_htod_sync(gtab.ptr, table) }
            .map_err(|e| device_err("upload an ECDSA table", e))?;
        Ok(EcdsaKernels {
            alg,
            config,
            any_s,
            low_s,
            recover,
            gtab,
        })
    }

    /// Verifies the known-answer records of `alg` (known_answers.rs) under both rules and
    /// compares with their recorded verdicts.
    fn ecdsa_self_test(&mut self, alg: Algorithm) -> Result<(), BackendError> {
        let (records, verdicts) = crate::known_answers::ecdsa(alg);
        for low_s in [false, true] {
            let batch = crate::known_answers::batch(alg, low_s, &records);
            let map = self.run(Work::Ecdsa(&batch))?;
            if let Some(i) = (0..records.len()).find(|&i| map.get(i) != verdicts[i].get(low_s)) {
                return Err(unavailable(format!(
                    "the GPU's {alg} ECDSA verdict on self-test record {i} (low-s {low_s}) differs from its known answer"
                )));
            }
        }
        // Recovery of the same records under both ids, against the host build (which CI checks
        // against libsecp256k1).
        let items = crate::known_answers::recovery_items(&records);
        let out = self.pipeline(&[Work::Recover(alg, &items)])?;
        let host = ecdsa_host_curve(alg)?.ecdsa().expect("an ECDSA curve");
        let gtab = ecdsa_gtable(alg)?;
        for (i, item) in items.iter().enumerate() {
            let want = host.recover(
                &crate::codegen::words_from_be(&item.digest),
                &crate::codegen::words_from_be(&item.r),
                &crate::codegen::words_from_be(&item.s),
                u32::from(item.recovery_id),
                gtab,
            );
            let got = out.words[0][i / 64] >> (i % 64) & 1 == 1;
            let same = match (want, &out.signers[0][i]) {
                (Some((x, y)), Some(signer)) => {
                    let key: [u32; 16] =
                        std::array::from_fn(|j| if j < 8 { x[j] } else { y[j - 8] });
                    got && signer.pubkey == sec1(&key)
                }
                (None, None) => !got,
                _ => false,
            };
            if !same {
                return Err(unavailable(format!(
                    "the GPU's {alg} recovery of self-test item {i} differs from the host build's"
                )));
            }
        }
        Ok(())
    }

    /// Ethereum's sender recovery on secp256k1: the signer of item i, or None.
    fn recover(&mut self, items: &[RecoverItem]) -> Result<Vec<Option<Recovered>>, BackendError> {
        self.ecdsa(Algorithm::Secp256k1)?;
        let mut out = self.pipeline(&[Work::Recover(Algorithm::Secp256k1, items)])?;
        Ok(out.signers.swap_remove(0))
    }

    /// ECDSA records, verdict i for record i.
    fn verify_ecdsa(&mut self, batch: &Batch) -> Result<Bitmap, BackendError> {
        self.ecdsa(batch.alg())?;
        self.run(Work::Ecdsa(batch))
    }

    /// Any batch the backend takes ([`check_batch`]): SM2 through `verify_known`, ECDSA through
    /// the curve's kernels.
    fn verify_any(&mut self, batch: &Batch) -> Result<Bitmap, BackendError> {
        match batch.alg() {
            Algorithm::Sm2 => self.verify_known(batch),
            _ => self.verify_ecdsa(batch),
        }
    }

    fn harvest(slot: &mut Slot, out: &mut Outputs) -> Result<(), BackendError> {
        if let Some(p) = slot.pending.take() {
            slot.done.sync()?;
            let w0 = p.first / 64;
            let n = p.items.div_ceil(64);
            out.words[p.work][w0..w0 + n].copy_from_slice(&slot.pin_out.as_slice()[..n]);
            if p.keys_stride > 0 {
                // The keys come back column-major (word j of key i at j·stride + i); each
                // recovered one becomes its SEC1 form and address here, on the host's cores,
                // while the GPU runs the other streams' chunks.
                use rayon::prelude::*;
                let (rows, bits) = (slot.pin_keys.as_slice(), slot.pin_out.as_slice());
                out.signers[p.work][p.first..p.first + p.items]
                    .par_iter_mut()
                    .enumerate()
                    .for_each(|(i, signer)| {
                        if bits[i / 64] >> (i % 64) & 1 == 1 {
                            let key: [u32; 16] =
                                std::array::from_fn(|j| rows[j * p.keys_stride + i]);
                            *signer = Some(Recovered::from_pubkey(sec1(&key)));
                        }
                    });
            }
        }
        Ok(())
    }

    fn verify(&mut self, batch: &Batch) -> Result<Bitmap, BackendError> {
        self.run(Work::Records(batch, None))
    }

    /// Replaces the known signers by those of `tables`.
    fn load_signers(&mut self, tables: &SignerTables) -> Result<(), BackendError> {
        if self.signed.is_none() {
            return Err(BackendError::Unsupported {
                backend: NAME.into(),
                what: "known signers outside the fast mode".into(),
            });
        }
        self.ctx
            .bind_to_thread()
            .map_err(|e| device_err("bind context", e))?;
        self.ktabs = None; // free the old tables first
        let words = tables.words();
        let buf = DevBuf::new(words.len() * 4)?;
        // SAFETY: buf holds exactly words.len() words; synchronous copy.
        unsafe { result::memcpy_htod_sync(buf.ptr, words) }
            .map_err(|e| device_err("upload signer tables", e))?;
        self.ktabs = Some((buf, tables.index().clone()));
        Ok(())
    }

    fn verify_signed(&mut self, batch: &SignerBatch) -> Result<Bitmap, BackendError> {
        let loaded = self.ktabs.as_ref().map_or(0, |(_, ix)| ix.len());
        if let Some(max) = batch.max_signer() {
            if max as usize >= loaded {
                return Err(BackendError::Input {
                    backend: NAME.into(),
                    reason: format!("signer {max} named, but {loaded} known signers are loaded"),
                });
            }
        }
        self.run(Work::Signed(batch, None))
    }

    /// Records with their keys: those of known signers through their tables, the others through
    /// the default kernel; verdicts merged back in order.
    fn verify_known(&mut self, batch: &Batch) -> Result<Bitmap, BackendError> {
        let Some((_, index)) = &self.ktabs else {
            return self.verify(batch);
        };
        let split = crate::signers::Split::new(batch, index);
        if split.others.is_empty() {
            return self.run(Work::Signed(&split.known, None)); // every record known: in order
        }
        let (known, others) = self.known_and_others(
            Work::Signed(&split.known, None),
            Work::Records(&split.others, None),
            |host| host.verify_batch(&split.others),
        )?;
        Ok(split.merge(&known, &others))
    }

    /// Verifies the known signers' part of a batch on the GPU, and the rest. A rest small enough
    /// goes to the host helper, verified there while the GPU works: a GPU kernel for a few
    /// records still takes its whole latency (1.3 ms on the H200 when the helper was measured,
    /// about 1 ms with the small-batch kernels since) beside a known part of a few hundred
    /// microseconds. A larger rest runs on the GPU beside the known part, in one pipeline.
    fn known_and_others(
        &mut self,
        known: Work,
        others: Work,
        on_host: impl FnOnce(&dyn Backend) -> Result<Bitmap, BackendError> + Send,
    ) -> Result<(Bitmap, Bitmap), BackendError> {
        let host = self.host.clone().filter(|(_, most)| others.len() <= *most);
        if let Some((host, _)) = host {
            return std::thread::scope(|scope| {
                let helper = scope.spawn(move || on_host(host.as_ref()));
                let known = self.run(known);
                let others = helper
                    .join()
                    .map_err(|_| device_err("host helper", "panicked"))?;
                Ok((known?, others?))
            });
        }
        // The rest first: its one chunk starts before the known part's and overlaps it.
        let mut maps = self.run_all(&[others, known])?;
        let known = maps.pop().expect("two works, two bitmaps");
        let others = maps.pop().expect("two works, two bitmaps");
        Ok((known, others))
    }

    /// The SM3 kernel, compiled (or loaded from the cache) on first use.
    fn sm3_function(&mut self) -> Result<CudaFunction, BackendError> {
        if let Some(f) = &self.sm3 {
            return Ok(f.clone());
        }
        let compiled = kernel::compile_cached(&kernel::sm3_source(), &self.arch)
            .map_err(|e| device_err("compile the SM3 kernel", e))?;
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
            .map_err(|e| device_err("cuModuleLoadData (SM3)", e))?;
        let f = module
            .load_function(kernel::SM3_KERNEL)
            .map_err(|e| device_err("cuModuleGetFunction (SM3)", e))?;
        self.sm3 = Some(f.clone());
        Ok(f)
    }

    fn verify_messages(&mut self, batch: &MessageBatch) -> Result<Bitmap, BackendError> {
        if self.cfg.kernel.row_major {
            return Err(BackendError::Unsupported {
                backend: NAME.into(),
                what: "messages hashed on the GPU with the row-major layout ablation".into(),
            });
        }
        self.ctx
            .bind_to_thread()
            .map_err(|e| device_err("bind context", e))?;
        let sm3 = self.sm3_function()?;
        let split = match &self.ktabs {
            Some((_, index)) => crate::signers::Split::new(batch.items(), index),
            None => return self.run(Work::Records(batch.items(), Some((batch, &sm3)))),
        };
        if split.others.is_empty() {
            return self.run(Work::Signed(&split.known, Some((batch, &sm3))));
        }
        // Known signers' records through their tables, the rest as usual, each part with its
        // own messages; verdicts merged back in order.
        let (known_msgs, others_msgs) = (
            batch.select(split.known.at()),
            batch.select(&split.others_at),
        );
        let (known, others) = self.known_and_others(
            Work::Signed(&split.known, Some((&known_msgs, &sm3))),
            Work::Records(others_msgs.items(), Some((&others_msgs, &sm3))),
            |host| host.verify_messages(&others_msgs),
        )?;
        Ok(split.merge(&known, &others))
    }

    /// The chunk pipeline over one work.
    fn run(&mut self, work: Work) -> Result<Bitmap, BackendError> {
        Ok(self.run_all(&[work])?.pop().expect("one work, one bitmap"))
    }

    /// The chunk pipeline: each work cut into chunks (the chunk length set by all the works
    /// together, so a small work is one chunk), the chunks spread over the streams in order, one
    /// bitmap per work. A work with messages has each chunk's digests computed on the GPU by the
    /// SM3 kernel (into the e rows of the staged input) just before its verification kernel.
    fn run_all(&mut self, works: &[Work]) -> Result<Vec<Bitmap>, BackendError> {
        let out = self.pipeline(works)?;
        Ok(out
            .words
            .into_iter()
            .zip(works)
            .map(|(words, work)| Bitmap::from_words(words, work.len()))
            .collect())
    }

    /// The chunk pipeline of [`Engine::run_all`], with the recovered keys of recovery works.
    fn pipeline(&mut self, works: &[Work]) -> Result<Outputs, BackendError> {
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
        };
        let total: usize = works.iter().map(Work::len).sum();
        if total > 0 {
            self.ctx
                .bind_to_thread()
                .map_err(|e| device_err("bind context", e))?;
        }
        let chunk = self.chunk_len(total);
        let mut c = 0; // chunks launched, over every work
        for (w, &work) in works.iter().enumerate() {
            c = self.launch_chunks(w, work, chunk, c, &mut out)?;
        }
        for slot in &mut self.slots {
            Self::harvest(slot, &mut out)?;
        }
        Ok(out)
    }

    /// Stages and launches the chunks of work `w`, chunk numbers from `c` on (chunk `c` goes to
    /// stream `c mod streams`, after that stream's previous chunk is harvested). Returns the next
    /// chunk number.
    fn launch_chunks(
        &mut self,
        w: usize,
        work: Work,
        chunk: usize,
        mut c: usize,
        out: &mut Outputs,
    ) -> Result<usize, BackendError> {
        let len = work.len();
        // Borrows of single fields only: the loop below borrows the slots mutably.
        let no_small: &[(Loaded, usize)] = &[];
        let (kernel, small, gtab, k) = match work {
            Work::Records(..) => (&self.func, &self.small[..], self.gtab.ptr, self.cfg.kernel),
            Work::Signed(..) => (
                self.signed
                    .as_ref()
                    .expect("signers load only where the signed kernel exists"),
                no_small,
                self.gtab.ptr,
                self.cfg.kernel,
            ),
            Work::Ecdsa(batch) => {
                let ecdsa = loaded_ecdsa(&self.ecdsa, batch.alg());
                (
                    ecdsa.kernel(batch.low_s()),
                    no_small,
                    ecdsa.gtab.ptr,
                    ecdsa.config,
                )
            }
            Work::Recover(alg, _) => {
                let ecdsa = loaded_ecdsa(&self.ecdsa, alg);
                (&ecdsa.recover, no_small, ecdsa.gtab.ptr, ecdsa.config)
            }
        };
        let ktabs = self.ktabs.as_ref().map_or(0, |(b, _)| b.ptr);
        let nslots = self.slots.len();
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
                Work::Records(..) | Work::Ecdsa(_) => chunk_words(&k, mp),
                Work::Signed(..) => SIGNED_ROWS * mp,
                Work::Recover(..) => kernel::RECOVER_ROWS * mp,
            };
            let keys_stride = if let Work::Recover(..) = work { mp } else { 0 };
            let slot = &mut self.slots[c % nslots];
            c += 1;
            Self::harvest(slot, out)?;
            if slot.pin_keys.len < 16 * keys_stride {
                slot.pin_keys = Pinned::new(16 * keys_stride)?;
                slot.dev_keys = DevBuf::new(16 * keys_stride * 4)?;
            }
            if slot.pin_in.len < in_words {
                slot.pin_in = Pinned::new(in_words)?;
                slot.dev_in = DevBuf::new(in_words * 4)?;
            }
            if slot.pin_out.len < out_words {
                slot.pin_out = Pinned::new(out_words)?;
                slot.dev_out = DevBuf::new(out_words * 8)?;
            }
            match work {
                Work::Records(batch, _) | Work::Ecdsa(batch) => {
                    stage(batch, &k, i0, m, mp, slot.pin_in.as_mut_slice())
                }
                Work::Signed(batch, _) => batch.stage(i0, m, mp, slot.pin_in.as_mut_slice()),
                Work::Recover(_, items) => {
                    stage_recover(&items[i0..i0 + m], mp, slot.pin_in.as_mut_slice())
                }
            }
            let s = slot.stream.cu_stream();
            // SAFETY: pinned and device buffers hold in_words / out_words; the pinned buffers are not
            // touched again until `done` has completed (harvest syncs on it first).
            unsafe {
                result::memcpy_htod_async(slot.dev_in.ptr, &slot.pin_in.as_slice()[..in_words], s)
                    .map_err(|e| device_err("copy in", e))?;
            }
            if let Some((mb, sm3)) = work.hashing() {
                let msg_words = crate::messages::chunk_words(mb, i0, m, mp);
                if slot.pin_msg.len < msg_words {
                    slot.pin_msg = Pinned::new(msg_words)?;
                    slot.dev_msg = DevBuf::new(msg_words * 4)?;
                }
                crate::messages::stage(mb, i0, m, mp, slot.pin_msg.as_mut_slice())
                    .map_err(|e| device_err("stage messages", e))?;
                // SAFETY: as for the copy in above (pin_msg and dev_msg hold msg_words words).
                unsafe {
                    result::memcpy_htod_async(
                        slot.dev_msg.ptr,
                        &slot.pin_msg.as_slice()[..msg_words],
                        s,
                    )
                    .map_err(|e| device_err("copy messages in", e))?;
                }
                let za = slot.dev_msg.ptr;
                let offsets = za + (8 * mp * 4) as u64;
                let bytes = za + ((9 * mp + 1) * 4) as u64;
                let (stride, count, e_rows) = (mp as u32, m as u32, slot.dev_in.ptr);
                let cfg = LaunchConfig {
                    grid_dim: ((m as u32).div_ceil(128), 1, 1),
                    block_dim: (128, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut b = slot.stream.launch_builder(sm3);
                b.arg(&za)
                    .arg(&offsets)
                    .arg(&bytes)
                    .arg(&stride)
                    .arg(&count)
                    .arg(&e_rows);
                // SAFETY: argument types match cs_sm3_e (three device pointers, stride, count,
                // output pointer); every buffer is sized for this chunk.
                unsafe { b.launch(cfg) }.map_err(|e| device_err("SM3 kernel launch", e))?;
            }
            let (din, dout, gt) = (slot.dev_in.ptr, slot.dev_out.ptr, gtab);
            let (stride, count) = (mp as u32, m as u32);
            let cfg = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (block, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut b = slot.stream.launch_builder(&func.func);
            b.arg(&din).arg(&stride).arg(&count).arg(&gt);
            if let Work::Signed(..) = work {
                b.arg(&ktabs);
            }
            b.arg(&dout);
            let dkeys = slot.dev_keys.ptr;
            if keys_stride > 0 {
                b.arg(&dkeys);
            }
            // SAFETY: argument types match the kernel's (u64 pointers, u32 stride and count, and
            // for cs_verify_signed the tables' pointer before the output's, for the recovery
            // kernel the keys' pointer after it).
            unsafe { b.launch(cfg) }.map_err(|e| device_err("kernel launch", e))?;
            // SAFETY: as for the copy in (pin_keys and dev_keys hold 16 keys_stride words).
            unsafe {
                result::memcpy_dtoh_async(&mut slot.pin_out.as_mut_slice()[..out_words], dout, s)
                    .map_err(|e| device_err("copy out", e))?;
                if keys_stride > 0 {
                    let keys = &mut slot.pin_keys.as_mut_slice()[..16 * keys_stride];
                    result::memcpy_dtoh_async(keys, dkeys, s)
                        .map_err(|e| device_err("copy keys out", e))?;
                }
            }
            slot.done.record(&slot.stream)?;
            slot.pending = Some(Pending {
                work: w,
                first: i0,
                items: m,
                keys_stride,
            });
        }
        Ok(c)
    }

    /// Times the kernel alone over the whole batch on the device (no transfers), median of `reps`.
    fn kernel_only(&mut self, batch: &Batch, reps: usize) -> Result<(f32, Bitmap), BackendError> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| device_err("bind context", e))?;
        let len = batch.len();
        let mp = len.next_multiple_of(64);
        let (func, gtab, k) = if batch.alg() == Algorithm::Sm2 {
            (
                pick_kernel(&self.func, &self.small, len),
                self.gtab.ptr,
                self.cfg.kernel,
            )
        } else {
            self.ecdsa(batch.alg())?;
            let ecdsa = loaded_ecdsa(&self.ecdsa, batch.alg());
            (ecdsa.kernel(batch.low_s()), ecdsa.gtab.ptr, ecdsa.config)
        };
        let block = func.block_for(len, self.sms);
        let (grid, out_words) = launch_shape(mp, block, func.threads);
        let mut host_in = vec![0u32; chunk_words(&k, mp)];
        stage(batch, &k, 0, len, mp, &mut host_in);
        let din = DevBuf::new(host_in.len() * 4)?;
        let dout = DevBuf::new(out_words * 8)?;
        // SAFETY: sizes as allocated.
        unsafe { result::memcpy_htod_sync(din.ptr, &host_in) }
            .map_err(|e| device_err("copy in", e))?;
        let stream = &self.slots[0].stream;
        let (start, end) = (Event::new(true)?, Event::new(true)?);
        let mut times = Vec::new();
        for _ in 0..reps.max(1) + 1 {
            start.record(stream)?;
            let (a, st, cnt, gt, o) = (din.ptr, mp as u32, len as u32, gtab, dout.ptr);
            let cfg = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (block, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut b = stream.launch_builder(&func.func);
            b.arg(&a).arg(&st).arg(&cnt).arg(&gt).arg(&o);
            // SAFETY: argument types match the kernel.
            unsafe { b.launch(cfg) }.map_err(|e| device_err("kernel launch", e))?;
            end.record(stream)?;
            end.sync()?;
            times.push(start.elapsed_ms(&end)?);
        }
        times.remove(0); // warm-up
        times.sort_by(|a, b| a.total_cmp(b));
        let mut out = vec![0u64; out_words];
        // SAFETY: sizes as allocated; the stream has finished.
        unsafe { result::memcpy_dtoh_sync(&mut out, dout.ptr) }
            .map_err(|e| device_err("copy out", e))?;
        out.truncate(len.div_ceil(64));
        Ok((times[times.len() / 2], Bitmap::from_words(out, len)))
    }
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

/// The uncompressed SEC1 encoding of a key held as the kernels' words (x, then y, little-endian).
pub fn sec1(key: &[u32; 16]) -> [u8; 65] {
    let half = |h: &[u32]| crate::codegen::be_from_words(h.try_into().expect("8 words"));
    let mut out = [4u8; 65];
    out[1..33].copy_from_slice(&half(&key[..8]));
    out[33..].copy_from_slice(&half(&key[8..]));
    out
}

/// The ECDSA kernels of `alg` among those [`Engine::ecdsa`] has loaded (a field borrow, so that
/// the pipeline can borrow the slots beside it).
fn loaded_ecdsa(loaded: &[EcdsaKernels], alg: Algorithm) -> &EcdsaKernels {
    loaded
        .iter()
        .find(|k| k.alg == alg)
        .expect("loaded by Engine::ecdsa first")
}

/// The host build of `alg`'s ECDSA path, which builds its table and checks its field products.
fn ecdsa_host_curve(alg: Algorithm) -> Result<host::HostCurve, BackendError> {
    match alg {
        Algorithm::P256 => Ok(host::HostCurve::P256),
        Algorithm::Secp256k1 => Ok(host::HostCurve::Secp256k1),
        Algorithm::Sm2 => Err(BackendError::Unsupported {
            backend: NAME.into(),
            what: "SM2 through the ECDSA kernels".into(),
        }),
    }
}

/// The G table of an ECDSA curve, built once per process.
fn ecdsa_gtable(alg: Algorithm) -> Result<&'static [u32], BackendError> {
    type Table = std::sync::OnceLock<Result<Vec<u32>, String>>;
    static TABLES: [Table; 2] = [Table::new(), Table::new()];
    let curve = ecdsa_host_curve(alg)?;
    let slot = &TABLES[usize::from(curve == host::HostCurve::Secp256k1)];
    slot.get_or_init(|| curve.ecdsa().expect("an ECDSA curve").build_gtable())
        .as_deref()
        .map_err(|e| BackendError::Device {
            backend: NAME.into(),
            reason: e.clone(),
        })
}

type Job = (Arc<Batch>, mpsc::Sender<Result<Bitmap, BackendError>>);

/// SM2 batch verification on a CUDA GPU.
pub struct CudaBackend {
    engine: Arc<Mutex<Engine>>,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    resources: Vec<Resources>,
    from_cache: bool,
    cfg: CudaConfig,
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
            .unwrap_or_else(|_| Err(device_err("worker", "the verification worker stopped")))
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
                            Err(_) => Err(device_err("worker", "poisoned lock")),
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

    /// The loaded module's field products on the GPU for operand pairs: for each pair the wide
    /// a·b and a², then a·b and a² mod p (compare with [`host::field_check_compare`]).
    pub fn field_check(&self, a: &[Words], b: &[Words]) -> Result<Vec<[u32; 48]>, BackendError> {
        let engine = self
            .engine
            .lock()
            .map_err(|_| device_err("field check", "poisoned lock"))?;
        engine.field_check(&engine.check, a, b)
    }

    /// Kernel-only time (ms, median of `reps` after a warm-up) over the whole batch, data already on
    /// the GPU, and the verdicts of that launch.
    pub fn time_kernel(&self, batch: &Batch, reps: usize) -> Result<(f32, Bitmap), BackendError> {
        check_batch(batch)?;
        self.engine
            .lock()
            .map_err(|_| device_err("time", "poisoned lock"))?
            .kernel_only(batch, reps)
    }

    /// [`Backend::verify_messages`] (SM3 on the GPU) with wall-clock time in milliseconds.
    pub fn verify_messages_timed(
        &self,
        batch: &MessageBatch,
    ) -> Result<(Bitmap, f64), BackendError> {
        let mut e = self
            .engine
            .lock()
            .map_err(|_| device_err("verify", "poisoned lock"))?;
        let t = Instant::now();
        let map = e.verify_messages(batch)?;
        Ok((map, t.elapsed().as_secs_f64() * 1e3))
    }

    /// Lets `host` (the CPU backend) verify the records of a batch outside the known signers when
    /// they are at most `most`, at the same time as the GPU verifies the known ones: for a few
    /// records the host's cores finish sooner than the GPU's default kernel, whose latency does
    /// not shrink with the batch. Without a helper, or above `most`, they run on the GPU.
    pub fn set_host_helper(&self, host: Arc<dyn Backend>, most: usize) -> Result<(), BackendError> {
        self.engine
            .lock()
            .map_err(|_| device_err("set host helper", "poisoned lock"))?
            .host = Some((host, most));
        Ok(())
    }

    /// Loads the known signers' fixed-base tables (464 KB of GPU memory each), replacing any loaded
    /// before; a [`SignerBatch`] names its signers by their index in `tables`. Fast mode only.
    pub fn load_signers(&self, tables: &SignerTables) -> Result<(), BackendError> {
        self.engine
            .lock()
            .map_err(|_| device_err("load signers", "poisoned lock"))?
            .load_signers(tables)
    }

    /// Verifies signatures by known signers, verdict i for record i, with wall-clock time in
    /// milliseconds. Fails if a record names a signer that is not loaded.
    pub fn verify_signed_timed(&self, batch: &SignerBatch) -> Result<(Bitmap, f64), BackendError> {
        let mut e = self
            .engine
            .lock()
            .map_err(|_| device_err("verify", "poisoned lock"))?;
        let t = Instant::now();
        let map = e.verify_signed(batch)?;
        Ok((map, t.elapsed().as_secs_f64() * 1e3))
    }

    /// Verifies records that carry their keys, those of loaded known signers through their tables
    /// and the rest as usual; verdict i is record i. With wall-clock time in milliseconds, the
    /// lookups included.
    pub fn verify_known_timed(&self, batch: &Batch) -> Result<(Bitmap, f64), BackendError> {
        check_batch(batch)?;
        let mut e = self
            .engine
            .lock()
            .map_err(|_| device_err("verify", "poisoned lock"))?;
        let t = Instant::now();
        let map = e.verify_known(batch)?;
        Ok((map, t.elapsed().as_secs_f64() * 1e3))
    }

    /// [`Backend::recover_batch`] with wall-clock time in milliseconds (the kernels loaded and
    /// checked first, outside the clock).
    pub fn recover_timed(
        &self,
        items: &[RecoverItem],
    ) -> Result<(Vec<Option<Recovered>>, f64), BackendError> {
        let mut e = self
            .engine
            .lock()
            .map_err(|_| device_err("recover", "poisoned lock"))?;
        e.ecdsa(Algorithm::Secp256k1)?;
        let t = Instant::now();
        let keys = e.recover(items)?;
        Ok((keys, t.elapsed().as_secs_f64() * 1e3))
    }

    /// End-to-end verification with wall-clock time in milliseconds (SM2 through the default
    /// kernel, known signers or not; ECDSA through the curve's kernels).
    pub fn verify_timed(&self, batch: &Batch) -> Result<(Bitmap, f64), BackendError> {
        check_batch(batch)?;
        let mut e = self
            .engine
            .lock()
            .map_err(|_| device_err("verify", "poisoned lock"))?;
        if batch.alg() != Algorithm::Sm2 {
            e.ecdsa(batch.alg())?; // loaded and checked before the clock starts
        }
        let t = Instant::now();
        let map = match batch.alg() {
            Algorithm::Sm2 => e.verify(batch)?,
            _ => e.verify_ecdsa(batch)?,
        };
        Ok((map, t.elapsed().as_secs_f64() * 1e3))
    }
}

/// SM2 batches (the low-s rule is ECDSA's) and ECDSA batches (P-256, secp256k1).
fn check_batch(batch: &Batch) -> Result<(), BackendError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use chainsig_core::batch::PreparedItem;

    fn batch(n: usize) -> Batch {
        let mut b = Batch::with_capacity(Algorithm::Sm2, false, n);
        for i in 0..n {
            let mut it = PreparedItem::default();
            it.e[31] = i as u8;
            it.r[0] = 1;
            it.px[31] = (i * 3) as u8;
            it.py[31] = (i % 3) as u8; // parity alternates irregularly
            b.push(&it);
        }
        b
    }

    #[test]
    fn staging_layouts_place_every_word() {
        let b = batch(150);
        let (i0, m) = (64usize, 86usize);
        let mp = m.next_multiple_of(64);
        for compress in [false, true] {
            for row_major in [false, true] {
                let k = KernelConfig {
                    mode: crate::Mode::Fast,
                    inversion: crate::Inversion::Euclid,
                    compress,
                    row_major,
                    max_registers: None,
                    product: Default::default(),
                    compact: false,
                    pair: false,
                    split: false,
                    quad: false,
                    rolled: false,
                };
                let mut dst = vec![0xdead_beefu32; chunk_words(&k, mp)];
                stage(&b, &k, i0, m, mp, &mut dst);
                let nrows = rows(&k);
                for i in 0..m {
                    let item = i0 + i;
                    for r in 0..nrows {
                        let want = b.words()[r * b.stride() + item];
                        let got = if row_major {
                            dst[i * (nrows + usize::from(compress)) + r]
                        } else {
                            dst[r * mp + i]
                        };
                        assert_eq!(
                            got, want,
                            "row {r} item {item} compress={compress} row_major={row_major}"
                        );
                    }
                    if compress {
                        let parity = (item % 3) as u32 & 1;
                        let got = if row_major {
                            dst[i * (nrows + 1) + nrows]
                        } else {
                            (dst[nrows * mp + i / 32] >> (i % 32)) & 1
                        };
                        assert_eq!(got, parity, "parity of item {item}");
                    }
                }
            }
        }
    }

    #[test]
    fn recovery_staging_places_every_word() {
        let items: Vec<RecoverItem> = (0..70u8)
            .map(|i| {
                let mut it = RecoverItem {
                    digest: [i; 32],
                    r: [0; 32],
                    s: [0; 32],
                    recovery_id: i % 2,
                };
                it.r[31] = i; // least significant byte: word 0's low byte
                it.s[0] = i; // most significant byte: word 7's high byte
                it
            })
            .collect();
        let mp = 128;
        let mut dst = vec![u32::MAX; kernel::RECOVER_ROWS * mp];
        stage_recover(&items, mp, &mut dst);
        for (i, it) in items.iter().enumerate() {
            let d = it.digest[0] as u32;
            for j in 0..LIMBS {
                assert_eq!(dst[j * mp + i], d * 0x0101_0101, "e word {j} of item {i}");
            }
            assert_eq!(dst[LIMBS * mp + i], i as u32, "r word 0");
            assert_eq!(dst[(LIMBS + 7) * mp + i], 0);
            assert_eq!(dst[(2 * LIMBS + 7) * mp + i], (i as u32) << 24, "s word 7");
            assert_eq!(dst[3 * LIMBS * mp + i], u32::from(it.recovery_id));
        }
        // The padding past the items is left alone.
        assert_eq!(dst[items.len()], u32::MAX);
    }

    #[test]
    fn the_uncompressed_encoding_puts_the_top_words_first() {
        let mut key = [0u32; 16];
        key[7] = 0x0102_0304; // x's top word
        key[0] = 0x0a0b_0c0d; // x's bottom word
        key[15] = 0x1112_1314; // y's top word
        let b = sec1(&key);
        assert_eq!(b[0], 4);
        assert_eq!(&b[1..5], &[1, 2, 3, 4]);
        assert_eq!(&b[29..33], &[0x0a, 0x0b, 0x0c, 0x0d]);
        assert_eq!(&b[33..37], &[0x11, 0x12, 0x13, 0x14]);
    }

    #[test]
    fn small_batches_are_cut_into_fewer_chunks_unless_exact() {
        let c = CudaConfig {
            streams: 8,
            ..CudaConfig::default()
        }; // chunks of at least 4096
        assert_eq!(c.chunk_len(1000), 1024);
        assert_eq!(c.chunk_len(4096), 4096);
        assert_eq!(c.chunk_len(8192), 4096);
        assert_eq!(c.chunk_len(1 << 20), 1 << 17);
        assert_eq!(c.exact().chunk_len(4096), 512);
        assert_eq!(CudaConfig::default().chunk_len(65536), 16384);
        let fixed = CudaConfig {
            chunk_items: Some(100),
            ..c
        };
        assert_eq!(fixed.chunk_len(4096), 128);
    }

    #[test]
    fn a_work_under_one_round_spreads_over_every_multiprocessor() {
        // The H200 at 128 registers: 132 multiprocessors, one 512-thread block each.
        let round = 132 * 512;
        // 36864 signatures: 288 threads on 128 multiprocessors, not 512 on 72.
        assert_eq!(tail_block(36864, 1, 64, 512, 132), 288);
        // 4096 on a split kernel: 128 blocks of 128, one on each multiprocessor but four; the
        // least block binds, and no block passes the kernel's most.
        assert_eq!(tail_block(4096, 4, 128, 1024, 132), 128);
        assert_eq!(tail_block(1024, 4, 128, 1024, 132), 128);
        assert_eq!(tail_block(100_000, 1, 64, 512, 132), 512);
        for threads in [1u32, 2, 4] {
            for items in (64..round / threads as usize).step_by(64 * 7) {
                let b = tail_block(items, threads, 64, 512, 132);
                assert_eq!(b % (32 * threads), 0);
                let blocks = (items * threads as usize).div_ceil(b as usize);
                assert!(blocks <= 132, "{items} items in {blocks} blocks of {b}");
            }
        }
    }

    #[test]
    fn a_work_of_a_round_or_more_is_cut_into_rounds() {
        let round = 132 * 512;
        assert_eq!(round_chunk(21_504, 172_032, round), round);
        assert_eq!(round_chunk(131_072, 1 << 20, round), round);
        assert_eq!(round_chunk(4096, 32_768, round), 4096);
        assert_eq!(round_chunk(4096, 32_768, 0), 4096);
        assert_eq!(round_chunk(4096, 1 << 20, 132 * 500), 65_984); // down to a multiple of 64
    }

    #[test]
    fn launches_cover_every_item_with_one_bit_each() {
        for threads in [1u32, 2, 4] {
            for block_size in [64u32, 128, 192, 256, 512, 544, 576, 672, 1024] {
                let block = block_size.next_multiple_of(32 * threads);
                for mp in [64usize, 128, 4096, 4160, 172032] {
                    let (grid, words) = launch_shape(mp, block, threads);
                    let items = (grid * block / threads) as usize;
                    assert!(items >= mp && items < mp + (block / threads) as usize);
                    assert_eq!(items % 32, 0, "blocks write whole half words");
                    assert_eq!(
                        words,
                        items.div_ceil(64),
                        "{threads} threads, block {block}"
                    );
                }
            }
        }
    }

    #[test]
    fn overrides_replace_the_fields_they_name_and_refuse_unknown_ones() {
        let base = CudaConfig::default();
        let c = base
            .with_overrides(r#"{"block_size": 256, "kernel": {"max_registers": 128}}"#)
            .unwrap();
        assert_eq!(c.block_size, 256);
        assert_eq!(c.kernel.max_registers, Some(128));
        assert_eq!(c.kernel.mode, base.kernel.mode);
        assert_eq!(c.streams, base.streams);
        let e = base
            .with_overrides(r#"{"kernel": {"max_regs": 128}}"#)
            .unwrap_err();
        assert!(e.contains("kernel.max_regs"), "{e}");
        assert!(base
            .with_overrides(r#"{"streams": 17}"#)
            .unwrap_err()
            .contains("streams"));
        assert!(base.with_overrides("[1]").is_err());
        assert!(base.with_overrides("{").unwrap_err().contains("JSON"));
    }

    #[test]
    fn bad_configurations_are_refused_by_name() {
        let mut c = CudaConfig {
            streams: 17,
            ..CudaConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("streams"));
        c.streams = 4;
        c.block_size = 100;
        assert!(c.validate().unwrap_err().contains("block_size"));
        c.block_size = 544; // 17 warps: 120 registers a thread fill an SM
        assert!(c.validate().is_ok());
        c.block_size = 128;
        c.chunk_items = Some(0);
        assert!(c.validate().unwrap_err().contains("chunk_items"));
    }

    #[test]
    fn small_batch_kernels_are_loaded_only_for_the_fast_mode_and_never_by_exact() {
        // The quads load only where a configuration asks for them (off by default).
        let c = CudaConfig {
            quads_below: 4096,
            ..CudaConfig::default()
        };
        let small = c.small_kernels();
        let quads = KernelConfig::default_fast().compacted().quad().split();
        let split = KernelConfig::default_fast().compacted().split();
        let compact = KernelConfig::default_fast().compacted();
        assert_eq!(
            small,
            vec![
                (quads, 4096),
                (split, PAIRS_BELOW),
                (compact, COMPACT_BELOW)
            ]
        );
        assert_eq!(
            CudaConfig::default().small_kernels(),
            vec![(split, PAIRS_BELOW), (compact, COMPACT_BELOW)]
        );
        assert_eq!(quads.threads_per_item(), 8);
        assert_eq!(split.threads_per_item(), 4);
        assert!(quads.name().ends_with("_compact_quad_split"));
        assert!(split.name().ends_with("_compact_split"));
        assert!(compact.name().ends_with("_compact"));
        assert!(c.exact().small_kernels().is_empty());
        let no_pairs = CudaConfig {
            pairs_below: 0,
            quads_below: 0,
            ..c
        };
        assert_eq!(no_pairs.small_kernels(), vec![(compact, COMPACT_BELOW)]);
        let mut paper = CudaConfig::default();
        paper.kernel.mode = crate::Mode::Paper;
        assert!(paper.small_kernels().is_empty());
        let mut already = CudaConfig::default();
        already.kernel = already.kernel.compacted();
        assert!(already.small_kernels().is_empty());
    }

    #[test]
    fn a_kernel_gets_a_block_its_register_cap_lets_open() {
        let fast = KernelConfig::default_fast();
        assert_eq!(CudaConfig::with_kernel(fast), CudaConfig::default());
        let r168 = KernelConfig {
            max_registers: Some(168),
            ..fast
        };
        assert_eq!(CudaConfig::with_kernel(r168).block_size, 384);
        let uncapped = KernelConfig {
            max_registers: None,
            ..fast
        };
        assert_eq!(CudaConfig::with_kernel(uncapped).block_size, 256);
        assert_eq!(CudaConfig::with_kernel(uncapped).kernel, uncapped);
    }

    #[test]
    fn small_works_spread_their_blocks_over_the_multiprocessors() {
        // 4096 ECDSA signatures in blocks of 512 would fill 8 of 132 multiprocessors.
        assert_eq!(spread_block(512, 64, 1, 4096, 132), 64);
        assert_eq!(spread_block(512, 64, 1, 40_000, 132), 256);
        // Large batches keep their block; so does a split kernel at its least block.
        assert_eq!(spread_block(512, 64, 1, 172_032, 132), 512);
        assert_eq!(spread_block(256, 256, 4, 1024, 132), 256);
        // Lane pairs halve only to blocks that still cover whole 32-signature halves.
        assert_eq!(spread_block(256, 64, 2, 1024, 132), 64);
        assert_eq!(spread_block(512, 64, 1, 0, 132), 64);
    }

    #[test]
    fn the_compact_switch_reaches_only_fast_mode_modules() {
        let define = "-DCS_COMPACT=1".to_string();
        let fast = KernelConfig::default_fast();
        assert!(!kernel::config_options(&fast, "sm_90").contains(&define));
        let compact = fast.compacted();
        let opts = kernel::config_options(&compact, "sm_90");
        assert!(opts.contains(&define));
        assert!(opts.contains(&"--maxrregcount=128".to_string()));
        let paper = KernelConfig {
            mode: crate::Mode::Paper,
            ..compact
        };
        assert!(!kernel::config_options(&paper, "sm_90").contains(&define));
        assert!(!paper.name().ends_with("_compact"));
    }

    #[test]
    fn no_driver_means_a_clear_unavailable_error() {
        if driver_available() {
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
