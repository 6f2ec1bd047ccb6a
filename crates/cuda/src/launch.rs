//! Launch geometry: which loaded kernel a work runs, in what block, over what grid, and how a
//! work is cut into chunks. Pure arithmetic over the device's multiprocessor count and a
//! kernel's occupancy, so it is unit-tested here without a GPU.

use crate::kernels::KernelConfig;
use chainsig_core::backend::BackendError;
use chainsig_gpu::cudarc::driver::{sys, CudaFunction};
use chainsig_gpu::device_err;

/// A loaded verification kernel, the threads it runs per signature, its block size, the least
/// and the most block it may be given, and the threads of it one multiprocessor holds.
pub(crate) struct Loaded {
    pub(crate) func: CudaFunction,
    pub(crate) threads: u32,
    block: u32,
    least: u32,
    most: u32,
    per_sm: u32,
}

impl Loaded {
    /// `block_size` is rounded up so that a block covers whole 32-signature halves of the bitmap
    /// words, which the kernels write, and a split block to at least 256 threads, so that its
    /// t·P half has a warp on each of the four schedulers of the multiprocessor (with 128, two
    /// blocks on one multiprocessor put two such warps on one scheduler: 8192 signatures took
    /// 1.9 ms instead of 1.15 on the H200). A block larger than the kernel's registers allow is
    /// refused by name.
    pub(crate) fn new(
        func: CudaFunction,
        kernel: &KernelConfig,
        block_size: u32,
    ) -> Result<Loaded, BackendError> {
        let threads = kernel.threads_per_item();
        let least = if kernel.is_split() { 256 } else { 64 }.max(32 * threads);
        let block = block_size.next_multiple_of(32 * threads).max(least);
        let most = func
            .get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
            .map_err(|e| device_err("cuFuncGetAttribute", e))? as u32;
        if block > most {
            return Err(crate::backend::unavailable(format!(
                "block_size {block} exceeds the {most} threads per block this kernel's registers allow"
            )));
        }
        let blocks = func
            .occupancy_max_active_blocks_per_multiprocessor(block, 0, None)
            .map_err(|e| device_err("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        Ok(Loaded {
            func,
            threads,
            block,
            least,
            most: most / (32 * threads) * (32 * threads),
            per_sm: blocks * block,
        })
    }

    /// The block size for a work of `items` signatures on a GPU of `sms` multiprocessors: the
    /// loaded one, halved while the work would fill fewer blocks than there are multiprocessors
    /// (down to the least block), so that a small batch spreads over the whole GPU instead of
    /// crowding a few multiprocessors with warps that then wait on each other. Large blocks
    /// suit large batches (512 threads at 128 registers: one block an SM).
    /// [`CudaConfig::spread_small`] puts [`Loaded::tail_block`] in its place for a work of less
    /// than one round.
    pub(crate) fn block_for(&self, items: usize, sms: u32) -> u32 {
        spread_block(self.block, self.least, self.threads, items, sms)
    }

    /// The signatures one round of the GPU holds: every multiprocessor full of this kernel.
    pub(crate) fn round(&self, sms: u32) -> usize {
        (sms as usize * self.per_sm as usize) / self.threads as usize
    }

    /// The block for a partial round of `items` signatures ([`tail_block`]), down to one warp of
    /// signatures (a split kernel's two halves of lane pairs: 128 threads). The least block of
    /// [`Loaded::block_for`] does not bind here: a spread round puts at most one block on a
    /// multiprocessor, so no two t·P warps of a split kernel share a scheduler.
    pub(crate) fn tail_block(&self, items: usize, sms: u32) -> u32 {
        tail_block(items, self.threads, 32 * self.threads, self.most, sms)
    }
}

/// [`Loaded::block_for`] for a kernel of `block` threads a block (at least `least`), `threads`
/// per item.
pub(crate) fn spread_block(
    mut block: u32,
    least: u32,
    threads: u32,
    items: usize,
    sms: u32,
) -> u32 {
    let all = items as u64 * u64::from(threads);
    while block / 2 >= least
        && (block / 2) % (32 * threads) == 0
        && all.div_ceil(u64::from(block)) < u64::from(sms)
    {
        block /= 2;
    }
    block
}

/// The block for a partial round of `items` signatures at `threads` each: one block on each
/// multiprocessor, as small as covers them all (a multiple of 32 × `threads`, between `least`
/// and `most`). In whole-round blocks a partial round would fill some multiprocessors and leave
/// the rest idle.
pub(crate) fn tail_block(items: usize, threads: u32, least: u32, most: u32, sms: u32) -> u32 {
    let per_sm = (items as u64 * u64::from(threads)).div_ceil(u64::from(sms.max(1)));
    let unit = u64::from(32 * threads);
    (per_sm.next_multiple_of(unit).min(u64::from(u32::MAX)) as u32).clamp(least, most.max(least))
}

/// The chunk of a work of `len` signatures whose kernel fills the GPU with `round`: one round
/// (a multiple of 64) where the work has at least one, else `chunk`.
pub(crate) fn round_chunk(chunk: usize, len: usize, round: usize) -> usize {
    if round >= 64 && len >= round {
        round / 64 * 64
    } else {
        chunk
    }
}

/// Grid and bitmap words of a launch over `mp` items (a multiple of 64) in blocks of `block`
/// threads (a multiple of 32 × threads), `threads` per item: each block covers block / threads
/// items and writes one 32-bit half word per 32 of them.
pub(crate) fn launch_shape(mp: usize, block: u32, threads: u32) -> (u32, usize) {
    let grid = (mp as u32 * threads).div_ceil(block);
    (grid, ((grid * block / threads) as usize).div_ceil(64))
}

/// The kernel for a batch of `len` items: the first small-batch form that takes it, else the main.
pub(crate) fn pick_kernel<'a>(
    main: &'a Loaded,
    small: &'a [(Loaded, usize)],
    len: usize,
) -> &'a Loaded {
    small
        .iter()
        .find(|(_, below)| len <= *below)
        .map_or(main, |(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_under_one_round_spreads_over_every_multiprocessor() {
        // The H200 at 128 registers: 132 multiprocessors, one 512-thread block each.
        let round = 132 * 512;
        // 36864 signatures: 288 threads on 128 multiprocessors, not 512 on 72.
        assert_eq!(tail_block(36864, 1, 64, 512, 132), 288);
        // 4096 on a split kernel: 128 blocks of 128, one on each multiprocessor but four; the
        // least block binds, and no block passes the kernel's most.
        assert_eq!(tail_block(4096, 4, 128, 1024, 132), 128);
        assert_eq!(tail_block(1024, 4, 128, 1024, 132), 128);
        assert_eq!(tail_block(100_000, 1, 64, 512, 132), 512);
        for threads in [1u32, 2, 4] {
            for items in (64..round / threads as usize).step_by(64 * 7) {
                let b = tail_block(items, threads, 64, 512, 132);
                assert_eq!(b % (32 * threads), 0);
                let blocks = (items * threads as usize).div_ceil(b as usize);
                assert!(blocks <= 132, "{items} items in {blocks} blocks of {b}");
            }
        }
    }

    #[test]
    fn a_work_of_a_round_or_more_is_cut_into_rounds() {
        let round = 132 * 512;
        assert_eq!(round_chunk(21_504, 172_032, round), round);
        assert_eq!(round_chunk(131_072, 1 << 20, round), round);
        assert_eq!(round_chunk(4096, 32_768, round), 4096);
        assert_eq!(round_chunk(4096, 32_768, 0), 4096);
        assert_eq!(round_chunk(4096, 1 << 20, 132 * 500), 65_984); // down to a multiple of 64
    }

    #[test]
    fn launches_cover_every_item_with_one_bit_each() {
        for threads in [1u32, 2, 4] {
            for block_size in [64u32, 128, 192, 256, 512, 544, 576, 672, 1024] {
                let block = block_size.next_multiple_of(32 * threads);
                for mp in [64usize, 128, 4096, 4160, 172032] {
                    let (grid, words) = launch_shape(mp, block, threads);
                    let items = (grid * block / threads) as usize;
                    assert!(items >= mp && items < mp + (block / threads) as usize);
                    assert_eq!(items % 32, 0, "blocks write whole half words");
                    assert_eq!(
                        words,
                        items.div_ceil(64),
                        "{threads} threads, block {block}"
                    );
                }
            }
        }
    }

    #[test]
    fn small_works_spread_their_blocks_over_the_multiprocessors() {
        // 4096 ECDSA signatures in blocks of 512 would fill 8 of 132 multiprocessors.
        assert_eq!(spread_block(512, 64, 1, 4096, 132), 64);
        assert_eq!(spread_block(512, 64, 1, 40_000, 132), 256);
        // Large batches keep their block; so does a split kernel at its least block.
        assert_eq!(spread_block(512, 64, 1, 172_032, 132), 512);
        assert_eq!(spread_block(256, 256, 4, 1024, 132), 256);
        // Lane pairs halve only to blocks that still cover whole 32-signature halves.
        assert_eq!(spread_block(256, 64, 2, 1024, 132), 64);
        assert_eq!(spread_block(512, 64, 1, 0, 132), 64);
    }
}
