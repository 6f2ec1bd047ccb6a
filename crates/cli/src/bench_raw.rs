//! `chainsig bench --raw FILE`: the user's whole path for raw transactions beside the backend
//! alone, on a file of length-prefixed raw signed transactions (`recover --raw`'s input).
//!
//! - the user path: `chainsig recover --raw`'s pipeline (`recover::recover_raw_frames`) from the
//!   file's bytes to answer lines in memory: reading and framing, the senders recovered (on the
//!   GPU under `--backend cuda`), the lines formatted and written in order;
//! - the backend alone: the file's transactions read into memory once beforehand, then only
//!   `recover_transactions` timed on all of them in one call (the host's refinement of the
//!   device's refusals included) — the engine's figure.
//!
//! Each is run once to warm up, then `--repeats` times; the median is reported. Every run's
//! answer lines must equal those made from the backend's own answers, line for line, or the
//! benchmark fails.

use crate::recover::{answer_raw_chunk, recover_raw_frames, Tally};
use anyhow::Context;
use chainsig_core::Registry;
use chainsig_eth::rawtx::frames::FrameReader;
use chainsig_eth::recover::recover_transactions;
use std::path::Path;
use std::time::Instant;

/// Runs both measurements on `path` and prints them.
pub fn run(registry: &Registry, backend: &str, path: &Path, repeats: usize) -> anyhow::Result<()> {
    let open =
        || crate::input::open_file(path).map(|f| std::io::BufReader::with_capacity(1 << 20, f));
    // The whole file as one chunk, and the lines its answers make.
    let whole = FrameReader::new(open()?)
        .chunk(usize::MAX, 0)
        .context("reading input")?;
    anyhow::ensure!(
        !whole.is_empty(),
        "{}: no records in the file: nothing was timed",
        crate::input::shown(path)
    );
    let expected = answer_raw_chunk(registry, backend, &whole)?;
    let mut expected_bytes = Vec::new();
    for line in &expected.lines {
        expected_bytes.extend_from_slice(line.as_bytes());
        expected_bytes.push(b'\n');
    }
    let txs: Vec<&[u8]> = (0..whole.len())
        .filter_map(|k| whole.record(k).ok())
        .collect();
    // The backend alone would time nothing and report 0 records/s as if it had measured it.
    anyhow::ensure!(
        !txs.is_empty(),
        "{}: none of its {} records could be framed: nothing was timed",
        crate::input::shown(path),
        whole.len()
    );
    let mut engine = Vec::new();
    let mut device = None;
    for run in 0..=repeats.max(1) {
        let started = Instant::now();
        let recovered = recover_transactions(registry, backend, &txs)?;
        if run > 0 {
            engine.push(started.elapsed().as_secs_f64());
        }
        device = recovered.device;
    }
    let mut user = Vec::new();
    for run in 0..=repeats.max(1) {
        let mut out = Vec::with_capacity(expected_bytes.len());
        let mut tally = Tally::default();
        let started = Instant::now();
        recover_raw_frames(registry, backend, open()?, &mut out, &mut tally)?;
        let seconds = started.elapsed().as_secs_f64();
        anyhow::ensure!(
            out == expected_bytes,
            "the user path's answer lines differ from the backend's alone"
        );
        if run > 0 {
            user.push(seconds);
        }
    }
    let (user, engine) = (
        chainsig_bench::median(&mut user),
        chainsig_bench::median(&mut engine),
    );
    let records = whole.len();
    println!(
        "{records} records ({} senders, {} errors) from {}; recovered on {}; median of {} runs",
        records as u64 - expected.failed,
        expected.failed,
        crate::input::shown(path),
        device.as_deref().unwrap_or("the host's cores"),
        repeats.max(1)
    );
    println!(
        "user path    {user:>9.3} s {:>14.0} records/s  (read, frame, recover, format, write)",
        records as f64 / user.max(1e-9)
    );
    println!(
        "backend only {engine:>9.3} s {:>14.0} records/s  (transactions in memory to senders, {} framed)",
        txs.len() as f64 / engine.max(1e-9),
        txs.len()
    );
    Ok(())
}
