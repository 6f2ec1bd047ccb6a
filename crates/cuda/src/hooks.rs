//! The timing and test hooks of [`CudaBackend`] (the `bench` feature, off by default): what the
//! benchmarks and device checks of chainsig-bench measure and compare, with the clock around
//! exactly the work they name. Not part of the verification API.

use crate::backend::check_batch;
use crate::codegen::Words;
use crate::messages::MessageBatch;
use crate::signers::SignerBatch;
use crate::CudaBackend;
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::BackendError;
use chainsig_core::batch::{Batch, RecoverItem, Recovered};
use chainsig_core::bitmap::Bitmap;
use std::time::Instant;

impl CudaBackend {
    /// The loaded module's field products on the GPU for operand pairs: for each pair the wide
    /// a·b and a², then a·b and a² mod p (compare with [`crate::host::field_check_compare`]).
    pub fn field_check(&self, a: &[Words], b: &[Words]) -> Result<Vec<[u32; 48]>, BackendError> {
        let engine = self.first_engine("field check")?;
        engine.field_check_main(a, b)
    }

    /// Kernel-only time (ms, median of `reps` after a warm-up) over the whole batch, data already on
    /// the GPU, and the verdicts of that launch.
    pub fn time_kernel(&self, batch: &Batch, reps: usize) -> Result<(f32, Bitmap), BackendError> {
        check_batch(batch)?;
        self.first_engine("time")?.kernel_only(batch, reps)
    }

    /// [`chainsig_core::Backend::verify_messages`] (SM3 on the GPU) with wall-clock time in milliseconds.
    pub fn verify_messages_timed(
        &self,
        batch: &MessageBatch,
    ) -> Result<(Bitmap, f64), BackendError> {
        let mut e = self.first_engine("verify")?;
        e.load(crate::engine::Needs::Sm3)?; // compiled or loaded before the clock starts
        let t = Instant::now();
        let map = e.verify_messages(batch)?;
        Ok((map, t.elapsed().as_secs_f64() * 1e3))
    }

    /// Verifies signatures by known signers, verdict i for record i, with wall-clock time in
    /// milliseconds. Fails if a record names a signer that is not loaded.
    pub fn verify_signed_timed(&self, batch: &SignerBatch) -> Result<(Bitmap, f64), BackendError> {
        let e = self.first_engine("verify")?;
        let t = Instant::now();
        let map = e.verify_signed(batch)?;
        Ok((map, t.elapsed().as_secs_f64() * 1e3))
    }

    /// Verifies records that carry their keys, those of loaded known signers through their tables
    /// and the rest as usual; verdict i is record i. With wall-clock time in milliseconds, the
    /// lookups included.
    pub fn verify_known_timed(&self, batch: &Batch) -> Result<(Bitmap, f64), BackendError> {
        check_batch(batch)?;
        let e = self.first_engine("verify")?;
        let t = Instant::now();
        let map = e.verify_known(batch)?;
        Ok((map, t.elapsed().as_secs_f64() * 1e3))
    }

    /// [`chainsig_core::Backend::recover_batch`] with wall-clock time in milliseconds (the kernels loaded and
    /// checked first, outside the clock).
    pub fn recover_timed(
        &self,
        items: &[RecoverItem],
    ) -> Result<(Vec<Option<Recovered>>, f64), BackendError> {
        let mut e = self.first_engine("recover")?;
        e.ecdsa(Algorithm::Secp256k1)?;
        let t = Instant::now();
        let keys = e.recover(items)?;
        Ok((keys, t.elapsed().as_secs_f64() * 1e3))
    }

    /// End-to-end verification with wall-clock time in milliseconds (SM2 through the default
    /// kernel, known signers or not; ECDSA through the curve's kernels).
    pub fn verify_timed(&self, batch: &Batch) -> Result<(Bitmap, f64), BackendError> {
        check_batch(batch)?;
        let mut e = self.first_engine("verify")?;
        if batch.alg() != Algorithm::Sm2 {
            e.ecdsa(batch.alg())?; // loaded and checked before the clock starts
        }
        let t = Instant::now();
        let map = match batch.alg() {
            Algorithm::Sm2 => e.verify(batch)?,
            _ => e.verify_ecdsa(batch, 0..batch.len())?,
        };
        Ok((map, t.elapsed().as_secs_f64() * 1e3))
    }
}
