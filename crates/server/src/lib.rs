//! chainsig-server: the signing and verification service behind `chainsig serve`: JSON-RPC and
//! REST over HTTP, and gRPC, on one listener, and gRPC alone on a second one when asked
//! ([`serve_listeners`]; `chainsig serve --grpc ADDR`).
//!
//! * [`keys`]: keys from keystore v3 files (chainsig's and geth's) and from a mnemonic.
//! * [`rpc`]: JSON-RPC 2.0 at `POST /` (single and batch): the envelope, `chainsig_verifyBatch`,
//!   `chainsig_recoverBatch`; [`eth_rpc`]: the methods of geth and clef (`eth_chainId`,
//!   `eth_signTransaction`, `personal_sign`, `eth_signTypedData_v4`, `account_*`, …).
//! * [`rest`]: web3signer-style REST routes, `/upcheck`, `/healthcheck`, `/metrics`.
//! * [`auth`]: bearer tokens compared in constant time; who sent each request, for the audit log.
//! * [`ratelimit`]: a token bucket per client.
//! * [`metrics`]: Prometheus counters and latency histograms.
//! * [`batcher`]: verification requests from concurrent callers gathered into batches.
//! * [`tls`]: TLS and mutual TLS through rustls.
//! * [`grpc`]: the gRPC services `chainsig.v1.Signer` and `chainsig.v1.Verifier` (tonic, with
//!   reflection), routes of the same router, so one listener serves HTTP/1.1, HTTP/2 and gRPC
//!   (h2 by ALPN over TLS, h2 with prior knowledge over plain TCP). The `--grpc` listener serves
//!   the same services through [`grpc_router`]: the same middlewares (tokens, rate limit, body
//!   limit, metrics) and the same TLS configuration, from the same [`AppState`], without the
//!   HTTP routes.
//! * [`ops`]: signing and recovery as both front ends call them.
//!
//! Every signature writes one audit line (tracing target `audit`): client, method, key address
//! and the transaction or message hash; never a key, a password or a token.

pub mod auth;
pub mod batcher;
pub mod eth_rpc;
pub mod grpc;
pub mod grpc_records;
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
use std::time::{Duration, Instant};

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

/// How the JSON-RPC methods answer (choices an operator makes for the clients it serves).
#[derive(Clone, Copy, Debug, Default)]
pub struct RpcOptions {
    /// The form of `eth_signTransaction`'s result.
    pub sign_tx_result: eth_rpc::SignTxResult,
}

/// Everything a running server shares between requests.
pub struct AppState {
    pub signer: Signer,
    pub registry: Arc<Registry>,
    pub batcher: Batcher,
    pub metrics: Metrics,
    pub limits: Limits,
    pub rpc: RpcOptions,
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
        Self::with_rpc(
            signer,
            registry,
            tokens,
            limits,
            batcher,
            RpcOptions::default(),
        )
    }

    /// As [`AppState::new`], with the JSON-RPC options.
    pub fn with_rpc(
        signer: Signer,
        registry: Registry,
        tokens: Option<auth::Tokens>,
        limits: Limits,
        batcher: BatcherConfig,
        rpc: RpcOptions,
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
            rpc,
            backend,
            tokens: tokens.map(Arc::new),
        })
    }
}

/// The HTTP routes and the gRPC services, with authentication, body limit and per-route metrics:
/// what the `--http` listener serves.
pub fn router(state: Arc<AppState>) -> Router {
    let routes = Router::new()
        .route("/", post(rpc::handle))
        .route("/api/v1/eth1/sign/{identifier}", post(rest::sign))
        .route("/api/v1/eth1/publicKeys", get(rest::public_keys))
        .route("/upcheck", get(rest::upcheck))
        .route("/healthcheck", get(rest::healthcheck))
        .route("/metrics", get(rest::metrics))
        .route("/openapi.json", get(rest::openapi));
    layered(grpc::add_routes(routes, &state), state)
}

/// The gRPC services (and reflection) alone, with the same authentication, rate limit, body
/// limit and metrics as [`router`]: what a separate `--grpc` listener serves. Any other path is
/// answered 404, so the HTTP routes (`/metrics` included) are only on the `--http` listener.
pub fn grpc_router(state: Arc<AppState>) -> Router {
    layered(grpc::add_routes(Router::new(), &state), state)
}

/// The middlewares both routers share, around `routes`.
fn layered(routes: Router<Arc<AppState>>, state: Arc<AppState>) -> Router {
    routes
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
    let method = request.method().clone();
    let path = request.extensions().get::<MatchedPath>().cloned();
    let response = next.run(request).await;
    let failed = response.status().is_client_error() || response.status().is_server_error();
    state.metrics.route(
        &method,
        path.as_ref().map(MatchedPath::as_str),
        started.elapsed(),
        failed,
    );
    response
}

/// Serves HTTP on `listener` until `shutdown` completes, then finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_app(listener, router(state), shutdown).await
}

/// Serves HTTPS on `listener` with the rustls configuration `tls` until `shutdown` completes,
/// then finishes the requests in flight.
pub async fn serve_tls(
    listener: std::net::TcpListener,
    state: Arc<AppState>,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_app_tls(listener, router(state), tls, shutdown).await
}

/// `app` over plain TCP: HTTP/1.1, and HTTP/2 with prior knowledge (h2c, which gRPC clients
/// speak to an `http://` address), until `shutdown`, then the requests in flight are finished.
async fn serve_app(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

/// `app` over TLS (HTTP/2 or HTTP/1.1 by ALPN), until `shutdown`, then the requests in flight
/// are finished.
async fn serve_app_tls(
    listener: std::net::TcpListener,
    app: Router,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
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

/// The listening sockets of one server, already bound.
#[derive(Debug)]
pub struct Listeners {
    /// HTTP (JSON-RPC, REST, `/metrics`) and gRPC.
    pub http: std::net::TcpListener,
    /// gRPC only ([`grpc_router`]); `None`: gRPC is served on `http` alone.
    pub grpc: Option<std::net::TcpListener>,
}

/// Serves `listeners` (HTTPS on each when `tls` is given, with the same certificate and client
/// CA) from the one `state`, so tokens, rate limits, metrics and keys are shared, until
/// `shutdown` completes; then both stop accepting and finish the requests in flight, and this
/// returns once both have stopped.
///
/// `grace` bounds that wait: connections still busy after it (a signing stream a client keeps
/// open, say) are abandoned with a warning (their tasks end with the runtime). A listener that
/// fails stops the others, and its error, naming the listener, is returned.
pub async fn serve_listeners(
    state: Arc<AppState>,
    listeners: Listeners,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Option<Duration>,
) -> std::io::Result<()> {
    // One signal, many servers: each server's shutdown future waits on this channel.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut servers = tokio::task::JoinSet::new();
    let mut sockets = vec![("--http", listeners.http, router(state.clone()))];
    if let Some(grpc) = listeners.grpc {
        sockets.push(("--grpc", grpc, grpc_router(state.clone())));
    }
    for (flag, listener, app) in sockets {
        let at = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{flag} {at}: {e}"));
        // Tokio needs a non-blocking socket: a blocking one would stall a worker thread in
        // accept(2) and never serve.
        listener.set_nonblocking(true).map_err(named)?;
        let mut stopped = stopped.clone();
        let shutdown = async move {
            // Done when the value turns true, or when the sender is gone.
            let _ = stopped.wait_for(|stop| *stop).await;
        };
        match &tls {
            Some(tls) => {
                let tls = tls.clone();
                servers.spawn(async move {
                    let served = serve_app_tls(listener, app, tls, shutdown).await;
                    (flag, served)
                });
            }
            None => {
                let listener = tokio::net::TcpListener::from_std(listener).map_err(named)?;
                servers.spawn(async move { (flag, serve_app(listener, app, shutdown).await) });
            }
        }
    }
    let outcome =
        |done: Result<(&'static str, std::io::Result<()>), tokio::task::JoinError>| match done {
            Ok((_, Ok(()))) => Ok(()),
            Ok((flag, Err(e))) => Err(std::io::Error::new(e.kind(), format!("{flag}: {e}"))),
            Err(e) => Err(std::io::Error::other(format!(
                "a listener's task failed: {e}"
            ))),
        };
    let mut failure = None;
    tokio::pin!(shutdown);
    tokio::select! {
        _ = &mut shutdown => {}
        Some(done) = servers.join_next() => {
            // A server returned before the signal: an error, since they only stop when told.
            failure = Some(outcome(done).err().unwrap_or_else(|| {
                std::io::Error::other("a listener stopped before shutdown was asked")
            }));
        }
    }
    let _ = stop.send(true);
    let deadline = grace.map(|grace| tokio::time::Instant::now() + grace);
    loop {
        let next = match deadline {
            None => servers.join_next().await,
            Some(deadline) => match tokio::time::timeout_at(deadline, servers.join_next()).await {
                Ok(next) => next,
                Err(_) => {
                    tracing::warn!(
                        grace_s = grace.unwrap_or_default().as_secs_f64(),
                        "requests still in flight after the shutdown grace period: abandoned"
                    );
                    servers.abort_all();
                    break;
                }
            },
        };
        match next {
            None => break,
            Some(done) => {
                if let Err(e) = outcome(done) {
                    failure.get_or_insert(e);
                }
            }
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Binds `addr` for the option `flag`, naming both in the error.
fn bind(flag: &str, addr: SocketAddr) -> Result<(std::net::TcpListener, SocketAddr), String> {
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| format!("{flag} {addr}: cannot listen: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("{flag} {addr}: {e}"))?;
    Ok((listener, local))
}

/// What `chainsig serve` asks for.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub http: SocketAddr,
    /// A separate gRPC listener. `None`, or the same address as `http` (port 0 excepted, which
    /// asks for a fresh port each time), serves gRPC on the `http` listener alone.
    pub grpc: Option<SocketAddr>,
    /// The signing keys: a key directory, passwords, derived keys, the time loading may take.
    /// `None`: verification only (`--verify-only`), no signing key loaded.
    pub keys: Option<keys::KeySource>,
    pub auth_tokens: Option<PathBuf>,
    /// HTTPS instead of HTTP when given (on both listeners).
    pub tls: Option<tls::TlsFiles>,
    pub limits: Limits,
    pub batcher: BatcherConfig,
    /// The chain the service signs for, and whether it signs without replay protection.
    pub chain: chainsig_eth::ChainPolicy,
    pub rpc: RpcOptions,
    /// Logs as JSON lines instead of text.
    pub log_json: bool,
    /// How long SIGTERM waits for the requests in flight; `None`: as long as they take.
    pub shutdown_grace: Option<Duration>,
}

/// Runs the service until SIGTERM or SIGINT (the blocking entry point for the command line):
/// starts logging and a Tokio runtime, loads the keys and tokens, and serves.
///
/// The `listening` log line gives `http=ADDR grpc=ADDR` with the ports bound (the kernel's
/// choice for port 0); `grpc` equals `http` when gRPC has no listener of its own.
pub fn run(options: ServeOptions, registry: Registry) -> Result<(), String> {
    // Held until `run` returns: dropping it writes out every line still queued.
    let _log_guard = init_logging(options.log_json);
    let tokens = match &options.auth_tokens {
        Some(path) => {
            Some(auth::Tokens::from_file(path).map_err(|e| format!("--auth-tokens: {e}"))?)
        }
        None => None,
    };
    let mut signer = match &options.keys {
        Some(source) => keys::load(source).map_err(|e| format!("--keys: {e}"))?,
        None => Signer::new(),
    };
    signer.set_policy(options.chain);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let tls = match &options.tls {
        Some(files) => Some(files.load()?),
        None => None,
    };
    let (http, http_addr) = bind("--http", options.http)?;
    let (grpc, grpc_addr) = match options.grpc {
        Some(grpc) if grpc != options.http || grpc.port() == 0 => {
            let (listener, local) = bind("--grpc", grpc)?;
            (Some(listener), local)
        }
        _ => (None, http_addr),
    };
    let listeners = Listeners { http, grpc };
    let served = runtime.block_on(async move {
        let shutdown = shutdown_signal();
        let keys = signer.addresses().len();
        let state = AppState::with_rpc(
            signer,
            registry,
            tokens,
            options.limits,
            options.batcher,
            options.rpc,
        );
        let scheme = if tls.is_some() { "https" } else { "http" };
        tracing::info!(http = %http_addr, grpc = %grpc_addr, scheme, mtls = options.tls.as_ref().is_some_and(|t| t.client_ca.is_some()), keys, backends = ?state.registry.names(), "listening");
        serve_listeners(
            state,
            listeners,
            tls,
            shutdown,
            options.shutdown_grace,
        )
        .await
        .map_err(|e| format!("server failed: {e}"))
    });
    // Tasks of connections abandoned after the grace period end here, with the runtime.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served?;
    tracing::info!("stopped");
    Ok(())
}

/// Completes on SIGTERM or SIGINT. The handlers are installed when this is called (inside a Tokio
/// runtime), not when the future is first polled, so a signal sent as soon as the `listening`
/// line is out is already caught rather than killing the process.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let terminate = signal(SignalKind::terminate());
        let interrupt = signal(SignalKind::interrupt());
        async move {
            // A handler that could not be installed never fires (the other still can).
            let wait = |handler: std::io::Result<tokio::signal::unix::Signal>| async move {
                match handler {
                    Ok(mut handler) => {
                        handler.recv().await;
                    }
                    Err(_) => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = wait(interrupt) => tracing::info!("SIGINT: shutting down"),
                _ = wait(terminate) => tracing::info!("SIGTERM: shutting down"),
            }
        }
    }
    #[cfg(not(unix))]
    async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        tracing::info!("Ctrl-C: shutting down");
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
