//! Reading a headless turn's stdout: the answer, the session id (a new Codex session's id comes
//! from `thread.started`), and why it failed.
//!
//! - **Claude** `--output-format json` prints one `result` object: `result` is the answer,
//!   `is_error` / `subtype` say whether the turn failed, and `permission_denials` lists tool
//!   calls nobody approved. A headless turn has nobody to approve, so any denial fails the
//!   delivery with an error that says so, instead of handing back half a sentence ("let me run
//!   that") as the answer (docs/spec/cross-agent-mcp.md "Unattended use").
//! - **Codex** `exec --json` prints JSON lines: `thread.started` (`thread_id`), `item.completed`
//!   (the answer is the last `agent_message`), `turn.completed`, and `turn.failed` / `error`.
//!   A tool call that failed for want of approval ("requires approval") fails the delivery.
//! - **Grok** `--output-format streaming-json`: xAI publishes no schema. The lines follow the
//!   public recording of Grok Build 0.2.101 in Anantys-oss/koan (`koan/tests/grok_samples.py`,
//!   `docs/providers/grok.md`): `{"type":"thought","data":…}` reasoning deltas (never part of the
//!   answer), `{"type":"text","data":…}` answer deltas joined as they come, and a closing
//!   `{"type":"end","stopReason":"EndTurn"|"Cancelled",…,"sessionId":…}` with no text of its own.
//!   A tool call that needed an approval ends the turn `Cancelled` (docs/spec/cross-agent-mcp.md §9). No tool events
//!   were seen in that recording, so cutting at the last tool call (docs/spec/cross-agent-mcp.md: the answer is what
//!   Grok said after it) is the transcript's job (`hub`); a line that does name a tool still
//!   starts the answer afresh. The reader stays tolerant of other spellings (`text` / `delta` /
//!   `content` strings, `session_id`).

use cross_agent_protocol::bridge::Agent;
use serde_json::Value;

/// What the output said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub session_id: Option<String>,
    pub answer: Option<String>,
    /// The turn failed: the CLI's own words.
    pub failure: Option<String>,
    /// The turn was cancelled for want of an approval: which tool.
    pub approval_blocked: Option<String>,
}

/// Feeds on stdout lines as they come, then [`OutputParser::finish`]es.
#[derive(Debug)]
pub struct OutputParser {
    agent: Agent,
    parsed: Parsed,
    /// Grok: the text since the last tool call.
    grok_segment: String,
    /// Claude prints one object, but possibly pretty-printed over several lines.
    claude_buffer: String,
}

impl OutputParser {
    pub fn new(agent: Agent) -> OutputParser {
        OutputParser {
            agent,
            parsed: Parsed::default(),
            grok_segment: String::new(),
            claude_buffer: String::new(),
        }
    }

    /// One line of stdout (without its newline).
    pub fn feed_line(&mut self, line: &str) {
        match self.agent {
            Agent::Claude => {
                self.claude_buffer.push_str(line);
                self.claude_buffer.push('\n');
                if let Ok(value) = serde_json::from_str::<Value>(self.claude_buffer.trim()) {
                    self.claude_buffer.clear();
                    self.claude_value(&value);
                }
            }
            Agent::Codex => {
                if let Ok(value) = serde_json::from_str::<Value>(line) {
                    self.codex_event(&value);
                }
            }
            Agent::Grok => {
                if let Ok(value) = serde_json::from_str::<Value>(line) {
                    self.grok_event(&value);
                }
            }
            // No CLI runs for Copilot, so there is no output of its to parse.
            Agent::Copilot => {}
        }
    }

    /// The session id as soon as it is known (a new Codex thread's, from `thread.started`).
    pub fn session_id(&self) -> Option<&str> {
        self.parsed.session_id.as_deref()
    }

    pub fn finish(mut self) -> Parsed {
        if self.agent == Agent::Grok {
            let text = self.grok_segment.trim();
            if !text.is_empty() {
                self.parsed.answer = Some(text.to_owned());
            }
        }
        self.parsed
    }

    fn claude_value(&mut self, value: &Value) {
        if let Some(lines) = value.as_array() {
            // `--output-format json --verbose` prints an array of every event.
            for item in lines {
                self.claude_value(item);
            }
            return;
        }
        let kind = value.get("type").and_then(Value::as_str);
        let subtype = value.get("subtype").and_then(Value::as_str);
        if let Some(id) = value.get("session_id").and_then(Value::as_str) {
            self.parsed.session_id = Some(id.to_owned());
        }
        match (kind, subtype) {
            (Some("system"), Some("permission_denied")) => {
                let tool = value
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or("a tool");
                self.parsed.approval_blocked = Some(tool.to_owned());
            }
            (Some("result"), _) => {
                if let Some(denials) = value.get("permission_denials").and_then(Value::as_array)
                    && !denials.is_empty()
                {
                    let tools: Vec<&str> = denials
                        .iter()
                        .filter_map(|d| d.get("tool_name").and_then(Value::as_str))
                        .collect();
                    self.parsed.approval_blocked = Some(if tools.is_empty() {
                        "a tool".to_owned()
                    } else {
                        tools.join(", ")
                    });
                }
                let result = value.get("result").and_then(Value::as_str);
                let is_error = value
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                if is_error {
                    let errors: Vec<&str> = value
                        .get("errors")
                        .and_then(Value::as_array)
                        .map(|e| e.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let text = result
                        .filter(|r| !r.trim().is_empty())
                        .map(str::to_owned)
                        .unwrap_or_else(|| {
                            format!(
                                "{} ({})",
                                subtype.unwrap_or("error"),
                                if errors.is_empty() {
                                    "no detail".to_owned()
                                } else {
                                    errors.join("; ")
                                }
                            )
                        });
                    self.parsed.failure = Some(text);
                } else if let Some(result) = result {
                    self.parsed.answer = Some(result.to_owned());
                }
            }
            _ => {}
        }
    }

    fn codex_event(&mut self, value: &Value) {
        match value.get("type").and_then(Value::as_str) {
            Some("thread.started") => {
                if let Some(id) = value.get("thread_id").and_then(Value::as_str) {
                    self.parsed.session_id = Some(id.to_owned());
                }
            }
            Some("item.completed") => {
                let Some(item) = value.get("item") else {
                    return;
                };
                match item.get("type").and_then(Value::as_str) {
                    Some("agent_message") => {
                        if let Some(text) = item.get("text").and_then(Value::as_str) {
                            self.parsed.answer = Some(text.to_owned());
                        }
                    }
                    Some(_) | None => {
                        let message = item
                            .get("error")
                            .and_then(|e| e.get("message").or(Some(e)))
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        if message.contains("requires approval") {
                            let tool = item
                                .get("tool")
                                .or_else(|| item.get("command"))
                                .and_then(Value::as_str)
                                .unwrap_or("a tool");
                            self.parsed.approval_blocked = Some(tool.to_owned());
                        }
                    }
                }
            }
            Some("turn.failed") => {
                let message = value
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("the turn failed");
                self.parsed.failure = Some(message.to_owned());
            }
            Some("error") => {
                if let Some(message) = value.get("message").and_then(Value::as_str) {
                    // Codex reports retries as `error` events too; the last one stands.
                    self.parsed.failure = Some(message.to_owned());
                }
            }
            Some(_) | None => {}
        }
    }

    fn grok_event(&mut self, value: &Value) {
        for key in ["session_id", "sessionId"] {
            if let Some(id) = value.get(key).and_then(Value::as_str) {
                self.parsed.session_id = Some(id.to_owned());
            }
        }
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        if kind.contains("tool") {
            self.grok_segment.clear();
            return;
        }
        // Reasoning is shown, never answered with.
        if kind.contains("thought") || kind.contains("reasoning") {
            return;
        }
        if kind.contains("error") {
            let message = value
                .get("message")
                .or_else(|| value.get("error"))
                .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned))
                .unwrap_or_else(|| value.to_string());
            self.parsed.failure = Some(message);
            return;
        }
        for key in ["stopReason", "stop_reason"] {
            if value
                .get(key)
                .and_then(Value::as_str)
                .is_some_and(|reason| reason.eq_ignore_ascii_case("cancelled"))
            {
                self.parsed.approval_blocked = Some("a tool call".to_owned());
            }
        }
        if kind == "end" {
            return;
        }
        for key in ["data", "text", "delta", "content"] {
            if let Some(text) = value.get(key).and_then(Value::as_str) {
                self.grok_segment.push_str(text);
                return;
            }
        }
    }
}
