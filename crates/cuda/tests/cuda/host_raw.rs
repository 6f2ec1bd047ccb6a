//! SM2 from the node's bytes (kernels/sec1.cuh, za.cuh, sm2raw.cuh), run on the CPU through the
//! host build: raw records staged as the backend stages them (`RawSm2Batch::stage`) and taken
//! through the kernel's per-record code, against the CPU path (`chainsig_cpu::Preparer`: SEC1
//! decoding, Z_A, e) record by record, including every way a key can be refused, and against
//! RustCrypto `sm2`'s verdicts (it decodes the key, computes Z_A and hashes the message itself).

use chainsig_core::record::{Payload, VerifyRecord};
use chainsig_core::{Algorithm, HashAlg, PreparedItem, RecordError};
use chainsig_cpu::prepare::Preparer;
use chainsig_cuda::codegen::words_from_be;
use chainsig_cuda::host::{self, raw as dev};
use chainsig_cuda::raw::{self, KeyFault, RawSm2Batch, RawSm2Item};
use chainsig_cuda::{Inversion, Mode};
use rand::{Rng, RngCore, SeedableRng};
use sm2::elliptic_curve::sec1::ToSec1Point;
use std::collections::BTreeMap;

/// SM2's p, big-endian.
const P: [u8; 32] = chainsig_core::curve::SM2.p;

/// x + k for a big-endian x (no carry out of the top: the callers keep below 2^256).
fn plus(x: &[u8; 32], k: u8) -> [u8; 32] {
    let mut out = *x;
    let mut carry = k as u16;
    for b in out.iter_mut().rev() {
        let t = *b as u16 + carry;
        *b = t as u8;
        carry = t >> 8;
    }
    out
}

/// Points of the curve by RustCrypto: random multiples of G, then steps of + G from each.
fn points(count: usize, rng: &mut impl RngCore) -> Vec<([u8; 32], [u8; 32])> {
    use sm2::elliptic_curve::ff::PrimeField;
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let mut d = [0u8; 32];
        rng.fill_bytes(&mut d);
        let Some(d) = Option::<sm2::Scalar>::from(sm2::Scalar::from_repr(d.into())) else {
            continue; // d >= n
        };
        let mut p = sm2::ProjectivePoint::GENERATOR * d;
        for _ in 0..200.min(count - out.len()) {
            let enc = p.to_affine().to_sec1_point(false);
            let b = enc.as_bytes();
            out.push((b[1..33].try_into().unwrap(), b[33..65].try_into().unwrap()));
            p += sm2::ProjectivePoint::GENERATOR;
        }
    }
    out
}

/// A key's bytes of case `case` around the point (x, y): valid in either form, or spoiled in
/// one of the ways the CPU path refuses.
pub(crate) fn key_bytes(case: u32, x: &[u8; 32], y: &[u8; 32], rng: &mut impl RngCore) -> Vec<u8> {
    let odd = y[31] & 1;
    let compressed = |prefix: u8, x: &[u8]| [&[prefix][..], x].concat();
    let full = |prefix: u8, x: &[u8], y: &[u8]| [&[prefix][..], x, y].concat();
    let mut random = [0u8; 32];
    rng.fill_bytes(&mut random);
    match case {
        0..=3 => compressed(2 | odd, x),
        4 => compressed(2 | (odd ^ 1), x), // the other point with this x: valid too
        5..=7 => full(4, x, y),
        8 => {
            let mut y = *y; // off the curve
            y[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8);
            full(4, x, &y)
        }
        9 => {
            // A coordinate at or above p: p itself, p + small, or all ones.
            let big = match rng.gen_range(0..3) {
                0 => P,
                1 => plus(&P, rng.gen_range(1..=255)),
                _ => [0xff; 32],
            };
            match rng.gen_range(0..3) {
                0 => compressed(2 | odd, &big),
                1 => full(4, &big, y),
                _ => full(4, x, &big),
            }
        }
        10 => compressed(2 + rng.gen_range(0..2), &random), // about half have no point
        11 => {
            // A prefix that does not fit the length.
            let bad = loop {
                let b: u8 = rng.gen();
                if ![2, 3, 4].contains(&b) {
                    break b;
                }
            };
            match rng.gen_range(0..4) {
                0 => compressed(bad, x),
                1 => full(bad, x, y),
                2 => compressed(4, x),
                _ => full(2 | odd, x, y),
            }
        }
        _ => {
            // Lengths other than 33 and 65, and the point at infinity.
            match rng.gen_range(0..5) {
                0 => vec![],
                1 => vec![0],
                2 => vec![rng.gen()],
                3 => [&[0u8][..], x].concat(),
                _ => {
                    let len = loop {
                        let n = rng.gen_range(2..100);
                        if n != 33 && n != 65 {
                            break n;
                        }
                    };
                    let mut v = full(4, x, y);
                    v.resize(len, 0x5a);
                    v
                }
            }
        }
    }
}

/// The CPU path's preparation of one raw record.
pub(crate) fn cpu_prepare(prep: &Preparer, it: &RawSm2Item) -> Result<PreparedItem, RecordError> {
    prep.prepare(
        &VerifyRecord {
            alg: Algorithm::Sm2,
            pubkey: it.pubkey.to_vec(),
            payload: Payload::Message {
                msg: it.msg.to_vec(),
                hash: HashAlg::Sm3,
            },
            r: *it.r,
            s: *it.s,
            sm2_id: it.id.to_vec(),
        },
        None,
    )
}

/// Runs the batch through the kernel code in chunks of `chunk` records, as the engine stages
/// them: the rows (per record: e, r, s, x, y as words) and the fault codes.
fn through_kernel(batch: &RawSm2Batch, chunk: usize) -> Vec<([[u32; 8]; 5], u8)> {
    let mut out = Vec::with_capacity(batch.len());
    for i0 in (0..batch.len()).step_by(chunk) {
        let m = chunk.min(batch.len() - i0);
        let mp = m.next_multiple_of(64);
        let part = raw::RawPart::all(batch);
        let chunk = part.chunk(i0, m);
        let mut staged = vec![0xa5a5_a5a5u32; chunk.words()];
        part.stage(&chunk, &mut staged).expect("stage");
        let (rows, faults) = dev::raw_chunk(&staged, m, mp, None);
        for i in 0..m {
            let row = |k: usize| std::array::from_fn(|j| rows[(8 * k + j) * mp + i]);
            out.push(([row(0), row(1), row(2), row(3), row(4)], faults[i]));
        }
    }
    out
}

#[test]
fn raw_records_through_the_kernel_code_equal_the_cpu_preparation_on_12000_keys() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x005e_c12a);
    let n = 12_000;
    let pts = points(n, &mut rng);
    let mut batch = RawSm2Batch::default();
    for (i, (x, y)) in pts.iter().enumerate() {
        let key = key_bytes(i as u32 % 13, x, y, &mut rng);
        let id_len = match i % 7 {
            _ if i % 1000 == 6 => 8191,
            0 => 0,
            1 => 1,
            2 | 3 => 16,
            _ => rng.gen_range(0..=200),
        };
        let id: Vec<u8> = (0..id_len).map(|_| rng.gen()).collect();
        let msg: Vec<u8> = (0..rng.gen_range(0..=300)).map(|_| rng.gen()).collect();
        let (mut r, mut s) = ([0u8; 32], [0u8; 32]);
        rng.fill_bytes(&mut r);
        rng.fill_bytes(&mut s);
        let item = RawSm2Item {
            r: &r,
            s: &s,
            pubkey: &key,
            id: &id,
            msg: &msg,
        };
        batch.push(&item).expect("ids of at most 8191 bytes");
    }
    // Chunks of an odd size, so that staging starts mid-batch and strides are padded.
    let got = through_kernel(&batch, 2_900);
    let prep = Preparer::new();
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut long_ids = 0;
    for (i, (rows, fault)) in got.iter().enumerate() {
        let it = batch.item(i);
        let want = cpu_prepare(&prep, &it);
        match (&want, KeyFault::from_code(*fault).error()) {
            (Ok(p), None) => {
                let want_rows = [p.e, p.r, p.s, p.px, p.py].map(|v| words_from_be(&v));
                assert_eq!(rows, &want_rows, "record {i}: e, r, s or the key differ");
                let form = if it.pubkey.len() == 33 {
                    "compressed"
                } else {
                    "uncompressed"
                };
                *tally.entry(format!("valid {form}")).or_default() += 1;
                long_ids += usize::from(it.id.len() == 8191);
            }
            (Err(e), Some(f)) => {
                assert_eq!((e.field, &e.reason), (f.field, &f.reason), "record {i}");
                assert_eq!(rows[1], [0; 8], "record {i}: a refused record keeps r = 0");
                *tally.entry(e.reason.clone()).or_default() += 1;
            }
            (w, g) => panic!(
                "record {i} (key {:02x?}): CPU {w:?}, device {g:?}",
                it.pubkey
            ),
        }
    }
    println!("{tally:#?}\n{long_ids} valid records with 8191-byte identifiers");
    assert!(
        tally.len() >= 8,
        "every valid form and every key error: {tally:?}"
    );
    assert!(tally.values().all(|&c| c >= 100), "{tally:?}");
    assert!(
        long_ids >= 4,
        "records with the longest identifier: {long_ids}"
    );
}

#[test]
fn device_z_a_equals_the_references_for_identifier_lengths_across_the_blocks() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x2a);
    let pts = points(64, &mut rng);
    let mut lengths: Vec<usize> = (0..=140).collect();
    lengths.extend([190, 191, 192, 255, 256, 1000, 8190, 8191]);
    for (k, len) in lengths.into_iter().enumerate() {
        let (x, y) = &pts[k % pts.len()];
        let id: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        let got = dev::z_a(&id, &words_from_be(x), &words_from_be(y));
        // RustCrypto's SM3 over the parts (the test kit's) and the CPU path's (cached) Z_A.
        assert_eq!(
            got,
            chainsig_testkit::curves::sm2_z_a(&id, x, y),
            "id of {len} bytes"
        );
        assert_eq!(got, Preparer::new().z_a(&id, x, y), "id of {len} bytes");
    }
}

#[test]
fn an_identifier_longer_than_entl_holds_is_refused_as_the_parser_refuses_it() {
    let mut batch = RawSm2Batch::default();
    let id = vec![b'a'; 8192];
    let err = batch
        .push(&RawSm2Item {
            r: &[1; 32],
            s: &[1; 32],
            pubkey: &[2; 33],
            id: &id,
            msg: b"m",
        })
        .unwrap_err();
    assert_eq!(
        (err.field, err.reason.as_str()),
        ("id", "longer than 8191 bytes")
    );
    assert!(batch.is_empty());
    // The record parser's rule for the same record (the fields of a JSON Lines `verify` line).
    let fields = chainsig_core::record::VerifyFields {
        alg: Some(Algorithm::Sm2),
        pubkey: vec![2; 33],
        msg: Some(b"m".to_vec()),
        sig: Some(vec![1; 64]),
        id: Some(id),
        ..Default::default()
    };
    let parser_err = fields
        .into_record(&Default::default())
        .expect_err("the parser refuses it too");
    assert_eq!(
        (parser_err.field, parser_err.reason),
        (err.field, err.reason)
    );
}

/// Records signed by RustCrypto `sm2` (a quarter spoiled), keys in both forms, through the
/// kernel code and then the kernels' fast verification: every verdict equals RustCrypto's. The
/// known signers' entry, fed the records of two signers and their tables, gives the same.
#[test]
fn raw_records_verified_by_the_kernel_code_match_rustcrypto_for_fresh_and_known_signers() {
    use chainsig_testkit::sets as testdata;
    let (records, want) = testdata::generate_messages(240, 6, 250, 0x7a77);
    assert!(want.iter().any(|v| *v) && want.iter().any(|v| !*v));
    let mut batch = RawSm2Batch::default();
    for (i, rec) in records.iter().enumerate() {
        let key = chainsig_testkit::curves::encode_key(&rec.px, &rec.py, i % 2 == 1);
        batch
            .push(&RawSm2Item {
                r: &rec.r,
                s: &rec.s,
                pubkey: &key,
                id: &rec.id,
                msg: &rec.msg,
            })
            .unwrap();
    }
    let gtab = host::build_gtable().expect("G's table");
    let got = through_kernel(&batch, 100);
    for (i, (rows, fault)) in got.iter().enumerate() {
        let [e, r, s, px, py] = *rows;
        let verdict = *fault == 0
            && host::verify(
                Mode::Fast,
                Inversion::Euclid,
                false,
                &host::HostRecord { e, r, s, px, py },
                &gtab,
            );
        assert_eq!(verdict, want[i], "record {i} (fault {fault})");
    }
    // Two signers known: their records through the signed entry, keys from their tables.
    let mut signers: Vec<([u8; 32], [u8; 32])> = Vec::new();
    for rec in &records {
        if !signers.contains(&(rec.px, rec.py)) && signers.len() < 2 {
            signers.push((rec.px, rec.py));
        }
    }
    let mut ktabs = Vec::new();
    for (x, y) in &signers {
        ktabs.extend(host::build_key_table(&words_from_be(x), &words_from_be(y)).expect("table"));
    }
    let known: Vec<usize> = (0..records.len())
        .filter(|&i| signers.contains(&(records[i].px, records[i].py)))
        .collect();
    let numbers: Vec<u32> = known
        .iter()
        .map(|&i| {
            signers
                .iter()
                .position(|s| *s == (records[i].px, records[i].py))
                .unwrap() as u32
        })
        .collect();
    // Gathered from the batch as the engine stages a known signers' part.
    let part = raw::RawPart::gathered(&batch, &known);
    let (m, mp) = (known.len(), known.len().next_multiple_of(64));
    assert!(m >= 40, "{m} records of the two signers");
    let chunk = part.chunk(0, m);
    let mut staged = vec![0u32; chunk.words()];
    part.stage(&chunk, &mut staged).unwrap();
    let (rows, faults) = dev::raw_chunk(&staged, m, mp, Some((&numbers, &ktabs)));
    let prep = Preparer::new();
    for (k, &i) in known.iter().enumerate() {
        assert_eq!(faults[k], 0);
        let row = |q: usize| -> [u32; 8] { std::array::from_fn(|j| rows[(8 * q + j) * mp + k]) };
        let want_e = cpu_prepare(&prep, &batch.item(i))
            .expect("a known signer's key")
            .e;
        assert_eq!(row(0), words_from_be(&want_e), "record {i}: e");
        assert_eq!(rows[24 * mp + k], numbers[k]);
        let table = &ktabs[numbers[k] as usize * host::KTABLE_WORDS..][..host::KTABLE_WORDS];
        let verdict = host::verify_signed(&row(0), &row(1), &row(2), &gtab, table);
        assert_eq!(verdict, want[i], "known signer's record {i}");
    }
}

/// Through the registry under `auto`: the GPU where one opens (a GPU machine), else the CPU
/// backend, which prepares the records as the CPU path does; either way every record's outcome
/// is the CPU path's (RustCrypto's verdict where the key is the signer's own).
#[test]
fn the_registry_gives_the_cpu_paths_outcomes_on_the_gpu_or_the_cpu() {
    use chainsig_core::Backend;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0xfa11);
    let (records, want) = chainsig_testkit::sets::generate_messages(60, 4, 200, 0xfa);
    let mut batch = RawSm2Batch::default();
    let mut keys = Vec::new();
    for (i, rec) in records.iter().enumerate() {
        let key = key_bytes(i as u32 % 13, &rec.px, &rec.py, &mut rng);
        keys.push(key.clone());
        let item = RawSm2Item {
            r: &rec.r,
            s: &rec.s,
            pubkey: &key,
            id: &rec.id,
            msg: &rec.msg,
        };
        batch.push(&item).unwrap();
    }
    let mut registry = chainsig_cpu::cpu_registry();
    registry.set_gpu_crossover(1);
    let gpu = chainsig_cuda::CudaBackend::new(chainsig_cuda::CudaConfig {
        raw_sm2: true,
        ..Default::default()
    })
    .ok();
    let want_used = match gpu {
        Some(gpu) => {
            assert!(gpu.takes_raw_sm2());
            registry.register(std::sync::Arc::new(gpu));
            chainsig_cuda::NAME
        }
        None => "cpu",
    };
    let (out, used) = registry.verify_raw_sm2("auto", &batch).expect("an answer");
    assert_eq!(used, want_used);
    let prep = Preparer::new();
    let mut refused = 0;
    for i in 0..batch.len() {
        match (cpu_prepare(&prep, &batch.item(i)), out.outcome(i)) {
            (Ok(p), Ok(v)) => {
                assert_eq!(
                    v,
                    chainsig_cpu::verify_item(Algorithm::Sm2, false, &p),
                    "record {i}"
                );
                let form = keys[i].len() == 33;
                if keys[i]
                    == chainsig_testkit::curves::encode_key(&records[i].px, &records[i].py, form)
                {
                    assert_eq!(v, want[i], "record {i}");
                }
            }
            (Err(a), Err(b)) => {
                assert_eq!((a.field, a.reason), (b.field, b.reason), "record {i}");
                refused += 1;
            }
            (a, b) => panic!("record {i}: CPU path {a:?}, {used} {b:?}"),
        }
    }
    assert!(refused > 10 && refused < 40, "{refused} refused keys");
}
