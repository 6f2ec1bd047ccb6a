//! `chainsig serve` through the built binary: it starts on a keys directory, answers on the
//! addresses it logs (`http=`, and `grpc=` for a separate `--grpc` listener), refuses incomplete
//! TLS options and addresses it cannot bind, and exits 0 on SIGTERM once the requests in flight
//! are done. Every wait (log lines, client calls, the exit) has a deadline, and the child is
//! killed if a test fails, so a bug fails the test instead of hanging it.

use chainsig_eth::keystore::{self, Kdf};
use chainsig_eth::PrivateKey;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const KEY_46: &str = "4646464646464646464646464646464646464646464646464646464646464646";

fn chainsig() -> Command {
    Command::new(env!("CARGO_BIN_EXE_chainsig"))
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("chainsig-serve-cli-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn keys_dir(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    let key = PrivateKey::from_hex(KEY_46).unwrap();
    let text = keystore::encrypt(&key, b"pw", Kdf::Pbkdf2 { c: 2 }).unwrap();
    std::fs::write(dir.0.join("main.json"), text).unwrap();
    std::fs::write(dir.0.join("main.pass"), "pw\n").unwrap();
    std::fs::write(dir.0.join("tokens"), "tok-1\n").unwrap();
    dir
}

/// One HTTP/1.1 exchange on a fresh connection: the status code and the body.
fn http(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_string();
    (status, body)
}

/// A `chainsig serve` child whose stderr a thread reads line by line (so the pipe never fills
/// and no read blocks the test); killed on drop if still running, so a failing test never leaves
/// it behind.
struct Served {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Every line received so far.
    log: String,
    http: SocketAddr,
    grpc: SocketAddr,
}

/// The address after `key=` in a log line.
fn field(line: &str, key: &str) -> SocketAddr {
    let at = line
        .find(key)
        .unwrap_or_else(|| panic!("{key} in the listening line: {line}"))
        + key.len();
    let text: String = line[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    text.parse()
        .unwrap_or_else(|e| panic!("{key}{text}: {e} in {line}"))
}

impl Served {
    fn start(dir: &TempDir, extra: &[&str]) -> Served {
        let mut command = chainsig();
        command
            .args(["serve", "--http", "127.0.0.1:0", "--keys"])
            .arg(&dir.0)
            .arg("--auth-tokens")
            .arg(dir.0.join("tokens"))
            .args(extra);
        Served::spawn(command)
    }

    fn spawn(mut command: Command) -> Served {
        let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Served {
            child,
            lines,
            log: String::new(),
            http: "0.0.0.0:0".parse().unwrap(),
            grpc: "0.0.0.0:0".parse().unwrap(),
        };
        // The addresses come from the "listening" log line (the ports are the kernel's choice).
        let line = served.wait_for("listening");
        served.http = field(&line, "http=");
        served.grpc = field(&line, "grpc=");
        served
    }

    /// Waits (at most 60 s) for a log line containing `needle`, and returns it.
    fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push_str(&line);
                    self.log.push('\n');
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(e) => panic!("no {needle:?} line ({e}) in: {}", self.log),
            }
        }
    }

    fn sigterm(&self) {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
    }

    /// Waits (at most 30 s) for the process to exit; its status code and the whole log.
    fn exit(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("still running 30 s after SIGTERM; log: {}", self.log);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // The reader thread ends at the end of the pipe, once the process is gone.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(10)) {
            self.log.push_str(&line);
            self.log.push('\n');
        }
        (status.code(), std::mem::take(&mut self.log))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn serves_until_sigterm_and_exits_zero() {
    let dir = keys_dir("run");
    let served = Served::start(&dir, &[]);
    let addr = served.http;
    // Without --grpc, gRPC is served on the --http listener, and the line says so.
    assert_eq!(served.grpc, addr);
    assert!(!served.log.contains("pw"), "a password reached the log");

    let (status, body) = http(
        addr,
        "GET /upcheck HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((status, body.as_str()), (200, "OK"));
    let rpc = r#"{"jsonrpc":"2.0","id":1,"method":"eth_accounts"}"#;
    let (status, _) = http(
        addr,
        &format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{rpc}", rpc.len()),
    );
    assert_eq!(status, 401);
    let (status, body) = http(
        addr,
        &format!("POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{rpc}", rpc.len()),
    );
    assert_eq!(status, 200);
    assert!(
        body.contains("0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"),
        "{body}"
    );

    let sign = r#"{"jsonrpc":"2.0","id":2,"method":"eth_sign","params":["0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f","0x68656c6c6f"]}"#;
    let (status, body) = http(
        addr,
        &format!("POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{sign}", sign.len()),
    );
    assert_eq!(status, 200);
    assert!(body.contains("\"result\":\"0x"), "{body}");

    runtime().block_on(grpc_sign(addr));

    served.sigterm();
    let (code, log) = served.exit();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("SIGTERM"), "{log}");
    // One audit line for the signature: the client's token, the key, the message hash (EIP-191
    // hash of "hello"); never the password or the token itself.
    let audit = log
        .lines()
        .find(|l| l.contains("audit") && l.contains("0x50b2c43f"))
        .unwrap_or_else(|| panic!("no audit line in: {log}"))
        .to_lowercase();
    assert!(audit.contains("token#1"), "{audit}");
    assert!(
        audit.contains("0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f"),
        "{audit}"
    );
    assert!(
        audit.contains("0x50b2c43fd39106bafbba0da34fc430e1f91e3c96ea2acee2bc34119f92b37750"),
        "{audit}"
    );
    assert!(!log.contains("tok-1") && !log.contains("pw"), "{log}");
}

#[test]
fn separate_grpc_listener_serves_until_sigterm_and_exits_zero() {
    let dir = keys_dir("grpc");
    let mut served = Served::start(&dir, &["--grpc", "127.0.0.1:0"]);
    let (http_addr, grpc_addr) = (served.http, served.grpc);
    assert_ne!(http_addr, grpc_addr, "a listener of its own");
    assert_eq!(grpc_addr.ip(), http_addr.ip());
    let runtime = runtime();
    runtime.block_on(async {
        grpc_sign(grpc_addr).await;
        grpc_verify(grpc_addr).await;
        // gRPC is still served on the --http listener.
        grpc_sign(http_addr).await;
    });
    // The HTTP routes are not on the gRPC listener; they are on --http.
    let upcheck = "GET /upcheck HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_eq!(http(grpc_addr, upcheck).0, 404);
    assert_eq!(http(http_addr, upcheck), (200, "OK".to_string()));
    // Both listeners' calls are in the one set of metrics (on --http): 2 refused, 2 signed.
    let (status, metrics) = http(
        http_addr,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    assert!(
        metrics
            .contains(r#"chainsig_requests_total{method="chainsig.v1.Signer/SignTransaction"} 2"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"chainsig_requests_total{method="chainsig.v1.Verifier/VerifyBatch"} 1"#),
        "{metrics}"
    );

    // SIGTERM with a signing stream open on the gRPC listener: the stream is still answered
    // after the signal, and the process exits 0 once the client ends it.
    runtime.block_on(async {
        use chainsig_server::grpc::pb::{self, signer_client::SignerClient};
        let (items, queue) = tokio::sync::mpsc::channel(4);
        let mut client = SignerClient::new(grpc_channel(grpc_addr).await);
        let with_token = authorized(tokio_stream::wrappers::ReceiverStream::new(queue));
        let mut answers = within("SignStream", client.sign_stream(with_token))
            .await
            .expect("a signing stream")
            .into_inner();
        let sign = |nonce: u64| {
            let items = items.clone();
            async move {
                items
                    .send(pb::SignStreamRequest {
                        id: nonce,
                        tx: Some(transaction(nonce)),
                    })
                    .await
                    .unwrap();
            }
        };
        sign(1).await;
        let first = within("a stream answer", answers.message())
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(
            first.outcome,
            Some(pb::sign_stream_response::Outcome::Signed(_))
        ));
        served.sigterm();
        served.wait_for("SIGTERM");
        sign(2).await;
        let second = within("a stream answer after SIGTERM", answers.message())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(second.id, 2);
        let Some(pb::sign_stream_response::Outcome::Signed(signed)) = second.outcome else {
            panic!("{second:?}")
        };
        check_signed(&signed);
        assert!(
            served.child.try_wait().unwrap().is_none(),
            "exited with a stream in flight"
        );
        drop(items);
        assert!(within("the end of the stream", answers.message())
            .await
            .unwrap()
            .is_none());
    });
    drop(runtime);
    let (code, log) = served.exit();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("stopped"), "{log}");
    assert!(!log.contains("tok-1") && !log.contains("pw"), "{log}");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Fails the test when `future` takes more than 20 s.
async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within 20 s"))
}

/// A gRPC channel in plain text (HTTP/2 with prior knowledge), with connect and call timeouts.
async fn grpc_channel(addr: SocketAddr) -> tonic::transport::Channel {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(20));
    within("gRPC connect", endpoint.connect())
        .await
        .expect("gRPC connection to the binary")
}

fn key_address() -> [u8; 20] {
    hex::decode("9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f")
        .unwrap()
        .try_into()
        .unwrap()
}

fn transaction(nonce: u64) -> chainsig_server::grpc::pb::Transaction {
    chainsig_server::grpc::pb::Transaction {
        from: key_address().to_vec(),
        chain_id: Some(1),
        nonce,
        gas: 21_000,
        to: vec![0x35; 20],
        value: vec![1],
        max_fee_per_gas: Some(vec![0x77, 0x35, 0x94, 0x00]),
        max_priority_fee_per_gas: Some(vec![0x3b, 0x9a, 0xca, 0x00]),
        ..Default::default()
    }
}

/// The raw transaction decodes and recovers to the key's address; the hash is keccak256(raw).
fn check_signed(signed: &chainsig_server::grpc::pb::SignedTransaction) {
    assert_eq!(signed.from, key_address().to_vec());
    let decoded = chainsig_eth::decode_raw(&signed.raw).expect("the raw transaction decodes");
    assert_eq!(
        decoded.from.as_slice(),
        &key_address()[..],
        "recovers to the key's address"
    );
    assert_eq!(
        signed.hash,
        chainsig_core::hash::keccak256(&signed.raw).to_vec()
    );
}

/// A gRPC request carrying the test's bearer token.
fn authorized<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", "Bearer tok-1".parse().unwrap());
    request
}

/// gRPC to the binary at `addr` (h2c): Signer.SignTransaction refused without the token,
/// answered with it, and the raw transaction decodes and recovers to the key's address.
async fn grpc_sign(addr: SocketAddr) {
    use chainsig_server::grpc::pb::{self, signer_client::SignerClient};
    let mut client = SignerClient::new(grpc_channel(addr).await);
    let request = pb::SignTransactionRequest {
        tx: Some(transaction(7)),
    };
    let refused = within("SignTransaction", client.sign_transaction(request.clone()))
        .await
        .expect_err("no token");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    let with_token = authorized(request);
    let signed = within("SignTransaction", client.sign_transaction(with_token))
        .await
        .expect("signed over gRPC")
        .into_inner()
        .signed
        .expect("a signed transaction");
    check_signed(&signed);
}

/// Verifier.VerifyBatch at `addr`: refused without the token; with it, a good signature and a
/// corrupted one get the right verdicts.
async fn grpc_verify(addr: SocketAddr) {
    use chainsig_core::Algorithm;
    use chainsig_server::grpc::pb::{self, verifier_client::VerifierClient};
    use chainsig_testkit::{record, GenSpec};
    let spec = GenSpec {
        alg: Algorithm::Secp256k1,
        seed: 3,
        invalid_ratio: 0.5,
        msg_len: 32,
    };
    let generated: Vec<_> = (0..16).map(|i| record(&spec, i)).collect();
    let request = pb::VerifyBatchRequest {
        alg: pb::Algorithm::Secp256k1 as i32,
        records: generated
            .iter()
            .map(|g| {
                format!(
                    r#"{{"pubkey":"{}","msg":"{}","sig":"{}"}}"#,
                    hex::encode(&g.pubkey),
                    hex::encode(&g.msg),
                    hex::encode(g.sig)
                )
            })
            .collect(),
        ..Default::default()
    };
    let mut client = VerifierClient::new(grpc_channel(addr).await);
    let refused = within("VerifyBatch", client.verify_batch(request.clone()))
        .await
        .expect_err("no token");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    let with_token = authorized(request);
    let answer = within("VerifyBatch", client.verify_batch(with_token))
        .await
        .expect("verified over gRPC")
        .into_inner();
    assert_eq!(answer.count, 16);
    assert!(answer.errors.is_empty(), "{:?}", answer.errors);
    let expected: Vec<bool> = generated.iter().map(|g| g.expect_valid()).collect();
    assert!(expected.iter().any(|v| *v) && expected.iter().any(|v| !*v));
    for (i, valid) in expected.iter().enumerate() {
        assert_eq!(
            answer.valid[i / 8] >> (i % 8) & 1 == 1,
            *valid,
            "record {i}"
        );
    }
}

#[test]
fn verify_only_serves_verification_without_keys() {
    let mut command = chainsig();
    command.args(["serve", "--http", "127.0.0.1:0", "--verify-only"]);
    let served = Served::spawn(command);
    let addr = served.http;
    let post = |body: &str| {
        http(
            addr,
            &format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()),
        )
    };
    let (status, body) = post(r#"{"jsonrpc":"2.0","id":1,"method":"eth_accounts"}"#);
    assert_eq!(status, 200);
    assert!(body.contains(r#""result":[]"#), "{body}");
    let (_, body) = post(
        r#"{"jsonrpc":"2.0","id":2,"method":"eth_sign","params":["0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f","0x68656c6c6f"]}"#,
    );
    assert!(body.contains("--verify-only"), "{body}");
    assert!(body.contains("-32000"), "{body}");
    // Verification answers as with keys.
    let record = chainsig_testkit::record(
        &chainsig_testkit::GenSpec {
            alg: chainsig_core::Algorithm::P256,
            seed: 8,
            invalid_ratio: 0.0,
            msg_len: 10,
        },
        0,
    );
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"chainsig_verifyBatch","params":[[{{"alg":"p256","pubkey":"{}","msg":"{}","sig":"{}"}}]]}}"#,
        hex::encode(&record.pubkey),
        hex::encode(&record.msg),
        hex::encode(record.sig)
    );
    let (status, body) = post(&call);
    assert_eq!(status, 200);
    assert!(body.contains(r#""valid":true"#), "{body}");
    served.sigterm();
    let (code, log) = served.exit();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("keys=0"), "{log}");
}

#[test]
fn verify_only_and_keys_exclude_each_other() {
    let dir = keys_dir("verify-only");
    let output = chainsig()
        .args(["serve", "--http", "127.0.0.1:0", "--verify-only", "--keys"])
        .arg(&dir.0)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--verify-only"), "{stderr}");
    let output = chainsig()
        .args(["serve", "--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--keys"), "{stderr}");
}

#[test]
fn refuses_options_it_does_not_implement() {
    let dir = keys_dir("refuse");
    for (extra, needle) in [
        (vec!["--tls-cert", "c.pem"], "--tls-cert: needs --tls-key"),
        (vec!["--tls-key", "k.pem"], "--tls-key: needs --tls-cert"),
        (vec!["--client-ca", "ca.pem"], "--client-ca: needs"),
        (vec!["--rate-limit", "0"], "--rate-limit: must be"),
        (
            vec!["--rate-burst", "5"],
            "--rate-burst: needs --rate-limit",
        ),
        (
            vec!["--tls-cert", "missing.pem", "--tls-key", "k.pem"],
            "--tls-cert missing.pem",
        ),
    ] {
        let output = chainsig()
            .args(["serve", "--http", "127.0.0.1:0", "--keys"])
            .arg(&dir.0)
            .args(&extra)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{extra:?}: {stderr}");
    }
    // A --grpc address that cannot be bound is named.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let output = chainsig()
        .args(["serve", "--http", "127.0.0.1:0", "--grpc", &taken, "--keys"])
        .arg(&dir.0)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("--grpc {taken}: cannot listen")),
        "{stderr}"
    );
    // A keys directory without keys is an error that names it.
    let empty = TempDir::new("empty");
    let output = chainsig()
        .args(["serve", "--http", "127.0.0.1:0", "--keys"])
        .arg(&empty.0)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--keys"));
}

#[test]
fn limit_flags_are_bounded() {
    let dir = keys_dir("limits");
    for (flag, value, limit) in [
        ("--max-body", "0", "1024..=1073741824"),
        ("--max-body", "18446744073709551615", "1024..=1073741824"),
        ("--max-batch", "0", "1..=65536"),
        ("--max-batch", "1000000", "1..=65536"),
        ("--max-records", "0", "1..=1048576"),
        ("--max-records", "99999999999", "1..=1048576"),
    ] {
        let output = chainsig()
            .args(["serve", "--http", "127.0.0.1:0", flag, value, "--keys"])
            .arg(&dir.0)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
        assert!(stderr.contains(limit), "{flag} {value}: {stderr}");
    }
}

/// geth's key files (one password for all), chainsig's own with their `.pass`, and a mnemonic's
/// accounts, served together.
#[test]
fn serves_geth_key_files_and_mnemonic_accounts() {
    let dir = keys_dir("geth-keys");
    let geth_key = PrivateKey::from_bytes(&[7; 32]).unwrap();
    let text = keystore::encrypt(&geth_key, b"shared", Kdf::Pbkdf2 { c: 2 }).unwrap();
    let name = format!(
        "UTC--2026-12-06T19-30-01.123456789Z--{}",
        hex::encode(geth_key.address())
    );
    std::fs::write(dir.0.join(name), text).unwrap();
    std::fs::write(dir.0.join("shared.txt"), "shared\n").unwrap();
    std::fs::write(
        dir.0.join("mnemonic"),
        "test test test test test test test test test test test junk\n",
    )
    .unwrap();
    let password = dir.0.join("shared.txt");
    let mnemonic = dir.0.join("mnemonic");
    let served = Served::start(
        &dir,
        &[
            "--password-file",
            password.to_str().unwrap(),
            "--mnemonic-file",
            mnemonic.to_str().unwrap(),
            "--hd-accounts",
            "2",
        ],
    );
    let rpc = r#"{"jsonrpc":"2.0","id":1,"method":"eth_accounts"}"#;
    let (status, body) = http(
        served.http,
        &format!("POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{rpc}", rpc.len()),
    );
    assert_eq!(status, 200);
    let body = body.to_lowercase();
    for address in [
        "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f".to_owned(),
        format!("{:#x}", geth_key.address()),
        "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266".to_owned(),
        "0x70997970c51812dc3a010c7d01b50e0d17dc79c8".to_owned(),
    ] {
        assert!(body.contains(&address), "{address} in {body}");
    }
    served.sigterm();
    let (code, log) = served.exit();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        !log.contains("shared") && !log.contains("test test"),
        "{log}"
    );
}

#[test]
fn refuses_key_files_it_cannot_or_should_not_open() {
    let dir = keys_dir("hostile");
    let start = |dir: &TempDir| {
        chainsig()
            .args(["serve", "--http", "127.0.0.1:0", "--keys"])
            .arg(&dir.0)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // A geth file without a password (no .pass beside it, none given, no terminal): named.
    let key = PrivateKey::from_bytes(&[7; 32]).unwrap();
    let text = keystore::encrypt(&key, b"x", Kdf::Pbkdf2 { c: 2 }).unwrap();
    let name = "UTC--2026-12-06T19-30-01.123456789Z--0000000000000000000000000000000000000007";
    std::fs::write(dir.0.join(name), &text).unwrap();
    let output = start(&dir);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(name) && stderr.contains("no password"),
        "{stderr}"
    );
    std::fs::remove_file(dir.0.join(name)).unwrap();
    // A keystore asking for scrypt p = 2^29 is refused at once, by file and parameter.
    let mut hostile: serde_json::Value = serde_json::from_str(&text).unwrap();
    hostile["crypto"]["kdf"] = "scrypt".into();
    hostile["crypto"]["kdfparams"] =
        serde_json::json!({"dklen": 32, "n": 2, "r": 1, "p": 1u64 << 29, "salt": "00"});
    std::fs::write(dir.0.join("zz.json"), hostile.to_string()).unwrap();
    std::fs::write(dir.0.join("zz.pass"), "x\n").unwrap();
    let begun = Instant::now();
    let output = start(&dir);
    assert!(begun.elapsed() < Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("zz.json") && stderr.contains("crypto.kdfparams.p"),
        "{stderr}"
    );
}

#[test]
fn sigterm_answers_every_verification_already_sent() {
    let dir = keys_dir("inflight");
    // A long gathering window: the requests are still in the batcher when the signal comes.
    let mut served = Served::start(&dir, &["--verify-window-us", "500000"]);
    let addr = served.http;
    let record = serde_json::json!({
        "alg": "secp256k1",
        "pubkey": format!("02{}", "11".repeat(32)),
        "digest": "22".repeat(32),
        "sig": "33".repeat(64),
    });
    let (sent, all_sent) = mpsc::channel();
    let clients: Vec<_> = (0..8)
        .map(|id| {
            let sent = sent.clone();
            let call = serde_json::json!({
                "jsonrpc": "2.0", "id": id, "method": "chainsig_verifyBatch",
                "params": [vec![record.clone(); id + 1]],
            })
            .to_string();
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
                stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                let request = format!("POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{call}", call.len());
                stream.write_all(request.as_bytes()).unwrap();
                sent.send(()).unwrap();
                let mut answer = String::new();
                stream.read_to_string(&mut answer).unwrap();
                answer
            })
        })
        .collect();
    for _ in 0..8 {
        all_sent.recv_timeout(Duration::from_secs(20)).unwrap();
    }
    // The requests have been written; give the server a moment to read them, then stop it.
    std::thread::sleep(Duration::from_millis(100));
    served.sigterm();
    served.wait_for("SIGTERM");
    for (id, client) in clients.into_iter().enumerate() {
        let answer = client.join().unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let body = answer.split_once("\r\n\r\n").unwrap().1;
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["id"], id, "{body}");
        let verdicts = body["result"].as_array().unwrap();
        assert_eq!(verdicts.len(), id + 1, "{body}");
        assert!(verdicts.iter().all(|v| v["error"].is_string()), "{body}");
    }
    let (code, log) = served.exit();
    assert_eq!(code, Some(0), "{log}");
}
