//! `cross-agent sessions`: list the sessions every agent keeps on disk, or resolve one by id or
//! exact name.

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Args)]
pub struct SessionsArgs {}

impl SessionsArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        anyhow::bail!("`cross-agent sessions` is not built yet (issue 3)")
    }
}
