//! SM2 records as a node holds them: the signature (r, s), the signer's SEC1 key (compressed or
//! not, unchecked), the signer's identifier and the message. The host copies their bytes into a
//! chunk and cuts them by offsets; the device (kernels/sm2raw.cuh) decodes and checks each key,
//! decompresses it, computes Z_A (GB/T 32918.2, 5.5) and e = SM3(Z_A ‖ M), and writes the
//! verification kernels' input. Per record the host does no hashing and no field arithmetic: the
//! CPU path (`chainsig_cpu::Preparer`) spends about 5 µs a record decompressing a key and 0.7 µs
//! on Z_A for a signer it has not seen (crates/cuda/README.md, `src/raw.rs`).
//!
//! A record the device refuses carries a [`KeyFault`], which maps to the very error the CPU path
//! reports for that record (`chainsig_weierstrass::KeyError`'s text under the field "pubkey").

use chainsig_core::bitmap::Bitmap;
use chainsig_core::RecordError;
use chainsig_weierstrass::KeyError;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

pub use chainsig_core::raw_sm2::{RawOutcome, RawSm2Batch, RawSm2Item, ID_MAX};

/// The records of a raw batch one pipeline work covers: all of them in order, or those at
/// `at` (a part cut by signer, [`KnownEncodings::split`]), which staging gathers straight from the
/// batch into the chunk. Copying each part into a batch of its own first cost more host time than
/// the GPU's whole verification (the same lesson as the prepared path's known signers,
/// BENCHMARKS.md, "the first wiring").
#[derive(Debug, Clone, Copy)]
pub struct RawPart<'a> {
    pub batch: &'a RawSm2Batch,
    pub at: Option<&'a [usize]>,
}

/// Records per piece when a gathered chunk is staged on every core.
const GATHER_PIECE: usize = 2048;

impl<'a> RawPart<'a> {
    /// Every record of `batch`, in order.
    pub fn all(batch: &'a RawSm2Batch) -> Self {
        RawPart { batch, at: None }
    }

    /// The records of `batch` at `at`, in that order.
    pub fn gathered(batch: &'a RawSm2Batch, at: &'a [usize]) -> Self {
        RawPart {
            batch,
            at: Some(at),
        }
    }

    pub fn len(&self) -> usize {
        self.at.map_or(self.batch.len(), <[usize]>::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The layout of the part's records [i0, i0 + m) as one chunk: their bytes, and for a
    /// gathered part each staging piece's bytes (one pass over the records, shared by sizing the
    /// buffer and by staging).
    pub fn chunk(&self, i0: usize, m: usize) -> RawChunk {
        use rayon::prelude::*;
        let pieces: Vec<usize> = match self.at {
            None => Vec::new(),
            Some(at) => at[i0..i0 + m]
                .par_chunks(GATHER_PIECE)
                .map(|piece| piece.iter().map(|&i| self.batch.record_bytes(i, 1)).sum())
                .collect(),
        };
        let bytes = match self.at {
            None => self.batch.record_bytes(i0, m),
            Some(_) => pieces.iter().sum(),
        };
        RawChunk {
            i0,
            m,
            bytes,
            pieces,
        }
    }

    /// Writes `chunk` (made by [`RawPart::chunk`] for this part) in the layout of
    /// kernels/sm2raw.cuh into `dst` (at least [`RawChunk::words`] long): the offsets relative to
    /// the chunk's first byte, then the records' bytes one after another. Copies only, on every
    /// core for a large chunk. Fails when the chunk's bytes exceed the kernel's 32-bit offsets.
    pub fn stage(&self, chunk: &RawChunk, dst: &mut [u32]) -> Result<(), String> {
        let RawChunk { i0, m, bytes, .. } = *chunk;
        if u32::try_from(bytes).is_err() {
            return Err(format!(
                "records {i0}..{}: {bytes} bytes in one chunk, above the 4 GiB a chunk may hold",
                i0 + m
            ));
        }
        let (offsets, words) = dst.split_at_mut(3 * m + 1);
        let words = &mut words[..bytes.div_ceil(4)];
        // SAFETY: a u32 slice viewed as its bytes: same memory, u8 has no alignment or invalid
        // values, and `words` is not used otherwise while the view lives. The kernel reads these
        // words as bytes, in memory order.
        let dst_bytes: &mut [u8] = unsafe {
            std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 4)
        };
        let dst_bytes = &mut dst_bytes[..bytes];
        match self.at {
            None => self.stage_range(i0, m, offsets, dst_bytes),
            Some(at) => self.stage_gathered(&at[i0..i0 + m], &chunk.pieces, offsets, dst_bytes),
        }
        Ok(())
    }

    /// Consecutive records: the offsets rebased, the bytes copied in one piece.
    fn stage_range(&self, i0: usize, m: usize, offsets: &mut [u32], dst: &mut [u8]) {
        use rayon::prelude::*;
        let (batch, total) = (self.batch, dst.len());
        let base = batch.cuts()[3 * i0];
        let cuts = &batch.cuts()[3 * i0..=3 * (i0 + m)];
        let src = &batch.bytes()[base..base + total];
        const PIECE: usize = 1 << 20;
        let rebase = |(o, c): (&mut u32, &usize)| *o = (c - base) as u32;
        if total + 12 * m >= PIECE {
            offsets.par_iter_mut().zip(cuts).for_each(rebase);
            dst.par_chunks_mut(PIECE)
                .zip(src.par_chunks(PIECE))
                .for_each(|(d, s)| d.copy_from_slice(s));
        } else {
            offsets.iter_mut().zip(cuts).for_each(rebase);
            dst.copy_from_slice(src);
        }
    }

    /// The records `indices`, each copied from the batch to its place in the chunk; pieces of
    /// [`GATHER_PIECE`] records (`sizes`: each one's bytes) on every core, each from its own start.
    fn stage_gathered(
        &self,
        indices: &[usize],
        sizes: &[usize],
        offsets: &mut [u32],
        dst: &mut [u8],
    ) {
        use rayon::prelude::*;
        let (cuts, src) = (self.batch.cuts(), self.batch.bytes());
        let (last, offsets) = offsets.split_last_mut().expect("3m + 1 offsets");
        *last = dst.len() as u32;
        let mut pieces: Vec<&mut [u8]> = Vec::with_capacity(sizes.len());
        let mut rest = dst;
        for &size in sizes {
            let (piece, tail) = rest.split_at_mut(size);
            pieces.push(piece);
            rest = tail;
        }
        let starts: Vec<usize> = sizes
            .iter()
            .scan(0usize, |at, &size| {
                let start = *at;
                *at += size;
                Some(start)
            })
            .collect();
        indices
            .par_chunks(GATHER_PIECE)
            .zip(offsets.par_chunks_mut(3 * GATHER_PIECE))
            .zip(pieces.into_par_iter().zip(starts))
            .for_each(|((records, offsets), (piece, start))| {
                let mut at = 0;
                for (&i, o) in records.iter().zip(offsets.chunks_exact_mut(3)) {
                    let c = &cuts[3 * i..3 * i + 4];
                    for (k, slot) in o.iter_mut().enumerate() {
                        *slot = (start + at + c[k] - c[0]) as u32;
                    }
                    let len = c[3] - c[0];
                    piece[at..at + len].copy_from_slice(&src[c[0]..c[3]]);
                    at += len;
                }
            });
    }
}

/// Records [i0, i0 + m) of a [`RawPart`] laid out as one chunk ([`RawPart::chunk`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawChunk {
    i0: usize,
    m: usize,
    /// The records' bytes together.
    bytes: usize,
    /// A gathered part's bytes per staging piece of [`GATHER_PIECE`] records (empty for
    /// consecutive records, copied in one piece).
    pieces: Vec<usize>,
}

impl RawChunk {
    /// Device words of the chunk: 3m + 1 offsets, then the bytes in whole words.
    pub fn words(&self) -> usize {
        3 * self.m + 1 + self.bytes.div_ceil(4)
    }

    /// The records' bytes together.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Why the device refused a record (the codes of kernels/sec1.cuh and sm2raw.cuh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFault {
    /// The key is usable: the verdict stands.
    None,
    /// The key, as `chainsig_weierstrass` (the CPU path) refuses it.
    Key(KeyError),
    /// An identifier too long for ENTL (refused by [`RawSm2Batch::push`] already).
    IdTooLong,
    /// A code the kernels never write: a device fault.
    Unknown(u8),
}

impl KeyFault {
    pub fn from_code(code: u8) -> KeyFault {
        match code {
            0 => KeyFault::None,
            1 => KeyFault::Key(KeyError::Length),
            2 => KeyFault::Key(KeyError::Prefix),
            3 => KeyFault::Key(KeyError::CoordinateOutOfRange),
            4 => KeyFault::Key(KeyError::NoSquareRoot),
            5 => KeyFault::Key(KeyError::NotOnCurve),
            6 => KeyFault::Key(KeyError::Infinity),
            7 => KeyFault::IdTooLong,
            c => KeyFault::Unknown(c),
        }
    }

    /// The record's error, worded as the CPU path words it; None for a usable key.
    pub fn error(self) -> Option<RecordError> {
        match self {
            KeyFault::None => None,
            KeyFault::Key(e) => Some(RecordError::new("pubkey", e.to_string())),
            KeyFault::IdTooLong => Some(RecordError::new("id", "longer than 8191 bytes")),
            KeyFault::Unknown(c) => Some(RecordError::new(
                "pubkey",
                format!("device fault code {c} (no such check)"),
            )),
        }
    }
}

/// The answer for a raw batch: a verdict per record, and the device's fault code per record (0
/// where the key was usable; the verdict of a faulty record is false and means nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawVerdicts {
    pub verdicts: Bitmap,
    pub faults: Vec<u8>,
}

impl RawVerdicts {
    pub fn len(&self) -> usize {
        self.faults.len()
    }

    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// Record i: its verdict, or the error the CPU path reports for it.
    pub fn outcome(&self, i: usize) -> Result<bool, RecordError> {
        match KeyFault::from_code(self.faults[i]).error() {
            Some(e) => Err(e),
            None => Ok(self.verdicts.get(i)),
        }
    }

    /// The answer as backends give it: the verdicts, and each refused record's error.
    pub fn into_outcome(self) -> RawOutcome {
        let errors = self
            .faults
            .iter()
            .enumerate()
            .filter_map(|(i, &c)| KeyFault::from_code(c).error().map(|e| (i, e)))
            .collect();
        RawOutcome {
            verdicts: self.verdicts,
            errors,
        }
    }

    /// An `Unknown` fault means the device wrote what no kernel writes: the whole answer is
    /// suspect, and the caller verifies the batch elsewhere.
    pub fn check(&self) -> Result<(), String> {
        match self.faults.iter().position(|&c| c > 7) {
            Some(i) => Err(format!(
                "record {i}: fault code {} (no such check)",
                self.faults[i]
            )),
            None => Ok(()),
        }
    }
}

/// The device's code for a key error (the inverse of [`KeyFault::from_code`]).
#[cfg(test)]
fn key_code(e: KeyError) -> u8 {
    match e {
        KeyError::Length => 1,
        KeyError::Prefix => 2,
        KeyError::CoordinateOutOfRange => 3,
        KeyError::NoSquareRoot => 4,
        KeyError::NotOnCurve => 5,
        KeyError::Infinity => 6,
        KeyError::SecretOutOfRange => u8::MAX,
    }
}

/// The SEC1 encodings, both forms, of the known signers' keys, each with the signer's number:
/// a raw record whose key bytes are one of them is a known signer's, found without decoding it.
pub struct KnownEncodings(HashMap<Box<[u8]>, u32, BuildHasherDefault<crate::signers::KeyHasher>>);

/// Records per piece of a split on every core.
const SPLIT_PIECE: usize = 8192;

impl KnownEncodings {
    pub fn new(index: &crate::signers::SignerIndex) -> Self {
        let mut map = HashMap::with_capacity_and_hasher(2 * index.len(), Default::default());
        for (k, (x, y)) in index.keys().iter().enumerate() {
            let full: Box<[u8]> = [&[4u8][..], x, y].concat().into();
            let short: Box<[u8]> = [&[2 | (y[31] & 1)][..], x].concat().into();
            map.insert(full, k as u32);
            map.insert(short, k as u32);
        }
        KnownEncodings(map)
    }

    /// The records of known signers (with their numbers) and the others, each in batch order:
    /// pieces looked up on every core, then joined.
    pub fn split(&self, batch: &RawSm2Batch) -> RawSplit {
        use rayon::prelude::*;
        let pieces: Vec<RawSplit> = (0..batch.len().div_ceil(SPLIT_PIECE))
            .into_par_iter()
            .map(|p| {
                let mut piece = RawSplit::default();
                for i in p * SPLIT_PIECE..batch.len().min((p + 1) * SPLIT_PIECE) {
                    match self.0.get(batch.item(i).pubkey) {
                        Some(&k) => {
                            piece.known_at.push(i);
                            piece.signers.push(k);
                        }
                        None => piece.others_at.push(i),
                    }
                }
                piece
            })
            .collect();
        let mut split = RawSplit::default();
        for piece in pieces {
            split.known_at.extend(piece.known_at);
            split.signers.extend(piece.signers);
            split.others_at.extend(piece.others_at);
        }
        split
    }
}

/// A raw batch cut by signer ([`KnownEncodings::split`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RawSplit {
    pub known_at: Vec<usize>,
    /// The signer of each record of `known_at`.
    pub signers: Vec<u32>,
    pub others_at: Vec<usize>,
}

impl RawSplit {
    /// The two parts' answers put back in the batch's order. `known_at` and `others_at` are
    /// increasing and together cover 0..n once (as [`KnownEncodings::split`] makes them), so
    /// record i is the next of whichever part names it: a piece of the batch starts at the
    /// known part's first index at or after its start, and the pieces merge on every core.
    pub fn merge(&self, known: &RawVerdicts, others: &RawVerdicts) -> RawVerdicts {
        use rayon::prelude::*;
        const PIECE: usize = 4096; // records: a whole number of the bitmap's 64-bit words
        let n = self.known_at.len() + self.others_at.len();
        let mut words = vec![0u64; n.div_ceil(64)];
        let mut faults = vec![0u8; n];
        words
            .par_chunks_mut(PIECE / 64)
            .zip(faults.par_chunks_mut(PIECE))
            .enumerate()
            .for_each(|(p, (words, faults))| {
                let start = p * PIECE;
                let mut k = self.known_at.partition_point(|&i| i < start);
                let mut o = start - k;
                for (j, fault) in faults.iter_mut().enumerate() {
                    let (part, at) = if self.known_at.get(k) == Some(&(start + j)) {
                        k += 1;
                        (known, k - 1)
                    } else {
                        o += 1;
                        (others, o - 1)
                    };
                    words[j / 64] |= u64::from(part.verdicts.get(at)) << (j % 64);
                    *fault = part.faults[at];
                }
            });
        RawVerdicts {
            verdicts: Bitmap::from_words(words, n),
            faults,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Record i's r, s, key, identifier and message.
    type Parts = ([u8; 32], [u8; 32], Vec<u8>, Vec<u8>, Vec<u8>);

    fn item_bytes(i: usize) -> Parts {
        let key = vec![2 + (i % 3) as u8; [33, 65, 0, 7][i % 4]];
        let id = vec![b'a' + (i % 26) as u8; i % 20];
        let msg: Vec<u8> = (0..(i * 7 % 90)).map(|k| (k ^ i) as u8).collect();
        ([i as u8; 32], [!(i as u8); 32], key, id, msg)
    }

    fn batch(n: usize) -> RawSm2Batch {
        let mut b = RawSm2Batch::default();
        for i in 0..n {
            let (r, s, pubkey, id, msg) = item_bytes(i);
            b.push(&RawSm2Item {
                r: &r,
                s: &s,
                pubkey: &pubkey,
                id: &id,
                msg: &msg,
            })
            .unwrap();
        }
        b
    }

    /// Stages chunk [i0, i0 + m) of `part` and checks that record k of it holds the bytes of the
    /// batch's record `index(k)`, cut by offsets from the chunk's first byte, and nothing else.
    fn check_chunk(part: RawPart, i0: usize, m: usize, index: impl Fn(usize) -> usize) {
        let chunk = part.chunk(i0, m);
        let mut dst = vec![0xdead_beefu32; chunk.words()];
        part.stage(&chunk, &mut dst).unwrap();
        let (offsets, words) = dst.split_at(3 * m + 1);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(offsets[0], 0);
        for k in 0..m {
            let o: Vec<usize> = offsets[3 * k..3 * k + 4]
                .iter()
                .map(|&o| o as usize)
                .collect();
            let (r, s, pubkey, id, msg) = item_bytes(index(k));
            assert_eq!(
                &bytes[o[0]..o[1]],
                [&r[..], &s, &pubkey].concat(),
                "head of {k}"
            );
            assert_eq!(&bytes[o[1]..o[2]], &id[..], "identifier of {k}");
            assert_eq!(&bytes[o[2]..o[3]], &msg[..], "message of {k}");
        }
        // The bytes end where the last offset says, within the last word.
        assert_eq!(offsets[3 * m] as usize, chunk.bytes());
        assert_eq!(words.len(), (offsets[3 * m] as usize).div_ceil(4));
    }

    #[test]
    fn a_staged_chunk_holds_its_records_bytes_cut_by_offsets_from_its_start() {
        let b = batch(300);
        // A mid-batch chunk: offsets from the chunk's first byte, the bytes as pushed.
        check_chunk(RawPart::all(&b), 41, 200, |k| 41 + k);
    }

    #[test]
    fn a_gathered_chunk_holds_the_chosen_records_in_their_order() {
        // Several gathering pieces (2048 records each) and a ragged last one, records out of
        // order and some twice, as no split makes them but staging must not care.
        let b = batch(9000);
        let at: Vec<usize> = (0..7000).map(|k| (k * 7919 + 13) % 9000).collect();
        let part = RawPart::gathered(&b, &at);
        assert_eq!(part.len(), 7000);
        check_chunk(part, 0, 7000, |k| at[k]);
        check_chunk(part, 2047, 4100, |k| at[2047 + k]);
        check_chunk(part, 6999, 1, |k| at[6999 + k]);
        // An empty chunk: one offset, no bytes.
        let chunk = part.chunk(5, 0);
        let mut dst = vec![7u32; chunk.words()];
        part.stage(&chunk, &mut dst).unwrap();
        assert_eq!(dst, vec![0]);
    }

    #[test]
    fn fault_codes_name_the_cpu_paths_key_errors_and_split_answers_merge_in_order() {
        for (code, e) in [
            (1, KeyError::Length),
            (2, KeyError::Prefix),
            (3, KeyError::CoordinateOutOfRange),
            (4, KeyError::NoSquareRoot),
            (5, KeyError::NotOnCurve),
            (6, KeyError::Infinity),
        ] {
            assert_eq!(key_code(e), code);
            let err = KeyFault::from_code(code).error().unwrap();
            assert_eq!((err.field, err.reason), ("pubkey", e.to_string()));
        }
        assert_eq!(KeyFault::from_code(0).error(), None);
        assert_eq!(KeyFault::from_code(7).error().unwrap().field, "id");
        let split = RawSplit {
            known_at: vec![1, 2],
            signers: vec![0, 0],
            others_at: vec![0, 3],
        };
        let part = |bits: [bool; 2], faults: Vec<u8>| {
            let mut verdicts = Bitmap::new(2);
            verdicts.set(0, bits[0]);
            verdicts.set(1, bits[1]);
            RawVerdicts { verdicts, faults }
        };
        let merged = split.merge(
            &part([true, false], vec![0, 0]),
            &part([false, true], vec![4, 0]),
        );
        assert_eq!(merged.faults, vec![4, 0, 0, 0]);
        assert!(merged.outcome(0).is_err());
        assert_eq!(merged.outcome(1), Ok(true));
        assert_eq!(merged.outcome(2), Ok(false));
        assert_eq!(merged.outcome(3), Ok(true));
        assert!(merged.check().is_ok());
        let outcome = merged.clone().into_outcome();
        assert_eq!(outcome.errors.len(), 1);
        assert!((0..4).all(|i| outcome.outcome(i) == merged.outcome(i)));
        assert!(part([false, false], vec![0, 9]).check().is_err());
    }

    #[test]
    fn a_large_split_merges_back_in_order_across_pieces() {
        // Known records in runs and alone, across several merge pieces and a ragged end.
        let n = 3 * 4096 + 777;
        let is_known = |i: usize| (i / 300) % 3 == 0 || i % 7 == 0;
        let split = RawSplit {
            known_at: (0..n).filter(|&i| is_known(i)).collect(),
            signers: Vec::new(),
            others_at: (0..n).filter(|&i| !is_known(i)).collect(),
        };
        // Each part's answer encodes the record it belongs to.
        let answers = |at: &[usize]| RawVerdicts {
            verdicts: Bitmap::from_bools(at.iter().map(|&i| i % 5 < 2)),
            faults: at.iter().map(|&i| (i % 7) as u8).collect(),
        };
        let merged = split.merge(&answers(&split.known_at), &answers(&split.others_at));
        assert_eq!(merged.len(), n);
        for i in 0..n {
            assert_eq!(merged.verdicts.get(i), i % 5 < 2, "verdict of {i}");
            assert_eq!(merged.faults[i], (i % 7) as u8, "fault of {i}");
        }
    }
}
