//! What the product pipeline ([`crate::products::GpuPolyMul`]) and the KEM pipeline
//! ([`crate::kem_pipeline::GpuKem`]) share on a CUDA device, written once so the two cannot drift apart:
//! opening the device and loading the one NVRTC module, the Tensor Core product (digit matrix of
//! the shared operand, digits of the batch, the int8 GEMM), and the Tensor Core product; CUDA events and driver errors come from chainsig-gpu.
//!
//! Hand-written over cudarc because both pipelines launch this crate's own kernels (kernels/*.cuh)
//! with their exact argument lists; there is no library for this ring's products.

use crate::kernel;
use crate::Error;
use chainsig_ctru::params::Params;
use chainsig_gpu::cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use chainsig_gpu::Resources;
use std::sync::Arc;

/// chainsig-gpu's driver error ([`chainsig_gpu::device_err`]) as this crate's [`crate::GpuError::Device`].
pub(crate) fn device_err(what: &'static str, e: impl std::fmt::Debug) -> Error {
    chainsig_gpu::device_err(what, e).into()
}

/// `x` rounded up to a multiple of 32: the Tensor Core matrices' padded dimension.
pub(crate) fn pad32(x: usize) -> usize {
    x.div_ceil(32) * 32
}

/// Threads per block of the one-thread-per-element kernels.
pub(crate) const FLAT_THREADS: u32 = 256;

/// Warps per block of the GEMM kernels (`CTRU_TC_WARPS` of kernels/ctru_kernels.cuh).
const TC_WARPS: u32 = 4;

/// One thread per element of `total`, `threads` to a block (at least one block).
pub(crate) fn flat(total: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((total as u32).div_ceil(threads).max(1), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// An opened device: its context, the crate's kernel module and what ptxas said about it.
pub(crate) struct Device {
    pub ctx: Arc<CudaContext>,
    pub module: Arc<CudaModule>,
    /// e.g. "sm_90".
    pub arch: String,
    pub resources: Vec<Resources>,
}

impl Device {
    /// Opens device `ordinal` and loads the module for its architecture (compiled by NVRTC, or
    /// from the CUBIN cache). With `need_tensor_cores`, a device below sm_72 (no int8 Tensor Cores)
    /// is [`crate::GpuError::Unavailable`], as are a missing driver, device or NVRTC.
    pub fn open(ordinal: usize, need_tensor_cores: bool) -> Result<Device, Error> {
        let chainsig_gpu::Opened {
            ctx,
            capability: (major, minor),
            arch,
        } = chainsig_gpu::open(ordinal)?;
        if need_tensor_cores && (major, minor) < (7, 2) {
            return Err(Error::unavailable(format!(
                "sm_{major}{minor} has no int8 Tensor Cores (sm_72 or later needed)"
            )));
        }
        let compiled = kernel::compile(&arch).map_err(Error::unavailable)?;
        let module = ctx
            .load_module(chainsig_gpu::cudarc::nvrtc::Ptx::from_binary(
                compiled.cubin.clone(),
            ))
            .map_err(|e| device_err("cuModuleLoadData", e))?;
        Ok(Device {
            ctx,
            module,
            arch,
            resources: chainsig_gpu::parse_resources(&compiled.log),
        })
    }

    /// The kernel `name` of the module.
    pub fn function(&self, name: &str) -> Result<CudaFunction, Error> {
        self.module
            .load_function(name)
            .map_err(|e| device_err("cuModuleGetFunction", e))
    }
}

/// The Tensor Core product of one parameter set on one stream: `ctru_tc_matrix` builds the digit
/// matrices of a shared operand once; `ctru_tc_batch` and `ctru_tc_gemm_q` / `_q2` multiply a batch
/// by them.
pub(crate) struct TensorCore {
    params: &'static Params,
    stream: Arc<CudaStream>,
    matrix: CudaFunction,
    batch: CudaFunction,
    /// Indexed by the product code (0: mod q, 1: mod q2).
    gemm: [CudaFunction; 2],
}

impl TensorCore {
    /// The kernels of `device` for `params`, launched on `stream`.
    pub fn new(
        device: &Device,
        params: &'static Params,
        stream: Arc<CudaStream>,
    ) -> Result<TensorCore, Error> {
        Ok(TensorCore {
            params,
            stream,
            matrix: device.function("ctru_tc_matrix")?,
            batch: device.function("ctru_tc_batch")?,
            gemm: [
                device.function("ctru_tc_gemm_q")?,
                device.function("ctru_tc_gemm_q2")?,
            ],
        })
    }

    /// Launches the matrix of the centered shared operand `shared` (n coefficients on the device)
    /// for product `prod` into its digits `a0`, `a1` (n_pad² each; mod q2 leaves `a1` untouched).
    pub fn matrix(
        &self,
        prod: i32,
        shared: &CudaSlice<i16>,
        a0: &mut CudaSlice<i8>,
        a1: &mut CudaSlice<i8>,
    ) -> Result<(), Error> {
        let p = self.params;
        let np = pad32(p.n);
        let cfg = LaunchConfig {
            shared_mem_bytes: 4 * p.n as u32,
            ..flat(np * np, FLAT_THREADS)
        };
        let (n, npi, q) = (p.n as i32, np as i32, p.q);
        let mut b = self.stream.launch_builder(&self.matrix);
        b.arg(&prod)
            .arg(shared)
            .arg(&n)
            .arg(&npi)
            .arg(&q)
            .arg(&mut *a0)
            .arg(&mut *a1);
        // SAFETY: argument types and buffer sizes match ctru_tc_matrix.
        unsafe { b.launch(cfg) }.map_err(|e| device_err("launch ctru_tc_matrix", e))?;
        Ok(())
    }

    /// Launches `out = matrix · batch[i]` for the `count` centered instances of `batch`, reduced
    /// mod q (`prod` 0) or q2 (1): the batch's digits into `digits` (n_pad × pad32(count) each),
    /// then the GEMM against the shared operand's digit matrices `matrix` (from [`Self::matrix`]).
    pub fn product(
        &self,
        prod: i32,
        batch: &CudaSlice<i16>,
        count: usize,
        matrix: [&CudaSlice<i8>; 2],
        digits: [&mut CudaSlice<i8>; 2],
        out: &mut CudaSlice<i16>,
    ) -> Result<(), Error> {
        let p = self.params;
        let (np, bp) = (pad32(p.n), pad32(count));
        let (n, npi, bpi, cnt) = (p.n as i32, np as i32, bp as i32, count as i32);
        let m = if prod == 0 { p.q } else { p.q2 };
        let [b0, b1] = digits;
        let mut b = self.stream.launch_builder(&self.batch);
        b.arg(&prod)
            .arg(batch)
            .arg(&n)
            .arg(&cnt)
            .arg(&npi)
            .arg(&bpi)
            .arg(&mut *b0)
            .arg(&mut *b1);
        // SAFETY: argument types and buffer sizes match ctru_tc_batch.
        unsafe { b.launch(flat(np * bp, FLAT_THREADS)) }
            .map_err(|e| device_err("launch ctru_tc_batch", e))?;
        let warps = ((np / 32) * (bp / 32)) as u32;
        let cfg = LaunchConfig {
            grid_dim: (warps.div_ceil(TC_WARPS), 1, 1),
            block_dim: (32 * TC_WARPS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.stream.launch_builder(&self.gemm[prod as usize]);
        b.arg(matrix[0])
            .arg(matrix[1])
            .arg(&*b0)
            .arg(&*b1)
            .arg(out)
            .arg(&n)
            .arg(&npi)
            .arg(&cnt)
            .arg(&bpi)
            .arg(&m);
        // SAFETY: argument types and buffer sizes match ctru_tc_gemm_*.
        unsafe { b.launch(cfg) }.map_err(|e| device_err("launch ctru_tc_gemm", e))?;
        Ok(())
    }
}
