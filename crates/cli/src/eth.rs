//! `chainsig eth …`: owned by the eth crate's developer; replaced as that crate lands.

use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum EthCommand {
    /// Not yet available.
    Pending,
}

pub fn run(cmd: EthCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        EthCommand::Pending => anyhow::bail!("chainsig eth is not built yet"),
    }
}
