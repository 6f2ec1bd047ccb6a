//! Generated raw transactions for checking other decoders against [`super::recover_raw`] and for
//! benchmarks: signed transactions of every type with random fields ([`signed`]), and the same
//! taken apart and put back wrong ([`adversarial`]): cut short, extended, with a `v`, `y_parity`,
//! r or s out of range, a high s, non-canonical RLP, wrong list lengths and unknown type bytes.
//! [`mixed`] draws a batch as a node sees one: mostly EIP-1559, some legacy and EIP-2930, the
//! other types and malformed records mixed in.
//!
//! Deterministic for a seed, so a failing record can be made again.

use alloy_consensus::transaction::TxEip4844Variant;
use alloy_consensus::{TxEip1559, TxEip2930, TxEip4844, TxEip7702, TxLegacy, TypedTransaction};
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_eips::eip7702::{Authorization, SignedAuthorization};
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use alloy_rlp::{Encodable, Header};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::key::PrivateKey;
use crate::tx::sign_typed;
use crate::TxType;

/// secp256k1's group order n, big-endian.
const ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
    0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
];

/// A generator of raw transactions with its own keys.
pub struct Corpus {
    rng: ChaCha20Rng,
    keys: Vec<PrivateKey>,
}

impl Corpus {
    /// A generator for `seed`, signing with `keys` keys drawn from it.
    pub fn new(seed: u64, keys: usize) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let keys = (0..keys.max(1))
            .map(|_| loop {
                let mut bytes = [0u8; 32];
                rng.fill_bytes(&mut bytes);
                if let Ok(key) = PrivateKey::from_bytes(&bytes) {
                    break key;
                }
            })
            .collect();
        Corpus { rng, keys }
    }

    fn bytes(&mut self, max: usize) -> Bytes {
        // Mostly short, sometimes past 55 bytes (a long RLP string header) or several Keccak blocks.
        let len = match self.rng.gen_range(0..10) {
            0..=4 => self.rng.gen_range(0..8),
            5..=7 => self.rng.gen_range(0..200),
            _ => self.rng.gen_range(0..=max),
        };
        let mut v = vec![0u8; len];
        self.rng.fill_bytes(&mut v);
        v.into()
    }

    fn address(&mut self) -> Address {
        Address::from(self.rng.gen::<[u8; 20]>())
    }

    /// A value of about `bits` random bits, so encodings of every length appear (0 included).
    fn uint(&mut self, bits: u32) -> u128 {
        let b = self.rng.gen_range(0..=bits.min(128));
        if b == 0 {
            0
        } else {
            self.rng.gen::<u128>() >> (128 - b)
        }
    }

    fn u256(&mut self) -> U256 {
        let top = self.rng.gen_range(0..=32usize);
        let mut be = [0u8; 32];
        self.rng.fill_bytes(&mut be[32 - top..]);
        U256::from_be_bytes(be)
    }

    fn access_list(&mut self) -> AccessList {
        let items = match self.rng.gen_range(0..4) {
            0 | 1 => 0,
            2 => 1,
            _ => self.rng.gen_range(2..5),
        };
        AccessList(
            (0..items)
                .map(|_| AccessListItem {
                    address: self.address(),
                    storage_keys: (0..self.rng.gen_range(0..4))
                        .map(|_| B256::from(self.rng.gen::<[u8; 32]>()))
                        .collect(),
                })
                .collect(),
        )
    }

    fn chain_id(&mut self) -> u64 {
        match self.rng.gen_range(0..4) {
            0 => 1,
            1 => self.rng.gen_range(1..100_000),
            2 => self.uint(64) as u64,
            _ => u64::MAX - self.rng.gen_range(0..3),
        }
    }

    fn kind(&mut self) -> TxKind {
        if self.rng.gen_range(0..8) == 0 {
            TxKind::Create
        } else {
            TxKind::Call(self.address())
        }
    }

    /// An unsigned transaction of `ty` with random fields.
    pub fn unsigned(&mut self, ty: TxType) -> TypedTransaction {
        let nonce = self.uint(64) as u64;
        let gas_limit = self.uint(64) as u64;
        let value = self.u256();
        let input = self.bytes(3000);
        match ty {
            TxType::Legacy => TypedTransaction::Legacy(TxLegacy {
                chain_id: (self.rng.gen_range(0..5) != 0).then(|| self.chain_id()),
                nonce,
                gas_price: self.uint(128),
                gas_limit,
                to: self.kind(),
                value,
                input,
            }),
            TxType::Eip2930 => TypedTransaction::Eip2930(TxEip2930 {
                chain_id: self.chain_id(),
                nonce,
                gas_price: self.uint(128),
                gas_limit,
                to: self.kind(),
                value,
                access_list: self.access_list(),
                input,
            }),
            TxType::Eip1559 => TypedTransaction::Eip1559(TxEip1559 {
                chain_id: self.chain_id(),
                nonce,
                gas_limit,
                max_fee_per_gas: self.uint(128),
                max_priority_fee_per_gas: self.uint(128),
                to: self.kind(),
                value,
                access_list: self.access_list(),
                input,
            }),
            TxType::Eip4844 => TypedTransaction::Eip4844(TxEip4844Variant::TxEip4844(TxEip4844 {
                chain_id: self.chain_id(),
                nonce,
                gas_limit,
                max_fee_per_gas: self.uint(128),
                max_priority_fee_per_gas: self.uint(128),
                to: self.address(),
                value,
                access_list: self.access_list(),
                blob_versioned_hashes: (0..self.rng.gen_range(0..4))
                    .map(|_| B256::from(self.rng.gen::<[u8; 32]>()))
                    .collect(),
                max_fee_per_blob_gas: self.uint(128),
                input,
            })),
            TxType::Eip7702 => TypedTransaction::Eip7702(TxEip7702 {
                chain_id: self.chain_id(),
                nonce,
                gas_limit,
                max_fee_per_gas: self.uint(128),
                max_priority_fee_per_gas: self.uint(128),
                to: self.address(),
                value,
                access_list: self.access_list(),
                authorization_list: (0..self.rng.gen_range(0..3))
                    .map(|_| {
                        let inner = Authorization {
                            chain_id: self.u256(),
                            address: self.address(),
                            nonce: self.uint(64) as u64,
                        };
                        let y_parity = self.rng.gen();
                        SignedAuthorization::new_unchecked(
                            inner,
                            y_parity,
                            self.u256(),
                            self.u256(),
                        )
                    })
                    .collect(),
                input,
            }),
        }
    }

    /// A transaction of `ty` signed by one of the corpus's keys: its raw envelope.
    pub fn signed(&mut self, ty: TxType) -> Vec<u8> {
        let tx = self.unsigned(ty);
        let key = self.rng.gen_range(0..self.keys.len());
        sign_typed(tx, &self.keys[key]).raw
    }

    /// A type drawn as a node sees them: about 80% EIP-1559, 10% legacy, 5% EIP-2930, the rest
    /// blob and EIP-7702 transactions.
    pub fn mainnet_type(&mut self) -> TxType {
        match self.rng.gen_range(0..100) {
            0..=79 => TxType::Eip1559,
            80..=89 => TxType::Legacy,
            90..=94 => TxType::Eip2930,
            95..=97 => TxType::Eip4844,
            _ => TxType::Eip7702,
        }
    }

    /// A signed transaction of a random type, then broken in one of many ways (or sometimes left
    /// whole): for checking that a decoder refuses what the reference refuses, for the same reason.
    pub fn adversarial(&mut self) -> Vec<u8> {
        let ty = [
            TxType::Legacy,
            TxType::Eip2930,
            TxType::Eip1559,
            TxType::Eip4844,
            TxType::Eip7702,
        ][self.rng.gen_range(0..5)];
        let raw = self.signed(ty);
        self.break_tx(raw)
    }

    /// `fraction_bad` of `count` records broken ([`Corpus::adversarial`]), the rest signed
    /// transactions of mainnet-like types.
    pub fn mixed(&mut self, count: usize, fraction_bad: f64) -> Vec<Vec<u8>> {
        (0..count)
            .map(|_| {
                if self.rng.gen_bool(fraction_bad) {
                    self.adversarial()
                } else {
                    let ty = self.mainnet_type();
                    self.signed(ty)
                }
            })
            .collect()
    }

    fn break_tx(&mut self, raw: Vec<u8>) -> Vec<u8> {
        let Some(mut list) = TxList::split(&raw) else {
            return raw;
        };
        let n = list.items.len();
        let (v, r, s) = (n - 3, n - 2, n - 1);
        match self.rng.gen_range(0..24) {
            0 => list.join(),
            1 => {
                let cut = self.rng.gen_range(0..raw.len());
                raw[..cut].to_vec()
            }
            2 => {
                let mut out = raw;
                let extra = self.rng.gen_range(1..4);
                out.extend((0..extra).map(|_| self.rng.gen::<u8>()));
                out
            }
            3 | 4 => {
                let mut out = raw;
                let at = self.rng.gen_range(0..out.len());
                out[at] ^= 1 << self.rng.gen_range(0..8);
                out
            }
            5 => {
                // High s: s' = n - s with the other parity recovers the same key, as EIP-2 forbids.
                let s_value = U256::from_be_slice(&list.payload(s));
                let high = U256::from_be_bytes(ORDER) - s_value;
                list.items[s] = rlp(&high);
                self.flip_parity(&mut list, v);
                list.join()
            }
            6 => {
                // v or y_parity out of range.
                list.items[v] = if list.prefix.is_none() {
                    let bad = [0u128, 1, 26, 29, 30, 34][self.rng.gen_range(0..6)];
                    rlp(&bad)
                } else {
                    rlp(&[2u64, 3, 27, 28, 255, 256][self.rng.gen_range(0..6)])
                };
                list.join()
            }
            7 => {
                // A legacy v for another (possibly huge) chain: still a sender, a different one.
                if list.prefix.is_none() {
                    let v_value = 35 + 2 * u128::from(self.uint(66) as u64) + self.uint(1);
                    list.items[v] = rlp(&v_value);
                }
                list.join()
            }
            8 => {
                let bad = [
                    U256::ZERO,
                    U256::from_be_bytes(ORDER),
                    U256::MAX,
                    self.u256(),
                ][self.rng.gen_range(0..4)];
                list.items[r] = rlp(&bad);
                list.join()
            }
            9 => {
                list.items[s] = rlp(&[U256::ZERO, U256::from(1u8)][self.rng.gen_range(0..2)]);
                list.join()
            }
            10 => {
                // A leading zero inside an integer field.
                let at = self.rng.gen_range(0..n);
                let mut payload = list.payload(at);
                payload.insert(0, 0);
                list.items[at] = string(&payload);
                list.join()
            }
            11 => {
                // A single byte below 0x80 in a one-byte string header (0x81 0x05).
                let at = self.rng.gen_range(0..n);
                list.items[at] = vec![0x81, self.rng.gen_range(0..0x80)];
                list.join()
            }
            12 => {
                // A short string with a long-form header (non-canonical size).
                let at = self.rng.gen_range(0..n);
                let payload = list.payload(at);
                if payload.len() < 56 {
                    let mut item = vec![0xb8, payload.len() as u8];
                    item.extend(payload);
                    list.items[at] = item;
                }
                list.join()
            }
            13 => {
                // The outer list's length one off either way.
                let mut out = list.join();
                let header_at = usize::from(list.prefix.is_some());
                let delta: i32 = if self.rng.gen() { 1 } else { -1 };
                adjust_list_len(&mut out, header_at, delta);
                out
            }
            14 => {
                // A field removed or one added.
                if self.rng.gen() {
                    let at = self.rng.gen_range(0..n);
                    list.items.remove(at);
                } else {
                    let at = self.rng.gen_range(0..=n);
                    list.items.insert(at, vec![0x80]);
                }
                list.join()
            }
            15 => {
                // A list where a string belongs, or a string where a list belongs.
                let at = self.rng.gen_range(0..n);
                list.items[at] = if list.items[at][0] >= 0xc0 {
                    vec![0x80]
                } else {
                    vec![0xc0]
                };
                list.join()
            }
            16 => {
                // Another type byte: unknown types, 0x00 (not legacy's encoding), or a typed body
                // under a different known type.
                let ty = [0x00, 0x05, 0x7f, 0x01, 0x02, 0x03, 0x04][self.rng.gen_range(0..7)];
                let mut out = vec![ty];
                out.extend(
                    list.join()
                        .into_iter()
                        .skip(usize::from(list.prefix.is_some())),
                );
                out
            }
            17 => {
                // An address of the wrong length.
                let at = (0..n)
                    .find(|&k| list.items[k].len() == 21 && list.items[k][0] == 0x94)
                    .unwrap_or(0);
                let mut payload = list.payload(at);
                if self.rng.gen() {
                    payload.pop();
                } else {
                    payload.push(0);
                }
                list.items[at] = string(&payload);
                list.join()
            }
            18 => {
                // A typed transaction's body without its type byte, or a legacy one with one.
                let mut out = list.join();
                if list.prefix.is_some() {
                    out.remove(0);
                } else {
                    out.insert(0, self.rng.gen_range(1..5));
                }
                out
            }
            19 => Vec::new(),
            20 => {
                // A length-of-length header with a leading zero (0xf9 0x00 ..).
                let mut out = list.join();
                let at = usize::from(list.prefix.is_some());
                if out[at] == 0xf8 {
                    out[at] = 0xf9;
                    out.insert(at + 1, 0);
                }
                out
            }
            21 => {
                // Integers one byte wider than their type takes (u64 fields get 9 bytes).
                let at = self.rng.gen_range(0..n);
                let mut payload = vec![1u8];
                payload.extend(std::iter::repeat_n(0, self.rng.gen_range(8..18)));
                list.items[at] = string(&payload);
                list.join()
            }
            22 => {
                // A blob transaction's network form with an empty sidecar: [tx, [], [], []].
                if list.prefix == Some(3) {
                    let inner = list.join()[1..].to_vec();
                    let wrapper = TxList {
                        prefix: Some(3),
                        items: vec![inner, vec![0xc0], vec![0xc0], vec![0xc0]],
                    };
                    wrapper.join()
                } else {
                    list.join()
                }
            }
            _ => {
                // Random bytes after a plausible start.
                let mut out = raw[..raw.len().min(4)].to_vec();
                let extra = self.rng.gen_range(0..64);
                out.extend((0..extra).map(|_| self.rng.gen::<u8>()));
                out
            }
        }
    }

    fn flip_parity(&mut self, list: &mut TxList, v: usize) {
        let value = list.payload(v);
        let parity = value.last().copied().unwrap_or(0) & 1;
        let v_value = u128::from_be_bytes(left_pad16(&value));
        let flipped = if list.prefix.is_some() {
            v_value ^ 1
        } else if parity == 1 {
            v_value + 1
        } else {
            v_value - 1
        };
        list.items[v] = rlp(&flipped);
    }
}

fn left_pad16(bytes: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    let take = bytes.len().min(16);
    out[16 - take..].copy_from_slice(&bytes[bytes.len() - take..]);
    out
}

fn rlp<T: Encodable + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    value.encode(&mut out);
    out
}

/// An RLP string of `payload` as alloy encodes byte strings (a lone byte below 0x80 is itself).
fn string(payload: &[u8]) -> Vec<u8> {
    rlp(payload)
}

/// Adds `delta` to the list length in the header at `at` (a short list header only).
fn adjust_list_len(out: &mut [u8], at: usize, delta: i32) {
    match out[at] {
        0xc0..=0xf7 => out[at] = (i32::from(out[at]) + delta).clamp(0xc0, 0xf7) as u8,
        0xf8 => out[at + 1] = (i32::from(out[at + 1]) + delta).clamp(0, 255) as u8,
        0xf9 => {
            let len = u16::from_be_bytes([out[at + 1], out[at + 2]]) as i32 + delta;
            out[at + 1..at + 3].copy_from_slice(&(len.clamp(0, 0xffff) as u16).to_be_bytes());
        }
        _ => {}
    }
}

/// A transaction's top-level list taken apart: the type byte (none for legacy) and each item's
/// whole encoding.
struct TxList {
    prefix: Option<u8>,
    items: Vec<Vec<u8>>,
}

impl TxList {
    fn split(raw: &[u8]) -> Option<TxList> {
        let (prefix, mut body) = match raw.first()? {
            &b if b < 0x80 => (Some(b), &raw[1..]),
            _ => (None, raw),
        };
        let header = Header::decode(&mut body).ok()?;
        if !header.list {
            return None;
        }
        let mut payload = &body[..header.payload_length];
        let mut items = Vec::new();
        while !payload.is_empty() {
            let before = payload;
            let h = Header::decode(&mut payload).ok()?;
            payload = &payload[h.payload_length..];
            items.push(before[..before.len() - payload.len()].to_vec());
        }
        (items.len() >= 3).then_some(TxList { prefix, items })
    }

    /// Item `at`'s payload (the bytes after its header).
    fn payload(&self, at: usize) -> Vec<u8> {
        let mut item = &self.items[at][..];
        match Header::decode(&mut item) {
            Ok(_) => item.to_vec(),
            Err(_) => Vec::new(),
        }
    }

    fn join(&self) -> Vec<u8> {
        let len: usize = self.items.iter().map(Vec::len).sum();
        let mut out = Vec::with_capacity(len + 10);
        out.extend(self.prefix);
        Header {
            list: true,
            payload_length: len,
        }
        .encode(&mut out);
        for item in &self.items {
            out.extend_from_slice(item);
        }
        out
    }
}
