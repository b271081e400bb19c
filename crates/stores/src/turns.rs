//! The turns of one session, for every agent: messages, tool calls and their results (with exit
//! codes where the format records them), and whether each turn finished.
//!
//! This is what answers are recovered from: the last assistant message after a given time, and
//! whether a finished turn's *closing line* carries a request id. The closing line is the last
//! line of the turn's final assistant text that names any request id (`req_<epoch ms>_<6>`), so
//! an id quoted further up — a session mentioning another sender's request in passing — does not
//! make that turn the other request's answer (docs/spec/cross-agent-mcp.md §6).
//!
//! [`TurnReader`] is a [`LineSink`]: a watcher can keep one and feed it only the lines appended
//! since its last look, with [`crate::lines::read_complete_lines`].
//!
//! One file, past the usual ~800 lines: the agents' line readers are methods of one
//! [`TurnReader`] state machine, and keeping them beside the shared turn model and the pairing
//! rules above is what keeps them in step. Copilot's, the newest, is in `turns/copilot.rs`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::Result;
use crate::lines::{LineSink, read_all_lines};
use crate::model::{Agent, LineContext, LineProblem, UnixMillis, Warnings};

mod copilot;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub text: String,
    pub timestamp: Option<UnixMillis>,
}

/// A tool the assistant called.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id results refer back to (`tool_use_id`, `call_id`, `toolCallId`).
    pub id: String,
    pub name: String,
    /// The call's input as JSON text.
    pub input: String,
    pub timestamp: Option<UnixMillis>,
}

/// What a tool call returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub output: String,
    /// The format said the call failed (Claude `is_error`, Grok `failed`).
    pub is_error: Option<bool>,
    /// The command's exit code, where the format records one.
    pub exit_code: Option<i32>,
    pub timestamp: Option<UnixMillis>,
}

/// One entry of a turn, in transcript order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnItem {
    Message(Message),
    ToolCall(ToolCall),
    ToolResult(ToolResult),
}

/// A prompt and everything the agent did about it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    pub started_at: Option<UnixMillis>,
    pub ended_at: Option<UnixMillis>,
    /// The agent recorded the end of the turn (a final reply, `task_complete`,
    /// `turn_completed`, an interruption, or the next prompt).
    pub finished: bool,
    pub items: Vec<TurnItem>,
}

/// All turns of one session file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transcript {
    pub agent: Agent,
    pub path: PathBuf,
    pub turns: Vec<Turn>,
}

impl Turn {
    /// The assistant messages of this turn, in order.
    pub fn assistant_messages(&self) -> impl Iterator<Item = &Message> {
        self.items.iter().filter_map(|i| match i {
            TurnItem::Message(m) if m.role == Role::Assistant => Some(m),
            _ => None,
        })
    }

    /// The turn's final assistant text: its last assistant message.
    pub fn final_text(&self) -> Option<&str> {
        self.assistant_messages().last().map(|m| m.text.as_str())
    }

    /// The closing line of the final text: its last line naming any request id.
    pub fn closing_line(&self) -> Option<&str> {
        closing_line(self.final_text()?)
    }

    /// The request ids on the closing line.
    pub fn closing_request_ids(&self) -> Vec<&str> {
        self.closing_line().map(request_ids).unwrap_or_default()
    }

    /// True when the turn is finished and its closing line carries `request_id`.
    pub fn answers(&self, request_id: &str) -> bool {
        self.finished && self.closing_request_ids().contains(&request_id)
    }
}

impl Transcript {
    /// The last assistant message written after `after` (strictly later).
    pub fn last_assistant_message_after(&self, after: UnixMillis) -> Option<&Message> {
        self.turns
            .iter()
            .flat_map(Turn::assistant_messages)
            .filter(|m| m.timestamp.is_some_and(|t| t > after))
            .last()
    }

    /// The last assistant message written after `after` whose closing line carries
    /// `request_id`: the answer of a turn that never finished (its agent was stopped), even
    /// when the agent wrote more after it.
    pub fn last_assistant_message_answering(
        &self,
        request_id: &str,
        after: UnixMillis,
    ) -> Option<&Message> {
        self.turns
            .iter()
            .flat_map(Turn::assistant_messages)
            .filter(|m| m.timestamp.is_some_and(|t| t > after))
            .filter(|m| closing_line(&m.text).is_some_and(|l| request_ids(l).contains(&request_id)))
            .last()
    }

    /// The last finished turn whose closing line carries `request_id`, among turns that started
    /// after `after` when given.
    pub fn finished_turn_answering(
        &self,
        request_id: &str,
        after: Option<UnixMillis>,
    ) -> Option<&Turn> {
        self.turns
            .iter()
            .rev()
            .filter(|t| match after {
                Some(after) => t.ended_at.or(t.started_at).is_some_and(|s| s > after),
                None => true,
            })
            .find(|t| t.answers(request_id))
    }

    /// The last turn, if it is still running.
    pub fn running_turn(&self) -> Option<&Turn> {
        self.turns.last().filter(|t| !t.finished)
    }

    /// Whether the last turn has finished (true for a session with no turn at all).
    pub fn is_idle(&self) -> bool {
        self.running_turn().is_none()
    }
}

/// The last line of `text` that names any request id.
pub fn closing_line(text: &str) -> Option<&str> {
    text.lines().rev().find(|l| !request_ids(l).is_empty())
}

/// Every request id (`req_<10–16 digits>_<6 alphanumerics>`) in `text`, standing alone (not part
/// of a longer word).
pub fn request_ids(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for start in memchr::memmem::find_iter(b, b"req_") {
        if start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
            continue;
        }
        let mut i = start + 4;
        let digits_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = i - digits_start;
        if !(10..=16).contains(&digits) || b.get(i) != Some(&b'_') {
            continue;
        }
        i += 1;
        let tail_start = i;
        while i < b.len() && b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if i - tail_start != 6 || b.get(i) == Some(&b'_') {
            continue;
        }
        out.push(&text[start..i]);
    }
    out
}

/// Reads every turn of one session. `path` is the transcript (Claude, Codex — `.zst` too) or,
/// for Grok, the session folder or its `updates.jsonl`; for Copilot, the SDK session's folder or
/// its `events.jsonl`.
pub fn read_turns(agent: Agent, path: &Path, warnings: &mut Warnings) -> Result<Transcript> {
    let file = match agent {
        Agent::Grok if path.is_dir() => path.join("updates.jsonl"),
        Agent::Copilot if path.is_dir() => path.join("events.jsonl"),
        _ => path.to_path_buf(),
    };
    let mut reader = TurnReader::new(agent, &file);
    read_all_lines(&file, &mut reader, warnings)?;
    Ok(reader.into_transcript())
}

/// How much of a transcript's end the bridge reads when it looks for an answer (docs/spec/cross-agent-mcp.md):
/// 2 MB, and 8 MB for Grok, which writes every streamed chunk as a line of its own.
pub fn answer_window(agent: Agent) -> u64 {
    match agent {
        Agent::Grok => 8 << 20,
        Agent::Claude | Agent::Codex | Agent::Copilot => 2 << 20,
    }
}

/// Reads the turns in the last `window` bytes of one session's transcript (see [`read_turns`]
/// for `path`). The answers the bridge looks for are recent, and a long session's transcript
/// runs to tens of MB, read again on every look. Reading starts at the first whole line of the
/// window, so the earliest turn it shows may have lost its beginning, and a warning's line
/// number counts from there. A compressed rollout cannot be entered in the middle and is read
/// whole.
pub fn read_recent_turns(
    agent: Agent,
    path: &Path,
    window: u64,
    warnings: &mut Warnings,
) -> Result<Transcript> {
    use std::io::{BufRead, Seek, SeekFrom};
    let file = match agent {
        Agent::Grok if path.is_dir() => path.join("updates.jsonl"),
        Agent::Copilot if path.is_dir() => path.join("events.jsonl"),
        _ => path.to_path_buf(),
    };
    let io = |e| crate::error::StoreError::io(&file, e);
    let mut opened = std::fs::File::open(&file).map_err(io)?;
    let len = opened.metadata().map_err(io)?.len();
    if crate::lines::is_zstd_path(&file) || len <= window {
        return read_turns(agent, &file, warnings);
    }
    // Start one byte early and drop up to the first newline: that is the end of a line begun
    // before the window, or only the newline ending the line before it when the window starts
    // exactly on a line (which is then kept).
    let from = len - window - 1;
    opened.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut input = std::io::BufReader::new(opened);
    let mut cut = Vec::new();
    let skipped = input.read_until(b'\n', &mut cut).map_err(io)?;
    let mut reader = TurnReader::new(agent, &file);
    crate::lines::read_lines_from(
        &mut input,
        &file,
        crate::lines::Position {
            offset: from + skipped as u64,
            line: 0,
        },
        true,
        &mut reader,
        warnings,
    )
    .map_err(io)?;
    Ok(reader.into_transcript())
}

/// Builds a [`Transcript`] from lines fed in order; keep one to follow a growing file.
#[derive(Debug, Clone)]
pub struct TurnReader {
    transcript: Transcript,
    /// Claude: the `message.id` the last assistant text came from, so the blocks Claude writes
    /// as separate records join into one message.
    last_message_id: Option<String>,
    /// Claude: the last assistant record's `stop_reason`.
    last_stop_reason: Option<String>,
    /// Grok and Copilot: tool names by call id, for results that do not repeat them.
    tool_names: HashMap<String, String>,
    /// Grok: the kind of the previous update, so consecutive chunks join.
    last_grok_kind: Option<String>,
}

impl TurnReader {
    pub fn new(agent: Agent, path: &Path) -> Self {
        TurnReader {
            transcript: Transcript {
                agent,
                path: path.to_path_buf(),
                turns: Vec::new(),
            },
            last_message_id: None,
            last_stop_reason: None,
            tool_names: HashMap::new(),
            last_grok_kind: None,
        }
    }

    /// The turns read so far.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    pub fn into_transcript(self) -> Transcript {
        self.transcript
    }

    fn start_turn(&mut self, at: Option<UnixMillis>) {
        if let Some(last) = self.transcript.turns.last_mut()
            && !last.finished
        {
            // A new prompt ends whatever came before it.
            last.finished = true;
        }
        self.transcript.turns.push(Turn {
            started_at: at,
            ..Turn::default()
        });
        self.last_message_id = None;
        self.last_stop_reason = None;
    }

    /// The open turn, starting one for items that arrive before any prompt.
    fn current(&mut self, at: Option<UnixMillis>) -> &mut Turn {
        if self.transcript.turns.is_empty() {
            self.transcript.turns.push(Turn {
                started_at: at,
                ..Turn::default()
            });
        }
        let last = self.transcript.turns.len() - 1;
        let turn = &mut self.transcript.turns[last];
        if at.is_some() {
            turn.ended_at = at.max(turn.ended_at);
        }
        turn
    }

    fn push(&mut self, item: TurnItem, at: Option<UnixMillis>) {
        self.current(at).items.push(item);
    }

    /// Appends text to the current turn's last message when it is the same role and `join`
    /// says so, or adds a new message.
    fn push_text(&mut self, role: Role, text: &str, at: Option<UnixMillis>, join: bool) {
        let turn = self.current(at);
        if join
            && let Some(TurnItem::Message(m)) = turn.items.last_mut()
            && m.role == role
        {
            m.text.push_str(text);
            if at.is_some() {
                m.timestamp = at;
            }
            return;
        }
        turn.items.push(TurnItem::Message(Message {
            role,
            text: text.to_owned(),
            timestamp: at,
        }));
    }

    fn finish(&mut self, at: Option<UnixMillis>) {
        let turn = self.current(at);
        turn.finished = true;
    }
}

impl LineSink for TurnReader {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        let result = match self.transcript.agent {
            Agent::Claude => self.claude_line(line),
            Agent::Codex => self.codex_line(line),
            Agent::Grok => self.grok_line(line),
            Agent::Copilot => self.copilot_line(line),
        };
        if let Err(e) = result {
            warnings.push_line(at, LineProblem::NotJson, format!("not a JSON record: {e}"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Claude Code

#[derive(Deserialize)]
struct ClaudeRecord<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    is_sidechain: Option<bool>,
    #[serde(rename = "isMeta", default)]
    is_meta: Option<bool>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(default)]
    message: Option<ClaudeMessage>,
    #[serde(rename = "toolUseResult", default)]
    tool_use_result: Option<Value>,
    /// Claude Code's own note of a failed API call ("API Error: 400 …"), written as an
    /// assistant record: the model never said it, so it is no one's answer.
    #[serde(rename = "isApiErrorMessage", default)]
    is_api_error: Option<bool>,
}

#[derive(Deserialize)]
struct ClaudeMessage {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    content: Option<Value>,
    /// `<synthetic>` on records Claude Code writes itself rather than the model.
    #[serde(default)]
    model: Option<String>,
}

impl TurnReader {
    fn claude_line(&mut self, line: &[u8]) -> serde_json::Result<()> {
        let rec: ClaudeRecord<'_> = serde_json::from_slice(line)?;
        if rec.is_sidechain == Some(true) {
            return Ok(());
        }
        let at = rec.timestamp.as_deref().and_then(UnixMillis::parse_rfc3339);
        let Some(message) = rec.message else {
            return Ok(());
        };
        match rec.kind.as_deref() {
            Some("user") if rec.is_meta != Some(true) => {
                self.claude_user(message, rec.tool_use_result.as_ref(), at)
            }
            // A synthetic error record ends the turn without saying anything: taking it as the
            // peer's answer would relay the bridge's own failure back as if the peer wrote it.
            Some("assistant")
                if rec.is_api_error == Some(true)
                    || message.model.as_deref() == Some("<synthetic>") =>
            {
                self.finish(at)
            }
            Some("assistant") => self.claude_assistant(message, at),
            _ => {}
        }
        Ok(())
    }

    fn claude_user(
        &mut self,
        message: ClaudeMessage,
        tool_use_result: Option<&Value>,
        at: Option<UnixMillis>,
    ) {
        let blocks = match message.content {
            Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
            Some(Value::Array(blocks)) => blocks,
            _ => return,
        };
        let mut prompt = String::new();
        let mut interrupted = false;
        for block in &blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_result") => {
                    let output = content_text(block.get("content"));
                    let is_error = block.get("is_error").and_then(Value::as_bool);
                    let exit_code = claude_exit_code(&output, is_error, tool_use_result);
                    let call_id = str_field(block, "tool_use_id");
                    self.push(
                        TurnItem::ToolResult(ToolResult {
                            call_id,
                            output,
                            is_error,
                            exit_code,
                            timestamp: at,
                        }),
                        at,
                    );
                }
                Some("text") => {
                    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                    if text.trim_start().starts_with("[Request interrupted") {
                        interrupted = true;
                    } else if !is_claude_injected(text) {
                        if !prompt.is_empty() {
                            prompt.push('\n');
                        }
                        prompt.push_str(text);
                    }
                }
                _ => {}
            }
        }
        if interrupted {
            self.finish(at);
        }
        if !prompt.is_empty() {
            self.start_turn(at);
            self.push_text(Role::User, &prompt, at, /*join*/ false);
        }
    }

    fn claude_assistant(&mut self, message: ClaudeMessage, at: Option<UnixMillis>) {
        let same_message = message.id.is_some() && message.id == self.last_message_id;
        let Some(Value::Array(blocks)) = message.content else {
            return;
        };
        let mut last_kind = None;
        for block in &blocks {
            let kind = block.get("type").and_then(Value::as_str);
            match kind {
                Some("text") => {
                    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                    // Blocks of one API message arrive as separate records: join their text.
                    self.push_text(Role::Assistant, text, at, same_message);
                }
                Some("tool_use") => self.push(
                    TurnItem::ToolCall(ToolCall {
                        id: str_field(block, "id"),
                        name: str_field(block, "name"),
                        input: block.get("input").map(Value::to_string).unwrap_or_default(),
                        timestamp: at,
                    }),
                    at,
                ),
                _ => {}
            }
            if kind.is_some_and(|k| k != "thinking" && k != "redacted_thinking") {
                last_kind = kind.map(str::to_owned);
            }
        }
        self.last_message_id = message.id;
        self.last_stop_reason = message.stop_reason.clone();
        let stopped = match message.stop_reason.as_deref() {
            Some("tool_use") => false,
            Some(_) => true,
            // Records written before the reply ended carry no stop reason: a reply whose last
            // block is text is taken as final until more arrives.
            None => last_kind.as_deref() == Some("text"),
        };
        let turn = self.current(at);
        turn.finished = stopped;
    }
}

/// Text Claude Code writes as a user message that a person did not type.
fn is_claude_injected(text: &str) -> bool {
    crate::human::classify(text) == crate::human::UserText::Injected
}

/// The exit code of a Claude Bash result: Claude writes `Exit code N` first in a failed
/// command's output (and `Error: Exit code N` in `toolUseResult`); a successful Bash result
/// is a `toolUseResult` object with `stdout`/`stderr`, which is exit code 0.
fn claude_exit_code(
    output: &str,
    is_error: Option<bool>,
    tool_use_result: Option<&Value>,
) -> Option<i32> {
    let from_text = |s: &str| -> Option<i32> {
        let s = s
            .trim_start()
            .strip_prefix("Error: ")
            .unwrap_or(s.trim_start());
        let rest = s.strip_prefix("Exit code ")?;
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        rest[..end].parse().ok()
    };
    if let Some(code) = from_text(output) {
        return Some(code);
    }
    match tool_use_result {
        Some(Value::String(s)) => from_text(s),
        Some(Value::Object(o)) => {
            if let Some(code) = ["exitCode", "exit_code", "returnCode"]
                .iter()
                .find_map(|k| o.get(*k).and_then(Value::as_i64))
            {
                return i32::try_from(code).ok();
            }
            let is_shell = o.contains_key("stdout") && o.contains_key("stderr");
            let interrupted = o.get("interrupted").and_then(Value::as_bool) == Some(true);
            (is_shell && is_error != Some(true) && !interrupted).then_some(0)
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Codex

#[derive(Deserialize)]
struct CodexLine<'a> {
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
}

impl TurnReader {
    fn codex_line(&mut self, line: &[u8]) -> serde_json::Result<()> {
        let rec: CodexLine<'_> = serde_json::from_slice(line)?;
        let at = rec.timestamp.as_deref().and_then(UnixMillis::parse_rfc3339);
        let Some(payload) = rec.payload else {
            return Ok(());
        };
        match rec.kind.as_deref() {
            Some("event_msg") => {
                let p: Value = serde_json::from_str(payload.get())?;
                match p.get("type").and_then(Value::as_str) {
                    Some("task_started") => self.start_turn(at),
                    Some("task_complete" | "turn_aborted") => self.finish(at),
                    _ => {}
                }
            }
            Some("response_item") => {
                let p: Value = serde_json::from_str(payload.get())?;
                self.codex_item(&p, at);
            }
            _ => {}
        }
        Ok(())
    }

    fn codex_item(&mut self, p: &Value, at: Option<UnixMillis>) {
        match p.get("type").and_then(Value::as_str) {
            Some("message") => {
                let role = match p.get("role").and_then(Value::as_str) {
                    Some("user") => Role::User,
                    Some("assistant") => Role::Assistant,
                    _ => return,
                };
                let text = content_text(p.get("content"));
                if role == Role::User && is_codex_injected(&text) {
                    return;
                }
                if role == Role::User && self.transcript.turns.last().is_none_or(|t| t.finished) {
                    // Rollouts without task_started: the prompt opens the turn.
                    self.start_turn(at);
                }
                self.push_text(role, &text, at, /*join*/ false);
            }
            Some("function_call" | "custom_tool_call") => {
                let input = p
                    .get("arguments")
                    .or_else(|| p.get("input"))
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .unwrap_or_default();
                self.push(
                    TurnItem::ToolCall(ToolCall {
                        id: str_field(p, "call_id"),
                        name: str_field(p, "name"),
                        input,
                        timestamp: at,
                    }),
                    at,
                );
            }
            Some("local_shell_call") => self.push(
                TurnItem::ToolCall(ToolCall {
                    id: str_field(p, "call_id"),
                    name: "local_shell".to_owned(),
                    input: p.get("action").map(Value::to_string).unwrap_or_default(),
                    timestamp: at,
                }),
                at,
            ),
            Some("function_call_output" | "custom_tool_call_output") => {
                let (output, exit_code) = codex_output(p.get("output"));
                self.push(
                    TurnItem::ToolResult(ToolResult {
                        call_id: str_field(p, "call_id"),
                        output,
                        is_error: None,
                        exit_code,
                        timestamp: at,
                    }),
                    at,
                );
            }
            _ => {}
        }
    }
}

/// Context Codex sends as a user message that no person typed.
fn is_codex_injected(text: &str) -> bool {
    crate::human::classify(text) == crate::human::UserText::Injected
}

/// The text and exit code of a Codex tool output. Current Codex writes plain text with a
/// `Process exited with code N` line; older versions a JSON string
/// `{"output": …, "metadata": {"exit_code": N}}`; some an object with `content`.
fn codex_output(output: Option<&Value>) -> (String, Option<i32>) {
    let text = match output {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => o
            .get("content")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| Value::Object(o.clone()).to_string()),
        Some(Value::Array(_)) => content_text(output),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&text)
        && let Some(code) = o
            .get("metadata")
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64)
    {
        let out = o
            .get("output")
            .and_then(Value::as_str)
            .map_or_else(|| text.clone(), str::to_owned);
        return (out, i32::try_from(code).ok());
    }
    let code = text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("Process exited with code ")?;
        rest.trim().parse().ok()
    });
    (text, code)
}

// ---------------------------------------------------------------------------------------------
// Grok Build

impl TurnReader {
    fn grok_line(&mut self, line: &[u8]) -> serde_json::Result<()> {
        let rec: Value = serde_json::from_slice(line)?;
        let at = rec
            .pointer("/_meta/agentTimestampMs")
            .and_then(Value::as_i64)
            .map(UnixMillis)
            .or_else(|| {
                rec.get("timestamp")
                    .and_then(Value::as_f64)
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .map(|s| UnixMillis((s * 1000.0) as i64))
            });
        if rec.get("method").and_then(Value::as_str) == Some("_x.ai/session/prompt_complete") {
            self.finish(at);
            return Ok(());
        }
        let Some(update) = rec.pointer("/params/update") else {
            return Ok(());
        };
        let kind = update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or("");
        let joins = self.last_grok_kind.as_deref() == Some(kind);
        match kind {
            "user_message_chunk" => {
                let text = content_text(update.get("content"));
                if !joins {
                    self.start_turn(at);
                }
                self.push_text(Role::User, &text, at, joins);
            }
            "agent_message_chunk" => {
                let text = content_text(update.get("content"));
                self.push_text(Role::Assistant, &text, at, joins);
            }
            "tool_call" => {
                let id = str_field(update, "toolCallId");
                let name = update
                    .pointer("/_meta/x.ai~1tool/name")
                    .and_then(Value::as_str)
                    .or_else(|| update.get("title").and_then(Value::as_str))
                    .unwrap_or("")
                    .to_owned();
                self.tool_names.insert(id.clone(), name.clone());
                let input = update
                    .get("rawInput")
                    .map(Value::to_string)
                    .unwrap_or_default();
                self.push(
                    TurnItem::ToolCall(ToolCall {
                        id,
                        name,
                        input,
                        timestamp: at,
                    }),
                    at,
                );
            }
            "tool_call_update" => {
                // Only an update with a final status is a result; the others refine the call.
                let status = update.get("status").and_then(Value::as_str);
                if matches!(status, Some("completed" | "failed")) {
                    let output = content_text(update.get("content"));
                    let exit_code = ["exit_code", "exitCode"].iter().find_map(|k| {
                        update
                            .get("rawOutput")
                            .and_then(|o| o.get(*k))
                            .and_then(Value::as_i64)
                            .and_then(|c| i32::try_from(c).ok())
                    });
                    self.push(
                        TurnItem::ToolResult(ToolResult {
                            call_id: str_field(update, "toolCallId"),
                            output,
                            is_error: Some(status == Some("failed")),
                            exit_code,
                            timestamp: at,
                        }),
                        at,
                    );
                }
            }
            "turn_completed" => self.finish(at),
            _ => {}
        }
        self.last_grok_kind = Some(kind.to_owned());
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

/// A string field of a JSON object, or empty.
fn str_field(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// The text of a content value in any of the agents' shapes: a string, a block, or an array of
/// blocks (`text`, `input_text`, `output_text`, or ACP's `{type: content, content: {text}}`).
fn content_text(content: Option<&Value>) -> String {
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => push_part(out, s),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(o) => {
                if let Some(text) = o.get("text").and_then(Value::as_str) {
                    push_part(out, text);
                } else if let Some(inner) = o.get("content") {
                    walk(inner, out);
                }
            }
            _ => {}
        }
    }
    fn push_part(out: &mut String, s: &str) {
        if !out.is_empty() && !s.is_empty() {
            out.push('\n');
        }
        out.push_str(s);
    }
    let mut out = String::new();
    if let Some(v) = content {
        walk(v, &mut out);
    }
    out
}
