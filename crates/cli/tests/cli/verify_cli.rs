//! The `chainsig` binary end to end: gen → verify round trips, malformed lines, recover, bench.

use crate::common;
use common::chainsig;

fn json_lines(out: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn gen_then_verify_round_trips_for_every_algorithm() {
    for alg in ["sm2", "secp256k1", "p256"] {
        let gen = chainsig(
            &[
                "gen",
                "--alg",
                alg,
                "--count",
                "300",
                "--invalid-ratio",
                "0.3",
                "--seed",
                "9",
            ],
            "",
        );
        assert!(
            gen.status.success(),
            "{}",
            String::from_utf8_lossy(&gen.stderr)
        );
        let records = String::from_utf8(gen.stdout).unwrap();
        // Same seed, same file.
        let again = chainsig(
            &[
                "gen",
                "--alg",
                alg,
                "--count",
                "300",
                "--invalid-ratio",
                "0.3",
                "--seed",
                "9",
            ],
            "",
        );
        assert_eq!(records.as_bytes(), again.stdout.as_slice());
        let expected: Vec<bool> = json_lines(records.as_bytes())
            .iter()
            .map(|r| r["expect"].as_bool().unwrap())
            .collect();
        assert!(expected.iter().filter(|&&v| !v).count() > 50);

        // Small chunks: the streaming path must keep order across chunk boundaries.
        let verify = chainsig(&["verify", "--backend", "cpu", "--chunk", "37"], &records);
        assert!(verify.status.success());
        let verdicts = json_lines(&verify.stdout);
        assert_eq!(verdicts.len(), 300);
        for (i, (v, want)) in verdicts.iter().zip(&expected).enumerate() {
            assert_eq!(v["line"], i as u64 + 1);
            assert_eq!(
                v["valid"].as_bool(),
                Some(*want),
                "{alg} line {}: {v}",
                i + 1
            );
        }
        let summary = String::from_utf8_lossy(&verify.stderr);
        assert!(summary.contains("300 records"), "{summary}");
    }
}

#[test]
fn malformed_lines_become_errors_and_the_rest_is_verified() {
    let gen = chainsig(
        &[
            "gen",
            "--alg",
            "secp256k1",
            "--count",
            "2",
            "--invalid-ratio",
            "0",
        ],
        "",
    );
    let good: Vec<&str> = std::str::from_utf8(&gen.stdout).unwrap().lines().collect();
    let key_off_curve = format!("04{}", "11".repeat(64));
    let input = [
        good[0].to_string(),
        "{not json".to_string(),
        r#"{"alg":"secp256k1","pubkey":"zz","msg":"","sig":"00"}"#.to_string(),
        format!(
            r#"{{"alg":"secp256k1","pubkey":"{key_off_curve}","msg":"","sig":"{}"}}"#,
            "11".repeat(64)
        ),
        format!(
            r#"{{"alg":"p256","pubkey":"{key_off_curve}","msg":"","sig_der":"3006020101020101ff"}}"#
        ),
        format!(
            r#"{{"alg":"sm2","pubkey":"02","msg":"00","sig":"{}"}}"#,
            "11".repeat(64)
        ),
        String::new(),
        good[1].to_string(),
    ]
    .join("\n");
    let out = chainsig(&["verify"], &input);
    assert!(out.status.success());
    let v = json_lines(&out.stdout);
    assert_eq!(v.len(), 8);
    assert_eq!(v[0]["valid"], true);
    assert!(v[1]["error"].as_str().unwrap().starts_with("bad JSON"));
    assert!(v[2]["error"]
        .as_str()
        .unwrap()
        .starts_with("pubkey: bad hex"));
    assert_eq!(v[3]["error"], "pubkey: point is not on the curve");
    assert!(
        v[4]["error"].as_str().unwrap().starts_with("sig_der:"),
        "{}",
        v[4]
    );
    assert!(
        v[5]["error"].as_str().unwrap().starts_with("pubkey:"),
        "{}",
        v[5]
    );
    assert!(v[6]["error"].as_str().unwrap().starts_with("bad JSON"));
    assert_eq!(v[7]["valid"], true);
    assert_eq!(v[7]["line"], 8);
}

/// A file named by path is read in byte ranges by several threads (`input::ranges`): its answers
/// must be the answers for the same bytes on standard input, line for line, across ranges of
/// 1 MiB and more, with a line past the 16 MiB limit refused by number and the rest verified.
#[test]
fn a_file_read_in_ranges_answers_as_standard_input_does() {
    let gen = chainsig(
        &[
            "gen",
            "--alg",
            "secp256k1",
            "--count",
            "6000",
            "--seed",
            "5",
        ],
        "",
    );
    assert!(gen.status.success());
    let records = String::from_utf8(gen.stdout).unwrap();
    let mut lines: Vec<String> = records.lines().map(str::to_string).collect();
    // A line of 17 MiB (a message far past the limit) between records, and a blank line.
    lines.insert(
        4000,
        format!(r#"{{"alg":"secp256k1","msg":"{}"}}"#, "ab".repeat(17 << 19)),
    );
    lines.insert(10, String::new());
    let text = lines.join("\n") + "\n";
    assert!(text.len() > (19 << 20), "the file spans several ranges");
    let dir = common::TempDir::new("ranges");
    let file = dir.file("records.jsonl", &text);
    for chunk in ["65536", "777"] {
        let from_file = chainsig(
            &[
                "verify",
                "--backend",
                "cpu",
                "--chunk",
                chunk,
                file.to_str().unwrap(),
            ],
            "",
        );
        let from_stdin = chainsig(&["verify", "--backend", "cpu", "--chunk", chunk], &text);
        assert!(from_file.status.success() && from_stdin.status.success());
        assert!(
            from_file.stdout == from_stdin.stdout,
            "--chunk {chunk}: the answers differ"
        );
        let verdicts = json_lines(&from_file.stdout);
        assert_eq!(verdicts.len(), 6002);
        for (i, v) in verdicts.iter().enumerate() {
            assert_eq!(v["line"], i as u64 + 1);
        }
        assert!(verdicts[4001]["error"]
            .as_str()
            .unwrap()
            .starts_with("line is longer than 16 MiB"));
        assert!(verdicts[10]["error"]
            .as_str()
            .unwrap()
            .starts_with("bad JSON"));
        let valid = verdicts.iter().filter(|v| v["valid"] == true).count();
        assert!(valid > 5000, "{valid} valid");
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(
        chainsig(&["verify", "/no/such/file"], "").status.code(),
        Some(2)
    );
    assert_eq!(
        chainsig(&["verify", "--backend", "tpu"], "").status.code(),
        Some(2)
    );
    assert_eq!(
        chainsig(&["gen", "--alg", "rsa", "--count", "1"], "")
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn cuda_backend_says_why_it_cannot_run() {
    let gen = chainsig(&["gen", "--alg", "sm2", "--count", "3"], "");
    let out = chainsig(
        &["verify", "--backend", "cuda"],
        std::str::from_utf8(&gen.stdout).unwrap(),
    );
    if out.status.success() {
        // A GPU is present: the verdicts must be there.
        assert_eq!(json_lines(&out.stdout).len(), 3);
    } else {
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("backend cuda is unavailable"), "{err}");
        // auto falls back to the CPU.
        let auto = chainsig(&["verify"], std::str::from_utf8(&gen.stdout).unwrap());
        assert_eq!(json_lines(&auto.stdout).len(), 3);
    }
}

#[test]
fn a_misspelt_cuda_override_is_named() {
    // CHAINSIG_CUDA_CONFIG is read before any device is looked for, so the answer is the same
    // with or without a GPU: the backend is unavailable, and the message names the variable and
    // the unknown field.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chainsig"))
        .args(["verify", "--backend", "cuda"])
        .env("CHAINSIG_CUDA_CONFIG", r#"{"blok_size": 256}"#)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("binary runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("CHAINSIG_CUDA_CONFIG"), "{err}");
    assert!(err.contains("blok_size"), "{err}");
}

#[test]
fn summary_only_and_low_s() {
    // libsecp256k1 makes low-s signatures; their high-s twins pass plain ECDSA but not --low-s.
    let gen = chainsig(
        &[
            "gen",
            "--alg",
            "secp256k1",
            "--count",
            "1",
            "--invalid-ratio",
            "0",
        ],
        "",
    );
    let mut rec: serde_json::Value = serde_json::from_slice(&gen.stdout).unwrap();
    let sig = hex::decode(rec["sig"].as_str().unwrap()).unwrap();
    let n = chainsig_core::curve::SECP256K1.n;
    let mut high = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = n[i] as i16 - sig[32 + i] as i16 - borrow;
        high[i] = d.rem_euclid(256) as u8;
        borrow = (d < 0) as i16;
    }
    rec["sig"] = serde_json::json!(format!("{}{}", hex::encode(&sig[..32]), hex::encode(high)));
    let line = rec.to_string();
    assert_eq!(
        json_lines(&chainsig(&["verify"], &line).stdout)[0]["valid"],
        true
    );
    assert_eq!(
        json_lines(&chainsig(&["verify", "--low-s"], &line).stdout)[0]["valid"],
        false
    );
    let summary = chainsig(&["verify", "--summary"], &line);
    assert!(summary.stdout.is_empty());
    assert!(String::from_utf8_lossy(&summary.stderr).contains("1 valid"));
}

#[test]
fn recover_signatures_and_transactions() {
    let eip155 = "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";
    let input = format!(
        "{}\n{}\n{}\n{}\n",
        serde_json::json!({"tx": eip155}),
        serde_json::json!({
            "digest": "daf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53",
            "sig": "28ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa63627667cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83",
            "v": 27
        }),
        serde_json::json!({"tx": "0x02c0"}),
        serde_json::json!({"digest": "00", "sig": "00", "v": 27}),
    );
    let out = chainsig(&["recover"], &input);
    assert!(out.status.success());
    let v = json_lines(&out.stdout);
    assert_eq!(
        v[0]["address"],
        "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
    );
    assert_eq!(v[1]["address"], v[0]["address"]);
    assert_eq!(v[1]["pubkey"], v[0]["pubkey"]);
    assert!(v[2]["error"].is_string());
    assert!(v[3]["error"].as_str().unwrap().starts_with("digest:"));
}

/// The rows `chainsig bench --backend cpu --repeats 1 ARGS --json JSON` writes.
fn bench_rows(args: &[&str], json: &std::path::Path) -> Vec<serde_json::Value> {
    let mut all = vec!["bench", "--backend", "cpu", "--repeats", "1"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", json.to_str().unwrap()]);
    let out = chainsig(&all, "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn bench_runs_and_writes_json() {
    let dir = std::env::temp_dir().join(format!("chainsig-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows = bench_rows(&["--sizes", "64,128"], &dir.join("bench.json"));
    assert_eq!(rows.len(), 6);
    assert!(rows
        .iter()
        .all(|r| r["throughput_per_second"].as_f64().unwrap() > 0.0));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn known_signers_from_gen_to_verify_and_bench() {
    let dir = common::TempDir::new("signers");
    let keys = dir.path("keys.txt");
    let keys_arg = keys.to_str().unwrap();
    let gen = chainsig(
        &[
            "gen",
            "--alg",
            "sm2",
            "--count",
            "200",
            "--invalid-ratio",
            "0.3",
            "--signers",
            "5",
            "--signer-keys",
            keys_arg,
        ],
        "",
    );
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let key_lines: Vec<String> = std::fs::read_to_string(&keys)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(key_lines.len(), 5);
    assert!(key_lines
        .iter()
        .all(|k| k.len() == 130 && k.starts_with("04")));
    // Every valid record is signed by a key of the set (compressed or not: compare x).
    let records = json_lines(&gen.stdout);
    let xs: Vec<&str> = key_lines.iter().map(|k| &k[2..66]).collect();
    for (i, r) in records.iter().enumerate() {
        if r["expect"].as_bool().unwrap() {
            let key = r["pubkey"].as_str().unwrap();
            assert!(
                xs.contains(&&key[2..66]),
                "record {i} signed outside the set"
            );
        }
    }
    let text = String::from_utf8(gen.stdout).unwrap();
    let verify = chainsig(
        &["verify", "--backend", "cpu", "--signers", keys_arg],
        &text,
    );
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    let verdicts = json_lines(&verify.stdout);
    assert_eq!(verdicts.len(), records.len());
    for (i, (v, r)) in verdicts.iter().zip(&records).enumerate() {
        assert_eq!(v["line"], i + 1);
        assert_eq!(v["valid"], r["expect"], "line {}", i + 1);
    }

    // A bad key is refused by its line, before any record is read.
    let bad = dir.file(
        "bad.txt",
        &format!("# ours\n{}\n04{}\n", key_lines[0], "11".repeat(64)),
    );
    let out = chainsig(&["verify", "--signers", bad.to_str().unwrap()], &text);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 3: pubkey"), "{err}");
    let out = chainsig(
        &[
            "gen",
            "--alg",
            "sm2",
            "--count",
            "1",
            "--signer-keys",
            keys_arg,
        ],
        "",
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--signer-keys needs --signers"));

    let rows = bench_rows(
        &["--alg", "sm2", "--signers", "3", "--sizes", "64"],
        &dir.path("bench.json"),
    );
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0]["signers"].as_u64(), rows[0]["batch"].as_u64()),
        (Some(3), Some(64))
    );
}

/// Runs `chainsig ARGS` and checks that it refuses with exit 2 and a message naming `needle`.
fn refused(args: &[&str], needle: &str) {
    let out = chainsig(args, "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

#[test]
fn sizes_users_set_are_bounded() {
    // Each of these once aborted on allocation, panicked or silently did nothing.
    for chunk in ["0", "1048577", "1000000000", "18446744073709551615"] {
        refused(&["verify", "--chunk", chunk], "--chunk");
    }
    refused(&["verify", "--chunk=-1"], "--chunk");
    refused(&["verify", "--chunk", "1000000000"], "1..=1048576");
    for len in ["1048577", "1099511627776", "18446744073709551615"] {
        refused(
            &["gen", "--alg", "sm2", "--count", "1", "--msg-len", len],
            "--msg-len",
        );
    }
    refused(
        &[
            "gen",
            "--alg",
            "sm2",
            "--count",
            "1",
            "--msg-len",
            "1099511627776",
        ],
        "0..=1048576",
    );
    refused(
        &["gen", "--alg", "sm2", "--count", "18446744073709551615"],
        "--count",
    );
    refused(
        &[
            "gen",
            "--alg",
            "sm2",
            "--count",
            "1",
            "--signers",
            "18446744073709551615",
        ],
        "--signers",
    );
    for sizes in ["0", "1,18446744073709551615", "8388609"] {
        refused(&["bench", "--backend", "cpu", "--sizes", sizes], "--sizes");
    }
    refused(
        &["bench", "--backend", "cpu", "--threads", "0"],
        "--threads",
    );
    refused(
        &[
            "bench",
            "--backend",
            "cpu",
            "--repeats",
            "18446744073709551615",
        ],
        "--repeats",
    );
    // The largest message still works, its line in hex.
    let out = chainsig(
        &[
            "gen",
            "--alg",
            "p256",
            "--count",
            "1",
            "--msg-len",
            "1048576",
        ],
        "",
    );
    assert!(out.status.success());
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rec["msg"].as_str().unwrap().len(), 2 << 20);
}

#[test]
fn error_lines_quote_long_values_in_part() {
    let huge = "z".repeat(10_000);
    let input = [
        format!(r#"{{"alg":"{huge}","pubkey":"04","msg":"","sig":"00"}}"#),
        format!(r#"{{"alg":"sm2","hash":"{huge}","pubkey":"04","msg":"","sig":"00"}}"#),
        format!(r#"{{"alg":"sm2","pubkey":"{huge}","msg":"","sig":"00"}}"#),
    ]
    .join("\n");
    let out = chainsig(&["verify"], &input);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 3);
    for line in text.lines() {
        assert!(line.len() < 250, "{} bytes: {line}", line.len());
        assert!(line.contains("error"), "{line}");
    }
    assert!(text.contains("(10000 characters)"), "{text}");
}

#[test]
fn checks_that_check_nothing_fail() {
    let out = chainsig(&["verify", "--summary"], "");
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing was verified"), "{err}");

    let dir = common::TempDir::new("empty-kat");
    for (name, text) in [
        ("empty.rsp", ""),
        ("comments.rsp", "# CTRU-Prime\n\n# only words\n"),
    ] {
        let file = dir.file(name, text);
        let out = chainsig(
            &["kem", "kat", "--params", "653", file.to_str().unwrap()],
            "",
        );
        assert_ne!(out.status.code(), Some(0), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("nothing was checked"), "{name}: {err}");
    }

    // `bench --from-file` on a file it can time nothing of fails, saying why.
    let bench_refuses = |name: &str, text: &str, why: &str| {
        let path = dir.file(name, text);
        let out = chainsig(
            &[
                "bench",
                "--from-file",
                path.to_str().unwrap(),
                "--backend",
                "cpu",
            ],
            "",
        );
        assert_ne!(out.status.code(), Some(0), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{name}\": {why}")), "{err}");
    };
    bench_refuses(
        "empty.jsonl",
        "",
        "no records in the file: nothing was timed",
    );
    // Records all refused before any backend saw them: nothing would be timed either.
    bench_refuses(
        "refused.jsonl",
        "{\"alg\":\"sm2\"}\nnot json\n",
        "none of its 2 records could be checked: nothing was timed",
    );
}

#[test]
fn fail_on_invalid_sets_the_exit_status_after_all_output() {
    let gen = |ratio: &str| {
        let out = chainsig(
            &[
                "gen",
                "--alg",
                "sm2",
                "--count",
                "40",
                "--invalid-ratio",
                ratio,
                "--seed",
                "3",
            ],
            "",
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let mixed = gen("0.3");
    let clean = gen("0");
    let out = chainsig(&["verify", "--fail-on-invalid"], &mixed);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_lines(&out.stdout).len(), 40);
    assert_eq!(chainsig(&["verify"], &mixed).status.code(), Some(0));
    let out = chainsig(&["verify", "--fail-on-invalid"], &clean);
    assert_eq!(out.status.code(), Some(0));
    // An error line counts as a failure too.
    let with_error = format!("{clean}{{not json\n");
    let out = chainsig(&["verify", "--fail-on-invalid", "--summary"], &with_error);
    assert_eq!(out.status.code(), Some(1));

    let good = serde_json::json!({
        "digest": "daf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53",
        "sig": "28ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa63627667cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83",
        "v": 27
    })
    .to_string();
    let out = chainsig(
        &["recover", "--fail-on-invalid"],
        &format!("{good}\n{good}\n"),
    );
    assert_eq!(out.status.code(), Some(0));
    let out = chainsig(
        &["recover", "--fail-on-invalid"],
        &format!("{good}\n{{}}\n{good}\n"),
    );
    assert_eq!(out.status.code(), Some(1));
    let v = json_lines(&out.stdout);
    assert_eq!(v.len(), 3);
    assert!(v[1]["error"].is_string());
    assert!(v[2]["address"].is_string());
}

/// Spawns `chainsig ARGS` with piped stdin and returns it with a channel of its stdout lines.
fn streaming(args: &[&str]) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_chainsig"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("binary runs");
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

#[test]
fn answers_stream_while_input_is_still_open() {
    use std::io::Write;
    use std::time::Duration;
    let gen = chainsig(
        &[
            "gen",
            "--alg",
            "secp256k1",
            "--count",
            "2",
            "--invalid-ratio",
            "0",
        ],
        "",
    );
    let lines: Vec<String> = String::from_utf8(gen.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let (mut child, answers) = streaming(&["verify", "--backend", "cpu"]);
    let mut stdin = child.stdin.take().unwrap();
    // One line in, one answer out, with the input still open: no waiting for a full chunk.
    for (i, line) in lines.iter().enumerate() {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let answer = answers
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("no answer to line {} within 10 s", i + 1));
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["line"], i as u64 + 1);
        assert_eq!(answer["valid"], true);
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());

    let (mut child, answers) = streaming(&["recover"]);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"tx":"0x02c0"}}"#).unwrap();
    stdin.flush().unwrap();
    let answer = answers
        .recv_timeout(Duration::from_secs(10))
        .expect("recover answers within 10 s");
    assert!(answer.contains("error"), "{answer}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// The fuzz targets' entry functions (`fuzz/src/lib.rs`), shared so their corpora replay here.
#[path = "../../../../fuzz/src/lib.rs"]
mod fuzz_entries;

#[test]
fn fuzz_corpora_replay_without_failures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut targets: Vec<&str> = fuzz_entries::TARGETS.iter().map(|(n, _)| *n).collect();
    targets.sort();
    assert_eq!(names, targets, "a corpus per target, a target per corpus");
    for (name, entry) in fuzz_entries::TARGETS {
        let mut files = 0;
        for file in std::fs::read_dir(root.join(name)).unwrap() {
            let path = file.unwrap().path();
            entry(&std::fs::read(&path).unwrap());
            files += 1;
        }
        assert!(files > 0, "{name}: empty corpus");
    }
}

/// The seeds made by the project's encoders (`fuzz/src/seeds.rs`) are in the corpora as they
/// are made now; `CHAINSIG_WRITE_FUZZ_SEEDS=1` writes them afresh after a format changes.
#[test]
fn fuzz_corpora_hold_the_encoders_seeds() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let write = std::env::var_os("CHAINSIG_WRITE_FUZZ_SEEDS").is_some_and(|v| v == "1");
    for seed in fuzz_entries::seeds::seeds() {
        let path = root.join(seed.target).join(seed.name);
        if write {
            std::fs::write(&path, &seed.bytes).unwrap();
        }
        let stored = std::fs::read(&path).unwrap_or_default();
        assert!(
            stored == seed.bytes,
            "{}: not the seed the encoders make now (CHAINSIG_WRITE_FUZZ_SEEDS=1 rewrites it)",
            path.display()
        );
    }
}

#[test]
fn stats_and_bench_from_file_time_each_stage() {
    let gen = chainsig(
        &["gen", "--alg", "secp256k1", "--count", "120", "--seed", "4"],
        "",
    );
    assert!(gen.status.success());
    let records = String::from_utf8(gen.stdout).unwrap() + "not json\n";
    let dir = common::TempDir::new("stats");
    let file = dir.file("records.jsonl", &records);
    let file = file.to_str().unwrap();

    let verify = chainsig(&["verify", "--backend", "cpu", "--stats", file], "");
    assert!(verify.status.success());
    assert_eq!(json_lines(&verify.stdout).len(), 121);
    let stderr = String::from_utf8_lossy(&verify.stderr);
    assert!(stderr.contains("stats: 121 records"), "{stderr}");
    for stage in ["read", "parse", "prepare", "verify", "write"] {
        assert!(
            stderr.lines().any(|l| l.trim_start().starts_with(stage)),
            "no {stage} line: {stderr}"
        );
    }

    // CHAINSIG_VERIFY_TRACE: a CSV line per chunk, in order, covering every record, each
    // chunk's moments in the order they happen (from standard input, whose reader cuts chunks
    // of at most --chunk lines).
    let trace = dir.path("trace.csv");
    let traced = std::process::Command::new(env!("CARGO_BIN_EXE_chainsig"))
        .args(["verify", "--backend", "cpu", "--chunk", "50", "-"])
        .stdin(std::fs::File::open(file).unwrap())
        .env("CHAINSIG_VERIFY_TRACE", &trace)
        .output()
        .unwrap();
    assert!(traced.status.success());
    assert_eq!(traced.stdout, verify.stdout, "the trace changes no answer");
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[..3], ["chunk", "records", "worker"]);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(
        rows.len() >= 3,
        "121 records in chunks of at most 50: {text}"
    );
    let mut records = 0;
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), header.len(), "{text}");
        assert_eq!(row[0], k.to_string(), "chunks in order: {text}");
        records += row[1].parse::<usize>().unwrap();
        let at = |name: &str| -> f64 {
            row[header.iter().position(|h| *h == name).unwrap()]
                .parse()
                .unwrap()
        };
        let moments = [
            "asked_ms",
            "got_ms",
            "done_ms",
            "write_from_ms",
            "write_to_ms",
        ];
        for pair in moments.windows(2) {
            assert!(at(pair[0]) <= at(pair[1]), "{pair:?} out of order: {text}");
        }
    }
    assert_eq!(records, 121);
    // A trace that cannot be written is refused before any answer.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_chainsig"))
        .args(["verify", "--backend", "cpu", file])
        .env(
            "CHAINSIG_VERIFY_TRACE",
            dir.path("no-such-folder/trace.csv"),
        )
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(refused.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("CHAINSIG_VERIFY_TRACE"), "{stderr}");

    let bench = chainsig(
        &[
            "bench",
            "--from-file",
            file,
            "--backend",
            "cpu",
            "--repeats",
            "1",
        ],
        "",
    );
    let stdout = String::from_utf8_lossy(&bench.stdout);
    assert!(
        bench.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&bench.stderr)
    );
    assert!(stdout.contains("121 records"), "{stdout}");
    assert!(stdout.contains("1 errors"), "{stdout}");
    for row in ["user path", "backend only", "stats:", "parse"] {
        assert!(stdout.contains(row), "no {row}: {stdout}");
    }
}
