//! Staging: the layouts the kernels read their input in and write keys back in. A chunk of a
//! batch is copied into pinned memory in the kernel's layout (column-major by default: row r of
//! item i at r·stride + i, so that a warp's loads coalesce), recovery requests into the recovery
//! kernel's rows, and recovered keys come back as the kernels' little-endian words.

use crate::kernels::{self, KernelConfig};
use chainsig_core::batch::{Batch, RecoverItem, LIMBS, OPERANDS, PY};
use std::sync::OnceLock;

/// Runs `f`, a chunk's copy into (or answers out of) pinned buffers, on the staging threads: a
/// rayon pool of their own, one thread per core, so that the `par_iter`s inside `f` run there.
///
/// Why not rayon's global pool: a call copies its chunks while the GPU waits for them, and a
/// caller's other work keeps the global pool busy meanwhile: `chainsig verify` parses and
/// prepares its next chunks there on four workers. The copy's pieces can then queue behind those
/// jobs while the engine, and the GPU's next launch, wait with them. On an H100, 10⁶ SM2 records
/// from JSON Lines spent 0.109 s staging (6.8 ms a 65,536-record call for about 15 MB, far below
/// the memory's speed) and callers 0.154 s waiting for the engine (`verify --stats`, 2026-12-07).
/// With this pool the same run staged in 0.10–0.15 s (BENCHMARKS.md, "The GPU user paths after
/// the staging pool"): the copies were not slow for want of threads, but serial, one call at a
/// time with the engine held; calls now stage side by side (`engine::slots`). Without the pool
/// (it failed to start), `f` runs where it is.
pub(crate) fn on_stagers<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("chainsig-stage-{i}"))
            .build()
            .ok()
    });
    match pool {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// Words per item in the device layout.
pub(crate) fn rows(k: &KernelConfig) -> usize {
    if k.compress {
        4 * LIMBS
    } else {
        OPERANDS * LIMBS
    }
}

/// Device-layout words for a chunk of `m` items padded to `mp`.
pub(crate) fn chunk_words(k: &KernelConfig, mp: usize) -> usize {
    if k.row_major {
        mp * (rows(k) + usize::from(k.compress))
    } else {
        rows(k) * mp + if k.compress { mp / 32 } else { 0 }
    }
}

/// Copies items [i0, i0 + m) of the batch into `dst` in the kernel's layout (padded stride mp).
pub(crate) fn stage(
    batch: &Batch,
    k: &KernelConfig,
    i0: usize,
    m: usize,
    mp: usize,
    dst: &mut [u32],
) {
    use rayon::prelude::*;
    let src = batch.words();
    let stride = batch.stride();
    let nrows = rows(k);
    if k.row_major {
        let width = nrows + usize::from(k.compress);
        dst[..m * width]
            .par_chunks_mut(width)
            .enumerate()
            .for_each(|(i, row)| {
                for r in 0..nrows {
                    row[r] = src[r * stride + i0 + i];
                }
                if k.compress {
                    row[nrows] = src[(PY * LIMBS) * stride + i0 + i] & 1;
                }
            });
        return;
    }
    let (cols, parity) = dst.split_at_mut(nrows * mp);
    let copy = |(r, d): (usize, &mut [u32])| {
        d[..m].copy_from_slice(&src[r * stride + i0..r * stride + i0 + m])
    };
    if m >= 16384 {
        cols.par_chunks_mut(mp).enumerate().for_each(copy);
    } else {
        cols.chunks_mut(mp).enumerate().for_each(copy);
    }
    if k.compress {
        let py0 = &src[(PY * LIMBS) * stride + i0..(PY * LIMBS) * stride + i0 + m];
        for (w, out) in parity[..mp / 32].iter_mut().enumerate() {
            let mut bits = 0u32;
            for b in 0..32 {
                if let Some(y) = py0.get(w * 32 + b) {
                    bits |= (y & 1) << b;
                }
            }
            *out = bits;
        }
    }
}

/// Stages recovery items in the recovery kernel's rows (e, r, s as little-endian words, then the
/// recovery ids), padded stride `mp`.
pub(crate) fn stage_recover(items: &[RecoverItem], mp: usize, dst: &mut [u32]) {
    use rayon::prelude::*;
    let word = |bytes: &[u8; 32], j: usize| {
        u32::from_be_bytes(bytes[28 - 4 * j..32 - 4 * j].try_into().expect("4 bytes"))
    };
    let fill = |(row, d): (usize, &mut [u32])| {
        let (operand, j) = (row / LIMBS, row % LIMBS);
        for (slot, item) in d.iter_mut().zip(items) {
            *slot = match operand {
                0 => word(&item.digest, j),
                1 => word(&item.r, j),
                2 => word(&item.s, j),
                _ => u32::from(item.recovery_id),
            };
        }
    };
    let rows = &mut dst[..kernels::RECOVER_ROWS * mp];
    if items.len() >= 16384 {
        rows.par_chunks_mut(mp).enumerate().for_each(fill);
    } else {
        rows.chunks_mut(mp).enumerate().for_each(fill);
    }
}

/// The uncompressed SEC1 encoding of a key held as the kernels' words (x, then y, little-endian).
pub fn sec1(key: &[u32; 16]) -> [u8; 65] {
    let half = |h: &[u32]| crate::codegen::be_from_words(h.try_into().expect("8 words"));
    let mut out = [4u8; 65];
    out[1..33].copy_from_slice(&half(&key[..8]));
    out[33..].copy_from_slice(&half(&key[8..]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chainsig_core::algorithm::Algorithm;
    use chainsig_core::batch::PreparedItem;

    fn batch(n: usize) -> Batch {
        let mut b = Batch::with_capacity(Algorithm::Sm2, false, n);
        for i in 0..n {
            let mut it = PreparedItem::default();
            it.e[31] = i as u8;
            it.r[0] = 1;
            it.px[31] = (i * 3) as u8;
            it.py[31] = (i % 3) as u8; // parity alternates irregularly
            b.push(&it);
        }
        b
    }

    #[test]
    fn staging_layouts_place_every_word() {
        let b = batch(150);
        let (i0, m) = (64usize, 86usize);
        let mp = m.next_multiple_of(64);
        for compress in [false, true] {
            for row_major in [false, true] {
                let k = KernelConfig {
                    compress,
                    row_major,
                    max_registers: None,
                    ..KernelConfig::default()
                };
                let mut dst = vec![0xdead_beefu32; chunk_words(&k, mp)];
                stage(&b, &k, i0, m, mp, &mut dst);
                let nrows = rows(&k);
                for i in 0..m {
                    let item = i0 + i;
                    for r in 0..nrows {
                        let want = b.words()[r * b.stride() + item];
                        let got = if row_major {
                            dst[i * (nrows + usize::from(compress)) + r]
                        } else {
                            dst[r * mp + i]
                        };
                        assert_eq!(
                            got, want,
                            "row {r} item {item} compress={compress} row_major={row_major}"
                        );
                    }
                    if compress {
                        let parity = (item % 3) as u32 & 1;
                        let got = if row_major {
                            dst[i * (nrows + 1) + nrows]
                        } else {
                            (dst[nrows * mp + i / 32] >> (i % 32)) & 1
                        };
                        assert_eq!(got, parity, "parity of item {item}");
                    }
                }
            }
        }
    }

    #[test]
    fn recovery_staging_places_every_word() {
        let items: Vec<RecoverItem> = (0..70u8)
            .map(|i| {
                let mut it = RecoverItem {
                    digest: [i; 32],
                    r: [0; 32],
                    s: [0; 32],
                    recovery_id: i % 2,
                };
                it.r[31] = i; // least significant byte: word 0's low byte
                it.s[0] = i; // most significant byte: word 7's high byte
                it
            })
            .collect();
        let mp = 128;
        let mut dst = vec![u32::MAX; kernels::RECOVER_ROWS * mp];
        stage_recover(&items, mp, &mut dst);
        for (i, it) in items.iter().enumerate() {
            let d = it.digest[0] as u32;
            for j in 0..LIMBS {
                assert_eq!(dst[j * mp + i], d * 0x0101_0101, "e word {j} of item {i}");
            }
            assert_eq!(dst[LIMBS * mp + i], i as u32, "r word 0");
            assert_eq!(dst[(LIMBS + 7) * mp + i], 0);
            assert_eq!(dst[(2 * LIMBS + 7) * mp + i], (i as u32) << 24, "s word 7");
            assert_eq!(dst[3 * LIMBS * mp + i], u32::from(it.recovery_id));
        }
        // The padding past the items is left alone.
        assert_eq!(dst[items.len()], u32::MAX);
    }

    #[test]
    fn the_uncompressed_encoding_puts_the_top_words_first() {
        let mut key = [0u32; 16];
        key[7] = 0x0102_0304; // x's top word
        key[0] = 0x0a0b_0c0d; // x's bottom word
        key[15] = 0x1112_1314; // y's top word
        let b = sec1(&key);
        assert_eq!(b[0], 4);
        assert_eq!(&b[1..5], &[1, 2, 3, 4]);
        assert_eq!(&b[29..33], &[0x0a, 0x0b, 0x0c, 0x0d]);
        assert_eq!(&b[33..37], &[0x11, 0x12, 0x13, 0x14]);
    }
}
