//! `chainsig serve`: arguments for the signing and verification service in `chainsig-server`.
//!
//! gRPC is served on the `--http` listener (HTTP/2 beside HTTP/1.1, with the same TLS, tokens and
//! limits), and with `--grpc ADDR` also on a listener of its own that serves gRPC alone, with the
//! same TLS, tokens, limits and metrics. TLS options that are incomplete are refused: a service
//! an operator believes to be encrypted, or to check client certificates, must never silently run
//! without.

use crate::backends;
use crate::keysource::{self, MnemonicArgs, PasswordArgs};
use anyhow::bail;
use chainsig_eth::ChainPolicy;
use chainsig_server::batcher::BatcherConfig;
use chainsig_server::eth_rpc::SignTxResult;
use chainsig_server::keys::{self as server_keys, KeySource};
use chainsig_server::ratelimit::RateLimit;
use chainsig_server::tls::TlsFiles;
use chainsig_server::{Limits, RpcOptions, ServeOptions};
use clap::builder::RangedU64ValueParser;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Limits on the limits: a body of 1 GiB, a JSON-RPC batch of 65,536 calls, a million records a
/// call. Above these one request could take the server's memory, which the limits are there to
/// prevent.
const MAX_BODY: u64 = 1 << 30;
const MAX_BATCH: u64 = 1 << 16;
const MAX_RECORDS: u64 = 1 << 20;

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
    /// Where the signing keys come from (boxed: these options are many and the command enum
    /// holds every command's arguments).
    #[command(flatten)]
    keys: Box<KeyArgs>,
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
    /// Largest request body, in bytes (1024 to 1073741824).
    #[arg(long, default_value_t = 16 << 20,
          value_parser = RangedU64ValueParser::<usize>::new().range(1024..=MAX_BODY))]
    max_body: usize,
    /// Most calls in one JSON-RPC batch (1 to 65536).
    #[arg(long, default_value_t = 1024,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_BATCH))]
    max_batch: usize,
    /// Most records in one verify or recover call (1 to 1048576).
    #[arg(long, default_value_t = 65536,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_RECORDS))]
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

/// `serve`'s key options.
#[derive(clap::Args)]
pub struct KeyArgs {
    /// Directory of keystore v3 files: NAME.json and geth's UTC--… files. A file's password is
    /// NAME.pass beside it (for geth's files, the whole name plus .pass) when there is one, else
    /// --password-file, --password-env or, on a terminal, a prompt.
    #[arg(
        long = "keys",
        id = "keys",
        value_name = "DIR",
        required_unless_present_any = ["mnemonic_file", "verify_only"]
    )]
    dir: Option<PathBuf>,
    /// Serve verification and recovery only, with no signing key: the signing methods answer
    /// that this service holds no keys.
    #[arg(long, conflicts_with_all = ["keys", "mnemonic_file", "password_file", "password_env"])]
    verify_only: bool,
    #[command(flatten)]
    password: PasswordArgs,
    #[command(flatten)]
    mnemonic: MnemonicArgs,
    /// Accounts of --mnemonic-file: the key at --hd-path and the N-1 after it along the path's
    /// last step (1 to 100000).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "mnemonic_file",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    hd_accounts: u32,
    /// Longest time decrypting the key files may take, in seconds, before the start is refused
    /// naming the file being decrypted (0: no limit).
    #[arg(long, default_value_t = 60)]
    keys_timeout_secs: u64,
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
    let keys = if args.keys.verify_only {
        None
    } else {
        Some(key_source(&args.keys)?)
    };
    let options = ServeOptions {
        http: args.http,
        grpc: args.grpc,
        keys,
        auth_tokens: args.auth_tokens,
        tls,
        limits: Limits {
            body_bytes: args.max_body,
            batch_requests: args.max_batch,
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

/// The keys to serve: the key directory, the password for its files without a `.pass` file
/// (asked on the terminal when one is needed and none was given) and the mnemonic's accounts.
fn key_source(args: &KeyArgs) -> anyhow::Result<KeySource> {
    let mut password = args.password.given()?;
    if let (None, Some(dir)) = (&password, &args.dir) {
        let unpaired = server_keys::files_without_password(dir).map_err(anyhow::Error::msg)?;
        if !unpaired.is_empty() && std::io::stdin().is_terminal() {
            password = Some(keysource::ask(
                &format!(
                    "Password for {} key file(s) in {}: ",
                    unpaired.len(),
                    dir.display()
                ),
                false,
            )?);
        }
    }
    Ok(KeySource {
        dir: args.dir.clone(),
        password,
        derived: args.mnemonic.keys(args.hd_accounts)?,
        timeout: (args.keys_timeout_secs > 0).then(|| Duration::from_secs(args.keys_timeout_secs)),
    })
}
