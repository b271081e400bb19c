//! Antigravity's sessions: `~/.gemini/antigravity-cli/brain/<session>/.system_generated/logs/`
//! (the IDE keeps the same under `~/.gemini/antigravity/brain/`), one JSON object per step in
//! `transcript.jsonl`.
//!
//! No public document fixes the step's fields. The layout read here is the one third-party
//! reports show: `{step_index, source: USER_EXPLICIT|MODEL, type: USER_INPUT|PLANNER_RESPONSE|
//! VIEW_FILE|CODE_ACTION|RUN_COMMAND|…, status, created_at, content}`, where a
//! `PLANNER_RESPONSE` may carry `tool_calls: [{name, args}]` and a `RUN_COMMAND` carries
//! `exit_code` (repeated in `content`). Every field is optional, of any type: a step that does
//! not fit is skipped with a warning, unknown fields and step types are ignored, and a
//! half-written last line is only a warning.
//!
//! Antigravity records no working directory, so [`ForeignSession::cwd`] is derived from the
//! absolute paths the session worked on and marked as derived.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{ForeignSession, TurnBuilder};
use crate::error::Result;
use crate::lines::{LineSink, read_all_lines};
use crate::model::{LineContext, LineProblem, UnixMillis, Warnings};
use crate::turns::{Message, Role, ToolCall, ToolResult, TurnItem};

/// Where the CLI and the IDE keep their sessions under a home folder.
pub fn brain_roots(home: &Path) -> Vec<PathBuf> {
    let gemini = home.join(".gemini");
    vec![
        gemini.join("antigravity-cli").join("brain"),
        gemini.join("antigravity").join("brain"),
    ]
}

/// The transcript of a session folder.
pub fn transcript_path(session_dir: &Path) -> PathBuf {
    session_dir
        .join(".system_generated")
        .join("logs")
        .join("transcript.jsonl")
}

/// The transcript of session `session_id` under any of `roots`, if there is one.
pub fn find_session(roots: &[PathBuf], session_id: &str) -> Option<PathBuf> {
    roots
        .iter()
        .map(|r| transcript_path(&r.join(session_id)))
        .find(|p| p.is_file())
}

/// Reads one session from its `transcript.jsonl`.
pub fn read_session(transcript: &Path, warnings: &mut Warnings) -> Result<ForeignSession> {
    let mut reader = StepReader::default();
    read_all_lines(transcript, &mut reader, warnings)?;
    // brain/<session>/.system_generated/logs/transcript.jsonl
    let session_id = transcript
        .ancestors()
        .nth(3)
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(ForeignSession {
        session_id,
        cwd: common_dir(&reader.paths),
        cwd_derived: true,
        title: None,
        path: transcript.to_path_buf(),
        turns: reader.turns.into_turns(),
    })
}

#[derive(Debug, Default)]
struct StepReader {
    turns: TurnBuilder,
    /// Calls a planner response announced that no step has answered yet, oldest first.
    pending: VecDeque<String>,
    /// Absolute paths the session worked on, for the derived working directory.
    paths: Vec<PathBuf>,
    /// Calls made up for steps no planner response announced, counted so their ids differ.
    synthetic: usize,
}

/// Step fields that describe the step itself rather than what it worked on.
const STEP_FIELDS: [&str; 8] = [
    "step_index",
    "source",
    "type",
    "status",
    "created_at",
    "content",
    "exit_code",
    "tool_calls",
];

impl LineSink for StepReader {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        let step: Map<String, Value> = match serde_json::from_slice(line) {
            Ok(Value::Object(step)) => step,
            Ok(_) => {
                warnings.push_line(at, LineProblem::NotJson, "a step that is not a JSON object");
                return;
            }
            Err(e) => {
                warnings.push_line(at, LineProblem::NotJson, format!("not a JSON record: {e}"));
                return;
            }
        };
        self.step(&step);
    }
}

impl StepReader {
    fn step(&mut self, step: &Map<String, Value>) {
        let kind = step.get("type").and_then(Value::as_str).unwrap_or("");
        let source = step.get("source").and_then(Value::as_str).unwrap_or("");
        let at = timestamp(step.get("created_at"));
        let content = text(step.get("content"));
        let index = step
            .get("step_index")
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .unwrap_or_default();
        match kind {
            "USER_INPUT" => {
                if !content.trim().is_empty() {
                    self.turns.prompt(content, at);
                }
            }
            "PLANNER_RESPONSE" => {
                if !content.trim().is_empty() {
                    self.turns.push(
                        TurnItem::Message(Message {
                            role: Role::Assistant,
                            text: content,
                            timestamp: at,
                        }),
                        at,
                    );
                }
                let calls = match step.get("tool_calls") {
                    Some(Value::Array(calls)) => calls.as_slice(),
                    _ => &[],
                };
                for (i, call) in calls.iter().enumerate() {
                    let id = format!("step-{index}.{i}");
                    let args = match call.get("args") {
                        Some(Value::String(s)) => {
                            serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                        }
                        Some(v) => v.clone(),
                        None => Value::Null,
                    };
                    collect_paths(&args, &mut self.paths);
                    self.turns.push(
                        TurnItem::ToolCall(ToolCall {
                            id: id.clone(),
                            name: call
                                .get("name")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned(),
                            input: args.to_string(),
                            timestamp: at,
                        }),
                        at,
                    );
                    self.pending.push_back(id);
                }
            }
            "" => {}
            _ if source == "USER_EXPLICIT" => {}
            _ => self.tool_step(kind, step, content, at),
        }
    }

    /// A step that did something (viewed a file, edited, ran a command): the result of the
    /// oldest call announced and not yet answered, or a call and result of its own.
    fn tool_step(
        &mut self,
        kind: &str,
        step: &Map<String, Value>,
        content: String,
        at: Option<UnixMillis>,
    ) {
        let fields: Map<String, Value> = step
            .iter()
            .filter(|(k, _)| !STEP_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let fields = Value::Object(fields);
        collect_paths(&fields, &mut self.paths);
        let call_id = match self.pending.pop_front() {
            Some(id) => id,
            None => {
                self.synthetic += 1;
                let index = step
                    .get("step_index")
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .unwrap_or_default();
                let id = format!("step-{index}#{}", self.synthetic);
                self.turns.push(
                    TurnItem::ToolCall(ToolCall {
                        id: id.clone(),
                        name: kind.to_owned(),
                        input: fields.to_string(),
                        timestamp: at,
                    }),
                    at,
                );
                id
            }
        };
        let exit_code = step.get("exit_code").and_then(|v| match v {
            Value::Number(n) => n.as_i64().and_then(|c| i32::try_from(c).ok()),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        });
        let is_error = step
            .get("status")
            .and_then(Value::as_str)
            .map(|s| matches!(s, "ERROR" | "FAILED" | "FAILURE" | "CANCELED" | "CANCELLED"));
        self.turns.push(
            TurnItem::ToolResult(ToolResult {
                call_id,
                output: content,
                is_error,
                exit_code,
                timestamp: at,
            }),
            at,
        );
    }
}

fn timestamp(v: Option<&Value>) -> Option<UnixMillis> {
    match v? {
        Value::String(s) => UnixMillis::parse_rfc3339(s),
        Value::Number(n) => n.as_i64().map(|ms| {
            // Seconds or milliseconds: a value this small is seconds.
            UnixMillis(if ms < 100_000_000_000 { ms * 1000 } else { ms })
        }),
        _ => None,
    }
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Every absolute path among the string values of `v`.
fn collect_paths(v: &Value, out: &mut Vec<PathBuf>) {
    match v {
        Value::String(s) if s.starts_with('/') && !s.contains('\n') => {
            out.push(PathBuf::from(s.split_whitespace().next().unwrap_or(s)));
        }
        Value::Array(items) => items.iter().for_each(|i| collect_paths(i, out)),
        Value::Object(o) => o.values().for_each(|i| collect_paths(i, out)),
        _ => {}
    }
}

/// The deepest directory holding every path (a path whose last part has an extension counts as
/// a file, so its folder is taken). `None` for no paths or when only `/` holds them all.
fn common_dir(paths: &[PathBuf]) -> Option<PathBuf> {
    let mut common: Option<Vec<OsString>> = None;
    for path in paths {
        let is_file = path
            .file_name()
            .is_some_and(|n| Path::new(n).extension().is_some());
        let dir = if is_file {
            path.parent().unwrap_or(path)
        } else {
            path
        };
        let parts = dir.components().map(|c| c.as_os_str().to_os_string());
        common = Some(match common {
            None => parts.collect(),
            Some(prev) => prev
                .into_iter()
                .zip(parts)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    let common = common?;
    (common.len() > 1).then(|| common.iter().collect())
}
