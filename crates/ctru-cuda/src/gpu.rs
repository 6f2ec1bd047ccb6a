//! The products on a CUDA device through cudarc: one context and stream, one NVRTC module with every
//! kernel, device copies of the NTT tables. Kernels are launched in stream order; copies are the
//! synchronous cudarc ones.

use crate::kernel::{self, Resources};
use crate::{prepare, rows, Error, Method, NttDeviceTables, Prepared, Product};
use chainsig_ctru::ParamSet;
use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;

pub(crate) fn device_err(what: &'static str, e: impl std::fmt::Debug) -> Error {
    Error::Device {
        what,
        detail: format!("{e:?}"),
    }
}

/// A CUDA event for timing (the product and KEM benchmarks share these three calls).
pub(crate) fn new_event(ctx: &Arc<CudaContext>) -> Result<cudarc::driver::CudaEvent, Error> {
    ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(|e| device_err("cuEventCreate", e))
}

/// Records `event` on `stream`.
pub(crate) fn record(event: &cudarc::driver::CudaEvent, stream: &CudaStream) -> Result<(), Error> {
    event
        .record(stream)
        .map_err(|e| device_err("cuEventRecord", e))
}

/// Milliseconds from `a` to `b`.
pub(crate) fn elapsed_ms(
    a: &cudarc::driver::CudaEvent,
    b: &cudarc::driver::CudaEvent,
) -> Result<f64, Error> {
    a.elapsed_ms(b)
        .map(f64::from)
        .map_err(|e| device_err("cuEventElapsedTime", e))
}

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
    tc_matrix: CudaFunction,
    tc_batch: CudaFunction,
    tc_gemm: [CudaFunction; 2],
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
const TC_WARPS: u32 = 4;

fn pad32(x: usize) -> usize {
    x.div_ceil(32) * 32
}

impl GpuPolyMul {
    /// Opens device 0, compiles (or loads from the cache) the kernels and uploads the tables.
    /// [`Error::Unavailable`] when there is no driver, no device, no NVRTC (and no cached CUBIN), or the
    /// device has no int8 Tensor Cores for [`Method::TensorCore`].
    pub fn new(set: ParamSet, method: Method) -> Result<Self, Error> {
        Self::on_device(set, method, 0)
    }

    /// As [`Self::new`] on device `ordinal`.
    pub fn on_device(set: ParamSet, method: Method, ordinal: usize) -> Result<Self, Error> {
        if !chainsig_cuda::backend::driver_available() {
            return Err(Error::Unavailable(
                "no CUDA driver (libcuda.so) found on this machine".into(),
            ));
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| Error::Unavailable(format!("cannot open CUDA device {ordinal}: {e:?}")))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| device_err("compute capability", e))?;
        if method == Method::TensorCore && (major, minor) < (7, 2) {
            return Err(Error::Unavailable(format!(
                "sm_{major}{minor} has no int8 Tensor Cores (sm_72 or later needed)"
            )));
        }
        let arch = format!("sm_{major}{minor}");
        let compiled = kernel::compile(&arch).map_err(Error::Unavailable)?;
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.clone()))
            .map_err(|e| device_err("cuModuleLoadData", e))?;
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| device_err("cuModuleGetFunction", e))
        };
        let leaf = set.params().ntt.leaf_len();
        let funcs = Funcs {
            school: [f("ctru_school_q")?, f("ctru_school_q2")?],
            ntt: [
                f(&format!("ctru_ntt_q_b{leaf}"))?,
                f(&format!("ctru_ntt_q2_b{leaf}"))?,
            ],
            tc_matrix: f("ctru_tc_matrix")?,
            tc_batch: f("ctru_tc_batch")?,
            tc_gemm: [f("ctru_tc_gemm_q")?, f("ctru_tc_gemm_q2")?],
        };
        let stream = ctx.default_stream();
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
            ctx,
            stream,
            _module: module,
            funcs,
            ntt,
            resources: kernel::parse_resources(&compiled.log),
            arch,
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
    pub fn time_batch<P: AsRef<[i32]>>(
        &self,
        product: Product,
        shared: &[i32],
        batch: &[P],
        reps: usize,
    ) -> Result<Timing, Error> {
        let prep = prepare(self.set, product, shared, batch)?;
        let mut buf = self.alloc(&prep)?;
        let (start, end) = (new_event(&self.ctx)?, new_event(&self.ctx)?);
        let rec = |e: &cudarc::driver::CudaEvent| record(e, &self.stream);
        let elapsed = elapsed_ms;
        rec(&start)?;
        self.setup(product, &prep, &mut buf)?;
        rec(&end)?;
        let setup_ms = elapsed(&start, &end)?;
        self.upload(&prep, &mut buf)?;
        let reps = reps.max(1);
        let mut kernel = Vec::with_capacity(reps);
        for i in 0..=reps {
            rec(&start)?;
            self.run_kernels(product, prep.count, &mut buf)?;
            rec(&end)?;
            let t = elapsed(&start, &end)?;
            if i > 0 {
                kernel.push(t);
            }
        }
        let mut host_out = vec![0i16; prep.batch.len()];
        let mut e2e = Vec::with_capacity(reps);
        for i in 0..=reps {
            rec(&start)?;
            self.upload(&prep, &mut buf)?;
            self.run_kernels(product, prep.count, &mut buf)?;
            self.stream
                .memcpy_dtoh(&buf.out, &mut host_out)
                .map_err(|e| device_err("copy results", e))?;
            rec(&end)?;
            let t = elapsed(&start, &end)?;
            if i > 0 {
                e2e.push(t);
            }
        }
        Ok(Timing {
            kernel_ms: median(&mut kernel),
            end_to_end_ms: median(&mut e2e),
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
        let p = self.set.params();
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
            let np = pad32(p.n);
            let entries = (np * np) as u32;
            let cfg = LaunchConfig {
                grid_dim: (entries.div_ceil(THREADS), 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 4 * p.n as u32,
            };
            let (prod, n, npi, q) = (product.code(), p.n as i32, np as i32, p.q);
            let mut b = self.stream.launch_builder(&self.funcs.tc_matrix);
            b.arg(&prod)
                .arg(&buf.shared)
                .arg(&n)
                .arg(&npi)
                .arg(&q)
                .arg(&mut *a0)
                .arg(&mut *a1);
            // SAFETY: argument types and buffer sizes match ctru_tc_matrix.
            unsafe { b.launch(cfg) }.map_err(|e| device_err("launch ctru_tc_matrix", e))?;
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
                    .ok_or_else(|| Error::Unavailable("NTT tables not loaded".into()))?;
                let hat = buf
                    .hat
                    .as_ref()
                    .ok_or_else(|| Error::Unavailable("NTT transform buffer missing".into()))?;
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
                    .ok_or_else(|| Error::Unavailable("Tensor Core buffers missing".into()))?;
                let (np, bp) = (pad32(p.n), pad32(count));
                let prod = product.code();
                let (npi, bpi, cnt) = (np as i32, bp as i32, count as i32);
                let cfg = LaunchConfig {
                    grid_dim: (((np * bp) as u32).div_ceil(THREADS), 1, 1),
                    block_dim: (THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut b = self.stream.launch_builder(&self.funcs.tc_batch);
                b.arg(&prod)
                    .arg(&buf.batch)
                    .arg(&n)
                    .arg(&cnt)
                    .arg(&npi)
                    .arg(&bpi)
                    .arg(&mut *b0)
                    .arg(&mut *b1);
                // SAFETY: argument types and buffer sizes match ctru_tc_batch.
                unsafe { b.launch(cfg) }.map_err(|e| device_err("launch ctru_tc_batch", e))?;
                let warps = ((np / 32) * (bp / 32)) as u32;
                let cfg = LaunchConfig {
                    grid_dim: (warps.div_ceil(TC_WARPS), 1, 1),
                    block_dim: (32 * TC_WARPS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut b = self.stream.launch_builder(&self.funcs.tc_gemm[which]);
                b.arg(&*a0)
                    .arg(&*a1)
                    .arg(&*b0)
                    .arg(&*b1)
                    .arg(&mut buf.out)
                    .arg(&n)
                    .arg(&npi)
                    .arg(&cnt)
                    .arg(&bpi)
                    .arg(&m);
                // SAFETY: argument types and buffer sizes match ctru_tc_gemm_*.
                unsafe { b.launch(cfg) }.map_err(|e| device_err("launch ctru_tc_gemm", e))?;
            }
        }
        Ok(())
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
