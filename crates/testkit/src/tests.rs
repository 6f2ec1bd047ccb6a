//! The kit checked against itself and RustCrypto: verdicts by construction agree with the
//! reference, every kind is drawn, the sets hold their edge cases, and a seed names one data set.

use crate::corruption::{Corruption, Form};
use crate::curves::{reference_verdicts, reference_verify_sm2_message};
use crate::records::{make_record, Keys};
use crate::{pool_public_keys, record, record_in_pool, sets, GenSpec};
use chainsig_core::Algorithm;
use std::collections::HashSet;

const ALGS: [Algorithm; 3] = [Algorithm::Sm2, Algorithm::Secp256k1, Algorithm::P256];

fn spec(alg: Algorithm, seed: u64) -> GenSpec {
    GenSpec {
        alg,
        seed,
        invalid_ratio: 0.6,
        msg_len: 40,
    }
}

#[test]
fn every_record_kind_gets_the_reference_verdict_it_expects() {
    for alg in ALGS {
        let spec = spec(alg, 11);
        let mut kinds = HashSet::new();
        for i in 0..400 {
            let g = record(&spec, i);
            let reference = reference_verdicts(alg, &g.item());
            assert_eq!(
                reference.any_s,
                g.expect_valid(),
                "{alg} record {i}: {:?}",
                g.corruption
            );
            if alg == Algorithm::Sm2 {
                // RustCrypto computes Z_A and e from the key and message itself.
                let from_message = reference_verify_sm2_message(&g.sm2_id, &g.msg, &g.item());
                assert_eq!(
                    from_message,
                    g.expect_valid(),
                    "SM2 record {i} from its message"
                );
            }
            kinds.insert(g.corruption);
        }
        assert_eq!(
            kinds.len(),
            Corruption::kinds(Form::Lines).len() + 1,
            "{alg}: {kinds:?}"
        );
    }
}

#[test]
fn digest_and_message_forms_draw_their_own_kinds_and_are_judged_by_the_reference() {
    let spec = spec(Algorithm::Sm2, 12);
    let set = crate::records::signer_set(&spec, 16);
    for form in [Form::Digests, Form::Sm2Messages] {
        let mut kinds = HashSet::new();
        for i in 0..500 {
            let g = make_record(&spec, i, Keys::Made(&set), form);
            let valid = if form == Form::Sm2Messages {
                reference_verify_sm2_message(&g.sm2_id, &g.msg, &g.item())
            } else {
                reference_verdicts(Algorithm::Sm2, &g.item()).any_s
            };
            assert_eq!(
                valid,
                g.expect_valid(),
                "{form:?} record {i}: {:?}",
                g.corruption
            );
            kinds.insert(g.corruption);
        }
        assert_eq!(
            kinds.len(),
            Corruption::kinds(form).len() + 1,
            "{form:?}: {kinds:?}"
        );
    }
}

#[test]
fn a_seed_names_one_data_set() {
    for alg in ALGS {
        let a = spec(alg, 5);
        assert_eq!(record(&a, 3), record(&a, 3));
        assert_ne!(record(&a, 3).sig, record(&a, 4).sig);
        assert_ne!(record(&a, 3).pubkey, record(&spec(alg, 6), 3).pubkey);
        assert_eq!(record(&a, 9).to_json_line(9), record(&a, 9).to_json_line(9));
    }
}

#[test]
fn pool_records_are_signed_by_keys_of_the_set() {
    let spec = spec(Algorithm::Sm2, 77);
    let keys = pool_public_keys(&spec, 5);
    let set: HashSet<Vec<u8>> = keys.iter().map(|k| k[1..].to_vec()).collect();
    assert_eq!(set.len(), 5, "distinct keys");
    let mut seen = HashSet::new();
    for i in 0..120 {
        let g = record_in_pool(&spec, i, 5);
        let key = [g.px, g.py].concat();
        if set.contains(&key) {
            seen.insert(key);
        } else {
            assert_eq!(g.corruption, Corruption::FlipKey, "record {i}");
        }
    }
    assert_eq!(seen.len(), 5);
}

#[test]
fn sets_start_with_their_edge_cases_and_mix_the_verdicts() {
    let (sm2, verdicts) = sets::generate(60, 8, 300, 1);
    assert_eq!(sm2.len(), 60);
    assert!(verdicts[0], "the honest base record");
    assert!(
        verdicts[1..8].iter().all(|v| !v),
        "r or s out of range, t = 0"
    );
    assert!(
        verdicts[12..17].iter().all(|v| *v),
        "honest signatures, digests 0 and above n"
    );
    for alg in [Algorithm::P256, Algorithm::Secp256k1] {
        let (records, v) = sets::generate_ecdsa(alg, 400, 16, 250, 2);
        assert_eq!(records.len(), 400);
        let any: Vec<bool> = v.iter().map(|v| v.any_s).collect();
        let want = [
            true, false, false, false, false, false, false, true, false, false, false, false, true,
            true, true, true, true, true, true, true, true,
        ];
        assert_eq!(&any[..21], &want, "{alg}");
        assert!(!v[7].low_s, "{alg}: the high s is refused under low-s");
        let high_only = v.iter().filter(|v| v.any_s && !v.low_s).count();
        let invalid = v.iter().filter(|v| !v.any_s).count();
        assert!(
            high_only > 40 && invalid > 50,
            "{alg}: {high_only} high-s, {invalid} invalid"
        );
    }
    let (messages, ok) = sets::generate_messages(300, 16, 300, 3);
    let ids: HashSet<&[u8]> = messages.iter().map(|m| m.id.as_slice()).collect();
    assert_eq!(ids.len(), 2, "both identifiers");
    let invalid = ok.iter().filter(|v| !**v).count();
    assert!((50..150).contains(&invalid), "{invalid} invalid");
}
