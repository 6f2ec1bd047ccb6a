//! CI without a GPU: the known-signer path (crates/cuda/src/signers.rs) through the kernels' own
//! routine compiled for the host, against the RustCrypto `sm2` reference on random, corrupted and
//! edge-case records (keys P = G and P = -G, sums at infinity, t = 0 among them).

use chainsig_cuda::host;
use chainsig_cuda::signers::{SignerBatch, SignerIndex, SignerTables, UnknownSigner};
use chainsig_cuda::HostWords;
use chainsig_testkit::cuda::table_entry_reference;
use chainsig_testkit::sets::{batch, generate, Record};
use std::sync::OnceLock;

fn gtable() -> &'static [u32] {
    static T: OnceLock<Vec<u32>> = OnceLock::new();
    T.get_or_init(|| host::build_gtable().expect("fixed-base table"))
}

fn index_of(records: &[Record]) -> SignerIndex {
    let mut ix = SignerIndex::new();
    for r in records {
        ix.insert((r.px, r.py));
    }
    ix
}

#[test]
fn signed_verification_matches_reference_on_random_and_adversarial_records() {
    let (records, verdicts) = generate(700, 24, 300, 11);
    let valid = verdicts.iter().filter(|v| **v).count();
    assert!(
        valid > 350 && valid < 690,
        "share of valid records: {valid}"
    );
    let ix = index_of(&records);
    let tables = SignerTables::build(ix.keys()).expect("every generated key is on the curve");
    let sb = SignerBatch::from_batch(&batch(&records), &ix).expect("every key is indexed");
    assert_eq!(sb.len(), records.len());
    for (i, want) in verdicts.iter().enumerate() {
        let (e, r, s, signer) = sb.record(i);
        let ktab = tables.table(signer as usize);
        assert_eq!(
            host::verify_signed(&e, &r, &s, gtable(), ktab),
            *want,
            "record {i}: {:x?}",
            records[i]
        );
    }
}

#[test]
fn a_signature_checked_against_another_signers_table_fails() {
    let (records, verdicts) = generate(40, 6, 0, 12);
    let ix = index_of(&records);
    let tables = SignerTables::build(ix.keys()).unwrap();
    let sb = SignerBatch::from_batch(&batch(&records), &ix).unwrap();
    let mut checked = 0;
    // Random records past the edge cases; the key P = -G cannot sign, so its records are invalid.
    for (i, _) in verdicts.iter().enumerate().skip(20).filter(|(_, ok)| **ok) {
        let (e, r, s, signer) = sb.record(i);
        let ktab = tables.table(signer as usize);
        assert!(
            host::verify_signed(&e, &r, &s, gtable(), ktab),
            "record {i}"
        );
        let other = (signer as usize + 1) % ix.len();
        let ktab = tables.table(other);
        assert!(
            !host::verify_signed(&e, &r, &s, gtable(), ktab),
            "record {i}"
        );
        checked += 1;
    }
    assert!(checked >= 10);
}

#[test]
fn key_tables_hold_the_reference_multiples() {
    let (records, _) = generate(30, 4, 0, 13);
    let key = (records[25].px, records[25].py);
    let tables = SignerTables::build(&[key]).unwrap();
    let table = tables.table(0);
    let mut sec1 = [4u8; 65];
    sec1[1..33].copy_from_slice(&key.0);
    sec1[33..].copy_from_slice(&key.1);
    let p = sm2::PublicKey::from_sec1_bytes(&sec1)
        .expect("on the curve")
        .to_projective();
    let w = host::KTABLE_BITS;
    let half = 1usize << (w - 1);
    let windows = 256usize.div_ceil(w);
    assert_eq!(table.len(), windows * half * 16);
    for (j, m) in [
        (0usize, 1usize),
        (0, 2),
        (0, half),
        (5, 17),
        (windows - 1, 1),
        (windows - 1, half),
    ] {
        let (idx, want) = table_entry_reference(&p, w, j, m);
        assert_eq!(&table[idx * 16..idx * 16 + 16], &want, "entry ({j}, {m})");
    }
}

#[test]
fn the_signed_path_costs_a_sixth_of_the_multiplications() {
    let (records, verdicts) = generate(40, 4, 0, 14);
    let ix = index_of(&records);
    let tables = SignerTables::build(ix.keys()).unwrap();
    let sb = SignerBatch::from_batch(&batch(&records), &ix).unwrap();
    let g = gtable();
    host::mul_count_reset();
    let mut n = 0u64;
    for (i, _) in verdicts.iter().enumerate().skip(20).filter(|(_, ok)| **ok) {
        let (e, r, s, signer) = sb.record(i);
        let ktab = tables.table(signer as usize);
        assert!(host::verify_signed(&e, &r, &s, g, ktab));
        n += 1;
    }
    let per = host::mul_count() / n;
    println!("known signer: {per} field multiplications per verification");
    assert!(per > 450 && per < 650, "{per}");
}

#[test]
fn unknown_keys_are_named_and_unprepared_records_stay_rejections() {
    let (records, _) = generate(30, 4, 0, 15);
    let mut ix = SignerIndex::new();
    for r in &records[..24] {
        ix.insert((r.px, r.py));
    }
    let mut other = records[3];
    other.px = records[3].py; // a key nobody indexed
    let mut with_unknown = records.clone();
    with_unknown[27] = other;
    assert_eq!(
        SignerBatch::from_batch(&batch(&with_unknown), &ix).unwrap_err(),
        UnknownSigner { record: 27 }
    );
    assert_eq!(
        UnknownSigner { record: 27 }.to_string(),
        "record 27: key: not a known signer"
    );
    let mut b = batch(&records[..24]);
    b.push_error(chainsig_core::RecordError::new("sig", "not hex"));
    let sb = SignerBatch::from_batch(&b, &ix).unwrap();
    assert_eq!(sb.len(), 25);
    let (e, r, s, signer) = sb.record(24);
    assert_eq!((e, r, s, signer), ([0; 8], [0; 8], [0; 8], 0));
}

#[test]
fn a_split_batch_keeps_every_record_once_and_its_verdict() {
    use chainsig_cuda::signers::Split;
    use chainsig_cuda::{Inversion, Mode};
    let (records, verdicts) = generate(300, 12, 300, 16);
    // Only some signers are known; corrupted keys and the rest go the default way.
    let mut ix = SignerIndex::new();
    for r in records.iter().skip(17).step_by(3).take(6) {
        ix.insert((r.px, r.py));
    }
    let tables = SignerTables::build(ix.keys()).unwrap();
    let mut b = batch(&records);
    b.push_error(chainsig_core::RecordError::new(
        "pubkey",
        "not on the curve",
    ));
    let split = Split::new(&b, tables.index());
    assert!(split.known.len() > 50 && split.others.len() > 50);
    let mut seen = vec![0u8; b.len()];
    for &i in split.known.at().iter().chain(&split.others_at) {
        seen[i] += 1;
    }
    assert!(seen.iter().all(|&c| c == 1), "every record exactly once");
    assert!(
        split.others_at.contains(&300),
        "the unprepared record goes the default way"
    );
    let mut got = vec![None; b.len()];
    for (k, &i) in split.known.at().iter().enumerate() {
        let (e, r, s, signer) = split.known.record(k);
        assert_eq!(
            Some(signer),
            tables.index().get(&(records[i].px, records[i].py))
        );
        got[i] = Some(host::verify_signed(
            &e,
            &r,
            &s,
            gtable(),
            tables.table(signer as usize),
        ));
    }
    for (k, &i) in split.others_at.iter().enumerate() {
        let item = split.others.item(k);
        let w = chainsig_testkit::sets::Record {
            e: item.e,
            r: item.r,
            s: item.s,
            px: item.px,
            py: item.py,
        }
        .host_words();
        got[i] = Some(host::verify(
            Mode::Fast,
            Inversion::Euclid,
            false,
            &w,
            gtable(),
        ));
    }
    for (i, want) in verdicts.iter().enumerate() {
        assert_eq!(got[i], Some(*want), "record {i}");
    }
    assert_eq!(got[300], Some(false));
}
