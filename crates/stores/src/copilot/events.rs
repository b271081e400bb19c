//! The Copilot SDK's `session-state/<sdk session>/events.jsonl`, read-only
//! (`docs/observed/copilot.md` §4.3): when a session last did something, and the completed
//! answer to the request that carried a given token — what recovery reads after a restart, by
//! the rule VS Code itself rebuilds turns with (`mapSessionEvents.ts`).
//!
//! Only complete lines are read: the SDK may be writing the last one. A line that is not JSON,
//! or an event whose fields do not decode, is passed over.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::Result;
use crate::lines::{LineSink, Position, read_complete_lines};
use crate::model::{LineContext, UnixMillis, Warnings};

/// How much of the file's end is read for its last event's time.
const TAIL_BYTES: u64 = 64 * 1024;

/// `<sdk_session_dir>/<sdk_session_id>/events.jsonl`, or `None` when the id could climb out of
/// the folder (a separator, `..`, a leading dot): it is the SDK's uuid, never a path.
pub fn events_path(sdk_session_dir: &Path, sdk_session_id: &str) -> Option<PathBuf> {
    let safe = !sdk_session_id.is_empty()
        && !sdk_session_id.starts_with('.')
        && sdk_session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    safe.then(|| sdk_session_dir.join(sdk_session_id).join("events.jsonl"))
}

/// The `timestamp` of the last complete event in `path`, if any is readable.
pub fn last_event_time(path: &Path) -> Option<UnixMillis> {
    #[derive(Deserialize)]
    struct Stamp {
        timestamp: String,
    }
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut tail = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut tail).ok()?;
    // Complete lines only: the text after the last newline may be half-written. When the read
    // started mid-file, its first piece is part of a line too.
    let end = tail.iter().rposition(|&b| b == b'\n')?;
    let mut lines: Vec<&[u8]> = tail[..end].split(|&b| b == b'\n').collect();
    if start > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    lines.iter().rev().find_map(|line| {
        let stamp: Stamp = serde_json::from_slice(line).ok()?;
        UnixMillis::parse_rfc3339(&stamp.timestamp)
    })
}

/// What the events say about the request that carried a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenAnswer {
    /// No root `user.message` holds the token.
    NotFound,
    /// The turn it opened has not completed (a tool is running, or the model is still writing).
    InProgress,
    /// The turn completed: the text of its last root `assistant.message` without tool requests
    /// (empty when the model said nothing).
    Completed { text: String },
    /// The turn was aborted.
    Cancelled,
    /// The session reported an error during the turn.
    Failed { message: String },
}

/// The answer to the request whose `user.message` contains `token` (a substring: clients
/// append blocks to what was sent), in the SDK events at `path`. The first such message counts.
pub fn answer_for_token(path: &Path, token: &str) -> Result<TokenAnswer> {
    if token.is_empty() {
        return Ok(TokenAnswer::NotFound);
    }
    let mut reader = TurnFinder {
        token,
        state: Finding::Looking,
    };
    let mut warnings = Warnings::default();
    read_complete_lines(path, Position::default(), &mut reader, &mut warnings)?;
    Ok(match reader.state {
        Finding::Looking => TokenAnswer::NotFound,
        Finding::InTurn(turn) | Finding::Done(turn) => turn.outcome(),
    })
}

/// Where the search is.
enum Finding {
    Looking,
    /// Inside the turn the token's message opened.
    InTurn(Turn),
    /// That turn ended with the next root `user.message`.
    Done(Turn),
}

#[derive(Default)]
struct Turn {
    complete: bool,
    answer: Option<String>,
    cancelled: bool,
    error: Option<String>,
}

impl Turn {
    fn outcome(self) -> TokenAnswer {
        if let Some(message) = self.error {
            TokenAnswer::Failed { message }
        } else if self.cancelled {
            TokenAnswer::Cancelled
        } else if self.complete {
            TokenAnswer::Completed {
                text: self.answer.unwrap_or_default(),
            }
        } else {
            TokenAnswer::InProgress
        }
    }
}

struct TurnFinder<'a> {
    token: &'a str,
    state: Finding,
}

/// The envelope every event line has; `data` read per type.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    /// Present only on sub-agent events: the root agent's have none.
    #[serde(default)]
    agent_id: Option<serde_json::Value>,
    #[serde(default)]
    data: serde_json::Value,
}

impl LineSink for TurnFinder<'_> {
    fn feed_line(&mut self, line: &[u8], _at: LineContext<'_>, _warnings: &mut Warnings) {
        let Ok(event) = serde_json::from_slice::<Event>(line) else {
            return;
        };
        if event.agent_id.as_ref().is_some_and(|id| !id.is_null()) {
            return;
        }
        let data = &event.data;
        let text = |key: &str| data.get(key).and_then(|v| v.as_str()).unwrap_or_default();
        match (&mut self.state, event.kind.as_str()) {
            (Finding::Looking, "user.message") if text("content").contains(self.token) => {
                self.state = Finding::InTurn(Turn::default());
            }
            (Finding::InTurn(_), "user.message") => {
                let Finding::InTurn(turn) = std::mem::replace(&mut self.state, Finding::Looking)
                else {
                    return;
                };
                self.state = Finding::Done(turn);
            }
            (Finding::InTurn(turn), "assistant.message") => {
                let asks_tools = data
                    .get("toolRequests")
                    .and_then(|v| v.as_array())
                    .is_some_and(|requests| !requests.is_empty());
                if asks_tools {
                    turn.complete = false;
                } else {
                    turn.complete = true;
                    let content = text("content");
                    if !content.is_empty() {
                        turn.answer = Some(content.to_owned());
                    }
                }
            }
            (Finding::InTurn(turn), "tool.execution_start") => turn.complete = false,
            (Finding::InTurn(turn), "tool.execution_complete") => {
                let name = data
                    .get("toolName")
                    .or_else(|| data.get("name"))
                    .and_then(|v| v.as_str());
                let success = data.get("success").and_then(|v| v.as_bool()) != Some(false);
                if name == Some("task_complete") && success {
                    turn.complete = true;
                }
            }
            (Finding::InTurn(turn), "abort") => turn.cancelled = true,
            (Finding::InTurn(turn), "session.error") => {
                let message = data
                    .get("message")
                    .and_then(|v| v.as_str())
                    .unwrap_or("the Copilot session reported an error");
                turn.error = Some(message.to_owned());
            }
            _ => {}
        }
    }
}
