//! The Copilot SDK's `events.jsonl` as turns (`docs/observed/copilot.md` §4.3), by the rule VS
//! Code rebuilds a chat's turns with (`mapSessionEvents.ts`): each root `user.message` opens a
//! turn; every root `assistant.message` with content is the agent's text, and its
//! `toolRequests` are the tools it calls; a root `assistant.message` without `toolRequests`
//! (or a successful `task_complete`) completes the turn, a root `tool.execution_start` puts it
//! back to running, and `abort` or `session.error` ends it.
//!
//! Events with an `agentId` are a sub-agent's, not the session's own conversation, and are
//! passed over, as every event this model has no place for (`session.start`,
//! `assistant.turn_start`, usage, compaction, …).

use serde::Deserialize;
use serde_json::Value;

use super::{Role, ToolCall, ToolResult, TurnItem, TurnReader};
use crate::model::UnixMillis;

/// The envelope every event line has; `data` read per type.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    timestamp: Option<String>,
    /// Present only on sub-agent events.
    #[serde(default)]
    agent_id: Option<Value>,
    #[serde(default)]
    data: Value,
}

impl TurnReader {
    pub(super) fn copilot_line(&mut self, line: &[u8]) -> serde_json::Result<()> {
        let event: Event = serde_json::from_slice(line)?;
        if event.agent_id.as_ref().is_some_and(|id| !id.is_null()) {
            return Ok(());
        }
        let at = event
            .timestamp
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339);
        let data = &event.data;
        match event.kind.as_str() {
            "user.message" => {
                self.start_turn(at);
                self.push_text(Role::User, text(data, "content"), at, /*join*/ false);
            }
            "assistant.message" => self.copilot_assistant(data, at),
            "tool.execution_start" => {
                let id = text(data, "toolCallId");
                // A call the model asked for is already in the turn; one started otherwise (the
                // user's own) is added here.
                if !self.tool_names.contains_key(id) {
                    let name = text(data, "toolName");
                    self.copilot_call(id, name, data.get("arguments"), at);
                }
                self.current(at).finished = false;
            }
            "tool.execution_complete" => {
                let success = data.get("success").and_then(Value::as_bool);
                let output = data
                    .pointer("/result/content")
                    .or_else(|| data.pointer("/error/message"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.push(
                    TurnItem::ToolResult(ToolResult {
                        call_id: text(data, "toolCallId").to_owned(),
                        output: output.to_owned(),
                        is_error: success.map(|ok| !ok),
                        exit_code: None,
                        timestamp: at,
                    }),
                    at,
                );
                let id = text(data, "toolCallId");
                let name = self.tool_names.get(id).map(String::as_str);
                let name = name.or_else(|| data.get("toolName").and_then(Value::as_str));
                if name == Some("task_complete") && success != Some(false) {
                    self.finish(at);
                }
            }
            "abort" | "session.error" => self.finish(at),
            _ => {}
        }
        Ok(())
    }

    fn copilot_assistant(&mut self, data: &Value, at: Option<UnixMillis>) {
        let content = text(data, "content");
        if !content.is_empty() {
            self.push_text(Role::Assistant, content, at, /*join*/ false);
        }
        let requests = data
            .get("toolRequests")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for request in requests {
            self.copilot_call(
                text(request, "toolCallId"),
                text(request, "name"),
                request.get("arguments"),
                at,
            );
        }
        if requests.is_empty() {
            self.finish(at);
        } else {
            self.current(at).finished = false;
        }
    }

    fn copilot_call(
        &mut self,
        id: &str,
        name: &str,
        arguments: Option<&Value>,
        at: Option<UnixMillis>,
    ) {
        self.tool_names.insert(id.to_owned(), name.to_owned());
        self.push(
            TurnItem::ToolCall(ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                input: arguments.map(Value::to_string).unwrap_or_default(),
                timestamp: at,
            }),
            at,
        );
    }
}

/// A string field of `value`, or `""`.
fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}
