//! ECDSA on the GPU (P-256 and secp256k1, FIPS 186-5 / SEC 1): a curve's module is compiled (or
//! taken from the cache), loaded and checked at the curve's first batch; its kernels verify under
//! either s rule and recover Ethereum's senders.

use super::{selftest, Engine, Needs, Rows, Work};
use crate::backend::{unavailable, NAME};
use crate::host;
use crate::kernels::{self, KernelConfig};
use crate::launch::Loaded;
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::BackendError;
use chainsig_core::batch::{Batch, RecoverItem, Recovered};
use chainsig_core::bitmap::Bitmap;
use chainsig_gpu::cudarc;
use chainsig_gpu::cudarc::driver::result;
use chainsig_gpu::{device_err, DevBuf};
/// A curve's ECDSA kernels (either s, and low-s) and its G table, loaded at the curve's first
/// batch ([`Engine::ecdsa`]).
pub(super) struct EcdsaKernels {
    pub(super) alg: Algorithm,
    /// The switches the module was compiled with (its layout and register cap).
    pub(super) config: KernelConfig,
    pub(super) any_s: Loaded,
    pub(super) low_s: Loaded,
    pub(super) recover: Loaded,
    pub(super) gtab: DevBuf,
}

impl EcdsaKernels {
    pub(super) fn kernel(&self, low_s: bool) -> &Loaded {
        if low_s {
            &self.low_s
        } else {
            &self.any_s
        }
    }
}

impl Engine {
    /// Loads the ECDSA module of `alg`'s curve (compiled by NVRTC or taken from the cache) and its
    /// G table on first use, and checks it: its field products against the host build's, then
    /// verdicts on fresh records against RustCrypto's. A failed check leaves it unloaded and
    /// reports why.
    pub(crate) fn ecdsa(&mut self, alg: Algorithm) -> Result<(), BackendError> {
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

    pub(super) fn load_ecdsa(&self, alg: Algorithm) -> Result<EcdsaKernels, BackendError> {
        let curve = ecdsa_host_curve(alg)?;
        self.ctx
            .bind_to_thread()
            .map_err(|e| device_err("bind context", e))?;
        let config = kernels::ecdsa_config(self.cfg.kernel.max_registers);
        let compiled =
            kernels::compile_ecdsa(curve.params(), &config, &self.arch).map_err(unavailable)?;
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
            load(kernels::ECDSA_KERNEL)?,
            load(kernels::ECDSA_LOW_S_KERNEL)?,
        );
        let recover = load(kernels::RECOVER_KERNEL)?;
        let check = module
            .load_function("cs_field_check")
            .map_err(|e| device_err("cuModuleGetFunction (ECDSA)", e))?;
        let (a, b) = host::field_check_inputs(curve, selftest::SELF_TEST_ITEMS, 0x9256);
        let got = self.field_check(&check, &a, &b)?;
        if let Some(diff) = host::field_check_compare(curve, &a, &b, &got).first() {
            return Err(unavailable(format!(
                "the GPU's {alg} field arithmetic disagrees with the host build: {diff}"
            )));
        }
        let table = ecdsa_gtable(alg)?;
        let gtab = DevBuf::new(table.len() * 4)?;
        // SAFETY: gtab holds exactly table.len() words; synchronous copy.
        unsafe { result::memcpy_htod_sync(gtab.ptr(), table) }
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

    /// Ethereum's sender recovery on secp256k1 (its module loaded first, [`Needs`]): the signer
    /// of item i, or None.
    pub(crate) fn recover(
        &self,
        items: &[RecoverItem],
    ) -> Result<Vec<Option<Recovered>>, BackendError> {
        self.require(Needs::Curve(Algorithm::Secp256k1))?;
        let mut out = self.pipeline(&[Work::Recover(Algorithm::Secp256k1, items)])?;
        Ok(out.signers.swap_remove(0))
    }

    /// ECDSA records `range` of `batch` (the curve's module loaded first, [`Needs`]), verdict i
    /// for record `range.start + i`, staged straight from the batch.
    pub(crate) fn verify_ecdsa(
        &self,
        batch: &Batch,
        range: std::ops::Range<usize>,
    ) -> Result<Bitmap, BackendError> {
        self.require(Needs::Curve(batch.alg()))?;
        self.run(Work::Ecdsa(Rows::part(batch, range)))
    }
}

/// The ECDSA kernels of `alg` among those [`Engine::ecdsa`] has loaded (a field borrow, so that
/// the pipeline can borrow the slots beside it).
pub(super) fn loaded_ecdsa(loaded: &[EcdsaKernels], alg: Algorithm) -> &EcdsaKernels {
    loaded
        .iter()
        .find(|k| k.alg == alg)
        .expect("loaded by Engine::ecdsa first")
}

/// The host build of `alg`'s ECDSA path, which builds its table and checks its field products.
pub(super) fn ecdsa_host_curve(alg: Algorithm) -> Result<host::HostCurve, BackendError> {
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
pub(super) fn ecdsa_gtable(alg: Algorithm) -> Result<&'static [u32], BackendError> {
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
