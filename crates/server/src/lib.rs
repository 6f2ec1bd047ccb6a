//! chainsig-server: the signing and verification service behind `chainsig serve`: JSON-RPC and
//! REST over HTTP, and gRPC, on one listener.
//!
//! * [`keys`]: keys from a directory of keystore v3 files with their password files.
//! * [`rpc`]: JSON-RPC 2.0 at `POST /` (single and batch): `eth_accounts`, `eth_signTransaction`,
//!   `eth_sign`, `chainsig_verifyBatch`, `chainsig_recoverBatch`.
//! * [`rest`]: web3signer-style REST routes, `/upcheck`, `/healthcheck`, `/metrics`.
//! * [`auth`]: bearer tokens compared in constant time; who sent each request, for the audit log.
//! * [`ratelimit`]: a token bucket per client.
//! * [`metrics`]: Prometheus counters and latency histograms.
//! * [`batcher`]: verification requests from concurrent callers gathered into batches.
//! * [`tls`]: TLS and mutual TLS through rustls.
//! * [`grpc`]: the gRPC services `chainsig.v1.Signer` and `chainsig.v1.Verifier` (tonic, with
//!   reflection), routes of the same router, so one listener serves HTTP/1.1, HTTP/2 and gRPC
//!   (h2 by ALPN over TLS, h2 with prior knowledge over plain TCP).
//! * [`ops`]: signing and recovery as both front ends call them.
//!
//! Every signature writes one audit line (tracing target `audit`): client, method, key address
//! and the transaction or message hash; never a key, a password or a token.

pub mod auth;
pub mod batcher;
pub mod grpc;
pub mod keys;
pub mod metrics;
pub mod ops;
pub mod ratelimit;
pub mod rest;
pub mod rpc;
pub mod tls;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use batcher::{Batcher, BatcherConfig};
use chainsig_core::Registry;
use chainsig_eth::Signer;
use metrics::Metrics;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Limits that protect the server from oversized requests.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest request body accepted, in bytes (413 above it).
    pub body_bytes: usize,
    /// Most calls in one JSON-RPC batch.
    pub batch_requests: usize,
    /// Most records in one `chainsig_verifyBatch` or `chainsig_recoverBatch` call.
    pub records_per_call: usize,
    /// Requests per client (token, or IP without authentication); `None`: unlimited.
    pub rate: Option<ratelimit::RateLimit>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_bytes: 16 << 20,
            batch_requests: 1024,
            records_per_call: 65536,
            rate: None,
        }
    }
}

/// Everything a running server shares between requests.
pub struct AppState {
    pub signer: Signer,
    pub registry: Arc<Registry>,
    pub batcher: Batcher,
    pub metrics: Metrics,
    pub limits: Limits,
    /// The backend name verification and recovery ask the registry for (`auto` normally).
    pub backend: String,
    pub tokens: Option<Arc<auth::Tokens>>,
    pub limiter: Option<Arc<ratelimit::Limiter>>,
}

impl AppState {
    /// The state for a server; starts the verification batcher, so call it inside a Tokio runtime.
    pub fn new(
        signer: Signer,
        registry: Registry,
        tokens: Option<auth::Tokens>,
        limits: Limits,
        batcher: BatcherConfig,
    ) -> Arc<Self> {
        let registry = Arc::new(registry);
        let metrics = Metrics::new();
        let backend = batcher.backend.clone();
        let limiter = limits
            .rate
            .map(|rate| Arc::new(ratelimit::Limiter::new(rate)));
        Arc::new(AppState {
            limiter,
            signer,
            batcher: Batcher::spawn(registry.clone(), batcher, metrics.clone()),
            registry,
            metrics,
            limits,
            backend,
            tokens: tokens.map(Arc::new),
        })
    }
}

/// The HTTP routes and the gRPC services, with authentication, body limit and per-route metrics.
pub fn router(state: Arc<AppState>) -> Router {
    let routes = Router::new()
        .route("/", post(rpc::handle))
        .route("/api/v1/eth1/sign/{identifier}", post(rest::sign))
        .route("/api/v1/eth1/publicKeys", get(rest::public_keys))
        .route("/upcheck", get(rest::upcheck))
        .route("/healthcheck", get(rest::healthcheck))
        .route("/metrics", get(rest::metrics));
    grpc::add_routes(routes, &state)
        .fallback(not_found)
        // Layers run outermost last-added: metrics, then authentication, then the rate limit.
        .layer(middleware::from_fn_with_state(
            state.limiter.clone(),
            ratelimit::limit,
        ))
        .layer(middleware::from_fn_with_state(
            state.tokens.clone(),
            auth::authenticate,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), track))
        .layer(DefaultBodyLimit::max(state.limits.body_bytes))
        .with_state(state)
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(serde_json::json!({"error": "no such route"})),
    )
        .into_response()
}

/// Whether a request is gRPC (`content-type: application/grpc…`): the middlewares then answer
/// refusals as gRPC statuses, which gRPC clients understand, instead of HTTP errors.
pub(crate) fn is_grpc(request: &Request) -> bool {
    request
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

/// A gRPC refusal as an HTTP response (status 200, `grpc-status` in the headers).
pub(crate) fn grpc_refusal(status: tonic::Status) -> Response {
    status.into_http::<axum::body::Body>()
}

/// Counts every HTTP request under its route (`POST /` for JSON-RPC requests as a whole; each
/// JSON-RPC call is also counted under its method name by [`rpc`]).
async fn track(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let label = match request.extensions().get::<MatchedPath>() {
        Some(path) => format!("{} {}", request.method(), path.as_str()),
        None => "unmatched".to_string(),
    };
    let response = next.run(request).await;
    let failed = response.status().is_client_error() || response.status().is_server_error();
    state.metrics.request(&label, started.elapsed(), failed);
    response
}

/// Serves HTTP on `listener` until `shutdown` completes, then finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Serves HTTPS on `listener` with the rustls configuration `tls` until `shutdown` completes,
/// then finishes the requests in flight.
pub async fn serve_tls(
    listener: std::net::TcpListener,
    state: Arc<AppState>,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state).into_make_service_with_connect_info::<SocketAddr>();
    let handle = axum_server::Handle::new();
    let stopper = handle.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopper.graceful_shutdown(None);
    });
    axum_server::from_tcp_rustls(
        listener,
        axum_server::tls_rustls::RustlsConfig::from_config(tls),
    )?
    .handle(handle)
    .serve(app)
    .await
}

/// What `chainsig serve` asks for.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub http: SocketAddr,
    pub keys: PathBuf,
    pub auth_tokens: Option<PathBuf>,
    /// HTTPS instead of HTTP when given.
    pub tls: Option<tls::TlsFiles>,
    pub limits: Limits,
    pub batcher: BatcherConfig,
    /// Logs as JSON lines instead of text.
    pub log_json: bool,
}

/// Runs the service until SIGTERM or SIGINT (the blocking entry point for the command line):
/// starts logging and a Tokio runtime, loads the keys and tokens, and serves.
pub fn run(options: ServeOptions, registry: Registry) -> Result<(), String> {
    // Held until `run` returns: dropping it writes out every line still queued.
    let _log_guard = init_logging(options.log_json);
    let tokens = match &options.auth_tokens {
        Some(path) => {
            Some(auth::Tokens::from_file(path).map_err(|e| format!("--auth-tokens: {e}"))?)
        }
        None => None,
    };
    let signer = keys::load_dir(&options.keys).map_err(|e| format!("--keys: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let tls = match &options.tls {
        Some(files) => Some(files.load()?),
        None => None,
    };
    let listener = std::net::TcpListener::bind(options.http)
        .map_err(|e| format!("--http {}: cannot listen: {e}", options.http))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("--http {}: {e}", options.http))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("--http {local}: {e}"))?;
    runtime.block_on(async move {
        let keys = signer.addresses().len();
        let state = AppState::new(signer, registry, tokens, options.limits, options.batcher);
        let scheme = if tls.is_some() { "https" } else { "http" };
        tracing::info!(http = %local, scheme, mtls = options.tls.as_ref().is_some_and(|t| t.client_ca.is_some()), keys, backends = ?state.registry.names(), "listening");
        let served = match tls {
            Some(tls) => serve_tls(listener, state, tls, shutdown_signal()).await,
            None => match tokio::net::TcpListener::from_std(listener) {
                Ok(listener) => serve(listener, state, shutdown_signal()).await,
                Err(e) => Err(e),
            },
        };
        served.map_err(|e| format!("server failed: {e}"))?;
        tracing::info!("stopped after finishing the requests in flight");
        Ok(())
    })
}

/// Completes on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => tracing::info!("SIGINT: shutting down"),
        _ = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}

/// Installs the log subscriber, writing to stderr through a [`tracing_appender::non_blocking`]
/// writer: a dedicated thread does the writes, so a request thread formats its audit line and
/// queues it instead of making a `write` system call under the stderr lock per signature. The
/// writer is built non-lossy: when its queue is full the logging thread waits rather than dropping
/// the line, so every signature still gets its audit line. The returned guard flushes the queue
/// when dropped (at shutdown).
fn init_logging(json: bool) -> tracing_appender::non_blocking::WorkerGuard {
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("chainsig-log")
        .finish(std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_max_level(tracing::Level::INFO);
    // A subscriber already installed (by an embedding program) is kept.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    guard
}
