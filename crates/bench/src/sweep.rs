//! The benchmark sweep (the experiments of the seed paper 基于GPU的区块链交易验签加速技术, its
//! Fig. 3 and Table 1, and the ablations, re-run on our GPU), callable from the CLI: end-to-end time (prepared batch in host memory → verdict bitmap in host memory) and
//! kernel-only time, medians of repeated runs after warm-up, every verdict checked.

use chainsig_core::backend::BackendError;
use chainsig_core::batch::Batch;
use chainsig_core::bitmap::Bitmap;
use chainsig_cuda::kernels::{KernelConfig, Product};
use chainsig_cuda::{CudaBackend, CudaConfig, Inversion, Mode};
use chainsig_gpu::median;
use std::collections::HashMap;

/// One measured point.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SweepRow {
    pub experiment: String,
    pub mode: Mode,
    pub inversion: Inversion,
    pub compress: bool,
    pub row_major: bool,
    pub streams: usize,
    pub block_size: u32,
    pub batch: usize,
    pub reps: usize,
    /// Median end-to-end latency, milliseconds.
    pub e2e_ms: f64,
    /// Batch / median end-to-end time.
    pub e2e_per_s: f64,
    /// Median kernel-only time (data on the GPU), milliseconds; None when not measured.
    pub kernel_ms: Option<f64>,
    pub kernel_per_s: Option<f64>,
    pub registers: u32,
    /// Bytes of register spill stores + loads ptxas reported for this kernel.
    pub spill_bytes: u32,
    /// The kernel's symbol name (it spells out every switch, register cap and product included).
    pub kernel: String,
}

/// One point to measure.
#[derive(Debug, Clone)]
pub struct SweepPoint {
    pub experiment: String,
    pub config: CudaConfig,
    pub batch: usize,
    pub kernel_only: bool,
}

/// Batch sizes of the paper's Fig. 3: 2^10 … 2^20 and 172032.
pub fn fig3_sizes() -> Vec<usize> {
    let mut v: Vec<usize> = (10..=20).map(|k| 1usize << k).collect();
    v.push(172032);
    v.sort_unstable();
    v
}

fn cfg(
    mode: Mode,
    inversion: Inversion,
    compress: bool,
    row_major: bool,
    streams: usize,
    block: u32,
) -> CudaConfig {
    CudaConfig {
        kernel: KernelConfig {
            mode,
            inversion,
            compress,
            row_major,
            max_registers: None,
            ..KernelConfig::default()
        },
        streams,
        block_size: block,
        ..CudaConfig::default()
    }
    .exact()
}

/// The standard plan: (a) Fig. 3 throughput/latency vs batch size × streams for paper and fast mode,
/// (b) Table 1 stage ablations, (c) Euclid vs Fermat, (d) simultaneous vs separate, (e) block sizes.
/// `max_batch` caps the sizes (the records available).
pub fn standard_plan(max_batch: usize) -> Vec<SweepPoint> {
    let mut plan = Vec::new();
    let mut push = |experiment: &str, config: CudaConfig, batch: usize, kernel_only: bool| {
        if batch <= max_batch {
            plan.push(SweepPoint {
                experiment: experiment.into(),
                config,
                batch,
                kernel_only,
            });
        }
    };
    for (name, mode) in [("fig3_fast", Mode::Fast), ("fig3_paper", Mode::Paper)] {
        for streams in [1, 2, 4, 8, 16] {
            for &b in &fig3_sizes() {
                push(
                    name,
                    cfg(mode, Inversion::Euclid, true, false, streams, 128),
                    b,
                    streams == 1,
                );
            }
        }
    }
    for &b in &[172032usize, 1 << 20] {
        for mode in [Mode::Paper, Mode::Fast] {
            // Table 1: each stage's optimisation off in turn (paper baseline: compress, columns, 16 streams).
            push(
                "table1_all_on",
                cfg(mode, Inversion::Euclid, true, false, 16, 128),
                b,
                true,
            );
            push(
                "table1_no_compress",
                cfg(mode, Inversion::Euclid, false, false, 16, 128),
                b,
                true,
            );
            push(
                "table1_row_major",
                cfg(mode, Inversion::Euclid, true, true, 16, 128),
                b,
                true,
            );
            push(
                "table1_one_stream",
                cfg(mode, Inversion::Euclid, true, false, 1, 128),
                b,
                true,
            );
            for block in [64, 128, 256, 384, 512, 640, 1024] {
                push(
                    "block_size",
                    cfg(mode, Inversion::Euclid, true, false, 16, block),
                    b,
                    true,
                );
            }
        }
        for mode in [Mode::Paper, Mode::Fast] {
            // Register caps: more resident threads per multiprocessor against fewer registers each.
            for cap in [128u32, 96] {
                for block in [128u32, 256] {
                    let mut c = cfg(mode, Inversion::Euclid, true, false, 16, block);
                    c.kernel.max_registers = Some(cap);
                    push("regcap", c, b, true);
                }
            }
        }
        for product in [Product::EvenOdd, Product::RowChains] {
            // The product routine, in the default (register-capped) fast kernel and in paper mode.
            let mut fast = CudaConfig::default().exact();
            fast.kernel.product = product;
            push("product", fast, b, true);
            let mut paper = cfg(Mode::Paper, Inversion::Euclid, true, false, 16, 128);
            paper.kernel.product = product;
            push("product", paper, b, true);
        }
        push(
            "fig4_fermat",
            cfg(Mode::Paper, Inversion::Fermat, true, false, 16, 128),
            b,
            true,
        );
        push(
            "fig7_separate",
            cfg(Mode::Separate, Inversion::Euclid, true, false, 16, 128),
            b,
            true,
        );
        push(
            "fig7_separate_fermat",
            cfg(Mode::Separate, Inversion::Fermat, true, false, 16, 128),
            b,
            true,
        );
    }
    plan
}

/// The default kernel against its compact form (the doubling called, not inlined) across batch
/// sizes, end to end and kernel alone: where the backend's `compact_below` should switch.
pub fn compact_plan(max_batch: usize) -> Vec<SweepPoint> {
    let mut plan = Vec::new();
    for &b in &[4096usize, 16384, 65536, 172032, 262144, 524288, 1 << 20] {
        if b > max_batch {
            continue;
        }
        for compact in [false, true] {
            for kernel_only in [false, true] {
                let mut c = CudaConfig::default().exact();
                c.kernel.compact = compact;
                plan.push(SweepPoint {
                    experiment: "compact".into(),
                    config: c,
                    batch: b,
                    kernel_only,
                });
            }
        }
    }
    plan
}

/// One thread per signature (inlined and compact) against compact lane pairs (two per signature)
/// and the compact split kernel (four: pairs for t·P beside pairs for s·G), across the small and middle batch
/// sizes, end to end and kernel alone, and the stream count at 4096: which kernel small batches
/// should run, and up to which size.
pub fn pairs_plan(max_batch: usize) -> Vec<SweepPoint> {
    let mut plan = Vec::new();
    let base = KernelConfig::default_fast();
    let forms = [
        base,
        base.compacted(),
        base.compacted().paired(),
        base.compacted().split(),
        base.compacted().quad().split(),
    ];
    let mut push = |experiment: &str, kernel: KernelConfig, streams: usize, batch, kernel_only| {
        let mut c = CudaConfig::default().exact();
        c.kernel = kernel;
        c.streams = streams;
        plan.push(SweepPoint {
            experiment: experiment.into(),
            config: c,
            batch,
            kernel_only,
        });
    };
    for &b in &[
        1024usize, 2048, 4096, 8192, 16384, 32768, 65536, 172032, 262144,
    ] {
        if b > max_batch {
            continue;
        }
        for kernel in forms {
            for kernel_only in [false, true] {
                push("pairs", kernel, 8, b, kernel_only);
            }
        }
    }
    if max_batch >= 4096 {
        for streams in [1usize, 2, 4] {
            for kernel in &forms[2..] {
                push("pairs_streams", *kernel, streams, 4096, false);
            }
        }
    }
    plan
}

/// Register caps for the fast kernel with full keys (the default's form): caps that let 12, 14 or
/// 16 warps share an SM at 64, 128 or 256 threads per block.
pub fn regcap_plan_full_keys(max_batch: usize) -> Vec<SweepPoint> {
    let mut plan = Vec::new();
    for &b in &[4096usize, 172032, 1 << 20] {
        if b > max_batch {
            continue;
        }
        for cap in [168u32, 152, 144, 136, 128] {
            for block in [64u32, 128, 256] {
                let mut c = cfg(Mode::Fast, Inversion::Euclid, false, false, 8, block);
                c.kernel.max_registers = Some(cap);
                plan.push(SweepPoint {
                    experiment: "regcap_full_keys".into(),
                    config: c,
                    batch: b,
                    kernel_only: b != 4096,
                });
            }
        }
    }
    plan
}

/// Register caps for the fast and paper kernels against block size (occupancy against spills).
pub fn regcap_plan(max_batch: usize) -> Vec<SweepPoint> {
    let mut plan = Vec::new();
    for &b in &[172032usize, 1 << 20] {
        if b > max_batch {
            continue;
        }
        for mode in [Mode::Fast, Mode::Paper] {
            // The paper kernel only needs the caps near its own register count.
            let caps: &[Option<u32>] = match mode {
                Mode::Fast => &[None, Some(192), Some(168), Some(160), Some(128)],
                _ => &[None, Some(192)],
            };
            for product in [Product::EvenOdd, Product::RowChains] {
                for &cap in caps {
                    // 64-thread blocks fill an SM best when ~190 registers leave room for 10 warps.
                    for block in [64u32, 128, 256] {
                        let mut c = cfg(mode, Inversion::Euclid, true, false, 16, block);
                        c.kernel.max_registers = cap;
                        c.kernel.product = product;
                        plan.push(SweepPoint {
                            experiment: "regcap".into(),
                            config: c,
                            batch: b,
                            kernel_only: true,
                        });
                    }
                }
            }
        }
    }
    plan
}

/// The first `n` items of a batch as a batch of its own.
pub fn prefix(batch: &Batch, n: usize) -> Batch {
    let mut b = Batch::with_capacity(batch.alg(), batch.low_s(), n);
    for i in 0..n.min(batch.len()) {
        b.push(&batch.item(i));
    }
    b
}

fn reps_for(batch: usize) -> usize {
    if batch <= 1 << 16 {
        15
    } else {
        7
    }
}

/// Runs the plan over prefixes of `records` (reference verdicts `expected`); every run's bitmap is
/// compared with them and a mismatch is an error. `progress` sees each row as it is measured.
pub fn run_sweep(
    plan: &[SweepPoint],
    records: &Batch,
    expected: &Bitmap,
    mut progress: impl FnMut(&SweepRow),
) -> Result<Vec<SweepRow>, BackendError> {
    let mut backends: HashMap<String, CudaBackend> = HashMap::new();
    let mut batches: HashMap<usize, (Batch, Vec<u64>)> = HashMap::new();
    let mut rows = Vec::new();
    for point in plan {
        let key = format!("{:?}", point.config);
        if !backends.contains_key(&key) {
            match CudaBackend::new(point.config) {
                Ok(b) => {
                    backends.insert(key.clone(), b);
                }
                // A configuration this device cannot launch (too many registers for the block size)
                // or compile: reported and skipped, the rest of the plan still runs.
                Err(BackendError::Unavailable { reason, .. }) => {
                    eprintln!("skipped {} {:?}: {reason}", point.experiment, point.config);
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        let backend = &backends[&key];
        let (batch, want) = batches.entry(point.batch).or_insert_with(|| {
            let b = prefix(records, point.batch);
            let want = Bitmap::from_bools((0..point.batch).map(|i| expected.get(i)))
                .words()
                .to_vec();
            (b, want)
        });
        let check = |map: &Bitmap, what: &str| -> Result<(), BackendError> {
            if map.words() != want.as_slice() {
                return Err(BackendError::Device {
                    backend: "cuda".into(),
                    reason: format!(
                        "{what}: verdicts differ from the CPU reference ({:?}, batch {})",
                        point.config, point.batch
                    ),
                });
            }
            Ok(())
        };
        let reps = reps_for(point.batch);
        let mut times = Vec::new();
        for r in 0..reps + 2 {
            let (map, ms) = backend.verify_timed(batch)?;
            check(&map, "end to end")?;
            if r >= 2 {
                times.push(ms); // the first two runs warm up buffers and caches
            }
        }
        let e2e_ms = median(&mut times);
        let (kernel_ms, kernel_per_s) = if point.kernel_only {
            let (ms, map) = backend.time_kernel(batch, reps)?;
            check(&map, "kernel only")?;
            (
                Some(ms as f64),
                Some(point.batch as f64 / (ms as f64 / 1e3)),
            )
        } else {
            (None, None)
        };
        let k = point.config.kernel;
        let row = SweepRow {
            kernel: k.name(),
            experiment: point.experiment.clone(),
            mode: k.mode,
            inversion: k.inversion,
            compress: k.compress,
            row_major: k.row_major,
            streams: point.config.streams,
            block_size: point.config.block_size,
            batch: point.batch,
            reps,
            e2e_ms,
            e2e_per_s: point.batch as f64 / (e2e_ms / 1e3),
            kernel_ms,
            kernel_per_s,
            registers: backend
                .resources()
                .first()
                .map(|r| r.registers)
                .unwrap_or(0),
            spill_bytes: backend
                .resources()
                .first()
                .map(|r| r.spill_stores + r.spill_loads)
                .unwrap_or(0),
        };
        progress(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// CSV of the rows (header first).
pub fn to_csv(rows: &[SweepRow]) -> String {
    let mut s = String::from("experiment,mode,inversion,compress,row_major,streams,block_size,batch,reps,e2e_ms,e2e_per_s,kernel_ms,kernel_per_s,registers,spill_bytes,kernel\n");
    for r in rows {
        s.push_str(&format!(
            "{},{:?},{:?},{},{},{},{},{},{},{:.4},{:.0},{},{},{},{},{}\n",
            r.experiment,
            r.mode,
            r.inversion,
            r.compress,
            r.row_major,
            r.streams,
            r.block_size,
            r.batch,
            r.reps,
            r.e2e_ms,
            r.e2e_per_s,
            r.kernel_ms.map(|v| format!("{v:.4}")).unwrap_or_default(),
            r.kernel_per_s
                .map(|v| format!("{v:.0}"))
                .unwrap_or_default(),
            r.registers,
            r.spill_bytes,
            r.kernel
        ));
    }
    s
}
