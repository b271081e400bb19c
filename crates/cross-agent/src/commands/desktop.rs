//! `cross-agent desktop`: opens the desktop app, `cross-agent-desktop`, from beside this binary
//! (it is its own binary so this one never links a GUI toolkit). When it is not there, says how
//! to build it.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result};
use clap::Args;

/// The app's binary name.
pub const APP: &str = "cross-agent-desktop";

#[derive(Debug, Args)]
pub struct DesktopArgs {}

impl DesktopArgs {
    pub fn run(self) -> Result<ExitCode> {
        let app = app_beside(&super::install::this_binary()?);
        if !app.is_file() {
            anyhow::bail!("{}", missing(&app));
        }
        let status = Command::new(&app)
            .status()
            .with_context(|| format!("running {}", app.display()))?;
        Ok(if status.success() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }
}

/// Where the app is: beside `this`.
pub fn app_beside(this: &Path) -> PathBuf {
    this.with_file_name(APP)
}

/// What to say when the app is missing.
pub fn missing(app: &Path) -> String {
    format!(
        "the desktop app is not installed: {} is missing. Build it beside cross-agent with \
         `cargo build -p cross-agent-desktop --release` (it goes to target/release/ beside \
         target/release/cross-agent), or copy it next to this binary",
        app.display()
    )
}
