//! `chainsig`: the command line. Thin by design: it parses arguments, streams records through the
//! library crates and formats their answers; all cryptography lives in the library crates.

mod eth;
mod kem;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "chainsig", version, about = "Fast blockchain signature verification, signing and post-quantum KEM")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Ethereum transactions: sign, bulk-sign, decode.
    #[command(subcommand)]
    Eth(eth::EthCommand),
    /// CTRU-Prime post-quantum KEM.
    #[command(subcommand)]
    Kem(kem::KemCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Eth(cmd) => eth::run(cmd),
        Command::Kem(cmd) => kem::run(cmd),
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("chainsig: {err:#}");
            ExitCode::from(2)
        }
    }
}
