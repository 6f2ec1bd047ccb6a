//! The products on a CUDA device through cudarc: one context and stream, one NVRTC module with every
//! kernel, device copies of the NTT tables. Kernels are launched in stream order; copies are the
//! synchronous cudarc ones.

use crate::device_common::{device_err, pad32, Device, TensorCore};
use crate::{prepare, rows, Error, Method, NttDeviceTables, Prepared, Product};
use chainsig_ctru::ParamSet;
#[cfg(feature = "bench")]
use chainsig_gpu::cudarc::driver::CudaContext;
use chainsig_gpu::cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use chainsig_gpu::Resources;
use std::sync::Arc;

/// Median times of one batch size, in milliseconds, from CUDA events.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// The per-batch kernels alone, data already on the device (Tensor Cores: the batch digit split and
    /// the GEMM; NTT and schoolbook: their one kernel).
    pub kernel_ms: f64,
    /// Copy of the prepared i16 batch in (pageable memory), the kernels, copy of the i16 results out.
    /// The host-side checks and centering ([`crate::prepare`]) are not included.
    pub end_to_end_ms: f64,
    /// The per-shared-operand setup, once (schoolbook: upload; NTT: host transform and upload; Tensor
    /// Cores: matrix build on the device).
    pub setup_ms: f64,
    /// Timed repetitions behind each median (after one warm-up).
    pub runs: usize,
}

/// Batch products on one GPU with one method.
pub struct GpuPolyMul {
    set: ParamSet,
    method: Method,
    /// The context, for the timing hooks' events.
    #[cfg(feature = "bench")]
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    _module: Arc<CudaModule>,
    funcs: Funcs,
    ntt: Option<(NttDeviceTables, CudaSlice<u32>)>,
    resources: Vec<Resources>,
    arch: String,
}

struct Funcs {
    school: [CudaFunction; 2],
    ntt: [CudaFunction; 2],
    tc: TensorCore,
}

/// Device buffers of one call.
struct Buffers {
    shared: CudaSlice<i16>,
    batch: CudaSlice<i16>,
    out: CudaSlice<i16>,
    hat: Option<CudaSlice<u32>>,
    /// Tensor Cores: matrix digits a0, a1 and batch digits b0, b1.
    tc: Option<[CudaSlice<i8>; 4]>,
}

const THREADS: u32 = 256;

impl GpuPolyMul {
    /// Opens device 0, compiles (or loads from the cache) the kernels and uploads the tables.
    /// [`crate::GpuError::Unavailable`] when there is no driver, no device, no NVRTC (and no cached CUBIN), or the
    /// device has no int8 Tensor Cores for [`Method::TensorCore`].
    pub fn new(set: ParamSet, method: Method) -> Result<Self, Error> {
        Self::on_device(set, method, 0)
    }

    /// As [`Self::new`] on device `ordinal`.
    pub fn on_device(set: ParamSet, method: Method, ordinal: usize) -> Result<Self, Error> {
        let device = Device::open(ordinal, method == Method::TensorCore)?;
        let f = |name: &str| device.function(name);
        let leaf = set.params().ntt.leaf_len();
        let stream = device.ctx.default_stream();
        let funcs = Funcs {
            school: [f("ctru_school_q")?, f("ctru_school_q2")?],
            ntt: [
                f(&format!("ctru_ntt_q_b{leaf}"))?,
                f(&format!("ctru_ntt_q2_b{leaf}"))?,
            ],
            tc: TensorCore::new(&device, set.params(), stream.clone())?,
        };
        let ntt = if method == Method::Ntt {
            let t = NttDeviceTables::new(set)?;
            let dev = stream
                .clone_htod(&t.words)
                .map_err(|e| device_err("upload NTT tables", e))?;
            Some((t, dev))
        } else {
            None
        };
        Ok(GpuPolyMul {
            set,
            method,
            #[cfg(feature = "bench")]
            ctx: device.ctx,
            stream,
            _module: device.module,
            funcs,
            ntt,
            resources: device.resources,
            arch: device.arch,
        })
    }

    /// The parameter set.
    pub fn set(&self) -> ParamSet {
        self.set
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The device architecture, e.g. "sm_90".
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Registers, stack and spills per kernel, from ptxas.
    pub fn resources(&self) -> &[Resources] {
        &self.resources
    }

    /// `shared · batch[i]` for every i, on the GPU. Results in [0, q) or [0, q2).
    pub fn mul_batch<P: AsRef<[i32]>>(
        &self,
        product: Product,
        shared: &[i32],
        batch: &[P],
    ) -> Result<Vec<Vec<i32>>, Error> {
        let prep = prepare(self.set, product, shared, batch)?;
        let mut buf = self.alloc(&prep)?;
        self.setup(product, &prep, &mut buf)?;
        self.upload(&prep, &mut buf)?;
        self.run_kernels(product, prep.count, &mut buf)?;
        let out = self
            .stream
            .clone_dtoh(&buf.out)
            .map_err(|e| device_err("copy results", e))?;
        Ok(rows(&out, self.set.params().n))
    }

    /// Times one batch: `reps` timed runs (at least 10 recommended) after one warm-up, medians of CUDA
    /// event times for the kernels alone and for copy in + kernels + copy out; the setup once. Checks
    /// nothing: use [`Self::mul_batch`] for results.
    #[cfg(feature = "bench")]
    pub fn time_batch<P: AsRef<[i32]>>(
        &self,
        product: Product,
        shared: &[i32],
        batch: &[P],
        reps: usize,
    ) -> Result<Timing, Error> {
        let prep = prepare(self.set, product, shared, batch)?;
        let mut buf = self.alloc(&prep)?;
        let watch = chainsig_gpu::Stopwatch::new(&self.ctx, &self.stream)?;
        let setup_ms = watch.time(|| self.setup(product, &prep, &mut buf))?;
        self.upload(&prep, &mut buf)?;
        let reps = reps.max(1);
        // One warm-up run before each series.
        let kernel_ms =
            watch.median(1, reps, || self.run_kernels(product, prep.count, &mut buf))?;
        let mut host_out = vec![0i16; prep.batch.len()];
        let end_to_end_ms = watch.median(1, reps, || {
            self.upload(&prep, &mut buf)?;
            self.run_kernels(product, prep.count, &mut buf)?;
            self.stream
                .memcpy_dtoh(&buf.out, &mut host_out)
                .map_err(|e| device_err("copy results", e))
        })?;
        Ok(Timing {
            kernel_ms,
            end_to_end_ms,
            setup_ms,
            runs: reps,
        })
    }

    fn alloc(&self, prep: &Prepared) -> Result<Buffers, Error> {
        let n = self.set.params().n;
        let a = |len: usize| {
            self.stream
                .alloc_zeros::<i16>(len.max(1))
                .map_err(|e| device_err("cuMemAlloc", e))
        };
        let a8 = |len: usize| {
            self.stream
                .alloc_zeros::<i8>(len.max(1))
                .map_err(|e| device_err("cuMemAlloc", e))
        };
        let tc = if self.method == Method::TensorCore {
            let (np, bp) = (pad32(n), pad32(prep.count));
            Some([a8(np * np)?, a8(np * np)?, a8(np * bp)?, a8(np * bp)?])
        } else {
            None
        };
        let hat = match &self.ntt {
            Some((t, _)) => Some(
                self.stream
                    .alloc_zeros::<u32>(t.params.len as usize)
                    .map_err(|e| device_err("cuMemAlloc", e))?,
            ),
            None => None,
        };
        Ok(Buffers {
            shared: a(n)?,
            batch: a(prep.batch.len())?,
            out: a(prep.batch.len())?,
            hat,
            tc,
        })
    }

    /// Per-shared-operand work: upload it; NTT: its transform; Tensor Cores: its digit matrices.
    fn setup(&self, product: Product, prep: &Prepared, buf: &mut Buffers) -> Result<(), Error> {
        self.stream
            .memcpy_htod(&prep.shared, &mut buf.shared)
            .map_err(|e| device_err("copy shared operand", e))?;
        if let (Some((t, _)), Some(hat)) = (&self.ntt, buf.hat.as_mut()) {
            let h = t.shared_transform(self.set, &prep.shared);
            self.stream
                .memcpy_htod(&h, hat)
                .map_err(|e| device_err("copy shared transform", e))?;
        }
        if let Some([a0, a1, _, _]) = buf.tc.as_mut() {
            self.funcs.tc.matrix(product.code(), &buf.shared, a0, a1)?;
        }
        Ok(())
    }

    fn upload(&self, prep: &Prepared, buf: &mut Buffers) -> Result<(), Error> {
        self.stream
            .memcpy_htod(&prep.batch, &mut buf.batch)
            .map_err(|e| device_err("copy batch", e))
    }

    /// The per-batch kernels, in stream order.
    fn run_kernels(&self, product: Product, count: usize, buf: &mut Buffers) -> Result<(), Error> {
        let p = self.set.params();
        let (n, m) = (p.n as i32, product.modulus(self.set));
        let which = product.code() as usize;
        match self.method {
            Method::Schoolbook => {
                let cfg = LaunchConfig {
                    grid_dim: (count as u32, 1, 1),
                    block_dim: (THREADS, 1, 1),
                    shared_mem_bytes: 4 * (4 * p.n as u32 - 1),
                };
                let mut b = self.stream.launch_builder(&self.funcs.school[which]);
                b.arg(&buf.shared)
                    .arg(&buf.batch)
                    .arg(&mut buf.out)
                    .arg(&n)
                    .arg(&m);
                // SAFETY: argument types and buffer sizes match ctru_school_*.
                unsafe { b.launch(cfg) }.map_err(|e| device_err("launch ctru_school", e))?;
            }
            Method::Ntt => {
                let (t, tw) = self
                    .ntt
                    .as_ref()
                    .ok_or_else(|| Error::unavailable("NTT tables not loaded"))?;
                let hat = buf
                    .hat
                    .as_ref()
                    .ok_or_else(|| Error::unavailable("NTT transform buffer missing"))?;
                let cfg = LaunchConfig {
                    grid_dim: (count as u32, 1, 1),
                    block_dim: (THREADS, 1, 1),
                    shared_mem_bytes: 4 * t.params.len as u32,
                };
                let mut b = self.stream.launch_builder(&self.funcs.ntt[which]);
                b.arg(&t.params)
                    .arg(tw)
                    .arg(hat)
                    .arg(&buf.batch)
                    .arg(&mut buf.out)
                    .arg(&m);
                // SAFETY: argument types and buffer sizes match ctru_ntt_*.
                unsafe { b.launch(cfg) }.map_err(|e| device_err("launch ctru_ntt", e))?;
            }
            Method::TensorCore => {
                let [a0, a1, b0, b1] = buf
                    .tc
                    .as_mut()
                    .ok_or_else(|| Error::unavailable("Tensor Core buffers missing"))?;
                self.funcs.tc.product(
                    product.code(),
                    &buf.batch,
                    count,
                    [&*a0, &*a1],
                    [b0, b1],
                    &mut buf.out,
                )?;
            }
        }
        Ok(())
    }
}
