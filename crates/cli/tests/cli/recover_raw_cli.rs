//! `chainsig recover --raw`: length-prefixed raw transactions give the answers their JSON Lines
//! form gives, by record index, with framing errors for the records that cannot be framed.

use crate::common::{chainsig, TempDir};
use chainsig_eth::rawtx::corpus::Corpus;
use chainsig_eth::rawtx::frames::push_record;
use chainsig_eth::rawtx::MAX_RAW_TX_LEN;

fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON answer"))
        .collect()
}

#[test]
fn raw_records_answer_as_their_json_lines_do() {
    let mut corpus = Corpus::new(11, 3);
    let mut txs = corpus.mixed(150, 0.3);
    txs.push(Vec::new());
    let mut file = Vec::new();
    let mut jsonl = String::new();
    for tx in &txs {
        push_record(&mut file, tx).unwrap();
        jsonl.push_str(&serde_json::json!({ "tx": hex::encode(tx) }).to_string());
        jsonl.push('\n');
    }
    let dir = TempDir::new("recover-raw");
    let path = dir.path("txs.bin");
    std::fs::write(&path, &file).unwrap();
    let raw = chainsig(&["recover", "--raw", path.to_str().unwrap()], "");
    assert!(
        raw.status.success(),
        "{}",
        String::from_utf8_lossy(&raw.stderr)
    );
    let on_gpu = chainsig(
        &[
            "recover",
            "--raw",
            "--backend",
            "cuda",
            path.to_str().unwrap(),
        ],
        "",
    );
    let from_json = chainsig(&["recover"], &jsonl);
    let json_on_gpu = chainsig(&["recover", "--backend", "cuda"], &jsonl);
    let (raw_out, from_json) = (json_lines(&raw.stdout), json_lines(&from_json.stdout));
    // On a machine with a GPU the device's answers are the CPU's, line for line, from either
    // input; without one the command says why it cannot run.
    for (gpu, cpu) in [(&on_gpu, &raw_out), (&json_on_gpu, &from_json)] {
        if gpu.status.success() {
            assert_eq!(&json_lines(&gpu.stdout), cpu);
            assert!(String::from_utf8_lossy(&gpu.stderr).contains("errors (cuda)"));
        } else {
            let why = String::from_utf8_lossy(&gpu.stderr);
            assert!(why.contains("--backend cuda"), "{why}");
        }
    }
    let raw = raw_out;
    assert_eq!(raw.len(), txs.len());
    let mut errors = 0;
    for (k, (a, b)) in raw.iter().zip(&from_json).enumerate() {
        assert_eq!(a["record"], k as u64);
        assert_eq!(b["line"], k as u64 + 1);
        assert_eq!(a["address"], b["address"], "record {k}");
        assert_eq!(a["pubkey"], b["pubkey"], "record {k}");
        // The empty record is refused by the JSON reader before it reaches the decoder.
        if k + 1 < txs.len() {
            assert_eq!(a["error"], b["error"], "record {k}");
        }
        errors += usize::from(a["error"].is_string());
    }
    assert!(errors > 20 && errors < 100, "{errors} errors");
    assert_eq!(raw.last().unwrap()["error"], "tx: empty");
}

#[test]
fn framing_errors_name_their_record_and_the_rest_is_read() {
    let mut corpus = Corpus::new(12, 1);
    let good = corpus.signed(chainsig_eth::TxType::Eip1559);
    let mut file = Vec::new();
    push_record(&mut file, &good).unwrap();
    let big = (MAX_RAW_TX_LEN + 10) as u32;
    file.extend(big.to_le_bytes());
    file.extend(std::iter::repeat_n(0u8, big as usize));
    push_record(&mut file, &good).unwrap();
    // The last record is cut short: 100 bytes announced, 3 present.
    file.extend(100u32.to_le_bytes());
    file.extend([1, 2, 3]);
    let dir = TempDir::new("recover-raw-framing");
    let path = dir.path("txs.bin");
    std::fs::write(&path, &file).unwrap();
    let out = chainsig(
        &[
            "recover",
            "--raw",
            "--fail-on-invalid",
            path.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let v = json_lines(&out.stdout);
    assert_eq!(v.len(), 4, "{v:?}");
    assert!(v[0]["address"].is_string());
    assert_eq!(v[1]["record"], 1);
    let too_long = v[1]["error"].as_str().unwrap();
    assert!(too_long.contains("above the limit of 131072"), "{too_long}");
    assert_eq!(v[2]["address"], v[0]["address"]);
    assert_eq!(v[3]["record"], 3);
    let cut = v[3]["error"].as_str().unwrap();
    assert!(
        cut.contains("ends inside the record (3 of 100 bytes)"),
        "{cut}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("recovered 2 of 4 records, 2 errors"));
}

/// `bench --raw` times `recover --raw`'s path beside the backend alone on the same file, checks
/// every run's answers against the backend's, and refuses a file with nothing to time.
#[test]
fn bench_raw_times_the_user_path_beside_the_backend() {
    let mut corpus = Corpus::new(12, 3);
    let mut file = Vec::new();
    for tx in corpus.mixed(300, 0.2) {
        push_record(&mut file, &tx).unwrap();
    }
    let dir = TempDir::new("bench-raw");
    let path = dir.path("txs.bin");
    std::fs::write(&path, &file).unwrap();
    let out = chainsig(
        &[
            "bench",
            "--raw",
            path.to_str().unwrap(),
            "--backend",
            "cpu",
            "--repeats",
            "2",
        ],
        "",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("300 records ("), "{text}");
    assert!(
        text.contains("recovered on the host's cores; median of 2 runs"),
        "{text}"
    );
    for row in ["user path", "backend only"] {
        let line = text.lines().find(|l| l.starts_with(row)).expect(row);
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words
            .iter()
            .position(|w| *w == "records/s")
            .expect("a rate");
        let rate: f64 = words[at - 1].parse().expect("a number");
        assert!(rate > 0.0, "{line}");
    }
    let empty = dir.path("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    let out = chainsig(
        &[
            "bench",
            "--raw",
            empty.to_str().unwrap(),
            "--backend",
            "cpu",
        ],
        "",
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was timed"));
    // Records none of which can be framed (a length prefix past the limit) time nothing either.
    let unframed = dir.path("unframed.bin");
    std::fs::write(&unframed, u32::MAX.to_le_bytes()).unwrap();
    let out = chainsig(
        &[
            "bench",
            "--raw",
            unframed.to_str().unwrap(),
            "--backend",
            "cpu",
        ],
        "",
    );
    assert!(!out.status.success());
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(
        why.contains("none of its 1 records could be framed"),
        "{why}"
    );
}

#[test]
fn gen_raw_txs_writes_what_recover_raw_reads() {
    let dir = TempDir::new("gen-raw-txs");
    let made = |name: &str, ratio: &str, seed: &str| {
        let path = dir.path(name);
        let out = chainsig(
            &[
                "gen",
                "--raw-txs",
                "--count",
                "5000",
                "--invalid-ratio",
                ratio,
                "--seed",
                seed,
                "--out",
                path.to_str().unwrap(),
            ],
            "",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        path
    };
    let recovered = |path: &std::path::Path| {
        let out = chainsig(&["recover", "--raw", path.to_str().unwrap()], "");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json_lines(&out.stdout)
    };
    // Well-formed transactions only: every one of the 5,000 records recovers, in order.
    let clean = recovered(&made("clean.bin", "0", "7"));
    assert_eq!(clean.len(), 5000);
    for (i, answer) in clean.iter().enumerate() {
        assert_eq!(answer["record"], i, "{answer}");
        assert!(answer["address"].is_string(), "{answer}");
    }
    // The same seed makes the same bytes; another seed other ones.
    let a = std::fs::read(made("a.bin", "0.2", "9")).unwrap();
    assert_eq!(a, std::fs::read(made("b.bin", "0.2", "9")).unwrap());
    assert_ne!(a, std::fs::read(made("c.bin", "0.2", "10")).unwrap());
    // A fifth malformed: about 1,000 answered with an error (some breakages still decode, a
    // cut at the end of an access list say, so the count is a range), the rest with a sender.
    let mixed = recovered(&dir.path("a.bin"));
    assert_eq!(mixed.len(), 5000);
    let errors = mixed.iter().filter(|a| a["error"].is_string()).count();
    assert!((700..=1300).contains(&errors), "{errors} errors");
    // --raw-txs takes no signature algorithm.
    let both = chainsig(&["gen", "--raw-txs", "--alg", "sm2", "--count", "1"], "");
    assert!(!both.status.success());
}
