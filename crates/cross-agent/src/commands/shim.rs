//! `cross-agent shim …`: only its help lives in the command tree. The binary hands every shim
//! call to `cross_agent_shim::cli::entry` before this tree is built (see `run` in `lib.rs`), so a
//! panel's `--version` call costs an exec, not an argument parser.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Args)]
pub struct ShimArgs {
    /// claude <real-claude> <args…> | codex <args…> | grok <args…> | links [DIR]
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

impl ShimArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let argv: Vec<OsString> = ["cross-agent".into(), "shim".into()]
            .into_iter()
            .chain(self.args)
            .collect();
        Ok(cross_agent_shim::cli::entry(&argv).unwrap_or(ExitCode::FAILURE))
    }
}
