//! Known signers. A permissioned chain's signatures come from a bounded set of keys (its endorsing
//! peers and registered clients), so each key can get what G has: a fixed-base table b·256^j·P
//! (32 × 255 affine points, 522 KB). With it t·P costs 32 affine additions instead of 256
//! doublings and 64 additions, and a verification about 720 field multiplications instead of 3560.
//!
//! Tables are built once per key on the host by the kernels' own arithmetic (the portable C++
//! path of host.rs, the same routine that builds G's table), keys in parallel, and uploaded by
//! [`crate::backend::CudaBackend::load_signers`]. Records then name their signer by index.

use crate::codegen::{words_from_be, Words};
use crate::host::{self, GTABLE_WORDS};
use chainsig_core::batch::{Batch, LIMBS, PX};
use rayon::prelude::*;
use std::collections::HashMap;

/// Bytes of one signer's table on the GPU.
pub const TABLE_BYTES: usize = GTABLE_WORDS * 4;

/// Rows of a [`SignerBatch`] in the kernel's layout: e, r, s (8 words each), the signer index.
pub const SIGNED_ROWS: usize = 3 * LIMBS + 1;

/// A signer's public key: affine x and y, big-endian.
pub type SignerKey = ([u8; 32], [u8; 32]);

/// The known signers' tables, [`GTABLE_WORDS`] words each, in signer order: built once on the
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
        let mut words = vec![0u32; keys.len() * GTABLE_WORDS];
        words
            .par_chunks_mut(GTABLE_WORDS)
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
        &self.words[i * GTABLE_WORDS..(i + 1) * GTABLE_WORDS]
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
    by_words: HashMap<[u32; 16], u32>,
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

/// A batch cut by signer: the records of known signers, and the others (unknown keys, records
/// that failed preparation) still with their keys; `*_at` give each record's place in the batch.
#[derive(Debug)]
pub struct Split {
    pub known: SignerBatch,
    pub known_at: Vec<usize>,
    pub others: Batch,
    pub others_at: Vec<usize>,
}

impl Split {
    /// Cuts `batch` by `index`. The lookups run in parallel, and both parts are gathered row by
    /// row with the rows in parallel, so cutting a million records costs milliseconds (record by
    /// record it cost over half a second, more than the GPU's whole verification).
    pub fn new(batch: &Batch, index: &SignerIndex) -> Split {
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
        let (w, stride) = (batch.words(), batch.stride());
        let mut rows: Vec<Vec<u32>> = (0..3 * LIMBS)
            .into_par_iter()
            .map(|r| {
                let row = &w[r * stride..r * stride + n];
                known_at.iter().map(|&i| row[i]).collect()
            })
            .collect();
        rows.push(
            known_at
                .iter()
                .map(|&i| signer[i].expect("known"))
                .collect(),
        );
        Split {
            known: SignerBatch {
                rows,
                len: known_at.len(),
            },
            known_at,
            // Records that failed preparation keep their all-zero slot (r = 0): rejected.
            others: batch.select(&others_at),
            others_at,
        }
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

    /// Copies records [i0, i0 + m) into `dst` in the kernel's layout with row stride `mp`.
    pub(crate) fn stage(&self, i0: usize, m: usize, mp: usize, dst: &mut [u32]) {
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
    fn the_table_of_g_is_the_fixed_base_table() {
        let g = chainsig_core::curve::SM2;
        let tables = SignerTables::build(&[(g.gx, g.gy)]).expect("G is on the curve");
        assert_eq!(tables.table(0), host::build_gtable().expect("G table"));
    }
}
