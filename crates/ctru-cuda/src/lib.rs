//! chainsig-ctru-cuda: CTRU-Prime polynomial products, and the whole KEM, in batch on an NVIDIA GPU.
//!
//! A batch of products `shared · batch[i]` in Z[x]/(x^n − x − 1) with one operand shared by the whole
//! batch, in the two forms the KEM takes:
//!
//! * [`Product::ModQ`]: σ = h·r mod q (encapsulation): the shared h is any integers (taken mod q), the
//!   batch holds small r with |r_i| ≤ [`small_limit`];
//! * [`Product::ModQ2`]: w = c·f mod q2 (decapsulation): the shared f is small (|f_i| ≤ [`small_limit`]),
//!   the batch holds any integers c (taken mod q2).
//!
//! The limits are those of `chainsig_ctru::ntt::NttMultiplier` (n·max|large|·max|small| < Q/2), so all
//! three methods ([`Method`]) are exact on every input they accept, and the CPU NTT is their reference
//! peer. Results are in [0, q) resp. [0, q2).
//!
//! **Why hand-written.** No Rust or CUDA library multiplies in this ring: cuFFT/cuBLAS work in floating
//! point or plain GEMM, and the product must be exact modulo q (prime) and q2 with the x^n = x + 1 fold.
//! The kernels are CUDA C strings compiled at run time by NVRTC through chainsig-gpu's compiler and
//! CUBIN cache ([`kernel`]); their arithmetic (kernels/ctru_mul.cuh) also compiles as host C++
//! (build.rs, kernels/host_shim.cpp) so CI checks it against `chainsig_ctru`'s schoolbook product
//! without a GPU ([`host`]).
//!
//! * [`Method::Schoolbook`]: CUDA cores, one block per product, both operands and the linear product
//!   in shared memory.
//! * [`Method::Ntt`]: CUDA cores, the incomplete NTT of `chainsig_ctru::ntt` with the same tables,
//!   one block per product and every layer fused in one kernel; the shared operand is transformed once
//!   on the host.
//! * [`Method::TensorCore`]: the shared operand as an n × n integer matrix (columns x^j·a after one
//!   fold), the batch as the other dimension, int8 WMMA 16 × 16 × 16 with int32 accumulation and
//!   coefficients split into 8-bit digits as the README works out.
//!
//! [`GpuPolyMul`] runs them on a device; without a driver or GPU it returns
//! [`GpuError::Unavailable`].
//!
//! Modules:
//! - [`products`]: the product API, [`GpuPolyMul`] (one context, stream and module; the three
//!   methods' kernels launched in stream order).
//! - [`kem_host`]: the KEM API: [`HostKem`] (the kernels' KEM steps compiled for the host, for
//!   CI), the key material and parameters both paths share, and [`GpuKem`]'s re-export.
//! - `kem_pipeline` (private): [`GpuKem`], the KEM pipeline on the device (one stream, pinned
//!   inputs and outputs).
//! - `device_common` (private): what both device pipelines share: opening the device and the
//!   module, the Tensor Core product, launch shapes.
//! - [`kernel`]: the CUDA source of the module and its compilation (chainsig-gpu).
//! - [`host`]: the product arithmetic compiled for the host (CI checks without a GPU).
//! - this file: [`Method`], [`Product`], the input limits and their checks ([`prepare`]), the
//!   NTT tables for the device, and [`Error`].
//!
//! The timing hooks (`GpuPolyMul::time_batch`, `GpuKem::time_encaps` / `time_decaps`) are behind
//! the `bench` feature, which chainsig-bench enables.

mod device_common;
pub mod host;
pub mod kem_host;
mod kem_pipeline;
pub mod kernel;
pub mod products;

use chainsig_ctru::ntt::multiplier;
use chainsig_ctru::ParamSet;

/// The GPU runtime's error (chainsig-gpu), carried by [`Error::Gpu`].
pub use chainsig_gpu::Error as GpuError;
pub use kem_host::{GpuKem, HostKem, KemTiming};
pub use products::{GpuPolyMul, Timing};

/// How the products are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// CUDA cores, schoolbook in shared memory (the simple baseline).
    Schoolbook,
    /// CUDA cores, incomplete NTT with fused layers.
    Ntt,
    /// Tensor Cores, int8 digits with int32 accumulation.
    TensorCore,
}

impl Method {
    /// All three, in the order they were built.
    pub const ALL: [Method; 3] = [Method::Schoolbook, Method::Ntt, Method::TensorCore];

    /// A short name for tables and files.
    pub fn name(self) -> &'static str {
        match self {
            Method::Schoolbook => "cuda-schoolbook",
            Method::Ntt => "cuda-ntt",
            Method::TensorCore => "tensor-core",
        }
    }
}

/// Serialised as its [`Method::name`].
impl serde::Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Which product, hence which modulus and which operand is small.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Product {
    /// h·r mod q: shared operand large (any integers), batch small.
    ModQ,
    /// c·f mod q2: shared operand small, batch large (any integers).
    ModQ2,
}

impl Product {
    /// Both products.
    pub const ALL: [Product; 2] = [Product::ModQ, Product::ModQ2];

    pub(crate) fn code(self) -> i32 {
        match self {
            Product::ModQ => 0,
            Product::ModQ2 => 1,
        }
    }

    /// The output modulus for a parameter set.
    pub fn modulus(self, set: ParamSet) -> i32 {
        match self {
            Product::ModQ => set.params().q,
            Product::ModQ2 => set.params().q2,
        }
    }

    /// A short name for tables and files.
    pub fn name(self) -> &'static str {
        match self {
            Product::ModQ => "mod-q",
            Product::ModQ2 => "mod-q2",
        }
    }
}

/// Serialised as its [`Product::name`].
impl serde::Serialize for Product {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What went wrong. Inputs are public polynomials; no error carries coefficient values beyond the one
/// magnitude that broke a limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The GPU runtime's failure, as chainsig-gpu reports it: no usable GPU, driver or NVRTC
    /// ([`GpuError::Unavailable`]), or a driver call that failed ([`GpuError::Device`]).
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// An operand had the wrong number of coefficients.
    #[error("{field}: expected {expected} coefficients, got {got}")]
    WrongDegree {
        /// `shared` or `batch[i]`.
        field: String,
        /// n.
        expected: usize,
        /// The number given.
        got: usize,
    },
    /// A small operand's coefficient is outside the range where every method is exact.
    #[error("{field}: coefficient {index} has magnitude {got}, above the limit {limit}")]
    OutOfRange {
        /// `shared` or `batch[i]`.
        field: String,
        /// The coefficient's position.
        index: usize,
        /// The largest magnitude allowed.
        limit: i32,
        /// The magnitude found.
        got: i64,
    },
    /// The batch is empty or too large.
    #[error("batch: {0}")]
    Batch(String),
    /// A byte string (key, ciphertext) had the wrong length or parameter set.
    #[error("{field}: expected {expected} bytes of {set}, got {got}")]
    WrongLength {
        /// `pk`, `sk` or `ct[i]`.
        field: String,
        /// The parameter set the batch runs.
        set: ParamSet,
        /// The length that set requires.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A key did not fit the operation: decapsulation without a secret key, or an sk whose embedded
    /// pk differs from the pk given. Carries no key material.
    #[error("{field}: {reason}")]
    Key {
        /// `pk` or `sk`.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl Error {
    /// No usable GPU here, for the reason given.
    pub fn unavailable(reason: impl Into<String>) -> Error {
        Error::Gpu(GpuError::Unavailable(reason.into()))
    }
}

/// Most instances one call takes (every index in the kernels then fits in 32 bits).
pub const MAX_BATCH: usize = 1 << 20;

/// The largest |coefficient| of the small operand (the batch for [`Product::ModQ`], the shared operand
/// for [`Product::ModQ2`]). The CPU NTT's exactness bound; for mod q2 also capped at 63 so the Tensor
/// Core matrix entries (at most two coefficients of f) fit int8. Covers η and every unpacked secret key.
pub fn small_limit(set: ParamSet, product: Product) -> i32 {
    let m = multiplier(set);
    match product {
        Product::ModQ => m.small_limit_q(),
        Product::ModQ2 => m.small_limit_q2().min(63),
    }
}

/// Operands checked and centered as every kernel expects them (i16, row per instance).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// The shared operand, n coefficients.
    pub shared: Vec<i16>,
    /// The batch, count·n coefficients.
    pub batch: Vec<i16>,
    /// Instances in the batch.
    pub count: usize,
}

fn center_q(v: i32, q: i32) -> i16 {
    let r = v.rem_euclid(q);
    (if r > (q - 1) / 2 { r - q } else { r }) as i16
}

fn center_q2(v: i32, q2: i32) -> i16 {
    let r = v & (q2 - 1);
    (if r >= q2 / 2 { r - q2 } else { r }) as i16
}

fn check_degree(field: impl Fn() -> String, n: usize, got: usize) -> Result<(), Error> {
    if got != n {
        return Err(Error::WrongDegree {
            field: field(),
            expected: n,
            got,
        });
    }
    Ok(())
}

fn small(
    field: &dyn Fn() -> String,
    v: &[i32],
    limit: i32,
    out: &mut Vec<i16>,
) -> Result<(), Error> {
    for (index, &c) in v.iter().enumerate() {
        if (c as i64).abs() > limit as i64 {
            return Err(Error::OutOfRange {
                field: field(),
                index,
                limit,
                got: (c as i64).abs(),
            });
        }
        out.push(c as i16);
    }
    Ok(())
}

/// Checks degrees and ranges and centers the operands (see [`Product`]).
pub fn prepare<P: AsRef<[i32]>>(
    set: ParamSet,
    product: Product,
    shared: &[i32],
    batch: &[P],
) -> Result<Prepared, Error> {
    let p = set.params();
    let n = p.n;
    if batch.is_empty() {
        return Err(Error::Batch("no instances".into()));
    }
    if batch.len() > MAX_BATCH {
        return Err(Error::Batch(format!(
            "{} instances, at most {MAX_BATCH} per call",
            batch.len()
        )));
    }
    check_degree(|| "shared".into(), n, shared.len())?;
    for (i, b) in batch.iter().enumerate() {
        check_degree(|| format!("batch[{i}]"), n, b.as_ref().len())?;
    }
    let limit = small_limit(set, product);
    let mut s = Vec::with_capacity(n);
    let mut b = Vec::with_capacity(n * batch.len());
    match product {
        Product::ModQ => {
            s.extend(shared.iter().map(|&v| center_q(v, p.q)));
            for (i, poly) in batch.iter().enumerate() {
                small(&|| format!("batch[{i}]"), poly.as_ref(), limit, &mut b)?;
            }
        }
        Product::ModQ2 => {
            small(&|| "shared".into(), shared, limit, &mut s)?;
            for poly in batch {
                b.extend(poly.as_ref().iter().map(|&v| center_q2(v, p.q2)));
            }
        }
    }
    Ok(Prepared {
        shared: s,
        batch: b,
        count: batch.len(),
    })
}

/// The `ctru_ntt_params` struct of kernels/ctru_types.h, field for field.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NttParamsC {
    pub prime: u32,
    pub neg_q_inv: u32,
    pub final_w: u32,
    pub final_ws: u32,
    pub n: i32,
    pub len: i32,
    pub leaf_len: i32,
    pub leaves: i32,
    pub num_layers: i32,
    pub zeta_off: i32,
    /// Per layer: radix, block length, first forward pair, first inverse pair.
    pub layer: [[i32; 4]; MAX_LAYERS],
}

/// `CTRU_MAX_LAYERS` of kernels/ctru_types.h.
pub const MAX_LAYERS: usize = 12;

// SAFETY: a plain #[repr(C)] struct of 4-byte integers, laid out as the kernel's ctru_ntt_params.
unsafe impl chainsig_gpu::cudarc::driver::DeviceRepr for NttParamsC {}

/// The NTT constants of `chainsig_ctru::ntt` in the kernels' format: the parameter struct and one word
/// table (forward pairs of every layer, inverse pairs of every layer, then the leaf ζ values).
#[derive(Debug, Clone)]
pub struct NttDeviceTables {
    /// Passed by value to the kernel.
    pub params: NttParamsC,
    /// Twiddle pairs (w, w_shoup) and leaf constants.
    pub words: Vec<u32>,
}

impl NttDeviceTables {
    /// Built from the CPU multiplier's own tables.
    pub fn new(set: ParamSet) -> Result<Self, Error> {
        let t = multiplier(set).tables();
        if t.layers.len() > MAX_LAYERS {
            return Err(Error::unavailable(format!(
                "{set}: {} NTT layers, the kernel takes at most {MAX_LAYERS}",
                t.layers.len()
            )));
        }
        if !matches!(t.leaf_len, 3 | 5 | 7) {
            return Err(Error::unavailable(format!(
                "{set}: leaf length {} has no kernel",
                t.leaf_len
            )));
        }
        let mut params = NttParamsC {
            prime: t.prime,
            neg_q_inv: t.neg_q_inv,
            final_w: t.final_scale[0],
            final_ws: t.final_scale[1],
            n: t.n as i32,
            len: t.len as i32,
            leaf_len: t.leaf_len as i32,
            leaves: (t.len / t.leaf_len) as i32,
            num_layers: t.layers.len() as i32,
            zeta_off: 0,
            layer: [[0; 4]; MAX_LAYERS],
        };
        let mut pairs: Vec<[u32; 2]> = Vec::new();
        for (l, layer) in t.layers.iter().enumerate() {
            if !matches!(layer.radix, 2 | 3) {
                return Err(Error::unavailable(format!(
                    "{set}: radix {} has no kernel",
                    layer.radix
                )));
            }
            params.layer[l] = [
                layer.radix as i32,
                layer.block_len as i32,
                pairs.len() as i32,
                0,
            ];
            pairs.extend(&layer.forward);
        }
        for (l, layer) in t.layers.iter().enumerate() {
            params.layer[l][3] = pairs.len() as i32;
            pairs.extend(&layer.inverse);
        }
        let mut words: Vec<u32> = pairs.iter().flatten().copied().collect();
        params.zeta_off = words.len() as i32;
        words.extend(&t.leaf_zeta_mont);
        Ok(NttDeviceTables { params, words })
    }

    /// The forward transform of the (centered) shared operand, computed once per batch on the host by
    /// the CPU multiplier itself; values in [0, 2Q).
    pub fn shared_transform(&self, set: ParamSet, shared: &[i16]) -> Vec<u32> {
        let m = multiplier(set);
        let prime = self.params.prime as i32;
        let mut v = vec![0u32; m.len()];
        for (t, &c) in v.iter_mut().zip(shared) {
            let c = c as i32;
            *t = (c + (prime & (c >> 31))) as u32;
        }
        m.forward(&mut v);
        v
    }
}

/// Rows of a flat result, as i32 polynomials.
pub(crate) fn rows(flat: &[i16], n: usize) -> Vec<Vec<i32>> {
    flat.chunks_exact(n)
        .map(|r| r.iter().map(|&v| v as i32).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_inputs_are_named() {
        let set = ParamSet::Ctru761;
        let n = set.params().n;
        let ok = vec![0i32; n];
        let short = vec![0i32; n - 1];
        assert!(matches!(
            prepare(set, Product::ModQ, &short, std::slice::from_ref(&ok)),
            Err(Error::WrongDegree { field, .. }) if field == "shared"
        ));
        assert!(matches!(
            prepare(set, Product::ModQ, &ok, &[ok.clone(), short]),
            Err(Error::WrongDegree { field, .. }) if field == "batch[1]"
        ));
        let mut big = ok.clone();
        big[5] = -(small_limit(set, Product::ModQ) + 1);
        assert!(matches!(
            prepare(set, Product::ModQ, &ok, &[ok.clone(), big.clone()]),
            Err(Error::OutOfRange { field, index: 5, .. }) if field == "batch[1]"
        ));
        big[5] = small_limit(set, Product::ModQ2) + 1;
        assert!(matches!(
            prepare(set, Product::ModQ2, &big, std::slice::from_ref(&ok)),
            Err(Error::OutOfRange { field, index: 5, .. }) if field == "shared"
        ));
        big[5] = i32::MIN;
        assert!(prepare(set, Product::ModQ, &ok, &[big]).is_err());
        assert!(matches!(
            prepare::<Vec<i32>>(set, Product::ModQ, &ok, &[]),
            Err(Error::Batch(_))
        ));
    }

    #[test]
    fn limits_cover_the_kem() {
        for set in ParamSet::ALL {
            let p = set.params();
            assert!(small_limit(set, Product::ModQ) >= p.eta);
            let (lo, hi) = p.unpacked_f_range();
            assert!(small_limit(set, Product::ModQ2) >= lo.abs().max(hi.abs()));
        }
    }
}
