//! `cs_recover_transactions`: raw signed transactions in transaction rows, each answered as the
//! CPU path (`chainsig_eth::rawtx::recover_raw`) answers it, with its cause as a `CS_REC_TX_*`
//! code; row faults with the row codes; bad calls with call codes; and, with a GPU, the cuda
//! context's answers equal to the CPU's on ≥ 10⁵ generated transactions.

use super::{bit, last_error, pack_bytes, Ctx};
use chainsig::*;
use chainsig_eth::rawtx::corpus::Corpus;
use chainsig_eth::rawtx::{recover_raw, TxFault, MAX_RAW_TX_LEN};
use chainsig_eth::TxType;
use rayon::prelude::*;
use std::ptr::null_mut;

/// A transaction row: header (algorithm 4, flags, msg_len), the transaction, zero padding, the tag.
fn tx_row(tx: &[u8], tag: Option<u64>) -> Vec<u8> {
    let flags = if tag.is_some() { CS_FLAG_TAG } else { 0 };
    let mut row = vec![CS_ALG_ETH_TX, flags, 0, 0];
    row.extend_from_slice(&(tx.len() as u32).to_le_bytes());
    row.extend_from_slice(&[0, 0, 0, 0]);
    row.extend_from_slice(tx);
    row.resize(row.len().next_multiple_of(8), 0);
    if let Some(tag) = tag {
        row.extend_from_slice(&tag.to_le_bytes());
    }
    row
}

/// What one call wrote.
struct Answers {
    code: i32,
    found: Vec<u64>,
    addresses: Vec<u8>,
    pubkeys: Vec<u8>,
    errors: Vec<i32>,
}

impl Ctx {
    fn recover_transactions(&self, bytes: &[u8], n: usize) -> Answers {
        let (words, len) = pack_bytes(bytes);
        let mut out = Answers {
            code: 0,
            found: vec![u64::MAX; n.div_ceil(64).max(1)],
            addresses: vec![0xee; 20 * n],
            pubkeys: vec![0xee; 65 * n],
            errors: vec![-99; n],
        };
        out.code = unsafe {
            cs_recover_transactions(
                self.0,
                words.as_ptr().cast(),
                len,
                n,
                out.addresses.as_mut_ptr(),
                out.pubkeys.as_mut_ptr(),
                out.found.as_mut_ptr(),
                out.found.len(),
                out.errors.as_mut_ptr(),
            )
        };
        out
    }
}

/// The code the C ABI gives a transaction the CPU path refuses for `fault`.
fn code_of(fault: TxFault) -> i32 {
    match fault {
        TxFault::Empty => CS_REC_TX_EMPTY,
        TxFault::TooLong => CS_REC_TX_TOO_LONG,
        TxFault::UnsupportedType => CS_REC_TX_TYPE,
        TxFault::MalformedRlp => CS_REC_TX_RLP,
        TxFault::TrailingBytes => CS_REC_TX_TRAILING,
        TxFault::BadV => CS_REC_TX_V,
        TxFault::HighS => CS_REC_TX_HIGH_S,
        TxFault::BadRs => CS_REC_TX_RS,
        TxFault::NoKey => CS_REC_TX_NO_KEY,
    }
}

/// Checks answer i against the CPU path's for `tx`.
fn check(out: &Answers, i: usize, tx: &[u8]) {
    let address = &out.addresses[20 * i..20 * i + 20];
    let pubkey = &out.pubkeys[65 * i..65 * i + 65];
    match recover_raw(tx) {
        Ok(sender) => {
            assert!(bit(&out.found, i), "record {i}: {}", out.errors[i]);
            assert_eq!(out.errors[i], CS_OK, "record {i}");
            assert_eq!(address, sender.address, "record {i}");
            assert_eq!(pubkey, sender.pubkey, "record {i}");
        }
        Err(e) => {
            assert_eq!(out.errors[i], code_of(e.fault), "record {i}: {e}");
            assert!(!bit(&out.found, i), "record {i}");
            assert!(address == [0; 20] && pubkey == [0; 65], "record {i}");
        }
    }
}

/// Signed transactions of types 0–4, broken ones until every cause of refusal has turned up,
/// an empty one and one too long.
fn every_kind(seed: u64) -> Vec<Vec<u8>> {
    let mut corpus = Corpus::new(seed, 3);
    let mut txs: Vec<Vec<u8>> = [
        TxType::Legacy,
        TxType::Eip2930,
        TxType::Eip1559,
        TxType::Eip4844,
        TxType::Eip7702,
    ]
    .into_iter()
    .map(|ty| corpus.signed(ty))
    .collect();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..20_000 {
        let tx = corpus.adversarial();
        if let Err(e) = recover_raw(&tx) {
            if seen.insert(e.fault) {
                txs.push(tx);
            }
        }
        // Causes 3 to 9 (empty and too long are made below).
        if TxFault::ALL[2..].iter().all(|f| seen.contains(f)) {
            break;
        }
    }
    txs.push(Vec::new());
    txs.push(vec![0x02; MAX_RAW_TX_LEN + 1]);
    txs
}

#[test]
fn transactions_answer_as_the_cpu_path_with_their_causes() {
    // The device's deferral number is the one the library reads.
    assert_eq!(chainsig_cuda::ethtx::FAULT_DEFER, chainsig_core::TX_DEFER);
    let ctx = Ctx::open("cpu");
    let txs = every_kind(71);
    let causes: std::collections::HashSet<_> = txs
        .iter()
        .filter_map(|tx| recover_raw(tx).err().map(|e| e.fault))
        .collect();
    assert_eq!(causes.len(), TxFault::ALL.len(), "{causes:?}");
    let bytes: Vec<u8> = txs
        .iter()
        .enumerate()
        .flat_map(|(i, tx)| tx_row(tx, (i % 3 == 0).then_some(i as u64)))
        .collect();
    let out = ctx.recover_transactions(&bytes, txs.len());
    assert_eq!(out.code, CS_OK, "{}", last_error(ctx.0));
    for (i, tx) in txs.iter().enumerate() {
        check(&out, i, tx);
    }
    // Types 0–4 all recovered; the message names the first refused record and its cause.
    assert!((0..5).all(|i| bit(&out.found, i)));
    let first = txs.iter().position(|tx| recover_raw(tx).is_err()).unwrap();
    let message = last_error(ctx.0);
    let cpu = recover_raw(&txs[first]).unwrap_err().to_string();
    assert_eq!(message, format!("record {first}: {cpu}"));

    // Many, in order: a mixed batch answered record for record.
    let txs = Corpus::new(72, 5).mixed(3000, 0.3);
    let bytes: Vec<u8> = txs.iter().flat_map(|tx| tx_row(tx, None)).collect();
    let out = ctx.recover_transactions(&bytes, txs.len());
    assert_eq!(out.code, CS_OK);
    for (i, tx) in txs.iter().enumerate() {
        check(&out, i, tx);
    }
}

#[test]
fn bad_transaction_rows_get_row_codes_and_the_rest_are_recovered() {
    let ctx = Ctx::open("cpu");
    let good = Corpus::new(73, 1).signed(TxType::Eip1559);
    let sender = recover_raw(&good).unwrap();
    let mut rows: Vec<(Vec<u8>, i32)> = Vec::new();
    rows.push((tx_row(&good, None), CS_OK));
    // A signature row's algorithm byte on a transaction row.
    let mut wrong_alg = tx_row(&good, None);
    wrong_alg[0] = CS_ALG_SECP256K1;
    let len = 12 + 64 + good.len();
    wrong_alg.resize(len.next_multiple_of(8), 0);
    rows.push((wrong_alg, CS_REC_ALGORITHM));
    let mut flags = tx_row(&good, None);
    flags[1] = CS_FLAG_LOW_S;
    rows.push((flags, CS_REC_FORMAT));
    let mut reserved = tx_row(&good, None);
    reserved[2] = 1;
    rows.push((reserved, CS_REC_FORMAT));
    let mut key_len = tx_row(&good, None);
    key_len[10] = 1;
    let len = 12 + 1 + good.len();
    key_len.resize(len.next_multiple_of(8), 0);
    rows.push((key_len, CS_REC_LENGTH));
    let mut padding = tx_row(&good, Some(5));
    let pad_at = 12 + good.len();
    assert!(pad_at % 8 != 0, "the transaction leaves padding");
    padding[pad_at] = 1;
    rows.push((padding, CS_REC_FORMAT));
    rows.push((tx_row(&good, Some(u64::MAX)), CS_OK));
    let bytes: Vec<u8> = rows.iter().flat_map(|(r, _)| r.clone()).collect();
    let out = ctx.recover_transactions(&bytes, rows.len());
    assert_eq!(out.code, CS_OK, "{}", last_error(ctx.0));
    for (i, (_, code)) in rows.iter().enumerate() {
        assert_eq!(out.errors[i], *code, "row {i}");
        assert_eq!(bit(&out.found, i), *code == CS_OK, "row {i}");
        if *code == CS_OK {
            assert_eq!(out.addresses[20 * i..20 * i + 20], sender.address);
        }
    }
    assert!(last_error(ctx.0).starts_with("record 1: algorithm byte 2"));

    // A transaction row given to cs_verify is refused by its algorithm, not misread.
    let (words, len) = pack_bytes(&tx_row(&good, None));
    let (code, bitmap, errors) = ctx.verify(&words, len, 1);
    assert_eq!((code, bitmap[0], errors[0]), (CS_OK, 0, CS_REC_ALGORITHM));

    // A row cut short by the buffer's end: truncated, the rows after it unreached.
    let mut cut = tx_row(&good, None);
    cut.extend(tx_row(&good, None));
    cut[4..8].copy_from_slice(&10_000u32.to_le_bytes());
    let out = ctx.recover_transactions(&cut, 3);
    assert_eq!(out.code, CS_OK);
    assert_eq!(
        out.errors,
        [CS_REC_TRUNCATED, CS_REC_UNREACHED, CS_REC_UNREACHED]
    );
    assert_eq!(out.found[0], 0);

    // Bytes left after the rows, a count the buffer cannot hold: the call fails, nothing found.
    let two: Vec<u8> = [tx_row(&good, None), tx_row(&good, None)].concat();
    let out = ctx.recover_transactions(&two, 1);
    assert_eq!(out.code, CS_ERR_ARGUMENT);
    assert!(out.found.iter().all(|&w| w == 0));
    assert!(last_error(ctx.0).contains("bytes left after row 0"));
    assert_eq!(ctx.recover_transactions(&two, 100).code, CS_ERR_ARGUMENT);
    assert_eq!(ctx.recover_transactions(&two, 0).code, CS_ERR_ARGUMENT);
}

#[test]
fn bad_transaction_calls_return_codes() {
    let ctx = Ctx::open("cpu");
    let good = Corpus::new(74, 1).signed(TxType::Legacy);
    let (words, len) = pack_bytes(&tx_row(&good, None));
    let rows: *const u8 = words.as_ptr().cast();
    let (mut addresses, mut found) = ([0u8; 20], [u64::MAX; 1]);
    let call = |ctx: *mut cs_context,
                rows: *const u8,
                len: usize,
                addresses: *mut u8,
                found: *mut u64,
                words: usize| unsafe {
        cs_recover_transactions(
            ctx,
            rows,
            len,
            1,
            addresses,
            null_mut(),
            found,
            words,
            null_mut(),
        )
    };
    let (a, f) = (addresses.as_mut_ptr(), found.as_mut_ptr());
    assert_eq!(call(ctx.0, rows, len, a, f, 1), CS_OK);
    assert_eq!(found[0], 1);
    assert_eq!(addresses, recover_raw(&good).unwrap().address);
    assert_eq!(call(ctx.0, std::ptr::null(), len, a, f, 1), CS_ERR_NULL);
    assert_eq!(found[0], 0, "a failed call clears the bitmap");
    assert_eq!(call(ctx.0, rows, len, null_mut(), f, 1), CS_ERR_NULL);
    assert_eq!(call(ctx.0, rows, len, a, null_mut(), 1), CS_ERR_NULL);
    assert_eq!(call(ctx.0, rows, len, a, f, 0), CS_ERR_ARGUMENT);
    assert_eq!(
        call(ctx.0, rows.wrapping_add(1), len - 8, a, f, 1),
        CS_ERR_ALIGNMENT
    );
    assert_eq!(call(ctx.0, rows, len - 3, a, f, 1), CS_ERR_ALIGNMENT);
    assert_eq!(call(null_mut(), rows, len, a, f, 1), CS_ERR_CLOSED);
    for code in [CS_REC_TX_EMPTY, CS_REC_TX_HIGH_S, CS_REC_TX_NO_KEY] {
        let text = unsafe { std::ffi::CStr::from_ptr(cs_status_str(code)) };
        assert!(
            text.to_str().unwrap().starts_with("transaction: "),
            "{code}"
        );
    }
}

/// With a GPU: the cuda context (and auto, above the crossover) answers ≥ 10⁵ generated raw
/// transactions (types as on mainnet, 30% broken in every way the corpus knows, tags on some
/// rows) exactly as the CPU context does: senders, keys and codes. `CHAINSIG_GPU_TX_COUNT` sets
/// the count. Without a GPU the test says so and passes, unless `CHAINSIG_REQUIRE_GPU=1`.
#[test]
fn the_gpu_recovers_transactions_as_the_cpu_does() {
    let Some(cuda) = Ctx::cuda_or_skip() else {
        return;
    };
    let count: usize = match std::env::var("CHAINSIG_GPU_TX_COUNT") {
        Ok(n) => n
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("CHAINSIG_GPU_TX_COUNT={n:?} is not a count")),
        Err(_) => 100_000,
    };
    // Generated on every core, 4096 at a time, each part from its own seed.
    let txs: Vec<Vec<u8>> = (0..count.div_ceil(4096))
        .into_par_iter()
        .flat_map_iter(|part| {
            let n = 4096.min(count - part * 4096);
            Corpus::new(9000 + part as u64, 16).mixed(n, 0.3)
        })
        .collect();
    let bytes: Vec<u8> = txs
        .iter()
        .enumerate()
        .flat_map(|(i, tx)| tx_row(tx, (i % 7 == 0).then_some(i as u64)))
        .collect();
    let cpu = Ctx::open("cpu").recover_transactions(&bytes, count);
    assert_eq!(cpu.code, CS_OK);
    for backend in ["cuda", "auto"] {
        let out = match backend {
            "cuda" => cuda.recover_transactions(&bytes, count),
            _ => Ctx::open("auto").recover_transactions(&bytes, count),
        };
        assert_eq!(out.code, CS_OK, "{backend}: {}", last_error(cuda.0));
        let differing: Vec<usize> = (0..count)
            .filter(|&i| {
                bit(&out.found, i) != bit(&cpu.found, i)
                    || out.errors[i] != cpu.errors[i]
                    || out.addresses[20 * i..20 * i + 20] != cpu.addresses[20 * i..20 * i + 20]
                    || out.pubkeys[65 * i..65 * i + 65] != cpu.pubkeys[65 * i..65 * i + 65]
            })
            .collect();
        if let Some(&i) = differing.first() {
            panic!(
                "{backend}: {} of {count} records differ from the CPU's, first record {i} \
                 (code {} on the CPU, {} here; {} bytes, starting {:02x?})",
                differing.len(),
                cpu.errors[i],
                out.errors[i],
                txs[i].len(),
                &txs[i][..txs[i].len().min(24)]
            );
        }
        let refused = cpu.errors.iter().filter(|&&c| c != CS_OK).count();
        eprintln!("{backend}: {count} transactions ({refused} refused), 0 differ from the CPU");
    }
    // Spot check against the CPU path itself.
    for i in (0..count).step_by(997) {
        check(&cpu, i, &txs[i]);
    }
}
