//! `chainsig verify --rows`: packed binary rows give the verdicts their JSON Lines form gives,
//! record by record, each row under its own low-s rule; hostile rows are answered, not fatal.

use crate::common::{chainsig, TempDir};
use chainsig_core::rows;
use std::process::{Command, Stdio};

fn answers(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON answer"))
        .collect()
}

/// `verify --rows` with the file as standard input.
fn verify_rows_stdin(path: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_chainsig"))
        .args(["verify", "--rows", "--backend", "cpu"])
        .stdin(Stdio::from(std::fs::File::open(path).unwrap()))
        .output()
        .unwrap()
}

fn gen(dir: &TempDir, alg: &str, rows: bool) -> std::path::PathBuf {
    let path = dir.path(&format!("{alg}-{rows}"));
    let mut args = vec![
        "gen",
        "--alg",
        alg,
        "--count",
        "700",
        "--seed",
        "5",
        "--invalid-ratio",
        "0.3",
    ];
    args.extend(["--msg-len", "40", "--out", path.to_str().unwrap()]);
    if rows {
        args.push("--rows");
    }
    let out = chainsig(&args, "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

#[test]
fn rows_verify_as_their_json_lines_do() {
    let dir = TempDir::new("verify-rows");
    let mut all_rows = Vec::new();
    let mut all_json = Vec::new();
    for alg in ["sm2", "secp256k1", "p256"] {
        all_rows.extend(std::fs::read(gen(&dir, alg, true)).unwrap());
        all_json.extend(std::fs::read(gen(&dir, alg, false)).unwrap());
    }
    // Three algorithms in one file, as a node's batch may mix them.
    let rows_path = dir.path("mixed.rows");
    std::fs::write(&rows_path, &all_rows).unwrap();
    let json_path = dir.path("mixed.jsonl");
    std::fs::write(&json_path, &all_json).unwrap();
    let expect: Vec<bool> = String::from_utf8(all_json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["expect"] == true)
        .collect();
    let from_json = chainsig(
        &["verify", "--backend", "cpu", json_path.to_str().unwrap()],
        "",
    );
    let from_rows = chainsig(
        &[
            "verify",
            "--rows",
            "--backend",
            "cpu",
            "--chunk",
            "333",
            rows_path.to_str().unwrap(),
        ],
        "",
    );
    assert!(
        from_rows.status.success(),
        "{}",
        String::from_utf8_lossy(&from_rows.stderr)
    );
    let (json, got) = (answers(&from_json.stdout), answers(&from_rows.stdout));
    assert_eq!(got.len(), 2100);
    let mut valid = 0;
    for (k, (row, line)) in got.iter().zip(&json).enumerate() {
        assert_eq!(row["record"], k, "{row}");
        assert_eq!(line["line"], k + 1);
        assert_eq!(
            row["valid"], line["valid"],
            "record {k}: {row} against {line}"
        );
        assert_eq!(row["valid"] == true, expect[k], "record {k}: {row}");
        valid += usize::from(row["valid"] == true);
    }
    assert!((1200..1700).contains(&valid), "{valid} valid of 2100");
    // Standard input reads the same rows the same way.
    let piped = verify_rows_stdin(&rows_path);
    assert_eq!(piped.stdout, from_rows.stdout);
    // The benchmark of the same path checks every run's verdicts against the backend's alone.
    let bench = chainsig(
        &[
            "bench",
            "--from-file",
            rows_path.to_str().unwrap(),
            "--rows",
            "--backend",
            "cpu",
        ],
        "",
    );
    let report = String::from_utf8_lossy(&bench.stdout);
    assert!(
        bench.status.success(),
        "{}",
        String::from_utf8_lossy(&bench.stderr)
    );
    assert!(
        report.contains(&format!("2100 records ({valid} valid")),
        "{report}"
    );
    assert!(
        report.contains("user path") && report.contains("backend only"),
        "{report}"
    );
    // A row carries its own algorithm and rules: the JSON defaults are refused beside --rows.
    let refused = chainsig(
        &["verify", "--rows", "--low-s", rows_path.to_str().unwrap()],
        "",
    );
    assert!(!refused.status.success());
}

/// Where s lies in a signature row (the key's length is byte 10 of the header).
fn s_at(row: &[u8]) -> usize {
    rows::HEADER_LEN + row[10] as usize + 32
}

/// Whether the row's s is above n/2 (secp256k1).
fn s_is_high(row: &[u8]) -> bool {
    const HALF: [u8; 32] = [
        0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x5d, 0x57, 0x6e, 0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b,
        0x20, 0xa0,
    ];
    row[s_at(row)..s_at(row) + 32] > HALF[..]
}

/// The s of a row replaced by n − s: the same signature's twin.
fn twin_of(row: &mut [u8]) {
    const N: [u8; 32] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xfe, 0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36,
        0x41, 0x41,
    ];
    let at = s_at(row);
    let s = &mut row[at..at + 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = N[i] as i16 - s[i] as i16 - borrow;
        borrow = i16::from(d < 0);
        s[i] = d.rem_euclid(256) as u8;
    }
}

#[test]
fn each_row_keeps_its_rule_and_hostile_rows_cost_only_themselves() {
    let dir = TempDir::new("verify-rows-hostile");
    let secp = std::fs::read(gen(&dir, "secp256k1", true)).unwrap();
    // The first honest record of that seed (by the JSON form's `expect`): its row.
    let json = std::fs::read_to_string(gen(&dir, "secp256k1", false)).unwrap();
    let honest = json
        .lines()
        .position(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["expect"] == true)
        .unwrap();
    let mut at = 0;
    for _ in 0..honest {
        at += rows::frame(&secp[at..]).unwrap();
    }
    let good = secp[at..at + rows::frame(&secp[at..]).unwrap()].to_vec();
    // The signature with s above n/2, whichever of s and n − s the signer gave.
    let mut high = good.clone();
    if !s_is_high(&high) {
        twin_of(&mut high);
    }
    assert!(s_is_high(&high));
    let mut high_low_s = high.clone();
    high_low_s[1] |= rows::FLAG_LOW_S;
    let mut bad_flags = good.clone();
    bad_flags[1] |= 0x80;
    let mut bad_padding = good.clone();
    *bad_padding.last_mut().unwrap() = 1;
    // A row that announces 17 MiB of message: read past, and the row after it still read.
    let mut long = good[..rows::HEADER_LEN].to_vec();
    long[0] = rows::ALG_SECP256K1;
    long[1] = rows::FLAG_MESSAGE;
    long[4..8].copy_from_slice(&(17u32 << 20).to_le_bytes());
    let long_len = rows::announced_len(&long).unwrap();
    long.resize(long_len, 0);
    let mut file = Vec::new();
    for row in [
        &good,
        &high,
        &high_low_s,
        &bad_flags,
        &bad_padding,
        &long,
        &good,
    ] {
        file.extend_from_slice(row);
    }
    // Ends inside a row.
    file.extend_from_slice(&good[..50]);
    let path = dir.path("hostile.rows");
    std::fs::write(&path, &file).unwrap();
    for out in [
        chainsig(
            &[
                "verify",
                "--rows",
                "--backend",
                "cpu",
                path.to_str().unwrap(),
            ],
            "",
        ),
        verify_rows_stdin(&path),
    ] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = answers(&out.stdout);
        assert_eq!(got.len(), 8, "{got:?}");
        assert_eq!(got[0]["valid"], true);
        assert_eq!(
            got[1]["valid"], true,
            "s above n/2 verifies without the row's low-s flag"
        );
        assert_eq!(got[2]["valid"], false, "and not with it");
        assert!(
            got[3]["error"]
                .as_str()
                .unwrap()
                .contains("unknown flag bits 0x80"),
            "{}",
            got[3]
        );
        assert!(
            got[4]["error"].as_str().unwrap().contains("padding"),
            "{}",
            got[4]
        );
        assert!(
            got[5]["error"]
                .as_str()
                .unwrap()
                .contains("longer than 16 MiB"),
            "{}",
            got[5]
        );
        assert_eq!(got[6]["valid"], true);
        let last = got[7]["error"].as_str().unwrap();
        assert!(
            last.contains("truncated row: the input ends 50 bytes into a row of"),
            "{last}"
        );
        for (k, answer) in got.iter().enumerate() {
            assert_eq!(answer["record"], k);
        }
    }
}
