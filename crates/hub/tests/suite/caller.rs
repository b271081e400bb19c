//! Who is calling (docs/spec/cross-agent-mcp.md "Reply address").

use cross_agent_hub::Agent;
use cross_agent_hub::caller::{Caller, StartedTurn, codex_thread_id, identify};
use cross_agent_protocol::bridge::{AncestorProcess, CallerContext};
use pretty_assertions::assert_eq;
use serde_json::json;

fn ancestor(pid: u32, name: &str) -> AncestorProcess {
    AncestorProcess {
        pid,
        name: name.into(),
        cmdline: name.into(),
    }
}

#[test]
fn codex_metadata_is_read_as_an_object_or_a_json_string() {
    let object = json!({"thread_id": "t-1", "turn_id": "u"});
    assert_eq!(codex_thread_id(Some(&object)).as_deref(), Some("t-1"));
    let string = json!(object.to_string());
    assert_eq!(codex_thread_id(Some(&string)).as_deref(), Some("t-1"));
    assert_eq!(codex_thread_id(Some(&json!("not json"))), None);
    assert_eq!(codex_thread_id(Some(&json!({"thread_id": "  "}))), None);
    assert_eq!(codex_thread_id(Some(&json!(42))), None);
}

#[test]
fn the_codex_thread_wins_over_inference() {
    let context = CallerContext {
        ancestry: vec![ancestor(10, "codex")],
        codex_turn_metadata: Some(json!({"thread_id": "t-9"})),
        self_session: Some("codex:t-other".into()),
        ..CallerContext::default()
    };
    let caller = identify(&context, &[]);
    assert_eq!(caller.agent, Some(Agent::Codex));
    assert_eq!(caller.session_id.as_deref(), Some("t-9"));
}

#[test]
fn grok_session_id_counts_only_for_a_grok_caller() {
    // A `claude` started from one of Grok's shell commands inherits GROK_SESSION_ID.
    let context = CallerContext {
        client_name: Some("claude-code".into()),
        claude_code_session_id: Some("c-1".into()),
        grok_session_id: Some("g-1".into()),
        ..CallerContext::default()
    };
    let caller = identify(&context, &[]);
    assert_eq!(
        (caller.agent, caller.session_id.as_deref()),
        (Some(Agent::Claude), Some("c-1"))
    );
    let grok = CallerContext {
        ancestry: vec![ancestor(5, "grok")],
        grok_session_id: Some("g-1".into()),
        ..CallerContext::default()
    };
    let caller = identify(&grok, &[]);
    assert_eq!(
        (caller.agent, caller.session_id.as_deref()),
        (Some(Agent::Grok), Some("g-1"))
    );
}

#[test]
fn self_forces_the_agent_and_self_session_names_it() {
    let context = CallerContext {
        client_name: Some("claude-code".into()),
        self_agent: Some("grok".into()),
        self_session: Some("grok:g-7".into()),
        ..CallerContext::default()
    };
    let caller = identify(&context, &[]);
    assert_eq!(
        (caller.agent, caller.session_id.as_deref()),
        (Some(Agent::Grok), Some("g-7"))
    );
    let nothing = identify(&CallerContext::default(), &[]);
    assert_eq!((nothing.agent, nothing.session_id), (None, None));
}

#[test]
fn a_call_from_a_bridge_started_turn_belongs_to_its_conversation() {
    let turns = [StartedTurn {
        pid: 4242,
        agent: Agent::Codex,
        session_id: Some("t-5".into()),
        conversation_id: "conv_0123456789ab".into(),
        delivery_id: "dlv_1".into(),
    }];
    // Codex passes no environment to its MCP server: the ancestry finds the turn.
    let by_pid = CallerContext {
        pid: 9000,
        ancestry: vec![ancestor(8000, "node"), ancestor(4242, "codex")],
        ..CallerContext::default()
    };
    let caller = identify(&by_pid, &turns);
    assert_eq!(
        caller,
        Caller {
            agent: Some(Agent::Codex),
            session_id: Some("t-5".into()),
            how: "a turn the bridge started (delivery dlv_1, pid 4242)".into(),
            conversation_id: Some("conv_0123456789ab".into()),
            started_turn: Some("dlv_1".into()),
            copilot_sdk_session: None,
            copilot_host_session: None,
            copilot_return: None,
        }
    );
    // Or the thread id in `_meta`.
    let by_thread = CallerContext {
        codex_turn_metadata: Some(json!({"thread_id": "t-5"})),
        ..CallerContext::default()
    };
    assert_eq!(
        identify(&by_thread, &turns).conversation_id.as_deref(),
        Some("conv_0123456789ab")
    );
}

#[test]
fn copilot_caller_metadata_is_a_copilot_clue_that_another_agent_ignores() {
    // Alone (an older host without the SDK variable): the caller is Copilot, its session still
    // to be checked against the catalog.
    let alone = CallerContext {
        copilot_caller_session: Some(" ahp-session:/u-1 ".into()),
        ..CallerContext::default()
    };
    let caller = identify(&alone, &[]);
    assert_eq!(caller.agent, Some(Agent::Copilot));
    assert_eq!(
        caller.copilot_host_session.as_deref(),
        Some("ahp-session:/u-1")
    );
    assert_eq!(caller.copilot_sdk_session, None);
    assert_eq!(caller.session_id, None);
    // Carried by a Claude caller's call, it means nothing.
    let claude = CallerContext {
        client_name: Some("claude-code".into()),
        claude_code_session_id: Some("c-1".into()),
        copilot_caller_session: Some("ahp-session:/u-1".into()),
        ..CallerContext::default()
    };
    let caller = identify(&claude, &[]);
    assert_eq!(caller.agent, Some(Agent::Claude));
    assert_eq!(caller.copilot_host_session, None);
}
