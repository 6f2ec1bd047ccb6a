//! The kernel alone, timed with CUDA events over a whole batch already on the device (no
//! transfers): the `bench` feature's kernel-only figure.

use super::Engine;
use crate::launch::{launch_shape, pick_kernel};
use crate::stage::{chunk_words, stage};
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::BackendError;
use chainsig_core::batch::Batch;
use chainsig_core::bitmap::Bitmap;
use chainsig_gpu::cudarc::driver::{result, LaunchConfig, PushKernelArg};
use chainsig_gpu::{device_err, DevBuf, Stopwatch};

impl Engine {
    /// Times the kernel alone over the whole batch on the device (no transfers), median of `reps`.
    pub(crate) fn kernel_only(
        &mut self,
        batch: &Batch,
        reps: usize,
    ) -> Result<(f32, Bitmap), BackendError> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| device_err("bind context", e))?;
        let len = batch.len();
        let mp = len.next_multiple_of(64);
        let (func, gtab, k) = if batch.alg() == Algorithm::Sm2 {
            (
                pick_kernel(&self.func, &self.small, len),
                self.gtab.ptr(),
                self.cfg.kernel,
            )
        } else {
            self.ecdsa(batch.alg())?;
            let ecdsa = super::loaded_ecdsa(&self.ecdsa, batch.alg());
            (ecdsa.kernel(batch.low_s()), ecdsa.gtab.ptr(), ecdsa.config)
        };
        let block = func.block_for(len, self.sms);
        let (grid, out_words) = launch_shape(mp, block, func.threads);
        let mut host_in = vec![0u32; chunk_words(&k, mp)];
        stage(batch, &k, 0, len, mp, &mut host_in);
        let din = DevBuf::new(host_in.len() * 4)?;
        let dout = DevBuf::new(out_words * 8)?;
        // SAFETY: sizes as allocated.
        unsafe { result::memcpy_htod_sync(din.ptr(), &host_in) }
            .map_err(|e| device_err("copy in", e))?;
        let slots = self.slots.take()?;
        let stream = &slots[0].stream;
        let watch = Stopwatch::new(&self.ctx, stream)?;
        let (a, st, cnt, gt, o) = (din.ptr(), mp as u32, len as u32, gtab, dout.ptr());
        let launch = || -> Result<(), BackendError> {
            let cfg = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (block, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut b = stream.launch_builder(&func.func);
            b.arg(&a).arg(&st).arg(&cnt).arg(&gt).arg(&o);
            // SAFETY: argument types match the kernel.
            unsafe { b.launch(cfg) }.map_err(|e| device_err("kernel launch", e))?;
            Ok(())
        };
        // One warm-up launch, then the median of `reps` (the times came from f32 events, so the
        // conversion back is exact).
        let ms = watch.median(1, reps.max(1), launch)? as f32;
        let mut out = vec![0u64; out_words];
        // SAFETY: sizes as allocated; the stream has finished.
        unsafe { result::memcpy_dtoh_sync(&mut out, dout.ptr()) }
            .map_err(|e| device_err("copy out", e))?;
        out.truncate(len.div_ceil(64));
        Ok((ms, Bitmap::from_words(out, len)))
    }
}
