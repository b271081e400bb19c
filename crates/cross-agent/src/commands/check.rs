//! `cross-agent check`: the spec's `--check` — who runs it (the caller as the daemon resolves
//! it), the agent CLIs found (honouring `CROSS_AGENT_{CLAUDE,CODEX,GROK}_BIN`), the session a
//! send would reach per agent, the settings in effect, whether the state directory is safe to
//! use (this user's alone) and the health of the daemon's database ([`super::check_database`]);
//! then it exits.
//!
//! The local half (paths, what this process gathered about its caller) is printed even when the
//! daemon cannot answer, so a broken install can still be diagnosed; the exit code is non-zero
//! then. Values of the child environment are never printed, only its names: a variable opted in
//! with `CROSS_AGENT_CHILD_ENV` may be a credential.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use cross_agent_protocol::bridge::{Agent, BridgeStatusParams, CallerContext};
use serde_json::{Value, json};

use super::{bridge_client, check_database};
use crate::setup::places::{find_on_path, is_executable};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl CheckArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let caller = bridge_client::caller();
        let local = local_report(&caller);
        let home = home_safety_report();
        let daemon = daemon_report(&caller);
        let ok = daemon.get("error").is_none() && home["safe"] == Value::Bool(true);
        let database = check_database::report(&daemon);
        if self.json {
            bridge_client::print_json(&json!({
                "local": local,
                "home": home,
                "daemon": daemon,
                "database": database,
            }))?;
        } else {
            let mut out = std::io::stdout().lock();
            writeln!(out, "home safety:")?;
            bridge_client::write_value(&mut out, 1, &home)?;
            writeln!(out, "who runs it (as the daemon resolves it):")?;
            bridge_client::write_value(&mut out, 1, daemon.get("caller").unwrap_or(&daemon))?;
            writeln!(out, "agent CLIs:")?;
            bridge_client::write_value(&mut out, 1, &local["cli_paths"])?;
            writeln!(out, "resolved sessions:")?;
            bridge_client::write_value(
                &mut out,
                1,
                daemon.get("resolved_sessions").unwrap_or(&Value::Null),
            )?;
            writeln!(out, "settings in effect:")?;
            bridge_client::write_value(
                &mut out,
                1,
                daemon.get("settings").unwrap_or(&local["settings"]),
            )?;
            writeln!(out, "gathered here:")?;
            bridge_client::write_value(&mut out, 1, &local["gathered"])?;
            check_database::write(&mut out, &database)?;
        }
        Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }
}

/// What this process can tell alone: the CLI paths and what it gathered about its caller.
fn local_report(caller: &CallerContext) -> Value {
    let cli_paths: serde_json::Map<String, Value> = Agent::ALL
        .into_iter()
        .map(|agent| (agent.as_str().to_owned(), cli_path(agent, caller)))
        .collect();
    json!({
        "cli_paths": cli_paths,
        "settings": caller.settings,
        "gathered": {
            "cwd": caller.cwd,
            "pid": caller.pid,
            "claude_code_session_id": caller.claude_code_session_id,
            "grok_session_id": caller.grok_session_id,
            "self_session": caller.self_session,
            "self_agent": caller.self_agent,
            "conversation_id": caller.conversation_id,
            "ancestry": caller.ancestry.iter().take(6)
                .map(|p| format!("{} {}", p.pid, p.name)).collect::<Vec<_>>(),
            "child_env_names": caller.child_env.keys().collect::<Vec<_>>(),
            "withheld_env": caller.withheld_env,
        },
    })
}

/// Whether the state directory is this user's alone (docs/spec/cross-agent-mcp.md §7): the same check every
/// client and the daemon make before touching it, with its owner and mode.
fn home_safety_report() -> Value {
    use std::os::unix::fs::MetadataExt;
    let home = match cross_agent_home::Home::from_env() {
        Ok(home) => home,
        Err(error) => return json!({"safe": false, "problem": error.to_string()}),
    };
    let root = home.root();
    let found = std::fs::symlink_metadata(root).ok();
    let mut report = json!({
        "path": root,
        "exists": found.is_some(),
        "owner_uid": found.as_ref().map(MetadataExt::uid),
        "mode": found.as_ref().map(|m| format!("{:o}", m.mode() & 0o7777)),
        "your_uid": cross_agent_home::safety::effective_uid(),
    });
    match home.verify() {
        Ok(_) => report["safe"] = Value::Bool(true),
        Err(error) => {
            report["safe"] = Value::Bool(false);
            report["problem"] = Value::String(error.to_string());
        }
    }
    report
}

/// `bridge_status` for this caller, or `{"error": …}`.
fn daemon_report(caller: &CallerContext) -> Value {
    let answer = bridge_client::connect().and_then(|(_home, client)| {
        client
            .call(BridgeStatusParams {
                cwd: None,
                scope: None,
                delivery_id: None,
                caller: caller.clone(),
            })
            .map_err(|error| bridge_client::explain("bridge_status", error))
    });
    match answer {
        Ok(status) => serde_json::to_value(&status)
            .unwrap_or_else(|error| json!({"error": error.to_string()})),
        Err(error) => json!({"error": format!("{error:#}")}),
    }
}

/// Where an agent's CLI is: `CROSS_AGENT_<AGENT>_BIN` or its name, looked up on `PATH`; Grok
/// also in `~/.grok/bin/grok` (an editor started from the Dock has no shell profile's PATH).
fn cli_path(agent: Agent, caller: &CallerContext) -> Value {
    let var = format!("CROSS_AGENT_{}_BIN", agent.as_str().to_ascii_uppercase());
    let configured = caller.settings.get(&var).filter(|v| !v.trim().is_empty());
    let wanted = configured
        .cloned()
        .unwrap_or_else(|| agent.as_str().to_owned());
    let mut found = find_program(&wanted);
    if found.is_none() && agent == Agent::Grok && configured.is_none() {
        found = std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".grok/bin/grok"))
            .filter(|path| is_executable(path));
    }
    json!({
        "path": found.map(|path| path.to_string_lossy().into_owned()),
        "from": if configured.is_some() { var } else { "PATH".to_owned() },
        "wanted": wanted,
    })
}

fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    find_on_path(program)
}
