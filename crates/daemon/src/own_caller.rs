//! The daemon as a caller: for doors inside the daemon (the phone's prompts, the review's
//! corrections from the phone and the robot), which bring no caller context of their own.

use cross_agent_caller::{PerCall, Snapshot};
use cross_agent_protocol::bridge::CallerContext;

/// The daemon's own environment (its settings, where the stores are, the child baseline) but
/// no process ancestry and no session identity: the daemon is not an agent's session, whatever
/// started it, and what it sends must not pass for one (the same-agent guard, the reply
/// address).
pub(crate) fn daemon_caller(client_name: &str) -> CallerContext {
    let snapshot = Snapshot {
        vars: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
        cwd: None,
        pid: std::process::id(),
        ancestry: Vec::new(),
    };
    let mut caller = cross_agent_caller::context(
        &snapshot,
        PerCall {
            client_name: Some(client_name.to_owned()),
            codex_turn_metadata: None,
            copilot_caller_session: None,
        },
    );
    caller.claude_code_session_id = None;
    caller.grok_session_id = None;
    caller.self_session = None;
    caller.self_agent = None;
    caller.conversation_id = None;
    caller
}
