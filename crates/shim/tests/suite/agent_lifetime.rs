//! The real agent ends with its shim: an editor may SIGKILL the shim when a panel closes, and an
//! agent left running would hold its session and go on with a turn nobody reads. Its stdin's
//! EOF alone does not stop a turn in flight, so each test kills the shim mid-turn.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use cross_agent_protocol::panel::PanelSessionState;
use cross_agent_testkit::agents::{AgentKind, Codex, agent_binary};
use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::leaks::{SETTLE, assert_none_left, left_running};
use cross_agent_testkit::panel::{PanelDriver, claude_user};
use cross_agent_testkit::{Reply, Rule};
use serde_json::json;

use super::common::{Bench, TURN};

/// A turn that is still running when the shim dies.
const LONG: Duration = Duration::from_secs(120);

fn kill_shim(pid: u32) -> Result<()> {
    let status = Command::new("kill")
        .arg("-KILL")
        .arg(pid.to_string())
        .status()?;
    anyhow::ensure!(status.success(), "kill -KILL {pid}: {status}");
    Ok(())
}

/// Waits until the model has been asked for the turn that carries `text`.
fn wait_for_turn(bench: &Bench, text: &str) -> Result<()> {
    bench
        .endpoint
        .wait_until(TURN, |requests| {
            requests.iter().any(|r| {
                r.last_user_text
                    .as_deref()
                    .is_some_and(|t| t.contains(text))
            })
        })
        .map(drop)
        .with_context(|| format!("the turn '{text}' never reached the model"))
}

/// The agent and everything else of this test is running before the kill, and gone after it.
fn agent_ends_with_shim(bench: &Bench, shim: u32, agent: u32) -> Result<()> {
    let home = bench.home.path();
    let before: Vec<u32> = left_running(home).iter().map(|(pid, _)| *pid).collect();
    assert!(before.contains(&agent), "{agent} not among {before:?}");
    kill_shim(shim)?;
    assert_none_left(home, SETTLE)
}

#[test]
fn real_claude_mid_turn_ends_when_its_shim_is_killed() -> Result<()> {
    let bench = Bench::new()?;
    bench.script([
        Rule::on_user_text("long claude turn").reply(Reply::text("never read").delay(LONG))
    ]);
    let mut panel = bench.claude_panel()?;
    panel.send(&claude_user("long claude turn"))?;
    let shim = panel.pid();
    let registration = bench.registration_when(shim, |r| {
        r.sessions
            .first()
            .is_some_and(|s| s.state == PanelSessionState::Working)
    })?;
    wait_for_turn(&bench, "long claude turn")?;
    let agent = registration.agent_pid.context("no agent pid registered")?;
    agent_ends_with_shim(&bench, shim, agent)
}

#[test]
fn real_codex_app_server_mid_turn_ends_when_its_shim_is_killed() -> Result<()> {
    let bench = Bench::new()?;
    bench.script([
        Rule::on_user_text("long codex turn").reply(Reply::text("never read").delay(LONG))
    ]);
    let codex = Codex::new(&bench.home, &bench.endpoint.openai_base_url())?;
    let mut panel = PanelDriver::start(codex_shim(&bench, &codex)?)?;
    let shim = panel.pid();
    panel.send(&json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "codex_vscode", "title": "Test Extension", "version": "0.0.1"}, "capabilities": null}}).to_string())?;
    panel.next_line(TURN, |l| l["id"] == 1)?;
    panel.send(&json!({"method": "initialized"}).to_string())?;
    panel.send(&json!({"id": 2, "method": "thread/start", "params": {"cwd": bench.project, "approvalPolicy": "never", "sandbox": "read-only"}}).to_string())?;
    let started = panel.next_line(TURN, |l| l["id"] == 2)?;
    let thread = started["result"]["thread"]["id"]
        .as_str()
        .with_context(|| format!("no thread in {started}"))?;
    panel.send(&json!({"id": 3, "method": "turn/start", "params": {"threadId": thread, "input": [{"type": "text", "text": "long codex turn"}]}}).to_string())?;
    wait_for_turn(&bench, "long codex turn")?;
    let json = bench.panels().join(format!("codex-{shim}.json"));
    let registration: cross_agent_protocol::panel::PanelRegistration =
        serde_json::from_slice(&std::fs::read(&json)?)?;
    let agent = registration.agent_pid.context("no agent pid registered")?;
    agent_ends_with_shim(&bench, shim, agent)
}

/// `cross-agent shim codex app-server` in front of the real Codex, in the bench's HOME.
fn codex_shim(bench: &Bench, codex: &Codex) -> Result<Command> {
    let direct = codex.app_server(&bench.project);
    let mut command = Command::new(cross_agent_bin()?);
    command.current_dir(&bench.project).env_clear();
    for (key, value) in direct.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    let real: &Path = &agent_binary(AgentKind::Codex)?;
    command
        .env("CROSS_AGENT_HOME", &bench.state)
        .env("CROSS_AGENT_REAL_CODEX", real)
        .args(["shim", "codex", "app-server"]);
    Ok(command)
}
