//! The subcommand tree: one file per subcommand, each with its own arguments and `run`.

mod daemon;
mod sessions;

use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the agent sessions on disk, or resolve one by id or exact name.
    Sessions(sessions::SessionsArgs),
    /// Run, start, stop or inspect the per-user daemon that carries all cross-agent state.
    Daemon(daemon::DaemonArgs),
}

impl Command {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            Command::Sessions(args) => args.run(),
            Command::Daemon(args) => args.run(),
        }
    }
}
