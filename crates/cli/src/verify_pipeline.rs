//! The path of `chainsig verify` (and of `chainsig bench --from-file`): JSON Lines (or, with
//! `--rows`, packed binary rows) in, verdict lines out, in order, with reading, parsing,
//! preparing, verifying and writing overlapped.
//!
//! Stages and threads:
//! - a file named by path is read by the workers themselves, each its own byte range
//!   ([`crate::input::ranges`]), so reading runs on as many threads as there are workers; any
//!   other input (standard input, a pipe) is read by one reader thread ([`crate::input`]), which
//!   cuts it into chunks of lines; packed rows ([`crate::input::rows`]) are framed by one reader
//!   too, whichever worker takes the next chunk;
//! - [`workers`] workers each take the next chunk and parse it, prepare it (key checks, digests;
//!   both on every core through rayon) and verify it on the backend, at most `--chunk` records a
//!   call. While one worker waits on the GPU, the others read, parse and prepare the next chunks;
//!   the GPU engine takes one batch at a time, in the order they reach it;
//! - the calling thread, the writer, puts the workers' answers back in input order, numbers their
//!   lines and writes them.
//!
//! Every stage's busy time is counted ([`Stats`], in [`crate::verify_report`] with the chunk
//! timeline) for `--stats`. Chunks in flight are bounded: at
//! most two waiting in the reader thread, one per worker, and one answer per worker waiting for the
//! writer.

use crate::input::ranges::FileRanges;
use crate::input::rows::{RowChunk, RowChunks};
use crate::input::{Input, TextChunk, TextChunks};
use crate::ordered::Sequenced;
pub use crate::verify_report::Stats;
use crate::verify_report::Trace;
use chainsig_core::record::{parse_verify_line, VerifyDefaults, VerifyRecord};
use chainsig_core::{rows, Algorithm, RecordError, Registry};
use chainsig_cpu::pipeline::{prepare_records, Verdict};
use chainsig_cpu::prepare::Preparer;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

/// Chunks in hand at once when not set: one on the backend while the others are read, parsed
/// and prepared. Four: the GPU verifies a chunk in about a quarter of the time the host needs
/// for it.
pub const WORKERS: usize = 4;

/// The variable that sets the chunks in hand.
const WORKERS_VAR: &str = "CHAINSIG_VERIFY_WORKERS";

/// Chunks in hand at once: `CHAINSIG_VERIFY_WORKERS` (1 to 64) when set, else [`WORKERS`]; any
/// other value is an error naming it.
pub fn workers() -> anyhow::Result<usize> {
    parse_workers(std::env::var_os(WORKERS_VAR).as_deref())
}

/// A value of `CHAINSIG_VERIFY_WORKERS`: unset or empty for [`WORKERS`], else a whole number from
/// 1 to 64 in decimal, nothing else.
fn parse_workers(value: Option<&std::ffi::OsStr>) -> anyhow::Result<usize> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(WORKERS);
    };
    let shown: String = value.to_string_lossy().chars().take(40).collect();
    value
        .to_str()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| (1..=64).contains(n))
        .ok_or_else(|| {
            anyhow::anyhow!("{WORKERS_VAR}={shown:?}: expected a whole number from 1 to 64")
        })
}

/// What the pipeline needs besides its input and output.
pub struct Options<'a> {
    pub registry: &'a Registry,
    /// A backend name or `auto`.
    pub backend: &'a str,
    pub low_s: bool,
    pub defaults: VerifyDefaults,
    /// Most lines per chunk.
    pub chunk: usize,
    /// Write verdict lines (false: count only, as `--summary`).
    pub verdict_lines: bool,
    /// The input is packed rows (`chainsig_core::rows`), not JSON Lines: each row carries its
    /// own algorithm, hash and low-s rule, and answers count records from 0.
    pub rows: bool,
}

/// The counts of a run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub valid: u64,
    pub invalid: u64,
    pub errors: u64,
    /// Records by "algorithm:backend".
    pub used: BTreeMap<String, u64>,
    pub stats: Stats,
}

impl Summary {
    pub fn total(&self) -> u64 {
        self.valid + self.invalid + self.errors
    }
}

/// A worker's answer for one chunk: its verdicts, in order, and its stage times.
#[derive(Default)]
pub(crate) struct Answer {
    pub(crate) verdicts: Vec<Verdict>,
    batches: Vec<(String, usize)>,
    bytes: u64,
    pub(crate) parse: Duration,
    pub(crate) prepare: Duration,
    pub(crate) verify: Duration,
    /// When the worker asked for the chunk, got it, and had answered it (for the trace).
    pub(crate) asked: Option<Instant>,
    pub(crate) got: Option<Instant>,
    pub(crate) done: Option<Instant>,
    /// The worker thread that answered it (for the trace).
    pub(crate) worker: String,
}

/// Where the workers take their chunks: a file's byte ranges, read by each worker itself, the
/// chunks of the reader thread, or chunks of packed rows framed by whichever worker asks.
enum Source {
    Ranges(FileRanges),
    Reader(Sequenced<TextChunks>),
    Rows(Sequenced<RowChunks<Box<dyn std::io::Read + Send>>>),
}

/// A chunk of either input.
enum Chunk {
    Text(TextChunk),
    Rows(RowChunk),
}

impl Source {
    fn new(input: Input, chunk: usize, rows: bool) -> std::io::Result<Self> {
        if rows {
            let prompt = input.streaming();
            return Ok(Source::Rows(Sequenced::new(RowChunks::new(
                input.into_reader(),
                chunk,
                prompt,
            ))));
        }
        Ok(match input.into_file() {
            Ok(file) => Source::Ranges(FileRanges::new(file, chunk)?),
            Err(input) => Source::Reader(Sequenced::new(crate::input::text_chunks(input, chunk))),
        })
    }

    /// The next chunk and its place in the output, taken together.
    fn next(&self) -> Option<(u64, std::io::Result<Chunk>)> {
        match self {
            Source::Ranges(ranges) => ranges.next().map(|(k, c)| (k, c.map(Chunk::Text))),
            Source::Reader(reader) => reader.next().map(|(k, c)| (k, c.map(Chunk::Text))),
            Source::Rows(reader) => reader.next().map(|(k, c)| (k, c.map(Chunk::Rows))),
        }
    }

    fn read_time(&self) -> Duration {
        match self {
            Source::Ranges(ranges) => ranges.read_time(),
            Source::Reader(reader) => reader.inspect(TextChunks::read_time),
            Source::Rows(reader) => reader.inspect(RowChunks::read_time),
        }
    }
}

/// Runs the pipeline over `input`, writing verdict lines to `out`; returns the counts and the
/// stage times. A read error or a backend failure stops the run after the answers before it have
/// been written.
pub fn run(opts: &Options, input: Input, out: impl Write) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let gpu_before = crate::backends::started_cuda().map(|c| c.pipeline_times());
    let preparer = Preparer::new();
    // Held to the end of the run: dropping it waits for the warm-up.
    let _warm_up = crate::backends::warm_up(opts.backend, || {
        first_algorithm(opts, &input).map(chainsig_cuda::Upcoming::Verify)
    });
    let source = Source::new(input, opts.chunk, opts.rows)
        .map_err(|e| anyhow::Error::new(e).context("reading input"))?;
    let (key, first) = numbering(opts.rows);
    let mut writer = Writer {
        out: std::io::BufWriter::with_capacity(1 << 20, out),
        verdict_lines: opts.verdict_lines,
        key,
        line: first,
        summary: Summary::default(),
        trace: Trace::from_env()?,
        chunks: 0,
        started,
    };
    let tracing = writer.trace.is_some();
    crate::ordered::run(
        workers()?,
        || {
            let asked = Instant::now();
            let (seq, chunk) = source.next()?;
            Some((seq, chunk.map(|c| (asked, Instant::now(), c))))
        },
        |(asked, got, chunk)| {
            let mut answer = answer(opts, &preparer, &chunk)?;
            answer.asked = Some(asked);
            answer.got = Some(got);
            answer.done = Some(Instant::now());
            // Workers name themselves only for the trace.
            if tracing {
                answer.worker = format!("{:?}", std::thread::current().id());
            }
            Ok(answer)
        },
        |answer| writer.write(answer),
    )?;
    if let Some(trace) = &mut writer.trace {
        trace.save()?;
    }
    let mut summary = writer.summary;
    summary.stats.read = source.read_time();
    summary.stats.wall = started.elapsed();
    summary.stats.gpu = crate::backends::started_cuda()
        .zip(gpu_before)
        .map(|(cuda, before)| cuda.pipeline_times().since(&before));
    Ok(summary)
}

/// The algorithm of the run's first record, when it is known before the run: from the first line
/// (or row) of a file named by path, read without moving it ([`Input::peek_start`]), else
/// `--alg`. What the GPU backend loads ahead of the first batch ([`crate::backends::warm_up`]).
fn first_algorithm(opts: &Options, input: &Input) -> Option<Algorithm> {
    const PEEK: usize = 64 << 10;
    let from_file = input.peek_start(PEEK).and_then(|start| {
        if opts.rows {
            let row = &start[..rows::frame(&start)?];
            return rows::parse_row(row).ok().map(|(record, _)| record.alg);
        }
        let line = start.split(|&b| b == b'\n').next()?;
        let line = std::str::from_utf8(line).ok()?;
        parse_verify_line(line, &opts.defaults).ok().map(|r| r.alg)
    });
    from_file.or(opts.defaults.alg)
}

/// Parses, prepares and verifies one chunk, `opts.chunk` records at most a backend call.
fn answer(opts: &Options, preparer: &Preparer, chunk: &Chunk) -> anyhow::Result<Answer> {
    match chunk {
        Chunk::Text(text) => {
            let t0 = Instant::now();
            let records = parse_chunk(text, &opts.defaults);
            let parse = t0.elapsed();
            let mut answer = verify_records(opts, preparer, &records, opts.low_s)?;
            free_later(records);
            answer.bytes = text.bytes() as u64;
            answer.parse = parse;
            Ok(answer)
        }
        Chunk::Rows(rows) => answer_rows(opts, preparer, rows),
    }
}

/// A chunk of packed rows: parsed on every core, then verified in two groups, the rows with the
/// low-s flag and those without, the verdicts put back in row order.
fn answer_rows(opts: &Options, preparer: &Preparer, chunk: &RowChunk) -> anyhow::Result<Answer> {
    let t0 = Instant::now();
    let parsed = parse_row_chunk(chunk);
    let parse = t0.elapsed();
    let mut verdicts: Vec<Option<Verdict>> = vec![None; parsed.len()];
    let groups = rows::group_by_low_s(parsed, |k, e| verdicts[k] = Some(Verdict::Error(e)));
    let mut answer = Answer {
        parse,
        bytes: chunk.bytes_read(),
        ..Answer::default()
    };
    for (low_s, group) in groups.iter().enumerate() {
        if group.records.is_empty() {
            continue;
        }
        let verified = verify_records(opts, preparer, &group.records, low_s == 1)?;
        answer.prepare += verified.prepare;
        answer.verify += verified.verify;
        answer.batches.extend(verified.batches);
        for (&k, verdict) in group.indices.iter().zip(verified.verdicts) {
            verdicts[k] = Some(verdict);
        }
    }
    free_later(groups);
    answer.verdicts = verdicts
        .into_iter()
        .map(|v| v.expect("every row answered: an error, or a verdict of its group"))
        .collect();
    Ok(answer)
}

/// Frees a chunk's decoded records on rayon's pool, off the worker's path. They are a few heap
/// blocks each (key, message, identifier), allocated by the pool's threads while parsing, so the
/// worker freed some 200,000 blocks of other threads' heaps one by one, with every later chunk of
/// the worker behind it: on an H100 host's timelines the time between a chunk's verdicts and its
/// answer went from 6–14 ms to about 1 ms (BENCHMARKS.md, "The GPU user paths after the staging
/// pool").
fn free_later<T: Send + 'static>(records: T) {
    rayon::spawn(move || drop(records));
}

/// Prepares and verifies `records` under one low-s rule, at most `opts.chunk` a backend call.
fn verify_records(
    opts: &Options,
    preparer: &Preparer,
    records: &[Result<VerifyRecord, RecordError>],
    low_s: bool,
) -> anyhow::Result<Answer> {
    let mut answer = Answer {
        verdicts: Vec::with_capacity(records.len()),
        ..Answer::default()
    };
    for piece in records.chunks(opts.chunk.max(1)) {
        let t2 = Instant::now();
        let prepared = prepare_records(opts.registry, opts.backend, preparer, piece);
        let t3 = Instant::now();
        let outcome = prepared.verify(opts.registry, opts.backend, low_s)?;
        answer.verify += t3.elapsed();
        answer.prepare += t3 - t2;
        answer.verdicts.extend(outcome.verdicts);
        answer.batches.extend(
            outcome
                .batches
                .into_iter()
                .map(|(alg, backend, n)| (format!("{alg}:{backend}"), n)),
        );
    }
    Ok(answer)
}

/// Decodes the lines of `chunk` on every core, record k from line k.
pub fn parse_chunk(
    chunk: &TextChunk,
    defaults: &VerifyDefaults,
) -> Vec<Result<VerifyRecord, RecordError>> {
    (0..chunk.len())
        .into_par_iter()
        .with_min_len(256)
        .map(|k| match chunk.line(k) {
            Ok(text) => parse_verify_line(text, defaults),
            Err(reason) => Err(RecordError::new("", reason)),
        })
        .collect()
}

/// Decodes the rows of `chunk` on every core, record k from row k, with the low-s rule of each.
pub fn parse_row_chunk(chunk: &RowChunk) -> Vec<Result<(VerifyRecord, bool), RecordError>> {
    (0..chunk.len())
        .into_par_iter()
        .with_min_len(256)
        .map(|k| match chunk.row(k) {
            Ok(row) => rows::parse_row(row).map_err(|e| RecordError::new("row", e.why)),
            Err(why) => Err(RecordError::new("row", why.to_string())),
        })
        .collect()
}

/// How verdict lines name their record: `line` from 1 for JSON Lines, `record` from 0 for packed
/// rows.
pub fn numbering(rows: bool) -> (&'static str, u64) {
    if rows {
        ("record", 0)
    } else {
        ("line", 1)
    }
}

/// The writer: each chunk's verdict lines, in order, numbered and flushed as soon as they are
/// written (a producer waiting on its answers is not kept waiting), and the counts.
struct Writer<W: Write> {
    out: std::io::BufWriter<W>,
    verdict_lines: bool,
    /// What answers call a record ([`numbering`]).
    key: &'static str,
    /// The number of the next line (1-based), or of the next record (0-based).
    line: u64,
    summary: Summary,
    /// The chunk timeline, when asked for ([`Trace`]), the chunks written, and the run's start.
    trace: Option<Trace>,
    chunks: u64,
    started: Instant,
}

impl<W: Write> Writer<W> {
    fn write(&mut self, mut answer: Answer) -> anyhow::Result<()> {
        let started = Instant::now();
        let chunk = self.chunks;
        self.chunks += 1;
        let summary = &mut self.summary;
        let stats = &mut summary.stats;
        stats.parse += answer.parse;
        stats.prepare += answer.prepare;
        stats.verify += answer.verify;
        stats.bytes += answer.bytes;
        stats.records += answer.verdicts.len() as u64;
        for (key, n) in std::mem::take(&mut answer.batches) {
            *summary.used.entry(key).or_default() += n as u64;
        }
        // A chunk's answers are written whole, or not at all on SIGTERM (crate::stop).
        let _writing = crate::stop::writing();
        for verdict in &answer.verdicts {
            match verdict {
                Verdict::Valid => summary.valid += 1,
                Verdict::Invalid => summary.invalid += 1,
                Verdict::Error(_) => summary.errors += 1,
            }
            if self.verdict_lines {
                write_verdict(&mut self.out, self.key, self.line, verdict)?;
            }
            self.line += 1;
        }
        self.out.flush()?;
        summary.stats.write += started.elapsed();
        if let Some(trace) = &mut self.trace {
            trace.add(chunk, &answer, self.started, (started, Instant::now()));
        }
        Ok(())
    }
}

/// One verdict line of `verify`'s output: `key` is `line` (JSON Lines input, from 1) or
/// `record` (packed rows, from 0).
pub fn write_verdict(
    out: &mut impl Write,
    key: &str,
    number: u64,
    verdict: &Verdict,
) -> std::io::Result<()> {
    match verdict {
        Verdict::Valid => writeln!(out, r#"{{"{key}":{number},"valid":true}}"#),
        Verdict::Invalid => writeln!(out, r#"{{"{key}":{number},"valid":false}}"#),
        Verdict::Error(e) => writeln!(
            out,
            "{}",
            serde_json::json!({key: number, "error": e.to_string()})
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{first_algorithm, parse_workers, Options, WORKERS};
    use chainsig_core::record::{parse_verify_line, VerifyDefaults};
    use chainsig_core::{rows, Algorithm, Registry};
    use std::ffi::OsStr;
    use std::io::Write;

    /// What the GPU is warmed up for: the first record's algorithm from a file's first line or
    /// row, `--alg` where the file's start says nothing or the input is not a file.
    #[test]
    fn the_first_algorithm_comes_from_the_files_first_record_or_from_alg() {
        let registry = Registry::new();
        let options = |alg: Option<Algorithm>, rows: bool| Options {
            registry: &registry,
            backend: "cpu",
            low_s: false,
            defaults: VerifyDefaults { alg, hash: None },
            chunk: 16,
            verdict_lines: true,
            rows,
        };
        let line = r#"{"alg":"secp256k1","pubkey":"02a1633cafcc01ebfb6d78e39f687a1f0995c62fc95f51ead10a02ee0be551b5dc","msg":"00","sig":"00000000000000000000000000000000000000000000000000000000000000010000000000000000000000000000000000000000000000000000000000000001"}"#;
        let file = |bytes: &[u8]| {
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(bytes).unwrap();
            f
        };
        let open = |f: &tempfile::NamedTempFile| crate::input::open(Some(f.path())).unwrap();
        let json = file(format!("{line}\n{line}\n").as_bytes());
        let p256 = Some(Algorithm::P256);
        assert_eq!(
            first_algorithm(&options(p256, false), &open(&json)),
            Some(Algorithm::Secp256k1)
        );
        // A first line that is not a record says nothing; --alg is used, or nothing.
        let junk = file(b"not json\n");
        assert_eq!(first_algorithm(&options(p256, false), &open(&junk)), p256);
        assert_eq!(first_algorithm(&options(None, false), &open(&junk)), None);
        // Packed rows: the first row's algorithm byte.
        let record = parse_verify_line(line, &VerifyDefaults::default()).unwrap();
        let mut packed = Vec::new();
        rows::push_row(&mut packed, &record, true).unwrap();
        rows::push_row(&mut packed, &record, false).unwrap();
        let packed = file(&packed);
        assert_eq!(
            first_algorithm(&options(None, true), &open(&packed)),
            Some(Algorithm::Secp256k1)
        );
        // The peek leaves the file where it was: the run still reads it from its start.
        let input = open(&json);
        first_algorithm(&options(None, false), &input);
        let mut all = String::new();
        std::io::Read::read_to_string(&mut input.into_reader(), &mut all).unwrap();
        assert_eq!(all, format!("{line}\n{line}\n"));
        // Standard input cannot be peeked: --alg alone.
        let stdin = crate::input::open(None).unwrap();
        assert_eq!(first_algorithm(&options(p256, false), &stdin), p256);
    }

    #[test]
    fn the_workers_variable_is_a_count_from_1_to_64_or_refused() {
        assert_eq!(parse_workers(None).unwrap(), WORKERS);
        assert_eq!(parse_workers(Some(OsStr::new(""))).unwrap(), WORKERS);
        assert_eq!(parse_workers(Some(OsStr::new("1"))).unwrap(), 1);
        assert_eq!(parse_workers(Some(OsStr::new("64"))).unwrap(), 64);
        for bad in [
            "0",
            "65",
            "4.0",
            "-1",
            " 4",
            "four",
            "99999999999999999999999",
        ] {
            let e = parse_workers(Some(OsStr::new(bad)))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("CHAINSIG_VERIFY_WORKERS=") && e.contains(bad),
                "{e}"
            );
        }
        let long = "9".repeat(10_000);
        let e = parse_workers(Some(OsStr::new(&long)))
            .unwrap_err()
            .to_string();
        assert!(e.len() < 120, "the value is cut: {e}");
    }
}
