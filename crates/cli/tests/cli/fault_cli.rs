//! A failing accelerator under the command line: the `CHAINSIG_FAULT` switch of test builds
//! (`chainsig_cpu::cpu_registry`) adds a backend `fault` that works as the CPU except for the
//! calls its plan fails, panics or answers short. Under `auto` every failed chunk is verified
//! again on the CPU, so every record is answered once, in order, with the verdict it should
//! have; asked for by name, the failing backend stops the run with an error (exit 2, as every
//! error of the command line) after the chunks before it, whose answers are whole lines.

use crate::common::{self, chainsig};
use std::process::{Command, Output};

/// 300 secp256k1 records (a third of them invalid) in a file, and their expected verdicts.
fn records(dir: &common::TempDir) -> (std::path::PathBuf, Vec<bool>) {
    let gen = chainsig(
        &[
            "gen",
            "--alg",
            "secp256k1",
            "--count",
            "300",
            "--invalid-ratio",
            "0.3",
            "--seed",
            "30",
        ],
        "",
    );
    assert!(gen.status.success());
    let text = String::from_utf8(gen.stdout).unwrap();
    let expected = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["expect"] == true)
        .collect();
    (dir.file("records.jsonl", &text), expected)
}

/// `chainsig verify --chunk 50 FILE --backend BACKEND` with `CHAINSIG_FAULT=plan`: from a
/// file, chunks are full (one algorithm per chunk); two chunks are verified at once, so the
/// backend's calls come in chunk order only roughly.
fn verify_with_faults(file: &std::path::Path, backend: &str, plan: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chainsig"))
        .args(["verify", "--chunk", "50", "--backend", backend])
        .arg(file)
        .env("CHAINSIG_FAULT", plan)
        .output()
        .unwrap()
}

/// The verdicts of `out`, checked to be whole lines numbered 1, 2, 3, … with nothing after.
fn verdicts(out: &Output) -> Vec<bool> {
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "a torn last line");
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["line"], i as u64 + 1, "{line}");
            v["valid"].as_bool().unwrap_or_else(|| panic!("{line}"))
        })
        .collect()
}

#[test]
fn under_auto_every_failed_chunk_is_verified_again_on_the_cpu() {
    let dir = common::TempDir::new("fault-auto");
    let (file, expected) = records(&dir);
    // Six chunks, six calls: one verified by `fault`; the others fail, answer short or panic.
    let out = verify_with_faults(&file, "auto", "2,short:3,4-5,panic:6");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert_eq!(verdicts(&out), expected);
    assert!(
        log.contains("secp256k1:cpu=250,secp256k1:fault=50"),
        "{log}"
    );
}

#[test]
fn a_failing_backend_asked_for_by_name_stops_after_whole_answers() {
    let dir = common::TempDir::new("fault-named");
    let (file, expected) = records(&dir);
    let out = verify_with_faults(&file, "fault", "3");
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{log}");
    assert!(
        log.contains("device error in backend fault: injected fault on call 3"),
        "{log}"
    );
    // Whole chunks answered in order, up to the one whose call failed, and nothing after it.
    // `verify` verifies two chunks at once, so which chunk made the third call depends on
    // timing (usually the third or the fourth): the answers are the chunks before it.
    let got = verdicts(&out);
    assert!(
        got.len() % 50 == 0 && got.len() < expected.len(),
        "{} answers",
        got.len()
    );
    assert_eq!(got, expected[..got.len()]);

    let out = verify_with_faults(&file, "fault", "panic:1");
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{log}");
    assert!(log.contains("panicked"), "{log}");
    // The first call was the first chunk's or the second's: nothing, or the first chunk whole.
    let got = verdicts(&out);
    assert!(got.is_empty() || got.len() == 50, "{} answers", got.len());
    assert_eq!(got, expected[..got.len()]);

    // A plan that does not read is named, and nothing is verified.
    let out = verify_with_faults(&file, "fault", "sometimes");
    let log = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{log}");
    assert!(
        log.contains("CHAINSIG_FAULT: fault plan term \"sometimes\""),
        "{log}"
    );
    assert!(out.stdout.is_empty());
}
