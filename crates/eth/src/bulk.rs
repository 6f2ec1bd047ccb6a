//! The filler signer: N generated transactions from W wallets, signed on T threads, written in
//! order as JSON lines `{"from","nonce","hash","raw"}`, with a latency histogram. It makes test
//! data and benchmarks (`chainsig eth sign-bulk --random`); the user's own transactions are
//! signed by [`crate::batch`]. Because its recipients and values are random, it refuses the chain
//! ids of well-known public networks ([`check_filler_chain`]): a real mnemonic with chain id 1
//! would otherwise produce valid mainnet transactions that send funds to random addresses.
//!
//! Record k (from 0) is signed by wallet k mod W with nonce k div W, so nonces run 0, 1, 2, … per
//! wallet, round robin. Its other fields are pseudo-random but fixed by (seed, k), see [`bulk_tx`].
//! Each thread signs its records in groups of eight, in the CPU's AVX-512 IFMA lanes where
//! `CHAINSIG_CPU_LANES` allows ([`crate::signing::sign_prehash_batch`]; the same bytes either way).
//! Threads take chunks of [`CHUNK`] records from a shared counter and hand finished chunks to the
//! caller's thread, which writes them in order; the output is the same for any thread count.

use alloy_consensus::TypedTransaction;
use alloy_consensus::{TxEip1559, TxEip2930, TxLegacy};
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_primitives::{Address, TxKind, B256, U256};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::key::PrivateKey;
use crate::tx::{sign_typed_batch, sign_typed_into};
use crate::EthError;
use chainsig_cpu::lanes::LANES;

/// Records per unit of work handed to a thread.
pub const CHUNK: u64 = 2048;

const GWEI: u128 = 1_000_000_000;

/// The envelope of generated transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillerType {
    /// Legacy with EIP-155 replay protection.
    Legacy,
    /// EIP-2930, one access-list entry.
    Eip2930,
    /// EIP-1559.
    Eip1559,
}

/// Chain ids of public networks where value moves (Ethereum, its rollups and the large EVM
/// chains, from the chain registry of EIP-155's users): generated transactions are never signed
/// for them.
pub const PUBLIC_CHAIN_IDS: &[(u64, &str)] = &[
    (1, "Ethereum"),
    (10, "OP Mainnet"),
    (25, "Cronos"),
    (56, "BNB Smart Chain"),
    (61, "Ethereum Classic"),
    (100, "Gnosis"),
    (130, "Unichain"),
    (137, "Polygon PoS"),
    (146, "Sonic"),
    (204, "opBNB"),
    (250, "Fantom"),
    (324, "zkSync Era"),
    (480, "World Chain"),
    (1101, "Polygon zkEVM"),
    (1284, "Moonbeam"),
    (2020, "Ronin"),
    (5000, "Mantle"),
    (8453, "Base"),
    (34443, "Mode"),
    (42161, "Arbitrum One"),
    (42170, "Arbitrum Nova"),
    (42220, "Celo"),
    (43114, "Avalanche C-Chain"),
    (59144, "Linea"),
    (81457, "Blast"),
    (534352, "Scroll"),
    (7777777, "Zora"),
];

/// Refuses a public network's chain id for generated transactions.
pub fn check_filler_chain(chain_id: u64) -> Result<(), EthError> {
    match PUBLIC_CHAIN_IDS.iter().find(|(id, _)| *id == chain_id) {
        Some((_, name)) => Err(EthError::field(
            "chain-id",
            format!(
                "{chain_id} is {name}: random transactions are never signed for a public \
                 network (they would send real funds to random addresses); use a test chain id"
            ),
        )),
        None => Ok(()),
    }
}

/// What to sign.
#[derive(Clone, Copy, Debug)]
pub struct BulkConfig {
    /// Number of transactions.
    pub count: u64,
    /// Chain id of every transaction (legacy ones use EIP-155).
    pub chain_id: u64,
    /// Envelope type.
    pub tx_type: FillerType,
    /// Signing threads (at least 1).
    pub threads: usize,
    /// Seed of the pseudo-random fields.
    pub seed: u64,
}

/// Timing of a bulk run.
#[derive(Clone, Debug)]
pub struct BulkStats {
    /// Transactions signed.
    pub count: u64,
    /// Wall time of the signing (threads started to last chunk written).
    pub elapsed: Duration,
    /// Per-transaction latency in nanoseconds: build, encode, hash, sign, envelope, tx hash, JSON line.
    pub latency_ns: Histogram<u64>,
}

impl BulkStats {
    /// Transactions per second of wall time.
    pub fn rate(&self) -> f64 {
        self.count as f64 / self.elapsed.as_secs_f64()
    }

    /// A one-line summary: rate and p50/p99/p99.9 latency in µs.
    pub fn summary(&self) -> String {
        let q = |p: f64| self.latency_ns.value_at_quantile(p) as f64 / 1000.0;
        format!(
            "{} tx in {:.3} s: {:.0} tx/s; latency p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs",
            self.count,
            self.elapsed.as_secs_f64(),
            self.rate(),
            q(0.5),
            q(0.99),
            q(0.999),
            self.latency_ns.max() as f64 / 1000.0
        )
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

/// SplitMix64: a small, well-mixed counter-based generator, enough for filler fields.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Transaction k of a bulk run with `wallets` wallets: nonce k div wallets; `to` is 20 pseudo-random
/// bytes, `value` below 1 ether, data empty. Legacy and EIP-2930: gasPrice 20–21 gwei (EIP-2930 adds
/// one access-list entry: `to` with storage slot `nonce`, and gas 25,300 instead of 21,000).
/// EIP-1559: maxPriorityFeePerGas 1–2 gwei, maxFeePerGas 100 gwei.
pub fn bulk_tx(config: &BulkConfig, wallets: u64, k: u64) -> TypedTransaction {
    let a = splitmix(config.seed ^ k.wrapping_mul(0xd6e8_feb8_6659_fd93));
    let b = splitmix(a);
    let c = splitmix(b);
    let mut to = [0u8; 20];
    to[..8].copy_from_slice(&a.to_be_bytes());
    to[8..16].copy_from_slice(&b.to_be_bytes());
    to[16..].copy_from_slice(&c.to_be_bytes()[..4]);
    let to = Address::from(to);
    let nonce = k / wallets;
    let value = U256::from(c % 1_000_000_000_000_000_000);
    let fee_jitter = u128::from(a % 1_000_000_000);
    match config.tx_type {
        FillerType::Legacy => TypedTransaction::Legacy(TxLegacy {
            chain_id: Some(config.chain_id),
            nonce,
            gas_price: 20 * GWEI + fee_jitter,
            gas_limit: 21_000,
            to: TxKind::Call(to),
            value,
            input: Default::default(),
        }),
        FillerType::Eip2930 => TypedTransaction::Eip2930(TxEip2930 {
            chain_id: config.chain_id,
            nonce,
            gas_price: 20 * GWEI + fee_jitter,
            gas_limit: 25_300,
            to: TxKind::Call(to),
            value,
            access_list: AccessList(vec![AccessListItem {
                address: to,
                storage_keys: vec![B256::from(U256::from(nonce))],
            }]),
            input: Default::default(),
        }),
        FillerType::Eip1559 => TypedTransaction::Eip1559(TxEip1559 {
            chain_id: config.chain_id,
            nonce,
            gas_limit: 21_000,
            max_fee_per_gas: 100 * GWEI,
            max_priority_fee_per_gas: GWEI + fee_jitter,
            to: TxKind::Call(to),
            value,
            access_list: AccessList::default(),
            input: Default::default(),
        }),
    }
}

fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(2 * bytes.len());
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 15)]);
    }
}

/// Signs records `range` into JSON lines appended to `out`, in groups of eight (in lanes when
/// `lanes`, see [`crate::signing::sign_prehash_batch`]), recording each one's time: a group's time
/// shared equally by its records.
#[allow(clippy::too_many_arguments)]
fn sign_range(
    config: &BulkConfig,
    wallets: &[PrivateKey],
    from_strings: &[String],
    range: std::ops::Range<u64>,
    lanes: bool,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    latency: &mut Histogram<u64>,
) {
    let w = wallets.len() as u64;
    let mut last = Instant::now();
    let mut at = range.start;
    while at < range.end {
        let group = at..range.end.min(at + LANES as u64);
        let txs = group
            .clone()
            .map(|k| (bulk_tx(config, w, k), &wallets[(k % w) as usize]))
            .collect();
        let signed = sign_typed_batch(txs, lanes, scratch);
        for (k, signed) in group.clone().zip(signed) {
            let wallet = (k % w) as usize;
            out.extend_from_slice(b"{\"from\":\"");
            out.extend_from_slice(from_strings[wallet].as_bytes());
            out.extend_from_slice(b"\",\"nonce\":");
            out.extend_from_slice(itoa_u64(k / w).as_bytes());
            out.extend_from_slice(b",\"hash\":\"0x");
            push_hex(out, signed.hash.as_slice());
            out.extend_from_slice(b"\",\"raw\":\"0x");
            push_hex(out, &signed.raw);
            out.extend_from_slice(b"\"}\n");
        }
        let now = Instant::now();
        let each = now.duration_since(last).as_nanos() as u64 / (group.end - group.start);
        for _ in group.clone() {
            latency.saturating_record(each);
        }
        last = now;
        at = group.end;
    }
}

fn itoa_u64(v: u64) -> String {
    v.to_string()
}

/// Signs `config.count` transactions from `wallets` and writes them to `out` in record order;
/// `progress` is called with the number written so far after each chunk.
pub fn sign_bulk<W: Write>(
    wallets: &[PrivateKey],
    config: &BulkConfig,
    mut out: W,
    progress: &mut dyn FnMut(u64),
) -> io::Result<BulkStats> {
    if wallets.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "wallets: at least one is needed",
        ));
    }
    check_filler_chain(config.chain_id)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let lanes = crate::signing::lanes_for_batches()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let threads = config.threads.max(1);
    let from_strings: Vec<String> = wallets
        .iter()
        .map(|k| k.address().to_checksum(None))
        .collect();
    let chunks = config.count.div_ceil(CHUNK);
    let next_chunk = AtomicU64::new(0);
    let started = Instant::now();
    let (sender, receiver) = mpsc::sync_channel::<(u64, Vec<u8>)>(threads * 4);
    let mut latency = new_histogram();
    let mut write_error = None;
    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let sender = sender.clone();
            let (next_chunk, from_strings) = (&next_chunk, &from_strings);
            workers.push(scope.spawn(move || {
                let mut histogram = new_histogram();
                let mut scratch = Vec::with_capacity(512);
                loop {
                    let chunk = next_chunk.fetch_add(1, Ordering::Relaxed);
                    if chunk >= chunks {
                        break;
                    }
                    let start = chunk * CHUNK;
                    let end = (start + CHUNK).min(config.count);
                    let mut buf = Vec::with_capacity((end - start) as usize * 420);
                    sign_range(
                        config,
                        wallets,
                        from_strings,
                        start..end,
                        lanes,
                        &mut buf,
                        &mut scratch,
                        &mut histogram,
                    );
                    if sender.send((chunk, buf)).is_err() {
                        break; // the writer stopped on an error
                    }
                }
                histogram
            }));
        }
        drop(sender);
        let mut pending = BTreeMap::new();
        let mut next_to_write = 0u64;
        for (chunk, buf) in receiver.iter() {
            pending.insert(chunk, buf);
            while let Some(buf) = pending.remove(&next_to_write) {
                if let Err(e) = out.write_all(&buf) {
                    write_error = Some(e);
                    break;
                }
                next_to_write += 1;
                progress((next_to_write * CHUNK).min(config.count));
            }
            if write_error.is_some() {
                break;
            }
        }
        drop(receiver);
        for worker in workers {
            latency
                .add(worker.join().expect("signing thread panicked"))
                .expect("same histogram bounds");
        }
    });
    if let Some(e) = write_error {
        return Err(e);
    }
    out.flush()?;
    Ok(BulkStats {
        count: config.count,
        elapsed: started.elapsed(),
        latency_ns: latency,
    })
}

/// One-core benchmark: signs `count` EIP-1559 transactions (build, encode, hash, sign, envelope,
/// tx hash) on the calling thread, without output, timing each. The transactions never leave
/// this function, so the chain id is mainnet's, as a real signer's would be.
pub fn bench_single(key: &PrivateKey, count: u64) -> BulkStats {
    let config = BulkConfig {
        count,
        chain_id: 1,
        tx_type: FillerType::Eip1559,
        threads: 1,
        seed: 1,
    };
    let mut latency = new_histogram();
    let mut scratch = Vec::with_capacity(512);
    let started = Instant::now();
    let mut last = started;
    let mut checksum = 0u8;
    for k in 0..count {
        let signed = sign_typed_into(bulk_tx(&config, 1, k), key, &mut scratch);
        checksum ^= signed.raw[signed.raw.len() - 1];
        let now = Instant::now();
        latency.saturating_record(now.duration_since(last).as_nanos() as u64);
        last = now;
    }
    std::hint::black_box(checksum);
    BulkStats {
        count,
        elapsed: started.elapsed(),
        latency_ns: latency,
    }
}
