//! Known signers. A permissioned chain's signatures come from a bounded set of keys (its endorsing
//! peers and registered clients), so each key can get what G has: a fixed-base table m·2^(9j)·P
//! in signed 9-bit windows (29 × 256 affine points, 464 KB). With it t·P costs 29 affine additions
//! instead of 256 doublings and 64 additions, and a verification about 560 field multiplications
//! instead of 3400.
//!
//! Tables are built once per key on the host by the kernels' own arithmetic (the portable C++
//! path of host.rs, the same routine that builds G's table), keys in parallel, and uploaded by
//! [`crate::backend::CudaBackend::load_signers`]. Records then name their signer by index.

use crate::codegen::{words_from_be, Words};
use crate::host::{self, KTABLE_WORDS};
use chainsig_core::batch::{Batch, LIMBS, PX};
use chainsig_core::Bitmap;
use rayon::prelude::*;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Bytes of one signer's table on the GPU.
pub const TABLE_BYTES: usize = KTABLE_WORDS * 4;

/// Rows of a [`SignerBatch`] in the kernel's layout: e, r, s (8 words each), the signer index.
pub const SIGNED_ROWS: usize = 3 * LIMBS + 1;

/// A signer's public key: affine x and y, big-endian.
pub type SignerKey = ([u8; 32], [u8; 32]);

/// The known signers' tables, [`KTABLE_WORDS`] words each, in signer order: built once on the
/// host, then loaded into any number of backends.
#[derive(Clone)]
pub struct SignerTables {
    words: Vec<u32>,
    count: usize,
    index: SignerIndex,
}

impl SignerTables {
    /// Builds the tables of `keys`. The error names the first key off the curve by its index.
    pub fn build(keys: &[SignerKey]) -> Result<SignerTables, String> {
        let mut words = vec![0u32; keys.len() * KTABLE_WORDS];
        words
            .par_chunks_mut(KTABLE_WORDS)
            .zip(keys.par_iter())
            .enumerate()
            .try_for_each(|(i, (dst, (x, y)))| {
                let table = host::build_key_table(&words_from_be(x), &words_from_be(y))
                    .map_err(|e| format!("signer {i}: {e}"))?;
                dst.copy_from_slice(&table);
                Ok::<(), String>(())
            })?;
        let mut index = SignerIndex::new();
        for k in keys {
            index.insert(*k);
        }
        Ok(SignerTables {
            words,
            count: keys.len(),
            index,
        })
    }

    /// The keys' numbering (a key given twice keeps its first index).
    pub fn index(&self) -> &SignerIndex {
        &self.index
    }

    /// Signers held.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Signer i's table.
    pub fn table(&self, i: usize) -> &[u32] {
        &self.words[i * KTABLE_WORDS..(i + 1) * KTABLE_WORDS]
    }

    /// Every table, one after another, as the GPU holds them.
    pub fn words(&self) -> &[u32] {
        &self.words
    }
}

impl std::fmt::Debug for SignerTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SignerTables({} signers)", self.count)
    }
}

/// Public keys numbered in the order they were first seen: the index a [`SignerBatch`] names.
/// Keys are held as the kernels' words (x then y, least significant word first), so a batch's
/// key columns are looked up without converting bytes.
#[derive(Debug, Default, Clone)]
pub struct SignerIndex {
    keys: Vec<SignerKey>,
    by_words: HashMap<[u32; 16], u32, BuildHasherDefault<KeyHasher>>,
}

/// Hashes a key by its first 8 bytes: the low 64 bits of x for the kernels' words, the SEC1
/// prefix and x's leading 7 bytes for an encoding ([`crate::raw::KnownEncodings`]). Every record
/// of a batch is looked up, and SipHash over 64 bytes was most of a split's cost. Flooding is no
/// concern: only the operator's keys are ever inserted, so a record crafted to collide costs one
/// more full comparison.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // A [u32; 16] is hashed as its length, then its 64 bytes in one write.
        if let Some(low) = bytes.get(..8) {
            self.0 ^= u64::from_ne_bytes(low.try_into().expect("8 bytes"));
        }
    }

    fn write_usize(&mut self, _length: usize) {}
}

fn key_words((x, y): &SignerKey) -> [u32; 16] {
    let (x, y) = (words_from_be(x), words_from_be(y));
    std::array::from_fn(|j| if j < 8 { x[j] } else { y[j - 8] })
}

impl SignerIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// The key's index, numbering it if it is new.
    pub fn insert(&mut self, key: SignerKey) -> u32 {
        let next = self.keys.len() as u32;
        *self.by_words.entry(key_words(&key)).or_insert_with(|| {
            self.keys.push(key);
            next
        })
    }

    pub fn get(&self, key: &SignerKey) -> Option<u32> {
        self.by_words.get(&key_words(key)).copied()
    }

    /// The signer of record i of `batch`, if its key is known.
    fn lookup(&self, batch: &Batch, i: usize) -> Option<u32> {
        let (w, stride) = (batch.words(), batch.stride());
        let key: [u32; 16] = std::array::from_fn(|j| w[(PX * LIMBS + j) * stride + i]);
        self.by_words.get(&key).copied()
    }

    /// The keys by index, as [`SignerTables::build`] takes them.
    pub fn keys(&self) -> &[SignerKey] {
        &self.keys
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Signatures in the kernel's signed layout (see [`SIGNED_ROWS`]), staged chunk by chunk.
pub(crate) trait StageSigned: Sync {
    fn len(&self) -> usize;
    /// Copies records [i0, i0 + m) into `dst` in the kernel's layout with row stride `mp`.
    fn stage(&self, i0: usize, m: usize, mp: usize, dst: &mut [u32]);
}

/// A batch cut by signer: the records of known signers, and the others (unknown keys, records
/// that failed preparation) still with their keys; `known.at()` and `others_at` give each
/// record's place in the batch.
#[derive(Debug)]
pub struct Split<'a> {
    pub known: KnownRecords<'a>,
    pub others: Batch,
    pub others_at: Vec<usize>,
}

/// The records of a batch whose signers are known, read in place: staging gathers their
/// operands straight from the batch into the GPU's input, with no copy of the batch between.
#[derive(Debug)]
pub struct KnownRecords<'a> {
    batch: &'a Batch,
    at: Vec<usize>,
    signers: Vec<u32>,
}

impl KnownRecords<'_> {
    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Each known record's place in the batch.
    pub fn at(&self) -> &[usize] {
        &self.at
    }

    /// Known record k's operands as words (e, r, s) and its signer.
    pub fn record(&self, k: usize) -> (Words, Words, Words, u32) {
        let (w, stride, i) = (self.batch.words(), self.batch.stride(), self.at[k]);
        let op = |o: usize| std::array::from_fn(|j| w[(o * LIMBS + j) * stride + i]);
        (op(0), op(1), op(2), self.signers[k])
    }
}

impl StageSigned for KnownRecords<'_> {
    fn len(&self) -> usize {
        self.at.len()
    }

    fn stage(&self, i0: usize, m: usize, mp: usize, dst: &mut [u32]) {
        let (w, stride) = (self.batch.words(), self.batch.stride());
        let (at, signers) = (&self.at[i0..i0 + m], &self.signers[i0..i0 + m]);
        let gather = |(r, d): (usize, &mut [u32])| {
            if r < 3 * LIMBS {
                let row = &w[r * stride..];
                for (d, &i) in d.iter_mut().zip(at) {
                    *d = row[i];
                }
            } else {
                d[..m].copy_from_slice(signers);
            }
        };
        let dst = &mut dst[..SIGNED_ROWS * mp];
        if m >= 16384 {
            dst.par_chunks_mut(mp).enumerate().for_each(gather);
        } else {
            dst.chunks_mut(mp).enumerate().for_each(gather);
        }
    }
}

impl<'a> Split<'a> {
    /// Cuts `batch` by `index`. The lookups run in parallel; the known records stay in the batch
    /// and are gathered when staged (copying them here cost more than the GPU's verification).
    pub fn new(batch: &'a Batch, index: &SignerIndex) -> Split<'a> {
        let n = batch.len();
        let signer: Vec<Option<u32>> = (0..n)
            .into_par_iter()
            .with_min_len(4096)
            .map(|i| {
                batch
                    .is_prepared(i)
                    .then(|| index.lookup(batch, i))
                    .flatten()
            })
            .collect();
        let (known_at, others_at): (Vec<usize>, Vec<usize>) =
            (0..n).partition(|&i| signer[i].is_some());
        let signers = known_at.iter().filter_map(|&i| signer[i]).collect();
        Split {
            known: KnownRecords {
                batch,
                at: known_at,
                signers,
            },
            // Records that failed preparation keep their all-zero slot (r = 0): rejected.
            others: batch.select(&others_at),
            others_at,
        }
    }

    /// The verdicts of the whole batch, in its order, from those of its two parts (slot k of
    /// `known` is record `known.at()[k]`, and likewise for the others).
    pub fn merge(&self, known: &Bitmap, others: &Bitmap) -> Bitmap {
        let mut out = Bitmap::new(self.known.len() + self.others_at.len());
        for (part, at) in [(known, self.known.at()), (others, &self.others_at)] {
            for (k, &i) in at.iter().enumerate() {
                out.set(i, part.get(k));
            }
        }
        out
    }
}

/// A record of a batch whose key is not among the known signers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownSigner {
    pub record: usize,
}

impl std::fmt::Display for UnknownSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "record {}: key: not a known signer", self.record)
    }
}

/// Signatures by known signers, column-major as the kernel reads them (see [`SIGNED_ROWS`]).
#[derive(Debug, Clone, Default)]
pub struct SignerBatch {
    rows: Vec<Vec<u32>>,
    len: usize,
}

impl SignerBatch {
    pub fn with_capacity(n: usize) -> Self {
        SignerBatch {
            rows: (0..SIGNED_ROWS).map(|_| Vec::with_capacity(n)).collect(),
            len: 0,
        }
    }

    /// Appends the signature (r, s) of digest e (all big-endian) by signer `signer`.
    pub fn push(&mut self, e: &[u8; 32], r: &[u8; 32], s: &[u8; 32], signer: u32) {
        if self.rows.is_empty() {
            *self = Self::with_capacity(1);
        }
        for (k, v) in [e, r, s].into_iter().enumerate() {
            let w: Words = words_from_be(v);
            for (j, word) in w.into_iter().enumerate() {
                self.rows[k * LIMBS + j].push(word);
            }
        }
        self.rows[3 * LIMBS].push(signer);
        self.len += 1;
    }

    /// Appends a record that must verify false (one that failed to parse): r = s = 0, which the
    /// range check refuses before any table is read.
    pub fn push_rejected(&mut self) {
        self.push(&[0; 32], &[0; 32], &[0; 32], 0);
    }

    /// The records of a verification batch, each signer looked up in `index`; records that failed
    /// preparation stay in place as rejections. Fails on the first record whose key is unknown.
    pub fn from_batch(batch: &Batch, index: &SignerIndex) -> Result<SignerBatch, UnknownSigner> {
        let mut out = SignerBatch::with_capacity(batch.len());
        for i in 0..batch.len() {
            if !batch.is_prepared(i) {
                out.push_rejected();
                continue;
            }
            let signer = index.lookup(batch, i).ok_or(UnknownSigner { record: i })?;
            let item = batch.item(i);
            out.push(&item.e, &item.r, &item.s, signer);
        }
        Ok(out)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The largest signer index named, if any record is held.
    pub fn max_signer(&self) -> Option<u32> {
        self.rows.get(3 * LIMBS)?.iter().copied().max()
    }

    /// Record i's operands as words (e, r, s) and its signer.
    pub fn record(&self, i: usize) -> (Words, Words, Words, u32) {
        let op = |k: usize| std::array::from_fn(|j| self.rows[k * LIMBS + j][i]);
        (op(0), op(1), op(2), self.rows[3 * LIMBS][i])
    }
}

impl StageSigned for SignerBatch {
    fn len(&self) -> usize {
        self.len
    }

    fn stage(&self, i0: usize, m: usize, mp: usize, dst: &mut [u32]) {
        let copy = |(row, d): (&Vec<u32>, &mut [u32])| d[..m].copy_from_slice(&row[i0..i0 + m]);
        let dst = &mut dst[..SIGNED_ROWS * mp];
        if m >= 16384 {
            self.rows
                .par_iter()
                .zip(dst.par_chunks_mut(mp))
                .for_each(copy);
        } else {
            self.rows.iter().zip(dst.chunks_mut(mp)).for_each(copy);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_places_every_word_of_every_row() {
        let mut b = SignerBatch::with_capacity(100);
        for i in 0..100u32 {
            let mut e = [0u8; 32];
            e[31] = i as u8;
            e[0] = 0x80 | i as u8;
            let mut r = [0u8; 32];
            r[30] = (i * 7) as u8;
            let s = [i as u8; 32];
            b.push(&e, &r, &s, i * 3);
        }
        let (i0, m) = (36usize, 64usize);
        let mp = 64;
        let mut dst = vec![0xdead_beef; SIGNED_ROWS * mp];
        b.stage(i0, m, mp, &mut dst);
        for i in 0..m {
            let (e, r, s, signer) = b.record(i0 + i);
            for j in 0..8 {
                assert_eq!(dst[j * mp + i], e[j]);
                assert_eq!(dst[(8 + j) * mp + i], r[j]);
                assert_eq!(dst[(16 + j) * mp + i], s[j]);
            }
            assert_eq!(dst[24 * mp + i], signer);
            assert_eq!(signer, (i0 + i) as u32 * 3);
            // little-endian words: e's last byte is word 0's low byte, its first word 7's top byte
            assert_eq!(e[0] & 0xff, (i0 + i) as u32 & 0xff);
            assert_eq!(e[7] >> 24, 0x80 | ((i0 + i) as u32 & 0xff));
        }
        assert_eq!(b.max_signer(), Some(99 * 3));
    }

    #[test]
    fn known_records_stage_from_the_batch_in_place() {
        use chainsig_core::{Algorithm, PreparedItem};
        let keys: Vec<SignerKey> = (0..5u8).map(|k| ([k + 1; 32], [k + 100; 32])).collect();
        let mut ix = SignerIndex::new();
        keys.iter().for_each(|k| _ = ix.insert(*k));
        let mut b = Batch::with_capacity(Algorithm::Sm2, false, 0);
        for i in 0..300u32 {
            if i % 50 == 3 {
                b.push_error(chainsig_core::RecordError::new("sig", "bad"));
                continue;
            }
            let (px, py) = if i % 7 == 0 {
                ([9; 32], [9; 32])
            } else {
                keys[i as usize % 5]
            };
            let v =
                |o: u32| -> [u8; 32] { std::array::from_fn(|k| (i * 3 + o * 11 + k as u32) as u8) };
            b.push(&PreparedItem {
                e: v(1),
                r: v(2),
                s: v(3),
                px,
                py,
            });
        }
        let split = Split::new(&b, &ix);
        assert_eq!(split.known.len() + split.others.len(), 300);
        assert!(split.others_at.contains(&3) && split.others_at.contains(&7));
        let (i0, m, mp) = (40usize, 150usize, 192usize);
        let mut dst = vec![0xdead_beef; SIGNED_ROWS * mp];
        split.known.stage(i0, m, mp, &mut dst);
        for k in 0..m {
            let i = split.known.at()[i0 + k];
            let item = b.item(i);
            let (e, r, s, signer) = split.known.record(i0 + k);
            assert_eq!(
                (e, r, s),
                (
                    words_from_be(&item.e),
                    words_from_be(&item.r),
                    words_from_be(&item.s)
                )
            );
            assert_eq!(keys[signer as usize], (item.px, item.py), "record {i}");
            for j in 0..8 {
                assert_eq!(dst[j * mp + k], e[j]);
                assert_eq!(dst[(8 + j) * mp + k], r[j]);
                assert_eq!(dst[(16 + j) * mp + k], s[j]);
            }
            assert_eq!(dst[24 * mp + k], signer);
        }
        let known = Bitmap::from_bools((0..split.known.len()).map(|k| k % 2 == 0));
        let others = Bitmap::from_bools(vec![true; split.others.len()]);
        let merged = split.merge(&known, &others);
        for (k, &i) in split.known.at().iter().enumerate() {
            assert_eq!(merged.get(i), k % 2 == 0);
        }
        assert!(split.others_at.iter().all(|&i| merged.get(i)));
    }

    #[test]
    fn the_index_numbers_keys_once_in_order() {
        let mut ix = SignerIndex::new();
        let a = ([1u8; 32], [2u8; 32]);
        let b = ([3u8; 32], [4u8; 32]);
        assert_eq!(ix.insert(a), 0);
        assert_eq!(ix.insert(b), 1);
        assert_eq!(ix.insert(a), 0);
        assert_eq!(ix.len(), 2);
        assert_eq!(ix.get(&b), Some(1));
        assert_eq!(ix.get(&([9u8; 32], [9u8; 32])), None);
        assert_eq!(ix.keys(), &[a, b]);
    }

    #[test]
    fn a_key_off_the_curve_is_refused_by_its_index() {
        let g = chainsig_core::curve::SM2;
        let good = (g.gx, g.gy);
        let mut bad_y = g.gy;
        bad_y[31] ^= 1;
        let err = SignerTables::build(&[good, (g.gx, bad_y)]).unwrap_err();
        assert!(err.starts_with("signer 1: "), "{err}");
        assert!(err.contains("not a point of the curve"), "{err}");
    }

    #[test]
    fn a_signers_table_is_its_key_table() {
        let g = chainsig_core::curve::SM2;
        let tables = SignerTables::build(&[(g.gx, g.gy)]).expect("G is on the curve");
        let direct = host::build_key_table(&words_from_be(&g.gx), &words_from_be(&g.gy));
        assert_eq!(tables.table(0), direct.expect("G's key table"));
        assert_eq!(tables.table(0).len(), KTABLE_WORDS);
    }
}
