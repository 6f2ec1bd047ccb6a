//! A regular file read in byte ranges by several threads at once, each range cut into lines by
//! the thread that read it: `chainsig verify`'s workers read their own chunks, so reading scales
//! with them instead of being one thread's copy (about 1.7 GB/s on the GPU host, 3.4 × 10⁶ SM2
//! records/s, less than the GPU verifies).
//!
//! A line belongs to the range its first byte lies in. A thread looks for the first line start in
//! its range (just after the first newline from the byte before the range on), reads the range
//! from there, cuts lines with `memchr`, and reads on past the range's end to finish its last
//! line. So every line is read whole by exactly one thread, whatever the ranges' sizes. Newlines
//! are looked for a few KB at a time, so a range lying inside one long line is read past, not
//! held, and has no lines; a line longer than [`MAX_LINE`] running past its range is skipped as
//! it is read, never held whole.
//!
//! Ranges are numbered in file order as they are taken; their readers don't know how many lines
//! come before them (their chunks' `first` is 0), so the consumer, who puts chunks back in order,
//! numbers the lines. Reads are positioned (`pread`): threads share the file without seeking.

use super::{Buffers, TextChunk, MAX_LINE, READ_BLOCK};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes first read when looking for a newline (lines are usually far shorter).
const PROBE: usize = 4 << 10;
/// Bytes sampled from the file's start to estimate its bytes per line.
const SAMPLE: usize = 4 << 20;
/// Bytes of a range one thread reads and scans: a range of 31 MB (65,536 SM2 records) is read
/// by up to 16 threads.
const READ_PIECE: usize = 2 << 20;
/// Bounds of a range: large enough that a chunk keeps a GPU busy, small enough that a file of
/// long lines does not put hundreds of MB in one chunk.
const MIN_SPAN: u64 = 1 << 20;
const MAX_SPAN: u64 = 64 << 20;

/// A file being read range by range.
pub struct FileRanges {
    file: File,
    /// The file's length when it was opened: bytes appended later are not read.
    len: u64,
    /// Bytes per range.
    span: u64,
    /// Bytes of a range one thread reads ([`READ_PIECE`]; smaller in tests).
    piece: usize,
    /// The next range's number and first byte.
    next: Mutex<(u64, u64)>,
    /// Time spent reading and cutting lines, summed over the threads, in nanoseconds.
    busy: AtomicU64,
    buffers: Arc<Buffers>,
}

impl FileRanges {
    /// Ranges of `file` (read from its start) holding about `lines` lines each, judged by the
    /// bytes per line of the file's first few MB.
    pub fn new(file: File, lines: usize) -> io::Result<Self> {
        let len = file.metadata()?.len();
        let mut sample = vec![0; SAMPLE.min(len as usize)];
        let got = read_at_most(&file, &mut sample, 0)?;
        let newlines = memchr::memchr_iter(b'\n', &sample[..got]).count();
        // No newline in the sample: lines are long, so the ranges are as large as allowed.
        let per_line = got.checked_div(newlines).map_or(MAX_SPAN, |b| b as u64);
        let span = (per_line * lines.max(1) as u64).clamp(MIN_SPAN, MAX_SPAN);
        Ok(Self::with_span(file, len, span))
    }

    fn with_span(file: File, len: u64, span: u64) -> Self {
        FileRanges {
            file,
            len,
            span,
            piece: READ_PIECE,
            next: Mutex::new((0, 0)),
            busy: AtomicU64::new(0),
            buffers: Arc::new(Buffers::default()),
        }
    }

    /// The next range's number and its lines (none when the range lies inside one line), or
    /// `None` once the file is read. A read error is that range's answer; later ranges still
    /// read.
    pub fn next(&self) -> Option<(u64, io::Result<TextChunk>)> {
        let (seq, start) = {
            let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
            let (seq, start) = *next;
            if start >= self.len {
                return None;
            }
            *next = (seq + 1, start + self.span);
            (seq, start)
        };
        let started = Instant::now();
        let chunk = self.read(start, (start + self.span).min(self.len));
        self.busy
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Some((seq, chunk))
    }

    /// Time spent reading and cutting lines so far, summed over the threads.
    pub fn read_time(&self) -> Duration {
        Duration::from_nanos(self.busy.load(Ordering::Relaxed))
    }

    /// The lines starting in bytes `start..end`.
    fn read(&self, start: u64, end: u64) -> io::Result<TextChunk> {
        // Line starts: the file's, and those just after a newline.
        let first = match start {
            0 => 0,
            _ => match self.find_newline(start - 1, end - 1)? {
                Some(newline) => newline + 1,
                None => return Ok(TextChunk::starting_at(0, Vec::new())),
            },
        };
        let len = (end - first) as usize;
        let text = self.buffers.take_filled(len, len + READ_BLOCK);
        let mut chunk = TextChunk::starting_at(0, text);
        chunk.pool = Some(self.buffers.clone());
        // The range in pieces read and scanned for newlines side by side: one thread's copy
        // from the page cache (about 2 GB/s) was the longest stage of a chunk of SM2 records on
        // the GPU host, 13–22 ms of 65,536 lines (BENCHMARKS.md, the chunk timeline).
        let newlines = {
            use rayon::prelude::*;
            chunk
                .text
                .par_chunks_mut(self.piece)
                .enumerate()
                .map(|(p, piece)| {
                    let at = p * self.piece;
                    self.read_exact(piece, first + at as u64)?;
                    Ok(memchr::memchr_iter(b'\n', piece)
                        .map(|k| at + k + 1)
                        .collect::<Vec<usize>>())
                })
                .collect::<io::Result<Vec<Vec<usize>>>>()?
        };
        for end in newlines.into_iter().flatten() {
            chunk.end_line(end);
        }
        let scan = chunk.tail();
        if scan < chunk.text.len() {
            self.finish_last_line(&mut chunk, end)?;
        }
        Ok(chunk)
    }

    /// Where the first newline in bytes `from..to` is, read without keeping them: a few KB first
    /// (lines are usually far shorter), twice as many each time none turns up, up to a block.
    fn find_newline(&self, mut from: u64, to: u64) -> io::Result<Option<u64>> {
        let mut block = vec![0; PROBE];
        while from < to {
            let want = (to - from).min(block.len() as u64) as usize;
            self.read_exact(&mut block[..want], from)?;
            if let Some(at) = memchr::memchr(b'\n', &block[..want]) {
                return Ok(Some(from + at as u64));
            }
            from += want as u64;
            if block.len() < READ_BLOCK {
                block.resize(2 * block.len(), 0);
            }
        }
        Ok(None)
    }

    /// Reads on from `pos` until the chunk's last line ends (at a newline or the file's end),
    /// skipping it once it is longer than [`MAX_LINE`].
    fn finish_last_line(&self, chunk: &mut TextChunk, mut pos: u64) -> io::Result<()> {
        loop {
            if chunk.text.len() - chunk.tail() > MAX_LINE {
                // Read past the rest of it, to its newline or the file's end, without keeping it.
                chunk.text.truncate(chunk.tail());
                self.find_newline(pos, self.len)?;
                chunk.end_skipped_line();
                return Ok(());
            }
            let want = (self.len - pos).min(READ_BLOCK as u64) as usize;
            if want == 0 {
                chunk.end_line(chunk.text.len());
                return Ok(());
            }
            let old = chunk.text.len();
            chunk.text.resize(old + want, 0);
            self.read_exact(&mut chunk.text[old..], pos)?;
            pos += want as u64;
            if let Some(at) = memchr::memchr(b'\n', &chunk.text[old..]) {
                chunk.text.truncate(old + at + 1);
                chunk.end_line(old + at + 1);
                return Ok(());
            }
        }
    }

    /// Fills `buf` from byte `pos`; a file that shrank since it was opened is an error.
    fn read_exact(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, pos).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file became shorter while it was being read",
                )
            } else {
                e
            }
        })
    }
}

/// Reads up to `buf.len()` bytes from `pos`, fewer only at the file's end.
pub(super) fn read_at_most(file: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], pos + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A temporary file holding `text`.
    fn file_of(text: &[u8]) -> File {
        let mut file = tempfile::tempfile().expect("temporary file");
        file.write_all(text).expect("write");
        file
    }

    /// Every line of `text` read in ranges of `span` bytes, in order, with the number of ranges.
    fn lines_in_ranges(text: &[u8], span: u64) -> (Vec<Result<String, &'static str>>, usize) {
        lines_in_pieces(text, span, READ_PIECE)
    }

    /// As [`lines_in_ranges`], each range read by threads `piece` bytes at a time.
    fn lines_in_pieces(
        text: &[u8],
        span: u64,
        piece: usize,
    ) -> (Vec<Result<String, &'static str>>, usize) {
        let mut ranges = FileRanges::with_span(file_of(text), text.len() as u64, span);
        ranges.piece = piece;
        let mut lines = Vec::new();
        let mut count = 0;
        while let Some((seq, chunk)) = ranges.next() {
            assert_eq!(seq, count as u64, "ranges come numbered in order");
            count += 1;
            let chunk = chunk.expect("read");
            lines.extend((0..chunk.len()).map(|k| chunk.line(k).map(str::to_string)));
        }
        (lines, count)
    }

    #[test]
    fn every_line_comes_once_in_order_whatever_the_span() {
        let text = b"first\r\n\nthird line\nfour\nfifth, no newline";
        let want: Vec<Result<String, &str>> =
            ["first", "", "third line", "four", "fifth, no newline"]
                .iter()
                .map(|l| Ok(l.to_string()))
                .collect();
        for span in 1..=text.len() as u64 + 1 {
            let (lines, ranges) = lines_in_ranges(text, span);
            assert_eq!(lines, want, "span {span}");
            assert_eq!(ranges, text.len().div_ceil(span as usize), "span {span}");
        }
        // A file ending with a newline has no empty last line.
        for span in [1, 3, 100] {
            assert_eq!(
                lines_in_ranges(b"a\nb\n", span).0,
                [Ok("a".into()), Ok("b".into())]
            );
        }
        assert_eq!(lines_in_ranges(b"", 4).0, []);
    }

    /// Random texts (lines of random lengths, blank ones, carriage returns, a missing final
    /// newline) read in ranges of random spans give the lines the one-thread reader gives.
    #[test]
    fn ranges_give_the_reader_threads_lines_on_random_texts() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
        for round in 0..300 {
            let mut text = Vec::new();
            for _ in 0..rng.gen_range(0..40) {
                let len = [0, 1, 2, 5, 30, 300][rng.gen_range(0..6)];
                text.extend((0..len).map(|_| rng.gen_range(b' '..=b'~')));
                if rng.gen_bool(0.1) {
                    text.push(b'\r');
                }
                text.push(b'\n');
            }
            if rng.gen_bool(0.5) {
                text.extend_from_slice(b"no newline");
            }
            let input = super::super::Input::from_reader(std::io::Cursor::new(text.clone()), false);
            let want: Vec<Result<String, &str>> = super::super::text_chunks(input, 7)
                .flat_map(|c| {
                    let c = c.expect("read");
                    (0..c.len())
                        .map(|k| c.line(k).map(str::to_string))
                        .collect::<Vec<_>>()
                })
                .collect();
            let span = rng.gen_range(1..=text.len().max(1) as u64 + 3);
            let piece = rng.gen_range(1..=span as usize + 2);
            assert_eq!(
                lines_in_pieces(&text, span, piece).0,
                want,
                "round {round}, span {span}, piece {piece}"
            );
        }
    }

    #[test]
    fn a_line_past_the_limit_is_skipped_and_the_next_ones_read() {
        let mut text = b"short\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 1));
        text.extend_from_slice(b"\nafter\n");
        text.extend(std::iter::repeat_n(b'y', MAX_LINE));
        text.extend_from_slice(b"\nlast, too long:");
        text.extend(std::iter::repeat_n(b'z', MAX_LINE));
        let exact = "y".repeat(MAX_LINE);
        for span in [MIN_SPAN, 5 << 20, 64 << 20] {
            let (lines, _) = lines_in_ranges(&text, span);
            assert_eq!(
                lines,
                [
                    Ok("short".into()),
                    Err(super::super::TOO_LONG),
                    Ok("after".into()),
                    Ok(exact.clone()),
                    Err(super::super::TOO_LONG),
                ],
                "span {span}"
            );
        }
    }

    #[test]
    fn the_span_follows_the_bytes_per_line() {
        let text = "0123456789abcdef\n".repeat(100_000);
        let ranges = FileRanges::new(file_of(text.as_bytes()), 65_536).expect("ranges");
        assert_eq!(ranges.span, 17 * 65_536);
        let ranges = FileRanges::new(file_of(text.as_bytes()), 1).expect("ranges");
        assert_eq!(ranges.span, MIN_SPAN);
    }

    #[test]
    fn a_file_that_shrinks_while_read_gives_an_error_not_short_lines() {
        let ranges = FileRanges::with_span(file_of(b"one\ntwo\nthree\n"), 100, 8);
        let answers: Vec<_> = std::iter::from_fn(|| ranges.next()).collect();
        assert!(answers.iter().any(|(_, r)| r.is_err()));
    }
}
