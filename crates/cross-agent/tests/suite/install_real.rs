//! `cross-agent install` against the real Claude Code 2.1.332 and Codex 0.171.0 in a temporary
//! HOME: afterwards their own `mcp list` shows `cross-agent` (Claude Code's connected, after
//! starting it), a real Claude session and a real Codex session each call
//! `list_agent_sessions` through the installed registration alone (no `--mcp-config`, no
//! `--allowedTools`: the allow rule and Codex's approval mode come from the install), and
//! `doctor` agrees with both agents.

use std::path::{Path, PathBuf};
use std::process::Command;

use cross_agent_testkit::agents::{AgentHome, AgentKind, Claude, Codex, agent_binary};
use cross_agent_testkit::endpoint::{Api, ModelEndpoint, Rule, ToolCall};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");

/// `PATH` with the real agent CLIs first (then the test's own, where `node` is).
fn path_with_agents() -> String {
    let agents = agent_binary(AgentKind::Claude).unwrap();
    format!(
        "{}:{}",
        agents.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned())
    )
}

/// A command run as the person of `home`, with the agents on `PATH`.
fn as_person(home: &AgentHome, program: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("HOME", home.path())
        .env("CODEX_HOME", home.codex_home())
        .env("PATH", path_with_agents())
        .env("TMPDIR", home.path().join("tmp"))
        .env("CROSS_AGENT_LOG", "error");
    command
}

fn stdout_of(mut command: Command) -> String {
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{command:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Stops the daemon the sessions' `cross-agent mcp` started.
struct StopDaemon<'a>(&'a AgentHome);

impl Drop for StopDaemon<'_> {
    fn drop(&mut self) {
        let _ = as_person(self.0, Path::new(BIN), &["daemon", "stop"]).output();
    }
}

#[test]
fn installed_registrations_connect_and_real_sessions_call_through_them() {
    let home = AgentHome::new().unwrap();
    let _stop = StopDaemon(&home);
    let project = home.project("proj").unwrap();
    let endpoint = ModelEndpoint::start().unwrap();
    let claude = Claude::new(&home, &endpoint.anthropic_base_url()).unwrap();
    // Codex's scripted provider goes into config.toml first; install then adds its table.
    let codex = Codex::new(&home, &endpoint.openai_base_url()).unwrap();

    let out = stdout_of(as_person(&home, Path::new(BIN), &["install"]));
    assert!(out.contains("claude   found"), "{out}");
    assert!(out.contains("codex    found"), "{out}");
    let binary: PathBuf = Path::new(BIN).canonicalize().unwrap();

    // The agents' own listings.
    let claude_bin = agent_binary(AgentKind::Claude).unwrap();
    let listed = stdout_of(as_person(&home, &claude_bin, &["mcp", "list"]));
    assert!(
        listed.contains(&format!(
            "cross-agent: {} mcp - ✔ Connected",
            binary.display()
        )),
        "{listed}"
    );
    let codex_bin = agent_binary(AgentKind::Codex).unwrap();
    let listed = stdout_of(as_person(&home, &codex_bin, &["mcp", "list", "--json"]));
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let server = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "cross-agent")
        .unwrap_or_else(|| panic!("{listed:#}"));
    assert_eq!(server["enabled"], true);
    assert_eq!(server["transport"]["command"], json!(binary));
    assert_eq!(server["transport"]["args"], json!(["mcp"]));

    // A real Claude session calls the tool through the installed registration and allow rule.
    endpoint.push(
        Rule::on_user_text("claude, list the sessions")
            .tool_call(ToolCall::mcp(
                "cross-agent",
                "list_agent_sessions",
                json!({}),
            ))
            .for_api(Api::Anthropic)
            .once(),
    );
    endpoint.push(
        Rule::on_tool_result("\"warnings\"")
            .reply_text("CLAUDE LISTED")
            .for_api(Api::Anthropic),
    );
    let run = claude
        .turn(&project, "claude, list the sessions")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    assert_eq!(run.result_text(), Some("CLAUDE LISTED"));
    let claude_session = run.session_id().unwrap().to_owned();

    // A real Codex session does too, and sees that Claude session.
    endpoint.push(
        Rule::on_user_text("codex, list the sessions")
            .tool_call(ToolCall::mcp(
                "cross-agent",
                "list_agent_sessions",
                json!({"agent": "claude", "scope": "any"}),
            ))
            .for_api(Api::Responses)
            .once(),
    );
    endpoint.push(
        Rule::on_tool_result(&claude_session)
            .reply_text("CODEX LISTED")
            .for_api(Api::Responses),
    );
    let run = codex
        .turn(&project, "codex, list the sessions")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    assert_eq!(
        run.final_message(),
        Some("CODEX LISTED"),
        "{:?}",
        run.events
    );
    let calls = run.items_of("mcp_tool_call");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["status"], "completed", "{calls:?}");

    // doctor agrees with both agents.
    let out = as_person(&home, Path::new(BIN), &["doctor"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("ok         Claude Code connects"),
        "{report}"
    );
    assert!(report.contains("ok         Codex connects"), "{report}");
    assert!(
        report.contains("ok         Claude Code: 2.1.332"),
        "{report}"
    );
}
