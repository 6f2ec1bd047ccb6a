//! `chainsig bench --from-file FILE`: the user's whole path beside the backend alone, on the
//! records of a JSON Lines file (as `chainsig gen` writes them), or with `--rows` of a file of
//! packed rows (as `chainsig gen --rows` writes them, `verify --rows` reads them).
//!
//! - the user path: `chainsig verify`'s pipeline ([`crate::verify_pipeline`]) from the file's
//!   bytes to verdict lines in memory, with its stage breakdown — what `chainsig verify --stats`
//!   reports, without the terminal or disk at the end;
//! - the backend alone: the same records read, parsed and prepared once beforehand, then only
//!   the backend's call timed (prepared records in host memory to verdicts in host memory, the
//!   batch built from them included) — the engine's figure.
//!
//! Each is run once to warm up (kernels loaded, buffers sized), then `--repeats` times; the
//! median is reported. Every run's verdict lines must equal those of the backend alone, line for
//! line, or the benchmark fails.

use crate::input::rows::RowChunks;
use crate::input::{self, TextChunk};
use crate::verify_pipeline::{self, Options, Stats, Summary};
use chainsig_core::record::VerifyDefaults;
use chainsig_core::rows::{self, RuleGroup};
use chainsig_core::Registry;
use chainsig_cpu::pipeline::{prepare_records, Verdict};
use chainsig_cpu::prepare::Preparer;
use std::path::Path;
use std::time::Instant;

/// Runs both measurements on `path` and prints them.
pub fn run(
    registry: &Registry,
    backend: &str,
    defaults: VerifyDefaults,
    path: &Path,
    chunk: usize,
    repeats: usize,
    rows: bool,
) -> anyhow::Result<()> {
    let options = Options {
        registry,
        backend,
        low_s: false,
        defaults,
        chunk,
        verdict_lines: true,
        rows,
    };
    let expected = backend_alone_lines(&options, path)?;
    let mut runs: Vec<(Summary, f64)> = Vec::new();
    for _ in 0..=repeats.max(1) {
        let mut out = Vec::with_capacity(expected.lines.len());
        let summary = verify_pipeline::run(&options, input::open(Some(path))?, &mut out)?;
        anyhow::ensure!(
            out == expected.lines,
            "the user path's verdict lines differ from the backend's alone"
        );
        let seconds = summary.stats.wall.as_secs_f64();
        runs.push((summary, seconds));
    }
    runs.remove(0); // the warm-up
    runs.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (median, _) = &runs[runs.len() / 2];
    let mut engine: Vec<f64> = expected.seconds.clone();
    let engine = chainsig_bench::median(&mut engine);
    let records = median.total();
    let backends: Vec<String> = median
        .used
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    println!(
        "{} records ({} valid, {} invalid, {} errors) from {}; backends {}; median of {} runs",
        records,
        median.valid,
        median.invalid,
        median.errors,
        path.display(),
        backends.join(","),
        runs.len()
    );
    println!(
        "user path    {:>9.3} s {:>14.0} records/s  (read, parse, prepare, verify, write)",
        median.stats.wall.as_secs_f64(),
        records as f64 / median.stats.wall.as_secs_f64().max(1e-9)
    );
    println!(
        "backend only {:>9.3} s {:>14.0} records/s  (prepared records in memory to verdicts)",
        engine,
        records as f64 / engine.max(1e-9)
    );
    print!("{}", median.stats.report());
    println!(
        "  once, before the backend-only runs: read {:.3} s, parse {:.3} s, prepare {:.3} s",
        expected.once.read.as_secs_f64(),
        expected.once.parse.as_secs_f64(),
        expected.once.prepare.as_secs_f64()
    );
    Ok(())
}

/// The backend alone: its verdict lines and the times of its runs (a warm-up, then `runs`).
struct BackendAlone {
    lines: Vec<u8>,
    seconds: Vec<f64>,
    /// Read, parse and prepare of the whole file, each done once, serially.
    once: Stats,
}

fn backend_alone_lines(options: &Options, path: &Path) -> anyhow::Result<BackendAlone> {
    let mut once = Stats::default();
    let t0 = Instant::now();
    // The whole file as one chunk, cut into lines or framed into rows as `verify` does it.
    let (n, groups, refused, t1, t2) = if options.rows {
        let chunks: Vec<_> =
            RowChunks::new(input::open_file(path)?, usize::MAX, false).collect::<Result<_, _>>()?;
        let t1 = Instant::now();
        let parsed: Vec<_> = chunks
            .iter()
            .flat_map(verify_pipeline::parse_row_chunk)
            .collect();
        let n = parsed.len();
        let mut refused = Vec::new();
        let groups = rows::group_by_low_s(parsed, |k, e| refused.push((k, e)));
        (n, groups, refused, t1, Instant::now())
    } else {
        let chunks: Vec<TextChunk> =
            input::text_chunks(input::open(Some(path))?, 1 << 40).collect::<Result<_, _>>()?;
        let t1 = Instant::now();
        let records: Vec<_> = chunks
            .iter()
            .flat_map(|chunk| verify_pipeline::parse_chunk(chunk, &options.defaults))
            .collect();
        let n = records.len();
        // One rule for every line: the command line's.
        let mut groups: [RuleGroup; 2] = Default::default();
        groups[usize::from(options.low_s)] = RuleGroup {
            indices: (0..n).collect(),
            records,
        };
        (n, groups, Vec::new(), t1, Instant::now())
    };
    // A benchmark of nothing would report 0 records/s as if it had measured something.
    anyhow::ensure!(
        n > 0,
        "{}: no records in the file: nothing was timed",
        input::shown(path)
    );
    let preparer = Preparer::new();
    let prepared: Vec<_> = groups
        .iter()
        .map(|g| prepare_records(options.registry, options.backend, &preparer, &g.records))
        .collect();
    let t3 = Instant::now();
    (once.read, once.parse, once.prepare) = (t1 - t0, t2 - t1, t3 - t2);
    let mut seconds = Vec::new();
    let mut verdicts: Vec<Option<Verdict>> = vec![None; n];
    for run in 0..=3 {
        let started = Instant::now();
        let mut outcomes = Vec::new();
        for (low_s, (group, prepared)) in groups.iter().zip(&prepared).enumerate() {
            if !group.records.is_empty() {
                let outcome = prepared.verify(options.registry, options.backend, low_s == 1)?;
                outcomes.push((group, outcome));
            }
        }
        if run > 0 {
            seconds.push(started.elapsed().as_secs_f64());
        }
        // Records every one of which was refused before a backend saw it would be timed as if
        // verified.
        let sent: usize = outcomes
            .iter()
            .flat_map(|(_, outcome)| outcome.batches.iter().map(|batch| batch.2))
            .sum();
        anyhow::ensure!(
            sent > 0,
            "{}: none of its {n} records could be checked: nothing was timed",
            input::shown(path)
        );
        for (group, outcome) in outcomes {
            for (&k, verdict) in group.indices.iter().zip(outcome.verdicts) {
                verdicts[k] = Some(verdict);
            }
        }
    }
    for (k, e) in refused {
        verdicts[k] = Some(Verdict::Error(e));
    }
    let (key, first) = verify_pipeline::numbering(options.rows);
    let mut out = Vec::new();
    for (k, verdict) in verdicts.iter().enumerate() {
        let verdict = verdict.as_ref().expect("every record answered");
        verify_pipeline::write_verdict(&mut out, key, first + k as u64, verdict)?;
    }
    Ok(BackendAlone {
        lines: out,
        seconds,
        once,
    })
}
