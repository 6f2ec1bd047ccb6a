//! `chainsig serve`: arguments for the signing and verification service in `chainsig-server`.
//!
//! gRPC is served on the `--http` listener (HTTP/2 beside HTTP/1.1, with the same TLS, tokens and
//! limits), and with `--grpc ADDR` also on a listener of its own that serves gRPC alone, with the
//! same TLS, tokens, limits and metrics. TLS options that are incomplete are refused: a service
//! an operator believes to be encrypted, or to check client certificates, must never silently run
//! without.

use crate::backends;
use anyhow::bail;
use chainsig_eth::ChainPolicy;
use chainsig_server::batcher::BatcherConfig;
use chainsig_server::eth_rpc::SignTxResult;
use chainsig_server::ratelimit::RateLimit;
use chainsig_server::tls::TlsFiles;
use chainsig_server::{Limits, RpcOptions, ServeOptions};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address for HTTP (JSON-RPC at POST /, REST, /metrics) and gRPC (chainsig.v1.Signer,
    /// chainsig.v1.Verifier, reflection; HTTP/2), e.g. 127.0.0.1:8545.
    #[arg(long)]
    http: SocketAddr,
    /// A second listener for gRPC alone (same TLS, tokens, limits and metrics as --http, which
    /// serves gRPC too); the same address as --http (port 0 excepted) means no second listener.
    #[arg(long)]
    grpc: Option<SocketAddr>,
    /// Directory of keystore v3 files NAME.json, each with its password in NAME.pass.
    #[arg(long)]
    keys: PathBuf,
    /// The chain id transactions are signed for: filled in where a request has none, and a
    /// request naming another chain is refused. Without it every request must carry `chainId`.
    #[arg(long)]
    chain_id: Option<u64>,
    /// Sign without replay protection when a request asks for it (a legacy transaction without
    /// chain id, chain id 0, an EIP-7702 authorization for chain 0), as geth's
    /// --rpc.allow-unprotected-txs. Off by default: such signatures are valid on every chain.
    #[arg(long)]
    allow_unprotected: bool,
    /// The result of eth_signTransaction: `geth` (`{raw, tx}`, as geth and clef answer; what
    /// web3.py expects) or `raw` (the signed transaction's hex alone).
    #[arg(long, value_enum, default_value = "geth")]
    sign_tx_result: SignTxResultArg,
    /// File of bearer tokens, one a line; without it no authentication is asked.
    #[arg(long)]
    auth_tokens: Option<PathBuf>,
    /// TLS certificate chain, PEM, leaf first: serve HTTPS on --http.
    #[arg(long)]
    tls_cert: Option<PathBuf>,
    /// The TLS certificate's private key, PEM.
    #[arg(long)]
    tls_key: Option<PathBuf>,
    /// CA whose client certificates are required and accepted (mutual TLS).
    #[arg(long)]
    client_ca: Option<PathBuf>,
    /// Verification backend: auto (GPU for large batches when present, else CPU), cpu or cuda.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// SM2 public keys of the chain's known signers, one SEC1 hex key per line: their records are
    /// verified on the GPU through per-key tables (built at start, about 25 ms of a core each).
    #[arg(long, value_name = "FILE")]
    signers: Option<PathBuf>,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = 16 << 20)]
    max_body: usize,
    /// Most calls in one JSON-RPC batch.
    #[arg(long, default_value_t = 1024)]
    max_batch: usize,
    /// Most records in one verify or recover call.
    #[arg(long, default_value_t = 65536)]
    max_records: usize,
    /// Requests per second each client may send (by token, or by IP without --auth-tokens).
    #[arg(long)]
    rate_limit: Option<f64>,
    /// Requests a client may send at once before --rate-limit applies (default: one second's worth, at least 1).
    #[arg(long)]
    rate_burst: Option<f64>,
    /// How long verification requests wait to be gathered into one batch, in microseconds.
    #[arg(long, default_value_t = 2000)]
    verify_window_us: u64,
    /// Logs as JSON lines.
    #[arg(long)]
    log_json: bool,
    /// On SIGTERM, how many seconds to wait for the requests in flight before exiting anyway
    /// (0: wait as long as they take).
    #[arg(long, default_value_t = 30)]
    shutdown_grace_secs: u64,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SignTxResultArg {
    Geth,
    Raw,
}

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let tls = match (args.tls_cert, args.tls_key, args.client_ca) {
        (None, None, None) => None,
        (Some(cert), Some(key), client_ca) => Some(TlsFiles {
            cert,
            key,
            client_ca,
        }),
        (None, _, Some(_)) => bail!("--client-ca: needs --tls-cert and --tls-key"),
        (Some(_), None, _) => bail!("--tls-cert: needs --tls-key"),
        (None, Some(_), _) => bail!("--tls-key: needs --tls-cert"),
    };
    let rate = match args.rate_limit {
        None if args.rate_burst.is_some() => bail!("--rate-burst: needs --rate-limit"),
        None => None,
        Some(per_second) if !(per_second > 0.0 && per_second.is_finite()) => {
            bail!("--rate-limit: must be a positive number of requests per second")
        }
        Some(per_second) => {
            let burst = args.rate_burst.unwrap_or(per_second.max(1.0));
            if !(burst >= 1.0 && burst.is_finite()) {
                bail!("--rate-burst: must be at least 1");
            }
            Some(RateLimit { per_second, burst })
        }
    };
    let registry = backends::with_signer_file(&args.backend, args.signers.as_deref())?;
    if args.backend != "auto" {
        registry.get(&args.backend)?;
    }
    let options = ServeOptions {
        http: args.http,
        grpc: args.grpc,
        keys: args.keys,
        auth_tokens: args.auth_tokens,
        tls,
        limits: Limits {
            body_bytes: args.max_body,
            batch_requests: args.max_batch.max(1),
            records_per_call: args.max_records,
            rate,
        },
        batcher: BatcherConfig {
            window: Duration::from_micros(args.verify_window_us),
            backend: args.backend,
            ..BatcherConfig::default()
        },
        chain: ChainPolicy {
            chain_id: args.chain_id,
            allow_unprotected: args.allow_unprotected,
        },
        rpc: RpcOptions {
            sign_tx_result: match args.sign_tx_result {
                SignTxResultArg::Geth => SignTxResult::Geth,
                SignTxResultArg::Raw => SignTxResult::Raw,
            },
        },
        log_json: args.log_json,
        shutdown_grace: (args.shutdown_grace_secs > 0)
            .then(|| Duration::from_secs(args.shutdown_grace_secs)),
    };
    chainsig_server::run(options, registry).map_err(anyhow::Error::msg)?;
    Ok(ExitCode::SUCCESS)
}
