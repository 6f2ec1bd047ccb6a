//! Staging of [`MessageBatch`] chunks for the SM3 kernel (kernels/sm3.cuh): Z_A columns,
//! 32-bit offsets and the message bytes in one pinned buffer per stream. The records themselves
//! live in `chainsig_core::messages`; Z_A comes from the caller's per-signer cache
//! (`chainsig_cpu::Preparer::z_a`).

pub use chainsig_core::messages::{MessageBatch, MessageItem};

/// Device words for the hashing input of a chunk of `m` records padded to `mp`:
/// Z_A columns, m + 1 offsets, then the bytes rounded up to whole words.
pub fn chunk_words(batch: &MessageBatch, i0: usize, m: usize, mp: usize) -> usize {
    8 * mp + mp + 1 + batch.message_bytes(i0, m).div_ceil(4)
}

/// Writes the hashing input of records [i0, i0 + m) into `dst` (at least `chunk_words` long):
/// Z_A column-major with stride mp, offsets relative to the chunk's first message, the bytes.
/// Fails when the chunk's messages exceed the 32-bit offsets the kernel reads. Large chunks are
/// copied by every core: one thread staging megabytes of messages would starve the GPU.
pub fn stage(
    batch: &MessageBatch,
    i0: usize,
    m: usize,
    mp: usize,
    dst: &mut [u32],
) -> Result<(), String> {
    use rayon::prelude::*;
    let total = batch.message_bytes(i0, m);
    if u32::try_from(total).is_err() {
        return Err(format!(
            "records {i0}..{}: {total} bytes of messages in one chunk, above the 4 GiB a chunk may hold",
            i0 + m
        ));
    }
    let (za_cols, rest) = dst.split_at_mut(8 * mp);
    let (offsets, words) = rest.split_at_mut(mp + 1);
    let base = batch.offsets()[i0];
    let src = &batch.bytes()[base..base + total];
    let words = &mut words[..total.div_ceil(4)];
    // SAFETY: a u32 slice viewed as its bytes: same memory, u8 has no alignment or invalid
    // values, and `words` is not used otherwise while the view lives. The kernel reads these
    // words as bytes, in memory order.
    let dst_bytes: &mut [u8] =
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 4) };
    const PIECE: usize = 1 << 20;
    let copy_za =
        |(j, col): (usize, &mut [u32])| col[..m].copy_from_slice(&batch.za_column(j)[i0..i0 + m]);
    let rebase = |(o, src): (&mut u32, &usize)| *o = (src - base) as u32;
    if total + 36 * m >= PIECE {
        za_cols.par_chunks_mut(mp).enumerate().for_each(copy_za);
        offsets[..=m]
            .par_iter_mut()
            .zip(&batch.offsets()[i0..=i0 + m])
            .for_each(rebase);
        dst_bytes[..total]
            .par_chunks_mut(PIECE)
            .zip(src.par_chunks(PIECE))
            .for_each(|(d, s)| d.copy_from_slice(s));
    } else {
        za_cols.chunks_mut(mp).enumerate().for_each(copy_za);
        offsets[..=m]
            .iter_mut()
            .zip(&batch.offsets()[i0..=i0 + m])
            .for_each(rebase);
        dst_bytes[..total].copy_from_slice(src);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(i: usize) -> Vec<u8> {
        (0..(i * 5 % 71)).map(|k| (k ^ i) as u8).collect()
    }

    fn batch(n: usize) -> MessageBatch {
        let mut b = MessageBatch::with_capacity(n, 0);
        for i in 0..n {
            let za: [u8; 32] = std::array::from_fn(|k| (i as u8).wrapping_mul(7) ^ k as u8);
            b.push(&MessageItem {
                za: &za,
                msg: &message(i),
                r: &[1; 32],
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
        for (n, i0, m) in [(100usize, 37usize, 50usize), (40_000, 1000, 38_000)] {
            let b = batch(n);
            let mp = m.next_multiple_of(64);
            let mut dst = vec![0xdead_beefu32; chunk_words(&b, i0, m, mp)];
            stage(&b, i0, m, mp, &mut dst).unwrap();
            let bytes: Vec<u8> = dst[9 * mp + 1..]
                .iter()
                .flat_map(|w| w.to_ne_bytes())
                .collect();
            for i in 0..m {
                let rec = i0 + i;
                for j in 0..8 {
                    let za_byte = |k: usize| (rec as u8).wrapping_mul(7) ^ k as u8;
                    let want = u32::from_be_bytes(std::array::from_fn(|q| za_byte(4 * j + q)));
                    assert_eq!(dst[j * mp + i], want, "Z_A word {j} of {rec}");
                }
                let (o0, o1) = (dst[8 * mp + i] as usize, dst[8 * mp + i + 1] as usize);
                assert_eq!(&bytes[o0..o1], &message(rec)[..], "message of {rec}");
            }
            assert_eq!(dst[8 * mp], 0);
        }
    }
}
