//! Prepared items in the layout a GPU kernel reads, and their CPU view.
//!
//! A `Batch` holds one algorithm's items as 256-bit operands split into 32-bit words, column-major
//! ("structure of arrays"): word `j` of operand `k` of item `i` sits at `(k * LIMBS + j) * stride + i`,
//! so the 32 threads of a warp, one item each, read 32 consecutive words in one transaction. The
//! stride is the length rounded up to 64, so verdict words line up with blocks of items.

use crate::algorithm::Algorithm;
use crate::error::RecordError;

/// 32-bit words per 256-bit operand, least significant first.
pub const LIMBS: usize = 8;
/// Operand order within a batch.
pub const E: usize = 0;
pub const R: usize = 1;
pub const S: usize = 2;
pub const PX: usize = 3;
pub const PY: usize = 4;
pub const OPERANDS: usize = 5;

/// One signature ready to verify: the digest (SM2's e, ECDSA's z), r, s and the validated public key,
/// each a 256-bit big-endian value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PreparedItem {
    pub e: [u8; 32],
    pub r: [u8; 32],
    pub s: [u8; 32],
    pub px: [u8; 32],
    pub py: [u8; 32],
}

impl PreparedItem {
    fn operands(&self) -> [&[u8; 32]; OPERANDS] {
        [&self.e, &self.r, &self.s, &self.px, &self.py]
    }
}

/// Items of one algorithm in column-major words, with the errors of records that could not be prepared.
///
/// Every record has a slot, so verdict `i` is record `i`. A record that failed preparation keeps an
/// all-zero slot (r = 0, which every verifier rejects) and its error, which the caller reports instead.
#[derive(Debug, Clone)]
pub struct Batch {
    alg: Algorithm,
    low_s: bool,
    len: usize,
    stride: usize,
    words: Vec<u32>,
    errors: Vec<(usize, RecordError)>,
}

impl Batch {
    /// An empty batch with room for `capacity` items. `low_s` makes ECDSA reject s > n/2.
    pub fn with_capacity(alg: Algorithm, low_s: bool, capacity: usize) -> Self {
        let stride = capacity.max(1).next_multiple_of(64);
        Batch {
            alg,
            low_s,
            len: 0,
            stride,
            words: vec![0; OPERANDS * LIMBS * stride],
            errors: Vec::new(),
        }
    }

    /// Builds a batch from per-record results, in order.
    pub fn from_results(
        alg: Algorithm,
        low_s: bool,
        results: impl ExactSizeIterator<Item = Result<PreparedItem, RecordError>>,
    ) -> Self {
        let mut batch = Batch::with_capacity(alg, low_s, results.len());
        for result in results {
            match result {
                Ok(item) => batch.push(&item),
                Err(err) => batch.push_error(err),
            }
        }
        batch
    }

    /// Builds a batch of `items`, in order, its rows filled on every core: the path of large
    /// batches, where pushing items one by one (forty scattered words each) would keep one core
    /// busy while the others wait.
    pub fn from_items(alg: Algorithm, low_s: bool, items: &[PreparedItem]) -> Self {
        use rayon::prelude::*;
        let mut batch = Batch::with_capacity(alg, low_s, items.len());
        batch
            .words
            .par_chunks_mut(batch.stride)
            .enumerate()
            .for_each(|(row, dst)| {
                let (k, j) = (row / LIMBS, row % LIMBS);
                for (d, item) in dst.iter_mut().zip(items) {
                    let bytes = &item.operands()[k][32 - 4 * (j + 1)..32 - 4 * j];
                    *d = u32::from_be_bytes(bytes.try_into().expect("4 bytes"));
                }
            });
        batch.len = items.len();
        batch
    }

    pub fn alg(&self) -> Algorithm {
        self.alg
    }

    pub fn low_s(&self) -> bool {
        self.low_s
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Distance in words between operand rows; a multiple of 64, at least `len`.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// All operand words, `OPERANDS * LIMBS * stride()` of them.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Records that could not be prepared, by index, in order.
    pub fn errors(&self) -> &[(usize, RecordError)] {
        &self.errors
    }

    /// True when record `i` was prepared (its verdict means something).
    pub fn is_prepared(&self, i: usize) -> bool {
        self.errors
            .binary_search_by_key(&i, |(index, _)| *index)
            .is_err()
    }

    pub fn push(&mut self, item: &PreparedItem) {
        let i = self.next_slot();
        for (k, value) in item.operands().into_iter().enumerate() {
            for j in 0..LIMBS {
                let bytes = &value[32 - 4 * (j + 1)..32 - 4 * j];
                self.words[(k * LIMBS + j) * self.stride + i] =
                    u32::from_be_bytes(bytes.try_into().expect("4 bytes"));
            }
        }
    }

    pub fn push_error(&mut self, err: RecordError) {
        let i = self.next_slot();
        self.errors.push((i, err));
    }

    /// Reads item `i` back out of the columns (the CPU backends' view).
    ///
    /// # Panics
    /// When `i >= len()`.
    pub fn item(&self, i: usize) -> PreparedItem {
        assert!(i < self.len, "item {i} of {}", self.len);
        let mut item = PreparedItem::default();
        let stride = self.stride;
        let read = |k: usize, out: &mut [u8; 32]| {
            for j in 0..LIMBS {
                let word = self.words[(k * LIMBS + j) * stride + i];
                out[32 - 4 * (j + 1)..32 - 4 * j].copy_from_slice(&word.to_be_bytes());
            }
        };
        read(E, &mut item.e);
        read(R, &mut item.r);
        read(S, &mut item.s);
        read(PX, &mut item.px);
        read(PY, &mut item.py);
        item
    }

    /// Records `indices` of this batch, in that order, as a batch of their own, errors included
    /// (a backend that sends some records one way and the rest another cuts a batch with it).
    /// Copies row by row, rows in parallel, so a million records take milliseconds.
    ///
    /// # Panics
    /// When an index is `len()` or more.
    pub fn select(&self, indices: &[usize]) -> Batch {
        use rayon::prelude::*;
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.len) {
            panic!("item {bad} of {}", self.len);
        }
        let mut out = Batch::with_capacity(self.alg, self.low_s, indices.len());
        let (from, to) = (self.stride, out.stride);
        out.words
            .par_chunks_mut(to)
            .zip(self.words.par_chunks(from))
            .for_each(|(dst, src)| {
                for (d, &i) in dst.iter_mut().zip(indices) {
                    *d = src[i];
                }
            });
        out.len = indices.len();
        if !self.errors.is_empty() {
            out.errors = indices
                .iter()
                .enumerate()
                .filter_map(|(k, &i)| {
                    let at = self.errors.binary_search_by_key(&i, |(index, _)| *index);
                    at.ok().map(|at| (k, self.errors[at].1.clone()))
                })
                .collect();
        }
        out
    }

    /// Records `range` of this batch as a batch of their own, errors included: as
    /// [`Batch::select`] of those indices, but each operand row is one copy of contiguous words
    /// (a backend that shares a batch among several devices cuts it so).
    ///
    /// # Panics
    /// When the range ends past `len()`.
    pub fn range(&self, range: std::ops::Range<usize>) -> Batch {
        use rayon::prelude::*;
        assert!(
            range.start <= range.end && range.end <= self.len,
            "items {range:?} of {}",
            self.len
        );
        let mut out = Batch::with_capacity(self.alg, self.low_s, range.len());
        let (from, to) = (self.stride, out.stride);
        out.words
            .par_chunks_mut(to)
            .zip(self.words.par_chunks(from))
            .for_each(|(dst, src)| dst[..range.len()].copy_from_slice(&src[range.clone()]));
        out.len = range.len();
        let first = self.errors.partition_point(|(i, _)| *i < range.start);
        let last = self.errors.partition_point(|(i, _)| *i < range.end);
        out.errors = self.errors[first..last]
            .iter()
            .map(|(i, e)| (i - range.start, e.clone()))
            .collect();
        out
    }

    fn next_slot(&mut self) -> usize {
        if self.len == self.stride {
            self.grow();
        }
        self.len += 1;
        self.len - 1
    }

    /// Doubles the stride, moving each operand row to its new place.
    fn grow(&mut self) {
        let new_stride = self.stride * 2;
        let mut words = vec![0; OPERANDS * LIMBS * new_stride];
        for row in 0..OPERANDS * LIMBS {
            words[row * new_stride..row * new_stride + self.stride]
                .copy_from_slice(&self.words[row * self.stride..(row + 1) * self.stride]);
        }
        self.words = words;
        self.stride = new_stride;
    }
}

/// One Ethereum-style recovery request: digest, r‖s and the recovery id (y parity, 0 or 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoverItem {
    pub digest: [u8; 32],
    pub r: [u8; 32],
    pub s: [u8; 32],
    pub recovery_id: u8,
}

impl RecoverItem {
    /// The two recoveries a signed record allows, under ids 0 and 1 (one finds the signer of a
    /// valid low-s record, the other another key or none): how test and self-test data exercise
    /// recovery from verification records.
    pub fn both_ids(item: &PreparedItem) -> [RecoverItem; 2] {
        [0, 1].map(|recovery_id| RecoverItem {
            digest: item.e,
            r: item.r,
            s: item.s,
            recovery_id,
        })
    }
}

/// A record's expected verdicts under the any-s rule and under the low-s rule (s ≤ n/2, as
/// Ethereum and Bitcoin require for secp256k1); for SM2 both are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdicts {
    pub any_s: bool,
    pub low_s: bool,
}

impl Verdicts {
    /// The verdict under the low-s rule or not.
    pub fn get(self, low_s: bool) -> bool {
        if low_s {
            self.low_s
        } else {
            self.any_s
        }
    }
}

/// A recovered signer: its uncompressed SEC1 key and Ethereum address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovered {
    pub pubkey: [u8; 65],
    pub address: [u8; 20],
}

impl Recovered {
    /// Derives the address (last 20 bytes of keccak256 of x‖y) from an uncompressed key.
    pub fn from_pubkey(pubkey: [u8; 65]) -> Self {
        let hash = crate::hash::keccak256(&pubkey[1..]);
        let mut address = [0u8; 20];
        address.copy_from_slice(&hash[12..]);
        Recovered { pubkey, address }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(seed: u8) -> PreparedItem {
        let v = |o: u8| {
            std::array::from_fn(|b| {
                seed.wrapping_mul(31)
                    .wrapping_add(o)
                    .wrapping_add(b as u8 * 7)
            })
        };
        PreparedItem {
            e: v(1),
            r: v(2),
            s: v(3),
            px: v(4),
            py: v(5),
        }
    }

    #[test]
    fn a_selection_keeps_each_record_and_its_error_in_the_order_asked() {
        let mut batch = Batch::with_capacity(Algorithm::P256, true, 0);
        for n in 0..150u8 {
            if n % 40 == 7 {
                batch.push_error(RecordError::new("sig", format!("bad {n}")));
            } else {
                batch.push(&item(n));
            }
        }
        let picked = [149, 47, 0, 7, 100, 47, 128];
        let sel = batch.select(&picked);
        assert_eq!(
            (sel.len(), sel.alg(), sel.low_s()),
            (7, Algorithm::P256, true)
        );
        for (k, &i) in picked.iter().enumerate() {
            assert_eq!(sel.item(k), batch.item(i), "record {k} is record {i}");
            assert_eq!(sel.is_prepared(k), batch.is_prepared(i), "record {k}");
        }
        let errors: Vec<(usize, String)> = sel
            .errors()
            .iter()
            .map(|(k, e)| (*k, e.to_string()))
            .collect();
        assert_eq!(
            errors,
            [(1, "sig: bad 47"), (3, "sig: bad 7"), (5, "sig: bad 47")]
                .map(|(k, e)| (k, e.to_string()))
        );
        assert!(batch.select(&[]).is_empty());
    }

    #[test]
    fn a_range_is_the_selection_of_its_indices() {
        let mut batch = Batch::with_capacity(Algorithm::Sm2, false, 0);
        for n in 0..150u8 {
            if n % 40 == 7 {
                batch.push_error(RecordError::new("sig", format!("bad {n}")));
            } else {
                batch.push(&item(n));
            }
        }
        for range in [0..150, 0..0, 64..128, 7..8, 5..149, 150..150] {
            let indices: Vec<usize> = range.clone().collect();
            let (part, sel) = (batch.range(range.clone()), batch.select(&indices));
            assert_eq!(part.len(), sel.len(), "{range:?}");
            for k in 0..part.len() {
                assert_eq!(part.item(k), sel.item(k), "{range:?} record {k}");
            }
            assert_eq!(part.errors(), sel.errors(), "{range:?}");
        }
    }

    #[test]
    fn items_built_in_parallel_are_those_pushed() {
        let items: Vec<PreparedItem> = (0..150u8).map(item).collect();
        let built = Batch::from_items(Algorithm::Secp256k1, true, &items);
        let pushed = Batch::from_results(Algorithm::Secp256k1, true, items.iter().map(|i| Ok(*i)));
        assert_eq!(
            (built.len(), built.stride(), built.low_s()),
            (150, 192, true)
        );
        assert_eq!(built.words(), pushed.words());
        assert!(Batch::from_items(Algorithm::Sm2, false, &[]).is_empty());
    }

    #[test]
    #[should_panic(expected = "item 150 of 150")]
    fn a_selection_past_the_end_panics() {
        let mut batch = Batch::with_capacity(Algorithm::Sm2, false, 0);
        for n in 0..150u8 {
            batch.push(&item(n));
        }
        batch.select(&[3, 150]);
    }

    #[test]
    fn column_major_layout_and_round_trip_through_growth() {
        let mut batch = Batch::with_capacity(Algorithm::Sm2, false, 3);
        assert_eq!(batch.stride(), 64);
        for n in 0..150u8 {
            if n == 7 {
                batch.push_error(RecordError::new("sig", "bad"));
            } else {
                batch.push(&item(n));
            }
        }
        assert_eq!(batch.len(), 150);
        assert_eq!(batch.stride(), 256);
        for n in 0..150u8 {
            let want = if n == 7 {
                PreparedItem::default()
            } else {
                item(n)
            };
            assert_eq!(batch.item(n as usize), want);
        }
        assert!(!batch.is_prepared(7) && batch.is_prepared(8));
        // word 0 of r (least significant) of item 5 is the last four bytes of r, big-endian
        let r = item(5).r;
        assert_eq!(
            batch.words()[R * LIMBS * batch.stride() + 5],
            u32::from_be_bytes(r[28..].try_into().unwrap())
        );
        // word 7 of py (most significant) of item 9
        let py = item(9).py;
        assert_eq!(
            batch.words()[(PY * LIMBS + 7) * batch.stride() + 9],
            u32::from_be_bytes(py[..4].try_into().unwrap())
        );
    }

    #[test]
    fn address_of_private_key_one() {
        // G of secp256k1 is the public key of private key 1.
        let mut pubkey = [4u8; 65];
        pubkey[1..33].copy_from_slice(&crate::curve::SECP256K1.gx);
        pubkey[33..].copy_from_slice(&crate::curve::SECP256K1.gy);
        let rec = Recovered::from_pubkey(pubkey);
        assert_eq!(
            hex::encode(rec.address),
            "7e5f4552091a69125d5dfcb7b8c2659029395bdf"
        );
    }
}
