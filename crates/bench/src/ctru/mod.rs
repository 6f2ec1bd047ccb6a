//! The CTRU-Prime benchmark (issue 6, item 5), shared by `examples/ctru_device_check.rs` and
//! `chainsig bench --kem ctru`: one implementation of the GPU correctness check, the GPU timing sweep
//! and the CPU baselines they are compared with.
//!
//! * [`run_gpu`]: for every n of a [`Plan`], both products and every [`Method`]: (1) correctness, a
//!   random batch in the KEM's ranges (257 instances, not a multiple of 32) plus extreme instances,
//!   every instance against `chainsig_ctru`'s schoolbook product, and at batch
//!   [`CROSS_CHECK_BATCH`] the three methods against each other with 64 sampled instances against
//!   the schoolbook; (2) timing over the plan's batch sizes with CUDA events ([`GpuPolyMul::time_batch`]),
//!   each size against the single-core CPU NTT ([`cpu_ntt_us`]).
//! * [`cpu_ntt_us`]: one product by `chainsig_ctru::ntt::NttMultiplier` on the calling thread.
//! * [`cpu_kem`]: keygen / encaps / decaps per second over a batch, on one core and on every core of
//!   the rayon pool, each decapsulated key checked against the encapsulated one.
//! * [`run_gpu_kem`]: the whole KEM in batch on the GPU ([`GpuKem`]): for every n, (1) correctness on
//!   a fresh random key pair, GPU encaps against the CPU encaps on the same seeds and GPU decaps
//!   against the CPU decaps on the honest ciphertexts and tampered copies (which must take the
//!   rejection path), and (2) batch encaps and decaps per second over [`KEM_SIZES`] with CUDA events,
//!   every timed batch's decapsulated keys checked against its encapsulated ones.
//!
//! Hand-written because the figures are this project's own (the seed's Fig. 6 re-run on our GPU);
//! criterion measures single functions on the CPU and knows nothing of CUDA events or batch sweeps.

use crate::kernel::Resources;
use crate::{
    small_limit, Error, GpuKem, GpuPolyMul, KemTiming, Method, Product, Timing, MAX_BATCH,
};
use chainsig_ctru::ntt::multiplier;
use chainsig_ctru::poly::{schoolbook_mul_mod_q, schoolbook_mul_mod_q2};
use chainsig_ctru::{
    decaps, decaps_with_verdict, encaps, keygen, Ciphertext, OsRandom, ParamSet, RandomSource,
};
use rand::Rng;
use rayon::prelude::*;
use serde::Serialize;
use std::time::Instant;

/// The default batch sizes of the sweep (the seed's Fig. 6 range, continued to 65536).
pub const SIZES: [usize; 8] = [1, 16, 64, 256, 1024, 4096, 16384, 65536];

/// The batch at which the three GPU methods are compared with each other.
pub const CROSS_CHECK_BATCH: usize = 4096;

/// Instances in the random correctness batch (not a multiple of 32, so partial warps and tiles run).
pub const CHECK_BATCH: usize = 257;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Parameter sets, in order.
    pub sets: Vec<ParamSet>,
    /// Batch sizes, ascending, distinct, each 1 ..= [`MAX_BATCH`].
    pub sizes: Vec<usize>,
    /// Timed repetitions per point (medians are reported), at least 1.
    pub reps: usize,
    /// Time the sweep even when a correctness check failed (the device check does, to see how far
    /// a broken method gets); otherwise a failed check skips the timing.
    pub time_after_mismatch: bool,
}

impl Plan {
    /// A plan for `sets` and `sizes` (sorted and deduplicated here); errors name what is wrong.
    pub fn new(sets: &[ParamSet], sizes: &[usize], reps: usize) -> Result<Plan, Error> {
        if sets.is_empty() {
            return Err(Error::Batch("no parameter set to measure".into()));
        }
        let mut sizes = sizes.to_vec();
        sizes.sort_unstable();
        sizes.dedup();
        match (sizes.first(), sizes.last()) {
            (None, _) | (_, None) => return Err(Error::Batch("sizes: none given".into())),
            (Some(&0), _) => return Err(Error::Batch("sizes: a batch of 0 instances".into())),
            (_, Some(&big)) if big > MAX_BATCH => {
                return Err(Error::Batch(format!(
                    "sizes: {big} instances, at most {MAX_BATCH}"
                )))
            }
            _ => {}
        }
        if reps == 0 {
            return Err(Error::Batch("repeats: at least 1 timed run".into()));
        }
        Ok(Plan {
            sets: sets.to_vec(),
            sizes,
            reps,
            time_after_mismatch: false,
        })
    }

    /// Every parameter set, the sizes of [`SIZES`] up to `max_batch`.
    pub fn standard(max_batch: usize, reps: usize) -> Result<Plan, Error> {
        let sizes: Vec<usize> = SIZES.iter().copied().filter(|&s| s <= max_batch).collect();
        if sizes.is_empty() {
            return Err(Error::Batch(format!(
                "a largest batch of {max_batch} leaves no size of {SIZES:?} to time"
            )));
        }
        Plan::new(&ParamSet::ALL, &sizes, reps)
    }

    /// The largest batch size.
    pub fn largest(&self) -> usize {
        self.sizes.last().copied().unwrap_or(1)
    }
}

/// One timed point of the sweep. Rates are products per second; speed-ups are over one core of the
/// CPU NTT.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub n: usize,
    pub product: Product,
    pub method: Method,
    pub batch: usize,
    pub runs: usize,
    pub kernel_ms: f64,
    pub end_to_end_ms: f64,
    pub setup_ms: f64,
    pub kernel_products_per_s: f64,
    pub end_to_end_products_per_s: f64,
    pub cpu_ntt_us: f64,
    pub speedup_kernel: f64,
    pub speedup_end_to_end: f64,
}

impl Row {
    /// The rates and speed-ups of one timing; `cpu_ntt_us` is the single-core time of one product.
    pub fn new(
        n: usize,
        product: Product,
        method: Method,
        batch: usize,
        t: &Timing,
        cpu_ntt_us: f64,
    ) -> Row {
        let kps = batch as f64 / (t.kernel_ms * 1e-3);
        let eps = batch as f64 / (t.end_to_end_ms * 1e-3);
        let cpu_ps = 1e6 / cpu_ntt_us;
        Row {
            n,
            product,
            method,
            batch,
            runs: t.runs,
            kernel_ms: t.kernel_ms,
            end_to_end_ms: t.end_to_end_ms,
            setup_ms: t.setup_ms,
            kernel_products_per_s: kps,
            end_to_end_products_per_s: eps,
            cpu_ntt_us,
            speedup_kernel: kps / cpu_ps,
            speedup_end_to_end: eps / cpu_ps,
        }
    }
}

/// The CSV columns of [`Row`], in order.
pub const CSV_COLUMNS: [&str; 13] = [
    "n",
    "product",
    "method",
    "batch",
    "runs",
    "kernel_ms",
    "end_to_end_ms",
    "setup_ms",
    "kernel_products_per_s",
    "end_to_end_products_per_s",
    "cpu_ntt_us",
    "speedup_kernel",
    "speedup_end_to_end",
];

/// The rows as CSV with a header line; times and rates with six decimals.
pub fn to_csv(rows: &[Row]) -> String {
    let mut csv = CSV_COLUMNS.join(",") + "\n";
    for r in rows {
        let f = |x: f64| format!("{x:.6}");
        let cells = [
            r.n.to_string(),
            r.product.name().to_string(),
            r.method.name().to_string(),
            r.batch.to_string(),
            r.runs.to_string(),
            f(r.kernel_ms),
            f(r.end_to_end_ms),
            f(r.setup_ms),
            f(r.kernel_products_per_s),
            f(r.end_to_end_products_per_s),
            f(r.cpu_ntt_us),
            f(r.speedup_kernel),
            f(r.speedup_end_to_end),
        ];
        csv += &cells.join(",");
        csv.push('\n');
    }
    csv
}

/// The rows as a text table (one line each, with a header).
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:>5} {:7} {:16} {:>6} {:>11} {:>11} {:>13} {:>13} {:>10} {:>10}\n",
        "n",
        "product",
        "method",
        "batch",
        "kernel ms",
        "e2e ms",
        "kernel /s",
        "e2e /s",
        "CPU µs",
        "speedup"
    );
    for r in rows {
        out += &format!(
            "{:>5} {:7} {:16} {:>6} {:>11.4} {:>11.4} {:>13.0} {:>13.0} {:>10.2} {:>10.1}\n",
            r.n,
            r.product.name(),
            r.method.name(),
            r.batch,
            r.kernel_ms,
            r.end_to_end_ms,
            r.kernel_products_per_s,
            r.end_to_end_products_per_s,
            r.cpu_ntt_us,
            r.speedup_kernel
        );
    }
    out
}

/// One correctness check of one method on one set of instances.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub n: usize,
    pub product: Product,
    pub method: Method,
    /// `random`, `extreme K`.
    pub case: String,
    pub instances: usize,
    pub ok: bool,
    pub error: Option<String>,
}

/// ptxas's account of one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelResources {
    pub kernel: String,
    pub registers: u32,
    pub stack_bytes: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

impl From<&Resources> for KernelResources {
    fn from(r: &Resources) -> Self {
        KernelResources {
            kernel: r.kernel.clone(),
            registers: r.registers,
            stack_bytes: r.stack_bytes,
            spill_stores: r.spill_stores,
            spill_loads: r.spill_loads,
        }
    }
}

/// What a GPU run found: [`GpuReport`] for the product sweep ([`run_gpu`]), [`GpuKemReport`] for
/// the KEM ([`run_gpu_kem`]). One type, since both runs report the same way: checks first, every
/// failure named, then the timed rows.
#[derive(Debug, Clone, Serialize)]
pub struct Report<C, R> {
    /// e.g. `sm_90`.
    pub arch: String,
    /// Per kernel, from the first module opened (the KEM run: its `ctru_kem_*` kernels only).
    pub resources: Vec<KernelResources>,
    /// Every check (the product sweep's cross-checks at [`CROSS_CHECK_BATCH`] report only
    /// failures).
    pub checks: Vec<C>,
    /// Every failure, named by set, method or operation, and case; empty when all is well.
    pub failures: Vec<String>,
    /// The timed points (none when a check failed and the run does not time after a mismatch).
    pub rows: Vec<R>,
}

impl<C, R> Default for Report<C, R> {
    fn default() -> Self {
        Report {
            arch: String::new(),
            resources: Vec::new(),
            checks: Vec::new(),
            failures: Vec::new(),
            rows: Vec::new(),
        }
    }
}

/// What [`run_gpu`] found.
pub type GpuReport = Report<Check, Row>;

/// The schoolbook product the GPU results must equal.
pub fn reference(set: ParamSet, product: Product, shared: &[i32], b: &[i32]) -> Vec<i32> {
    let p = set.params();
    match product {
        Product::ModQ => {
            let a: Vec<i32> = shared.iter().map(|&v| v.rem_euclid(p.q)).collect();
            schoolbook_mul_mod_q(p, &a, b)
        }
        Product::ModQ2 => {
            let c: Vec<i32> = b.iter().map(|&v| v.rem_euclid(p.q2)).collect();
            schoolbook_mul_mod_q2(p, shared, &c)
        }
    }
}

/// A shared operand and `count` batch operands in the KEM's ranges: for mod q, h uniform mod q and r
/// alternately within η and within the small limit; for mod q2, f in the unpacked secret-key range
/// and c uniform mod q2.
pub fn random_operands(
    set: ParamSet,
    product: Product,
    rng: &mut impl Rng,
    count: usize,
) -> (Vec<i32>, Vec<Vec<i32>>) {
    let p = set.params();
    let n = p.n;
    let limit = small_limit(set, product);
    let (f_lo, f_hi) = p.unpacked_f_range();
    match product {
        Product::ModQ => (
            (0..n).map(|_| rng.gen_range(0..p.q)).collect(),
            (0..count)
                .map(|i| {
                    let e = if i % 2 == 0 { p.eta } else { limit };
                    (0..n).map(|_| rng.gen_range(-e..=e)).collect()
                })
                .collect(),
        ),
        Product::ModQ2 => (
            (0..n).map(|_| rng.gen_range(f_lo..=f_hi)).collect(),
            (0..count)
                .map(|_| (0..n).map(|_| rng.gen_range(0..p.q2)).collect())
                .collect(),
        ),
    }
}

/// Extreme cases: (shared, batch) pairs with every coefficient at an end of its range.
pub fn extremes(set: ParamSet, product: Product) -> Vec<(Vec<i32>, Vec<Vec<i32>>)> {
    let p = set.params();
    let n = p.n;
    let limit = small_limit(set, product);
    let alt =
        |a: i32, b: i32| -> Vec<i32> { (0..n).map(|i| if i % 2 == 0 { a } else { b }).collect() };
    let small = vec![vec![limit; n], vec![-limit; n], alt(limit, -limit)];
    let large = match product {
        Product::ModQ => vec![
            vec![(p.q - 1) / 2; n],
            vec![-(p.q - 1) / 2; n],
            vec![p.q - 1; n],
            alt((p.q - 1) / 2, -(p.q - 1) / 2),
        ],
        Product::ModQ2 => vec![
            vec![p.q2 / 2 - 1; n],
            vec![-p.q2 / 2; n],
            vec![p.q2 - 1; n],
            alt(p.q2 / 2 - 1, -p.q2 / 2),
        ],
    };
    match product {
        Product::ModQ => large.into_iter().map(|h| (h, small.clone())).collect(),
        Product::ModQ2 => small.into_iter().map(|f| (f, large.clone())).collect(),
    }
}

/// The median (upper median for an even count) of `v`; 0 for an empty slice.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

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
    let fail = |e: chainsig_ctru::Error| Error::Device {
        what: "CPU NTT product",
        detail: e.to_string(),
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

/// Runs one correctness check of `gpu` on `batch` against `want`; a failure message or None.
fn check_one(
    gpu: &GpuPolyMul,
    product: Product,
    shared: &[i32],
    batch: &[Vec<i32>],
    want: &[Vec<i32>],
) -> Result<(), String> {
    let got = gpu
        .mul_batch(product, shared, batch)
        .map_err(|e| e.to_string())?;
    let bad = got.iter().zip(want).filter(|(g, w)| g != w).count();
    if bad > 0 {
        return Err(format!("{bad} of {} instances differ", batch.len()));
    }
    Ok(())
}

/// The correctness checks of one set and product (see the module docs), appended to `report`.
fn check_product(
    set: ParamSet,
    product: Product,
    gpus: &[GpuPolyMul],
    rng: &mut impl Rng,
    report: &mut GpuReport,
) {
    let n = set.params().n;
    let mut cases = vec![(
        "random".to_string(),
        random_operands(set, product, rng, CHECK_BATCH),
    )];
    for (k, c) in extremes(set, product).into_iter().enumerate() {
        cases.push((format!("extreme {k}"), c));
    }
    for (what, (shared, batch)) in &cases {
        let want: Vec<Vec<i32>> = batch
            .iter()
            .map(|b| reference(set, product, shared, b))
            .collect();
        for gpu in gpus {
            let verdict = check_one(gpu, product, shared, batch, &want);
            if let Err(e) = &verdict {
                report.failures.push(format!(
                    "{set} {} {} {what}: {e}",
                    gpu.method().name(),
                    product.name()
                ));
            }
            report.checks.push(Check {
                n,
                product,
                method: gpu.method(),
                case: what.clone(),
                instances: batch.len(),
                ok: verdict.is_ok(),
                error: verdict.err(),
            });
        }
    }
    // The methods against each other at a large batch, 64 sampled instances against the schoolbook.
    let (shared, batch) = random_operands(set, product, rng, CROSS_CHECK_BATCH);
    let mut results = Vec::new();
    for gpu in gpus {
        match gpu.mul_batch(product, &shared, &batch) {
            Ok(r) => results.push(r),
            Err(e) => report.failures.push(format!(
                "{set} {} {} batch {CROSS_CHECK_BATCH}: {e}",
                gpu.method().name(),
                product.name()
            )),
        }
    }
    if results.len() != gpus.len() || results.is_empty() {
        return;
    }
    for (gpu, r) in gpus.iter().zip(&results).skip(1) {
        if r != &results[0] {
            report.failures.push(format!(
                "{set} {} {} batch {CROSS_CHECK_BATCH}: differs from {}",
                gpu.method().name(),
                product.name(),
                gpus[0].method().name()
            ));
        }
    }
    for _ in 0..64 {
        let i = rng.gen_range(0..batch.len());
        if results[0][i] != reference(set, product, &shared, &batch[i]) {
            report.failures.push(format!(
                "{set} {} batch {CROSS_CHECK_BATCH}: instance {i} differs from the schoolbook",
                product.name()
            ));
        }
    }
}

/// The timing sweep of one set and product, appended to `report`.
fn time_product(
    set: ParamSet,
    product: Product,
    gpus: &[GpuPolyMul],
    plan: &Plan,
    rng: &mut impl Rng,
    report: &mut GpuReport,
) -> Result<(), Error> {
    let n = set.params().n;
    let (shared, batch) = random_operands(set, product, rng, plan.largest());
    let cpu_us = cpu_ntt_us(set, product, &shared, &batch[0], plan.reps)?;
    for gpu in gpus {
        for &size in &plan.sizes {
            match gpu.time_batch(product, &shared, &batch[..size], plan.reps) {
                Ok(t) => report
                    .rows
                    .push(Row::new(n, product, gpu.method(), size, &t, cpu_us)),
                Err(e) => report.failures.push(format!(
                    "{set} {} {} timing {size}: {e}",
                    gpu.method().name(),
                    product.name()
                )),
            }
        }
    }
    Ok(())
}

/// Opens every method for every set of `plan`, checks correctness, then (when every check passed,
/// or the plan says so) times the sweep. `progress` hears a line per stage.
///
/// Errors: [`Error::Unavailable`] without a usable GPU; other errors when a device cannot be opened
/// or the CPU reference fails. Mismatches are not errors: they are in [`Report::failures`].
pub fn run_gpu(
    plan: &Plan,
    rng: &mut impl Rng,
    mut progress: impl FnMut(&str),
) -> Result<GpuReport, Error> {
    let mut report = GpuReport::default();
    let mut opened = Vec::with_capacity(plan.sets.len());
    for &set in &plan.sets {
        let gpus = Method::ALL
            .iter()
            .map(|&m| GpuPolyMul::new(set, m))
            .collect::<Result<Vec<_>, _>>()?;
        if report.arch.is_empty() {
            report.arch = gpus[0].arch().to_string();
            report.resources = gpus[0]
                .resources()
                .iter()
                .map(KernelResources::from)
                .collect();
        }
        opened.push((set, gpus));
    }
    for (set, gpus) in &opened {
        for product in Product::ALL {
            progress(&format!("checking {set} {}", product.name()));
            check_product(*set, product, gpus, rng, &mut report);
        }
    }
    if !report.failures.is_empty() && !plan.time_after_mismatch {
        progress("a correctness check failed: timing skipped");
        return Ok(report);
    }
    for (set, gpus) in &opened {
        for product in Product::ALL {
            progress(&format!("timing {set} {}", product.name()));
            time_product(*set, product, gpus, plan, rng, &mut report)?;
        }
    }
    Ok(report)
}

/// The batch sizes of the GPU KEM sweep.
pub const KEM_SIZES: [usize; 4] = [1024, 4096, 16384, 65536];

/// Items per GPU KEM correctness check (honest; as many tampered copies again). Not a multiple of 32,
/// so the Tensor Core product's partial tile is covered.
pub const KEM_CHECK_ITEMS: usize = 301;

/// The KEM sweep's sizes up to `largest`; `[largest]` when it is below them all.
pub fn kem_sizes(largest: usize) -> Vec<usize> {
    let v: Vec<usize> = KEM_SIZES
        .iter()
        .copied()
        .filter(|&s| s <= largest)
        .collect();
    if v.is_empty() {
        vec![largest.max(1)]
    } else {
        v
    }
}

/// Randomness for the CPU KEM from a caller's generator.
struct RngSource<'a, R: Rng>(&'a mut R);
impl<R: Rng> RandomSource for RngSource<'_, R> {
    fn fill(&mut self, out: &mut [u8]) {
        self.0.fill_bytes(out)
    }
}

/// One fixed 32-byte seed: what `chainsig_ctru::encaps` draws, so CPU and GPU encapsulate alike.
struct FixedSeed([u8; 32]);
impl RandomSource for FixedSeed {
    fn fill(&mut self, out: &mut [u8]) {
        let len = out.len().min(32);
        out[..len].copy_from_slice(&self.0[..len]);
    }
}

/// Tampered copy `kind` of a ciphertext: 0 one random bit flipped, 1 a padding bit of the last byte
/// set (unpacking ignores it, the byte comparison must not), otherwise random bytes.
pub fn tamper(ct: &Ciphertext, rng: &mut impl Rng, kind: usize) -> Ciphertext {
    let mut b = ct.as_bytes().to_vec();
    let len = b.len();
    match kind {
        0 => {
            let bit = rng.gen_range(0..8 * len);
            b[bit / 8] ^= 1 << (bit % 8);
        }
        1 => b[len - 1] ^= 0x80,
        _ => rng.fill_bytes(&mut b),
    }
    Ciphertext::from_bytes(ct.param_set(), &b).expect("same length")
}

/// One GPU KEM correctness check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KemCheck {
    pub n: usize,
    /// `encaps`, `decaps honest`, `decaps tampered`, `decaps timed batch B`.
    pub case: String,
    pub items: usize,
    pub ok: bool,
    pub error: Option<String>,
}

/// A fresh key pair of `set` from `rng`.
pub fn random_keys(
    set: ParamSet,
    rng: &mut impl Rng,
) -> (chainsig_ctru::PublicKey, chainsig_ctru::SecretKey) {
    keygen(set, &mut RngSource(rng))
}

/// Checks `gpu` (opened with a secret key) against the CPU KEM on `items` fresh seeds and on the
/// resulting ciphertexts plus as many tampered copies. Returns the checks (encaps, honest decaps,
/// tampered decaps).
pub fn check_gpu_kem(
    gpu: &mut GpuKem,
    pk: &chainsig_ctru::PublicKey,
    sk: &chainsig_ctru::SecretKey,
    rng: &mut impl Rng,
    items: usize,
) -> Vec<KemCheck> {
    let n = gpu.set().params().n;
    let check = |case: &str, items: usize, error: Option<String>| KemCheck {
        n,
        case: case.into(),
        items,
        ok: error.is_none(),
        error,
    };
    let seeds: Vec<[u8; 32]> = (0..items).map(|_| rng.gen()).collect();
    let want: Vec<_> = seeds
        .iter()
        .map(|s| encaps(pk, &mut FixedSeed(*s)))
        .collect();
    let mut out = Vec::new();
    let enc_err = match gpu.encaps_batch(&seeds) {
        Err(e) => Some(format!("GPU encaps: {e}")),
        Ok(got) => got
            .iter()
            .zip(&want)
            .position(|((c, k), (wc, wk))| c != wc || k != wk)
            .map(|i| format!("item {i}: ciphertext or key differs from the CPU encaps")),
    };
    out.push(check("encaps", items, enc_err));
    let honest: Vec<Ciphertext> = want.iter().map(|(c, _)| c.clone()).collect();
    let tampered: Vec<Ciphertext> = honest
        .iter()
        .enumerate()
        .map(|(i, c)| tamper(c, rng, i % 3))
        .collect();
    for (case, cts, accept) in [
        ("decaps honest", &honest, true),
        ("decaps tampered", &tampered, false),
    ] {
        let err =
            match gpu.decaps_batch(cts) {
                Err(e) => Some(format!("GPU decaps: {e}")),
                Ok(got) => cts.iter().zip(&got).enumerate().find_map(|(i, (ct, g))| {
                    match decaps_with_verdict(sk, ct) {
                        Err(e) => Some(format!("item {i}: CPU decaps: {e}")),
                        Ok((_, verdict)) if bool::from(verdict) != accept => Some(format!(
                            "item {i}: the CPU verdict is {}, expected {accept}",
                            bool::from(verdict)
                        )),
                        Ok((w, _)) if w != *g => {
                            Some(format!("item {i}: key differs from the CPU decaps"))
                        }
                        Ok(_) => None,
                    }
                }),
            };
        out.push(check(case, cts.len(), err));
    }
    out
}

/// One timed GPU KEM point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuKemRow {
    pub n: usize,
    pub op: KemOp,
    pub batch: usize,
    pub runs: usize,
    pub kernel_ms: f64,
    pub end_to_end_ms: f64,
    pub kernel_per_s: f64,
    pub end_to_end_per_s: f64,
}

impl GpuKemRow {
    /// The rates of one timing.
    pub fn new(n: usize, op: KemOp, batch: usize, t: &KemTiming) -> GpuKemRow {
        GpuKemRow {
            n,
            op,
            batch,
            runs: t.runs,
            kernel_ms: t.kernel_ms,
            end_to_end_ms: t.end_to_end_ms,
            kernel_per_s: batch as f64 / (t.kernel_ms * 1e-3),
            end_to_end_per_s: batch as f64 / (t.end_to_end_ms * 1e-3),
        }
    }
}

/// What [`run_gpu_kem`] found.
pub type GpuKemReport = Report<KemCheck, GpuKemRow>;

/// For every set: a random key pair, [`check_gpu_kem`] on [`KEM_CHECK_ITEMS`] items, then (when the
/// checks passed, or `time_after_mismatch`) batch encaps and decaps timed over `sizes` with `reps`
/// runs each; every timed batch's decapsulated keys must equal its encapsulated ones.
pub fn run_gpu_kem(
    sets: &[ParamSet],
    sizes: &[usize],
    reps: usize,
    time_after_mismatch: bool,
    rng: &mut impl Rng,
    mut progress: impl FnMut(&str),
) -> Result<GpuKemReport, Error> {
    let mut report = GpuKemReport::default();
    let mut opened = Vec::new();
    for &set in sets {
        let (pk, sk) = random_keys(set, rng);
        let mut gpu = GpuKem::new(set, &pk, Some(&sk))?;
        if report.arch.is_empty() {
            report.arch = gpu.arch().to_string();
            report.resources = gpu
                .resources()
                .iter()
                .filter(|r| r.kernel.starts_with("ctru_kem"))
                .map(KernelResources::from)
                .collect();
        }
        progress(&format!("checking the GPU KEM for {set}"));
        for c in check_gpu_kem(&mut gpu, &pk, &sk, rng, KEM_CHECK_ITEMS) {
            if let Some(e) = &c.error {
                report.failures.push(format!("{set} KEM {}: {e}", c.case));
            }
            report.checks.push(c);
        }
        opened.push((set, gpu));
    }
    if !report.failures.is_empty() && !time_after_mismatch {
        progress("a GPU KEM check failed: timing skipped");
        return Ok(report);
    }
    for (set, gpu) in &mut opened {
        let n = set.params().n;
        for &batch in sizes {
            progress(&format!("timing the GPU KEM for {set}, batch {batch}"));
            let seeds: Vec<[u8; 32]> = (0..batch).map(|_| rng.gen()).collect();
            let enc = gpu.encaps_batch(&seeds)?;
            let (cts, keys): (Vec<Ciphertext>, Vec<_>) = enc.into_iter().unzip();
            let got = gpu.decaps_batch(&cts)?;
            let bad = got.iter().zip(&keys).filter(|(g, k)| g != k).count();
            let case = format!("decaps timed batch {batch}");
            let error = (bad > 0).then(|| format!("{bad} of {batch} keys differ from encaps"));
            if let Some(e) = &error {
                report.failures.push(format!("{set} KEM {case}: {e}"));
            }
            report.checks.push(KemCheck {
                n,
                case,
                items: batch,
                ok: error.is_none(),
                error,
            });
            let t = gpu.time_encaps(&seeds, reps)?;
            report
                .rows
                .push(GpuKemRow::new(n, KemOp::Encaps, batch, &t));
            let t = gpu.time_decaps(&cts, reps)?;
            report
                .rows
                .push(GpuKemRow::new(n, KemOp::Decaps, batch, &t));
        }
    }
    Ok(report)
}

/// The CSV columns of [`GpuKemRow`], in order.
pub const KEM_CSV_COLUMNS: [&str; 8] = [
    "n",
    "op",
    "batch",
    "runs",
    "kernel_ms",
    "end_to_end_ms",
    "kernel_per_s",
    "end_to_end_per_s",
];

/// GPU KEM rows as CSV with a header.
pub fn kem_gpu_csv(rows: &[GpuKemRow]) -> String {
    let mut out = KEM_CSV_COLUMNS.join(",") + "\n";
    for r in rows {
        out += &format!(
            "{},{},{},{},{:.6},{:.6},{:.1},{:.1}\n",
            r.n,
            r.op.name(),
            r.batch,
            r.runs,
            r.kernel_ms,
            r.end_to_end_ms,
            r.kernel_per_s,
            r.end_to_end_per_s
        );
    }
    out
}

/// GPU KEM rows as a text table.
pub fn kem_gpu_table(rows: &[GpuKemRow]) -> String {
    let mut out = format!(
        "{:>5} {:7} {:>6} {:>11} {:>11} {:>14} {:>14}\n",
        "n", "op", "batch", "kernel ms", "e2e ms", "kernel /s", "e2e /s"
    );
    for r in rows {
        out += &format!(
            "{:>5} {:7} {:>6} {:>11.3} {:>11.3} {:>14.0} {:>14.0}\n",
            r.n,
            r.op.name(),
            r.batch,
            r.kernel_ms,
            r.end_to_end_ms,
            r.kernel_per_s,
            r.end_to_end_per_s
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn plans_sort_and_reject_what_cannot_run() {
        let p = Plan::new(&ParamSet::ALL, &[64, 1, 64, 4], 3).unwrap();
        assert_eq!(p.sizes, vec![1, 4, 64]);
        assert_eq!(p.largest(), 64);
        assert!(!p.time_after_mismatch);
        assert!(Plan::new(&ParamSet::ALL, &[], 3).is_err());
        assert!(Plan::new(&ParamSet::ALL, &[0, 4], 3).is_err());
        assert!(Plan::new(&ParamSet::ALL, &[MAX_BATCH + 1], 3).is_err());
        assert!(Plan::new(&ParamSet::ALL, &[4], 0).is_err());
        assert!(Plan::new(&[], &[4], 1).is_err());
        assert_eq!(
            Plan::new(&ParamSet::ALL, &[MAX_BATCH], 1)
                .unwrap()
                .largest(),
            MAX_BATCH
        );

        let s = Plan::standard(65536, 20).unwrap();
        assert_eq!(s.sizes, SIZES.to_vec());
        assert_eq!(s.sets, ParamSet::ALL.to_vec());
        assert_eq!(Plan::standard(100, 20).unwrap().sizes, vec![1, 16, 64]);
        assert!(Plan::standard(0, 20).is_err());
    }

    #[test]
    fn row_rates_and_speedups() {
        let t = Timing {
            kernel_ms: 2.0,
            end_to_end_ms: 4.0,
            setup_ms: 0.5,
            runs: 10,
        };
        // 1000 products: 500 000/s on the kernel, 250 000/s end to end; the CPU at 10 µs is 100 000/s.
        let r = Row::new(761, Product::ModQ, Method::Ntt, 1000, &t, 10.0);
        assert_eq!(r.runs, 10);
        assert!((r.kernel_products_per_s - 500_000.0).abs() < 1e-6);
        assert!((r.end_to_end_products_per_s - 250_000.0).abs() < 1e-6);
        assert!((r.speedup_kernel - 5.0).abs() < 1e-9);
        assert!((r.speedup_end_to_end - 2.5).abs() < 1e-9);

        let csv = to_csv(std::slice::from_ref(&r));
        let mut lines = csv.lines();
        assert_eq!(lines.next().unwrap(), CSV_COLUMNS.join(","));
        assert_eq!(
            lines.next().unwrap(),
            "761,mod-q,cuda-ntt,1000,10,2.000000,4.000000,0.500000,500000.000000,\
             250000.000000,10.000000,5.000000,2.500000"
        );
        assert!(lines.next().is_none());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["product"], "mod-q");
        assert_eq!(v["method"], "cuda-ntt");
        assert_eq!(v["end_to_end_ms"], 4.0);
        assert_eq!(table(&[r]).lines().count(), 2);
        // The columns ci/plot_kem.py reads.
        let plot = include_str!("../ci/plot_kem.py");
        for c in [
            "n",
            "product",
            "method",
            "batch",
            "kernel_products_per_s",
            "end_to_end_products_per_s",
            "cpu_ntt_us",
        ] {
            assert!(CSV_COLUMNS.contains(&c), "{c}");
            assert!(plot.contains(&format!("[\"{c}\"]")), "{c}");
        }
    }

    #[test]
    fn kem_rows_and_table() {
        let r = KemRow::new(653, KemOp::Decaps, 4, 200, 3, 0.5);
        assert!((r.per_s - 400.0).abs() < 1e-9);
        assert!((r.median_ms - 500.0).abs() < 1e-9);
        assert_eq!(serde_json::to_value(&r).unwrap()["op"], "decaps");
        let rows = [
            KemRow::new(653, KemOp::Keygen, 4, 200, 3, 1.0),
            r,
            KemRow::new(653, KemOp::Keygen, 1, 200, 3, 2.0),
        ];
        let t = kem_table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[1].contains("200") && lines[1].contains("400") && lines[1].contains('-'));
        assert!(lines[2].trim_start().starts_with("653       1"));
    }

    #[test]
    fn gpu_kem_rows_sizes_and_tampering() {
        let t = KemTiming {
            kernel_ms: 2.0,
            end_to_end_ms: 4.0,
            runs: 10,
        };
        let r = GpuKemRow::new(761, KemOp::Decaps, 1000, &t);
        assert!((r.kernel_per_s - 500_000.0).abs() < 1e-6);
        assert!((r.end_to_end_per_s - 250_000.0).abs() < 1e-6);
        let csv = kem_gpu_csv(std::slice::from_ref(&r));
        let mut lines = csv.lines();
        assert_eq!(lines.next().unwrap(), KEM_CSV_COLUMNS.join(","));
        assert_eq!(
            lines.next().unwrap(),
            "761,decaps,1000,10,2.000000,4.000000,500000.0,250000.0"
        );
        assert_eq!(kem_gpu_table(&[r]).lines().count(), 2);
        assert_eq!(kem_sizes(65536), KEM_SIZES.to_vec());
        assert_eq!(kem_sizes(5000), vec![1024, 4096]);
        assert_eq!(kem_sizes(100), vec![100]);
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let (pk, _) = random_keys(ParamSet::Ctru761, &mut rng);
        let (ct, _) = encaps(&pk, &mut FixedSeed([5; 32]));
        for kind in 0..3 {
            assert_ne!(tamper(&ct, &mut rng, kind), ct, "kind {kind}");
        }
    }

    #[test]
    fn median_is_the_middle() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn operands_lie_in_range_and_cpu_figures_are_positive() {
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        for set in ParamSet::ALL {
            let p = set.params();
            for product in Product::ALL {
                let limit = small_limit(set, product);
                let (shared, batch) = random_operands(set, product, &mut rng, 3);
                assert_eq!(shared.len(), p.n);
                assert_eq!(batch.len(), 3);
                let small: Vec<&Vec<i32>> = match product {
                    Product::ModQ => batch.iter().collect(),
                    Product::ModQ2 => vec![&shared],
                };
                assert!(small.iter().all(|v| v.iter().all(|c| c.abs() <= limit)));
                for (s, b) in extremes(set, product) {
                    assert_eq!(s.len(), p.n);
                    assert!(crate::prepare(set, product, &s, &b).is_ok());
                }
                // The CPU NTT agrees with the schoolbook on these operands, and is timed.
                let m = multiplier(set);
                let got = match product {
                    Product::ModQ => {
                        let r: Vec<i8> = batch[0].iter().map(|&v| v as i8).collect();
                        m.mul_mod_q(&shared, &r).unwrap()
                    }
                    Product::ModQ2 => {
                        let f: Vec<i8> = shared.iter().map(|&v| v as i8).collect();
                        m.mul_mod_q2(&batch[0], &f).unwrap()
                    }
                };
                assert_eq!(got, reference(set, product, &shared, &batch[0]));
                assert!(cpu_ntt_us(set, product, &shared, &batch[0], 1).unwrap() > 0.0);
            }
        }
        let mut bad = vec![0i32; ParamSet::Ctru653.params().n];
        bad[3] = 1000;
        let ok = vec![0i32; bad.len()];
        assert!(matches!(
            cpu_ntt_us(ParamSet::Ctru653, Product::ModQ, &ok, &bad, 1),
            Err(Error::OutOfRange { index: 3, .. })
        ));
        let rows = cpu_ntt_rows(&[ParamSet::Ctru653], 1, &mut rng).unwrap();
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.products_per_s > 0.0));
    }

    #[test]
    fn cpu_kem_round_trips_on_one_core_and_all() {
        for parallel in [false, true] {
            let rows = cpu_kem(ParamSet::Ctru653, 3, 1, parallel).unwrap();
            assert_eq!(
                rows.iter().map(|r| r.op).collect::<Vec<_>>(),
                KemOp::ALL.to_vec()
            );
            assert!(rows.iter().all(|r| r.per_s > 0.0 && r.batch == 3));
            assert_eq!(rows[0].threads == 1, !parallel);
        }
        assert!(cpu_kem(ParamSet::Ctru653, 0, 1, false).is_err());
    }

    #[test]
    fn without_a_gpu_the_sweep_says_unavailable() {
        if chainsig_cuda::backend::driver_available() {
            eprintln!("a CUDA driver is present: the device tests cover run_gpu");
            return;
        }
        let plan = Plan::new(&[ParamSet::Ctru653], &[1], 1).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        assert!(matches!(
            run_gpu(&plan, &mut rng, |_| {}),
            Err(Error::Unavailable(_))
        ));
    }
}
