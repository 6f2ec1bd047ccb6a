//! SM2 records that carry their message, as a node holds them: the signature (r, s), the
//! signer's SEC1 key (compressed or not, not yet checked), the signer's identifier and the
//! message. A backend that decodes keys and hashes on its own device (the CUDA backend: SEC1
//! decoding, Z_A and e = SM3(Z_A ‖ M) on the GPU) takes them so, and the host only copies bytes;
//! any other backend prepares them as the CPU path does (`chainsig_cpu::Preparer`).

use crate::bitmap::Bitmap;
use crate::error::RecordError;

/// The longest identifier: ENTL, its length in bits (GB/T 32918.2, 5.5), has two bytes.
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

/// Batches kept for reuse at most: one for each of the verify pipeline's usual workers.
const KEPT_BATCHES: usize = 4;

fn kept_batches() -> &'static std::sync::Mutex<Vec<RawSm2Batch>> {
    static KEPT: std::sync::Mutex<Vec<RawSm2Batch>> = std::sync::Mutex::new(Vec::new());
    &KEPT
}

/// The error of an identifier longer than ENTL can count, worded as the record parser words it.
fn id_too_long() -> RecordError {
    RecordError::new("id", "longer than 8191 bytes")
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
            return Err(id_too_long());
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

    /// A batch of `items`, in order, their bytes copied on every core (the path of large
    /// batches, where one core copying would keep the others waiting). Refused as a whole when an
    /// identifier is too long (the record parser refuses those records before they come here).
    pub fn from_items(items: &[RawSm2Item]) -> Result<Self, RecordError> {
        let mut batch = RawSm2Batch::default();
        batch.refill(items)?;
        Ok(batch)
    }

    /// Makes this batch the batch of `items`, as [`RawSm2Batch::from_items`] builds it, in the
    /// buffers it already has: a batch kept from one call to the next ([`RawSm2Batch::reused`])
    /// is not allocated, faulted in and zeroed again (for 65,536 SM2 records with 100-byte
    /// messages, 15 MB a call). Refused, the batch left empty, when an identifier is too long.
    pub fn refill(&mut self, items: &[RawSm2Item]) -> Result<(), RecordError> {
        use rayon::prelude::*;
        self.cuts.clear();
        self.cuts.push(0);
        if items.iter().any(|it| it.id.len() > ID_MAX) {
            self.bytes.clear();
            return Err(id_too_long());
        }
        self.cuts.reserve(3 * items.len());
        let mut end = 0;
        for it in items {
            for len in [64 + it.pubkey.len(), it.id.len(), it.msg.len()] {
                end += len;
                self.cuts.push(end);
            }
        }
        // Every byte below `end` is written below, so bytes left from an earlier batch are kept
        // rather than cleared; only room never used before is zeroed.
        self.bytes.resize(end, 0);
        let cuts = &self.cuts;
        let mut spans: Vec<&mut [u8]> = Vec::with_capacity(items.len());
        let mut rest = self.bytes.as_mut_slice();
        for k in 0..items.len() {
            let (span, tail) = rest.split_at_mut(cuts[3 * k + 3] - cuts[3 * k]);
            spans.push(span);
            rest = tail;
        }
        spans.into_par_iter().zip(items).for_each(|(span, it)| {
            let mut at = 0;
            for part in [&it.r[..], it.s, it.pubkey, it.id, it.msg] {
                span[at..at + part.len()].copy_from_slice(part);
                at += part.len();
            }
        });
        Ok(())
    }

    /// An empty batch for [`RawSm2Batch::refill`], one given back by an earlier caller
    /// ([`RawSm2Batch::give_back`]) when there is one: batches built call after call (a verify
    /// worker's chunks) keep their buffers.
    pub fn reused() -> RawSm2Batch {
        kept_batches()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
            .unwrap_or_default()
    }

    /// Keeps this batch's buffers for a later [`RawSm2Batch::reused`], unless enough are kept.
    pub fn give_back(self) {
        let mut kept = kept_batches()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() < KEPT_BATCHES {
            kept.push(self);
        }
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

    /// Records `range` as a batch of their own, the bytes copied in one piece.
    pub fn range(&self, range: std::ops::Range<usize>) -> RawSm2Batch {
        let base = self.cuts[3 * range.start];
        RawSm2Batch {
            cuts: self.cuts[3 * range.start..=3 * range.end]
                .iter()
                .map(|c| c - base)
                .collect(),
            bytes: self.bytes[base..self.cuts[3 * range.end]].to_vec(),
        }
    }

    /// Bytes of records [i0, i0 + m).
    pub fn record_bytes(&self, i0: usize, m: usize) -> usize {
        self.cuts[3 * (i0 + m)] - self.cuts[3 * i0]
    }

    /// The spans' starts: record i is `bytes()[cuts()[3i]..cuts()[3i + 3]]`, its identifier
    /// starting at `cuts()[3i + 1]` and its message at `cuts()[3i + 2]`.
    pub fn cuts(&self) -> &[usize] {
        &self.cuts
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// A backend's answer for a [`RawSm2Batch`]: a verdict per record, and the error of each record
/// that could not be checked (its key refused), by index in increasing order. A refused
/// record's verdict is false and means nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawOutcome {
    pub verdicts: Bitmap,
    pub errors: Vec<(usize, RecordError)>,
}

impl RawOutcome {
    pub fn len(&self) -> usize {
        self.verdicts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.verdicts.is_empty()
    }

    /// Record i: its verdict, or its error.
    pub fn outcome(&self, i: usize) -> Result<bool, RecordError> {
        match self.errors.binary_search_by_key(&i, |(k, _)| *k) {
            Ok(k) => Err(self.errors[k].1.clone()),
            Err(_) => Ok(self.verdicts.get(i)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Record i's r, s, key, identifier and message.
    type Parts = ([u8; 32], [u8; 32], Vec<u8>, Vec<u8>, Vec<u8>);

    fn parts(i: usize) -> Parts {
        let key = vec![2 + (i % 3) as u8; [33, 65, 0, 7][i % 4]];
        let id = vec![b'a' + (i % 26) as u8; i % 20];
        let msg: Vec<u8> = (0..(i * 7 % 90)).map(|k| (k ^ i) as u8).collect();
        ([i as u8; 32], [!(i as u8); 32], key, id, msg)
    }

    fn item(p: &Parts) -> RawSm2Item<'_> {
        RawSm2Item {
            r: &p.0,
            s: &p.1,
            pubkey: &p.2,
            id: &p.3,
            msg: &p.4,
        }
    }

    fn same(a: RawSm2Item, i: usize) {
        let (r, s, pubkey, id, msg) = parts(i);
        assert_eq!(
            (a.r, a.s, a.pubkey, a.id, a.msg),
            (&r, &s, &pubkey[..], &id[..], &msg[..]),
            "record {i}"
        );
    }

    #[test]
    fn records_come_back_whole_pushed_built_in_parallel_or_cut_by_range() {
        let all: Vec<Parts> = (0..300).map(parts).collect();
        let mut pushed = RawSm2Batch::default();
        for p in &all {
            pushed.push(&item(p)).unwrap();
        }
        let items: Vec<RawSm2Item> = all.iter().map(item).collect();
        let built = RawSm2Batch::from_items(&items).unwrap();
        assert_eq!(
            (built.cuts(), built.bytes()),
            (pushed.cuts(), pushed.bytes())
        );
        (0..300).for_each(|i| same(built.item(i), i));
        for range in [0..300, 0..0, 1..2, 17..299, 300..300] {
            let part = built.range(range.clone());
            assert_eq!(part.len(), range.len());
            assert_eq!(part.cuts()[0], 0);
            for (k, i) in range.enumerate() {
                same(part.item(k), i);
            }
        }
        let long = vec![0u8; ID_MAX + 1];
        let too_long = RawSm2Item {
            id: &long,
            ..items[0]
        };
        assert_eq!(pushed.push(&too_long).unwrap_err(), id_too_long());
        assert_eq!(pushed.len(), 300);
        assert!(RawSm2Batch::from_items(&[items[1], too_long]).is_err());
        // Refilled over a batch of more bytes, of fewer, and over a refused one: the same batch.
        let mut reused = RawSm2Batch::from_items(&items).unwrap();
        for take in [300, 7, 0, 150, 300] {
            let want = RawSm2Batch::from_items(&items[..take]).unwrap();
            reused.refill(&items[..take]).unwrap();
            assert_eq!(
                (reused.cuts(), reused.bytes()),
                (want.cuts(), want.bytes()),
                "{take}"
            );
            assert!(reused.refill(&[items[2], too_long]).is_err());
            assert_eq!(
                (reused.len(), reused.bytes().len()),
                (0, 0),
                "refused: empty"
            );
        }
        // A batch given back and taken again (this one, or another test's) refills the same.
        reused.give_back();
        let mut again = RawSm2Batch::reused();
        again.refill(&items).unwrap();
        assert_eq!((again.cuts(), again.bytes()), (built.cuts(), built.bytes()));
    }

    #[test]
    fn an_outcome_gives_each_record_its_verdict_or_its_error() {
        let mut verdicts = Bitmap::new(4);
        verdicts.set(1, true);
        let err = RecordError::new("pubkey", "point is not on the curve");
        let out = RawOutcome {
            verdicts,
            errors: vec![(2, err.clone())],
        };
        assert_eq!(out.outcome(0), Ok(false));
        assert_eq!(out.outcome(1), Ok(true));
        assert_eq!(out.outcome(2), Err(err));
        assert_eq!(out.outcome(3), Ok(false));
    }
}
