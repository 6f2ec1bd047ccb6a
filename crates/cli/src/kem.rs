//! `chainsig kem …`: owned by the kem crate's developer; replaced as that crate lands.

use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum KemCommand {
    /// Not yet available.
    Pending,
}

pub fn run(cmd: KemCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        KemCommand::Pending => anyhow::bail!("chainsig kem is not built yet"),
    }
}
