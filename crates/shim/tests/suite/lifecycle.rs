//! The shim's names and agents, its socket's `status`, and interception stopping (bytes still
//! flowing) after an error of its own — with stand-in agents, so no model is needed.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use cross_agent_protocol::panel::{ShimEvent, ShimRequest};
use cross_agent_protocol::vocabulary::Agent;
use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::panel::PanelDriver;
use pretty_assertions::assert_eq;

use super::common::{Bench, Connection};

fn wait_until(what: &str, done: impl Fn() -> bool) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        if Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// `cross-agent shim links <home>/bin`, which must succeed: the folder and what it printed.
fn make_links(bench: &Bench) -> Result<(PathBuf, std::process::Output)> {
    let dir = bench.home.path().join("bin");
    let output = Command::new(cross_agent_bin()?)
        .args(["shim", "links"])
        .arg(&dir)
        .output()?;
    assert!(output.status.success(), "{output:?}");
    Ok((dir, output))
}

#[test]
fn the_links_run_as_their_shims_and_the_settings_are_printed() -> Result<()> {
    let bench = Bench::new()?;
    let (dir, output) = make_links(&bench)?;
    let settings: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let claude_link = dir.join("cross-agent-claude-shim");
    assert_eq!(
        settings["claudeCode.claudeProcessWrapper"],
        claude_link.display().to_string()
    );
    let agent = bench.script_file("agent.sh", r#"echo "pid $$ $*""#)?;
    let run = |mut command: Command| -> Result<(u32, String)> {
        command
            .env("CROSS_AGENT_HOME", &bench.state)
            .env("HOME", bench.home.path());
        let mut panel = PanelDriver::start(command)?;
        panel.close_stdin();
        assert!(panel.wait(Duration::from_secs(120))?.success());
        Ok((panel.pid(), String::from_utf8(panel.received())?))
    };
    let mut claude = Command::new(&claude_link);
    claude.arg(&agent).arg("--version");
    let (pid, printed) = run(claude)?;
    assert_eq!(printed, format!("pid {pid} --version\n"));
    let mut codex = Command::new(dir.join("cross-agent-codex-shim"));
    codex
        .env("CROSS_AGENT_REAL_CODEX", &agent)
        .args(["app-server", "daemon"]);
    let (pid, printed) = run(codex)?;
    assert_eq!(printed, format!("pid {pid} app-server daemon\n"));
    let mut grok = Command::new(dir.join("cross-agent-grok-shim"));
    grok.env("CROSS_AGENT_REAL_GROK", &agent).arg("update");
    let (pid, printed) = run(grok)?;
    assert_eq!(printed, format!("pid {pid} update\n"));
    Ok(())
}

/// An SDK host whose `pathToClaudeCodeExecutable` is the link starts it as claude itself, the
/// CLI's options first: the real claude is found — the override, else `claude` on PATH (past
/// the link under that name) — and handed every argument.
#[test]
fn the_claude_link_started_as_claude_itself_runs_the_real_one_with_every_argument() -> Result<()> {
    let bench = Bench::new()?;
    let (dir, _) = make_links(&bench)?;
    let link = dir.join("cross-agent-claude-shim");
    let agent = bench.script_file("agent.sh", r#"echo "$0 $*""#)?;
    // `claude` on PATH: first the shim under that name (skipped), then the real one.
    let shims = bench.home.path().join("shims");
    let on_path = bench.home.path().join("path");
    std::fs::create_dir_all(&shims)?;
    std::fs::create_dir_all(&on_path)?;
    std::os::unix::fs::symlink(&link, shims.join("claude"))?;
    std::os::unix::fs::symlink(&agent, on_path.join("claude"))?;
    let path = std::env::join_paths([&shims, &on_path])?;
    let run = |override_real: Option<&std::path::Path>| -> Result<String> {
        let mut command = Command::new(&link);
        command
            .args(["--output-format", "stream-json", "--version"])
            .env_clear()
            .env("CROSS_AGENT_HOME", &bench.state)
            .env("HOME", bench.home.path())
            .env("PATH", &path);
        if let Some(real) = override_real {
            command.env("CROSS_AGENT_REAL_CLAUDE", real);
        }
        let mut panel = PanelDriver::start(command)?;
        panel.close_stdin();
        let status = panel.wait(Duration::from_secs(120))?;
        let printed = String::from_utf8(panel.received())?;
        assert!(status.success(), "{status:?}: {printed}");
        Ok(printed)
    };
    assert_eq!(
        run(None)?,
        format!(
            "{} --output-format stream-json --version\n",
            on_path.join("claude").display()
        )
    );
    assert_eq!(
        run(Some(&agent))?,
        format!(
            "{} --output-format stream-json --version\n",
            agent.display()
        )
    );
    Ok(())
}

#[test]
fn a_codex_panel_session_passes_through_and_registers() -> Result<()> {
    let bench = Bench::new()?;
    let echo = bench.script_file("codex.sh", "cat")?;
    let mut command = Command::new(cross_agent_bin()?);
    command
        .current_dir(&bench.project)
        .env("HOME", bench.home.path())
        .env("CROSS_AGENT_HOME", &bench.state)
        .env("CROSS_AGENT_REAL_CODEX", &echo)
        .args(["shim", "codex", "app-server"]);
    let mut panel = PanelDriver::start(command)?;
    let json = bench.panels().join(format!("codex-{}.json", panel.pid()));
    wait_until("the codex registration", || json.exists())?;
    panel.send(r#"{"id":1,"method":"initialize","params":{}}"#)?;
    panel.next_line(Duration::from_secs(120), |l| l["id"] == 1)?;
    let registration: cross_agent_protocol::panel::PanelRegistration =
        serde_json::from_slice(&std::fs::read(&json)?)?;
    assert_eq!(registration.agent, Agent::Codex);
    assert_eq!(registration.real_binary, echo.display().to_string());
    panel.close_stdin();
    assert!(panel.wait(Duration::from_secs(120))?.success());
    assert_eq!(panel.received(), panel.sent());
    assert!(!json.exists());
    Ok(())
}

#[test]
fn an_error_of_its_own_after_the_start_stops_interception_and_bytes_keep_flowing() -> Result<()> {
    let bench = Bench::new()?;
    let echo = bench.script_file("echo.sh", "cat")?;
    let mut panel =
        PanelDriver::start(bench.shim_command(&echo, &["--input-format", "stream-json"])?)?;
    let pid = panel.pid();
    let socket = bench.panels().join(format!("claude-{pid}.sock"));
    let registration = bench.registration_when(pid, |r| r.agent_pid.is_some())?;
    let status = Connection::open(&socket, &ShimRequest::Status)?.rest()?;
    assert_eq!(
        status,
        vec![ShimEvent::Status {
            registration: registration.clone()
        }]
    );

    // The registration can no longer be written: a directory took its name.
    let json = bench.registration_path(pid);
    std::fs::remove_file(&json)?;
    std::fs::create_dir(&json)?;
    // A human line changes the sessions, so the shim writes its registration, and fails.
    panel.send(r#"{"type":"user","message":{"role":"user","content":"hi"}}"#)?;
    wait_until("the socket to go", || !socket.exists())?;
    panel.send(r#"{"type":"user","message":{"role":"user","content":"still here"}}"#)?;
    panel.next_line(Duration::from_secs(120), |l| {
        l["message"]["content"] == "still here"
    })?;
    panel.close_stdin();
    assert!(panel.wait(Duration::from_secs(120))?.success());
    assert_eq!(panel.received(), panel.sent());
    let log = std::fs::read_to_string(bench.state.join("logs/shim.log"))?;
    assert!(log.contains("stopped intercepting"), "{log}");
    Ok(())
}
