//! Copilot through the daemon: `list_agent_sessions(agent="copilot")` and `agent="all"` list the
//! sessions of VS Code's Agent Host catalog under the caller's HOME (made by
//! `testkit::synthetic_stores::copilot` as `docs/observed/copilot.md` §4 documents), and a send
//! to a catalogued session no running host serves is refused before anything is recorded or
//! started (sending through a live host: `copilot_send.rs`).

use cross_agent_protocol::bridge::{
    Agent, AgentFilter, ListSessionsParams, ListSessionsResponse, RefusalReason, SendParams,
};
use cross_agent_testkit::synthetic_stores::{CopilotEditor, now_millis};
use pretty_assertions::assert_eq;

use super::bridge_support::Bridge;

const ONE: &str = "7e7e0000-0000-4000-8000-000000000001";

fn editor(bridge: &Bridge) -> CopilotEditor {
    let editor = CopilotEditor::new(&bridge.agents.path().join(".config/Code"));
    let now = now_millis();
    editor
        .register(&format!("copilotcli:/{ONE}"), now - 5_000, now - 1_000)
        .unwrap();
    let session = editor.session(ONE).unwrap();
    session.title("Port the parser").unwrap();
    session
        .working_directory(&bridge.project.to_string_lossy())
        .unwrap();
    editor
}

#[tokio::test(flavor = "multi_thread")]
async fn list_agent_sessions_lists_copilot_and_all_is_four_agents() {
    let bridge = Bridge::start().await;
    let _editor = editor(&bridge);
    let caller = bridge.claude_caller("00000000-0000-4000-8000-00000000c411");
    let entry = bridge
        .listed_session(Agent::Copilot, ONE, caller.clone())
        .await;
    assert_eq!(entry.title.as_deref(), Some("Port the parser"));
    assert_eq!(
        entry.cwd.as_deref(),
        Some(bridge.project.to_string_lossy().as_ref())
    );
    let copilot = entry.copilot.expect("a Copilot entry carries its details");
    assert_eq!(copilot.session_uri, format!("copilotcli:/{ONE}"));
    assert!(!copilot.live && !copilot.archived);

    let all: ListSessionsResponse = bridge
        .conn
        .client
        .call(ListSessionsParams {
            agent: AgentFilter::All,
            scope: Some(cross_agent_protocol::bridge::Scope::Cwd),
            cwd: Some(bridge.project.to_string_lossy().into_owned()),
            limit: None,
            caller,
        })
        .await
        .unwrap();
    let keys: Vec<&String> = all.sessions.keys().collect();
    assert_eq!(keys, ["claude", "codex", "copilot", "grok"]);
    let ids: Vec<&str> = all.sessions["copilot"]
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(ids, [ONE]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_send_to_a_copilot_session_no_host_serves_is_refused_as_host_not_running() {
    let bridge = Bridge::start().await;
    let _editor = editor(&bridge);
    let caller = bridge.claude_caller("00000000-0000-4000-8000-00000000c412");
    let refusal = bridge
        .refused(SendParams {
            session_id: Some(ONE.to_owned()),
            ..bridge.send_params(Agent::Copilot, "hello", caller)
        })
        .await;
    assert_eq!(refusal.reason, RefusalReason::NotAvailable);
    assert!(
        refusal
            .message
            .contains("host not running: the Copilot session"),
        "{}",
        refusal.message
    );
    // Nothing was recorded.
    let status = bridge.status(None).await;
    assert!(status.deliveries.recent.is_empty(), "{status:?}");
}
