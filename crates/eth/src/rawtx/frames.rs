//! The length-prefixed file format for raw transactions (`chainsig recover --raw`; users'
//! description in docs/raw-transactions.md): records one after another, each a 4-byte
//! little-endian length `L` and then `L` bytes, one raw signed transaction (an EIP-2718 envelope
//! or a legacy RLP list) per record, with no header, padding or separator.
//!
//! Reading never loses its place over a bad record: a length above [`MAX_RAW_TX_LEN`] is reported
//! for that record and its bytes are skipped unread into memory, so the records after it are read
//! as written. Only an input that ends inside a record stops the stream (nothing after it can be
//! framed); that record is reported with what was missing.

use super::MAX_RAW_TX_LEN;
use std::fmt;
use std::io::{self, Read};
use std::ops::Range;

/// Bytes of a record's length prefix.
pub const PREFIX_LEN: usize = 4;

/// Why a record could not be framed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The length prefix names more than [`MAX_RAW_TX_LEN`] bytes; the bytes were skipped.
    TooLong {
        /// The length the prefix gave.
        len: u32,
    },
    /// The input ended inside the 4-byte length prefix.
    TruncatedPrefix {
        /// Prefix bytes present.
        got: usize,
    },
    /// The input ended inside the record's bytes.
    TruncatedRecord {
        /// The length the prefix gave.
        len: u32,
        /// Bytes present.
        got: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLong { len } => write!(
                f,
                "length prefix {len} is above the limit of {MAX_RAW_TX_LEN} bytes (record skipped)"
            ),
            FrameError::TruncatedPrefix { got } => write!(
                f,
                "input ends inside the length prefix ({got} of {PREFIX_LEN} bytes)"
            ),
            FrameError::TruncatedRecord { len, got } => {
                write!(f, "input ends inside the record ({got} of {len} bytes)")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// One record read: its index (0-based, counting every record, bad ones included) and its bytes,
/// or why they could not be framed.
pub type Frame = (u64, Result<Vec<u8>, FrameError>);

/// Reads records from a byte stream. Yields `Err` only for an I/O error, after which it stops.
pub struct FrameReader<R> {
    input: R,
    index: u64,
    done: bool,
}

impl<R: Read> FrameReader<R> {
    /// A reader of `input` (buffer it: records are read with small reads).
    pub fn new(input: R) -> Self {
        FrameReader {
            input,
            index: 0,
            done: false,
        }
    }

    /// Up to `max` records, or fewer at the end of the input (none when it is over), their bytes
    /// one after another in one buffer of at least `room` bytes. An I/O error loses the chunk.
    pub fn chunk(&mut self, max: usize, room: usize) -> io::Result<FrameChunk> {
        let mut chunk = FrameChunk {
            first: self.index,
            bytes: Vec::with_capacity(room),
            records: Vec::with_capacity(max.min(1 << 20)),
        };
        while chunk.records.len() < max && !self.done {
            match self.read_frame_into(&mut chunk.bytes) {
                Ok(Some(record)) => {
                    self.index += 1;
                    chunk.records.push(record);
                }
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            }
        }
        Ok(chunk)
    }

    fn read_frame(&mut self) -> io::Result<Option<Result<Vec<u8>, FrameError>>> {
        let mut bytes = Vec::new();
        Ok(self
            .read_frame_into(&mut bytes)?
            .map(|record| record.map(|_| bytes)))
    }

    /// Reads the next record's bytes onto the end of `out`: where they lie in it, or why the
    /// record could not be framed (nothing appended then); `None` at the end of the input.
    fn read_frame_into(
        &mut self,
        out: &mut Vec<u8>,
    ) -> io::Result<Option<Result<Range<usize>, FrameError>>> {
        let mut prefix = [0u8; PREFIX_LEN];
        let got = read_full(&mut self.input, &mut prefix)?;
        if got == 0 {
            return Ok(None);
        }
        if got < PREFIX_LEN {
            self.done = true;
            return Ok(Some(Err(FrameError::TruncatedPrefix { got })));
        }
        let len = u32::from_le_bytes(prefix);
        let want = len as usize;
        if want > MAX_RAW_TX_LEN {
            let skipped = io::copy(&mut (&mut self.input).take(u64::from(len)), &mut io::sink())?;
            if skipped < u64::from(len) {
                self.done = true;
            }
            return Ok(Some(Err(FrameError::TooLong { len })));
        }
        let start = out.len();
        out.resize(start + want, 0);
        let got = read_full(&mut self.input, &mut out[start..])?;
        if got < want {
            out.truncate(start);
            self.done = true;
            return Ok(Some(Err(FrameError::TruncatedRecord { len, got })));
        }
        Ok(Some(Ok(start..start + want)))
    }
}

/// Consecutive records in one buffer ([`FrameReader::chunk`]): no allocation per record.
#[derive(Debug, Default)]
pub struct FrameChunk {
    /// The index of the first record (0-based, counting every record, bad ones included).
    pub first: u64,
    bytes: Vec<u8>,
    /// Record k's place in `bytes`, or why it could not be framed.
    records: Vec<Result<Range<usize>, FrameError>>,
}

impl FrameChunk {
    /// Records in the chunk.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Record `k`'s bytes, or why it could not be framed.
    pub fn record(&self, k: usize) -> Result<&[u8], &FrameError> {
        match &self.records[k] {
            Ok(span) => Ok(&self.bytes[span.clone()]),
            Err(e) => Err(e),
        }
    }

    /// Bytes of the records the chunk holds.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }
}

impl<R: Read> Iterator for FrameReader<R> {
    type Item = io::Result<Frame>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.read_frame() {
            Ok(Some(frame)) => {
                let index = self.index;
                self.index += 1;
                Some(Ok((index, frame)))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Reads until `buf` is full or the input ends; the count read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Appends one record (prefix and bytes) to `out`. Refuses a record above [`MAX_RAW_TX_LEN`]
/// bytes, which no reader would take.
pub fn push_record(out: &mut Vec<u8>, raw: &[u8]) -> Result<(), FrameError> {
    if raw.len() > MAX_RAW_TX_LEN {
        return Err(FrameError::TooLong {
            len: u32::try_from(raw.len()).unwrap_or(u32::MAX),
        });
    }
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    out.extend_from_slice(raw);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8]) -> Vec<Frame> {
        FrameReader::new(bytes)
            .collect::<io::Result<Vec<_>>>()
            .expect("no I/O error from a slice")
    }

    #[test]
    fn records_come_back_in_order_with_their_indices() {
        let mut file = Vec::new();
        for raw in [&b"\x02\xc0"[..], b"", &[0xc1, 0x80]] {
            push_record(&mut file, raw).unwrap();
        }
        let frames = read_all(&file);
        assert_eq!(
            frames,
            vec![
                (0, Ok(vec![2, 0xc0])),
                (1, Ok(vec![])),
                (2, Ok(vec![0xc1, 0x80]))
            ]
        );
        assert!(read_all(&[]).is_empty());
    }

    #[test]
    fn an_oversized_record_is_skipped_and_the_rest_read() {
        let big = (MAX_RAW_TX_LEN + 1) as u32;
        let mut file = big.to_le_bytes().to_vec();
        file.extend(std::iter::repeat_n(0xaa, big as usize));
        push_record(&mut file, b"\x01").unwrap();
        let frames = read_all(&file);
        assert_eq!(
            frames,
            vec![(0, Err(FrameError::TooLong { len: big })), (1, Ok(vec![1]))]
        );
        assert!(frames[0]
            .1
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("131072"));
        assert!(push_record(&mut Vec::new(), &vec![0; MAX_RAW_TX_LEN + 1]).is_err());
        assert!(push_record(&mut Vec::new(), &vec![0; MAX_RAW_TX_LEN]).is_ok());
    }

    #[test]
    fn an_input_ending_inside_a_record_reports_it_and_stops() {
        let mut file = Vec::new();
        push_record(&mut file, b"abc").unwrap();
        let whole = file.len();
        push_record(&mut file, b"defgh").unwrap();
        assert_eq!(
            read_all(&file[..whole + 6])[1],
            (1, Err(FrameError::TruncatedRecord { len: 5, got: 2 }))
        );
        assert_eq!(
            read_all(&file[..whole + 3])[1],
            (1, Err(FrameError::TruncatedPrefix { got: 3 }))
        );
        // An oversized record cut short ends the stream too.
        let mut cut = u32::MAX.to_le_bytes().to_vec();
        cut.extend([0; 10]);
        assert_eq!(
            read_all(&cut),
            vec![(0, Err(FrameError::TooLong { len: u32::MAX }))]
        );
    }

    #[test]
    fn chunks_split_the_stream_without_losing_records() {
        let mut file = Vec::new();
        for i in 0..10u8 {
            push_record(&mut file, &[i]).unwrap();
        }
        // A record cut short ends the last chunk; the records before it are whole.
        file.extend([3, 0, 0, 0, 7]);
        let mut reader = FrameReader::new(&file[..]);
        let chunks: Vec<FrameChunk> = std::iter::from_fn(|| {
            let c = reader.chunk(4, 0).unwrap();
            (!c.is_empty()).then_some(c)
        })
        .collect();
        let sizes: Vec<(u64, usize)> = chunks.iter().map(|c| (c.first, c.len())).collect();
        assert_eq!(sizes, vec![(0, 4), (4, 4), (8, 3)]);
        let records: Vec<Result<&[u8], &FrameError>> = chunks
            .iter()
            .flat_map(|c| (0..c.len()).map(move |k| c.record(k)))
            .collect();
        for (i, record) in records[..10].iter().enumerate() {
            assert_eq!(*record, Ok(&[i as u8][..]));
        }
        assert_eq!(
            records[10],
            Err(&FrameError::TruncatedRecord { len: 3, got: 1 })
        );
        assert_eq!(chunks[2].bytes(), 2);
    }
}
