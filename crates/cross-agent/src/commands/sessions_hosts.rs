//! `cross-agent sessions --host NAME` and `--hosts all`: the listing of another machine's
//! sessions, or of this machine's and every host's merged, asked of the local daemon, which
//! forwards it over each host's link (docs/remote.md). Each entry names its `host` (`null`
//! for this machine); a host that could not be asked is a line on stderr naming it.

use std::io::Write;
use std::process::ExitCode;

use cross_agent_protocol::bridge::{AgentFilter, ListSessionsParams, ListSessionsResponse, Scope};
use cross_agent_protocol::hosts::HostCall;

use super::bridge_client;
use crate::display::{escape, escape_cell};

/// Lists `agent`'s sessions on `host` (a name, or `all`).
pub fn list(
    host: &str,
    agent: AgentFilter,
    scope: Scope,
    cwd: Option<String>,
    limit: Option<usize>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let params = ListSessionsParams {
        agent,
        scope: Some(scope),
        cwd,
        limit: limit.map(|l| u32::try_from(l).unwrap_or(u32::MAX)),
        caller: bridge_client::caller(),
    };
    let (_home, client) = bridge_client::connect()?;
    let listing: ListSessionsResponse =
        bridge_client::on_host(&client, host, HostCall::ListSessions(params))?;
    for warning in &listing.warnings {
        eprintln!("cross-agent sessions: {}", escape(warning));
    }
    if json {
        bridge_client::print_json(&listing.sessions)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "HOST\tAGENT\tSESSION\tTITLE\tLAST ACTIVE\tCWD")?;
    for (agent, entries) in &listing.sessions {
        for entry in entries {
            writeln!(
                out,
                "{}\t{agent}\t{}\t{}\t{}\t{}",
                escape_cell(entry.host.as_deref().unwrap_or("(here)")),
                escape_cell(&entry.session_id),
                escape_cell(entry.title.as_deref().unwrap_or("(untitled)")),
                escape_cell(entry.last_activity.as_deref().unwrap_or("-")),
                escape_cell(entry.cwd.as_deref().unwrap_or("-")),
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
