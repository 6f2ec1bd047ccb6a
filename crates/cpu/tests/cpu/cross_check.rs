//! Every CPU backend against an independent implementation, on 10,000 fresh records per algorithm
//! (about a third corrupted in the generator's varied ways, keys compressed and uncompressed):
//! SM2 against RustCrypto `sm2`, secp256k1 against RustCrypto `k256`, P-256 against `ring`.
//! The records go through the whole verify path: decoding, preparation, batching, the backend.

use chainsig_core::record::DEFAULT_SM2_ID;
use chainsig_core::Algorithm;
use chainsig_cpu::pipeline::{verify_records, Verdict};
use chainsig_cpu::prepare::Preparer;
use chainsig_cpu::{cpu_registry, prepare};
use chainsig_testkit::{record, Corruption, GenSpec, GeneratedRecord};

const RECORDS: u64 = 10_000;

fn reference_verdict(rec: &GeneratedRecord) -> bool {
    let (r, s) = rec.sig.split_at(32);
    match rec.alg {
        Algorithm::Sm2 => {
            use sm2::dsa::signature::Verifier;
            let id = std::str::from_utf8(DEFAULT_SM2_ID).unwrap();
            let Ok(key) = sm2::dsa::VerifyingKey::from_sec1_bytes(id, &rec.pubkey) else {
                return false;
            };
            let Ok(sig) = sm2::dsa::Signature::from_bytes(&rec.sig.into()) else {
                return false;
            };
            key.verify(&rec.msg, &sig).is_ok()
        }
        Algorithm::Secp256k1 => {
            use k256::ecdsa::signature::hazmat::PrehashVerifier;
            let Ok(key) = k256::ecdsa::VerifyingKey::from_sec1_bytes(&rec.pubkey) else {
                return false;
            };
            let Ok(sig) = k256::ecdsa::Signature::from_scalars(
                <[u8; 32]>::try_from(r).unwrap(),
                <[u8; 32]>::try_from(s).unwrap(),
            ) else {
                return false;
            };
            // k256 accepts only low s; plain ECDSA accepts either form.
            let sig = sig.normalize_s();
            let digest = chainsig_core::hash::keccak256(&rec.msg);
            key.verify_prehash(&digest, &sig).is_ok()
        }
        Algorithm::P256 => {
            // ring takes uncompressed keys only; decompress with our own decoder only for the
            // key's encoding, the verdict is ring's.
            let Ok((x, y)) = prepare::decode_pubkey(Algorithm::P256, &rec.pubkey) else {
                return false;
            };
            let key = [&[4u8][..], &x, &y].concat();
            ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, key)
                .verify(&rec.msg, &rec.sig)
                .is_ok()
        }
    }
}

fn cross_check(alg: Algorithm) {
    let spec = GenSpec {
        alg,
        seed: 0x5eed ^ alg as u64,
        invalid_ratio: 0.35,
        msg_len: 48,
    };
    let generated: Vec<GeneratedRecord> = (0..RECORDS).map(|i| record(&spec, i)).collect();
    // Half the records carry the message (we hash), half the digest.
    let records: Vec<_> = generated
        .iter()
        .enumerate()
        .map(|(i, g)| Ok(g.to_verify_record(i % 2 == 0)))
        .collect();
    let registry = cpu_registry();
    let preparer = Preparer::new();
    for low_s in [false, true] {
        if low_s && alg == Algorithm::Sm2 {
            continue;
        }
        let outcome = verify_records(&registry, "cpu", low_s, &preparer, &records).unwrap();
        let mut kinds = std::collections::HashMap::new();
        for (i, (g, verdict)) in generated.iter().zip(&outcome.verdicts).enumerate() {
            let mut want = reference_verdict(g);
            if low_s {
                want &= !alg.curve().is_high_s(g.sig[32..].try_into().unwrap());
            }
            let got = *verdict == Verdict::Valid;
            assert_eq!(
                got, want,
                "{alg} record {i} ({:?}, low_s {low_s}): ours {verdict:?}",
                g.corruption
            );
            if !low_s {
                assert_eq!(
                    want,
                    g.expect_valid(),
                    "{alg} record {i}: generator and reference disagree"
                );
            }
            *kinds.entry(format!("{:?}", g.corruption)).or_insert(0) += 1;
        }
        // Every kind of corruption a line can carry was exercised.
        let lines = chainsig_testkit::corruption::Corruption::kinds(
            chainsig_testkit::corruption::Form::Lines,
        );
        assert_eq!(kinds.len(), lines.len() + 1, "{alg}: {kinds:?}");
        assert!(kinds["None"] > RECORDS as usize / 2);
    }
}

#[test]
fn sm2_agrees_with_rustcrypto_sm2() {
    cross_check(Algorithm::Sm2);
}

#[test]
fn secp256k1_agrees_with_k256() {
    cross_check(Algorithm::Secp256k1);
}

#[test]
fn p256_agrees_with_ring() {
    cross_check(Algorithm::P256);
}

#[test]
fn generator_is_deterministic_and_varied() {
    let spec = GenSpec {
        alg: Algorithm::P256,
        seed: 1,
        invalid_ratio: 0.5,
        msg_len: 16,
    };
    assert_eq!(record(&spec, 3), record(&spec, 3));
    assert_ne!(record(&spec, 3).sig, record(&spec, 4).sig);
    let other_seed = GenSpec { seed: 2, ..spec };
    assert_ne!(record(&spec, 3).pubkey, record(&other_seed, 3).pubkey);
    let corrupted = (0..200)
        .filter(|&i| record(&spec, i).corruption != Corruption::None)
        .count();
    assert!((60..140).contains(&corrupted), "{corrupted}");
}

/// An accelerator stand-in: verifies on the CPU backend and counts what reaches it, so the test
/// sees which path the pipeline chose. Its `verify_messages` is the trait's default (host SM3).
struct CountingAccelerator {
    cpu: std::sync::Arc<dyn chainsig_core::Backend>,
    message_records: std::sync::atomic::AtomicUsize,
    digest_records: std::sync::atomic::AtomicUsize,
}

impl chainsig_core::Backend for CountingAccelerator {
    fn name(&self) -> &str {
        "counting"
    }
    fn supports(&self, alg: Algorithm) -> bool {
        alg == Algorithm::Sm2
    }
    fn verify_batch(
        &self,
        batch: &chainsig_core::Batch,
    ) -> Result<chainsig_core::Bitmap, chainsig_core::BackendError> {
        self.digest_records
            .fetch_add(batch.len(), std::sync::atomic::Ordering::Relaxed);
        self.cpu.verify_batch(batch)
    }
    fn verify_messages(
        &self,
        batch: &chainsig_core::messages::MessageBatch,
    ) -> Result<chainsig_core::Bitmap, chainsig_core::BackendError> {
        self.message_records
            .fetch_add(batch.len(), std::sync::atomic::Ordering::Relaxed);
        self.cpu.verify_batch(&batch.to_digest_batch())
    }
}

/// With an accelerator picked, SM2 records that carry messages go to it unhashed (with Z_A) and
/// the rest as digests; the verdicts, in input order, are the reference's either way, and a bad
/// record keeps its error in its own place.
#[test]
fn sm2_messages_reach_an_accelerator_unhashed_with_the_references_verdicts() {
    use std::sync::atomic::Ordering;
    let spec = GenSpec {
        alg: Algorithm::Sm2,
        seed: 0x5eed3,
        invalid_ratio: 0.35,
        msg_len: 77,
    };
    let generated: Vec<GeneratedRecord> = (0..3000).map(|i| record(&spec, i)).collect();
    let mut records: Vec<_> = generated
        .iter()
        .enumerate()
        .map(|(i, g)| Ok(g.to_verify_record(i % 3 != 0)))
        .collect();
    records[1] = Err(chainsig_core::RecordError::new("r", "not hex"));
    let mut registry = cpu_registry();
    let accel = std::sync::Arc::new(CountingAccelerator {
        cpu: registry.get("cpu").unwrap(),
        message_records: 0.into(),
        digest_records: 0.into(),
    });
    registry.register(accel.clone());
    registry.set_gpu_crossover(1);
    let outcome = verify_records(&registry, "auto", false, &Preparer::new(), &records).unwrap();
    assert!(matches!(&outcome.verdicts[1], Verdict::Error(e) if e.to_string().contains("not hex")));
    for (i, (g, verdict)) in generated.iter().zip(&outcome.verdicts).enumerate() {
        if i == 1 {
            continue;
        }
        let want = reference_verdict(g);
        // A key that fails to decode is an error here and a rejection for the reference.
        let got = *verdict == Verdict::Valid;
        assert_eq!(
            got, want,
            "record {i} ({:?}): ours {verdict:?}",
            g.corruption
        );
    }
    let messages = accel.message_records.load(Ordering::Relaxed);
    let digests = accel.digest_records.load(Ordering::Relaxed);
    let prepared = |with_msg: bool| {
        (0..3000usize)
            .filter(|i| (i % 3 != 0) == with_msg)
            .filter(|&i| !matches!(outcome.verdicts[i], Verdict::Error(_)))
            .count()
    };
    assert_eq!(
        messages,
        prepared(true),
        "records with messages sent unhashed"
    );
    assert_eq!(
        digests,
        prepared(false),
        "records with digests sent as digests"
    );
    assert!(outcome
        .batches
        .iter()
        .all(|(_, used, _)| used == "counting"));
}
