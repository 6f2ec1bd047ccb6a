//! The C ABI called as C calls it: packed rows built here, verdicts compared with chainsig's CPU
//! pipeline and the test-data generator's expectations, and every kind of bad call answered with
//! its code. Also checks that include/chainsig.h is what cbindgen makes of the source.

use chainsig::*;
use chainsig_core::record::{Payload, VerifyRecord, DEFAULT_SM2_ID};
use chainsig_core::{Algorithm, RecordError};
use chainsig_cpu::pipeline::{verify_records, Verdict};
use chainsig_cpu::prepare::Preparer;
use chainsig_testkit::{record, GenSpec, GeneratedRecord};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::ffi::{CStr, CString};
use std::ptr::{null, null_mut};

// cs_recover_transactions; a directory without main.rs, so not a test binary of its own.
#[path = "capi/transactions.rs"]
mod transactions;

// ---------------------------------------------------------------------------------------------
// Building rows

/// One row's fields, as a caller would fill them.
#[derive(Clone, Debug)]
struct Row {
    alg: u8,
    flags: u8,
    pubkey: Vec<u8>,
    sig: [u8; 64],
    payload: Vec<u8>,
    id: Vec<u8>,
    tag: Option<u64>,
}

impl Row {
    fn bytes(&self) -> Vec<u8> {
        let mut out = vec![self.alg, self.flags, 0, 0];
        out.extend_from_slice(&(self.payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.id.len() as u16).to_le_bytes());
        out.push(self.pubkey.len() as u8);
        out.push(0);
        out.extend_from_slice(&self.pubkey);
        out.extend_from_slice(&self.sig);
        out.extend_from_slice(&self.payload);
        out.extend_from_slice(&self.id);
        out.resize(out.len().next_multiple_of(8), 0);
        if let Some(tag) = self.tag {
            out.extend_from_slice(&tag.to_le_bytes());
        }
        out
    }

    /// The record the pipeline gets for the same signature.
    fn record(&self) -> VerifyRecord {
        let alg = alg_of(self.alg);
        VerifyRecord {
            alg,
            pubkey: self.pubkey.clone(),
            payload: if self.flags & CS_FLAG_MESSAGE != 0 {
                Payload::Message {
                    msg: self.payload.clone(),
                    hash: alg.default_hash(),
                }
            } else {
                Payload::Digest(self.payload.clone().try_into().unwrap())
            },
            r: self.sig[..32].try_into().unwrap(),
            s: self.sig[32..].try_into().unwrap(),
            sm2_id: if self.flags & CS_FLAG_SM2_ID != 0 {
                self.id.clone()
            } else {
                DEFAULT_SM2_ID.to_vec()
            },
        }
    }
}

fn alg_code(alg: Algorithm) -> u8 {
    match alg {
        Algorithm::Sm2 => CS_ALG_SM2,
        Algorithm::Secp256k1 => CS_ALG_SECP256K1,
        Algorithm::P256 => CS_ALG_P256,
    }
}

fn alg_of(code: u8) -> Algorithm {
    match code {
        CS_ALG_SM2 => Algorithm::Sm2,
        CS_ALG_SECP256K1 => Algorithm::Secp256k1,
        _ => Algorithm::P256,
    }
}

/// A generated record as a row: message or digest, optionally tagged.
fn row_of(g: &GeneratedRecord, message: bool, tag: Option<u64>) -> Row {
    Row {
        alg: alg_code(g.alg),
        flags: if message { CS_FLAG_MESSAGE } else { 0 } | tag.map_or(0, |_| CS_FLAG_TAG),
        pubkey: g.pubkey.clone(),
        sig: g.sig,
        payload: if message {
            g.msg.clone()
        } else {
            g.digest.to_vec()
        },
        id: vec![],
        tag,
    }
}

/// Rows packed into an 8-byte-aligned buffer (u64 storage), with its byte length.
fn pack(rows: &[Row]) -> (Vec<u64>, usize) {
    let bytes: Vec<u8> = rows.iter().flat_map(|r| r.bytes()).collect();
    pack_bytes(&bytes)
}

fn pack_bytes(bytes: &[u8]) -> (Vec<u64>, usize) {
    let mut words = vec![0u64; bytes.len().div_ceil(8) + 1];
    let dst =
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8) };
    dst[..bytes.len()].copy_from_slice(bytes);
    (words, bytes.len())
}

/// s → n − s (the other valid s of an ECDSA signature).
fn negate_s(alg: Algorithm, sig: &mut [u8; 64]) {
    let n = alg.curve().n;
    let mut borrow = 0i16;
    for k in (0..32).rev() {
        let d = n[k] as i16 - sig[32 + k] as i16 - borrow;
        sig[32 + k] = d.rem_euclid(256) as u8;
        borrow = i16::from(d < 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Calling the ABI

struct Ctx(*mut cs_context);

impl Ctx {
    fn open(backend: &str) -> Ctx {
        let name = CString::new(backend).unwrap();
        let mut ctx = null_mut();
        let code = unsafe { cs_open(name.as_ptr(), null(), &mut ctx) };
        assert_eq!(code, CS_OK, "{}", last_error(null()));
        assert!(!ctx.is_null());
        Ctx(ctx)
    }

    /// A `cuda` context, or None (the test prints why and skips) where the GPU backend cannot
    /// open, which must then fail with `CS_ERR_BACKEND`, a null context and a reason;
    /// `CHAINSIG_REQUIRE_GPU` turns the skip into a failure, for runs on a GPU machine.
    fn cuda_or_skip() -> Option<Ctx> {
        let mut cuda = null_mut();
        let code = unsafe { cs_open(c"cuda".as_ptr(), null(), &mut cuda) };
        if code == CS_OK {
            return Some(Ctx(cuda));
        }
        assert_eq!(code, CS_ERR_BACKEND);
        assert!(cuda.is_null());
        let reason = last_error(null());
        assert!(reason.contains("unavailable"), "{reason}");
        assert!(
            std::env::var_os("CHAINSIG_REQUIRE_GPU").is_none(),
            "no GPU: {reason}"
        );
        eprintln!("skipped: no GPU ({reason})");
        None
    }

    fn verify(&self, words: &[u64], len: usize, n: usize) -> (i32, Vec<u64>, Vec<i32>) {
        let mut bitmap = vec![u64::MAX; n.div_ceil(64).max(1)];
        let mut errors = vec![-99; n];
        let code = unsafe {
            cs_verify(
                self.0,
                words.as_ptr().cast(),
                len,
                n,
                bitmap.as_mut_ptr(),
                bitmap.len(),
                errors.as_mut_ptr(),
            )
        };
        (code, bitmap, errors)
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        unsafe { cs_close(self.0) };
    }
}

fn last_error(ctx: *const cs_context) -> String {
    unsafe { CStr::from_ptr(cs_last_error(ctx)) }
        .to_string_lossy()
        .into_owned()
}

fn bit(bitmap: &[u64], i: usize) -> bool {
    bitmap[i / 64] >> (i % 64) & 1 == 1
}

/// The CPU pipeline's verdicts for `rows` (each row's low-s flag applied on its own).
fn pipeline_verdicts(rows: &[Row]) -> Vec<bool> {
    let registry = chainsig_cpu::cpu_registry();
    let preparer = Preparer::new();
    rows.iter()
        .map(|row| {
            let records: Vec<Result<VerifyRecord, RecordError>> = vec![Ok(row.record())];
            let low_s = row.flags & CS_FLAG_LOW_S != 0;
            let out = verify_records(&registry, "cpu", low_s, &preparer, &records).unwrap();
            out.verdicts[0] == Verdict::Valid
        })
        .collect()
}

/// Random rows of every algorithm: generated records (30% corrupted), as digests or messages,
/// some tagged, ECDSA ones sometimes with s negated and the low-s flag set or not, SM2 ones
/// sometimes signed under a random identifier. Returns the rows and the verdict each should get.
fn random_rows(seed: u64, per_alg: usize) -> (Vec<Row>, Vec<bool>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rows = Vec::new();
    let mut expect = Vec::new();
    for alg in Algorithm::ALL {
        let spec = GenSpec {
            alg,
            seed: seed ^ alg_code(alg) as u64,
            invalid_ratio: 0.3,
            msg_len: rng.gen_range(0..100),
        };
        for i in 0..per_alg as u64 {
            let g = record(&spec, i);
            let tag = rng.gen_bool(0.3).then(|| rng.gen());
            let mut row = row_of(&g, rng.gen_bool(0.5), tag);
            let mut valid = g.expect_valid();
            if alg != Algorithm::Sm2 && rng.gen_bool(0.3) {
                // Both s and n − s verify, unless the low-s rule is set below.
                negate_s(alg, &mut row.sig);
            }
            if alg != Algorithm::Sm2 && rng.gen_bool(0.4) {
                row.flags |= CS_FLAG_LOW_S;
            }
            if alg == Algorithm::Sm2 && g.expect_valid() && rng.gen_bool(0.3) {
                // Re-sign under a random identifier with a fresh key.
                let key = chainsig_weierstrass::SecretKey::random(&mut rng);
                let id: Vec<u8> = (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect();
                let za = chainsig_weierstrass::z_a(&id, &key.public_key());
                let e = chainsig_weierstrass::message_digest(&za, &g.msg);
                row.sig = chainsig_weierstrass::sign_prehashed(&key, &e, &mut rng);
                row.pubkey = key.public_key().to_uncompressed().to_vec();
                row.payload = if row.flags & CS_FLAG_MESSAGE != 0 {
                    g.msg.clone()
                } else {
                    e.to_vec()
                };
                row.flags |= CS_FLAG_SM2_ID;
                row.id = id;
                valid = true;
            }
            expect.push(valid);
            rows.push(row);
        }
    }
    (rows, expect)
}

// ---------------------------------------------------------------------------------------------
// Verification

#[test]
fn verdicts_equal_the_cpu_pipeline_and_the_generator() {
    let (rows, generated) = random_rows(7, 150);
    let pipeline = pipeline_verdicts(&rows);
    let (words, len) = pack(&rows);
    let ctx = Ctx::open("cpu");
    let (code, bitmap, errors) = ctx.verify(&words, len, rows.len());
    assert_eq!(code, CS_OK, "{}", last_error(ctx.0));
    assert!(errors.iter().all(|&e| e == CS_OK), "{errors:?}");
    let mut checked_against_generator = 0;
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(bit(&bitmap, i), pipeline[i], "row {i}: {row:?}");
        let high_s = row.alg != CS_ALG_SM2
            && alg_of(row.alg)
                .curve()
                .is_high_s(&row.sig[32..].try_into().unwrap());
        if !(row.flags & CS_FLAG_LOW_S != 0 && high_s) {
            // Both s and n − s verify without the rule; with it a high s must fail.
            checked_against_generator += 1;
            assert_eq!(bit(&bitmap, i), generated[i], "row {i}: {row:?}");
        } else {
            assert!(!bit(&bitmap, i), "row {i}: high s under the low-s rule");
        }
    }
    assert!(checked_against_generator > 300);
    let valid = (0..rows.len()).filter(|&i| bit(&bitmap, i)).count();
    assert!(valid > 200 && valid < rows.len() - 60, "{valid} valid");
    // Bits past the last row are zero.
    assert_eq!(bitmap.last().unwrap() >> (rows.len() % 64), 0);
    // An all-valid batch gives whole words of ones.
    let good: Vec<Row> = rows
        .iter()
        .zip(&pipeline)
        .filter(|(_, &v)| v)
        .map(|(r, _)| r.clone())
        .take(128)
        .collect();
    let (words, len) = pack(&good);
    let (code, bitmap, _) = ctx.verify(&words, len, good.len());
    assert_eq!((code, bitmap), (CS_OK, vec![u64::MAX, u64::MAX]));
}

#[test]
fn bad_rows_get_their_own_codes_and_the_rest_are_verified() {
    let spec = GenSpec {
        alg: Algorithm::P256,
        seed: 3,
        invalid_ratio: 0.0,
        msg_len: 20,
    };
    let good = row_of(&record(&spec, 0), false, None);
    let mutate = |f: &dyn Fn(&mut Row)| {
        let mut r = good.clone();
        f(&mut r);
        r.bytes()
    };
    let mut reserved = good.bytes();
    reserved[2] = 1;
    let mut reserved2 = good.bytes();
    reserved2[11] = 1;
    let mut padding = good.bytes();
    let last = padding.len() - 1;
    padding[last] = 1;
    let mut off_curve = good.clone();
    off_curve.pubkey = vec![4; 65];
    let cases: Vec<(Vec<u8>, i32)> = vec![
        (good.bytes(), CS_OK),
        (mutate(&|r| r.alg = 9), CS_REC_ALGORITHM),
        (mutate(&|r| r.alg = 0), CS_REC_ALGORITHM),
        (reserved, CS_REC_FORMAT),
        (reserved2, CS_REC_FORMAT),
        (padding, CS_REC_FORMAT),
        (mutate(&|r| r.flags |= 0x80), CS_REC_FORMAT),
        (mutate(&|r| r.flags |= 5 << CS_HASH_SHIFT), CS_REC_FORMAT),
        (
            mutate(&|r| r.flags |= CS_HASH_SHA256 << CS_HASH_SHIFT),
            CS_REC_FORMAT,
        ), // digest row
        (
            mutate(&|r| {
                r.flags |= CS_FLAG_MESSAGE | (CS_HASH_SM3 << CS_HASH_SHIFT);
            }),
            CS_REC_FORMAT,
        ),
        (mutate(&|r| r.flags |= CS_FLAG_SM2_ID), CS_REC_FORMAT),
        (mutate(&|r| r.id = vec![1, 2]), CS_REC_FORMAT),
        (
            mutate(&|r| {
                r.alg = CS_ALG_SM2;
                r.flags |= CS_FLAG_LOW_S
            }),
            CS_REC_FORMAT,
        ),
        (
            mutate(&|r| {
                r.alg = CS_ALG_SM2;
                r.flags |= CS_FLAG_MESSAGE | (CS_HASH_SHA256 << CS_HASH_SHIFT);
            }),
            CS_REC_FORMAT,
        ),
        (
            mutate(&|r| {
                r.alg = CS_ALG_SM2;
                r.flags |= CS_FLAG_SM2_ID;
                r.id = vec![7; 8192];
            }),
            CS_REC_LENGTH,
        ),
        (mutate(&|r| r.pubkey.truncate(40)), CS_REC_LENGTH),
        (mutate(&|r| r.pubkey = vec![]), CS_REC_LENGTH),
        (mutate(&|r| r.payload.truncate(31)), CS_REC_LENGTH),
        (off_curve.bytes(), CS_REC_PUBKEY),
        (
            mutate(&|r| {
                r.flags |= CS_FLAG_MESSAGE | (CS_HASH_SHA256 << CS_HASH_SHIFT);
            }),
            CS_OK, // valid framing; the verdict is 0 (the digest bytes are not the message)
        ),
        (good.bytes(), CS_OK),
    ];
    let bytes: Vec<u8> = cases.iter().flat_map(|(b, _)| b.clone()).collect();
    let (words, len) = pack_bytes(&bytes);
    let ctx = Ctx::open("cpu");
    let (code, bitmap, errors) = ctx.verify(&words, len, cases.len());
    assert_eq!(code, CS_OK, "{}", last_error(ctx.0));
    for (i, (_, want)) in cases.iter().enumerate() {
        assert_eq!(errors[i], *want, "case {i}");
        if *want != CS_OK {
            assert!(!bit(&bitmap, i), "case {i} has an error and verdict 1");
        }
    }
    assert!(bit(&bitmap, 0) && bit(&bitmap, cases.len() - 1));
    assert!(!bit(&bitmap, cases.len() - 2));
    assert!(
        last_error(ctx.0).starts_with("record 1: algorithm byte 9"),
        "{}",
        last_error(ctx.0)
    );
    for code in [CS_OK, CS_REC_TRUNCATED, CS_ERR_CLOSED, 12345] {
        let text = unsafe { CStr::from_ptr(cs_status_str(code)) };
        assert!(!text.to_bytes().is_empty());
    }
}

#[test]
fn truncated_rows_are_reported_and_never_read_past_the_end() {
    let spec = GenSpec {
        alg: Algorithm::Secp256k1,
        seed: 11,
        invalid_ratio: 0.0,
        msg_len: 10,
    };
    let rows: Vec<Row> = (0..3)
        .map(|i| row_of(&record(&spec, i), true, None))
        .collect();
    let ctx = Ctx::open("cpu");
    // The second row claims a message of 4 GiB, the third of 1000 bytes more than remain.
    for bad_len in [u32::MAX, 1000] {
        let mut bytes: Vec<u8> = rows.iter().flat_map(|r| r.bytes()).collect();
        let second = rows[0].bytes().len();
        bytes[second + 4..second + 8].copy_from_slice(&bad_len.to_le_bytes());
        // Padding so the count check (at least 112 bytes a row) passes for 4 rows.
        bytes.resize(bytes.len() + 112, 0);
        let (words, len) = pack_bytes(&bytes);
        let (code, bitmap, errors) = ctx.verify(&words, len, 4);
        assert_eq!(code, CS_OK, "{}", last_error(ctx.0));
        assert_eq!(
            errors,
            [CS_OK, CS_REC_TRUNCATED, CS_REC_UNREACHED, CS_REC_UNREACHED]
        );
        assert_eq!(bitmap, [1]);
    }
    // The buffer ends in the middle of the last row's header: truncated too.
    let mut bytes: Vec<u8> = rows.iter().flat_map(|r| r.bytes()).collect();
    let mut partial = vec![0u8; 40];
    partial[0] = CS_ALG_P256;
    partial[4] = 32; // a digest
    partial[10] = 65; // an uncompressed key: 173 bytes, of which 40 are there
    bytes.extend_from_slice(&partial);
    let (words, len) = pack_bytes(&bytes);
    let (code, _, errors) = ctx.verify(&words, len, 4);
    assert_eq!(code, CS_OK);
    assert_eq!(errors, [CS_OK, CS_OK, CS_OK, CS_REC_TRUNCATED]);
}

#[test]
fn bad_calls_return_codes() {
    let spec = GenSpec {
        alg: Algorithm::Sm2,
        seed: 5,
        invalid_ratio: 0.0,
        msg_len: 0,
    };
    let rows: Vec<Row> = (0..2)
        .map(|i| row_of(&record(&spec, i), false, None))
        .collect();
    let (words, len) = pack(&rows);
    let ctx = Ctx::open("cpu");
    let p = words.as_ptr().cast::<u8>();
    let mut bitmap = [u64::MAX; 2];
    let mut call = |ctx: *mut cs_context, rows: *const u8, len: usize, n: usize, words: usize| {
        bitmap = [u64::MAX; 2];
        let bm = if words == usize::MAX {
            null_mut()
        } else {
            bitmap.as_mut_ptr()
        };
        let code = unsafe { cs_verify(ctx, rows, len, n, bm, words.min(2), null_mut()) };
        (code, bitmap)
    };
    assert_eq!(call(ctx.0, p, len, 2, 1), (CS_OK, [3, u64::MAX]));
    assert_eq!(call(ctx.0, null(), len, 2, 1).0, CS_ERR_NULL);
    assert_eq!(call(ctx.0, p, len, 2, usize::MAX).0, CS_ERR_NULL);
    assert_eq!(call(ctx.0, p, len, 0, 1), (CS_ERR_ARGUMENT, [0, u64::MAX]));
    assert_eq!(call(ctx.0, p, 0, 2, 1).0, CS_ERR_ARGUMENT);
    assert_eq!(call(ctx.0, p, len, 2, 0).0, CS_ERR_ARGUMENT);
    assert_eq!(
        call(ctx.0, unsafe { p.add(1) }, len - 8, 1, 1).0,
        CS_ERR_ALIGNMENT
    );
    assert_eq!(call(ctx.0, p, len - 4, 2, 1).0, CS_ERR_ALIGNMENT);
    assert_eq!(call(ctx.0, p, 112, 2, 1).0, CS_ERR_ARGUMENT); // cannot hold two rows
    assert_eq!(call(ctx.0, p, len, 1, 1).0, CS_ERR_ARGUMENT); // a row's bytes left over
    assert!(
        last_error(ctx.0).contains("left after row 0"),
        "{}",
        last_error(ctx.0)
    );
    assert_eq!(call(null_mut(), p, len, 2, 2), (CS_ERR_CLOSED, [0, 0]));
    assert_eq!(
        call(12345 as *mut cs_context, p, len, 2, 1).0,
        CS_ERR_CLOSED
    );
    assert!(
        last_error(null()).contains("closed"),
        "{}",
        last_error(null())
    );
    assert_eq!(call(ctx.0, p, len, 2, 1), (CS_OK, [3, u64::MAX]));
    assert_eq!(last_error(ctx.0), "");

    // Opening.
    let mut out = std::ptr::dangling_mut::<cs_context>();
    let bad = |name: &str, config: Option<&str>| {
        let name = CString::new(name).unwrap();
        let config = config.map(|c| CString::new(c).unwrap());
        let mut out = null_mut();
        let code = unsafe {
            cs_open(
                name.as_ptr(),
                config.as_ref().map_or(null(), |c| c.as_ptr()),
                &mut out,
            )
        };
        assert!(out.is_null());
        code
    };
    assert_eq!(bad("tpu", None), CS_ERR_ARGUMENT);
    assert!(last_error(null()).contains("tpu"));
    assert_eq!(bad("cpu", Some("{}")), CS_ERR_ARGUMENT);
    assert_eq!(bad("auto", Some("not json")), CS_ERR_ARGUMENT);
    assert_eq!(unsafe { cs_open(null(), null(), &mut out) }, CS_ERR_NULL);
    assert!(out.is_null());
    assert_eq!(
        unsafe { cs_open(c"cpu".as_ptr(), null(), null_mut()) },
        CS_ERR_NULL
    );

    // Closing: once, then refused; the handle is never reused.
    let other = Ctx::open("cpu");
    assert_eq!(unsafe { cs_close(other.0) }, CS_OK);
    assert_eq!(unsafe { cs_close(other.0) }, CS_ERR_CLOSED);
    assert_eq!(call(other.0, p, len, 2, 1).0, CS_ERR_CLOSED);
    assert_eq!(unsafe { cs_close(null_mut()) }, CS_ERR_CLOSED);
    let third = Ctx::open("cpu");
    assert_ne!(third.0, other.0);
    std::mem::forget(other);
}

#[test]
fn one_context_serves_many_threads() {
    let (rows, _) = random_rows(21, 40);
    let pipeline = pipeline_verdicts(&rows);
    let ctx = Ctx::open("auto");
    let handle = ctx.0 as usize;
    std::thread::scope(|scope| {
        for t in 0..4usize {
            let (rows, pipeline) = (&rows, &pipeline);
            scope.spawn(move || {
                let ctx = handle as *mut cs_context;
                for round in 0..3 {
                    // Each thread a different slice, so results cannot be mixed up unnoticed.
                    let from = (t * 17 + round * 5) % 60;
                    let part = &rows[from..from + 50];
                    let (words, len) = pack(part);
                    let mut bitmap = [0u64; 1];
                    let mut errors = [0i32; 50];
                    let code = unsafe {
                        cs_verify(
                            ctx,
                            words.as_ptr().cast(),
                            len,
                            50,
                            bitmap.as_mut_ptr(),
                            1,
                            errors.as_mut_ptr(),
                        )
                    };
                    assert_eq!(code, CS_OK, "{}", last_error(ctx));
                    for k in 0..50 {
                        assert_eq!(
                            bit(&bitmap, k),
                            pipeline[from + k],
                            "thread {t} row {}",
                            from + k
                        );
                    }
                    // A failure on this thread is not seen by the others.
                    let code = unsafe {
                        cs_verify(
                            ctx,
                            words.as_ptr().cast(),
                            len,
                            0,
                            bitmap.as_mut_ptr(),
                            1,
                            null_mut(),
                        )
                    };
                    assert_eq!(code, CS_ERR_ARGUMENT);
                    assert!(last_error(ctx).contains("n_rows is 0"));
                }
            });
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Submission

#[test]
fn submitted_batches_finish_in_any_order_with_the_same_verdicts() {
    let (rows, _) = random_rows(33, 60);
    let pipeline = pipeline_verdicts(&rows);
    let ctx = Ctx::open("cpu");
    let batches: Vec<&[Row]> = rows.chunks(45).collect();
    let mut tickets = Vec::new();
    for batch in &batches {
        let (words, len) = pack(batch);
        let mut ticket = null_mut();
        let code =
            unsafe { cs_submit(ctx.0, words.as_ptr().cast(), len, batch.len(), &mut ticket) };
        assert_eq!(code, CS_OK, "{}", last_error(ctx.0));
        drop(words); // the library keeps its own copy
        tickets.push(ticket);
    }
    assert!(tickets.len() >= 4);
    for (k, &ticket) in tickets.iter().enumerate().rev() {
        let n = batches[k].len();
        let state = unsafe { cs_poll(ticket) };
        assert!(state == 0 || state == 1, "{state}");
        let mut bitmap = [0u64; 1];
        let mut errors = vec![-1; n];
        for _ in 0..2 {
            let code = unsafe { cs_wait(ticket, bitmap.as_mut_ptr(), 1, errors.as_mut_ptr()) };
            assert_eq!(code, CS_OK);
            assert_eq!(unsafe { cs_poll(ticket) }, 1);
            for i in 0..n {
                assert_eq!(bit(&bitmap, i), pipeline[k * 45 + i], "batch {k} row {i}");
            }
            assert!(errors.iter().all(|&e| e == CS_OK));
        }
        assert_eq!(unsafe { cs_ticket_free(ticket) }, CS_OK);
        assert_eq!(unsafe { cs_ticket_free(ticket) }, CS_ERR_CLOSED);
        assert_eq!(unsafe { cs_poll(ticket) }, CS_ERR_CLOSED);
        assert_eq!(
            unsafe { cs_wait(ticket, bitmap.as_mut_ptr(), 1, null_mut()) },
            CS_ERR_CLOSED
        );
    }

    // A ticket whose batch fails as a whole (bytes left over) reports it at wait.
    let (mut words, len) = pack(&rows[..2]);
    words.push(0);
    let mut ticket = null_mut();
    let code = unsafe { cs_submit(ctx.0, words.as_ptr().cast(), len + 8 * 14, 1, &mut ticket) };
    assert_eq!(code, CS_OK, "{}", last_error(ctx.0));
    let mut bitmap = [u64::MAX];
    assert_eq!(
        unsafe { cs_wait(ticket, bitmap.as_mut_ptr(), 1, null_mut()) },
        CS_ERR_ARGUMENT
    );
    assert_eq!(bitmap, [0]);
    assert!(
        last_error(ctx.0).contains("left after row 0"),
        "{}",
        last_error(ctx.0)
    );
    // Too small a bitmap at wait.
    assert_eq!(
        unsafe { cs_wait(ticket, bitmap.as_mut_ptr(), 0, null_mut()) },
        CS_ERR_ARGUMENT
    );
    unsafe { cs_ticket_free(ticket) };

    // Shape errors at submission; NULL tickets.
    let mut ticket = std::ptr::dangling_mut::<cs_ticket>();
    assert_eq!(
        unsafe { cs_submit(ctx.0, words.as_ptr().cast(), len, 0, &mut ticket) },
        CS_ERR_ARGUMENT
    );
    assert!(ticket.is_null());
    assert_eq!(
        unsafe { cs_submit(ctx.0, null(), len, 1, &mut ticket) },
        CS_ERR_NULL
    );
    assert_eq!(
        unsafe { cs_submit(ctx.0, words.as_ptr().cast(), len, 1, null_mut()) },
        CS_ERR_NULL
    );
    assert_eq!(unsafe { cs_poll(null_mut()) }, CS_ERR_CLOSED);
    assert_eq!(unsafe { cs_ticket_free(null_mut()) }, CS_ERR_CLOSED);

    // Tickets outlive their context: close waits for them, then submission is refused.
    let (words, len) = pack(&rows);
    let other = Ctx::open("cpu");
    let mut pending = Vec::new();
    for _ in 0..3 {
        let mut ticket = null_mut();
        assert_eq!(
            unsafe { cs_submit(other.0, words.as_ptr().cast(), len, rows.len(), &mut ticket) },
            CS_OK
        );
        pending.push(ticket);
    }
    // One freed before it finishes.
    assert_eq!(unsafe { cs_ticket_free(pending.pop().unwrap()) }, CS_OK);
    assert_eq!(unsafe { cs_close(other.0) }, CS_OK);
    let mut ticket = null_mut();
    assert_eq!(
        unsafe { cs_submit(other.0, words.as_ptr().cast(), len, rows.len(), &mut ticket) },
        CS_ERR_CLOSED
    );
    for ticket in pending {
        assert_eq!(unsafe { cs_poll(ticket) }, 1);
        let mut bitmap = vec![0u64; rows.len().div_ceil(64)];
        assert_eq!(
            unsafe { cs_wait(ticket, bitmap.as_mut_ptr(), bitmap.len(), null_mut()) },
            CS_OK
        );
        for (i, want) in pipeline.iter().enumerate() {
            assert_eq!(bit(&bitmap, i), *want);
        }
        unsafe { cs_ticket_free(ticket) };
    }
    std::mem::forget(other);
}

// ---------------------------------------------------------------------------------------------
// Recovery and signers

#[test]
fn recovery_finds_ethereum_senders() {
    let secp = secp256k1::Secp256k1::new();
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let mut items = Vec::new();
    let mut want: Vec<Option<(Vec<u8>, i32)>> = Vec::new();
    for i in 0..150 {
        let key = loop {
            if let Ok(k) = secp256k1::SecretKey::from_byte_array(rng.gen()) {
                break k;
            }
        };
        let digest: [u8; 32] = rng.gen();
        let sig = secp.sign_ecdsa_recoverable(secp256k1::Message::from_digest(digest), &key);
        let (id, mut rs) = sig.serialize_compact();
        let mut v = i32::from(id) as u8;
        let pubkey = key.public_key(&secp).serialize_uncompressed().to_vec();
        let mut expect = Some((pubkey, CS_OK));
        match i % 5 {
            1 => {
                // The other s with the other parity is the same signature mathematically; Ethereum
                // (EIP-2) refuses it.
                negate_s(Algorithm::Secp256k1, &mut rs);
                v ^= 1;
                expect = None;
            }
            2 => {
                v += 2;
                expect = Some((vec![], CS_REC_RECOVERY_ID));
            }
            3 => {
                rs[..32].fill(0); // r = 0
                expect = None;
            }
            _ => {}
        }
        items.extend_from_slice(&digest);
        items.extend_from_slice(&rs);
        items.push(v);
        want.push(expect);
    }
    let n = want.len();
    let ctx = Ctx::open("cpu");
    let mut addresses = vec![0xaau8; 20 * n];
    let mut pubkeys = vec![0xaau8; 65 * n];
    let mut found = vec![0u64; n.div_ceil(64)];
    let mut errors = vec![-1; n];
    let code = unsafe {
        cs_recover(
            ctx.0,
            items.as_ptr(),
            items.len(),
            n,
            addresses.as_mut_ptr(),
            pubkeys.as_mut_ptr(),
            found.as_mut_ptr(),
            found.len(),
            errors.as_mut_ptr(),
        )
    };
    assert_eq!(code, CS_OK, "{}", last_error(ctx.0));
    for (i, expect) in want.iter().enumerate() {
        let address = &addresses[20 * i..20 * i + 20];
        let pubkey = &pubkeys[65 * i..65 * i + 65];
        match expect {
            Some((key, CS_OK)) => {
                assert!(bit(&found, i), "item {i}");
                assert_eq!(pubkey, &key[..]);
                let hash = chainsig_core::hash::keccak256(&key[1..]);
                assert_eq!(address, &hash[12..]);
                assert_eq!(errors[i], CS_OK);
            }
            Some((_, code)) => {
                assert_eq!(errors[i], *code, "item {i}");
                assert!(!bit(&found, i) && address == [0; 20] && pubkey == [0; 65]);
            }
            None => {
                assert!(
                    !bit(&found, i) && address == [0; 20] && pubkey == [0; 65],
                    "item {i}"
                );
                assert_eq!(errors[i], CS_OK);
            }
        }
    }
    // Without the key output; and bad calls.
    let code = unsafe {
        cs_recover(
            ctx.0,
            items.as_ptr(),
            items.len(),
            n,
            addresses.as_mut_ptr(),
            null_mut(),
            found.as_mut_ptr(),
            found.len(),
            null_mut(),
        )
    };
    assert_eq!(code, CS_OK);
    let call = |len: usize, n: usize, words: usize| unsafe {
        let mut found = vec![0u64; 4];
        cs_recover(
            ctx.0,
            items.as_ptr(),
            len,
            n,
            addresses.clone().as_mut_ptr(),
            null_mut(),
            found.as_mut_ptr(),
            words,
            null_mut(),
        )
    };
    assert_eq!(call(items.len(), n, 2), CS_ERR_ARGUMENT); // 150 items need 3 words
    assert_eq!(call(items.len() - 1, n, 3), CS_ERR_ARGUMENT);
    assert_eq!(call(0, 0, 3), CS_ERR_ARGUMENT);
    let code = unsafe {
        cs_recover(
            ctx.0,
            null(),
            97,
            1,
            addresses.as_mut_ptr(),
            null_mut(),
            found.as_mut_ptr(),
            1,
            null_mut(),
        )
    };
    assert_eq!(code, CS_ERR_NULL);
}

#[test]
fn signers_are_checked_and_replaced() {
    let ctx = Ctx::open("cpu");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let keys: Vec<u8> = (0..3)
        .flat_map(|_| {
            chainsig_weierstrass::SecretKey::random(&mut rng)
                .public_key()
                .to_uncompressed()
        })
        .collect();
    assert_eq!(unsafe { cs_load_signers(ctx.0, keys.as_ptr(), 3) }, CS_OK);
    assert_eq!(unsafe { cs_load_signers(ctx.0, null(), 0) }, CS_OK);
    let mut bad = keys.clone();
    bad[65 + 64] ^= 1;
    assert_eq!(
        unsafe { cs_load_signers(ctx.0, bad.as_ptr(), 3) },
        CS_ERR_ARGUMENT
    );
    assert!(
        last_error(ctx.0).starts_with("signer 1: pubkey"),
        "{}",
        last_error(ctx.0)
    );
    assert_eq!(unsafe { cs_load_signers(ctx.0, null(), 2) }, CS_ERR_NULL);
    assert_eq!(
        unsafe { cs_load_signers(null_mut(), keys.as_ptr(), 3) },
        CS_ERR_CLOSED
    );
    // Verification is unchanged by the set on the CPU.
    let (rows, _) = random_rows(4, 20);
    let (words, len) = pack(&rows);
    assert_eq!(ctx.verify(&words, len, rows.len()).0, CS_OK);
}

#[test]
fn version_is_the_crate_version() {
    let v = unsafe { CStr::from_ptr(cs_version()) };
    assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
}

// ---------------------------------------------------------------------------------------------
// The GPU

/// With a GPU: `cuda` and `auto` give the CPU's verdicts on batches above the GPU crossover, with
/// and without known signers loaded. Without one, `cuda` must fail to open with a reason (and
/// `CHAINSIG_REQUIRE_GPU=1` turns that into a failure, for runs on a GPU machine).
#[test]
fn the_gpu_gives_the_cpus_verdicts() {
    let Some(cuda) = Ctx::cuda_or_skip() else {
        return;
    };
    let auto = Ctx::open("auto");
    let cpu = Ctx::open("cpu");
    let mut rows = Vec::new();
    let signers = 8;
    for alg in Algorithm::ALL {
        let spec = GenSpec {
            alg,
            seed: 1000 + alg_code(alg) as u64,
            invalid_ratio: 0.2,
            msg_len: 60,
        };
        for i in 0..5000u64 {
            let g = chainsig_testkit::record_in_pool(&spec, i, signers);
            rows.push(row_of(&g, i % 3 == 0, None));
        }
    }
    let (words, len) = pack(&rows);
    let (code, want, errors) = cpu.verify(&words, len, rows.len());
    assert_eq!(code, CS_OK);
    assert!(errors.iter().all(|&e| e == CS_OK));
    for (name, ctx) in [("cuda", &cuda), ("auto", &auto)] {
        let (code, got, _) = ctx.verify(&words, len, rows.len());
        assert_eq!(code, CS_OK, "{name}: {}", last_error(ctx.0));
        assert_eq!(got, want, "{name}");
    }
    let spec = GenSpec {
        alg: Algorithm::Sm2,
        seed: 1000 + CS_ALG_SM2 as u64,
        invalid_ratio: 0.2,
        msg_len: 60,
    };
    let keys: Vec<u8> = chainsig_testkit::pool_public_keys(&spec, signers).concat();
    for ctx in [&cuda, &auto] {
        let code = unsafe { cs_load_signers(ctx.0, keys.as_ptr(), signers as usize) };
        assert_eq!(code, CS_OK, "{}", last_error(ctx.0));
        let (code, got, _) = ctx.verify(&words, len, rows.len());
        assert_eq!(code, CS_OK, "{}", last_error(ctx.0));
        assert_eq!(got, want, "with known signers");
        // Submitted batches take the same path.
        let mut ticket = null_mut();
        assert_eq!(
            unsafe { cs_submit(ctx.0, words.as_ptr().cast(), len, rows.len(), &mut ticket) },
            CS_OK
        );
        let mut bitmap = vec![0u64; want.len()];
        assert_eq!(
            unsafe { cs_wait(ticket, bitmap.as_mut_ptr(), bitmap.len(), null_mut()) },
            CS_OK
        );
        assert_eq!(bitmap, want);
        unsafe { cs_ticket_free(ticket) };
        assert_eq!(unsafe { cs_load_signers(ctx.0, null(), 0) }, CS_OK);
    }
    eprintln!("cuda and auto agree with the cpu on {} records", rows.len());
}

// ---------------------------------------------------------------------------------------------
// The header

/// include/chainsig.h must be what cbindgen makes of the source now (CHAINSIG_BLESS=1 rewrites it).
#[test]
fn header_is_current() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).unwrap();
    let bindings = cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen parses the crate");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = format!("{dir}/include/chainsig.h");
    if std::env::var_os("CHAINSIG_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let stored = std::fs::read(&path).unwrap_or_default();
    assert!(
        stored == fresh,
        "{path} is out of date: run CHAINSIG_BLESS=1 cargo test -p chainsig-capi header_is_current"
    );
}

// ---------------------------------------------------------------------------------------------
// A failing accelerator

/// Set in the child process of `a_failing_accelerator_loses_and_reorders_nothing`.
const FAULT_CHILD: &str = "CHAINSIG_CAPI_FAULT_CHILD";

/// The C ABI over a failing accelerator: this test runs [`fault_child`] in a child process with
/// the `CHAINSIG_FAULT` switch of test builds set (`chainsig_cpu::cpu_registry`), which adds a
/// backend that `auto` prefers and whose chosen calls fail, panic or answer short. A process of
/// its own, because the switch is read from the environment when a context opens.
#[test]
fn a_failing_accelerator_loses_and_reorders_nothing() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["fault_child", "--exact", "--nocapture"])
        .env(FAULT_CHILD, "1")
        .env("CHAINSIG_FAULT", "1-2,panic:3,short:4,6,8-9,panic:11")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{log}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(log.contains("1 passed"), "the child ran nothing: {log}");
    // The panics were injected (and their messages printed by the panic hook), so the faulty
    // calls were reached: the last one chosen, 11, among them.
    let stderr = String::from_utf8_lossy(&out.stderr);
    for n in [3, 11] {
        assert!(
            stderr.contains(&format!("injected panic on call {n} of backend fault")),
            "{stderr}"
        );
    }
}

/// Runs only as the child of `a_failing_accelerator_loses_and_reorders_nothing`: every verdict
/// of `cs_verify` and of submitted batches equals the CPU pipeline's, row by row, while the
/// accelerator fails, panics or answers short on the calls the parent chose; no call returns an
/// error and no panic reaches the caller.
#[test]
fn fault_child() {
    if std::env::var(FAULT_CHILD).is_err() {
        return;
    }
    let (rows, _) = random_rows(41, 100);
    let pipeline = pipeline_verdicts(&rows);
    let ctx = Ctx::open("auto");
    // Each cs_verify call asks the registry once per algorithm and low-s rule present: calls
    // 1 to 6 or so land in the first two batches, the rest in the submitted ones.
    for round in 0..2 {
        let (words, len) = pack(&rows);
        let (code, bitmap, errors) = ctx.verify(&words, len, rows.len());
        assert_eq!(code, CS_OK, "round {round}: {}", last_error(ctx.0));
        assert!(errors.iter().all(|&e| e == CS_OK), "{errors:?}");
        for (i, want) in pipeline.iter().enumerate() {
            assert_eq!(bit(&bitmap, i), *want, "round {round}, row {i}");
        }
    }
    let mut tickets = Vec::new();
    for batch in rows.chunks(70) {
        let (words, len) = pack(batch);
        let mut ticket = null_mut();
        let code =
            unsafe { cs_submit(ctx.0, words.as_ptr().cast(), len, batch.len(), &mut ticket) };
        assert_eq!(code, CS_OK, "{}", last_error(ctx.0));
        tickets.push((ticket, batch.len()));
    }
    for (k, (ticket, n)) in tickets.into_iter().enumerate() {
        let mut bitmap = [0u64; 2];
        let mut errors = vec![-1; n];
        let code = unsafe { cs_wait(ticket, bitmap.as_mut_ptr(), 2, errors.as_mut_ptr()) };
        assert_eq!(code, CS_OK, "{}", last_error(ctx.0));
        for i in 0..n {
            assert_eq!(bit(&bitmap, i), pipeline[k * 70 + i], "ticket {k}, row {i}");
        }
        assert!(errors.iter().all(|&e| e == CS_OK));
        assert_eq!(unsafe { cs_ticket_free(ticket) }, CS_OK);
    }
}
