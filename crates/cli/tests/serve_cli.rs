//! `chainsig serve` through the built binary: it starts on a keys directory, answers on the
//! address it logs, refuses gRPC (not implemented) and incomplete TLS options, and exits 0 on
//! SIGTERM.

use chainsig_eth::keystore::{self, Kdf};
use chainsig_eth::PrivateKey;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

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
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_string();
    (status, body)
}

#[test]
fn serves_until_sigterm_and_exits_zero() {
    let dir = keys_dir("run");
    let mut child = chainsig()
        .args(["serve", "--http", "127.0.0.1:0", "--keys"])
        .arg(&dir.0)
        .arg("--auth-tokens")
        .arg(dir.0.join("tokens"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = BufReader::new(child.stderr.take().unwrap());
    // The address comes from the "listening" log line (the port is the kernel's choice).
    let mut addr = None;
    let mut seen = String::new();
    for _ in 0..50 {
        let mut line = String::new();
        if log.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
        if line.contains("listening") {
            let at = line.find("http=").expect("http= in the listening line") + 5;
            let text: String = line[at..]
                .chars()
                .take_while(|c| !c.is_whitespace())
                .collect();
            addr = Some(text.parse::<SocketAddr>().unwrap());
            break;
        }
    }
    let addr = addr.unwrap_or_else(|| panic!("no listening line in: {seen}"));
    assert!(!seen.contains("pw"), "a password reached the log: {seen}");

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

    grpc_sign_on_the_http_listener(addr);

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let mut rest = String::new();
    log.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("SIGTERM"), "{rest}");
    // One audit line for the signature: the client's token, the key, the message hash (EIP-191
    // hash of "hello"); never the password or the token itself.
    let audit = rest
        .lines()
        .find(|l| l.contains("audit"))
        .unwrap_or_else(|| panic!("no audit line in: {rest}"))
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
    let whole = format!("{seen}{rest}");
    assert!(!whole.contains("tok-1") && !whole.contains("pw"), "{whole}");
}

/// gRPC on the binary's own listener (h2c): Signer.SignTransaction refused without the token,
/// answered with it, and the raw transaction decodes and recovers to the key's address.
fn grpc_sign_on_the_http_listener(addr: SocketAddr) {
    use chainsig_server::grpc::pb::{self, signer_client::SignerClient};
    let key: [u8; 20] = hex::decode("9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f")
        .unwrap()
        .try_into()
        .unwrap();
    let tx = pb::Transaction {
        from: key.to_vec(),
        chain_id: Some(1),
        nonce: 7,
        gas: 21_000,
        to: vec![0x35; 20],
        value: vec![1],
        max_fee_per_gas: Some(vec![0x77, 0x35, 0x94, 0x00]),
        max_priority_fee_per_gas: Some(vec![0x3b, 0x9a, 0xca, 0x00]),
        ..Default::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .expect("gRPC connection to the binary");
        let mut client = SignerClient::new(channel);
        let request = pb::SignTransactionRequest {
            tx: Some(tx.clone()),
        };
        let refused = client
            .sign_transaction(request.clone())
            .await
            .expect_err("no token");
        assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
        let mut with_token = tonic::Request::new(request);
        with_token
            .metadata_mut()
            .insert("authorization", "Bearer tok-1".parse().unwrap());
        let signed = client
            .sign_transaction(with_token)
            .await
            .expect("signed over gRPC")
            .into_inner()
            .signed
            .expect("a signed transaction");
        assert_eq!(signed.from, key.to_vec());
        let decoded = chainsig_eth::decode_raw(&signed.raw).expect("the raw transaction decodes");
        assert_eq!(
            decoded.from.as_slice(),
            &key[..],
            "recovers to the key's address"
        );
        assert_eq!(
            signed.hash,
            chainsig_core::hash::keccak256(&signed.raw).to_vec()
        );
    });
}

#[test]
fn refuses_options_it_does_not_implement() {
    let dir = keys_dir("refuse");
    for (extra, needle) in [
        (
            vec!["--grpc", "127.0.0.1:9"],
            "served on the --http listener",
        ),
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
