//! Packed binary rows (`chainsig_core::rows`, the C ABI's record layout) read in chunks for
//! `chainsig verify --rows`: a chunk is one buffer of whole rows and where each lies, so no row
//! costs an allocation until it is parsed, on every core, by whoever takes the chunk.
//!
//! Rows say their own length in their header, so the reader frames them as it reads large
//! blocks: rows wholly inside the blocks read so far go to the chunk, and the bytes of a row the
//! block cut are kept for the next read. A row whose header announces more than [`MAX_ROW`]
//! bytes is read past without being held, and answered as an error (the rows after it are still
//! framed: its length is known). Input that ends inside a row is answered as a truncated row; a
//! truncated header cannot say where the next row would start, so it is the input's last record.

use super::{BlockReader, Buffers};
use chainsig_core::rows;
use std::io::Read;
use std::ops::Range;
use std::sync::Arc;

/// The longest row held: 16 MiB, as a JSON Lines line ([`super::MAX_LINE`]).
pub const MAX_ROW: usize = super::MAX_LINE;

/// Bytes asked of the reader per read.
const READ_BLOCK: usize = 4 << 20;

/// Where one record of a chunk is: the bytes of a whole row, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowSpan {
    Row(Range<usize>),
    Refused(String),
}

/// Consecutive records of the input: whole rows in one buffer.
#[derive(Debug, Default)]
pub struct RowChunk {
    bytes: Vec<u8>,
    spans: Vec<RowSpan>,
    /// The input's bytes this chunk covers (skipped rows included).
    read: u64,
    /// Where the buffer goes back when the chunk is dropped, for the reader's next chunks.
    pool: Option<Arc<Buffers>>,
}

impl Drop for RowChunk {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.give(std::mem::take(&mut self.bytes));
        }
    }
}

impl RowChunk {
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Record `k`: its row's bytes, or why it has none.
    pub fn row(&self, k: usize) -> Result<&[u8], &str> {
        match &self.spans[k] {
            RowSpan::Row(range) => Ok(&self.bytes[range.clone()]),
            RowSpan::Refused(why) => Err(why),
        }
    }

    /// Input bytes the chunk covers.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }
}

/// Chunks of at most `max_rows` records from `input`, in order.
pub struct RowChunks<R> {
    input: R,
    max_rows: usize,
    /// Bytes read past the last chunk's last row: the start of the next row.
    carry: Vec<u8>,
    /// Input offset of `carry`'s first byte (for messages).
    offset: u64,
    /// Reads of input that may arrive slowly (a pipe) land here first, one read at a time, so
    /// that a row is framed as soon as it has arrived; `None` for a regular file, read in whole
    /// blocks straight into the chunk's buffer.
    prompt: Option<BlockReader>,
    /// Buffers of chunks dropped, filled again: a fresh buffer's pages are faulted in as it is
    /// filled, which cost the reader more than the reading itself.
    buffers: Arc<Buffers>,
    /// The room a chunk's buffer is taken with: the last chunk's bytes and a read to spare, so a
    /// chunk is read without its buffer growing (each growth copies it).
    room: usize,
    done: bool,
    read_time: std::time::Duration,
}

impl<R: Read> RowChunks<R> {
    /// Chunks of at most `max_rows` records from `input`; `prompt` when input may arrive slowly
    /// (not a regular file), so that each read gives what has arrived rather than a whole block.
    pub fn new(input: R, max_rows: usize, prompt: bool) -> Self {
        RowChunks {
            input,
            max_rows: max_rows.max(1),
            carry: Vec::new(),
            offset: 0,
            prompt: prompt.then(|| BlockReader::new(READ_BLOCK)),
            buffers: Arc::new(Buffers::default()),
            room: 2 * READ_BLOCK,
            done: false,
            read_time: std::time::Duration::ZERO,
        }
    }

    /// Time spent reading and framing so far.
    pub fn read_time(&self) -> std::time::Duration {
        self.read_time
    }

    /// Appends more of the input to `bytes`, false at its end: what one read gives when the
    /// input is prompt, else a whole block read straight into `bytes`' spare room (no copy, no
    /// zeroing first).
    fn fill(&mut self, bytes: &mut Vec<u8>) -> std::io::Result<bool> {
        if let Some(reads) = &mut self.prompt {
            return Ok(reads.append(&mut self.input, bytes)? > 0);
        }
        bytes.reserve(READ_BLOCK);
        let got = (&mut self.input)
            .take(READ_BLOCK as u64)
            .read_to_end(bytes)?;
        Ok(got > 0)
    }

    fn next_chunk(&mut self) -> std::io::Result<Option<RowChunk>> {
        if self.done {
            return Ok(None);
        }
        let mut bytes = self
            .buffers
            .take(self.room.max(self.carry.len() + READ_BLOCK));
        bytes.extend_from_slice(&self.carry);
        self.carry.clear();
        let mut spans = Vec::with_capacity(self.max_rows.min(1 << 16));
        let first = self.offset;
        // The input offset of `bytes[i]` is `first + gap + i` for every i at or past `at`:
        // `gap` counts the bytes of over-long rows read past without being kept.
        let (mut at, mut gap) = (0usize, 0u64);
        while spans.len() < self.max_rows {
            let rest = &bytes[at..];
            match rows::announced_len(rest) {
                Some(len) if len > MAX_ROW => {
                    spans.push(RowSpan::Refused(format!(
                        "row of {len} bytes at byte {}, longer than 16 MiB (16777216 bytes): \
                         skipped",
                        first + gap + at as u64
                    )));
                    let held = rest.len().min(len);
                    at += held;
                    if held < len {
                        // All of `bytes` is used: read past the rest of the row unkept.
                        let want = (len - held) as u64;
                        let gone =
                            std::io::copy(&mut (&mut self.input).take(want), &mut std::io::sink())?;
                        gap += gone;
                        if gone < want {
                            self.done = true;
                            break;
                        }
                    }
                }
                Some(len) if len <= rest.len() => {
                    spans.push(RowSpan::Row(at..at + len));
                    at += len;
                }
                _ => {
                    // A header or a row not wholly read: read on, or the input ended in it.
                    if self.fill(&mut bytes)? {
                        continue;
                    }
                    self.done = true;
                    if at < bytes.len() {
                        let (left, where_) = (bytes.len() - at, first + gap + at as u64);
                        spans.push(RowSpan::Refused(match rows::announced_len(&bytes[at..]) {
                            Some(len) => format!(
                                "truncated row: the input ends {left} bytes into a row of {len} \
                                 bytes at byte {where_}"
                            ),
                            None => format!(
                                "truncated row: the input ends {left} bytes into a row's 12-byte \
                                 header at byte {where_}"
                            ),
                        }));
                        at = bytes.len();
                    }
                    break;
                }
            }
        }
        self.offset = first + gap + at as u64;
        self.carry.extend_from_slice(&bytes[at..]);
        bytes.truncate(at);
        self.room = at + READ_BLOCK;
        if spans.is_empty() {
            self.buffers.give(bytes);
            return Ok(None);
        }
        Ok(Some(RowChunk {
            bytes,
            spans,
            read: self.offset - first,
            pool: Some(Arc::clone(&self.buffers)),
        }))
    }
}

impl<R: Read> Iterator for RowChunks<R> {
    type Item = std::io::Result<RowChunk>;

    fn next(&mut self) -> Option<Self::Item> {
        let started = std::time::Instant::now();
        let chunk = self.next_chunk();
        self.read_time += started.elapsed();
        match chunk {
            Ok(Some(chunk)) => Some(Ok(chunk)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader giving `data` in pieces of 1 to 97 bytes, as a pipe may.
    struct Trickle<'a> {
        data: &'a [u8],
        state: u64,
    }

    /// Marsaglia's xorshift64: the next of a reproducible stream (the state must not be 0).
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (1 + xorshift(&mut self.state) % 97) as usize;
            let n = n.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// The rows of `data` as a walk of their headers gives them: each whole row's bytes, then
    /// whether the input ends inside one.
    fn walk(data: &[u8]) -> (Vec<&[u8]>, bool) {
        let mut rows = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            match rows::frame(rest) {
                Some(len) if len <= MAX_ROW => {
                    rows.push(&rest[..len]);
                    rest = &rest[len..];
                }
                _ => return (rows, true),
            }
        }
        (rows, false)
    }

    /// Rows of random lengths (a few with random header bytes) back to back, read through short
    /// reads (prompt, and in whole blocks) in chunks of every size: the chunks hold exactly the
    /// rows a header walk finds, in order, and a truncated end is one refused record.
    #[test]
    fn chunks_hold_the_rows_a_header_walk_finds() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || xorshift(&mut state);
        for case in 0..300 {
            let mut data = Vec::new();
            for _ in 0..next() % 40 {
                let mut header = [0u8; rows::HEADER_LEN];
                header[0] = 1 + (next() % 3) as u8;
                header[4..8].copy_from_slice(&((next() % 300) as u32).to_le_bytes());
                header[10] = if next() % 2 == 0 { 33 } else { 65 };
                if next() % 10 == 0 {
                    header.iter_mut().for_each(|b| *b = next() as u8);
                    header[4..8].copy_from_slice(&((next() % 300) as u32).to_le_bytes());
                }
                let len = rows::announced_len(&header).unwrap();
                data.extend_from_slice(&header);
                data.extend((rows::HEADER_LEN..len).map(|_| next() as u8));
            }
            if case % 3 == 0 {
                data.truncate(data.len().saturating_sub((next() % 50) as usize));
            }
            let (want, truncated) = walk(&data);
            let max_rows = 1 + (next() % 7) as usize;
            let input = Trickle {
                data: &data,
                state: next() | 1,
            };
            let mut got: Vec<Vec<u8>> = Vec::new();
            let mut refused = Vec::new();
            let mut read = 0;
            for chunk in RowChunks::new(input, max_rows, case % 2 == 0) {
                let chunk = chunk.unwrap();
                assert!(chunk.len() <= max_rows && chunk.len() > 0);
                read += chunk.bytes_read();
                for k in 0..chunk.len() {
                    match chunk.row(k) {
                        Ok(row) => got.push(row.to_vec()),
                        Err(why) => refused.push((got.len(), why.to_string())),
                    }
                }
            }
            assert_eq!(got, want, "case {case}");
            assert_eq!(read, data.len() as u64, "case {case}");
            if truncated {
                assert_eq!(refused.len(), 1, "case {case}: {refused:?}");
                assert_eq!(refused[0].0, want.len());
                assert!(
                    refused[0].1.starts_with("truncated row"),
                    "{}",
                    refused[0].1
                );
            } else {
                assert!(refused.is_empty(), "case {case}: {refused:?}");
            }
        }
    }
}
