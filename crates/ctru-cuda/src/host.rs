//! The host build of the kernel arithmetic (kernels/host_shim.cpp over kernels/ctru_mul.cuh): the same
//! routines the GPU runs, looped in order on the CPU. Used by the CI tests to check the kernels'
//! arithmetic against the Rust schoolbook reference without a GPU.

use crate::{prepare, rows, Error, Method, NttDeviceTables, NttParamsC, Product};
use chainsig_ctru::ParamSet;

extern "C" {
    fn ctru_host_school(
        prod: i32,
        n: i32,
        m: i32,
        shared: *const i16,
        batch: *const i16,
        count: i32,
        out: *mut i16,
    );
    fn ctru_host_ntt(
        prod: i32,
        p: *const NttParamsC,
        tw: *const u32,
        hat: *const u32,
        batch: *const i16,
        count: i32,
        m: i32,
        out: *mut i16,
    ) -> i32;
    pub(crate) fn ctru_host_tc(
        prod: i32,
        n: i32,
        q: i32,
        m: i32,
        shared: *const i16,
        batch: *const i16,
        count: i32,
        out: *mut i16,
    );
}

/// `shared · batch[i]` for every i by `method`'s kernel arithmetic on the host. Results in [0, m)
/// for m = q or q2.
pub fn mul_batch<P: AsRef<[i32]>>(
    set: ParamSet,
    method: Method,
    product: Product,
    shared: &[i32],
    batch: &[P],
) -> Result<Vec<Vec<i32>>, Error> {
    let prep = prepare(set, product, shared, batch)?;
    let p = set.params();
    let m = product.modulus(set);
    let mut out = vec![0i16; prep.batch.len()];
    let count = prep.count as i32;
    match method {
        // SAFETY (all three): the buffers hold n, count·n and count·n values as the shim reads them.
        Method::Schoolbook => unsafe {
            ctru_host_school(
                product.code(),
                p.n as i32,
                m,
                prep.shared.as_ptr(),
                prep.batch.as_ptr(),
                count,
                out.as_mut_ptr(),
            )
        },
        Method::Ntt => {
            let t = NttDeviceTables::new(set)?;
            let hat = t.shared_transform(set, &prep.shared);
            // SAFETY: as above; tw and hat are the tables the params describe.
            let rc = unsafe {
                ctru_host_ntt(
                    product.code(),
                    &t.params,
                    t.words.as_ptr(),
                    hat.as_ptr(),
                    prep.batch.as_ptr(),
                    count,
                    m,
                    out.as_mut_ptr(),
                )
            };
            if rc != 0 {
                return Err(Error::unavailable("leaf length without a routine"));
            }
        }
        Method::TensorCore => unsafe {
            ctru_host_tc(
                product.code(),
                p.n as i32,
                p.q,
                m,
                prep.shared.as_ptr(),
                prep.batch.as_ptr(),
                count,
                out.as_mut_ptr(),
            )
        },
    }
    Ok(rows(&out, p.n))
}
