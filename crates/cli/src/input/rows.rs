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

use chainsig_core::rows;
use std::io::Read;
use std::ops::Range;

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
    done: bool,
    read_time: std::time::Duration,
}

impl<R: Read> RowChunks<R> {
    pub fn new(input: R, max_rows: usize) -> Self {
        RowChunks {
            input,
            max_rows: max_rows.max(1),
            carry: Vec::new(),
            offset: 0,
            done: false,
            read_time: std::time::Duration::ZERO,
        }
    }

    /// Time spent reading and framing so far.
    pub fn read_time(&self) -> std::time::Duration {
        self.read_time
    }

    /// Appends up to [`READ_BLOCK`] more bytes to `bytes`; false at the end of the input.
    fn fill(&mut self, bytes: &mut Vec<u8>) -> std::io::Result<bool> {
        let had = bytes.len();
        bytes.resize(had + READ_BLOCK, 0);
        let got = loop {
            match self.input.read(&mut bytes[had..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    bytes.truncate(had);
                    return Err(e);
                }
            }
        };
        bytes.truncate(had + got);
        Ok(got > 0)
    }

    fn next_chunk(&mut self) -> std::io::Result<Option<RowChunk>> {
        if self.done {
            return Ok(None);
        }
        let mut bytes = std::mem::take(&mut self.carry);
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
        self.carry = bytes.split_off(at);
        if spans.is_empty() {
            return Ok(None);
        }
        Ok(Some(RowChunk {
            bytes,
            spans,
            read: self.offset - first,
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
