//! All 300 known-answer records (100 per parameter set), re-derived from their seeds.

use chainsig_ctru::kat::{check_all, parse_rsp};
use chainsig_ctru::ParamSet;

fn run(set: ParamSet, file: &str) {
    let Some(dir) = chainsig_core::vectors::dir("ctru-prime") else {
        return;
    };
    let text = std::fs::read_to_string(dir.join(file)).expect("readable KAT file");
    let records = parse_rsp(&text).expect("well-formed KAT file");
    assert_eq!(records.len(), 100, "{file}: record count");
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.count, i as u64);
    }
    let report = check_all(set, &records);
    assert!(report.failed.is_empty(), "{set}: {:?}", report.failed);
    assert_eq!(report.passed, 100);
}

#[test]
fn kat_653() {
    run(ParamSet::Ctru653, "PQCkemKAT_ctruprime653.rsp");
}

#[test]
fn kat_761() {
    run(ParamSet::Ctru761, "PQCkemKAT_ctruprime761.rsp");
}

#[test]
fn kat_1277() {
    run(ParamSet::Ctru1277, "PQCkemKAT_ctruprime1277.rsp");
}

#[test]
fn kat_with_the_wrong_parameter_set_fails_every_record() {
    let Some(dir) = chainsig_core::vectors::dir("ctru-prime") else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("PQCkemKAT_ctruprime761.rsp")).unwrap();
    let records = parse_rsp(&text).unwrap();
    let report = check_all(ParamSet::Ctru653, &records[..3]);
    assert_eq!(report.passed, 0);
    assert_eq!(report.failed.len(), 3);
}
