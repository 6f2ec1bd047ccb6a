//! SM2 records that carry their message instead of the digest, for a backend that hashes them itself
//! (the CUDA backend computes e = SM3(Z_A ‖ M) on the GPU just before verifying, so host hashing
//! does not cap a batch's throughput).
//! Z_A depends only on the signer, so the host computes it once per (identifier, key) and caches
//! it (`chainsig_cpu::Preparer::z_a`); the batch then carries 32 bytes of Z_A and the message per
//! record.

use crate::algorithm::Algorithm;
use crate::batch::{Batch, PreparedItem};

/// Records for GPU hashing and verification: r, s and the key in a [`Batch`] (its e slots are
/// left zero and filled on the GPU), Z_A and the messages beside it.
#[derive(Debug, Clone)]
pub struct MessageBatch {
    items: Batch,
    /// Z_A as 8 big-endian words, word j of every record in `za[j]`, so staging a chunk is eight
    /// plain copies.
    za: [Vec<u32>; 8],
    /// Record i's message is bytes[offsets[i]..offsets[i + 1]].
    offsets: Vec<usize>,
    bytes: Vec<u8>,
}

/// One record: the signer's Z_A, the message and the signature with its key (big-endian).
#[derive(Debug, Clone, Copy)]
pub struct MessageItem<'a> {
    pub za: &'a [u8; 32],
    pub msg: &'a [u8],
    pub r: &'a [u8; 32],
    pub s: &'a [u8; 32],
    pub px: &'a [u8; 32],
    pub py: &'a [u8; 32],
}

impl MessageBatch {
    /// An empty batch with room for `records` records and `message_bytes` bytes of messages.
    pub fn with_capacity(records: usize, message_bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(records + 1);
        offsets.push(0);
        MessageBatch {
            items: Batch::with_capacity(Algorithm::Sm2, false, records),
            za: std::array::from_fn(|_| Vec::with_capacity(records)),
            offsets,
            bytes: Vec::with_capacity(message_bytes),
        }
    }

    /// A batch of `items`, in order, built on every core (the records' rows, Z_A's columns and
    /// the messages each filled in parallel): the path of large batches, where pushing records
    /// one by one would keep one core busy while the others wait.
    pub fn from_items(items: &[MessageItem]) -> Self {
        use rayon::prelude::*;
        let prepared: Vec<PreparedItem> = items
            .par_iter()
            .map(|it| PreparedItem {
                e: [0; 32],
                r: *it.r,
                s: *it.s,
                px: *it.px,
                py: *it.py,
            })
            .collect();
        let za = std::array::from_fn(|j| {
            items
                .par_iter()
                .map(|it| u32::from_be_bytes(it.za[4 * j..4 * j + 4].try_into().expect("4 bytes")))
                .collect()
        });
        let mut offsets = Vec::with_capacity(items.len() + 1);
        offsets.push(0);
        let mut end = 0;
        offsets.extend(items.iter().map(|it| {
            end += it.msg.len();
            end
        }));
        let mut bytes = vec![0u8; end];
        // Each message into its own span of `bytes`, spans cut in order.
        let mut spans: Vec<&mut [u8]> = Vec::with_capacity(items.len());
        let mut rest = bytes.as_mut_slice();
        for it in items {
            let (span, tail) = rest.split_at_mut(it.msg.len());
            spans.push(span);
            rest = tail;
        }
        spans
            .into_par_iter()
            .zip(items)
            .for_each(|(span, it)| span.copy_from_slice(it.msg));
        MessageBatch {
            items: Batch::from_items(Algorithm::Sm2, false, &prepared),
            za,
            offsets,
            bytes,
        }
    }

    pub fn push(&mut self, it: &MessageItem) {
        self.items.push(&PreparedItem {
            e: [0; 32],
            r: *it.r,
            s: *it.s,
            px: *it.px,
            py: *it.py,
        });
        for (col, c) in self.za.iter_mut().zip(it.za.chunks_exact(4)) {
            col.push(u32::from_be_bytes(c.try_into().expect("4 bytes")));
        }
        self.bytes.extend_from_slice(it.msg);
        self.offsets.push(self.bytes.len());
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// r, s and keys in the verification layout (e still zero).
    pub fn items(&self) -> &Batch {
        &self.items
    }

    /// Message bytes of records [i0, i0 + m).
    pub fn message_bytes(&self, i0: usize, m: usize) -> usize {
        self.offsets[i0 + m] - self.offsets[i0]
    }

    /// Word j of every record's Z_A (big-endian words), record after record.
    pub fn za_column(&self, j: usize) -> &[u32] {
        &self.za[j]
    }

    /// Record i's message is `bytes()[offsets()[i]..offsets()[i + 1]]`.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Records `indices` of this batch, in that order, as a batch of their own (a backend that
    /// sends some records one way and the rest another cuts a batch with it).
    pub fn select(&self, indices: &[usize]) -> MessageBatch {
        let items = self.items.select(indices);
        let za = std::array::from_fn(|j| indices.iter().map(|&i| self.za[j][i]).collect());
        let mut offsets = Vec::with_capacity(indices.len() + 1);
        offsets.push(0);
        let mut bytes = Vec::with_capacity(indices.iter().map(|&i| self.message_bytes(i, 1)).sum());
        for &i in indices {
            bytes.extend_from_slice(&self.bytes[self.offsets[i]..self.offsets[i + 1]]);
            offsets.push(bytes.len());
        }
        MessageBatch {
            items,
            za,
            offsets,
            bytes,
        }
    }

    /// Records `range` of this batch as a batch of their own: as [`MessageBatch::select`] of
    /// those indices, each column and the messages copied in one piece.
    pub fn range(&self, range: std::ops::Range<usize>) -> MessageBatch {
        let items = self.items.range(range.clone());
        let za = std::array::from_fn(|j| self.za[j][range.clone()].to_vec());
        let base = self.offsets[range.start];
        let offsets = self.offsets[range.start..=range.end]
            .iter()
            .map(|o| o - base)
            .collect();
        let bytes = self.bytes[base..self.offsets[range.end]].to_vec();
        MessageBatch {
            items,
            za,
            offsets,
            bytes,
        }
    }

    /// The digests computed here, e = SM3(Z_A ‖ M), as an ordinary batch: the path of a backend
    /// that does not hash itself, and the CPU fallback.
    pub fn to_digest_batch(&self) -> Batch {
        let mut out = Batch::with_capacity(Algorithm::Sm2, false, self.len());
        for i in 0..self.len() {
            let mut za = [0u8; 32];
            for (j, col) in self.za.iter().enumerate() {
                za[4 * j..4 * j + 4].copy_from_slice(&col[i].to_be_bytes());
            }
            let msg = &self.bytes[self.offsets[i]..self.offsets[i + 1]];
            let item = PreparedItem {
                e: crate::hash::sm3_concat(&[&za, msg]),
                ..self.items.item(i)
            };
            out.push(&item);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(n: u32) -> MessageBatch {
        let mut b = MessageBatch::with_capacity(n as usize, 0);
        for i in 0..n {
            let za: [u8; 32] = std::array::from_fn(|k| (i as u8).wrapping_mul(7) ^ k as u8);
            let msg: Vec<u8> = (0..(i * 5 % 71)).map(|k| (k ^ i) as u8).collect();
            let mut r = [0u8; 32];
            r[31] = i as u8;
            b.push(&MessageItem {
                za: &za,
                msg: &msg,
                r: &r,
                s: &[2; 32],
                px: &[3; 32],
                py: &[4; 32],
            });
        }
        b
    }

    #[test]
    fn digest_batch_hashes_z_a_and_message_and_keeps_the_rest() {
        let b = batch(70);
        let d = b.to_digest_batch();
        assert_eq!(d.len(), 70);
        for i in 0..70u32 {
            let za: [u8; 32] = std::array::from_fn(|k| (i as u8).wrapping_mul(7) ^ k as u8);
            let msg: Vec<u8> = (0..(i * 5 % 71)).map(|k| (k ^ i) as u8).collect();
            let it = d.item(i as usize);
            assert_eq!(it.e, crate::hash::sm3_concat(&[&za, &msg]), "record {i}");
            assert_eq!(it.r[31], i as u8);
            assert_eq!((it.s, it.px, it.py), ([2; 32], [3; 32], [4; 32]));
        }
    }

    #[test]
    fn a_batch_built_on_every_core_is_the_batch_pushed() {
        let b = batch(300);
        let za: Vec<[u8; 32]> = (0..300u32)
            .map(|i| std::array::from_fn(|k| (i as u8).wrapping_mul(7) ^ k as u8))
            .collect();
        let msgs: Vec<Vec<u8>> = (0..300u32)
            .map(|i| (0..(i * 5 % 71)).map(|k| (k ^ i) as u8).collect())
            .collect();
        let rs: Vec<[u8; 32]> = (0..300u32)
            .map(|i| {
                let mut r = [0u8; 32];
                r[31] = i as u8;
                r
            })
            .collect();
        let items: Vec<MessageItem> = (0..300)
            .map(|i| MessageItem {
                za: &za[i],
                msg: &msgs[i],
                r: &rs[i],
                s: &[2; 32],
                px: &[3; 32],
                py: &[4; 32],
            })
            .collect();
        let built = MessageBatch::from_items(&items);
        assert_eq!(built.items().words(), b.items().words());
        assert_eq!(built.offsets(), b.offsets());
        assert_eq!(built.bytes(), b.bytes());
        for j in 0..8 {
            assert_eq!(built.za_column(j), b.za_column(j), "Z_A word {j}");
        }
        assert!(MessageBatch::from_items(&[]).is_empty());
    }

    #[test]
    fn a_selection_keeps_each_record_whole_in_the_order_asked() {
        let b = batch(70);
        let picked = [69, 3, 0, 40, 41, 3];
        let sel = b.select(&picked);
        assert_eq!(sel.len(), picked.len());
        let (all, part) = (b.to_digest_batch(), sel.to_digest_batch());
        for (k, &i) in picked.iter().enumerate() {
            assert_eq!(part.item(k), all.item(i), "record {k} is record {i}");
            assert_eq!(sel.message_bytes(k, 1), b.message_bytes(i, 1));
        }
        assert!(b.select(&[]).is_empty());
    }

    #[test]
    fn a_range_is_the_selection_of_its_indices() {
        let b = batch(70);
        for range in [0..70, 0..0, 3..4, 10..69, 70..70] {
            let indices: Vec<usize> = range.clone().collect();
            let (part, sel) = (b.range(range.clone()), b.select(&indices));
            assert_eq!(part.items().len(), sel.items().len(), "{range:?}");
            assert_eq!(part.offsets(), sel.offsets(), "{range:?}");
            assert_eq!(part.bytes(), sel.bytes(), "{range:?}");
            for j in 0..8 {
                assert_eq!(
                    part.za_column(j),
                    sel.za_column(j),
                    "{range:?} Z_A word {j}"
                );
            }
            let (p, s) = (part.to_digest_batch(), sel.to_digest_batch());
            for k in 0..part.len() {
                assert_eq!(p.item(k), s.item(k), "{range:?} record {k}");
            }
        }
    }
}
