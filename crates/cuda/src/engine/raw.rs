//! SM2 records from their own bytes on the engine ([`crate::raw`]): per chunk the host copies
//! the records' bytes and offsets into pinned memory, the raw kernel (kernels/sm2raw.cuh)
//! decodes and checks each key, computes Z_A and e and writes the verification input on the
//! device, and the verification kernel follows on the same stream; verdicts and fault codes come
//! back. Records of known signers (their key bytes one of the signers' encodings) go through the
//! signers' tables, the others through the default kernel, in one pipeline; answers are merged
//! back in order. The raw module is compiled at the first such batch.

use super::slots::Slot;
use super::{Engine, Work};
use crate::backend::unavailable;
use crate::backend::NAME;
use crate::kernels;
use crate::raw::{RawPart, RawSm2Batch, RawSm2Item, RawSplit, RawVerdicts};
use chainsig_core::backend::BackendError;
use chainsig_gpu::cudarc;
use chainsig_gpu::cudarc::driver::{result, CudaFunction, LaunchConfig, PushKernelArg};
use chainsig_gpu::fault::{self, Op};
use chainsig_gpu::{device_err, DevBuf};

/// The raw module's two entries.
pub(super) struct RawKernels {
    fresh: CudaFunction,
    signed: CudaFunction,
}

impl Engine {
    /// The raw module's kernels, compiled (or loaded from the cache) on first use.
    pub(super) fn raw_kernels(&mut self) -> Result<&RawKernels, BackendError> {
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
            let kernels = RawKernels {
                fresh: load(kernels::RAW_KERNEL)?,
                signed: load(kernels::RAW_SIGNED_KERNEL)?,
            };
            self.raw_self_test(&kernels.fresh)?;
            self.raw = Some(kernels);
        }
        Ok(self.raw.as_ref().expect("loaded above"))
    }

    /// Verifies SM2 records from their bytes: a verdict and a fault code per record, in order.
    /// (The raw module loaded first, [`super::Needs`].)
    pub(crate) fn verify_raw(&self, batch: &RawSm2Batch) -> Result<RawVerdicts, BackendError> {
        if self.cfg.kernel.row_major || self.cfg.kernel.compress {
            return Err(BackendError::Unsupported {
                backend: NAME.into(),
                what: "raw SM2 records with the row-major or compressed-key layout ablations"
                    .into(),
            });
        }
        self.require(super::Needs::RawSm2)?;
        let k = self.raw.as_ref().expect("required above");
        let (fresh, signed) = (k.fresh.clone(), k.signed.clone());
        let split = match &self.ktabs {
            Some(t) if self.signed.is_some() => t.encodings.split(batch),
            _ => RawSplit::default(),
        };
        if split.known_at.is_empty() {
            let mut out = self.pipeline(&[Work::Raw(RawPart::all(batch), None, &fresh)])?;
            return answer(out.words.remove(0), out.faults.remove(0), batch.len());
        }
        // Each part gathered from the batch as its chunks are staged. The rest first: its chunk
        // starts before the known part's and overlaps it.
        let mut out = self.pipeline(&[
            Work::Raw(RawPart::gathered(batch, &split.others_at), None, &fresh),
            Work::Raw(
                RawPart::gathered(batch, &split.known_at),
                Some(&split.signers),
                &signed,
            ),
        ])?;
        let known = answer(
            out.words.remove(1),
            out.faults.remove(1),
            split.known_at.len(),
        )?;
        let others = answer(
            out.words.remove(0),
            out.faults.remove(0),
            split.others_at.len(),
        )?;
        Ok(split.merge(&known, &others))
    }
}

impl Engine {
    /// The raw kernel on this GPU against the host build of the same code, on fixed records
    /// covering every key outcome (`self_test_batch`): every row of the verification input and
    /// every fault code must agree before the kernel answers for a batch.
    fn raw_self_test(&self, fresh: &CudaFunction) -> Result<(), BackendError> {
        let batch = self_test_batch();
        let (m, mp) = (batch.len(), batch.len().next_multiple_of(64));
        let part = RawPart::all(&batch);
        let chunk = part.chunk(0, m);
        let mut staged = vec![0u32; chunk.words()];
        part.stage(&chunk, &mut staged).map_err(unavailable)?;
        let (want_rows, want_faults) = crate::host::raw::raw_chunk(&staged, m, mp, None);
        let (din, drows, dfaults) = (
            DevBuf::new(staged.len() * 4)?,
            DevBuf::new(40 * mp * 4)?,
            DevBuf::new(mp)?,
        );
        // SAFETY: the buffer holds exactly the staged words; synchronous copy.
        unsafe { result::memcpy_htod_sync(din.ptr(), &staged) }
            .map_err(|e| device_err("copy in", e))?;
        let slots = self.slots.take()?;
        let stream = &slots[0].stream;
        let (offsets, bytes) = (din.ptr(), din.ptr() + ((3 * m + 1) * 4) as u64);
        let (stride, count, rows, faults) = (mp as u32, m as u32, drows.ptr(), dfaults.ptr());
        let mut b = stream.launch_builder(fresh);
        b.arg(&offsets)
            .arg(&bytes)
            .arg(&stride)
            .arg(&count)
            .arg(&rows)
            .arg(&faults);
        let cfg = LaunchConfig {
            grid_dim: (count.div_ceil(128), 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: cs_sm2_raw's arguments; the buffers hold the chunk, 40 rows of mp words and mp
        // fault bytes.
        unsafe { b.launch(cfg) }.map_err(|e| device_err("raw SM2 self-test launch", e))?;
        stream
            .synchronize()
            .map_err(|e| device_err("synchronize", e))?;
        let (mut got_rows, mut got_faults) = (vec![0u32; 40 * mp], vec![0u8; mp]);
        // SAFETY: sizes as allocated; the stream has finished.
        unsafe {
            result::memcpy_dtoh_sync(&mut got_rows, rows).map_err(|e| device_err("copy out", e))?;
            result::memcpy_dtoh_sync(&mut got_faults, faults)
                .map_err(|e| device_err("copy out", e))?;
        }
        let row_differs = (0..40 * mp).find(|&w| w % mp < m && got_rows[w] != want_rows[w]);
        let fault_differs = (0..m).find(|&i| got_faults[i] != want_faults[i]);
        if let Some(i) = fault_differs.or(row_differs.map(|w| w % mp)) {
            return Err(unavailable(format!(
                "the GPU's raw SM2 kernel disagrees with the host build on self-test record {i}"
            )));
        }
        Ok(())
    }
}

/// Records for the raw kernel's self-test, built from G alone: its key in both forms (and the
/// compressed form of -G), then one record for each way a key is refused, with identifiers of 0,
/// 1, 16, 100 and 8191 bytes and messages across the SM3 block boundaries.
fn self_test_batch() -> RawSm2Batch {
    let c = &chainsig_core::curve::SM2;
    let (gx, gy, p) = (&c.gx[..], &c.gy[..], &c.p[..]);
    let mut off_curve = c.gy;
    off_curve[31] ^= 1;
    let parity = 2 | (c.gy[31] & 1);
    let keys: Vec<Vec<u8>> = vec![
        [&[4u8][..], gx, gy].concat(),
        [&[parity][..], gx].concat(),
        [&[parity ^ 1][..], gx].concat(),
        [&[4u8][..], gx, &off_curve].concat(),
        [&[2u8][..], p].concat(),
        [&[4u8][..], gx, p].concat(),
        [&[2u8][..], &[0; 31], &[1]].concat(),
        [&[3u8][..], &[0; 31], &[2]].concat(),
        [&[2u8][..], &[0; 31], &[3]].concat(),
        vec![0],
        vec![],
        [&[5u8][..], gx].concat(),
        [&[4u8][..], gx].concat(),
        [&[4u8][..], gx, &gy[..31]].concat(),
    ];
    let mut batch = RawSm2Batch::default();
    for (i, key) in keys.iter().cycle().take(3 * keys.len()).enumerate() {
        let id = vec![b'A' + (i % 26) as u8; [0, 1, 16, 100, 8191][i % 5]];
        let msg: Vec<u8> = (0..[0, 1, 55, 56, 64, 119, 300][i % 7])
            .map(|k| (k * 7 + i) as u8)
            .collect();
        let (r, s) = ([i as u8 + 1; 32], [0x5a ^ i as u8; 32]);
        let item = RawSm2Item {
            r: &r,
            s: &s,
            pubkey: key,
            id: &id,
            msg: &msg,
        };
        batch
            .push(&item)
            .expect("identifiers of at most 8191 bytes");
    }
    batch
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

/// Stages chunk [i0, i0 + m) of the raw records `part` (padded stride `mp`) into the slot's message
/// buffers, copies it in and launches the raw kernel, which writes the chunk's verification input
/// into `dev_in` and its fault codes into `dev_keys`, on the slot's stream before the
/// verification kernel. `signers`: the known signers' numbers of the whole work, if it is theirs.
#[allow(clippy::too_many_arguments)]
pub(super) fn prepare_chunk(
    slot: &mut Slot,
    part: RawPart,
    signers: Option<&[u32]>,
    kernel: &CudaFunction,
    ktabs: u64,
    i0: usize,
    m: usize,
    mp: usize,
) -> Result<(), BackendError> {
    let s = slot.stream.cu_stream();
    let chunk = part.chunk(i0, m);
    let words = chunk.words();
    // The signers' numbers follow the records' bytes.
    let numbers = signers.map_or(0, |_| m);
    slot.reserve_messages(words + numbers)?;
    let pin = slot.pin_msg.as_mut_slice();
    crate::stage::on_stagers(|| part.stage(&chunk, &mut pin[..words]))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_self_test_records_reach_every_key_outcome_in_the_host_build() {
        let batch = self_test_batch();
        let (m, mp) = (batch.len(), batch.len().next_multiple_of(64));
        let part = RawPart::all(&batch);
        let chunk = part.chunk(0, m);
        let mut staged = vec![0u32; chunk.words()];
        part.stage(&chunk, &mut staged).unwrap();
        let (_, faults) = crate::host::raw::raw_chunk(&staged, m, mp, None);
        let mut seen: Vec<u8> = faults.clone();
        seen.sort();
        seen.dedup();
        assert_eq!(seen, (0..=6).collect::<Vec<u8>>(), "fault codes {faults:?}");
        // G in both forms, -G compressed and the point with x = 1: four valid keys a round.
        assert_eq!(faults.iter().filter(|&&f| f == 0).count(), 12, "{faults:?}");
    }
}
