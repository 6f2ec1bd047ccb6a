//! Known signers on the engine: their fixed-base tables uploaded once, a batch's records split
//! into those of known signers (through their tables, `cs_verify_signed`) and the others (the
//! default kernel, or the host helper for a few), verdicts merged back in order. The tables and
//! the split themselves are [`crate::signers`].

use super::{Engine, KnownTables, Rows, Work};
use crate::backend::NAME;
use crate::raw::KnownEncodings;
#[cfg(feature = "bench")]
use crate::signers::SignerBatch;
use crate::signers::SignerTables;
use chainsig_core::backend::{Backend, BackendError};
use chainsig_core::batch::Batch;
use chainsig_core::bitmap::Bitmap;
use chainsig_gpu::cudarc::driver::result;
use chainsig_gpu::{device_err, DevBuf};

impl Engine {
    /// Replaces the known signers by those of `tables`.
    pub(crate) fn load_signers(&mut self, tables: &SignerTables) -> Result<(), BackendError> {
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
        unsafe { result::memcpy_htod_sync(buf.ptr(), words) }
            .map_err(|e| device_err("upload signer tables", e))?;
        self.ktabs = Some(KnownTables {
            buf,
            index: tables.index().clone(),
            encodings: KnownEncodings::new(tables.index()),
        });
        Ok(())
    }

    #[cfg(feature = "bench")]
    pub(crate) fn verify_signed(&self, batch: &SignerBatch) -> Result<Bitmap, BackendError> {
        let loaded = self.ktabs.as_ref().map_or(0, |t| t.index.len());
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
    pub(crate) fn verify_known(&self, batch: &Batch) -> Result<Bitmap, BackendError> {
        let Some(KnownTables { index, .. }) = &self.ktabs else {
            return self.verify(batch);
        };
        let split = crate::signers::Split::new(batch, index);
        if split.others.is_empty() {
            return self.run(Work::Signed(&split.known, None)); // every record known: in order
        }
        let (known, others) = self.known_and_others(
            Work::Signed(&split.known, None),
            Work::Records(Rows::all(&split.others), None),
            |host| host.verify_batch(&split.others),
        )?;
        Ok(split.merge(&known, &others))
    }

    /// Verifies the known signers' part of a batch on the GPU, and the rest. A rest small enough
    /// goes to the host helper, verified there while the GPU works: a GPU kernel for a few
    /// records still takes its whole latency (1.3 ms on the H200 when the helper was measured,
    /// about 1 ms with the small-batch kernels since) beside a known part of a few hundred
    /// microseconds. A larger rest runs on the GPU beside the known part, in one pipeline.
    pub(super) fn known_and_others(
        &self,
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
}
