//! The product sweep's plan (sizes, parameter sets, methods) and what it reports: one row per
//! point, as CSV and as a table, with the correctness checks and the kernels' resources.

use chainsig_ctru::ParamSet;
use chainsig_ctru_cuda::{Error, Method, Product, Timing, MAX_BATCH};
use chainsig_gpu::Resources;
use serde::Serialize;

/// The default batch sizes of the sweep (the range of Fig. 6 of
/// 基于GPU的区块链交易验签加速技术, continued to 65536).
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
