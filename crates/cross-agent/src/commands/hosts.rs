//! `cross-agent hosts`: the other machines the daemon links to over ssh (docs/remote.md).
//! `add`, `remove` and `list` edit and read `hosts.toml` in the home (crate `hosts`); `status`
//! asks the daemon how each link is.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use cross_agent_home::Home;
use cross_agent_hosts::file::{self, Added};
use cross_agent_protocol::hosts::HostsStatusParams;

use super::bridge_client;
use crate::display::table::{Column, Plain};

#[derive(Debug, Args)]
pub struct HostsArgs {
    #[command(subcommand)]
    command: HostsCommand,
}

#[derive(Debug, Subcommand)]
enum HostsCommand {
    /// Link to another machine: NAME is how it is called here, DESTINATION what ssh is given
    /// (user@box, or a Host of ~/.ssh/config; default NAME). cross-agent must be installed there.
    Add {
        /// The host's name here (letters, digits, `.`, `_`, `-`).
        name: String,
        /// The ssh destination (default: NAME).
        destination: Option<String>,
    },
    /// Stop linking to a host.
    Remove {
        /// The host's name, exactly as added.
        name: String,
    },
    /// The hosts in hosts.toml.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// How each link is: state, ssh's last error, round trip, the remote's version.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

impl HostsArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self.command {
            HostsCommand::Add { name, destination } => add(&name, destination.as_deref()),
            HostsCommand::Remove { name } => {
                let home = Home::from_env()?;
                file::remove(&home, &name)?;
                println!("removed host `{name}`; the daemon closes its link");
                Ok(ExitCode::SUCCESS)
            }
            HostsCommand::List { json } => list(json),
            HostsCommand::Status { json } => status(json),
        }
    }
}

fn add(name: &str, destination: Option<&str>) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    let destination = destination.unwrap_or(name);
    match file::add(&home, name, destination)? {
        Added::New => println!("added host `{name}` (ssh destination `{destination}`)"),
        Added::Unchanged => println!("host `{name}` is already set up for `{destination}`"),
    }
    // The daemon keeps the links: started now so the link comes up without waiting for the
    // next command that needs it.
    match bridge_client::connect() {
        Ok(_) => println!("the daemon links to it now; `cross-agent hosts status` shows how"),
        Err(error) => eprintln!(
            "cross-agent: the host is saved, but the daemon did not start, so nothing links to \
             it yet: {error:#}"
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn list(json: bool) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    let hosts = file::read(&file::path(home.root()))?;
    if json {
        let hosts: Vec<_> = hosts
            .iter()
            .map(|h| serde_json::json!({"name": h.name, "destination": h.destination}))
            .collect();
        bridge_client::print_json(&hosts)?;
        return Ok(ExitCode::SUCCESS);
    }
    if hosts.is_empty() {
        println!("no hosts; `cross-agent hosts add NAME [DESTINATION]` adds one");
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = Plain::new(&[Column::left("NAME"), Column::left("DESTINATION")]);
    for host in &hosts {
        table.row([host.name.as_str(), host.destination.as_str()]);
    }
    table.write(&mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

fn status(json: bool) -> anyhow::Result<ExitCode> {
    let (_home, client) = bridge_client::connect()?;
    let status = client
        .call(HostsStatusParams {})
        .map_err(|error| bridge_client::explain("hosts_status", error))?;
    if json {
        bridge_client::print_json(&status)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if let Some(error) = &status.file_error {
        writeln!(out, "warning: {error}")?;
    }
    if status.hosts.is_empty() {
        writeln!(
            out,
            "no hosts; `cross-agent hosts add NAME [DESTINATION]` adds one"
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = Plain::new(&[
        Column::left("NAME"),
        Column::left("STATE"),
        Column::right("RTT"),
        Column::left("REMOTE"),
        Column::left("LAST ERROR"),
    ]);
    for host in &status.hosts {
        table.row([
            host.name.clone(),
            host.state.as_str().to_owned(),
            host.rtt_ms
                .map(|ms| format!("{ms:.1} ms"))
                .unwrap_or_default(),
            host.remote_version.clone().unwrap_or_default(),
            host.last_error.clone().unwrap_or_default(),
        ]);
    }
    table.write(&mut out)?;
    Ok(ExitCode::SUCCESS)
}
