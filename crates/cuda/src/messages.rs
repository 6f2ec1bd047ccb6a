//! SM2 records that carry their message instead of the digest: the GPU computes e = SM3(Z_A ‖ M)
//! (kernels/cs_sm3.cuh) just before verifying, so host hashing does not cap a batch's throughput.
//! Z_A depends only on the signer, so the host computes it once per (identifier, key) and caches
//! it (`chainsig_cpu::Preparer::z_a`); the batch then carries 32 bytes of Z_A and the message per
//! record.

use chainsig_core::algorithm::Algorithm;
use chainsig_core::batch::{Batch, PreparedItem};

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

    /// Device words for the hashing input of a chunk of `m` records padded to `mp`:
    /// Z_A columns, m + 1 offsets, then the bytes rounded up to whole words.
    pub fn chunk_words(&self, i0: usize, m: usize, mp: usize) -> usize {
        8 * mp + mp + 1 + self.message_bytes(i0, m).div_ceil(4)
    }

    /// Writes the hashing input of records [i0, i0 + m) into `dst` (at least `chunk_words` long):
    /// Z_A column-major with stride mp, offsets relative to the chunk's first message, the bytes.
    /// Fails when the chunk's messages exceed the 32-bit offsets the kernel reads. Large chunks are
    /// copied by every core: one thread staging megabytes of messages would starve the GPU.
    pub fn stage(&self, i0: usize, m: usize, mp: usize, dst: &mut [u32]) -> Result<(), String> {
        use rayon::prelude::*;
        let total = self.message_bytes(i0, m);
        if u32::try_from(total).is_err() {
            return Err(format!(
                "records {i0}..{}: {total} bytes of messages in one chunk, above the 4 GiB a chunk may hold",
                i0 + m
            ));
        }
        let (za_cols, rest) = dst.split_at_mut(8 * mp);
        let (offsets, words) = rest.split_at_mut(mp + 1);
        let base = self.offsets[i0];
        let src = &self.bytes[base..base + total];
        let words = &mut words[..total.div_ceil(4)];
        // SAFETY: a u32 slice viewed as its bytes: same memory, u8 has no alignment or invalid
        // values, and `words` is not used otherwise while the view lives. The kernel reads these
        // words as bytes, in memory order.
        let dst_bytes: &mut [u8] = unsafe {
            std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 4)
        };
        const PIECE: usize = 1 << 20;
        let copy_za =
            |(col, src): (&mut [u32], &Vec<u32>)| col[..m].copy_from_slice(&src[i0..i0 + m]);
        let rebase = |(o, src): (&mut u32, &usize)| *o = (src - base) as u32;
        if total + 36 * m >= PIECE {
            za_cols
                .par_chunks_mut(mp)
                .zip(self.za.par_iter())
                .for_each(copy_za);
            offsets[..=m]
                .par_iter_mut()
                .zip(&self.offsets[i0..=i0 + m])
                .for_each(rebase);
            dst_bytes[..total]
                .par_chunks_mut(PIECE)
                .zip(src.par_chunks(PIECE))
                .for_each(|(d, s)| d.copy_from_slice(s));
        } else {
            za_cols.chunks_mut(mp).zip(self.za.iter()).for_each(copy_za);
            offsets[..=m]
                .iter_mut()
                .zip(&self.offsets[i0..=i0 + m])
                .for_each(rebase);
            dst_bytes[..total].copy_from_slice(src);
        }
        Ok(())
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
    fn staging_places_z_a_offsets_and_bytes_in_small_and_parallel_chunks() {
        // The second chunk is large enough for the parallel copies.
        for (n, i0, m) in [(100u32, 37usize, 50usize), (40_000, 1000, 38_000)] {
            let b = batch(n);
            let mp = m.next_multiple_of(64);
            let mut dst = vec![0xdead_beefu32; b.chunk_words(i0, m, mp)];
            b.stage(i0, m, mp, &mut dst).unwrap();
            let bytes: Vec<u8> = dst[9 * mp + 1..]
                .iter()
                .flat_map(|w| w.to_ne_bytes())
                .collect();
            for i in 0..m {
                let rec = i0 + i;
                for j in 0..8 {
                    assert_eq!(dst[j * mp + i], b.za[j][rec], "Z_A word {j} of {rec}");
                }
                let (o0, o1) = (dst[8 * mp + i] as usize, dst[8 * mp + i + 1] as usize);
                let want: Vec<u8> = (0..(rec as u32 * 5 % 71))
                    .map(|k| (k ^ rec as u32) as u8)
                    .collect();
                assert_eq!(&bytes[o0..o1], &want[..], "message of {rec}");
            }
            assert_eq!(dst[8 * mp], 0);
        }
    }
}
