//! Raw signed Ethereum transactions to senders on the device (kernels/keccak.cuh, rlp.cuh,
//! ethtx.cuh): the module's source, the layout of a batch as the kernel reads it and of its
//! answers, and the same headers compiled for the host (kernels/host_ethtx.cpp), which CI checks
//! against chainsig-eth's CPU path.
//!
//! The kernel reads each record's bytes where they lie in one buffer (offsets, no per-record
//! copies), checks the envelope, rebuilds and hashes the signing payload, recovers the key with
//! the secp256k1 module's recovery and hashes it into the address. Each answer carries a fault
//! number shared with `chainsig_eth::rawtx::TxFault` (0: a sender), so the host can report the
//! same error as the CPU path; [`FAULT_DEFER`] hands a record back to the host (a blob
//! transaction in its network form, with a sidecar).
//!
//! Written by hand, not taken from a crate: no maintained crate decodes RLP or hashes Keccak in
//! CUDA, and the decoding must refuse exactly what alloy refuses (`rlp.cuh` says how).

use chainsig_core::backend::BackendError;
use chainsig_gpu::{compile_cached, Compiled};

/// The module's kernels: each record read and its signing payload hashed, then (after the
/// secp256k1 module's recovery kernel) each key's address (kernels/ethtx.cuh says how the three
/// meet).
pub const PARSE_KERNEL: &str = "cs_ethtx_parse";
pub const ADDRESS_KERNEL: &str = "cs_ethtx_address";
/// Rows of the answers, column-major: the fault, the address (5 words), the key (16 words).
pub const OUT_ROWS: usize = 22;
/// The first row of the key in the answers (where the recovery kernel writes it).
pub const KEY_ROW: usize = 6;
/// The fault number of a record the host must decode itself (kernels/ethtx.cuh, ETH_DEFER).
pub const FAULT_DEFER: u32 = 10;
/// The largest record the kernels read (kernels/ethtx.cuh, ETH_MAX_TX_LEN).
pub const MAX_TX_LEN: usize = 128 * 1024;

const TYPES: &str = include_str!("../kernels/types.h");
const KECCAK: &str = include_str!("../kernels/keccak.cuh");
const RLP: &str = include_str!("../kernels/rlp.cuh");
const ETHTX: &str = include_str!("../kernels/ethtx.cuh");

/// The module's source: the type prelude, Keccak, RLP and the transaction kernels. It holds no
/// curve arithmetic (the recovery is the secp256k1 module's kernel), so it is compiled alone, as
/// the SM3 module is.
pub fn source() -> String {
    let mut s = String::new();
    for part in [TYPES, KECCAK, RLP, ETHTX] {
        s.push_str(part);
        s.push('\n');
    }
    s
}

/// Compiles (or loads from the cache) the module for `arch`.
pub fn compile(arch: &str) -> Result<Compiled, String> {
    compile_cached(&source(), arch)
}

/// Records per piece when a chunk is staged on every core.
const STAGE_PIECE: usize = 2048;

/// Bytes of `txs` together.
pub fn total_bytes(txs: &[&[u8]]) -> usize {
    txs.iter().map(|tx| tx.len()).sum()
}

/// Writes `txs` as the kernel reads a chunk: `offsets` (`txs.len() + 1` of them, from 0; record i
/// is `bytes[offsets[i]..offsets[i + 1]]`) and `bytes` ([`total_bytes`] long), the records one
/// after another, copied straight from the caller's slices, in pieces on every core.
pub fn stage(txs: &[&[u8]], offsets: &mut [u64], bytes: &mut [u8]) {
    use rayon::prelude::*;
    assert_eq!(
        offsets.len(),
        txs.len() + 1,
        "one offset per record and the end"
    );
    let mut end = 0u64;
    offsets[0] = 0;
    for (o, tx) in offsets[1..].iter_mut().zip(txs) {
        end += tx.len() as u64;
        *o = end;
    }
    assert_eq!(bytes.len() as u64, end, "the records' bytes");
    let mut pieces: Vec<&mut [u8]> = Vec::with_capacity(txs.len().div_ceil(STAGE_PIECE));
    let mut rest = bytes;
    for first in (0..txs.len()).step_by(STAGE_PIECE) {
        let last = (first + STAGE_PIECE).min(txs.len());
        let (piece, tail) = rest.split_at_mut((offsets[last] - offsets[first]) as usize);
        pieces.push(piece);
        rest = tail;
    }
    txs.par_chunks(STAGE_PIECE)
        .zip(pieces)
        .for_each(|(records, piece)| {
            let mut at = 0;
            for tx in records {
                piece[at..at + tx.len()].copy_from_slice(tx);
                at += tx.len();
            }
        });
}

/// One record's answer: the sender's address and uncompressed key (SEC 1, 0x04 || x || y), or the
/// fault number.
pub type Answer = Result<([u8; 20], [u8; 65]), u32>;

/// Record `i`'s answer from the kernel's column-major output of `stride` words per row.
pub fn answer(out: &[u32], stride: usize, i: usize) -> Answer {
    let fault = out[i];
    if fault != 0 {
        return Err(fault);
    }
    let mut address = [0u8; 20];
    for k in 0..5 {
        address[4 * k..4 * k + 4].copy_from_slice(&out[(1 + k) * stride + i].to_le_bytes());
    }
    let mut key = [0u32; 16];
    for (k, w) in key.iter_mut().enumerate() {
        *w = out[(6 + k) * stride + i];
    }
    Ok((address, crate::stage::sec1(&key)))
}

impl crate::CudaBackend {
    /// The sender of each raw signed transaction of `txs` (record i, answer i), found on the
    /// GPU: RLP checks, the signing payload's Keccak-256, recovery and the address all on the
    /// device. A fault number is `chainsig_eth::rawtx::TxFault`'s; [`FAULT_DEFER`] asks the host
    /// to decode that record itself. The records are staged from the caller's slices.
    pub fn recover_raw(&self, txs: &[&[u8]]) -> Result<Vec<Answer>, BackendError> {
        self.shards.run(txs.len(), |d, r| {
            d.engine("recover", crate::engine::Needs::RawTransactions)?
                .recover_raw(&txs[r])
        })
    }
}

/// The headers compiled for the host (kernels/host_ethtx.cpp): what CI checks.
pub mod host {
    use super::Answer;
    use crate::host::GTABLE_WORDS;

    mod ffi {
        extern "C" {
            pub fn cs_ethtx_keccak256(data: *const u8, len: u32, out: *mut u8);
            pub fn cs_ethtx_address(x: *const u32, y: *const u32, out: *mut u8);
            pub fn cs_ethtx_parse(record: *const u8, len: u64, out: *mut u32) -> u32;
            pub fn cs_ethtx_recover(
                record: *const u8,
                len: u64,
                gtab: *const u32,
                address: *mut u8,
                key: *mut u32,
            ) -> u32;
        }
    }

    /// Keccak-256 of `data` by keccak.cuh.
    pub fn keccak256(data: &[u8]) -> [u8; 32] {
        let len = u32::try_from(data.len()).expect("below 4 GiB");
        let mut out = [0u8; 32];
        // SAFETY: len bytes readable at data; 32 writable at out.
        unsafe { ffi::cs_ethtx_keccak256(data.as_ptr(), len, out.as_mut_ptr()) };
        out
    }

    /// The address of the key (x, y), 8 little-endian words each, by keccak.cuh.
    pub fn address(x: &[u32; 8], y: &[u32; 8]) -> [u8; 20] {
        let mut out = [0u8; 20];
        // SAFETY: 8 words each readable; 20 bytes writable.
        unsafe { ffi::cs_ethtx_address(x.as_ptr(), y.as_ptr(), out.as_mut_ptr()) };
        out
    }

    /// What ethtx.cuh reads from a record for recovery, as 8 little-endian words each.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Parsed {
        /// The signing hash.
        pub digest: [u32; 8],
        pub r: [u32; 8],
        pub s: [u32; 8],
        /// The parity of R's y.
        pub recid: u32,
    }

    /// What ethtx.cuh reads from a record, or its fault.
    pub fn parse(record: &[u8]) -> Result<Parsed, u32> {
        let mut out = [0u32; 25];
        // SAFETY: record.len() bytes readable (ethtx.cuh reads no further); 25 words writable.
        let fault =
            unsafe { ffi::cs_ethtx_parse(record.as_ptr(), record.len() as u64, out.as_mut_ptr()) };
        if fault != 0 {
            return Err(fault);
        }
        let words = |k: usize| -> [u32; 8] { out[8 * k..8 * k + 8].try_into().expect("8 words") };
        Ok(Parsed {
            digest: words(0),
            r: words(1),
            s: words(2),
            recid: out[24],
        })
    }

    /// One record through ethtx.cuh's whole path with secp256k1's table of G (`gtab`, from
    /// [`crate::host::EcdsaHost::build_gtable`]).
    pub fn recover(record: &[u8], gtab: &[u32]) -> Answer {
        assert_eq!(gtab.len(), GTABLE_WORDS, "G table has the wrong size");
        let (mut address, mut key) = ([0u8; 20], [0u32; 16]);
        // SAFETY: record.len() bytes readable; a table of GTABLE_WORDS words, only read; 20
        // bytes and 16 words writable.
        let fault = unsafe {
            ffi::cs_ethtx_recover(
                record.as_ptr(),
                record.len() as u64,
                gtab.as_ptr(),
                address.as_mut_ptr(),
                key.as_mut_ptr(),
            )
        };
        if fault != 0 {
            return Err(fault);
        }
        Ok((address, crate::stage::sec1(&key)))
    }
}
