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

pub use chainsig_core::raw_sm2::{RawOutcome, RawSm2Batch, RawSm2Item, ID_MAX};

/// Device words of the chunk [i0, i0 + m): 3m + 1 offsets, then the bytes in whole words.
pub fn chunk_words(batch: &RawSm2Batch, i0: usize, m: usize) -> usize {
    3 * m + 1 + batch.record_bytes(i0, m).div_ceil(4)
}

/// Writes chunk [i0, i0 + m) in the layout of kernels/sm2raw.cuh into `dst` (at least
/// [`chunk_words`] long): the offsets relative to the chunk's first byte, then the bytes as they
/// are. Copies only, on every core for a large chunk. Fails when the chunk's bytes exceed the
/// kernel's 32-bit offsets.
pub fn stage(batch: &RawSm2Batch, i0: usize, m: usize, dst: &mut [u32]) -> Result<(), String> {
    use rayon::prelude::*;
    let total = batch.record_bytes(i0, m);
    if u32::try_from(total).is_err() {
        return Err(format!(
            "records {i0}..{}: {total} bytes in one chunk, above the 4 GiB a chunk may hold",
            i0 + m
        ));
    }
    let (offsets, words) = dst.split_at_mut(3 * m + 1);
    let base = batch.cuts()[3 * i0];
    let cuts = &batch.cuts()[3 * i0..=3 * (i0 + m)];
    let src = &batch.bytes()[base..base + total];
    let words = &mut words[..total.div_ceil(4)];
    // SAFETY: a u32 slice viewed as its bytes: same memory, u8 has no alignment or invalid
    // values, and `words` is not used otherwise while the view lives. The kernel reads these
    // words as bytes, in memory order.
    let dst_bytes: &mut [u8] =
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 4) };
    const PIECE: usize = 1 << 20;
    let rebase = |(o, c): (&mut u32, &usize)| *o = (c - base) as u32;
    if total + 12 * m >= PIECE {
        offsets.par_iter_mut().zip(cuts).for_each(rebase);
        dst_bytes[..total]
            .par_chunks_mut(PIECE)
            .zip(src.par_chunks(PIECE))
            .for_each(|(d, s)| d.copy_from_slice(s));
    } else {
        offsets.iter_mut().zip(cuts).for_each(rebase);
        dst_bytes[..total].copy_from_slice(src);
    }
    Ok(())
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
pub struct KnownEncodings(std::collections::HashMap<Box<[u8]>, u32>);

impl KnownEncodings {
    pub fn new(index: &crate::signers::SignerIndex) -> Self {
        let mut map = std::collections::HashMap::with_capacity(2 * index.len());
        for (k, (x, y)) in index.keys().iter().enumerate() {
            let full: Box<[u8]> = [&[4u8][..], x, y].concat().into();
            let short: Box<[u8]> = [&[2 | (y[31] & 1)][..], x].concat().into();
            map.insert(full, k as u32);
            map.insert(short, k as u32);
        }
        KnownEncodings(map)
    }

    /// The records of known signers (with their numbers) and the others, each in batch order.
    pub fn split(&self, batch: &RawSm2Batch) -> RawSplit {
        use rayon::prelude::*;
        let found: Vec<Option<u32>> = (0..batch.len())
            .into_par_iter()
            .map(|i| self.0.get(batch.item(i).pubkey).copied())
            .collect();
        let mut split = RawSplit::default();
        for (i, f) in found.into_iter().enumerate() {
            match f {
                Some(k) => {
                    split.known_at.push(i);
                    split.signers.push(k);
                }
                None => split.others_at.push(i),
            }
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
    /// The two parts' answers put back in the batch's order.
    pub fn merge(&self, known: &RawVerdicts, others: &RawVerdicts) -> RawVerdicts {
        let n = self.known_at.len() + self.others_at.len();
        let mut out = RawVerdicts {
            verdicts: Bitmap::new(n),
            faults: vec![0; n],
        };
        for (part, at) in [(known, &self.known_at), (others, &self.others_at)] {
            for (k, &i) in at.iter().enumerate() {
                out.verdicts.set(i, part.verdicts.get(k));
                out.faults[i] = part.faults[k];
            }
        }
        out
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

    #[test]
    fn a_staged_chunk_holds_its_records_bytes_cut_by_offsets_from_its_start() {
        let b = batch(300);
        // A mid-batch chunk: offsets from the chunk's first byte, the bytes as pushed.
        let (i0, m) = (41usize, 200usize);
        let mut dst = vec![0xdead_beefu32; chunk_words(&b, i0, m)];
        stage(&b, i0, m, &mut dst).unwrap();
        let (offsets, words) = dst.split_at(3 * m + 1);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(offsets[0], 0);
        for k in 0..m {
            let o: Vec<usize> = offsets[3 * k..3 * k + 4]
                .iter()
                .map(|&o| o as usize)
                .collect();
            let (r, s, pubkey, id, msg) = item_bytes(i0 + k);
            assert_eq!(
                &bytes[o[0]..o[1]],
                [&r[..], &s, &pubkey].concat(),
                "head of {k}"
            );
            assert_eq!(&bytes[o[1]..o[2]], &id[..]);
            assert_eq!(&bytes[o[2]..o[3]], &msg[..]);
        }
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
}
