//! TLS and mutual TLS over real sockets on 127.0.0.1, with a test CA made here by rcgen.

use crate::common;

use chainsig_server::batcher::BatcherConfig;
use chainsig_server::{keys, tls, AppState, Limits};
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

struct Authority {
    cert: Certificate,
    key: KeyPair,
}

impl Authority {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Authority { cert, key }
    }

    /// A leaf certificate for `name`, for a server or for a client.
    fn issue(&self, name: &str, client: bool) -> (Certificate, KeyPair) {
        let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![if client {
            ExtendedKeyUsagePurpose::ClientAuth
        } else {
            ExtendedKeyUsagePurpose::ServerAuth
        }];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (cert, key)
    }
}

struct TlsServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

async fn start(
    server_ca: &Authority,
    client_ca: Option<&Authority>,
    tokens: Option<&str>,
) -> TlsServer {
    start_with(server_ca, client_ca, tokens, false).await.0
}

/// A TLS server, with a separate gRPC listener (its address returned) when `grpc_listener`.
async fn start_with(
    server_ca: &Authority,
    client_ca: Option<&Authority>,
    tokens: Option<&str>,
    grpc_listener: bool,
) -> (TlsServer, Option<SocketAddr>) {
    let dir = tempfile::tempdir().unwrap();
    common::write_keys(dir.path(), &[common::EIP155_KEY]);
    let (cert, key) = server_ca.issue("localhost", false);
    // Through files, as `chainsig serve --tls-cert --tls-key --client-ca` reads them.
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let files = tls::TlsFiles {
        cert: write("cert.pem", cert.pem()),
        key: write("key.pem", key.serialize_pem()),
        client_ca: client_ca.map(|ca| write("client-ca.pem", ca.cert.pem())),
    };
    let config = files.load().unwrap();
    let signer = keys::load_dir(dir.path()).unwrap();
    let state = AppState::new(
        signer,
        chainsig_cpu::cpu_registry(),
        tokens.map(|t| chainsig_server::auth::Tokens::parse(t).unwrap()),
        Limits::default(),
        BatcherConfig::default(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let stopped = async {
        let _ = stopped.await;
    };
    let (task, grpc_addr) = if grpc_listener {
        let grpc = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let grpc_addr = grpc.local_addr().unwrap();
        let listeners = chainsig_server::Listeners {
            http: listener,
            grpc: Some(grpc),
        };
        let task = tokio::spawn(chainsig_server::serve_listeners(
            state,
            listeners,
            Some(config),
            stopped,
            None,
        ));
        (task, Some(grpc_addr))
    } else {
        let task = tokio::spawn(chainsig_server::serve_tls(listener, state, config, stopped));
        (task, None)
    };
    let server = TlsServer {
        addr,
        stop: Some(stop),
        task,
        _dir: dir,
    };
    (server, grpc_addr)
}

impl TlsServer {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(std::time::Duration::from_secs(20), self.task)
            .await
            .expect("the server stops within 20 s")
            .unwrap()
            .unwrap();
    }
}

/// One HTTPS exchange trusting `trusted`, optionally presenting a client certificate: the status
/// line's code and the body, or why the exchange failed.
async fn exchange(
    addr: SocketAddr,
    trusted: &Authority,
    client: Option<&(Certificate, KeyPair)>,
    request: &str,
) -> Result<(u16, String), String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(trusted.cert.der().clone()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from(cert.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut stream = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .await
        .map_err(|e| format!("read: {e}"))?;
    let answer = String::from_utf8(answer).map_err(|e| e.to_string())?;
    if answer.len() < 12 {
        return Err(format!("no HTTP answer: {answer:?}"));
    }
    let status = answer[9..12].parse().map_err(|_| answer.clone())?;
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

const UPCHECK: &str = "GET /upcheck HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

fn accounts(token: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_accounts"}"#;
    format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn tls_serves_clients_that_trust_the_ca() {
    let ca = Authority::new("chainsig test CA");
    let server = start(&ca, None, Some("tls-token")).await;
    let (status, body) = exchange(server.addr, &ca, None, UPCHECK).await.unwrap();
    assert_eq!((status, body.as_str()), (200, "OK"));
    let (status, body) = exchange(server.addr, &ca, None, &accounts("tls-token"))
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(
        body.contains("0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"),
        "{body}"
    );
    let (status, _) = exchange(server.addr, &ca, None, &accounts("wrong"))
        .await
        .unwrap();
    assert_eq!(status, 401);

    // A client that trusts another CA refuses the server's certificate.
    let other = Authority::new("another CA");
    let refused = exchange(server.addr, &other, None, UPCHECK).await;
    assert!(refused.unwrap_err().contains("handshake"));

    // Plain HTTP on the TLS port gets no HTTP answer.
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(UPCHECK.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer).await;
    assert!(!answer.starts_with(b"HTTP/1.1 200"));
    server.stop().await;
}

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate_from_the_client_ca() {
    let server_ca = Authority::new("server CA");
    let client_ca = Authority::new("client CA");
    let server = start(&server_ca, Some(&client_ca), None).await;

    let good = client_ca.issue("client-1", true);
    let (status, body) = exchange(server.addr, &server_ca, Some(&good), UPCHECK)
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (200, "OK"));
    let (status, body) = exchange(server.addr, &server_ca, Some(&good), &accounts("unused"))
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");

    // No certificate, or one from a CA the server does not accept: no answer.
    let stranger = Authority::new("stranger CA").issue("client-2", true);
    for client in [None, Some(&stranger)] {
        let refused = exchange(server.addr, &server_ca, client, UPCHECK).await;
        assert!(refused.is_err(), "{refused:?}");
    }
    server.stop().await;
}

#[test]
fn bad_tls_files_are_named() {
    let ca = Authority::new("CA");
    let (cert, key) = ca.issue("localhost", false);
    let err = tls::server_config(b"not pem", key.serialize_pem().as_bytes(), None).unwrap_err();
    assert!(err.starts_with("--tls-cert"), "{err}");
    let err = tls::server_config(cert.pem().as_bytes(), b"", None).unwrap_err();
    assert!(err.starts_with("--tls-key"), "{err}");
    let err = tls::server_config(
        cert.pem().as_bytes(),
        key.serialize_pem().as_bytes(),
        Some(b""),
    )
    .unwrap_err();
    assert!(err.starts_with("--client-ca"), "{err}");
    // A key that does not belong to the certificate.
    let (_, other_key) = ca.issue("localhost", false);
    assert!(tls::server_config(
        cert.pem().as_bytes(),
        other_key.serialize_pem().as_bytes(),
        None
    )
    .is_err());
}

/// A gRPC channel over TLS (HTTP/2 by ALPN) trusting `trusted`, with a client certificate or not.
async fn grpc_over_tls(
    addr: SocketAddr,
    trusted: &Authority,
    client: Option<&(Certificate, KeyPair)>,
) -> Result<tonic::transport::Channel, tonic::transport::Error> {
    use tonic::transport::{Certificate as Ca, ClientTlsConfig, Endpoint, Identity};
    let mut config = ClientTlsConfig::new()
        .ca_certificate(Ca::from_pem(trusted.cert.pem()))
        .domain_name("localhost");
    if let Some((cert, key)) = client {
        config = config.identity(Identity::from_pem(cert.pem(), key.serialize_pem()));
    }
    Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(config)?
        .connect()
        .await
}

fn grpc_sign_request() -> chainsig_server::grpc::pb::SignTransactionRequest {
    use chainsig_server::grpc::pb;
    pb::SignTransactionRequest {
        tx: Some(pb::Transaction {
            chain_id: Some(1),
            nonce: 5,
            gas: 21_000,
            to: vec![0x35; 20],
            gas_price: Some(vec![0x04, 0xa8, 0x17, 0xc8, 0x00]),
            ..Default::default()
        }),
    }
}

#[tokio::test]
async fn grpc_over_tls_and_mutual_tls() {
    use chainsig_server::grpc::pb::signer_client::SignerClient;
    let ca = Authority::new("gRPC test CA");
    let server = start(&ca, None, Some("grpc-token")).await;
    let channel = grpc_over_tls(server.addr, &ca, None).await.unwrap();
    let token = |t: &'static str| {
        move |mut request: tonic::Request<()>| {
            request
                .metadata_mut()
                .insert("authorization", format!("Bearer {t}").parse().unwrap());
            Ok(request)
        }
    };
    let signed = SignerClient::with_interceptor(channel.clone(), token("grpc-token"))
        .sign_transaction(grpc_sign_request())
        .await
        .unwrap()
        .into_inner()
        .signed
        .unwrap();
    let decoded = chainsig_eth::decode_raw(&signed.raw).unwrap();
    assert_eq!(
        decoded.from.to_checksum(None),
        "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
    );
    let status = SignerClient::with_interceptor(channel, token("wrong"))
        .sign_transaction(grpc_sign_request())
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    // HTTP/1.1 still answers on the same TLS port.
    let (status, body) = exchange(server.addr, &ca, None, UPCHECK).await.unwrap();
    assert_eq!((status, body.as_str()), (200, "OK"));
    // A client trusting another CA does not get through.
    let other = Authority::new("another CA");
    let refused = match grpc_over_tls(server.addr, &other, None).await {
        Err(_) => true,
        Ok(channel) => SignerClient::new(channel)
            .sign_transaction(grpc_sign_request())
            .await
            .is_err(),
    };
    assert!(refused);
    server.stop().await;

    // Mutual TLS: a certificate from the client CA is required.
    let server_ca = Authority::new("server CA");
    let client_ca = Authority::new("client CA");
    let server = start(&server_ca, Some(&client_ca), None).await;
    let good = client_ca.issue("grpc-client", true);
    let channel = grpc_over_tls(server.addr, &server_ca, Some(&good))
        .await
        .unwrap();
    let signed = SignerClient::new(channel)
        .sign_transaction(grpc_sign_request())
        .await
        .unwrap()
        .into_inner()
        .signed
        .unwrap();
    assert!(chainsig_eth::decode_raw(&signed.raw).is_ok());
    let stranger = Authority::new("stranger CA").issue("grpc-client-2", true);
    for client in [None, Some(&stranger)] {
        let refused = match grpc_over_tls(server.addr, &server_ca, client).await {
            Err(_) => true,
            Ok(channel) => SignerClient::new(channel)
                .sign_transaction(grpc_sign_request())
                .await
                .is_err(),
        };
        assert!(
            refused,
            "a client without an accepted certificate was served"
        );
    }
    server.stop().await;
}

/// Fails the test when `future` takes more than 20 s.
async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(20), future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within 20 s"))
}

#[tokio::test]
async fn separate_grpc_listener_has_the_same_tls_and_mutual_tls() {
    use chainsig_server::grpc::pb::signer_client::SignerClient;
    let server_ca = Authority::new("server CA");
    let client_ca = Authority::new("client CA");
    let (server, grpc) = start_with(&server_ca, Some(&client_ca), Some("tls-grpc"), true).await;
    let grpc = grpc.unwrap();
    let good = client_ca.issue("grpc-client", true);
    let channel = within("TLS connect", grpc_over_tls(grpc, &server_ca, Some(&good)))
        .await
        .unwrap();
    let token = |t: &'static str| {
        move |mut request: tonic::Request<()>| {
            request
                .metadata_mut()
                .insert("authorization", format!("Bearer {t}").parse().unwrap());
            Ok(request)
        }
    };
    let signed = within(
        "SignTransaction",
        SignerClient::with_interceptor(channel.clone(), token("tls-grpc"))
            .sign_transaction(grpc_sign_request()),
    )
    .await
    .unwrap()
    .into_inner()
    .signed
    .unwrap();
    assert_eq!(
        chainsig_eth::decode_raw(&signed.raw)
            .unwrap()
            .from
            .to_checksum(None),
        "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
    );
    // The tokens apply on the gRPC listener too.
    let status = within(
        "SignTransaction",
        SignerClient::new(channel).sign_transaction(grpc_sign_request()),
    )
    .await
    .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    // Without a client certificate, or with one from another CA: not served.
    let stranger = Authority::new("stranger CA").issue("grpc-client-2", true);
    for client in [None, Some(&stranger)] {
        let refused = match within("TLS connect", grpc_over_tls(grpc, &server_ca, client)).await {
            Err(_) => true,
            Ok(channel) => within(
                "SignTransaction",
                SignerClient::with_interceptor(channel, token("tls-grpc"))
                    .sign_transaction(grpc_sign_request()),
            )
            .await
            .is_err(),
        };
        assert!(
            refused,
            "a client without an accepted certificate was served"
        );
    }
    // Plain-text HTTP/2 (h2c) on the TLS gRPC port gets no answer.
    let plain = tonic::transport::Endpoint::from_shared(format!("http://{grpc}"))
        .unwrap()
        .connect_timeout(std::time::Duration::from_secs(5))
        .timeout(std::time::Duration::from_secs(5));
    let refused = match within("h2c connect", plain.connect()).await {
        Err(_) => true,
        Ok(channel) => within(
            "SignTransaction",
            SignerClient::with_interceptor(channel, token("tls-grpc"))
                .sign_transaction(grpc_sign_request()),
        )
        .await
        .is_err(),
    };
    assert!(refused, "plain text was served on the TLS gRPC listener");
    // And the HTTP listener keeps its TLS.
    let (status, body) = exchange(server.addr, &server_ca, Some(&good), UPCHECK)
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (200, "OK"));
    server.stop().await;
}
