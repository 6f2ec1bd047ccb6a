//! SIGTERM in the middle of a long input: `verify` and `recover` stop with status 143 (128 + 15)
//! after writing the answers of the chunks finished before the signal, whole lines in input
//! order, each the right answer for its line, and nothing torn. The input never ends (a writer
//! repeats it until the pipe closes) and stdout is read slowly, so the signal comes while
//! answers are still being produced and, often, while a write is blocked on a full pipe.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs `chainsig ARGS`, feeds it `input` over and over, sends SIGTERM once some answers have
/// come, and returns its exit status, its stdout and its stderr.
fn terminated_mid_stream(args: &[&str], input: String) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chainsig"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        // Ends when the process exits and the pipe breaks.
        while stdin.write_all(input.as_bytes()).is_ok() {}
    });
    let mut stdout = child.stdout.take().unwrap();
    let (started, answering) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut piece = [0u8; 1024];
        loop {
            match stdout.read(&mut piece) {
                Ok(0) | Err(_) => return out,
                Ok(n) => out.extend_from_slice(&piece[..n]),
            }
            if out.len() > 50_000 {
                let _ = started.send(());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    let mut stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    if answering.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        panic!("no answers within 60 s: {}", log.join().unwrap());
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running 30 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = String::from_utf8(reader.join().unwrap()).unwrap();
    (status.code(), out, log.join().unwrap())
}

/// The answers in `out`, checked to be whole lines numbered 1, 2, 3, …
fn whole_answers(out: &str) -> Vec<serde_json::Value> {
    assert!(
        out.ends_with('\n'),
        "a torn last line: {:?}",
        out.lines().last()
    );
    out.lines()
        .enumerate()
        .map(|(i, line)| {
            let answer: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("line {}: {e}: {line}", i + 1));
            assert_eq!(answer["line"], i as u64 + 1, "{line}");
            answer
        })
        .collect()
}

#[test]
fn verify_stops_on_sigterm_after_whole_answers() {
    let gen = crate::common::chainsig(
        &[
            "gen",
            "--alg",
            "secp256k1",
            "--count",
            "1000",
            "--invalid-ratio",
            "0.3",
            "--seed",
            "143",
        ],
        "",
    );
    assert!(gen.status.success());
    let records = String::from_utf8(gen.stdout).unwrap();
    let expected: Vec<bool> = records
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["expect"] == true)
        .collect();
    let (code, out, log) =
        terminated_mid_stream(&["verify", "--backend", "cpu", "--chunk", "300"], records);
    assert_eq!(code, Some(143), "{log}");
    assert!(log.contains("SIGTERM"), "{log}");
    let answers = whole_answers(&out);
    assert!(answers.len() >= 1000, "{} answers", answers.len());
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer["valid"], expected[i % 1000], "line {}", i + 1);
    }
}

#[test]
fn recover_stops_on_sigterm_after_whole_answers() {
    let eip155 = "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";
    let good = serde_json::json!({ "tx": eip155 }).to_string();
    let bad = serde_json::json!({ "tx": "0x02c0" }).to_string();
    let input = format!("{good}\n{good}\n{bad}\n").repeat(500);
    let (code, out, log) = terminated_mid_stream(&["recover", "--backend", "cpu"], input);
    assert_eq!(code, Some(143), "{log}");
    let answers = whole_answers(&out);
    // 50 KB of answers had been read before the signal: some 250 lines.
    assert!(answers.len() >= 200, "{} answers", answers.len());
    for (i, answer) in answers.iter().enumerate() {
        if i % 3 == 2 {
            assert!(answer["error"].is_string(), "line {}: {answer}", i + 1);
        } else {
            assert_eq!(
                answer["address"],
                "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F",
                "line {}",
                i + 1
            );
        }
    }
}

#[test]
fn sign_bulk_stops_on_sigterm_after_whole_answers_with_no_nonce_skipped() {
    let dir = crate::common::TempDir::new("sigterm-sign-bulk");
    let mnemonic = dir.file(
        "mnemonic",
        "test test test test test test test test test test test junk\n",
    );
    let line = r#"{"from":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","to":"0x3535353535353535353535353535353535353535","gas":21000,"maxFeePerGas":"0x64","maxPriorityFeePerGas":"0x1","value":"0x1"}"#;
    let input = format!("{line}\n").repeat(1000);
    let mnemonic = mnemonic.to_str().unwrap();
    let (code, out, log) = terminated_mid_stream(
        &[
            "eth",
            "sign-bulk",
            "--wallets",
            "1",
            "--chain-id",
            "5",
            "--mnemonic-file",
            mnemonic,
            "--out",
            "-",
        ],
        input,
    );
    assert_eq!(code, Some(143), "{log}");
    let answers = whole_answers(&out);
    assert!(answers.len() >= 100, "{} answers", answers.len());
    // The nonces given out are 0, 1, 2, … with none skipped: a transaction signed but not
    // written when the signal came is not given out, and its nonce is the next run's.
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer["nonce"], i as u64, "{answer}");
        assert!(
            answer["raw"].as_str().unwrap().starts_with("0x02"),
            "{answer}"
        );
    }
}
