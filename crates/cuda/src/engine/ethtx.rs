//! Raw Ethereum transactions to senders on the GPU ([`crate::ethtx`]): the module is compiled (or
//! taken from the cache), loaded and checked against the host build at the first batch, and runs
//! on the secp256k1 ECDSA module's G table.
//!
//! A chunk runs three kernels on one stream: the module's parse kernel, the secp256k1 module's
//! recovery kernel (unchanged) and the module's address kernel. A batch goes in chunks of
//! [`CHUNK`] records, each copied in whole (bytes and offsets), run and copied back before the
//! next: not yet overlapped with the engine's slot pipeline.

use super::ecdsa::{ecdsa_gtable, loaded_ecdsa};
use super::Engine;
use crate::backend::unavailable;
use crate::ethtx::{self, Answer, RawBatch, ADDRESS_KERNEL, KEY_ROW, OUT_ROWS, PARSE_KERNEL};
use crate::kernels::RECOVER_ROWS;
use chainsig_core::algorithm::Algorithm;
use chainsig_core::backend::BackendError;
use chainsig_gpu::cudarc;
use chainsig_gpu::cudarc::driver::{result, CudaFunction, LaunchConfig, PushKernelArg};
use chainsig_gpu::{device_err, DevBuf};

/// Records per launch: about 150 MB of mainnet-sized transactions and 92 MB of answers.
pub(crate) const CHUNK: usize = 1 << 20;

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
    fn ethtx(&mut self) -> Result<(), BackendError> {
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
        let got = self.run_ethtx(&RawBatch::pack(records.iter().map(Vec::as_slice)))?;
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

    /// The sender of each raw transaction of `batch`, or its fault number
    /// (`chainsig_eth::rawtx::TxFault`; [`ethtx::FAULT_DEFER`] for the host to decode).
    pub(crate) fn recover_raw(&mut self, batch: &RawBatch) -> Result<Vec<Answer>, BackendError> {
        self.ethtx()?;
        self.run_ethtx(batch)
    }

    fn run_ethtx(&self, batch: &RawBatch) -> Result<Vec<Answer>, BackendError> {
        let kernels = self.ethtx.as_ref().expect("loaded by Engine::ethtx");
        let secp = loaded_ecdsa(&self.ecdsa, Algorithm::Secp256k1);
        let gtab = secp.gtab.ptr();
        let mut answers = Vec::with_capacity(batch.len());
        let stream = &self.slots[0].stream;
        let grid = |n: usize, block: u32| LaunchConfig {
            grid_dim: ((n as u32).div_ceil(block), 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        for first in (0..batch.len()).step_by(CHUNK) {
            let n = CHUNK.min(batch.len() - first);
            let base = batch.offsets[first];
            let offsets: Vec<u64> = batch.offsets[first..=first + n]
                .iter()
                .map(|o| o - base)
                .collect();
            let bytes = &batch.bytes[base as usize..batch.offsets[first + n] as usize];
            let recover_block = secp.recover.block_for(n, self.sms);
            let recover_cfg = grid(n, recover_block);
            // The recovery's bitmap: one bit per thread of its grid.
            let found_words = (recover_cfg.grid_dim.0 * recover_block).div_ceil(32) as usize;
            let (dbytes, doffsets, drec, dout, dfound) = (
                DevBuf::new(bytes.len().max(1))?,
                DevBuf::new(offsets.len() * 8)?,
                DevBuf::new(RECOVER_ROWS * n * 4)?,
                DevBuf::new(OUT_ROWS * n * 4)?,
                DevBuf::new(found_words * 4)?,
            );
            // SAFETY: each buffer holds at least what is copied into it; synchronous copies.
            unsafe {
                if !bytes.is_empty() {
                    result::memcpy_htod_sync(dbytes.ptr(), bytes)
                        .map_err(|e| device_err("copy in", e))?;
                }
                result::memcpy_htod_sync(doffsets.ptr(), &offsets)
                    .map_err(|e| device_err("copy in", e))?;
            }
            let (count, stride) = (n as u32, n as u32);
            let (pbytes, poffsets, prec, pout, pfound) = (
                dbytes.ptr(),
                doffsets.ptr(),
                drec.ptr(),
                dout.ptr(),
                dfound.ptr(),
            );
            let pkeys = pout + (KEY_ROW * n * 4) as u64;
            let mut parse = stream.launch_builder(&kernels.parse);
            parse
                .arg(&pbytes)
                .arg(&poffsets)
                .arg(&count)
                .arg(&prec)
                .arg(&pout)
                .arg(&stride);
            let mut recover = stream.launch_builder(&secp.recover.func);
            recover
                .arg(&prec)
                .arg(&stride)
                .arg(&count)
                .arg(&gtab)
                .arg(&pfound)
                .arg(&pkeys);
            let mut address = stream.launch_builder(&kernels.address);
            address.arg(&pfound).arg(&count).arg(&pout).arg(&stride);
            // SAFETY: argument types match cs_ethtx_parse, CS_INSTANTIATE_RECOVER and
            // cs_ethtx_address; the buffers are sized for n records (and the recovery's grid).
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
            }
            stream
                .synchronize()
                .map_err(|e| device_err("synchronize", e))?;
            let mut out = vec![0u32; OUT_ROWS * n];
            // SAFETY: sizes as allocated; the stream has finished.
            unsafe { result::memcpy_dtoh_sync(&mut out, dout.ptr()) }
                .map_err(|e| device_err("copy out", e))?;
            answers.extend((0..n).map(|i| ethtx::answer(&out, n, i)));
        }
        Ok(answers)
    }
}
