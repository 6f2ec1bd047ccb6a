//! The GPU product check and sweep ([`run_gpu`]): correctness of every method on random and
//! extreme instances, the cross-check between methods, and the timing over the plan's sizes.

use super::*;
use chainsig_ctru::ParamSet;
use chainsig_ctru_cuda::{Error, GpuPolyMul, Method, Product};
use rand::Rng;

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
/// Errors: [`GpuError::Unavailable`] without a usable GPU; other errors when a device cannot be opened
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
