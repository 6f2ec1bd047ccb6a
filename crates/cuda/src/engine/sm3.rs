//! SM2 records that carry their messages: e = SM3(Z_A ‖ M) (GB/T 32918.2, GB/T 32905) computed on
//! the GPU for each chunk by `cs_sm3_e`, just before the chunk's verification kernel; Z_A comes
//! from the caller's per-signer cache. The SM3 module is compiled at the first such batch.

use super::slots::Slot;
use super::{Engine, Rows, Work};
use crate::backend::NAME;
use crate::kernels;
use crate::messages::MessageBatch;
use chainsig_core::backend::BackendError;
use chainsig_core::bitmap::Bitmap;
use chainsig_gpu::cudarc;
use chainsig_gpu::cudarc::driver::{result, CudaFunction, LaunchConfig, PushKernelArg};
use chainsig_gpu::device_err;

impl Engine {
    /// The SM3 kernel, compiled (or loaded from the cache) on first use.
    pub(crate) fn sm3_function(&mut self) -> Result<CudaFunction, BackendError> {
        if let Some(f) = &self.sm3 {
            return Ok(f.clone());
        }
        let compiled = chainsig_gpu::compile_cached(&kernels::sm3_source(), &self.arch)
            .map_err(|e| device_err("compile the SM3 kernel", e))?;
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
            .map_err(|e| device_err("cuModuleLoadData (SM3)", e))?;
        let f = module
            .load_function(kernels::SM3_KERNEL)
            .map_err(|e| device_err("cuModuleGetFunction (SM3)", e))?;
        self.sm3 = Some(f.clone());
        Ok(f)
    }

    /// SM2 records with their messages (the SM3 kernel loaded first, [`super::Needs`]): e
    /// hashed on the GPU, then verified as usual, known signers' records through their tables.
    pub(crate) fn verify_messages(&self, batch: &MessageBatch) -> Result<Bitmap, BackendError> {
        if self.cfg.kernel.row_major {
            return Err(BackendError::Unsupported {
                backend: NAME.into(),
                what: "messages hashed on the GPU with the row-major layout ablation".into(),
            });
        }
        self.require(super::Needs::Sm3)?;
        let sm3 = self.sm3.clone().expect("required above");
        let split = match &self.ktabs {
            Some(t) => crate::signers::Split::new(batch.items(), &t.index),
            None => return self.run(Work::Records(Rows::all(batch.items()), Some((batch, &sm3)))),
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
            Work::Records(Rows::all(others_msgs.items()), Some((&others_msgs, &sm3))),
            |host| host.verify_messages(&others_msgs),
        )?;
        Ok(split.merge(&known, &others))
    }
}

/// Stages chunk [i0, i0 + m) of the messages (padded stride `mp`) into the slot, copies it in and
/// launches `cs_sm3_e`, which writes each record's e into the e rows of the slot's staged input
/// (the first rows of both the records' and the known signers' layouts), on the slot's stream
/// after the input's copy and before the verification kernel.
pub(super) fn hash_chunk(
    slot: &mut Slot,
    mb: &MessageBatch,
    sm3: &CudaFunction,
    i0: usize,
    m: usize,
    mp: usize,
) -> Result<(), BackendError> {
    let s = slot.stream.cu_stream();
    let msg_words = crate::messages::chunk_words(mb, i0, m, mp);
    slot.reserve_messages(msg_words)?;
    let pin = slot.pin_msg.as_mut_slice();
    crate::stage::on_stagers(|| crate::messages::stage(mb, i0, m, mp, pin))
        .map_err(|e| device_err("stage messages", e))?;
    chainsig_gpu::fault::check(chainsig_gpu::fault::Op::Copy, "copy messages in")?;
    // SAFETY: pin_msg and dev_msg hold msg_words words; the pinned buffer is not touched again
    // until the slot's event has completed (harvest syncs on it first).
    unsafe {
        result::memcpy_htod_async(slot.dev_msg.ptr(), &slot.pin_msg.as_slice()[..msg_words], s)
            .map_err(|e| device_err("copy messages in", e))?;
    }
    let za = slot.dev_msg.ptr();
    let offsets = za + (8 * mp * 4) as u64;
    let bytes = za + ((9 * mp + 1) * 4) as u64;
    let (stride, count, e_rows) = (mp as u32, m as u32, slot.dev_in.ptr());
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
    chainsig_gpu::fault::check(chainsig_gpu::fault::Op::Launch, "SM3 kernel launch")?;
    // SAFETY: argument types match cs_sm3_e (three device pointers, stride, count,
    // output pointer); every buffer is sized for this chunk.
    unsafe { b.launch(cfg) }.map_err(|e| device_err("SM3 kernel launch", e))?;
    Ok(())
}
