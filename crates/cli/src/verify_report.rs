//! What a `verify` run reports about itself: the time of each stage for `--stats` ([`Stats`])
//! and, where `CHAINSIG_VERIFY_TRACE` names a file, the chunk timeline ([`Trace`]).

use crate::verify_pipeline::Answer;
use std::io::Write;
use std::time::{Duration, Instant};

/// Busy time of each stage, summed over its threads, and the run's wall time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Reading the input and cutting it into lines (summed over the threads that read).
    pub read: Duration,
    /// JSON and hex decoding of the lines, or the reading of packed rows.
    pub parse: Duration,
    /// Key checks (SEC1 decompression, on-curve) and digests or Z_A.
    pub prepare: Duration,
    /// The backend's call: batching, staging and copies, and the verification itself.
    pub verify: Duration,
    /// Formatting and writing the verdict lines, in order.
    pub write: Duration,
    /// Within `verify`, on the GPU backend: chunks copied into its pinned staging buffers, and
    /// waiting for their copies and kernels ([`chainsig_cuda::PipelineTimes`]); `None` when no
    /// GPU backend started.
    pub gpu: Option<chainsig_cuda::PipelineTimes>,
    pub wall: Duration,
    /// Input bytes and lines.
    pub bytes: u64,
    pub records: u64,
}

impl Stats {
    /// The breakdown `--stats` prints: each stage's busy time (summed over its threads; stages
    /// overlap, so they may add up to more than the wall time) and its rate.
    pub fn report(&self) -> String {
        let rate = |d: Duration| self.records as f64 / d.as_secs_f64().max(1e-9);
        let mut text = format!(
            "stats: {} records, {:.1} MB in; wall {:.3} s ({:.0} records/s)\n",
            self.records,
            self.bytes as f64 / 1e6,
            self.wall.as_secs_f64(),
            rate(self.wall)
        );
        let mut rows = vec![
            (
                "read",
                self.read,
                "reading, cutting lines or framing rows (summed over threads)",
            ),
            ("parse", self.parse, "JSON and hex, or rows (all cores)"),
            (
                "prepare",
                self.prepare,
                "key checks, digests or Z_A (all cores)",
            ),
            (
                "verify",
                self.verify,
                "batching, staging, copies, verification",
            ),
        ];
        if let Some(gpu) = self.gpu {
            rows.push((
                " stage",
                gpu.stage,
                "of which: GPU chunks into pinned buffers",
            ));
            rows.push((
                "  grow",
                gpu.grow,
                "of which: larger pinned and device buffers made",
            ));
            rows.push((
                " wait",
                gpu.wait,
                "of which: waiting on GPU copies and kernels",
            ));
            rows.push((
                " queue",
                gpu.queue,
                "of which: waiting for a module's load or a free slot set",
            ));
        }
        rows.push(("write", self.write, "verdict lines, in order (1 thread)"));
        for (name, d, what) in rows {
            text += &format!(
                "  {name:<8}{:>9.3} s {:>14.0} records/s  {what}\n",
                d.as_secs_f64(),
                rate(d)
            );
        }
        text
    }
}

/// The variable naming a file for the chunk timeline ([`Trace`]).
const TRACE_VAR: &str = "CHAINSIG_VERIFY_TRACE";

/// The timeline of a run, a CSV line per chunk, written where `CHAINSIG_VERIFY_TRACE` says:
/// when its worker asked for it and got it (the wait is the reading), its parse, prepare and
/// verify times, when it was answered, and when the writer began and ended its lines; times in
/// milliseconds from the run's start, written as the chunks are. Where `--stats` gives each
/// stage's sum, this shows what waited on what.
pub(crate) struct Trace {
    file: std::io::BufWriter<std::fs::File>,
    /// The first failed write: reported once the run's answers are all written, as a trace that
    /// cannot be written does not stop the verification.
    failed: Option<std::io::Error>,
}

impl Trace {
    /// The trace the variable asks for, its file created now, so that a path that cannot be
    /// written is refused before any work.
    pub(crate) fn from_env() -> anyhow::Result<Option<Trace>> {
        let Some(path) = std::env::var_os(TRACE_VAR).filter(|p| !p.is_empty()) else {
            return Ok(None);
        };
        let path = std::path::PathBuf::from(path);
        let file = std::fs::File::create(&path).map_err(|e| {
            anyhow::Error::new(e).context(format!(
                "{TRACE_VAR}: cannot write {}",
                crate::input::shown(&path)
            ))
        })?;
        let mut trace = Trace {
            file: std::io::BufWriter::new(file),
            failed: None,
        };
        let header = writeln!(
            trace.file,
            "chunk,records,worker,asked_ms,got_ms,parse_ms,prepare_ms,verify_ms,done_ms,\
             write_from_ms,write_to_ms"
        );
        trace.keep(header);
        Ok(Some(trace))
    }

    /// Adds chunk `chunk`'s line.
    pub(crate) fn add(
        &mut self,
        chunk: u64,
        answer: &Answer,
        start: Instant,
        wrote: (Instant, Instant),
    ) {
        let at = |t: Option<Instant>| {
            t.map_or(f64::NAN, |t| t.duration_since(start).as_secs_f64() * 1e3)
        };
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let line = writeln!(
            self.file,
            "{chunk},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3}",
            answer.verdicts.len(),
            answer.worker,
            at(answer.asked),
            at(answer.got),
            ms(answer.parse),
            ms(answer.prepare),
            ms(answer.verify),
            at(answer.done),
            at(Some(wrote.0)),
            at(Some(wrote.1)),
        );
        self.keep(line);
    }

    /// Keeps the first failure of a write.
    fn keep(&mut self, written: std::io::Result<()>) {
        if let (Err(e), None) = (written, &self.failed) {
            self.failed = Some(e);
        }
    }

    /// Writes what is buffered (at the end of the run); the first failure, if any, as an error
    /// naming the variable.
    pub(crate) fn save(&mut self) -> anyhow::Result<()> {
        let flushed = self.file.flush();
        self.keep(flushed);
        match self.failed.take() {
            Some(e) => {
                Err(anyhow::Error::new(e).context(format!("{TRACE_VAR}: writing the trace")))
            }
            None => Ok(()),
        }
    }
}
