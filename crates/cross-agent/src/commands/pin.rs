//! `cross-agent pin <agent> [SESSION]`: `pin_agent_session` from a shell. A pin names where
//! sends to that agent go when no session is given; it never says who the caller is. Without
//! SESSION it unpins. The title and id it prints come from a store, so they are escaped.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use cross_agent_protocol::bridge::{Agent, Pin, PinParams, PinResponse};

use cross_agent_protocol::hosts::HostCall;

use super::bridge_client;
use super::send::{EXIT_REFUSED, write_refusal};
use crate::display::escape_cell;

#[derive(Debug, Args)]
pub struct PinArgs {
    /// Whose session to pin.
    #[arg(value_enum)]
    agent: PinAgent,
    /// Session id or exact name; leave it out to unpin.
    session: Option<String>,
    /// The directory a name is resolved from (default: here).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The machine the session is on: a host of `cross-agent hosts list` (default: this one).
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum PinAgent {
    Claude,
    Codex,
    Grok,
}

impl PinArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let agent = match self.agent {
            PinAgent::Claude => Agent::Claude,
            PinAgent::Codex => Agent::Codex,
            PinAgent::Grok => Agent::Grok,
        };
        let params = PinParams {
            agent,
            session_id: self.session,
            cwd: bridge_client::absolute_cwd(self.cwd)?,
            caller: bridge_client::caller(),
        };
        let (_home, client) = bridge_client::connect()?;
        let response: PinResponse = match &self.host {
            Some(host) => bridge_client::on_host(&client, host, HostCall::Pin(params))?,
            None => client
                .call(params)
                .map_err(|error| bridge_client::explain("pin", error))?,
        };
        if self.json {
            bridge_client::print_json(&response)?;
        }
        match response {
            PinResponse::Pinned { pin, previous } => {
                if !self.json {
                    println!("pinned {}", describe(&pin));
                    if let Some(previous) = previous {
                        println!("(replaces {})", describe(&previous));
                    }
                }
                Ok(ExitCode::SUCCESS)
            }
            PinResponse::Unpinned { previous } => {
                if !self.json {
                    match previous {
                        Some(previous) => println!("unpinned {}", describe(&previous)),
                        None => println!("no {agent} session was pinned"),
                    }
                }
                Ok(ExitCode::SUCCESS)
            }
            PinResponse::Refused(refusal) => {
                write_refusal(&mut std::io::stderr().lock(), &refusal)?;
                Ok(ExitCode::from(EXIT_REFUSED))
            }
        }
    }
}

fn describe(pin: &Pin) -> String {
    let title = pin
        .title
        .as_deref()
        .map(|title| format!(" \"{}\"", escape_cell(title)))
        .unwrap_or_default();
    format!(
        "{} session {}{title}{}",
        pin.agent,
        escape_cell(&pin.session_id),
        if pin.sticky { "" } else { " (automatic)" }
    )
}
