//! `cross-agent reload` (and `cross-agent daemon restart`, the same thing): replace the running
//! daemon with one started from this binary without cutting anything off.
//!
//! The new daemon takes the socket; the old one finishes every delivery it carries and then
//! exits; the MCP servers editors hold reconnect on their own. The protocol is in
//! `cross_agent_daemon::handover`. Prints per daemon what happened, like the spec's reload:
//!
//! ```text
//! reload: the daemon of /home/you/.cross-agent
//!   ok      daemon 68063 -> 69694 (generation 2); 68063 drains 1 turn running, 1 answer pending
//!   FAILED  daemon 70112: the new daemon (pid 70990) exited with exit status: 1; the old one keeps serving
//! ```
//!
//! Exits non-zero when the replacement failed.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use cross_agent_daemon::handover::{self, Outcome};
use cross_agent_home::Home;
use cross_agent_protocol::rpc::CarriedCounts;
use cross_agent_protocol::settings as var;
use serde_json::json;

/// How long the new daemon may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, Args)]
pub struct ReloadArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

impl ReloadArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        reload(&Home::from_env()?, self.json)
    }
}

/// The program started as the new daemon: `CROSS_AGENT_DAEMON_BIN` if set (tests), else this
/// executable — "the current binary" the reload is for.
fn successor() -> anyhow::Result<std::process::Command> {
    let bin = match std::env::var_os(var::DAEMON_BIN).filter(|v| !v.is_empty()) {
        Some(bin) => std::path::PathBuf::from(bin),
        None => std::env::current_exe()?,
    };
    let mut command = std::process::Command::new(bin);
    command
        .args(["daemon", "run", "--detached"])
        .current_dir("/");
    Ok(command)
}

fn counts(carried: &CarriedCounts) -> String {
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{}, {}, {}",
        plural(carried.turns_running, "turn running", "turns running"),
        plural(carried.answers_pending, "answer pending", "answers pending"),
        plural(
            carried.late_answer_watches,
            "late-answer watch",
            "late-answer watches"
        ),
    )
}

/// Replaces the daemon of `home`; shared with `cross-agent daemon restart`.
pub fn reload(home: &Home, json: bool) -> anyhow::Result<ExitCode> {
    let outcome = handover::replace_blocking(home, successor()?, START_TIMEOUT)?;
    let (ok, line, value) = match &outcome {
        Outcome::Replaced { old, new, carried } => {
            let drains = if carried.is_empty() {
                format!("{} had nothing in flight and exits", old.pid)
            } else {
                format!("{} drains {}", old.pid, counts(carried))
            };
            (
                true,
                format!(
                    "  ok      daemon {} -> {} (generation {}); {drains}",
                    old.pid, new.pid, new.generation
                ),
                json!({
                    "outcome": "ok",
                    "old_pid": old.pid,
                    "old_generation": old.generation,
                    "new_pid": new.pid,
                    "new_generation": new.generation,
                    "draining": carried,
                }),
            )
        }
        Outcome::Failed {
            old,
            detail,
            old_kept,
        } => {
            let kept = if *old_kept {
                "the old one keeps serving"
            } else {
                "and the old one could not take the home back: see `cross-agent daemon status`"
            };
            (
                false,
                format!(
                    "  FAILED  daemon {}: {}; {kept}",
                    old.pid,
                    crate::display::escape(detail)
                ),
                json!({
                    "outcome": "failed",
                    "old_pid": old.pid,
                    "old_generation": old.generation,
                    "old_kept": old_kept,
                    "error": detail,
                }),
            )
        }
        Outcome::NotRunning => {
            let client = cross_agent_ipc::blocking::BlockingClient::connect_or_start(
                home,
                &cross_agent_ipc::ConnectOptions::new(cross_agent_protocol::rpc::ClientKind::Cli),
            )?;
            let hello = client.hello();
            (
                true,
                format!(
                    "  -       no daemon was running; started pid {} (generation {})",
                    hello.daemon_pid, hello.generation
                ),
                json!({
                    "outcome": "started",
                    "new_pid": hello.daemon_pid,
                    "new_generation": hello.generation,
                }),
            )
        }
        Outcome::Unsupported { old_pid, detail } => {
            // An older daemon cannot hand over; replace it the old way. What it carries stops
            // with it (recorded `is_stopped_with_carrier`), so say so.
            eprintln!(
                "the running daemon (pid {old_pid}) cannot hand over ({detail}); stopping it and \
                 starting the new one — its in-flight turns stop with it"
            );
            super::daemon::stop_then_start(home)?;
            let client = cross_agent_ipc::blocking::BlockingClient::connect(
                home,
                &cross_agent_ipc::ConnectOptions::new(cross_agent_protocol::rpc::ClientKind::Cli),
            )?;
            let hello = client.hello();
            (
                true,
                format!(
                    "  ok      daemon {old_pid} -> {} (generation {}); stopped, not drained \
                     (it was too old to hand over)",
                    hello.daemon_pid, hello.generation
                ),
                json!({
                    "outcome": "restarted",
                    "old_pid": old_pid,
                    "new_pid": hello.daemon_pid,
                    "new_generation": hello.generation,
                }),
            )
        }
    };
    if json {
        println!(
            "{}",
            json!({"ok": ok, "home": home.root(), "daemons": [value]})
        );
    } else {
        println!("reload: the daemon of {}", home.root().display());
        println!("{line}");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
