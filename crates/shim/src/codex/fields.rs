//! Reading the app-server's objects: whether a thread takes direct input or is kept at all, a
//! `status` as a session state, which pending stage runs a turn, whether an approval answer
//! allows, and what an approval is about.

use cross_agent_protocol::panel::PanelSessionState;
use serde_json::Value;

use super::{COMMAND_APPROVAL, DETAIL_CHARS, FILE_CHANGE_APPROVAL, PERMISSIONS_APPROVAL, Stage};
use crate::rpc::{str_field, trimmed};

/// Whether a pending stage runs the turn `turn_id` (an unknown id matches a running turn whose
/// id is not known yet, and a known one only itself). A turn/start still waiting for its
/// response runs nothing yet: the app-server answers it before its turn starts, so a turn
/// ending meanwhile is the one before ours (idle is announced just before `turn/completed`).
pub(super) fn runs_turn(stage: &Stage, turn_id: Option<&str>) -> bool {
    match stage {
        Stage::Running {
            turn_id: Some(ours),
        } => turn_id.is_none_or(|t| t == ours),
        Stage::Running { turn_id: None } => true,
        Stage::Starting | Stage::Queued | Stage::OpeningThread | Stage::AwaitingMcp { .. } => false,
    }
}

/// A thread a multi-agent run created: it rejects direct input.
pub(super) fn is_sub_agent(thread: &Value) -> bool {
    let set = |key: &str| thread.get(key).is_some_and(|v| !v.is_null());
    set("parentThreadId")
        || set("agentNickname")
        || set("agentRole")
        || thread.get("canAcceptDirectInput") == Some(&Value::Bool(false))
}

/// A thread kept in memory only (`ephemeral: true`): no rollout, not in the panel's list, so
/// nobody reads a message left there.
pub(super) fn is_ephemeral(thread: &Value) -> bool {
    thread.get("ephemeral") == Some(&Value::Bool(true))
}

/// A thread `status` object as a session state.
pub(super) fn state_of(status: &Value, current: PanelSessionState) -> PanelSessionState {
    match str_field(status, "type") {
        Some("active") => {
            let waiting = status
                .get("activeFlags")
                .and_then(Value::as_array)
                .is_some_and(|flags| flags.iter().any(|f| f == "waitingOnApproval"));
            if waiting {
                PanelSessionState::AwaitingApproval
            } else {
                PanelSessionState::Working
            }
        }
        Some("idle" | "notLoaded" | "systemError") => PanelSessionState::Idle,
        _ => current,
    }
}

/// Whether an approval response allows (`accept…` decisions, an elicitation's `accept`).
pub(super) fn is_allowing(result: &Value) -> bool {
    match result.get("decision") {
        Some(Value::String(decision)) => decision.starts_with("accept"),
        Some(Value::Object(decision)) => decision.keys().any(|key| key.starts_with("accept")),
        _ => str_field(result, "action") == Some("accept"),
    }
}

/// What an approval is about: (tool, detail) as `bridge_status` shows them.
pub(super) fn approval_subject(method: &str, params: &Value) -> (Option<String>, Option<String>) {
    let trim = |text: &str| Some(trimmed(text, DETAIL_CHARS));
    match method {
        COMMAND_APPROVAL => {
            let command = str_field(params, "command").unwrap_or_default();
            let detail = match str_field(params, "reason") {
                Some(reason) => format!("{command} ({reason})"),
                None => command.to_owned(),
            };
            (Some("command".to_owned()), trim(&detail))
        }
        PERMISSIONS_APPROVAL => (
            Some("permissions".to_owned()),
            params
                .get("permissions")
                .map(Value::to_string)
                .as_deref()
                .and_then(trim),
        ),
        FILE_CHANGE_APPROVAL => {
            let detail = str_field(params, "reason")
                .map(str::to_owned)
                .or_else(|| params.get("grantRoot").map(Value::to_string))
                .unwrap_or_else(|| "file change".to_owned());
            (Some("file change".to_owned()), trim(&detail))
        }
        _ => {
            let meta = params.get("_meta").unwrap_or(&Value::Null);
            let server = str_field(params, "serverName").unwrap_or("mcp");
            let tool = str_field(meta, "tool_name")
                .map(|tool| format!("{server}/{tool}"))
                .or_else(|| Some(server.to_owned()));
            let detail = meta
                .get("tool_params")
                .map(Value::to_string)
                .or_else(|| str_field(params, "message").map(str::to_owned));
            (tool, detail.as_deref().and_then(trim))
        }
    }
}
