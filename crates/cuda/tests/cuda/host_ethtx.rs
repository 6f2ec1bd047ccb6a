//! The raw-transaction path (kernels/keccak.cuh, rlp.cuh, ethtx.cuh) compiled for the host and
//! checked record by record against chainsig-eth's CPU path (alloy's decoder, libsecp256k1's
//! recovery): generated transactions of every type and the same broken in many ways must give the
//! same sender or the same fault, with 0 disagreements. Keccak-256 is checked against the sha3
//! crate. The module's NVRTC compilation is checked in `nvrtc`.

use chainsig_cuda::codegen::words_from_be;
use chainsig_cuda::ethtx::{self, host, FAULT_DEFER};
use chainsig_cuda::host::HostCurve;
use chainsig_eth::rawtx::corpus::Corpus;
use chainsig_eth::rawtx::{recover_raw, TxFault, MAX_RAW_TX_LEN};
use chainsig_eth::TxType;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use sha3::{Digest, Keccak256};
use std::collections::BTreeMap;
use std::sync::OnceLock;

fn gtable() -> &'static [u32] {
    static T: OnceLock<Vec<u32>> = OnceLock::new();
    T.get_or_init(|| {
        HostCurve::Secp256k1
            .ecdsa()
            .expect("secp256k1 is an ECDSA curve")
            .build_gtable()
            .expect("fixed-base table")
    })
}

#[test]
fn keccak256_matches_the_sha3_crate_at_every_block_boundary() {
    let mut rng = ChaCha20Rng::seed_from_u64(41);
    let mut lengths: Vec<usize> = (0..=300).collect();
    lengths.extend([407, 408, 409, 543, 544, 545, 4096, 10_000]);
    for len in lengths {
        let mut data = vec![0u8; len];
        rng.fill_bytes(&mut data);
        let want: [u8; 32] = Keccak256::digest(&data).into();
        assert_eq!(host::keccak256(&data), want, "length {len}");
    }
    // Ethereum's Keccak, not FIPS 202's SHA3-256: the empty string's well-known hash.
    assert_eq!(
        hex::encode(host::keccak256(b"")),
        "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    );
}

/// What both paths say of one record, side by side; `None` when they agree.
fn disagreement(raw: &[u8]) -> Option<String> {
    let cpu = recover_raw(raw);
    let device = host::recover(raw, gtable());
    let agree = match (&device, &cpu) {
        (Ok((address, key)), Ok(rec)) => *address == rec.address && key[..] == rec.pubkey[..],
        (Err(code), _) if *code == FAULT_DEFER => true, // the host decides those
        (Err(code), Err(e)) => *code == e.fault.code(),
        _ => false,
    };
    (!agree).then(|| {
        format!(
            "record {}: device {:?}, CPU {:?}",
            hex::encode(&raw[..raw.len().min(120)]),
            device.map(|(a, _)| hex::encode(a)),
            cpu.map(|r| hex::encode(r.address))
                .map_err(|e| e.to_string())
        )
    })
}

/// Checks every record, then returns how many of each outcome the device gave.
fn check_all(records: &[Vec<u8>]) -> BTreeMap<String, usize> {
    let outcomes: Vec<(String, Option<String>)> = records
        .par_iter()
        .map(|raw| {
            let outcome = match host::recover(raw, gtable()) {
                Ok(_) => "sender".to_string(),
                Err(FAULT_DEFER) => "deferred".to_string(),
                Err(code) => format!("{:?}", TxFault::from_code(code).expect("a known fault")),
            };
            (outcome, disagreement(raw))
        })
        .collect();
    let bad: Vec<&String> = outcomes.iter().filter_map(|(_, d)| d.as_ref()).collect();
    assert!(
        bad.is_empty(),
        "{} disagreements of {}, first: {:#?}",
        bad.len(),
        records.len(),
        &bad[..bad.len().min(5)]
    );
    let mut counts = BTreeMap::new();
    for (outcome, _) in outcomes {
        *counts.entry(outcome).or_insert(0) += 1;
    }
    counts
}

#[test]
fn signed_transactions_of_every_type_give_alloys_sender_and_signing_hash() {
    let mut corpus = Corpus::new(42, 8);
    for ty in [
        TxType::Legacy,
        TxType::Eip2930,
        TxType::Eip1559,
        TxType::Eip4844,
        TxType::Eip7702,
    ] {
        let records: Vec<Vec<u8>> = (0..150).map(|_| corpus.signed(ty)).collect();
        for raw in &records {
            let decoded = chainsig_eth::decode_raw(raw).expect("a signed transaction decodes");
            let parsed = host::parse(raw).expect("the device reads it");
            assert_eq!(
                parsed.digest,
                words_from_be(&decoded.signing_hash.0),
                "{ty:?}: signing hash of {}…",
                hex::encode(&raw[..raw.len().min(60)])
            );
        }
        let counts = check_all(&records);
        assert_eq!(
            counts.get("sender"),
            Some(&records.len()),
            "{ty:?}: {counts:?}"
        );
    }
}

#[test]
fn broken_transactions_are_refused_for_the_reason_the_cpu_gives() {
    let mut corpus = Corpus::new(43, 4);
    let records: Vec<Vec<u8>> = (0..4000).map(|_| corpus.adversarial()).collect();
    let counts = check_all(&records);
    println!("{counts:?}");
    for fault in TxFault::ALL {
        if fault == TxFault::TooLong {
            continue;
        }
        let seen = counts.get(&format!("{fault:?}")).copied().unwrap_or(0);
        assert!(seen >= 5, "{fault:?} seen {seen} times: {counts:?}");
    }
    assert!(counts["sender"] > 500, "{counts:?}");
    assert!(counts.contains_key("deferred"), "{counts:?}");
}

#[test]
fn edge_records_agree() {
    let mut corpus = Corpus::new(44, 1);
    let mut records = vec![
        Vec::new(),
        vec![0u8; MAX_RAW_TX_LEN + 1],
        vec![0xc0],
        vec![0x80],
    ];
    // Every prefix of one transaction of each type, and each with one byte flipped everywhere.
    for ty in [TxType::Legacy, TxType::Eip1559, TxType::Eip7702] {
        let raw = corpus.signed(ty);
        for cut in 0..raw.len() {
            records.push(raw[..cut].to_vec());
        }
        for at in 0..raw.len().min(200) {
            let mut flipped = raw.clone();
            flipped[at] ^= 0x01;
            records.push(flipped);
        }
    }
    // Legacy v at the edges of EIP-155: the largest chain id (v = 2^65 + 34) and one past it.
    for v in [
        27u128,
        28,
        34,
        35,
        36,
        (1 << 65) + 34,
        (1 << 65) + 35,
        u128::MAX,
    ] {
        let raw = corpus.signed(TxType::Legacy);
        records.push(with_legacy_v(&raw, v));
    }
    let counts = check_all(&records);
    assert!(counts["MalformedRlp"] > 100, "{counts:?}");
}

/// `raw` (a legacy transaction) with its v replaced.
fn with_legacy_v(raw: &[u8], v: u128) -> Vec<u8> {
    use alloy_rlp_like::*;
    let items = split_list(raw);
    let n = items.len();
    let mut out_items = items[..n - 3].to_vec();
    out_items.push(encode_uint(v));
    out_items.extend_from_slice(&items[n - 2..]);
    join_list(&out_items)
}

/// A minimal RLP list splitter for the test's edits (short and long headers, no validation).
mod alloy_rlp_like {
    fn header(b: &[u8]) -> (usize, usize) {
        match b[0] {
            x @ 0..=0x7f => {
                let _ = x;
                (0, 1)
            }
            x @ 0x80..=0xb7 => (1, usize::from(x - 0x80)),
            x @ 0xb8..=0xbf => long(b, usize::from(x - 0xb7)),
            x @ 0xc0..=0xf7 => (1, usize::from(x - 0xc0)),
            x => long(b, usize::from(x - 0xf7)),
        }
    }
    fn long(b: &[u8], n: usize) -> (usize, usize) {
        let len = b[1..=n]
            .iter()
            .fold(0usize, |a, &x| a << 8 | usize::from(x));
        (1 + n, len)
    }
    pub fn split_list(raw: &[u8]) -> Vec<Vec<u8>> {
        let (h, len) = header(raw);
        let mut body = &raw[h..h + len];
        let mut items = Vec::new();
        while !body.is_empty() {
            let (ih, ilen) = header(body);
            items.push(body[..ih + ilen].to_vec());
            body = &body[ih + ilen..];
        }
        items
    }
    pub fn encode_uint(v: u128) -> Vec<u8> {
        let bytes: Vec<u8> = v
            .to_be_bytes()
            .into_iter()
            .skip_while(|&b| b == 0)
            .collect();
        match bytes.as_slice() {
            [b] if *b < 0x80 => vec![*b],
            _ => {
                let mut out = vec![0x80 + bytes.len() as u8];
                out.extend(bytes);
                out
            }
        }
    }
    pub fn join_list(items: &[Vec<u8>]) -> Vec<u8> {
        let len: usize = items.iter().map(Vec::len).sum();
        let mut out = if len < 56 {
            vec![0xc0 + len as u8]
        } else {
            let be: Vec<u8> = len
                .to_be_bytes()
                .into_iter()
                .skip_while(|&b| b == 0)
                .collect();
            let mut h = vec![0xf7 + be.len() as u8];
            h.extend(be);
            h
        };
        for i in items {
            out.extend_from_slice(i);
        }
        out
    }
}

#[test]
fn a_chunk_stages_its_records_and_answers_read_back() {
    let records: Vec<&[u8]> = vec![b"ab", b"", b"cde"];
    let (mut offsets, mut bytes) = (vec![9u64; 4], vec![0u8; ethtx::total_bytes(&records)]);
    ethtx::stage(&records, &mut offsets, &mut bytes);
    assert_eq!(offsets, vec![0, 2, 2, 5]);
    assert_eq!(bytes, b"abcde");
    // Several staging pieces (2048 records each) and a ragged last one.
    let owned: Vec<Vec<u8>> = (0..5000usize)
        .map(|i| (0..i % 37).map(|k| (i * 31 + k) as u8).collect())
        .collect();
    let records: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let (mut offsets, mut bytes) = (vec![0u64; 5001], vec![0u8; ethtx::total_bytes(&records)]);
    ethtx::stage(&records, &mut offsets, &mut bytes);
    for (i, tx) in owned.iter().enumerate() {
        assert_eq!(
            &bytes[offsets[i] as usize..offsets[i + 1] as usize],
            &tx[..],
            "record {i}"
        );
    }
    // Column-major answers for two records: a fault, then a sender.
    let stride = 2;
    let mut out = vec![0u32; ethtx::OUT_ROWS * stride];
    out[0] = 7;
    for k in 0..5 {
        out[(1 + k) * stride + 1] = u32::from_le_bytes([4 * k as u8; 4]);
    }
    out[6 * stride + 1] = 5; // x's lowest word
    assert_eq!(ethtx::answer(&out, stride, 0), Err(7));
    let (address, key) = ethtx::answer(&out, stride, 1).unwrap();
    assert_eq!(address[4..8], [4; 4]);
    assert_eq!((key[0], key[32]), (4, 5));
}
