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

/// The longest identifier: ENTL, its length in bits, has two bytes.
pub const ID_MAX: usize = 8191;

/// One record's bytes (big-endian r and s, the key as SEC1 bytes, unchecked).
#[derive(Debug, Clone, Copy)]
pub struct RawSm2Item<'a> {
    pub r: &'a [u8; 32],
    pub s: &'a [u8; 32],
    pub pubkey: &'a [u8],
    pub id: &'a [u8],
    pub msg: &'a [u8],
}

/// Records one after another in one byte vector, each as `r ‖ s ‖ key`, identifier, message;
/// `cuts` holds the three spans' starts per record and the end.
#[derive(Debug, Clone)]
pub struct RawSm2Batch {
    cuts: Vec<usize>,
    bytes: Vec<u8>,
}

impl Default for RawSm2Batch {
    fn default() -> Self {
        Self::with_capacity(0, 0)
    }
}

impl RawSm2Batch {
    /// An empty batch with room for `records` records of `bytes` bytes in all.
    pub fn with_capacity(records: usize, bytes: usize) -> Self {
        let mut cuts = Vec::with_capacity(3 * records + 1);
        cuts.push(0);
        RawSm2Batch {
            cuts,
            bytes: Vec::with_capacity(bytes),
        }
    }

    /// Appends a record; an identifier longer than ENTL can count is refused as the record
    /// parser refuses it (nothing is appended then).
    pub fn push(&mut self, it: &RawSm2Item) -> Result<(), RecordError> {
        if it.id.len() > ID_MAX {
            return Err(RecordError::new("id", "longer than 8191 bytes"));
        }
        self.bytes.extend_from_slice(it.r);
        self.bytes.extend_from_slice(it.s);
        self.bytes.extend_from_slice(it.pubkey);
        self.cuts.push(self.bytes.len());
        self.bytes.extend_from_slice(it.id);
        self.cuts.push(self.bytes.len());
        self.bytes.extend_from_slice(it.msg);
        self.cuts.push(self.bytes.len());
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.cuts.len() / 3
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Record i's bytes.
    pub fn item(&self, i: usize) -> RawSm2Item<'_> {
        let c = &self.cuts[3 * i..3 * i + 4];
        let head = &self.bytes[c[0]..c[1]];
        RawSm2Item {
            r: head[..32].try_into().expect("32 bytes of r"),
            s: head[32..64].try_into().expect("32 bytes of s"),
            pubkey: &head[64..],
            id: &self.bytes[c[1]..c[2]],
            msg: &self.bytes[c[2]..c[3]],
        }
    }

    /// Records `indices`, in that order, as a batch of their own.
    pub fn select(&self, indices: &[usize]) -> RawSm2Batch {
        let bytes = indices.iter().map(|&i| self.record_bytes(i, 1)).sum();
        let mut out = RawSm2Batch::with_capacity(indices.len(), bytes);
        for &i in indices {
            let base = self.cuts[3 * i];
            out.bytes
                .extend_from_slice(&self.bytes[base..self.cuts[3 * i + 3]]);
            let shift = out.cuts[out.cuts.len() - 1];
            out.cuts.extend(
                self.cuts[3 * i + 1..3 * i + 4]
                    .iter()
                    .map(|c| c - base + shift),
            );
        }
        out
    }

    /// Bytes of records [i0, i0 + m).
    pub fn record_bytes(&self, i0: usize, m: usize) -> usize {
        self.cuts[3 * (i0 + m)] - self.cuts[3 * i0]
    }

    /// Device words of the chunk [i0, i0 + m): 3m + 1 offsets, then the bytes in whole words.
    pub fn chunk_words(&self, i0: usize, m: usize) -> usize {
        3 * m + 1 + self.record_bytes(i0, m).div_ceil(4)
    }

    /// Writes chunk [i0, i0 + m) in the layout of kernels/sm2raw.cuh into `dst` (at least
    /// [`RawSm2Batch::chunk_words`] long): the offsets relative to the chunk's first byte, then
    /// the bytes as they are. Copies only, on every core for a large chunk. Fails when the
    /// chunk's bytes exceed the kernel's 32-bit offsets.
    pub fn stage(&self, i0: usize, m: usize, dst: &mut [u32]) -> Result<(), String> {
        use rayon::prelude::*;
        let total = self.record_bytes(i0, m);
        if u32::try_from(total).is_err() {
            return Err(format!(
                "records {i0}..{}: {total} bytes in one chunk, above the 4 GiB a chunk may hold",
                i0 + m
            ));
        }
        let (offsets, words) = dst.split_at_mut(3 * m + 1);
        let base = self.cuts[3 * i0];
        let cuts = &self.cuts[3 * i0..=3 * (i0 + m)];
        let src = &self.bytes[base..base + total];
        let words = &mut words[..total.div_ceil(4)];
        // SAFETY: a u32 slice viewed as its bytes: same memory, u8 has no alignment or invalid
        // values, and `words` is not used otherwise while the view lives. The kernel reads these
        // words as bytes, in memory order.
        let dst_bytes: &mut [u8] = unsafe {
            std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 4)
        };
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

/// The batch verified on the host (after a GPU failure, or where no GPU is): each key decoded by
/// `chainsig_weierstrass` and Z_A and e by `chainsig_core::hash`, as the CPU path prepares a
/// record, on every core; then `host` verifies the prepared records.
pub fn verify_on_host(
    batch: &RawSm2Batch,
    host: &dyn chainsig_core::backend::Backend,
) -> Result<RawVerdicts, chainsig_core::backend::BackendError> {
    use chainsig_core::{hash, Algorithm, Batch, PreparedItem};
    use rayon::prelude::*;
    let prepared: Vec<(PreparedItem, u8)> = (0..batch.len())
        .into_par_iter()
        .map(|i| {
            let it = batch.item(i);
            match chainsig_weierstrass::PublicKey::from_sec1(it.pubkey) {
                Ok(key) => {
                    let (px, py) = (key.x(), key.y());
                    let za = hash::sm2_z_a(it.id, &px, &py);
                    let e = hash::sm3_concat(&[&za, it.msg]);
                    let (r, s) = (*it.r, *it.s);
                    (PreparedItem { e, r, s, px, py }, 0)
                }
                Err(e) => (PreparedItem::default(), key_code(e)),
            }
        })
        .collect();
    let good: Vec<usize> = (0..prepared.len())
        .filter(|&i| prepared[i].1 == 0)
        .collect();
    let items: Vec<PreparedItem> = good.iter().map(|&i| prepared[i].0).collect();
    let found = host.verify_batch(&Batch::from_items(Algorithm::Sm2, false, &items))?;
    let mut verdicts = Bitmap::new(batch.len());
    for (k, &i) in good.iter().enumerate() {
        verdicts.set(i, found.get(k));
    }
    Ok(RawVerdicts {
        verdicts,
        faults: prepared.into_iter().map(|(_, c)| c).collect(),
    })
}

/// The device's code for a key error (the inverse of [`KeyFault::from_code`]).
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

/// The batch on the GPU, or, when that fails (no device, a device error, an unsupported
/// configuration, a panic), on `cpu` as the CPU path prepares it ([`verify_on_host`]), as the
/// registry's `auto` falls back for prepared batches. Returns the answer and the name of the
/// backend that gave it.
pub fn verify_or_fall_back(
    gpu: Option<&crate::CudaBackend>,
    cpu: &dyn chainsig_core::backend::Backend,
    batch: &RawSm2Batch,
) -> Result<(RawVerdicts, String), chainsig_core::backend::BackendError> {
    if let Some(gpu) = gpu {
        let tried =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| gpu.verify_raw(batch)));
        if let Ok(Ok(out)) = tried {
            if out.len() == batch.len() {
                return Ok((out, crate::NAME.to_string()));
            }
        }
    }
    Ok((verify_on_host(batch, cpu)?, cpu.name().to_string()))
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

    fn same(a: RawSm2Item, i: usize) {
        let (r, s, pubkey, id, msg) = item_bytes(i);
        assert_eq!(
            (a.r, a.s, a.pubkey, a.id, a.msg),
            (&r, &s, &pubkey[..], &id[..], &msg[..]),
            "record {i}"
        );
    }

    #[test]
    fn records_come_back_whole_from_the_batch_a_selection_and_a_staged_chunk() {
        let b = batch(300);
        (0..300).for_each(|i| same(b.item(i), i));
        let picked = [7usize, 3, 299, 150, 3];
        let sel = b.select(&picked);
        for (k, &i) in picked.iter().enumerate() {
            same(sel.item(k), i);
        }
        // A mid-batch chunk: offsets from the chunk's first byte, the bytes as pushed.
        let (i0, m) = (41usize, 200usize);
        let mut dst = vec![0xdead_beefu32; b.chunk_words(i0, m)];
        b.stage(i0, m, &mut dst).unwrap();
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
        assert!(part([false, false], vec![0, 9]).check().is_err());
    }
}
