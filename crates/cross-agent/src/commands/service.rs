//! `cross-agent service install|uninstall|start|stop|status`: the daemon as a systemd user unit
//! (Linux) or a launchd agent (macOS). The work is [`crate::setup::service`]'s, which the
//! desktop app's Service panel calls too; this prints what it says.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::{bridge_client, install};
use crate::setup::places::Places;
use crate::setup::service::{self, Manager};

#[derive(Debug, Args)]
pub struct ServiceArgs {
    #[command(subcommand)]
    action: ServiceAction,
}

#[derive(Debug, Subcommand)]
enum ServiceAction {
    /// Write the user service for the daemon and start it (when a service manager answers).
    Install(ServiceInstallArgs),
    /// Stop the user service and remove its file.
    Uninstall,
    /// Start the installed service now.
    Start,
    /// Stop the service now (it stays installed and starts again at the next login).
    Stop,
    /// Whether the service file is there, and what the service manager says.
    Status(ServiceStatusArgs),
}

#[derive(Debug, Args)]
struct ServiceInstallArgs {
    /// Print the file that would be written and change nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Args)]
struct ServiceStatusArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl ServiceArgs {
    pub fn run(self) -> Result<ExitCode> {
        let places = Places::from_env()?;
        let manager = Manager::for_this_os(&places);
        let said = match self.action {
            ServiceAction::Install(args) => {
                service::install(&places, &manager, &install::this_binary()?, args.dry_run)?
            }
            ServiceAction::Uninstall => service::uninstall(&manager)?,
            ServiceAction::Start => service::start(&manager)?,
            ServiceAction::Stop => service::stop(&manager)?,
            ServiceAction::Status(args) => return status(&manager, args.json),
        };
        std::io::stdout().lock().write_all(said.as_bytes())?;
        Ok(ExitCode::SUCCESS)
    }
}

fn status(manager: &Manager, as_json: bool) -> Result<ExitCode> {
    let status = service::status(manager);
    if as_json {
        bridge_client::print_json(&serde_json::to_value(&status)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "service file: {} ({})",
        status.file.display(),
        if status.written {
            "written"
        } else {
            "not written: cross-agent service install"
        }
    )?;
    match status.state {
        Some(state) => writeln!(out, "service: {state}")?,
        None => writeln!(
            out,
            "service manager: none answers here (the daemon starts itself on first use)"
        )?,
    }
    Ok(ExitCode::SUCCESS)
}
