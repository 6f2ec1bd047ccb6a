//! Raw Ethereum transactions to senders on the GPU ([`crate::ethtx`]): the module is compiled (or
//! taken from the cache), loaded and checked against the host build at the first batch, and runs
//! on the secp256k1 ECDSA module's G table.
//!
//! A chunk runs three kernels on one stream: the module's parse kernel, the secp256k1 module's
//! recovery kernel (unchanged) and the module's address kernel. A batch goes in chunks (the
//! engine's chunk length, at most [`CHUNK`] records) through the engine's slots: pinned buffers
//! reused between chunks and batches, each stream's copies and kernels overlapping the others'
//! and the host's staging and decoding.

use super::ecdsa::{ecdsa_gtable, loaded_ecdsa};
use super::slots::Slot;
use super::Engine;
use crate::backend::unavailable;
use crate::backend::PipelineTimes;
use crate::ethtx::{self, Answer, ADDRESS_KERNEL, KEY_ROW, OUT_ROWS, PARSE_KERNEL};
use crate::kernels::RECOVER_ROWS;
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::BackendError;
use chainsig_gpu::cudarc;
use chainsig_gpu::cudarc::driver::{result, CudaFunction, LaunchConfig, PushKernelArg};
use chainsig_gpu::device_err;
use std::collections::VecDeque;
use std::time::Instant;

/// The most records in a chunk: 2^16 (about 10 MB of mainnet-sized transactions and 6 MB of
/// answers), so that a batch of 2^20 makes sixteen chunks, and staging the first and decoding the
/// last (which nothing overlaps) are a sixteenth of the host's work.
pub(crate) const CHUNK: usize = 1 << 16;

/// The loaded transaction kernels.
pub(crate) struct EthtxKernel {
    parse: CudaFunction,
    address: CudaFunction,
}

/// Threads per block of the parse and address kernels (one record each, no shared work).
const BLOCK: u32 = 256;

/// Transactions of the start-up check: legacy with EIP-155 (the example of EIP-155 itself), and
/// it cut short, with a byte flipped and with its v out of range, so that a sender and three
/// faults are compared with the host build.
fn self_test_records() -> Vec<Vec<u8>> {
    const EIP155_EXAMPLE: &str = "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";
    let raw: Vec<u8> = (0..EIP155_EXAMPLE.len() / 2)
        .map(|i| u8::from_str_radix(&EIP155_EXAMPLE[2 * i..2 * i + 2], 16).expect("hex"))
        .collect();
    let mut flipped = raw.clone();
    flipped[40] ^= 0x10;
    let mut bad_v = raw.clone();
    let v_at = raw.len() - 67; // 0x25, then r and s of 33 bytes each
    bad_v[v_at] = 0x1d;
    vec![raw.clone(), raw[..raw.len() - 1].to_vec(), flipped, bad_v]
}

impl Engine {
    /// Loads the transaction kernel on first use (after the secp256k1 module, whose table it
    /// reads) and checks it against the host build.
    pub(super) fn ethtx(&mut self) -> Result<(), BackendError> {
        self.ecdsa(Algorithm::Secp256k1)?;
        if self.ethtx.is_some() {
            return Ok(());
        }
        self.ctx
            .bind_to_thread()
            .map_err(|e| device_err("bind context", e))?;
        let compiled = ethtx::compile(&self.arch).map_err(unavailable)?;
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
            .map_err(|e| device_err("cuModuleLoadData (ethtx)", e))?;
        let load = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| device_err("cuModuleGetFunction (ethtx)", e))
        };
        self.ethtx = Some(EthtxKernel {
            parse: load(PARSE_KERNEL)?,
            address: load(ADDRESS_KERNEL)?,
        });
        let records = self_test_records();
        let slices: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        let got = self.run_ethtx(&slices)?;
        let gtab = ecdsa_gtable(Algorithm::Secp256k1)?;
        for (i, raw) in records.iter().enumerate() {
            if got[i] != ethtx::host::recover(raw, gtab) {
                self.ethtx = None;
                return Err(unavailable(format!(
                    "the GPU's raw-transaction answer for self-test record {i} differs from the host build's"
                )));
            }
        }
        Ok(())
    }

    /// The sender of each raw transaction of `txs`, or its fault number
    /// (`chainsig_eth::rawtx::TxFault`; [`ethtx::FAULT_DEFER`] for the host to decode).
    /// (The kernels loaded first, [`super::Needs`].)
    pub(crate) fn recover_raw(&self, txs: &[&[u8]]) -> Result<Vec<Answer>, BackendError> {
        self.require(super::Needs::RawTransactions)?;
        self.run_ethtx(txs)
    }

    /// The slot pipeline for transactions: chunk c goes to slot c mod streams, after that slot's
    /// previous chunk is harvested. A chunk is staged into the slot's pinned message buffer
    /// (offsets rebased to the chunk, then the bytes), copied in and run through the three
    /// kernels on the slot's stream, its answer rows copied back into the slot's pinned key
    /// buffer; while the GPU runs the other streams' chunks, the host decodes a finished one's
    /// rows on every core. Buffers grow when a chunk needs more and are reused otherwise.
    fn run_ethtx(&self, batch: &[&[u8]]) -> Result<Vec<Answer>, BackendError> {
        let mut answers: Vec<Answer> = Vec::with_capacity(batch.len());
        if batch.is_empty() {
            return Ok(answers);
        }
        self.bind()?;
        let chunk = self.cfg.chunk_len(batch.len()).min(CHUNK);
        let kernels = self.ethtx.as_ref().expect("loaded by Engine::ethtx");
        let secp = loaded_ecdsa(&self.ecdsa, Algorithm::Secp256k1);
        let sms = self.sms;
        let mut slots = self.slots.take()?;
        let mut times = PipelineTimes::default();
        // The chunks in flight, oldest first: slot and length. Chunk c goes to slot c mod
        // streams, so a slot's previous chunk is always the oldest, and answers are appended in
        // record order.
        let mut in_flight: VecDeque<(usize, usize)> = VecDeque::with_capacity(slots.len());
        let mut run = || -> Result<(), BackendError> {
            for (c, first) in (0..batch.len()).step_by(chunk).enumerate() {
                let n = chunk.min(batch.len() - first);
                let k = c % slots.len();
                if in_flight.len() == slots.len() {
                    let (oldest, len) = in_flight.pop_front().expect("a chunk in flight");
                    debug_assert_eq!(oldest, k);
                    harvest(&mut slots[oldest], len, &mut answers, &mut times)?;
                }
                let staged = Instant::now();
                launch_chunk(&mut slots[k], batch, first, n, kernels, secp, sms)?;
                times.stage += staged.elapsed();
                in_flight.push_back((k, n));
            }
            while let Some((k, len)) = in_flight.pop_front() {
                harvest(&mut slots[k], len, &mut answers, &mut times)?;
            }
            Ok(())
        };
        let ran = run();
        self.add_times(&times);
        if let Err(e) = ran {
            // Nothing may still be writing the slots' buffers when they are next used.
            for slot in slots.iter() {
                let _ = slot.stream.synchronize();
            }
            return Err(e);
        }
        debug_assert_eq!(answers.len(), batch.len());
        Ok(answers)
    }
}

/// Waits for the slot's chunk of `n` records and appends its answers, decoded from the rows on
/// every core.
fn harvest(
    slot: &mut Slot,
    n: usize,
    answers: &mut Vec<Answer>,
    times: &mut PipelineTimes,
) -> Result<(), BackendError> {
    use rayon::prelude::*;
    let waited = Instant::now();
    slot.done.sync()?;
    let decoded = Instant::now();
    times.wait += decoded - waited;
    let rows = &slot.pin_keys.as_slice()[..OUT_ROWS * n];
    crate::stage::on_stagers(|| {
        answers.par_extend((0..n).into_par_iter().map(|i| ethtx::answer(rows, n, i)));
    });
    times.decode += decoded.elapsed();
    Ok(())
}

/// Stages records [first, first + n) of `batch` (the caller's slices) in the slot and queues, on its stream: the copy
/// in, the parse, recovery and address kernels, the copy of the answer rows out, and the slot's
/// event.
fn launch_chunk(
    slot: &mut Slot,
    batch: &[&[u8]],
    first: usize,
    n: usize,
    kernels: &EthtxKernel,
    secp: &super::ecdsa::EcdsaKernels,
    sms: u32,
) -> Result<(), BackendError> {
    let txs = &batch[first..first + n];
    let total = ethtx::total_bytes(txs);
    let recover_block = secp.recover.block_for(n, sms);
    let recover_cfg = grid(n, recover_block);
    // The recovery's bitmap: one bit per thread of its grid.
    let found_words = (recover_cfg.grid_dim.0 * recover_block).div_ceil(32) as usize;
    // The message buffer: n + 1 offsets of 8 bytes, then the bytes.
    let offset_words = 2 * (n + 1);
    let in_words = offset_words + total.div_ceil(4);
    slot.reserve_messages(in_words)?;
    slot.reserve(RECOVER_ROWS * n, found_words.div_ceil(2), OUT_ROWS * n)?;
    {
        let pin = &mut slot.pin_msg.as_mut_slice()[..in_words];
        // SAFETY: the pinned buffer (page-aligned, at least in_words long) viewed as n + 1 u64
        // offsets and then as bytes: disjoint parts of the same memory, every bit pattern valid
        // for both types, and `pin` unused while the views live.
        let (offsets, tail) = pin.split_at_mut(offset_words);
        let offsets: &mut [u64] =
            unsafe { std::slice::from_raw_parts_mut(offsets.as_mut_ptr().cast::<u64>(), n + 1) };
        let bytes: &mut [u8] =
            unsafe { std::slice::from_raw_parts_mut(tail.as_mut_ptr().cast::<u8>(), total) };
        crate::stage::on_stagers(|| ethtx::stage(txs, offsets, bytes));
    }
    let stream = slot.stream.cu_stream();
    // SAFETY: pin_msg and dev_msg hold at least in_words words; the pinned buffer is not
    // touched again until the slot's event has completed (harvest syncs on it first).
    unsafe {
        result::memcpy_htod_async(
            slot.dev_msg.ptr(),
            &slot.pin_msg.as_slice()[..in_words],
            stream,
        )
        .map_err(|e| device_err("copy raw transactions in", e))?;
    }
    let (count, stride) = (n as u32, n as u32);
    let poffsets = slot.dev_msg.ptr();
    let pbytes = poffsets + (offset_words * 4) as u64;
    let (prec, pfound, pout) = (slot.dev_in.ptr(), slot.dev_out.ptr(), slot.dev_keys.ptr());
    let pkeys = pout + (KEY_ROW * n * 4) as u64;
    let gtab = secp.gtab.ptr();
    let mut parse = slot.stream.launch_builder(&kernels.parse);
    parse
        .arg(&pbytes)
        .arg(&poffsets)
        .arg(&count)
        .arg(&prec)
        .arg(&pout)
        .arg(&stride);
    let mut recover = slot.stream.launch_builder(&secp.recover.func);
    recover
        .arg(&prec)
        .arg(&stride)
        .arg(&count)
        .arg(&gtab)
        .arg(&pfound)
        .arg(&pkeys);
    let mut address = slot.stream.launch_builder(&kernels.address);
    address.arg(&pfound).arg(&count).arg(&pout).arg(&stride);
    // SAFETY: argument types match cs_ethtx_parse, CS_INSTANTIATE_RECOVER and cs_ethtx_address;
    // the slot's buffers hold the chunk's bytes and offsets (dev_msg), RECOVER_ROWS rows of n
    // words (dev_in), the recovery grid's bitmap (dev_out) and OUT_ROWS rows of n words
    // (dev_keys, and pin_keys for the copy out, which harvest reads after the event).
    unsafe {
        parse
            .launch(grid(n, BLOCK))
            .map_err(|e| device_err("kernel launch (ethtx parse)", e))?;
        recover
            .launch(recover_cfg)
            .map_err(|e| device_err("kernel launch (ethtx recovery)", e))?;
        address
            .launch(grid(n, BLOCK))
            .map_err(|e| device_err("kernel launch (ethtx address)", e))?;
        let rows = &mut slot.pin_keys.as_mut_slice()[..OUT_ROWS * n];
        result::memcpy_dtoh_async(rows, pout, stream)
            .map_err(|e| device_err("copy transaction answers out", e))?;
    }
    slot.done.record(&slot.stream)?;
    Ok(())
}

/// One thread a record, in blocks of `block`.
fn grid(n: usize, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(block), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}
