//! Scope `cwd` reaches down into subdirectories (docs/spec/cross-agent-mcp.md §4: "`cwd` = same directory and its
//! subdirectories"): real Claude Code and Codex sessions opened in `proj/sub`, and a Grok store
//! laid out as `stores::grok` documents, are listed from `proj` and continued by a `send` from
//! `proj` instead of a new conversation being opened. A folder whose name merely starts with
//! `proj` (`proj2`) is not a subdirectory of it.

use std::path::{Path, PathBuf};
use std::process::Command;

use cross_agent_protocol::bridge::{
    Agent, AgentFilter, DeliveryState, ListSessionsParams, ListSessionsResponse, Scope,
    TargetSelectedBy,
};
use cross_agent_testkit::endpoint::{Reply, Rule};
use cross_agent_testkit::synthetic_stores::{GrokSession, now_millis};
use pretty_assertions::assert_eq;

use super::bridge_support::Bridge;

/// A real Claude session opened in `cwd` by a plain `claude -p` turn.
fn claude_session_in(bridge: &Bridge, cwd: &Path, prompt: &str) -> String {
    bridge
        .endpoint
        .push(Rule::on_user_text(prompt).reply_text("seeded").once());
    let run = bridge
        .claude()
        .turn(cwd, prompt)
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    run.session_id().unwrap().to_owned()
}

/// A real Codex thread opened in `cwd` by a plain `codex exec` turn.
fn codex_session_in(bridge: &Bridge, cwd: &Path, prompt: &str) -> String {
    bridge
        .endpoint
        .push(Rule::on_user_text(prompt).reply_text("seeded").once());
    let run = bridge
        .codex()
        .turn(cwd, prompt)
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    run.thread_id().unwrap().to_owned()
}

fn ids(listed: &ListSessionsResponse, agent: &str) -> Vec<String> {
    listed.sessions[agent]
        .iter()
        .map(|s| s.session_id.clone())
        .collect()
}

/// `cross-agent sessions --json --scope cwd --cwd DIR` over the agents' HOME.
fn cli_listing(bridge: &Bridge, dir: &Path) -> serde_json::Value {
    let exe = cross_agent_testkit::binaries::cross_agent_bin().unwrap();
    let cli_home = bridge.state.dir.path().join("cli-home");
    let out = Command::new(exe)
        .args(["sessions", "--json", "--scope", "cwd", "--cwd"])
        .arg(dir)
        .env("HOME", bridge.agents.path())
        .env("CROSS_AGENT_HOME", &cli_home)
        .env("CODEX_HOME", bridge.agents.codex_home())
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("GROK_HOME")
        .env_remove("CROSS_AGENT_SCOPE")
        .env_remove("CROSS_AGENT_ACTIVE_WINDOW_MIN")
        .output()
        .unwrap();
    // The listing started a daemon of that home: it must not outlive the test's agents.
    cross_agent_testkit::leaks::stop_daemons(&cli_home, cross_agent_testkit::leaks::SETTLE);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn cli_ids(listing: &serde_json::Value, agent: &str) -> Vec<String> {
    listing[agent]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["session_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scope_cwd_lists_and_continues_sessions_in_a_subdirectory() {
    let bridge = Bridge::start().await;
    let sub: PathBuf = bridge.project.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    // `proj2` sits beside `proj`: a string prefix, not a subdirectory.
    let sibling = bridge.agents.project("proj2").unwrap();

    let claude_sub = claude_session_in(&bridge, &sub, "seed claude in sub");
    let codex_sub = codex_session_in(&bridge, &sub, "seed codex in sub");
    // The sibling's session is the most recent of all: were `proj2` taken for a subdirectory
    // of `proj`, discovery would pick it.
    let claude_sibling = claude_session_in(&bridge, &sibling, "seed claude in sibling");
    let now = now_millis();
    let mut grok = GrokSession::new(
        bridge.agents.path(),
        &sub.to_string_lossy(),
        "grok-sub",
        now - 60_000,
    );
    grok.user("look around", now - 60_000)
        .agent_chunk("done", now - 59_000)
        .turn_completed(now - 59_000);
    grok.write().unwrap();
    let mut grok_sibling = GrokSession::new(
        bridge.agents.path(),
        &sibling.to_string_lossy(),
        "grok-sibling",
        now - 30_000,
    );
    grok_sibling
        .user("look elsewhere", now - 30_000)
        .agent_chunk("done", now - 29_000)
        .turn_completed(now - 29_000);
    grok_sibling.write().unwrap();

    // Listed from `proj` under `cwd`, through the daemon and through the CLI.
    let listed: ListSessionsResponse = bridge
        .conn
        .client
        .call(ListSessionsParams {
            agent: AgentFilter::All,
            scope: Some(Scope::Cwd),
            cwd: Some(bridge.project.to_string_lossy().into_owned()),
            limit: None,
            caller: bridge.codex_caller("019a0000-0000-7000-8000-0000000000aa"),
        })
        .await
        .unwrap();
    assert_eq!(ids(&listed, "claude"), vec![claude_sub.clone()]);
    assert_eq!(ids(&listed, "codex"), vec![codex_sub.clone()]);
    assert_eq!(ids(&listed, "grok"), vec!["grok-sub".to_owned()]);
    let cli = cli_listing(&bridge, &bridge.project);
    assert_eq!(cli_ids(&cli, "claude"), vec![claude_sub.clone()]);
    assert_eq!(cli_ids(&cli, "codex"), vec![codex_sub.clone()]);
    assert_eq!(cli_ids(&cli, "grok"), vec!["grok-sub".to_owned()]);
    // From the sibling, only its own sessions.
    let beside = cli_listing(&bridge, &sibling);
    assert_eq!(cli_ids(&beside, "claude"), vec![claude_sibling]);
    assert!(cli_ids(&beside, "codex").is_empty());

    // A send to Claude from `proj` continues the session in `proj/sub`, run in its own folder.
    bridge.endpoint.push(
        Rule::on_user_text("scope claude from proj").reply(Reply::echo_token("claude in sub")),
    );
    let receipt = bridge
        .accepted(bridge.send_params(
            Agent::Claude,
            "scope claude from proj",
            bridge.codex_caller("019a0000-0000-7000-8000-0000000000aa"),
        ))
        .await;
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Discovery);
    assert!(!receipt.will_create_session);
    assert_eq!(
        receipt.target_session_id.as_deref(),
        Some(claude_sub.as_str())
    );
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    let transcript = bridge.claude().transcript_path(&sub, &claude_sub);
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert!(
        text.contains(&receipt.request_id),
        "{}",
        transcript.display()
    );

    // The same for Codex.
    bridge
        .endpoint
        .push(Rule::on_user_text("scope codex from proj").reply(Reply::echo_token("codex in sub")));
    let receipt = bridge
        .accepted(bridge.send_params(
            Agent::Codex,
            "scope codex from proj",
            bridge.claude_caller("11111111-2222-3333-4444-555555555555"),
        ))
        .await;
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Discovery);
    assert!(!receipt.will_create_session);
    assert_eq!(
        receipt.target_session_id.as_deref(),
        Some(codex_sub.as_str())
    );
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    let rollout = bridge.codex().rollout_of(&codex_sub).unwrap();
    let text = std::fs::read_to_string(&rollout).unwrap();
    assert!(text.contains(&receipt.request_id), "{}", rollout.display());

    // And Grok resolves to its session in `proj/sub` (Grok cannot run here: the receipt is what
    // shows the resolution).
    let mut caller = bridge.codex_caller("019a0000-0000-7000-8000-0000000000aa");
    caller
        .settings
        .insert("CROSS_AGENT_GROK_BIN".into(), "/bin/true".into());
    let receipt = bridge
        .accepted(bridge.send_params(Agent::Grok, "scope grok from proj", caller))
        .await;
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Discovery);
    assert_eq!(receipt.target_session_id.as_deref(), Some("grok-sub"));
}
