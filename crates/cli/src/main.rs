//! `chainsig`: the command line. Thin by design: it parses arguments, streams records through the
//! library crates and formats their answers; all cryptography lives in the library crates.

mod account;
mod backends;
mod bench;
mod bench_file;
mod bench_kem;
mod bench_raw;
mod eth;
mod gen;
mod input;
mod kem;
mod keysource;
mod ordered;
mod recover;
mod serve;
mod sign_bulk;
mod stop;
mod verify;
mod verify_pipeline;
mod verify_report;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// mimalloc rather than the system allocator: the server's request path (hyper, JSON, the signed
/// transaction) allocates and frees many small blocks per request, and `chainsig loadtest
/// --scenario sign` on the 2-core box spent about 8 % of its time in glibc malloc/free
/// (see results/loadtest/loadtest_notes_srvperf.md for the throughput with and without it).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "chainsig",
    version,
    about = "Fast blockchain signature verification, signing and post-quantum KEM"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify signatures: JSON Lines in, one verdict line per input line out, in order.
    Verify(verify::VerifyArgs),
    /// Generate signed records (some corrupted) in the verify format.
    Gen(gen::GenArgs),
    /// Recover Ethereum senders from raw transactions or signatures.
    Recover(recover::RecoverArgs),
    /// Benchmark verification on generated batches, on the best backend present (or, with
    /// `--kem ctru`, the CTRU-Prime KEM on the GPU and the CPU).
    Bench(bench::BenchArgs),
    /// Ethereum transactions and keys: sign, bulk-sign, decode, accounts, mnemonics.
    #[command(subcommand)]
    Eth(eth::EthCommand),
    /// CTRU-Prime post-quantum KEM.
    #[command(subcommand)]
    Kem(kem::KemCommand),
    /// The signing and verification service: JSON-RPC and REST over HTTP, and gRPC, on one listener.
    Serve(serve::ServeArgs),
    /// Load test a running server (loopback only) or an in-process one: JSON-RPC signing, batch verification or gRPC stream signing.
    Loadtest(chainsig_loadtest::LoadtestArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Verify(args) => verify::run(args),
        Command::Gen(args) => gen::run(args),
        Command::Recover(args) => recover::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Eth(cmd) => eth::run(cmd),
        Command::Kem(cmd) => kem::run(cmd),
        Command::Serve(args) => serve::run(args),
        Command::Loadtest(args) => chainsig_loadtest::run(args, || backends::registry("auto")),
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("chainsig: {err:#}");
            ExitCode::from(2)
        }
    }
}
