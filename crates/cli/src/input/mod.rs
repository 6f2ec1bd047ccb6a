//! Streaming JSON Lines input: records arrive in chunks, read on their own thread, so a file of
//! 10⁷ records never sits whole in memory and reading overlaps verification.
//!
//! The reader reads large blocks and cuts them into lines with `memchr`; a chunk is one buffer of
//! text and the ends of its lines ([`TextChunk`]), so no line costs a heap allocation and
//! checking UTF-8 is left to whoever parses the chunk, on every core.
//!
//! Chunks are cut two ways. From a regular file every chunk is full (the last excepted): reading
//! never waits long, and large chunks keep a GPU busy. From a pipe, a terminal or a socket, a
//! chunk is also cut as soon as the lines read so far are all the input that has arrived, so a
//! producer that writes one line and waits for its answer gets it at once rather than after
//! 65,536 more lines; while a chunk is being verified the next one fills, so a fast producer
//! still gets large chunks.
//!
//! A file named on the command line can instead be read in byte ranges by several threads at
//! once ([`ranges`]), which is how `chainsig verify` reads one: a single reader thread copies
//! about 1.7 GB/s, slower than the GPU verifies the records it holds.
//!
//! No line is held longer than [`MAX_LINE`] bytes: a longer one is skipped as it is read (its
//! bytes are never all in memory) and stands in its chunk as a line whose text is the error
//! [`TOO_LONG`], so one runaway line costs its record, not the process's memory or the rest of the
//! input.

use anyhow::Context;
use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Why a line is not text.
pub const NOT_UTF8: &str = "line is not valid UTF-8";

/// The longest line read, in bytes before its newline (a carriage return counts): 16 MiB, room
/// for a message of several MB in hex, while a file with no newline cannot fill the memory.
pub const MAX_LINE: usize = 16 << 20;

/// Why a line longer than [`MAX_LINE`] has no text.
pub const TOO_LONG: &str = "line is longer than 16 MiB (16777216 bytes): skipped";

pub mod ranges;
pub mod rows;
mod stream;

pub use stream::{text_chunks, TextChunks};

/// Reads one line of `reader` into `line` (its newline dropped), holding at most [`MAX_LINE`]
/// bytes of it: `Some(true)` for a line, `Some(false)` for one longer than that (the rest of it
/// read past, not kept, and `line` left empty), `None` at the end of the input. For a reader of
/// its own line by line (`eth sign-bulk`), the rule the chunk readers keep.
pub fn read_bounded_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    line.clear();
    let read = reader
        .by_ref()
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', line)?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        return Ok(Some(true));
    }
    if line.len() <= MAX_LINE {
        // The input's last line, without a newline.
        return Ok(Some(true));
    }
    line.clear();
    reader.skip_until(b'\n')?;
    Ok(Some(false))
}

/// Bytes asked of the operating system per read.
const READ_BLOCK: usize = 1 << 20;

/// Reads that land in a block of their own, zeroed once, and are appended from there to a
/// growing buffer. A read may not be handed uninitialised memory, and zeroing the buffer's spare
/// room before each read would clear a whole block for every read: a pipe gives a few KB a read.
pub(crate) struct BlockReader {
    block: Vec<u8>,
}

impl BlockReader {
    /// Reads of at most `size` bytes.
    pub(crate) fn new(size: usize) -> Self {
        BlockReader {
            block: vec![0; size],
        }
    }

    /// Appends what one read of `input` gives to `out` (a read interrupted by a signal is
    /// retried); 0 at the end of the input. Nothing is appended when it fails.
    pub(crate) fn append(
        &mut self,
        input: &mut (impl Read + ?Sized),
        out: &mut Vec<u8>,
    ) -> std::io::Result<usize> {
        let got = loop {
            match input.read(&mut self.block) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        out.extend_from_slice(&self.block[..got]);
        Ok(got)
    }
}

/// Consecutive input lines in one buffer.
#[derive(Debug, Default)]
pub struct TextChunk {
    /// The number of the first line (1-based); 0 for a chunk read by byte range ([`ranges`]),
    /// whose reader does not know how many lines come before it.
    first: u64,
    text: Vec<u8>,
    /// `ends[k]`: where line k ends in `text`, its newline included; it starts where line k − 1
    /// ends.
    ends: Vec<usize>,
    /// The lines (indices, ascending) longer than [`MAX_LINE`]: their text is not kept, or not
    /// read.
    too_long: Vec<usize>,
    /// Where the buffer goes back when the chunk is dropped (the reader's, for its next chunks).
    pool: Option<Arc<Buffers>>,
}

/// Chunk buffers given back by dropped chunks, for the reader to fill again: a fresh buffer's
/// pages are touched (faulted in) for the first time as it is filled, which in a fresh process
/// cost the reader more than the reading itself.
#[derive(Debug, Default)]
struct Buffers(Mutex<Vec<Vec<u8>>>);

/// Buffers kept at most: as many as chunks are in flight in the verify pipeline.
const KEPT_BUFFERS: usize = 6;

impl Buffers {
    /// An empty buffer with room for `room` bytes, a given-back one if it has the room.
    fn take(&self, room: usize) -> Vec<u8> {
        let mut buffer = self.take_kept(room);
        buffer.clear();
        buffer
    }

    /// A buffer of `len` bytes, with room for `room`, whose bytes are to be overwritten whole
    /// (by a read): a given-back buffer keeps its old bytes as far as they reach, and only the
    /// rest is zeroed, so a reused buffer is not cleared before every read (31 MB a chunk of
    /// 65,536 SM2 records).
    fn take_filled(&self, len: usize, room: usize) -> Vec<u8> {
        let mut buffer = self.take_kept(room.max(len));
        buffer.resize(len, 0);
        buffer
    }

    /// A given-back buffer with room for `room` bytes, as it was given back, or a new one.
    fn take_kept(&self, room: usize) -> Vec<u8> {
        let mut kept = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match kept.iter().position(|b| b.capacity() >= room) {
            Some(k) => kept.swap_remove(k),
            None => Vec::with_capacity(room),
        }
    }

    /// Keeps `buffer` for a later chunk (its bytes as they are), unless enough are kept.
    fn give(&self, buffer: Vec<u8>) {
        let mut kept = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() < KEPT_BUFFERS {
            kept.push(buffer);
        }
    }
}

impl Drop for TextChunk {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.give(std::mem::take(&mut self.text));
        }
    }
}

impl TextChunk {
    fn starting_at(first: u64, text: Vec<u8>) -> Self {
        TextChunk {
            first,
            text,
            ends: Vec::new(),
            too_long: Vec::new(),
            pool: None,
        }
    }

    /// Where line `k` starts in `text`.
    fn start(&self, k: usize) -> usize {
        if k == 0 {
            0
        } else {
            self.ends[k - 1]
        }
    }

    /// Where the text after the last line starts (a line still being read).
    fn tail(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Ends a line at `end` (its newline, if any, at `end - 1`), marking it too long when its
    /// text is longer than [`MAX_LINE`].
    fn end_line(&mut self, end: usize) {
        let start = self.tail();
        let newline = usize::from(end > start && self.text[end - 1] == b'\n');
        if end - start - newline > MAX_LINE {
            self.too_long.push(self.ends.len());
        }
        self.ends.push(end);
    }

    /// Ends a line whose bytes were skipped (it was longer than [`MAX_LINE`]): an empty span at
    /// the end of the last line, marked too long.
    fn end_skipped_line(&mut self) {
        let at = self.tail();
        self.too_long.push(self.ends.len());
        self.ends.push(at);
    }

    /// Lines in the chunk.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The 1-based input line number of line `k` (of a chunk from [`text_chunks`]; a chunk read
    /// by byte range does not know it, and its reader counts lines instead).
    pub fn number(&self, k: usize) -> u64 {
        self.first + k as u64
    }

    /// Line `k` without its line ending (every `\n` and `\r` at its end), or why it has no text:
    /// [`NOT_UTF8`] or [`TOO_LONG`].
    pub fn line(&self, k: usize) -> Result<&str, &'static str> {
        if self.too_long.binary_search(&k).is_ok() {
            return Err(TOO_LONG);
        }
        let start = self.start(k);
        let mut end = self.ends[k];
        while end > start && matches!(self.text[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        std::str::from_utf8(&self.text[start..end]).map_err(|_| NOT_UTF8)
    }

    /// Bytes of input the chunk holds.
    pub fn bytes(&self) -> usize {
        self.text.len()
    }

    /// Appends the lines of `next`, which follow these in the input.
    fn append(&mut self, next: TextChunk) {
        let (base, lines) = (self.text.len(), self.ends.len());
        self.text.extend_from_slice(&next.text);
        self.ends.extend(next.ends.iter().map(|e| e + base));
        self.too_long
            .extend(next.too_long.iter().map(|k| k + lines));
    }

    /// Cuts the chunk after its last line: the bytes past it (a line still being read) become
    /// the start of the next chunk.
    fn split_after_last_line(&mut self) -> TextChunk {
        self.split_after_last_line_into(READ_BLOCK)
    }

    /// As [`TextChunk::split_after_last_line`], the next chunk's buffer made with room for
    /// `room` bytes.
    fn split_after_last_line_into(&mut self, room: usize) -> TextChunk {
        let cut = self.tail();
        let room = room.max(self.text.len() - cut + READ_BLOCK);
        let mut rest = match &self.pool {
            Some(pool) => pool.take(room),
            None => Vec::with_capacity(room),
        };
        rest.extend_from_slice(&self.text[cut..]);
        self.text.truncate(cut);
        let mut next = TextChunk::starting_at(self.first + self.ends.len() as u64, rest);
        next.pool = self.pool.clone();
        next
    }
}

/// An opened input and how to cut it into chunks.
pub struct Input {
    source: Source,
    /// Not a regular file: input may arrive slowly, so chunks are cut when none is waiting.
    streaming: bool,
}

/// What an input reads from.
enum Source {
    /// A regular file named by path, read from its start: [`ranges`] may read it in parallel.
    File(std::fs::File),
    /// Anything else (standard input, a pipe, a device), read in order.
    Reader(Box<dyn Read + Send>),
}

impl Input {
    /// An input read in order from `reader`; `streaming` when input may arrive slowly.
    fn from_reader(reader: impl Read + Send + 'static, streaming: bool) -> Input {
        Input {
            source: Source::Reader(Box::new(reader)),
            streaming,
        }
    }

    /// The regular file behind the input, when it was named by path: it can be read by range.
    pub fn into_file(self) -> Result<std::fs::File, Input> {
        match self.source {
            Source::File(file) => Ok(file),
            Source::Reader(_) => Err(self),
        }
    }

    /// Up to `max` bytes from the start of a file named by path, read without moving its
    /// position (pread); `None` for any other input, whose bytes can be read only once.
    pub fn peek_start(&self, max: usize) -> Option<Vec<u8>> {
        let Source::File(file) = &self.source else {
            return None;
        };
        let mut start = vec![0; max];
        let filled = ranges::read_at_most(file, &mut start, 0).ok()?;
        start.truncate(filled);
        Some(start)
    }

    /// Whether input may arrive slowly (not a regular file), so that a reader should answer
    /// what has arrived rather than wait for a whole block.
    pub(crate) fn streaming(&self) -> bool {
        self.streaming
    }

    /// The input as one reader, read in order.
    pub(crate) fn into_reader(self) -> Box<dyn Read + Send> {
        match self.source {
            Source::File(file) => Box::new(file),
            Source::Reader(reader) => reader,
        }
    }
}

/// `path` as an error message shows it: quoted, and cut after 80 characters
/// (`chainsig_core::error::quote`), so that a path of any length makes a short message.
pub fn shown(path: &Path) -> String {
    chainsig_core::error::quote(&path.to_string_lossy())
}

/// Opens the file at `path` for reading; the error names it ([`shown`]).
pub fn open_file(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::File::open(path).with_context(|| format!("cannot read {}", shown(path)))
}

/// Opens `path` (`-` or none for standard input).
pub fn open(path: Option<&Path>) -> anyhow::Result<Input> {
    match path {
        None => Ok(stdin()),
        Some(p) if p == Path::new("-") => Ok(stdin()),
        Some(p) => {
            let file = open_file(p)?;
            Ok(if file.metadata().is_ok_and(|m| m.is_file()) {
                Input {
                    source: Source::File(file),
                    streaming: false,
                }
            } else {
                Input::from_reader(file, true)
            })
        }
    }
}

fn stdin() -> Input {
    Input::from_reader(std::io::stdin(), !stdin_is_regular_file())
}

/// Whether standard input is redirected from a regular file (`< records.jsonl`).
#[cfg(unix)]
fn stdin_is_regular_file() -> bool {
    use std::os::fd::AsFd;
    std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|file| file.metadata())
        .is_ok_and(|m| m.is_file())
}

#[cfg(not(unix))]
fn stdin_is_regular_file() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_line_reader_skips_what_is_past_the_limit() {
        let mut text = b"one\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 1));
        text.extend_from_slice(b"\n");
        text.extend(std::iter::repeat_n(b'y', MAX_LINE));
        text.extend_from_slice(b"\nlast");
        let mut reader = std::io::BufReader::new(&text[..]);
        let mut line = Vec::new();
        let mut got = Vec::new();
        while let Some(whole) = read_bounded_line(&mut reader, &mut line).unwrap() {
            got.push((whole, line.len()));
        }
        assert_eq!(got, [(true, 3), (false, 0), (true, MAX_LINE), (true, 4)]);
    }
}
