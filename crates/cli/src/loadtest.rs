//! `chainsig loadtest`: drives JSON-RPC traffic at a `chainsig serve` on loopback (or at a server
//! started in this process) and reports throughput, latency percentiles, errors and lost responses.
//!
//! Why hand-written rather than an off-the-shelf HTTP load tool: every response must be checked
//! against what was asked (the signed transaction is there, the verdicts match the generator's),
//! which generic tools cannot do, and the run must be bounded both in requests and in time.
//!
//! * Each of `--connections` workers owns one HTTP/1.1 keep-alive connection (opened before the
//!   clock starts, reopened after a failure) and sends one request at a time; the request index
//!   comes from a shared counter, so nonces (and JSON-RPC ids) are distinct across the run. A run ends at `--requests` requests or `--duration-secs`, whichever
//!   comes first (requests in flight at the deadline still finish, bounded by `--timeout-ms`).
//! * An *error* is an answer that is wrong: a non-200 status, a JSON-RPC error, a result that is
//!   not what was asked. A *lost* request got no answer at all (connection failure, timeout, body
//!   cut short).
//! * Latencies (send to full body) go into one HDR histogram per worker, merged at the end.
//! * `grpc-sign` (in `loadtest_grpc`) runs one gRPC signing stream per connection with
//!   `--in-flight` requests outstanding on each; each answered item counts as a request.
//! * Only loopback hosts are accepted: a load test aimed at a remote machine by a typo is refused.
//!
//! The client is hyper's bare HTTP/1.1 connection API, not a pooled client such as reqwest: the
//! load generator shares two cores with the server it measures, and a pooled client's per-request
//! work (URL parsing and host normalisation, pool checkout, a second task driving each
//! connection) cost more CPU than the server's own HTTP handling. Here the URL is resolved once,
//! the fixed headers are built once, and each worker drives its connection in its own task.
//! Answers are parsed into typed structs rather than `serde_json::Value` trees.

use anyhow::{bail, Context};
use chainsig_core::Algorithm;
use chainsig_eth::keystore::{self, Kdf};
use chainsig_eth::PrivateKey;
use chainsig_server::batcher::BatcherConfig;
use chainsig_server::{AppState, Limits};
use chainsig_testkit::{record, GenSpec};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Method, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use rand::RngCore;
use rayon::prelude::*;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Value};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::TcpStream;
use zeroize::Zeroizing;

/// Latencies above this are clamped into the histogram's top bucket (they are also lost or late).
pub(crate) const MAX_LATENCY_US: u64 = 3_600_000_000;
/// Verify batches are drawn round-robin from this many pre-generated distinct batches at most.
const VERIFY_POOL: usize = 32;
/// One signing answer in this many is decoded in full and its sender recovered and compared
/// (the others are checked for shape: a type-2 raw transaction in hex). Decoding every answer
/// would spend the client's CPU, which shares the machine with the server, on recovery.
pub(crate) const FULL_CHECK_EVERY: u64 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    /// eth_signTransaction of EIP-1559 transactions with distinct nonces.
    Sign,
    /// chainsig_verifyBatch of generated records, verdicts checked against the generator's.
    Verify,
    /// gRPC Signer.SignStream: EIP-1559 transactions with distinct nonces on long-lived streams
    /// (one per connection), many in flight on each (see `loadtest_grpc`).
    #[serde(rename = "grpc-sign")]
    GrpcSign,
}

#[derive(clap::Args)]
pub struct LoadtestArgs {
    /// Server to load, e.g. http://127.0.0.1:8545 (loopback only). Without it a server is started
    /// in this process on 127.0.0.1:0 with a throwaway key.
    #[arg(long)]
    url: Option<String>,
    /// Bearer token for the server's --auth-tokens.
    #[arg(long)]
    token: Option<String>,
    /// What to send.
    #[arg(long, value_enum)]
    scenario: Scenario,
    /// Concurrent keep-alive connections, one request in flight on each.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Most requests to send.
    #[arg(long, default_value_t = 10_000)]
    requests: u64,
    /// Longest run, in seconds.
    #[arg(long, default_value_t = 60)]
    duration_secs: u64,
    /// Longest wait for one answer, in milliseconds (after it the request counts as lost).
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// verify: the algorithm of the records (sm2 or secp256k1).
    #[arg(long, default_value = "secp256k1")]
    alg: String,
    /// verify: records in each chainsig_verifyBatch call.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// verify: share of generated records that are corrupted.
    #[arg(long, default_value_t = 0.25)]
    invalid_ratio: f64,
    /// grpc-sign: signing requests in flight on each stream.
    #[arg(long, default_value_t = 512)]
    in_flight: usize,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// A validated plan.
pub(crate) struct Plan {
    pub(crate) scenario: Scenario,
    pub(crate) connections: usize,
    pub(crate) requests: u64,
    pub(crate) duration: Duration,
    pub(crate) timeout: Duration,
    batch: usize,
    alg: Algorithm,
    invalid_ratio: f64,
    pub(crate) in_flight: usize,
}

#[derive(Serialize, Debug)]
pub struct LatencyUs {
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
}

#[derive(Serialize, Debug)]
pub struct Report {
    pub scenario: Scenario,
    pub url: String,
    pub in_process_server: bool,
    pub connections: usize,
    pub requests_limit: u64,
    pub duration_limit_s: u64,
    /// `requests` or `duration`.
    pub stopped_by: &'static str,
    pub sent: u64,
    pub ok: u64,
    pub errors: u64,
    pub lost: u64,
    pub elapsed_s: f64,
    /// Correct answers per second.
    pub requests_per_s: f64,
    /// verify: records in each request (1 for sign).
    pub records_per_request: usize,
    /// Records (signatures made or checked) per second in correct answers.
    pub records_per_s: f64,
    pub latency_us: LatencyUs,
    /// The first wrong or lost answer, described (never a token).
    pub first_problem: Option<String>,
    /// Seconds since the Unix epoch at the start of the run.
    pub started_unix: u64,
}

pub fn run(args: LoadtestArgs) -> anyhow::Result<ExitCode> {
    let plan = plan(&args)?;
    let target = match &args.url {
        Some(url) => Some(loopback_url(url)?),
        None => None,
    };
    let token = args.token.map(Zeroizing::new);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the Tokio runtime")?;
    let report = runtime.block_on(async move {
        match target {
            Some(url) => drive(&plan, url, token, false).await,
            None => {
                let server = InProcess::start().await?;
                let outcome = drive(&plan, server.url.clone(), token, true).await;
                server.stop().await;
                outcome
            }
        }
    })?;
    print_report(&report);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--json {}: cannot write", path.display()))?;
    }
    Ok(if report.errors == 0 && report.lost == 0 && report.ok > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn plan(args: &LoadtestArgs) -> anyhow::Result<Plan> {
    if !(1..=4096).contains(&args.connections) {
        bail!("--connections: must be from 1 to 4096");
    }
    if !(1..=1_000_000_000).contains(&args.requests) {
        bail!("--requests: must be from 1 to 10^9");
    }
    if !(1..=86_400).contains(&args.duration_secs) {
        bail!("--duration-secs: must be from 1 to 86400");
    }
    if !(1..=600_000).contains(&args.timeout_ms) {
        bail!("--timeout-ms: must be from 1 to 600000");
    }
    if !(1..=65_536).contains(&args.batch) {
        bail!("--batch: must be from 1 to 65536");
    }
    if !(1..=65_536).contains(&args.in_flight) {
        bail!("--in-flight: must be from 1 to 65536");
    }
    if !(0.0..=1.0).contains(&args.invalid_ratio) {
        bail!("--invalid-ratio: must be from 0 to 1");
    }
    let alg = match args.alg.as_str() {
        "sm2" => Algorithm::Sm2,
        "secp256k1" => Algorithm::Secp256k1,
        other => bail!("--alg {other}: loadtest generates sm2 or secp256k1 records"),
    };
    Ok(Plan {
        scenario: args.scenario,
        connections: args.connections,
        requests: args.requests,
        duration: Duration::from_secs(args.duration_secs),
        timeout: Duration::from_millis(args.timeout_ms),
        batch: if args.scenario == Scenario::Verify {
            args.batch
        } else {
            1
        },
        alg,
        invalid_ratio: args.invalid_ratio,
        in_flight: args.in_flight,
    })
}

/// Parses `url` and refuses anything but plain HTTP to a loopback host.
pub fn loopback_url(url: &str) -> anyhow::Result<url::Url> {
    let parsed = url::Url::parse(url).with_context(|| format!("--url {url}: not a URL"))?;
    match parsed.scheme() {
        "http" => {}
        "https" => bail!("--url {url}: loadtest speaks plain HTTP only (no TLS client built in)"),
        other => bail!("--url {url}: scheme {other} is not http"),
    }
    let host = parsed.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = if let Ok(ip) = bare.parse::<IpAddr>() {
        ip.is_loopback()
    } else if bare.eq_ignore_ascii_case("localhost") {
        // localhost must resolve to loopback addresses only.
        let port = parsed.port_or_known_default().unwrap_or(80);
        let addrs: Vec<SocketAddr> = (bare, port)
            .to_socket_addrs()
            .with_context(|| format!("--url {url}: cannot resolve {bare}"))?
            .collect();
        !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
    } else {
        false
    };
    if !loopback {
        bail!(
            "--url {url}: host {} is not a loopback address; loadtest only targets 127.0.0.0/8, [::1] or localhost",
            parsed.host_str().unwrap_or("(none)")
        );
    }
    Ok(parsed)
}

/// A server in this process on 127.0.0.1:0 with one random key in a throwaway keystore.
struct InProcess {
    url: url::Url,
    shutdown: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

impl InProcess {
    async fn start() -> anyhow::Result<InProcess> {
        let dir = tempfile::tempdir().context("cannot make a temporary keys directory")?;
        let key = loop {
            let mut bytes = Zeroizing::new([0u8; 32]);
            rand::rngs::OsRng.fill_bytes(&mut bytes[..]);
            if let Ok(key) = PrivateKey::from_bytes(&bytes) {
                break key;
            }
        };
        let mut password = Zeroizing::new([0u8; 16]);
        rand::rngs::OsRng.fill_bytes(&mut password[..]);
        let password = Zeroizing::new(hex::encode(&password[..]));
        // A cheap KDF: the key is random, used for this run only, and deleted with the directory.
        let text = keystore::encrypt(&key, password.as_bytes(), Kdf::Pbkdf2 { c: 2 })
            .map_err(|e| anyhow::anyhow!("throwaway keystore: {e}"))?;
        std::fs::write(dir.path().join("loadtest.json"), text)?;
        std::fs::write(dir.path().join("loadtest.pass"), password.as_bytes())?;
        let signer = chainsig_server::keys::load_dir(dir.path())
            .map_err(|e| anyhow::anyhow!("throwaway keystore: {e}"))?;
        let state = AppState::new(
            signer,
            crate::backends::registry("auto"),
            None,
            Limits::default(),
            BatcherConfig::default(),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot listen on 127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(chainsig_server::serve(listener, state, async {
            let _ = stop.await;
        }));
        let url = url::Url::parse(&format!("http://{addr}/"))?;
        Ok(InProcess {
            url,
            shutdown,
            task,
            _dir: dir,
        })
    }

    async fn stop(self) {
        let _ = self.shutdown.send(());
        let _ = self.task.await;
    }
}

/// What each worker sends and how it checks the answer.
enum Work {
    Sign {
        from: String,
    },
    Verify {
        /// Pre-serialised record arrays and the verdicts the generator expects for them.
        pool: Vec<(String, Vec<bool>)>,
    },
}

impl Work {
    fn body(&self, index: u64) -> String {
        match self {
            Work::Sign { from } => format!(
                concat!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"eth_signTransaction","params":[{{"#,
                    r#""from":"{from}","chainId":"0x1","nonce":"0x{i:x}","#,
                    r#""maxPriorityFeePerGas":"0x3b9aca00","maxFeePerGas":"0x77359400","#,
                    r#""gas":"0x5208","to":"0x3535353535353535353535353535353535353535","#,
                    r#""value":"0x1","data":"0x"}}]}}"#
                ),
                i = index,
                from = from
            ),
            Work::Verify { pool } => {
                let (records, _) = &pool[index as usize % pool.len()];
                format!(
                    r#"{{"jsonrpc":"2.0","id":{index},"method":"chainsig_verifyBatch","params":[{records}]}}"#
                )
            }
        }
    }

    /// Checks one answer (geth's `{raw, tx}` for a signature); `Err` says what is wrong with it.
    fn check(&self, index: u64, body: &[u8]) -> Result<(), String> {
        match self {
            Work::Sign { from } => {
                let answer: Answer<SignedAnswer> = parse_answer(index, body)?;
                let result = answer
                    .result
                    .ok_or_else(|| format!("request {index}: result: missing"))?;
                let raw = result
                    .raw
                    .strip_prefix("0x")
                    .ok_or_else(|| format!("request {index}: result: not a hex string"))?;
                let bytes =
                    hex::decode(raw).map_err(|e| format!("request {index}: result: {e}"))?;
                // An EIP-1559 envelope: type byte 2, then an RLP list.
                if bytes.len() < 70 || bytes[0] != 2 || bytes[1] < 0xc0 {
                    return Err(format!(
                        "request {index}: result: not a signed EIP-1559 transaction"
                    ));
                }
                if index % FULL_CHECK_EVERY == 0 {
                    let decoded = chainsig_eth::decode_raw(&bytes)
                        .map_err(|e| format!("request {index}: result: {e}"))?;
                    if !format!("{:?}", decoded.from).eq_ignore_ascii_case(from) {
                        return Err(format!(
                            "request {index}: result: recovers to {:?}, not {from}",
                            decoded.from
                        ));
                    }
                }
                Ok(())
            }
            Work::Verify { pool } => {
                let answer: Answer<Vec<VerdictAnswer>> = parse_answer(index, body)?;
                let verdicts = answer
                    .result
                    .ok_or_else(|| format!("request {index}: result: missing"))?;
                let (_, expected) = &pool[index as usize % pool.len()];
                if verdicts.len() != expected.len() {
                    return Err(format!(
                        "request {index}: result: {} verdicts for {} records",
                        verdicts.len(),
                        expected.len()
                    ));
                }
                for (i, (verdict, valid)) in verdicts.iter().zip(expected).enumerate() {
                    let agrees = if *valid {
                        verdict.valid == Some(true)
                    } else {
                        verdict.valid == Some(false) || verdict.error.is_some()
                    };
                    if !agrees {
                        return Err(format!(
                            "request {index}: record {i}: verdict {verdict:?}, generator says valid={valid}"
                        ));
                    }
                }
                Ok(())
            }
        }
    }
}

/// The part of `eth_signTransaction`'s `{raw, tx}` the load test checks.
#[derive(Deserialize)]
struct SignedAnswer {
    raw: String,
}

/// A JSON-RPC answer, typed: `id` as given (compared with the request's as a JSON value, so `3`
/// and `"3"` differ), `error` present even when it is `null`, and the scenario's `result`.
#[derive(Deserialize)]
struct Answer<R> {
    #[serde(default)]
    id: Value,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
    result: Option<R>,
}

/// One verdict of `chainsig_verifyBatch`: `{"valid": bool}` or `{"error": "..."}`.
#[derive(Deserialize, Debug)]
struct VerdictAnswer {
    valid: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// A field that is there, whatever its value (`null` included): `Some`. With `#[serde(default)]`
/// an absent field is `None`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Parses an answer and checks its envelope: the id is the request's, and there is no error.
fn parse_answer<'a, R: Deserialize<'a>>(index: u64, body: &'a [u8]) -> Result<Answer<R>, String> {
    let answer: Answer<R> =
        serde_json::from_slice(body).map_err(|e| format!("request {index}: body: {e}"))?;
    if answer.id != json!(index) {
        return Err(format!(
            "request {index}: id: answered {} instead",
            answer.id
        ));
    }
    if let Some(error) = &answer.error {
        return Err(format!("request {index}: JSON-RPC error {error}"));
    }
    Ok(answer)
}

fn verify_pool(plan: &Plan) -> Vec<(String, Vec<bool>)> {
    let batches = (plan.requests.min(VERIFY_POOL as u64)) as usize;
    let spec = GenSpec {
        alg: plan.alg,
        seed: 0x10ad_7e57,
        invalid_ratio: plan.invalid_ratio,
        msg_len: 64,
    };
    (0..batches)
        .map(|b| {
            let generated: Vec<(Value, bool)> = (0..plan.batch)
                .into_par_iter()
                .map(|j| {
                    let g = record(&spec, (b * plan.batch + j) as u64);
                    (
                        json!({
                            "alg": plan.alg.to_string(),
                            "pubkey": hex::encode(&g.pubkey),
                            "msg": hex::encode(&g.msg),
                            "sig": hex::encode(g.sig),
                        }),
                        g.expect_valid(),
                    )
                })
                .collect();
            let (records, expected): (Vec<Value>, Vec<bool>) = generated.into_iter().unzip();
            (Value::Array(records).to_string(), expected)
        })
        .collect()
}

/// Where the workers send, resolved once: the address to connect to and the fixed parts of every
/// request (path, `Host`, `Authorization`).
struct Target {
    addr: SocketAddr,
    path: Uri,
    host: HeaderValue,
    authorization: Option<HeaderValue>,
}

impl Target {
    fn new(url: &url::Url, token: Option<&str>) -> anyhow::Result<Target> {
        let addr = url
            .socket_addrs(|| Some(80))
            .with_context(|| format!("{url}: cannot resolve"))?
            .into_iter()
            .next()
            .with_context(|| format!("{url}: resolves to no address"))?;
        let host = url.host_str().unwrap_or_default();
        let host = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        let authorization = match token {
            Some(token) => {
                let text = Zeroizing::new(format!("Bearer {token}"));
                let mut value =
                    HeaderValue::from_str(&text).context("--token: not usable in a header")?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        Ok(Target {
            addr,
            path: path.parse().with_context(|| format!("{url}: path"))?,
            host: HeaderValue::try_from(host).with_context(|| format!("{url}: host"))?,
            authorization,
        })
    }

    /// A JSON POST of `body`.
    fn request(&self, body: String) -> hyper::Request<Full<Bytes>> {
        let mut request = hyper::Request::new(Full::new(Bytes::from(body)));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.path.clone();
        let headers = request.headers_mut();
        headers.insert(HOST, self.host.clone());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(authorization) = &self.authorization {
            headers.insert(AUTHORIZATION, authorization.clone());
        }
        request
    }
}

/// One HTTP/1.1 keep-alive connection: the handle requests go through and the state machine that
/// reads and writes the socket, which the owning worker polls while it waits for an answer.
struct Connection {
    sender: http1::SendRequest<Full<Bytes>>,
    driver: Pin<Box<http1::Connection<TokioIo<TcpStream>, Full<Bytes>>>>,
}

impl Connection {
    async fn open(addr: SocketAddr) -> Result<Connection, String> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect to {addr}: {e}"))?;
        stream
            .set_nodelay(true)
            .map_err(|e| format!("connect to {addr}: TCP_NODELAY: {e}"))?;
        let (sender, driver) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("connect to {addr}: {e}"))?;
        Ok(Connection {
            sender,
            driver: Box::pin(driver),
        })
    }

    /// Sends `request` and reads its whole answer, driving the connection meanwhile.
    async fn exchange(
        &mut self,
        request: hyper::Request<Full<Bytes>>,
    ) -> Result<(StatusCode, Bytes), String> {
        let Connection { sender, driver } = self;
        let answer = async {
            sender
                .ready()
                .await
                .map_err(|e| format!("connection: {e}"))?;
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("body: {e}"))?
                .to_bytes();
            Ok((status, body))
        };
        tokio::select! {
            biased;
            answer = answer => answer,
            ended = driver.as_mut() => Err(match ended {
                Ok(()) => "the server closed the connection".to_string(),
                Err(e) => format!("connection: {e}"),
            }),
        }
    }
}

/// Sends `request` on `connection`, opening a new one first when there is none or it has closed.
async fn send(
    addr: SocketAddr,
    connection: &mut Option<Connection>,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(StatusCode, Bytes), String> {
    if connection.as_ref().is_none_or(|c| c.sender.is_closed()) {
        *connection = Some(Connection::open(addr).await?);
    }
    match connection.as_mut() {
        Some(live) => live.exchange(request).await,
        None => Err("no connection".to_string()),
    }
}

/// The first account the server holds: the sender of the signing scenarios.
pub(crate) async fn first_account(
    url: &url::Url,
    token: Option<&str>,
    timeout: Duration,
) -> anyhow::Result<String> {
    let target = Target::new(url, token)?;
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"eth_accounts","params":[]}"#.to_string();
    let mut connection = None;
    let (status, bytes) = tokio::time::timeout(
        timeout,
        send(target.addr, &mut connection, target.request(body)),
    )
    .await
    .map_err(|_| anyhow::anyhow!("{url}: eth_accounts: no answer within {timeout:?}"))?
    .map_err(|e| anyhow::anyhow!("{url}: eth_accounts: {e}"))?;
    let answer: Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{url}: eth_accounts: status {status}, not JSON"))?;
    if let Some(error) = answer.get("error") {
        bail!("{url}: eth_accounts: {error}");
    }
    match answer["result"].get(0).and_then(Value::as_str) {
        Some(address) => Ok(address.to_string()),
        None => bail!("{url}: eth_accounts: the server holds no key to sign with"),
    }
}

#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) sent: u64,
    pub(crate) ok: u64,
    pub(crate) errors: u64,
    pub(crate) lost: u64,
    first_problem: Option<(Instant, String)>,
}

impl Tally {
    pub(crate) fn problem(&mut self, message: String) {
        if self.first_problem.is_none() {
            self.first_problem = Some((Instant::now(), message));
        }
    }
}

pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid histogram bounds")
}

async fn drive(
    plan: &Plan,
    url: url::Url,
    token: Option<Zeroizing<String>>,
    in_process: bool,
) -> anyhow::Result<Report> {
    if plan.scenario == Scenario::GrpcSign {
        return crate::loadtest_grpc::drive(plan, url, token, in_process).await;
    }
    let token_ref = token.as_ref().map(|t| t.as_str());
    let work = match plan.scenario {
        Scenario::GrpcSign => unreachable!("handled above"),
        Scenario::Sign => Work::Sign {
            from: first_account(&url, token_ref, plan.timeout).await?,
        },
        Scenario::Verify => Work::Verify {
            pool: verify_pool(plan),
        },
    };
    let work = Arc::new(work);
    let target = Arc::new(Target::new(&url, token_ref)?);
    let next = Arc::new(AtomicU64::new(0));
    // Every connection is open before the clock starts.
    let mut connections = Vec::with_capacity(plan.connections);
    for _ in 0..plan.connections {
        let connection = Connection::open(target.addr)
            .await
            .map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
        connections.push(connection);
    }
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let started = Instant::now();
    let deadline = started + plan.duration;
    let mut workers = Vec::with_capacity(plan.connections);
    for connection in connections {
        let (work, next, target) = (work.clone(), next.clone(), target.clone());
        let (limit, timeout) = (plan.requests, plan.timeout);
        workers.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut latencies = histogram();
            let mut connection = Some(connection);
            loop {
                if Instant::now() >= deadline {
                    break;
                }
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= limit {
                    break;
                }
                let request = target.request(work.body(index));
                tally.sent += 1;
                let sent_at = Instant::now();
                let answer = match tokio::time::timeout(
                    timeout,
                    send(target.addr, &mut connection, request),
                )
                .await
                {
                    Ok(answer) => answer,
                    Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
                };
                match answer {
                    Err(e) => {
                        // Whatever the connection still holds belongs to this request.
                        connection = None;
                        tally.lost += 1;
                        tally.problem(format!("request {index}: no answer: {e}"));
                    }
                    Ok((status, bytes)) => {
                        let micros =
                            (sent_at.elapsed().as_micros() as u64).clamp(1, MAX_LATENCY_US);
                        latencies.saturating_record(micros);
                        let checked = if status.is_success() {
                            work.check(index, &bytes)
                        } else {
                            Err(format!("request {index}: HTTP status {status}"))
                        };
                        match checked {
                            Ok(()) => tally.ok += 1,
                            Err(message) => {
                                tally.errors += 1;
                                tally.problem(message);
                            }
                        }
                    }
                }
            }
            (tally, latencies)
        }));
    }
    let mut outcomes = Vec::with_capacity(workers.len());
    for worker in workers {
        outcomes.push(worker.await.context("a load worker failed")?);
    }
    finish(plan, &url, in_process, outcomes, started, started_unix)
}

/// Merges the workers' tallies and latencies into the report.
pub(crate) fn finish(
    plan: &Plan,
    url: &url::Url,
    in_process: bool,
    outcomes: Vec<(Tally, Histogram<u64>)>,
    started: Instant,
    started_unix: u64,
) -> anyhow::Result<Report> {
    let mut total = Tally::default();
    let mut latencies = histogram();
    for (tally, hist) in outcomes {
        total.sent += tally.sent;
        total.ok += tally.ok;
        total.errors += tally.errors;
        total.lost += tally.lost;
        if let Some((at, message)) = tally.first_problem {
            if total
                .first_problem
                .as_ref()
                .is_none_or(|(first, _)| at < *first)
            {
                total.first_problem = Some((at, message));
            }
        }
        latencies
            .add(&hist)
            .map_err(|e| anyhow::anyhow!("merging latencies: {e:?}"))?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let stopped_by = if total.sent >= plan.requests {
        "requests"
    } else {
        "duration"
    };
    let requests_per_s = total.ok as f64 / elapsed;
    Ok(Report {
        scenario: plan.scenario,
        url: url.to_string(),
        in_process_server: in_process,
        connections: plan.connections,
        requests_limit: plan.requests,
        duration_limit_s: plan.duration.as_secs(),
        stopped_by,
        sent: total.sent,
        ok: total.ok,
        errors: total.errors,
        lost: total.lost,
        elapsed_s: elapsed,
        requests_per_s,
        records_per_request: plan.batch,
        records_per_s: requests_per_s * plan.batch as f64,
        latency_us: LatencyUs {
            p50: latencies.value_at_quantile(0.5),
            p99: latencies.value_at_quantile(0.99),
            p999: latencies.value_at_quantile(0.999),
            max: latencies.max(),
            mean: latencies.mean(),
        },
        first_problem: total.first_problem.map(|(_, m)| m),
        started_unix,
    })
}

fn print_report(r: &Report) {
    let scenario = match r.scenario {
        Scenario::Sign => "sign (eth_signTransaction, EIP-1559)".to_string(),
        Scenario::Verify => format!(
            "verify (chainsig_verifyBatch, {} records a call)",
            r.records_per_request
        ),
        Scenario::GrpcSign => "grpc-sign (gRPC Signer.SignStream, EIP-1559)".to_string(),
    };
    println!(
        "loadtest {scenario} against {}{}",
        r.url,
        if r.in_process_server {
            " (in-process server)"
        } else {
            ""
        }
    );
    println!(
        "  {} connections, stopped by {} after {:.2} s",
        r.connections, r.stopped_by, r.elapsed_s
    );
    println!(
        "  sent {}  ok {}  errors {}  lost {}",
        r.sent, r.ok, r.errors, r.lost
    );
    println!(
        "  {:.0} requests/s ({:.0} records/s)",
        r.requests_per_s, r.records_per_s
    );
    let ms = |us: u64| us as f64 / 1000.0;
    println!(
        "  latency p50 {:.3} ms  p99 {:.3} ms  p99.9 {:.3} ms  max {:.3} ms",
        ms(r.latency_us.p50),
        ms(r.latency_us.p99),
        ms(r.latency_us.p999),
        ms(r.latency_us.max)
    );
    if let Some(problem) = &r.first_problem {
        println!("  first problem: {problem}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_http_urls_are_accepted() {
        for ok in [
            "http://127.0.0.1:8545",
            "http://127.1.2.3:1/",
            "http://[::1]:8545/",
            "http://localhost:8545",
        ] {
            assert!(loopback_url(ok).is_ok(), "{ok}");
        }
        for (bad, says) in [
            ("http://10.0.0.1:8545", "not a loopback"),
            ("http://example.com:8545", "not a loopback"),
            ("http://0.0.0.0:8545", "not a loopback"),
            ("https://127.0.0.1:8545", "plain HTTP"),
            ("ftp://127.0.0.1/", "not http"),
            ("127.0.0.1:8545", "scheme"),
        ] {
            let err = loopback_url(bad).unwrap_err().to_string();
            assert!(
                err.contains(says) || err.contains("not a URL"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn sign_bodies_have_distinct_nonces() {
        let work = Work::Sign {
            from: "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f".into(),
        };
        let a: Value = serde_json::from_str(&work.body(10)).unwrap();
        let b: Value = serde_json::from_str(&work.body(11)).unwrap();
        assert_eq!(a["params"][0]["nonce"], "0xa");
        assert_eq!(b["params"][0]["nonce"], "0xb");
        assert_eq!(a["id"], 10);
    }

    #[test]
    fn wrong_answers_are_errors() {
        let work = Work::Verify {
            pool: vec![("[]".into(), vec![true, false])],
        };
        let good = br#"{"jsonrpc":"2.0","id":3,"result":[{"valid":true},{"valid":false}]}"#;
        assert!(work.check(3, good).is_ok());
        let flipped = br#"{"jsonrpc":"2.0","id":3,"result":[{"valid":true},{"valid":true}]}"#;
        assert!(work.check(3, flipped).unwrap_err().contains("record 1"));
        assert!(work.check(4, good).unwrap_err().contains("id"));
        let short = br#"{"jsonrpc":"2.0","id":3,"result":[{"valid":true}]}"#;
        assert!(work.check(3, short).is_err());
        let error = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"x"}}"#;
        assert!(work.check(3, error).unwrap_err().contains("-32000"));
        // A verdict that is neither valid nor an error, and an error verdict for a valid record.
        let neither = br#"{"jsonrpc":"2.0","id":3,"result":[{"valid":true},{}]}"#;
        assert!(work.check(3, neither).unwrap_err().contains("record 1"));
        let erred = br#"{"jsonrpc":"2.0","id":3,"result":[{"error":"sig: bad"},{"valid":false}]}"#;
        assert!(work.check(3, erred).unwrap_err().contains("record 0"));
        let null_error =
            br#"{"jsonrpc":"2.0","id":3,"error":null,"result":[{"valid":true},{"valid":false}]}"#;
        assert!(work
            .check(3, null_error)
            .unwrap_err()
            .contains("JSON-RPC error"));
    }

    #[test]
    fn wrong_sign_answers_are_errors() {
        let key = PrivateKey::from_hex(
            "4646464646464646464646464646464646464646464646464646464646464646",
        )
        .unwrap();
        let from = format!("{:?}", key.address());
        let work = Work::Sign { from };
        let body: Value = serde_json::from_str(&work.body(64)).unwrap();
        let request = chainsig_eth::TxRequest::from_json(&body["params"][0]).unwrap();
        let raw = format!("0x{}", hex::encode(request.sign(&key).unwrap().raw));
        // geth's {raw, tx}: the check reads `raw`.
        let answer = |id: u64, raw: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"raw":{raw},"tx":{{}}}}}}"#)
                .into_bytes()
        };
        // 64 is a fully checked index: decoded and its sender recovered.
        assert!(work.check(64, &answer(64, &format!("\"{raw}\""))).is_ok());
        assert!(work
            .check(65, &answer(64, &format!("\"{raw}\"")))
            .unwrap_err()
            .contains("id"));
        let other = Work::Sign {
            from: format!("{:?}", alloy_primitives::Address::repeat_byte(7)),
        };
        assert!(other
            .check(64, &answer(64, &format!("\"{raw}\"")))
            .unwrap_err()
            .contains("recovers to"));
        assert!(work
            .check(64, &answer(64, &format!("\"{}\"", &raw[2..])))
            .unwrap_err()
            .contains("not a hex string"));
        assert!(work
            .check(64, &answer(64, "\"0x02c0\""))
            .unwrap_err()
            .contains("not a signed EIP-1559"));
        assert!(work
            .check(64, br#"{"jsonrpc":"2.0","id":64,"result":null}"#)
            .unwrap_err()
            .contains("missing"));
        assert!(work
            .check(64, &answer(64, "7"))
            .unwrap_err()
            .contains("body"));
        let no_result = br#"{"jsonrpc":"2.0","id":64}"#;
        assert!(work.check(64, no_result).unwrap_err().contains("missing"));
    }
}
