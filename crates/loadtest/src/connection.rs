//! The HTTP workers' client: one HTTP/1.1 keep-alive connection per worker, driven by the worker
//! itself.
//!
//! hyper's bare connection API, not a pooled client such as reqwest: the load generator shares two
//! cores with the server it measures, and a pooled client's per-request work (URL parsing and host
//! normalisation, pool checkout, a second task driving each connection) cost more CPU than the
//! server's own HTTP handling. Here the URL is resolved once, the fixed headers are built once
//! ([`Target`]), and each worker drives its connection in its own task ([`Connection`]).

use anyhow::{bail, Context};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Method, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;
use tokio::net::TcpStream;
use zeroize::Zeroizing;

/// Where the workers send, resolved once: the address to connect to and the fixed parts of every
/// request (path, `Host`, `Authorization`).
pub(crate) struct Target {
    pub(crate) addr: SocketAddr,
    path: Uri,
    host: HeaderValue,
    authorization: Option<HeaderValue>,
}

impl Target {
    pub(crate) fn new(url: &url::Url, token: Option<&str>) -> anyhow::Result<Target> {
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

    /// A GET of `path` on the same server (the service's `/metrics`).
    pub(crate) fn get(&self, path: &str) -> anyhow::Result<hyper::Request<Full<Bytes>>> {
        let mut request = hyper::Request::new(Full::new(Bytes::new()));
        *request.uri_mut() = path.parse().with_context(|| format!("{path}: path"))?;
        let headers = request.headers_mut();
        headers.insert(HOST, self.host.clone());
        if let Some(authorization) = &self.authorization {
            headers.insert(AUTHORIZATION, authorization.clone());
        }
        Ok(request)
    }

    /// A JSON POST of `body`.
    pub(crate) fn request(&self, body: String) -> hyper::Request<Full<Bytes>> {
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
pub(crate) struct Connection {
    sender: http1::SendRequest<Full<Bytes>>,
    driver: Pin<Box<http1::Connection<TokioIo<TcpStream>, Full<Bytes>>>>,
}

impl Connection {
    pub(crate) async fn open(addr: SocketAddr) -> Result<Connection, String> {
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
pub(crate) async fn send(
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
