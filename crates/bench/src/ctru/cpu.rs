//! The CPU baselines: one CPU NTT product on the calling thread, and keygen / encaps / decaps per
//! second over a batch on one core and on every core of the rayon pool.

use super::*;
use chainsig_ctru::ntt::multiplier;
use chainsig_ctru::{decaps, encaps, keygen, OsRandom, ParamSet};
use chainsig_ctru_cuda::{small_limit, Error, GpuError, Product};
use chainsig_gpu::median;
use rand::Rng;
use rayon::prelude::*;
use serde::Serialize;
use std::time::Instant;

/// Products timed per CPU measurement (one product at n = 653 is a few microseconds).
const CPU_INNER: usize = 20;

/// Single-core CPU NTT product time in microseconds: the median of `reps` timings of 20 products
/// each, after 20 untimed ones. `shared` and `b` as for [`GpuPolyMul::mul_batch`].
pub fn cpu_ntt_us(
    set: ParamSet,
    product: Product,
    shared: &[i32],
    b: &[i32],
    reps: usize,
) -> Result<f64, Error> {
    let m = multiplier(set);
    let (large, small): (&[i32], &[i32]) = match product {
        Product::ModQ => (shared, b),
        Product::ModQ2 => (b, shared),
    };
    let limit = small_limit(set, product);
    let small: Vec<i8> = small
        .iter()
        .enumerate()
        .map(|(index, &v)| {
            if (v as i64).abs() > limit as i64 {
                Err(Error::OutOfRange {
                    field: "small operand".into(),
                    index,
                    limit,
                    got: (v as i64).abs(),
                })
            } else {
                Ok(v as i8)
            }
        })
        .collect::<Result<_, _>>()?;
    let run = || match product {
        Product::ModQ => m.mul_mod_q(large, &small),
        Product::ModQ2 => m.mul_mod_q2(large, &small),
    };
    let fail = |e: chainsig_ctru::Error| {
        Error::Gpu(GpuError::Device {
            what: "CPU NTT product",
            detail: e.to_string(),
        })
    };
    for _ in 0..CPU_INNER {
        std::hint::black_box(run().map_err(fail)?);
    }
    let mut t = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        let s = Instant::now();
        for _ in 0..CPU_INNER {
            std::hint::black_box(run().map_err(fail)?);
        }
        t.push(s.elapsed().as_secs_f64() * 1e6 / CPU_INNER as f64);
    }
    Ok(median(&mut t))
}

/// The single-core CPU NTT product of one set and product on random operands in range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuNttRow {
    pub n: usize,
    pub product: Product,
    pub us_per_product: f64,
    pub products_per_s: f64,
}

/// [`cpu_ntt_us`] for every set and both products, on fresh random operands.
pub fn cpu_ntt_rows(
    sets: &[ParamSet],
    reps: usize,
    rng: &mut impl Rng,
) -> Result<Vec<CpuNttRow>, Error> {
    let mut rows = Vec::new();
    for &set in sets {
        for product in Product::ALL {
            let (shared, batch) = random_operands(set, product, rng, 1);
            let us = cpu_ntt_us(set, product, &shared, &batch[0], reps)?;
            rows.push(CpuNttRow {
                n: set.params().n,
                product,
                us_per_product: us,
                products_per_s: 1e6 / us,
            });
        }
    }
    Ok(rows)
}

/// A KEM operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KemOp {
    Keygen,
    Encaps,
    Decaps,
}

impl KemOp {
    /// All three, in protocol order.
    pub const ALL: [KemOp; 3] = [KemOp::Keygen, KemOp::Encaps, KemOp::Decaps];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            KemOp::Keygen => "keygen",
            KemOp::Encaps => "encaps",
            KemOp::Decaps => "decaps",
        }
    }
}

/// One KEM operation over a batch on the CPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KemRow {
    pub n: usize,
    pub op: KemOp,
    /// 1, or the rayon pool's threads.
    pub threads: usize,
    pub batch: usize,
    pub runs: usize,
    /// Median wall time of the whole batch.
    pub median_ms: f64,
    /// Batch / median time.
    pub per_s: f64,
}

impl KemRow {
    /// The row for a batch of `batch` operations whose median wall time was `median_s` seconds.
    pub fn new(
        n: usize,
        op: KemOp,
        threads: usize,
        batch: usize,
        runs: usize,
        median_s: f64,
    ) -> KemRow {
        KemRow {
            n,
            op,
            threads,
            batch,
            runs,
            median_ms: median_s * 1e3,
            per_s: batch as f64 / median_s,
        }
    }
}

/// Times keygen, encaps and decaps of `batch` instances (OS randomness) on the calling thread
/// (`parallel` false) or across the rayon pool, one untimed run then `reps` timed ones; medians.
/// Every run checks that each decapsulated key equals the encapsulated one.
pub fn cpu_kem(
    set: ParamSet,
    batch: usize,
    reps: usize,
    parallel: bool,
) -> Result<Vec<KemRow>, String> {
    let n = set.params().n;
    if batch == 0 {
        return Err(format!("n = {n}: a KEM batch of 0 instances"));
    }
    let threads = if parallel {
        rayon::current_num_threads()
    } else {
        1
    };
    let reps = reps.max(1);
    let mut times: [Vec<f64>; 3] = Default::default();
    for run in 0..=reps {
        let ids: Vec<usize> = (0..batch).collect();
        let s = Instant::now();
        let keys: Vec<_> = if parallel {
            ids.par_iter().map(|_| keygen(set, &mut OsRandom)).collect()
        } else {
            ids.iter().map(|_| keygen(set, &mut OsRandom)).collect()
        };
        let t_keygen = s.elapsed().as_secs_f64();
        let s = Instant::now();
        let cts: Vec<_> = if parallel {
            keys.par_iter()
                .map(|(pk, _)| encaps(pk, &mut OsRandom))
                .collect()
        } else {
            keys.iter()
                .map(|(pk, _)| encaps(pk, &mut OsRandom))
                .collect()
        };
        let t_encaps = s.elapsed().as_secs_f64();
        let s = Instant::now();
        let sss: Vec<_> = if parallel {
            keys.par_iter()
                .zip(&cts)
                .map(|((_, sk), (ct, _))| decaps(sk, ct))
                .collect()
        } else {
            keys.iter()
                .zip(&cts)
                .map(|((_, sk), (ct, _))| decaps(sk, ct))
                .collect()
        };
        let t_decaps = s.elapsed().as_secs_f64();
        for (i, (got, (_, want))) in sss.iter().zip(&cts).enumerate() {
            match got {
                Ok(ss) if ss == want => {}
                Ok(_) => {
                    return Err(format!(
                    "n = {n}, instance {i}: the decapsulated key differs from the encapsulated one"
                ))
                }
                Err(e) => return Err(format!("n = {n}, instance {i}: decaps: {e}")),
            }
        }
        if run > 0 {
            times[0].push(t_keygen);
            times[1].push(t_encaps);
            times[2].push(t_decaps);
        }
    }
    Ok(KemOp::ALL
        .iter()
        .zip(times.iter_mut())
        .map(|(&op, t)| KemRow::new(n, op, threads, batch, reps, median(t)))
        .collect())
}

/// KEM rows as a text table: per n and thread count, keygen/encaps/decaps per second.
pub fn kem_table(rows: &[KemRow]) -> String {
    let mut out = format!(
        "{:>5} {:>7} {:>6} {:>12} {:>12} {:>12}\n",
        "n", "threads", "batch", "keygen/s", "encaps/s", "decaps/s"
    );
    let mut keys: Vec<(usize, usize, usize)> = Vec::new();
    for r in rows {
        if !keys.contains(&(r.n, r.threads, r.batch)) {
            keys.push((r.n, r.threads, r.batch));
        }
    }
    for (n, threads, batch) in keys {
        let rate = |op: KemOp| {
            rows.iter()
                .find(|r| (r.n, r.threads, r.batch, r.op) == (n, threads, batch, op))
                .map(|r| format!("{:>12.0}", r.per_s))
                .unwrap_or_else(|| format!("{:>12}", "-"))
        };
        out += &format!(
            "{n:>5} {threads:>7} {batch:>6} {} {} {}\n",
            rate(KemOp::Keygen),
            rate(KemOp::Encaps),
            rate(KemOp::Decaps)
        );
    }
    out
}

/// CPU NTT rows as a text table.
pub fn cpu_ntt_table(rows: &[CpuNttRow]) -> String {
    let mut out = format!(
        "{:>5} {:7} {:>12} {:>14}\n",
        "n", "product", "µs/product", "products/s"
    );
    for r in rows {
        out += &format!(
            "{:>5} {:7} {:>12.2} {:>14.0}\n",
            r.n,
            r.product.name(),
            r.us_per_product,
            r.products_per_s
        );
    }
    out
}
