//! The `cross-agent` command tree. Each subcommand lives in its own file under `commands/`; this
//! module only parses arguments, sets up logging on stderr and dispatches.
//!
//! The desktop app (`crates/desktop-app`) links this library for what the commands do without
//! printing: [`setup`] (the install plans and the user service) and [`list_sessions`].

mod commands;
mod display;
pub mod setup;

use std::process::ExitCode;

use clap::Parser;
use cross_agent_protocol::settings as var;

use crate::commands::Command;

/// Every agent's sessions as `cross-agent sessions` lists them, newest first (the desktop app's
/// Sessions panel).
pub fn list_sessions() -> Vec<cross_agent_stores::Session> {
    commands::list_sessions()
}

/// Lets the coding agents you already run (Claude Code, Codex, Grok Build, Copilot) message each
/// other live, hand a session over, and cross-review each other's work.
#[derive(Debug, Parser)]
#[command(name = "cross-agent", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Parses the process arguments and runs the chosen subcommand. Errors are printed on stderr and
/// turned into a non-zero exit code.
pub fn run() -> ExitCode {
    // A shim (by name or `shim …`) is decided first: an editor's `--version` call through it
    // must reach the real binary without the command tree or logging being set up.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = cross_agent_shim::cli::entry(&args) {
        return code;
    }
    let cli = Cli::parse_from(args);
    init_logging();
    match cli.command.run() {
        Ok(code) => code,
        Err(error) => {
            // Errors quote titles, paths and peers' words: escaped like every other output.
            eprintln!("cross-agent: {}", display::escape(&format!("{error:#}")));
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr so stdout stays free for output other programs parse; coloured only when
/// stderr is a terminal (a file or a pipe gets no escape codes), as the daemon's.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env(var::LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(cross_agent_daemon::logging::colour_on_stderr())
        .with_writer(std::io::stderr)
        .try_init();
}
