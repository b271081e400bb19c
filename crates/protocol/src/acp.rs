//! The part of the Agent Client Protocol (ACP, JSON-RPC 2.0) the Grok shim reads and writes
//! (docs/observed/telegram_ahp_grok.md §3): `session/new`, `session/load` and `session/prompt`
//! with their responses, the `session/update` kinds it looks at, `session/request_permission`
//! and its answer, and JSON-RPC errors.
//!
//! A local subset rather than the `agent-client-protocol` crate: that crate's schema dependency
//! turns on serde_json's `preserve_order` feature, and cargo unifies features across the
//! workspace, so every JSON object in every crate would keep insertion order — changing every
//! committed schema fixture and the key order of everything we write. These few types are all
//! the shim needs.
//!
//! The shim is a relay: a line it does not change goes out as the bytes it came in as, never a
//! re-encoding of these types. So the types describe only the fields the shim reads; serde skips
//! the rest (no `deny_unknown_fields` anywhere), and a kind the shim does not know
//! (`sessionUpdate`, content `type`, permission `outcome`) reads as `Other` instead of failing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The JSON-RPC version every message carries.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request written by the shim: `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request<'a, P> {
    pub jsonrpc: &'static str,
    pub id: &'a str,
    pub method: &'a str,
    pub params: P,
}

/// A notification written by the shim: `{"jsonrpc":"2.0","method":…,"params":…}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notification<'a, P> {
    pub jsonrpc: &'static str,
    pub method: &'a str,
    pub params: P,
}

/// A response written by the shim to a request of the agent, its `id` echoed as it came.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Response<'a, R> {
    pub jsonrpc: &'static str,
    pub id: &'a Value,
    pub result: R,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Error {
    /// What went wrong, for a person (absent in a malformed error).
    #[serde(default)]
    pub message: Option<String>,
}

/// The params of a request the shim only needs the session and folder of: `session/new`
/// (`cwd`), `session/load` (`sessionId`, `cwd`), the extension's `session/prompt`
/// (`sessionId`) and `session/request_permission` (`sessionId`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionScope {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
}

/// The `session/new` response.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    pub session_id: String,
}

/// The `session/prompt` request the shim writes for a bridged message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest<'a> {
    pub session_id: &'a str,
    pub prompt: Vec<ContentBlock<'a>>,
}

/// The `session/prompt` response: why the turn ended (`end_turn`, `refusal`, …; kept as text
/// so a reason the shim does not know still reaches the sender).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    #[serde(default)]
    pub stop_reason: Option<String>,
}

/// A content block; only text is read or written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock<'a> {
    Text {
        #[serde(borrow)]
        text: std::borrow::Cow<'a, str>,
    },
    /// Images, resources, links: passed on, never looked into.
    #[serde(other)]
    Other,
}

/// The `session/update` notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification<'a> {
    #[serde(borrow)]
    pub session_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    pub update: SessionUpdate<'a>,
}

/// The kinds of `session/update` the shim tells apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate<'a> {
    /// Part of the agent's answer.
    AgentMessageChunk {
        #[serde(borrow)]
        content: ContentBlock<'a>,
    },
    /// Part of the agent's thinking.
    AgentThoughtChunk,
    /// A tool call starts.
    ToolCall,
    /// A tool call goes on or ends.
    ToolCallUpdate,
    /// Plans, commands, mode changes, anything newer.
    #[serde(other)]
    Other,
}

/// The `session/request_permission` request of the agent.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub tool_call: ToolCallRef,
    #[serde(default)]
    pub options: Vec<PermissionOption>,
}

/// What the permission request says about its tool call.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRef {
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    /// The tool's input, as the agent sent it.
    #[serde(default)]
    pub raw_input: Option<Value>,
}

/// One way to answer a permission request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always` (text, so a newer kind is
    /// kept and never picked).
    pub kind: String,
}

impl PermissionOption {
    /// Whether choosing it allows the tool call (`allow_once`, `allow_always`, …).
    pub fn allows(&self) -> bool {
        self.kind.starts_with("allow")
    }
}

/// The answer to `session/request_permission`, from the extension or written by the shim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestPermissionResponse {
    pub outcome: PermissionOutcome,
}

/// How a permission request was answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    /// This option was chosen.
    Selected {
        #[serde(rename = "optionId")]
        option_id: String,
    },
    /// The turn was cancelled first.
    Cancelled,
    /// An outcome newer than this subset.
    #[serde(other)]
    Other,
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn unknown_kinds_read_as_other_and_unread_fields_are_skipped() {
        let plan = json!({
            "sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}, "_meta": {}
        });
        let update = SessionNotification::deserialize(&plan).unwrap();
        assert_eq!(update.update, SessionUpdate::Other);
        let image = json!({
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "image", "data": "QUJD", "mimeType": "image/png"}
        });
        assert_eq!(
            SessionUpdate::deserialize(&image).unwrap(),
            SessionUpdate::AgentMessageChunk {
                content: ContentBlock::Other
            }
        );
        // A kind without fields here still has fields on the wire.
        let thought = json!({
            "sessionUpdate": "agent_thought_chunk",
            "content": {"type": "text", "text": "hmm"}
        });
        assert_eq!(
            SessionUpdate::deserialize(&thought).unwrap(),
            SessionUpdate::AgentThoughtChunk
        );
        let answer: RequestPermissionResponse =
            serde_json::from_value(json!({"outcome": {"outcome": "postponed"}})).unwrap();
        assert_eq!(answer.outcome, PermissionOutcome::Other);
    }

    #[test]
    fn what_the_shim_writes_is_acp() {
        let prompt = Request {
            jsonrpc: JSONRPC_VERSION,
            id: "xagent-1",
            method: "session/prompt",
            params: PromptRequest {
                session_id: "s",
                prompt: vec![ContentBlock::Text { text: "hi".into() }],
            },
        };
        assert_eq!(
            serde_json::to_value(&prompt).unwrap(),
            json!({"jsonrpc": "2.0", "id": "xagent-1", "method": "session/prompt",
                   "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}})
        );
        let answer = Response {
            jsonrpc: JSONRPC_VERSION,
            id: &json!(7),
            result: RequestPermissionResponse {
                outcome: PermissionOutcome::Selected {
                    option_id: "allow".to_owned(),
                },
            },
        };
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            json!({"jsonrpc": "2.0", "id": 7,
                   "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
        );
    }
}
