//! Shared test scaffolding: keystores with a fast KDF in a temporary directory, a server on
//! 127.0.0.1 port 0, and a small JSON-RPC client.

#![allow(dead_code)]

use chainsig_core::Registry;
use chainsig_eth::keystore::{self, Kdf};
use chainsig_eth::{ChainPolicy, PrivateKey};
use chainsig_server::batcher::BatcherConfig;
use chainsig_server::{auth, keys, AppState, Limits, RpcOptions};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The EIP-155 example key of the Ethereum spec (sender 0x9d8a…5a4f).
pub const EIP155_KEY: &str = "4646464646464646464646464646464646464646464646464646464646464646";
/// The EIP-1559 example key (sender 0xfe3b…bd73).
pub const EIP1559_KEY: &str = "8f2a55949038a9610f50fb23b5883af3b4ecb3c3bb792cbcefbd1542c692be63";

/// Writes `NAME.json` + `NAME.pass` for each key, with PBKDF2 at 2 iterations (tests only).
pub fn write_keys(dir: &std::path::Path, keys: &[&str]) {
    for (i, hex_key) in keys.iter().enumerate() {
        let key = PrivateKey::from_hex(hex_key).unwrap();
        let password = format!("password {i}");
        let text = keystore::encrypt(&key, password.as_bytes(), Kdf::Pbkdf2 { c: 2 }).unwrap();
        std::fs::write(dir.join(format!("key{i}.json")), text).unwrap();
        std::fs::write(dir.join(format!("key{i}.pass")), format!("{password}\n")).unwrap();
    }
}

pub struct TestServer {
    pub url: String,
    pub addr: SocketAddr,
    pub state: Arc<AppState>,
    pub http: reqwest::Client,
    pub token: Option<String>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
    _dir: tempfile::TempDir,
}

pub struct Options {
    pub tokens: Option<&'static str>,
    pub limits: Limits,
    pub batcher: BatcherConfig,
    pub registry: Registry,
    /// The signer's chain policy (default: requests name their chain, nothing unprotected).
    pub chain: ChainPolicy,
    pub rpc: RpcOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tokens: None,
            limits: Limits::default(),
            batcher: BatcherConfig::default(),
            registry: chainsig_cpu::cpu_registry(),
            chain: ChainPolicy::default(),
            rpc: RpcOptions::default(),
        }
    }
}

impl TestServer {
    pub async fn start(options: Options) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        write_keys(dir.path(), &[EIP155_KEY, EIP1559_KEY]);
        let mut signer = keys::load_dir(dir.path()).unwrap();
        signer.set_policy(options.chain);
        let tokens = options.tokens.map(|t| auth::Tokens::parse(t).unwrap());
        let state = AppState::with_rpc(
            signer,
            options.registry,
            tokens,
            options.limits,
            options.batcher,
            options.rpc,
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (shutdown, stop) = oneshot::channel::<()>();
        let task = tokio::spawn(chainsig_server::serve(listener, state.clone(), async {
            let _ = stop.await;
        }));
        TestServer {
            url: format!("http://{addr}"),
            addr,
            state,
            http: reqwest::Client::new(),
            token: options
                .tokens
                .map(|t| t.lines().next().unwrap().trim().to_string()),
            shutdown: Some(shutdown),
            task: Some(task),
            _dir: dir,
        }
    }

    /// Asks the server to stop and waits until it has.
    pub async fn stop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.authorised(self.http.post(format!("{}{path}", self.url)))
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.authorised(self.http.get(format!("{}{path}", self.url)))
    }

    /// The Prometheus text of `GET /metrics`.
    pub async fn metrics(&self) -> String {
        self.get("/metrics")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    fn authorised(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Posts a raw body to `/` and returns the status and the JSON answer (Null for no body).
    pub async fn raw(&self, body: impl Into<reqwest::Body>) -> (u16, Value) {
        let response = self
            .post("/")
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap()
        };
        (status, value)
    }

    /// One JSON-RPC call; the whole response object.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let (status, answer) = self
            .raw(json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string())
            .await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["jsonrpc"], "2.0");
        assert_eq!(answer["id"], 7);
        answer
    }

    /// One JSON-RPC call that must succeed; its result.
    pub async fn result(&self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params).await;
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// One JSON-RPC call that must fail; its error code and message.
    pub async fn error(&self, method: &str, params: Value) -> (i64, String) {
        let answer = self.call(method, params).await;
        error_of(&answer)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// The code and message of an error response.
pub fn error_of(answer: &Value) -> (i64, String) {
    assert!(
        answer.get("result").is_none(),
        "expected an error: {answer}"
    );
    (
        answer["error"]["code"].as_i64().expect("error code"),
        answer["error"]["message"]
            .as_str()
            .expect("error message")
            .to_string(),
    )
}

pub fn unhex(text: &str) -> Vec<u8> {
    hex::decode(text.strip_prefix("0x").unwrap_or(text)).unwrap()
}

/// A gRPC channel to the server (HTTP/2 with prior knowledge over plain TCP).
pub async fn grpc_channel(server: &TestServer) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(server.url.clone())
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// An interceptor that adds `authorization: Bearer TOKEN` when `token` is given.
pub fn bearer(
    token: Option<String>,
) -> impl FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Clone {
    move |mut request: tonic::Request<()>| {
        if let Some(token) = &token {
            request
                .metadata_mut()
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
        }
        Ok(request)
    }
}
