//! The whole KEM in batch on the GPU ([`run_gpu_kem`]): GPU encaps and decaps against the CPU's
//! on the same seeds, honest and tampered ciphertexts, then batch operations per second.

use super::*;
use chainsig_ctru::{decaps_with_verdict, encaps, keygen, Ciphertext, ParamSet, RandomSource};
use chainsig_ctru_cuda::{Error, GpuKem, KemTiming};
use rand::Rng;
use serde::Serialize;

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
pub(super) struct FixedSeed(pub(super) [u8; 32]);
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
