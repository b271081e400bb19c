//! `cross-agent status [DELIVERY_ID]`: `bridge_status` from a shell — who is calling as the
//! daemon resolves it, the settings in effect, the session a send would reach per agent, pins,
//! locks and deliveries; with a delivery id, that delivery and its peer's transcript.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use cross_agent_protocol::bridge::{BridgeStatusParams, BridgeStatusResponse, Scope};
use serde_json::Value;

use cross_agent_protocol::hosts::HostCall;

use super::bridge_client;
use crate::display::escape;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// One delivery to report on (from a send receipt).
    delivery_id: Option<String>,
    /// The directory sessions are resolved for (default: here).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Where sessions are resolved (default: CROSS_AGENT_SCOPE, else cwd).
    #[arg(long, value_enum)]
    scope: Option<Scope>,
    /// Ask the daemon of this machine instead (a forwarded delivery's own record there): a host of `cross-agent hosts list` (default: this one).
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl StatusArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let params = BridgeStatusParams {
            cwd: bridge_client::absolute_cwd(self.cwd)?,
            scope: self.scope,
            delivery_id: self.delivery_id,
            caller: bridge_client::caller(),
        };
        let (_home, client) = bridge_client::connect()?;
        let status: BridgeStatusResponse = match &self.host {
            Some(host) => bridge_client::on_host(&client, host, HostCall::BridgeStatus(params))?,
            None => client
                .call(params)
                .map_err(|error| bridge_client::explain("bridge_status", error))?,
        };
        if self.json {
            bridge_client::print_json(&status)?;
        } else {
            write_status(&mut std::io::stdout().lock(), &status)?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// Every section of the status, titled, in the order a person reads them.
pub fn write_status(out: &mut impl Write, status: &BridgeStatusResponse) -> anyhow::Result<()> {
    let sections: [(&str, Value); 7] = [
        ("server", serde_json::to_value(&status.server_process)?),
        ("caller", serde_json::to_value(&status.caller)?),
        ("settings", serde_json::to_value(&status.settings)?),
        (
            "resolved sessions",
            serde_json::to_value(&status.resolved_sessions)?,
        ),
        ("pins", serde_json::to_value(&status.pins)?),
        ("locks", serde_json::to_value(&status.locks)?),
        ("deliveries", serde_json::to_value(&status.deliveries)?),
    ];
    for (title, value) in &sections {
        writeln!(out, "{title}:")?;
        bridge_client::write_value(out, 1, value)?;
    }
    if let Some(delivery) = &status.delivery {
        writeln!(out, "delivery:")?;
        bridge_client::write_value(out, 1, &serde_json::to_value(delivery)?)?;
    }
    if let Some(transcript) = &status.peer_transcript {
        writeln!(out, "peer transcript:")?;
        bridge_client::write_value(out, 1, &serde_json::to_value(transcript)?)?;
    }
    for warning in &status.warnings {
        writeln!(out, "warning: {}", escape(warning))?;
    }
    Ok(())
}
