//! The checks a module passes on this GPU before it gives a verdict: its field products against
//! the host build of the same arithmetic (every open, and every ECDSA module's load), and an
//! ECDSA module's verdicts and recovered keys on fresh records (edge cases first) against the
//! references. A kernel miscompiled for a device thus never answers.

use super::ecdsa::{ecdsa_gtable, ecdsa_host_curve};
use super::{Engine, Rows, Work};
use crate::backend::unavailable;
use crate::codegen::Words;
use crate::host;
use crate::stage::sec1;
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::BackendError;
use chainsig_gpu::cudarc::driver::{result, CudaFunction, LaunchConfig, PushKernelArg};
use chainsig_gpu::{device_err, DevBuf};

/// Operand pairs of the field self-test run at every open (edge values first, then random).
pub(super) const SELF_TEST_ITEMS: usize = 4096;

impl Engine {
    /// The SM2 module's field arithmetic against the host build's: a product miscompiled for this
    /// device must never produce a verdict.
    pub(super) fn check_field_arithmetic(&self) -> Result<(), BackendError> {
        let (a, b) = host::field_check_inputs(host::HostCurve::Sm2, SELF_TEST_ITEMS, 0x5e1f_7e57);
        let got = self.field_check(&self.check, &a, &b)?;
        if let Some(diff) = host::field_check_compare(host::HostCurve::Sm2, &a, &b, &got).first() {
            return Err(unavailable(format!(
                "the GPU's field arithmetic disagrees with the host build ({}): {diff}",
                self.cfg.kernel.name()
            )));
        }
        Ok(())
    }

    /// The main module's `cs_field_check` over operand pairs (the `bench` feature's hook).
    #[cfg(feature = "bench")]
    pub(crate) fn field_check_main(
        &self,
        a: &[Words],
        b: &[Words],
    ) -> Result<Vec<[u32; 48]>, BackendError> {
        self.field_check(&self.check, a, b)
    }

    /// Runs a module's `cs_field_check` over operand pairs: 48 result words per pair (see
    /// kernels.cuh).
    pub(crate) fn field_check(
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
            result::memcpy_htod_sync(da.ptr(), &ha).map_err(|e| device_err("copy in", e))?;
            result::memcpy_htod_sync(db.ptr(), &hb).map_err(|e| device_err("copy in", e))?;
        }
        let slots = self.slots.take()?;
        let stream = &slots[0].stream;
        let cfg = LaunchConfig {
            grid_dim: ((n as u32).div_ceil(128), 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        let (pa, pb, cnt, po) = (da.ptr(), db.ptr(), n as u32, dout.ptr());
        let mut launch = stream.launch_builder(check);
        launch.arg(&pa).arg(&pb).arg(&cnt).arg(&po);
        // SAFETY: argument types match cs_field_check; buffers are sized for n items.
        unsafe { launch.launch(cfg) }.map_err(|e| device_err("kernel launch", e))?;
        stream
            .synchronize()
            .map_err(|e| device_err("synchronize", e))?;
        let mut out = vec![0u32; n * 48];
        // SAFETY: sizes as allocated; the stream has finished.
        unsafe { result::memcpy_dtoh_sync(&mut out, dout.ptr()) }
            .map_err(|e| device_err("copy out", e))?;
        Ok(out
            .chunks_exact(48)
            .map(|c| c.try_into().expect("48 words"))
            .collect())
    }

    /// Verifies the known-answer records of `alg` (known_answers.rs: edge cases and generated
    /// records, valid and corrupted) under both rules and compares with their recorded verdicts:
    /// a kernel that has not yet run on a given GPU never gives a verdict unchecked.
    pub(crate) fn ecdsa_self_test(&mut self, alg: Algorithm) -> Result<(), BackendError> {
        let (records, verdicts) = crate::known_answers::ecdsa(alg);
        for low_s in [false, true] {
            let batch = crate::known_answers::batch(alg, low_s, &records);
            let map = self.run(Work::Ecdsa(Rows::all(&batch)))?;
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
}
