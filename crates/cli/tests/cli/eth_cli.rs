//! `chainsig eth …` through the built binary: the `eth sign` contract of cli.md, keystores,
//! `sign-bulk` and `decode`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common;
use common::TempDir;

const KEY_46: &str = "4646464646464646464646464646464646464646464646464646464646464646";
const EIP155_RAW: &str = "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";
const EIP155_TX: &str = r#"{"chainId":"0x1","nonce":"0x9","gasPrice":"0x4a817c800","gas":"0x5208","to":"0x3535353535353535353535353535353535353535","value":"0xde0b6b3a7640000","data":"0x"}"#;

fn chainsig() -> Command {
    Command::new(env!("CARGO_BIN_EXE_chainsig"))
}

fn run_with_stdin(mut command: Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn sign_command(key_file: &Path) -> Command {
    let mut c = chainsig();
    c.args(["eth", "sign", "--key-file"]).arg(key_file);
    c
}

#[test]
fn sign_known_answer_and_errors_one_line_each() {
    let dir = TempDir::new("sign");
    let key = dir.file("key.hex", &format!("0x{KEY_46}\n"));
    let input = [
        EIP155_TX,
        r#"{"chainId":1,"nonce":0,"gas":21000,"maxFeePerGas":"0x1","maxPriorityFeePerGas":"0x2"}"#,
        "not json",
        r#"{"chainId":1,"nonce":0,"gas":21000,"gasPrice":1,"from":"0x0000000000000000000000000000000000000001"}"#,
        r#"{"chainId":1,"gas":21000,"gasPrice":1}"#,
        r#"{"chainId":1,"nonce":1,"gas":21000,"gasPrice":1,"to":"0x12"}"#,
        "",
        r#"{"chainId":"0x1e8e","nonce":"0x333","maxPriorityFeePerGas":"0x1284d","maxFeePerGas":"0x1d97c","gas":"0x8ae0","to":"0x000000000000000000000000000000000000aaaa","value":"0x2933bc9","type":"0x2","input":"0x"}"#,
    ]
    .join("\n")
        + "\n";
    let output = run_with_stdin(sign_command(&key), &input);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 8);
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["line"], i + 1);
    }
    assert_eq!(lines[0]["raw"], EIP155_RAW);
    assert_eq!(
        lines[0]["from"].as_str().unwrap().to_lowercase(),
        "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f"
    );
    let raw0 = hex::decode(&EIP155_RAW[2..]).unwrap();
    assert_eq!(lines[0]["hash"], format!("{}", alloy_keccak(&raw0)));
    assert_eq!(
        lines[1]["error"],
        "maxFeePerGas: below maxPriorityFeePerGas"
    );
    assert!(lines[2]["error"].as_str().unwrap().starts_with("json: "));
    assert!(lines[3]["error"].as_str().unwrap().starts_with("from: "));
    assert_eq!(lines[4]["error"], "nonce: missing");
    assert!(lines[5]["error"].as_str().unwrap().starts_with("to: "));
    assert!(lines[6]["error"].as_str().unwrap().starts_with("json: "));
    assert!(lines[7]["raw"].as_str().unwrap().starts_with("0x02"));
    // Deterministic: the same input from a file gives the same bytes.
    let file = dir.file("in.jsonl", &input);
    let again = sign_command(&key).arg(&file).output().unwrap();
    assert_eq!(again.stdout, output.stdout);
    let dash = run_with_stdin(
        {
            let mut c = sign_command(&key);
            c.arg("-");
            c
        },
        &input,
    );
    assert_eq!(dash.stdout, output.stdout);
}

/// `eth sign` on a file signs its lines in batches (groups of eight in AVX-512 IFMA lanes where the
/// CPU has them): the answers are byte for byte those of the one-at-a-time path
/// (`CHAINSIG_CPU_LANES=off`) and of each line signed alone, refused lines in their places.
#[test]
fn sign_in_batches_gives_the_bytes_of_one_at_a_time() {
    let dir = TempDir::new("sign-batches");
    let key = dir.file("key.hex", &format!("0x{KEY_46}\n"));
    let mut lines = Vec::new();
    for i in 0..45u64 {
        lines.push(match i % 9 {
            4 => "not json".to_string(),
            7 => format!(r#"{{"chainId":1,"nonce":{i},"gas":21000,"gasPrice":1,"to":"0x12"}}"#),
            k => format!(
                r#"{{"chainId":{},"nonce":{i},"gas":{},"maxFeePerGas":"0x{:x}","maxPriorityFeePerGas":"0x1","to":"0x000000000000000000000000000000000000aaaa","value":"0x{:x}"}}"#,
                1 + k,
                21000 + i,
                1000 + i * 37,
                i * i
            ),
        });
    }
    let file = dir.file("in.jsonl", &(lines.join("\n") + "\n"));
    let run = |lanes: &str| {
        let out = sign_command(&key)
            .arg(&file)
            .env("CHAINSIG_CPU_LANES", lanes)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let batched = run("auto");
    assert_eq!(batched, run("off"), "lanes and libsecp256k1 differ");
    let answers = json_lines(&Output {
        status: std::process::ExitStatus::default(),
        stdout: batched,
        stderr: Vec::new(),
    });
    assert_eq!(answers.len(), lines.len());
    for (i, (line, answer)) in lines.iter().zip(&answers).enumerate() {
        assert_eq!(answer["line"], i + 1);
        let alone = json_lines(&run_with_stdin(sign_command(&key), &format!("{line}\n")));
        assert_eq!(answer.get("raw"), alone[0].get("raw"), "line {}", i + 1);
        assert_eq!(answer.get("error"), alone[0].get("error"), "line {}", i + 1);
        assert_eq!(answer.get("raw").is_some(), !matches!(i % 9, 4 | 7));
    }
}

fn alloy_keccak(bytes: &[u8]) -> String {
    let decoded = chainsig_eth::decode_raw(bytes).unwrap();
    format!("{}", decoded.hash)
}

#[test]
fn sign_with_a_keystore() {
    let dir = TempDir::new("keystore");
    let key = dir.file("key.hex", KEY_46);
    let password = dir.file("pass", "correct horse\n");
    let keystore = dir.path("key.json");
    let made = chainsig()
        .args([
            "eth",
            "keystore-encrypt",
            "--kdf",
            "scrypt-light",
            "--key-file",
        ])
        .arg(&key)
        .arg("--password-file")
        .arg(&password)
        .arg("--out")
        .arg(&keystore)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let text = std::fs::read_to_string(&keystore).unwrap();
    assert!(!text.contains(KEY_46));
    let mut command = chainsig();
    command
        .args(["eth", "sign", "--keystore"])
        .arg(&keystore)
        .arg("--password-file")
        .arg(&password);
    let output = run_with_stdin(command, &format!("{EIP155_TX}\n"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(json_lines(&output)[0]["raw"], EIP155_RAW);
    // A wrong password is a usage error (exit 2) that names the password and shows no secret.
    let wrong = dir.file("wrong", "correct horse battery\n");
    let failed = chainsig()
        .args(["eth", "sign", "--keystore"])
        .arg(&keystore)
        .arg("--password-file")
        .arg(&wrong)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains("password"), "{stderr}");
    assert!(!stderr.contains(KEY_46));
}

#[test]
fn bad_usage_exits_2() {
    let dir = TempDir::new("usage");
    let no_key = chainsig()
        .args(["eth", "sign"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(no_key.status.code(), Some(2));
    let missing = chainsig()
        .args(["eth", "sign", "--key-file"])
        .arg(dir.path("absent"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let key = dir.file("key.hex", KEY_46);
    let unreadable = sign_command(&key)
        .arg(dir.path("absent.jsonl"))
        .output()
        .unwrap();
    assert_eq!(unreadable.status.code(), Some(2));
    let bad_key = dir.file("bad.hex", "1234");
    let refused = sign_command(&bad_key)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("key"));
}

fn sign_bulk(dir: &TempDir, tx_type: &str, threads: &str, out: &str) -> Vec<Value> {
    let mnemonic = dir.file(
        "mnemonic",
        "test test test test test test test test test test test junk\n",
    );
    let out = dir.path(out);
    let output = chainsig()
        .args([
            "eth",
            "sign-bulk",
            "--random",
            "--wallets",
            "3",
            "--count",
            "4100",
            "--chain-id",
            "1337",
            "--type",
            tx_type,
        ])
        .args(["--threads", threads, "--stats", "--mnemonic-file"])
        .arg(&mnemonic)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("p99"));
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn sign_bulk_round_robin_and_decodable() {
    let dir = TempDir::new("bulk");
    let wallets = [
        "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
        "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
        "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    ];
    for (tx_type, first_byte) in [("1559", Some(2u8)), ("2930", Some(1)), ("legacy", None)] {
        let one = sign_bulk(&dir, tx_type, "1", &format!("one-{tx_type}.jsonl"));
        let two = sign_bulk(&dir, tx_type, "2", &format!("two-{tx_type}.jsonl"));
        assert_eq!(one, two, "output must not depend on the thread count");
        assert_eq!(one.len(), 4100);
        for (k, line) in one.iter().enumerate() {
            assert_eq!(line["from"], wallets[k % 3]);
            assert_eq!(line["nonce"], k / 3);
            if k % 97 == 0 || k == 4099 {
                let raw = hex::decode(&line["raw"].as_str().unwrap()[2..]).unwrap();
                if let Some(byte) = first_byte {
                    assert_eq!(raw[0], byte);
                }
                let decoded = chainsig_eth::decode_raw(&raw).unwrap();
                assert_eq!(
                    decoded.from.to_checksum(None),
                    line["from"].as_str().unwrap()
                );
                assert_eq!(format!("{}", decoded.hash), line["hash"].as_str().unwrap());
                assert_eq!(decoded.to_json()["chainId"], "0x539");
                assert_eq!(decoded.to_json()["nonce"], format!("{:#x}", k / 3));
            }
        }
    }
}

#[test]
fn decode_prints_fields_and_sender() {
    let output = chainsig()
        .args(["eth", "decode", EIP155_RAW])
        .output()
        .unwrap();
    assert!(output.status.success());
    let fields: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(fields["from"], "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F");
    assert_eq!(fields["nonce"], "0x9");
    assert_eq!(fields["v"], "0x25");
    assert_eq!(fields["to"], "0x3535353535353535353535353535353535353535");
    let bad = chainsig()
        .args(["eth", "decode", "0x02c0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("tx"));
}

const MNEMONIC: &str = "test test test test test test test test test test test junk\n";
const WALLET_0: &str = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const WALLET_1: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

#[test]
fn sign_bulk_signs_the_users_lines_with_nonces_per_sender() {
    let dir = TempDir::new("bulk-user");
    let mnemonic = dir.file("mnemonic", MNEMONIC);
    let tx = |from: &str, extra: &str| {
        format!(
            r#"{{"from":"{from}","to":"0x3535353535353535353535353535353535353535","gas":21000,"maxFeePerGas":"0x64","maxPriorityFeePerGas":"0x1","value":"0x1"{extra}}}"#
        )
    };
    let lines = [
        tx(WALLET_0, ""),
        tx(WALLET_1, ""),
        tx(WALLET_0, r#","value":"1000000000000000000""#),
        tx(WALLET_0, r#","chainId":"0x1""#),
        tx(WALLET_0, ""),
        tx(WALLET_1, r#","nonce":9"#),
        tx(WALLET_1, ""),
    ];
    let input = dir.file("in.jsonl", &(lines.join("\n") + "\n"));
    let out = dir.path("out.jsonl");
    let run = |out: &Path, fail_on_invalid: bool| {
        let mut command = chainsig();
        command
            .args(["eth", "sign-bulk", "--wallets", "2", "--chain-id", "5"])
            .args(["--first-nonce", "3", "--mnemonic-file"])
            .arg(&mnemonic)
            .arg("--out")
            .arg(out)
            .arg(&input);
        if fail_on_invalid {
            command.arg("--fail-on-invalid");
        }
        command.output().unwrap()
    };
    let output = run(&out, false);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 7);
    let nonces: Vec<Value> = answers.iter().map(|a| a["nonce"].clone()).collect();
    // Refused records (a decimal-string value, another chain) take no nonce.
    assert_eq!(
        nonces,
        [
            3.into(),
            3.into(),
            Value::Null,
            Value::Null,
            4.into(),
            9.into(),
            10.into()
        ]
    );
    assert!(answers[2]["error"].as_str().unwrap().starts_with("value: "));
    assert!(answers[3]["error"]
        .as_str()
        .unwrap()
        .starts_with("chainId: "));
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer["line"], i + 1);
        if let Some(raw) = answer["raw"].as_str() {
            let decoded = chainsig_eth::decode_raw(&hex::decode(&raw[2..]).unwrap()).unwrap();
            assert_eq!(
                decoded.from.to_checksum(None),
                answer["from"].as_str().unwrap()
            );
            assert_eq!(decoded.to_json()["chainId"], "0x5");
        }
    }
    // The output is never written over, and --fail-on-invalid reports the refused records.
    assert_eq!(run(&out, false).status.code(), Some(2));
    assert_eq!(run(&dir.path("again.jsonl"), true).status.code(), Some(1));
}

#[test]
fn random_filler_refuses_public_chains() {
    let dir = TempDir::new("bulk-random");
    let mnemonic = dir.file("mnemonic", MNEMONIC);
    for chain in ["1", "137", "8453"] {
        let output = chainsig()
            .args([
                "eth",
                "sign-bulk",
                "--random",
                "--count",
                "10",
                "--chain-id",
                chain,
            ])
            .arg("--mnemonic-file")
            .arg(&mnemonic)
            .arg("--out")
            .arg(dir.path(&format!("out-{chain}.jsonl")))
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "chain {chain}");
        assert!(String::from_utf8_lossy(&output.stderr).contains("public network"));
        assert!(!dir.path(&format!("out-{chain}.jsonl")).exists());
    }
}

#[test]
fn eth_sign_applies_the_chain_and_streams_each_answer() {
    let dir = TempDir::new("sign-chain");
    let key = dir.file("key.hex", KEY_46);
    let no_chain = r#"{"nonce":"0x9","gasPrice":"0x4a817c800","gas":"0x5208","to":"0x3535353535353535353535353535353535353535","value":"0xde0b6b3a7640000"}"#;
    let decimal = r#"{"chainId":1,"nonce":"9","gasPrice":"0x4a817c800","gas":"0x5208"}"#;
    let input = format!("{no_chain}\n{decimal}\n");
    // Without a chain: refused, and --fail-on-invalid exits 1.
    let mut command = sign_command(&key);
    command.arg("--fail-on-invalid");
    let refused = run_with_stdin(command, &input);
    assert_eq!(refused.status.code(), Some(1));
    let lines = json_lines(&refused);
    assert!(lines[0]["error"].as_str().unwrap().starts_with("chainId: "));
    assert!(
        lines[1]["error"].as_str().unwrap().contains("0x9"),
        "{}",
        lines[1]
    );
    // --chain-id 1 makes the EIP-155 example, byte for byte.
    let mut command = sign_command(&key);
    command.args(["--chain-id", "1"]);
    let signed = run_with_stdin(command, &input);
    assert!(signed.status.success());
    assert_eq!(json_lines(&signed)[0]["raw"], EIP155_RAW);

    // Streaming: an answer comes back while standard input is still open.
    let mut child = sign_command(&key)
        .args(["--chain-id", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{EIP155_TX}").unwrap();
    stdin.flush().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
        sender.send(line).unwrap();
    });
    let line = receiver
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("an answer before the input ends");
    assert!(line.contains(EIP155_RAW));
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn stdout_line(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .trim()
        .to_owned()
}

/// `eth account new`, `import` and `list` on one key directory, and the files signing.
#[test]
fn account_new_import_list_round_trip() {
    let dir = TempDir::new("account");
    let keystore = dir.path("wallet/keystore"); // created, parents too
    let password = dir.file("pw", "correct horse\n");
    let account = |args: &[&str]| {
        let mut command = chainsig();
        command
            .args(["eth", "account"])
            .args(args)
            .arg("--keystore")
            .arg(&keystore);
        command
    };
    let with_password = |mut command: Command| {
        command
            .arg("--password-file")
            .arg(&password)
            .args(["--kdf", "scrypt-light"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let created = stdout_line(&with_password(account(&["new"])));
    let created: alloy_primitives::Address = created.parse().unwrap();
    let key_file = dir.file("key.hex", KEY_46);
    let mut import = account(&["import"]);
    import.arg(&key_file);
    let imported = stdout_line(&with_password(import));
    assert_eq!(imported, "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F");
    // The same key again is refused, naming the file that holds it.
    let mut again = account(&["import"]);
    again.arg(&key_file);
    let again = with_password(again);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    let mut files: Vec<_> = std::fs::read_dir(&keystore)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2);
    for (file, address) in files.iter().zip([
        hex::encode(created),
        "9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f".to_owned(),
    ]) {
        // geth's name: UTC--2026-12-06T19-30-01.123456789Z--<address>.
        let name = file.file_name().unwrap().to_str().unwrap();
        let (time, named) = name
            .strip_prefix("UTC--")
            .unwrap()
            .split_once("Z--")
            .unwrap();
        assert_eq!(named, address);
        assert_eq!(time.len(), 29, "{name}");
        assert!(time.chars().enumerate().all(|(i, c)| match i {
            4 | 7 | 13 | 16 => c == '-',
            10 => c == 'T',
            19 => c == '.',
            _ => c.is_ascii_digit(),
        }));
        #[cfg(unix)]
        assert_eq!(mode(file), 0o600, "{name}");
    }
    #[cfg(unix)]
    assert_eq!(mode(&keystore), 0o700);

    let list = chainsig()
        .args(["eth", "account", "list", "--keystore"])
        .arg(&keystore)
        .output()
        .unwrap();
    let list = stdout_line(&list);
    let expected: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let address = file.to_str().unwrap().rsplit("--").next().unwrap();
            format!(
                "Account #{i}: {{{address}}} keystore://{}",
                std::path::absolute(file).unwrap().display()
            )
        })
        .collect();
    assert_eq!(list, expected.join("\n"));

    // The imported geth file signs, its password from the environment.
    let mut sign = chainsig();
    sign.args(["eth", "sign", "--keystore"])
        .arg(&files[1])
        .args(["--password-env", "CHAINSIG_TEST_KEYSTORE_PASSWORD"])
        .env("CHAINSIG_TEST_KEYSTORE_PASSWORD", "correct horse");
    let output = run_with_stdin(sign, &format!("{EIP155_TX}\n"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(json_lines(&output)[0]["raw"], EIP155_RAW);
    // An unset variable is an error naming it, never an empty password.
    let unset = chainsig()
        .args(["eth", "sign", "--keystore"])
        .arg(&files[1])
        .args(["--password-env", "CHAINSIG_TEST_SURELY_UNSET"])
        .env_remove("CHAINSIG_TEST_SURELY_UNSET")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(unset.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unset.stderr).contains("CHAINSIG_TEST_SURELY_UNSET"));
    // Without any password and no terminal to ask on, the error says how to give one.
    let none = chainsig()
        .args(["eth", "sign", "--keystore"])
        .arg(&files[1])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("--password-file"));
}

#[test]
fn keystore_encrypt_writes_0600_and_never_overwrites() {
    let dir = TempDir::new("encrypt-once");
    let key = dir.file("key.hex", KEY_46);
    let password = dir.file("pw", "pw\n");
    let out = dir.path("key.json");
    let encrypt = || {
        chainsig()
            .args([
                "eth",
                "keystore-encrypt",
                "--kdf",
                "scrypt-light",
                "--key-file",
            ])
            .arg(&key)
            .arg("--password-file")
            .arg(&password)
            .arg("--out")
            .arg(&out)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    stdout_line(&encrypt());
    #[cfg(unix)]
    assert_eq!(mode(&out), 0o600);
    let first = std::fs::read(&out).unwrap();
    let refused = encrypt();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(out.to_str().unwrap()) && stderr.contains("overwrite"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), first);
}

fn words_of(phrase: &str) -> usize {
    // The eth crate checks the BIP-39 checksum and word list.
    chainsig_eth::hd::mnemonic_seed(phrase, "").unwrap();
    phrase.split_whitespace().count()
}

#[test]
fn mnemonic_new_writes_valid_phrases_once() {
    let dir = TempDir::new("mnemonic");
    let new = |args: &[&str]| {
        chainsig()
            .args(["eth", "mnemonic", "new"])
            .args(args)
            .output()
            .unwrap()
    };
    let out12 = dir.path("m12");
    let made = new(&["--out", out12.to_str().unwrap()]);
    assert!(made.status.success());
    assert!(made.stdout.is_empty(), "the phrase goes to the file only");
    let phrase12 = std::fs::read_to_string(&out12).unwrap();
    assert_eq!(words_of(&phrase12), 12);
    #[cfg(unix)]
    assert_eq!(mode(&out12), 0o600);
    let out24 = dir.path("m24");
    assert!(new(&["--words", "24", "--out", out24.to_str().unwrap()])
        .status
        .success());
    assert_eq!(words_of(&std::fs::read_to_string(&out24).unwrap()), 24);
    // Never over an existing file; the file keeps its phrase.
    let again = new(&["--out", out12.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("overwrite"));
    assert_eq!(std::fs::read_to_string(&out12).unwrap(), phrase12);
    // Standard output only when asked for with `--out -`; an --out is required.
    let printed = new(&["--out", "-"]);
    assert!(printed.status.success());
    let printed = String::from_utf8(printed.stdout).unwrap();
    assert_eq!(words_of(&printed), 12);
    assert_ne!(printed, phrase12);
    assert_eq!(new(&[]).status.code(), Some(2));
    assert_eq!(new(&["--words", "15", "--out", "-"]).status.code(), Some(2));

    // A new phrase signs through --mnemonic-file with the key the hd module derives.
    let wallet = chainsig_eth::hd::EthWallet::from_mnemonic(&phrase12, "").unwrap();
    let mut sign = chainsig();
    sign.args(["eth", "sign", "--mnemonic-file"]).arg(&out12);
    let output = run_with_stdin(sign, &format!("{EIP155_TX}\n"));
    assert_eq!(
        json_lines(&output)[0]["from"],
        wallet.key(0).unwrap().address().to_checksum(None)
    );
}

#[test]
fn sign_with_a_mnemonic_and_an_hd_path() {
    let dir = TempDir::new("sign-hd");
    let mnemonic = dir.file(
        "mnemonic",
        "test test test test test test test test test test test junk\n",
    );
    let sign = |extra: &[&str]| {
        let mut command = chainsig();
        command
            .args(["eth", "sign", "--mnemonic-file"])
            .arg(&mnemonic)
            .args(extra);
        run_with_stdin(command, &format!("{EIP155_TX}\n"))
    };
    let first = json_lines(&sign(&[]));
    assert_eq!(
        first[0]["from"],
        "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
    );
    let path = "m/44'/60'/0'/0/5";
    let seed = chainsig_eth::hd::mnemonic_seed(
        "test test test test test test test test test test test junk",
        "",
    )
    .unwrap();
    let derived = chainsig_eth::hd::ExtendedKey::from_seed(seed.as_ref())
        .unwrap()
        .derive_path(path)
        .unwrap()
        .private_key()
        .unwrap();
    let fifth = json_lines(&sign(&["--hd-path", path]));
    assert_eq!(fifth[0]["from"], derived.address().to_checksum(None));
    let raw = hex::decode(&fifth[0]["raw"].as_str().unwrap()[2..]).unwrap();
    assert_eq!(
        chainsig_eth::decode_raw(&raw).unwrap().from,
        derived.address()
    );
    // One key source at a time, and a bad path is named.
    let refused = |extra: &[&str]| {
        chainsig()
            .args(["eth", "sign", "--mnemonic-file"])
            .arg(&mnemonic)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let both = refused(&["--key-file", mnemonic.to_str().unwrap()]);
    assert_eq!(both.status.code(), Some(2));
    let bad = refused(&["--hd-path", "m/44'/x"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("hd-path"));
}
