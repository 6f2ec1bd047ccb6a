//! SM2 records from their own bytes on the engine ([`crate::raw`]): per chunk the host copies
//! the records' bytes and offsets into pinned memory, the raw kernel (kernels/sm2raw.cuh)
//! decodes and checks each key, computes Z_A and e and writes the verification input on the
//! device, and the verification kernel follows on the same stream; verdicts and fault codes come
//! back. Records of known signers (their key bytes one of the signers' encodings) go through the
//! signers' tables, the others through the default kernel, in one pipeline; answers are merged
//! back in order. The raw module is compiled at the first such batch.

use super::slots::Slot;
use super::{Engine, Work};
use crate::backend::NAME;
use crate::kernels;
use crate::raw::{KnownEncodings, RawSm2Batch, RawVerdicts};
use chainsig_core::backend::BackendError;
use chainsig_gpu::cudarc;
use chainsig_gpu::cudarc::driver::{result, CudaFunction, LaunchConfig, PushKernelArg};
use chainsig_gpu::device_err;
use chainsig_gpu::fault::{self, Op};

/// The raw module's two entries.
pub(super) struct RawKernels {
    fresh: CudaFunction,
    signed: CudaFunction,
}

impl Engine {
    /// The raw module's kernels, compiled (or loaded from the cache) on first use.
    fn raw_kernels(&mut self) -> Result<&RawKernels, BackendError> {
        if self.raw.is_none() {
            let compiled = kernels::compile_raw(&self.arch)
                .map_err(|e| device_err("compile the raw SM2 kernels", e))?;
            let module = self
                .ctx
                .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
                .map_err(|e| device_err("cuModuleLoadData (raw SM2)", e))?;
            let load = |name| {
                module
                    .load_function(name)
                    .map_err(|e| device_err("cuModuleGetFunction (raw SM2)", e))
            };
            self.raw = Some(RawKernels {
                fresh: load(kernels::RAW_KERNEL)?,
                signed: load(kernels::RAW_SIGNED_KERNEL)?,
            });
        }
        Ok(self.raw.as_ref().expect("loaded above"))
    }

    /// Verifies SM2 records from their bytes: a verdict and a fault code per record, in order.
    pub(crate) fn verify_raw(&mut self, batch: &RawSm2Batch) -> Result<RawVerdicts, BackendError> {
        if self.cfg.kernel.row_major || self.cfg.kernel.compress {
            return Err(BackendError::Unsupported {
                backend: NAME.into(),
                what: "raw SM2 records with the row-major or compressed-key layout ablations"
                    .into(),
            });
        }
        self.ctx
            .bind_to_thread()
            .map_err(|e| device_err("bind context", e))?;
        let (fresh, signed) = {
            let k = self.raw_kernels()?;
            (k.fresh.clone(), k.signed.clone())
        };
        let split = match &self.ktabs {
            Some((_, index)) if self.signed.is_some() => KnownEncodings::new(index).split(batch),
            _ => {
                let mut out = self.pipeline(&[Work::Raw(batch, None, &fresh)])?;
                return answer(out.words.remove(0), out.faults.remove(0), batch.len());
            }
        };
        let (known, others) = (
            batch.select(&split.known_at),
            batch.select(&split.others_at),
        );
        // The rest first: its one chunk starts before the known part's and overlaps it.
        let mut out = self.pipeline(&[
            Work::Raw(&others, None, &fresh),
            Work::Raw(&known, Some(&split.signers), &signed),
        ])?;
        let known = answer(out.words.remove(1), out.faults.remove(1), known.len())?;
        let others = answer(out.words.remove(0), out.faults.remove(0), others.len())?;
        Ok(split.merge(&known, &others))
    }
}

/// A work's answer, refused as a device fault when a code is one no kernel writes.
fn answer(words: Vec<u64>, faults: Vec<u8>, len: usize) -> Result<RawVerdicts, BackendError> {
    let out = RawVerdicts {
        verdicts: chainsig_core::bitmap::Bitmap::from_words(words, len),
        faults,
    };
    out.check()
        .map_err(|e| device_err("raw SM2 fault codes", e))?;
    Ok(out)
}

/// Stages chunk [i0, i0 + m) of the raw records (padded stride `mp`) into the slot's message
/// buffers, copies it in and launches the raw kernel, which writes the chunk's verification input
/// into `dev_in` and its fault codes into `dev_keys`, on the slot's stream before the
/// verification kernel. `signers`: the known signers' numbers of the whole work, if it is theirs.
#[allow(clippy::too_many_arguments)]
pub(super) fn prepare_chunk(
    slot: &mut Slot,
    batch: &RawSm2Batch,
    signers: Option<&[u32]>,
    kernel: &CudaFunction,
    ktabs: u64,
    i0: usize,
    m: usize,
    mp: usize,
) -> Result<(), BackendError> {
    let s = slot.stream.cu_stream();
    let words = crate::raw::chunk_words(batch, i0, m);
    // The signers' numbers follow the records' bytes.
    let numbers = signers.map_or(0, |_| m);
    slot.reserve_messages(words + numbers)?;
    let pin = slot.pin_msg.as_mut_slice();
    crate::raw::stage(batch, i0, m, &mut pin[..words])
        .map_err(|e| device_err("stage raw records", e))?;
    if let Some(signers) = signers {
        pin[words..words + m].copy_from_slice(&signers[i0..i0 + m]);
    }
    fault::check(Op::Copy, "copy raw records in")?;
    // SAFETY: pin_msg and dev_msg hold words + numbers words; the pinned buffer is not touched
    // again until the slot's event has completed (harvest syncs on it first).
    unsafe {
        result::memcpy_htod_async(
            slot.dev_msg.ptr(),
            &slot.pin_msg.as_slice()[..words + numbers],
            s,
        )
        .map_err(|e| device_err("copy raw records in", e))?;
    }
    let offsets = slot.dev_msg.ptr();
    let bytes = offsets + ((3 * m + 1) * 4) as u64;
    let numbers_at = offsets + (words * 4) as u64;
    let (stride, count) = (mp as u32, m as u32);
    let (rows, faults) = (slot.dev_in.ptr(), slot.dev_keys.ptr());
    let cfg = LaunchConfig {
        grid_dim: (count.div_ceil(128), 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = slot.stream.launch_builder(kernel);
    b.arg(&offsets).arg(&bytes);
    if signers.is_some() {
        b.arg(&numbers_at);
    }
    b.arg(&stride).arg(&count);
    if signers.is_some() {
        b.arg(&ktabs);
    }
    b.arg(&rows).arg(&faults);
    fault::check(Op::Launch, "raw SM2 kernel launch")?;
    // SAFETY: the arguments are cs_sm2_raw's (offsets, bytes, stride, count, rows, faults) or
    // cs_sm2_raw_signed's (offsets, bytes, signers, stride, count, ktabs, rows, faults): device
    // pointers as u64, u32 stride and count; rows hold the chunk's input (40 or 25 rows of mp
    // words) and faults mp bytes (the slot's reserve), ktabs the loaded tables.
    unsafe { b.launch(cfg) }.map_err(|e| device_err("raw SM2 kernel launch", e))?;
    Ok(())
}
