//! The brief: a deterministic reading of one session, built without a model — the contract
//! (opening goal, latest real instruction, constraints quoted verbatim), files touched, commands
//! run with their outcome, failures, and where it stands.
//!
//! Failure is judged honestly per format: a recorded exit code decides; failing that, the
//! format's own error flag; only where neither exists is the output read for signs of failure,
//! and every command says which of the three it was.
//!
//! Which user messages a person wrote is `cross_agent_stores::human`'s rule, shared with the
//! cross review.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use cross_agent_stores::human::{self as human_text, UserText};
use cross_agent_stores::turns::{Role, ToolCall, ToolResult, TurnItem};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::source::{Family, SourceSession};

/// At most this many commands, failures and files are listed (the latest ones); the counts say
/// how many there were in all.
const MAX_COMMANDS: usize = 40;
const MAX_FAILURES: usize = 20;
const MAX_FILES: usize = 100;
const MAX_CONSTRAINTS: usize = 30;
/// How much of the last assistant message "where it stands" quotes.
const STANDING_CHARS: usize = 1500;

/// Everything the brief states, in the order the file shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Brief {
    pub source: SourceInfo,
    pub contract: Contract,
    pub files: Vec<FileTouched>,
    pub files_total: usize,
    pub commands: Vec<CommandRun>,
    pub commands_total: usize,
    pub failures: Vec<Failure>,
    pub failures_total: usize,
    pub standing: Standing,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceInfo {
    pub family: Family,
    pub session_id: String,
    pub title: Option<String>,
    pub cwd: Option<PathBuf>,
    pub cwd_derived: bool,
    pub path: PathBuf,
}

/// What the session was asked to do, in the human's own words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contract {
    pub opening_goal: Option<String>,
    /// The latest instruction, when it is not the opening goal itself.
    pub latest_instruction: Option<String>,
    /// Lines of the human's messages that constrain the work, verbatim.
    pub constraints: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileTouched {
    /// Relative to the working directory when inside it.
    pub path: String,
    pub edited: bool,
    /// The tools that touched it, in first-use order.
    pub tools: Vec<String>,
}

/// What decided a command's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// The format recorded an exit code.
    ExitCode,
    /// No exit code; the format flagged the result as an error (or not).
    ErrorFlag,
    /// Neither: the output was read for signs of failure.
    OutputRead,
    /// No result was recorded (still running, or interrupted).
    NoResult,
}

impl Signal {
    pub fn describe(self) -> &'static str {
        match self {
            Signal::ExitCode => "exit code recorded",
            Signal::ErrorFlag => "no exit code; the format's error flag",
            Signal::OutputRead => "no exit code; judged by reading the output",
            Signal::NoResult => "no result recorded",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Succeeded,
    Failed,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRun {
    pub command: String,
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub signal: Signal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The command, or the tool and what it was given.
    pub what: String,
    /// The first telling line of the output.
    pub evidence: String,
    pub exit_code: Option<i32>,
    pub signal: Signal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Standing {
    pub turns: usize,
    /// The last turn was still running when the brief was read.
    pub last_turn_running: bool,
    pub last_assistant_message: Option<String>,
    pub last_command: Option<CommandRun>,
    pub last_activity: Option<i64>,
}

/// Builds the brief of a session read whole.
pub fn build(session: &SourceSession) -> Brief {
    let cwd = session.cwd.as_deref();
    let mut answered: HashMap<&str, &ToolResult> = HashMap::new();
    let mut human: Vec<&str> = Vec::new();
    let mut last_assistant: Option<&str> = None;
    let mut order: Vec<&ToolCall> = Vec::new();
    for turn in &session.turns {
        for item in &turn.items {
            match item {
                TurnItem::Message(m) if m.role == Role::User => {
                    // The person's words: a Telegram envelope counts by its body.
                    if let UserText::Human(words) = human_text::classify(&m.text) {
                        human.push(words);
                    }
                }
                TurnItem::Message(m) => {
                    if !m.text.trim().is_empty() {
                        last_assistant = Some(&m.text);
                    }
                }
                TurnItem::ToolCall(c) => {
                    order.push(c);
                }
                TurnItem::ToolResult(r) => {
                    answered.insert(&r.call_id, r);
                }
            }
        }
    }

    let mut files: BTreeMap<String, FileTouched> = BTreeMap::new();
    let mut file_order: Vec<String> = Vec::new();
    let mut commands = Vec::new();
    let mut failures = Vec::new();
    for call in &order {
        let input: Value = serde_json::from_str(&call.input).unwrap_or(Value::Null);
        let edits = is_edit_tool(&call.name);
        for path in touched_paths(&call.name, &input, &call.input) {
            let shown = relative(&path, cwd);
            let entry = files.entry(shown.clone()).or_insert_with(|| {
                file_order.push(shown.clone());
                FileTouched {
                    path: shown,
                    edited: false,
                    tools: Vec::new(),
                }
            });
            entry.edited |= edits;
            if !entry.tools.contains(&call.name) {
                entry.tools.push(call.name.clone());
            }
        }
        let result = answered.get(call.id.as_str()).copied();
        let (outcome, signal) = judge(result);
        let exit_code = result.and_then(|r| r.exit_code);
        if let Some(command) = command_of(&call.name, &input) {
            let run = CommandRun {
                command: command.clone(),
                outcome,
                exit_code,
                signal,
            };
            if outcome == Outcome::Failed {
                failures.push(Failure {
                    what: command,
                    evidence: evidence(result.map_or("", |r| r.output.as_str())),
                    exit_code,
                    signal,
                });
            }
            commands.push(run);
        } else if outcome == Outcome::Failed && signal != Signal::OutputRead {
            // A non-shell tool's output is not read for failure words (a file it showed may
            // say "error" anywhere): only its recorded flag or code counts.
            failures.push(Failure {
                what: format!("{} {}", call.name, one_line(&call.input, 160)),
                evidence: evidence(result.map_or("", |r| r.output.as_str())),
                exit_code,
                signal,
            });
        }
    }

    let opening_goal = human.first().map(|t| t.trim().to_owned());
    let latest_instruction = human
        .last()
        .filter(|_| human.len() > 1)
        .map(|t| t.trim().to_owned());
    let mut constraints: Vec<String> = Vec::new();
    for text in &human {
        for line in text.lines() {
            let line = line.trim();
            if is_constraint(line) && !constraints.iter().any(|c| c == line) {
                constraints.push(line.to_owned());
            }
        }
    }
    let constraints = tail(constraints, MAX_CONSTRAINTS);

    let files_total = file_order.len();
    let files: Vec<FileTouched> = tail(file_order, MAX_FILES)
        .into_iter()
        .filter_map(|p| files.remove(&p))
        .collect();
    let commands_total = commands.len();
    let failures_total = failures.len();
    let last_command = commands.last().cloned();
    let last = session.turns.last();
    Brief {
        source: SourceInfo {
            family: session.family,
            session_id: session.session_id.clone(),
            title: session.title.clone(),
            cwd: session.cwd.clone(),
            cwd_derived: session.cwd_derived,
            path: session.path.clone(),
        },
        contract: Contract {
            opening_goal,
            latest_instruction,
            constraints,
        },
        files,
        files_total,
        commands: tail(commands, MAX_COMMANDS),
        commands_total,
        failures: tail(failures, MAX_FAILURES),
        failures_total,
        standing: Standing {
            turns: session.turns.len(),
            last_turn_running: last.is_some_and(|t| !t.finished),
            last_assistant_message: last_assistant.map(|t| last_chars(t.trim(), STANDING_CHARS)),
            last_command,
            last_activity: last.and_then(|t| t.ended_at.or(t.started_at)).map(|t| t.0),
        },
    }
}

/// A line that tells the agent what it must or must not do.
fn is_constraint(line: &str) -> bool {
    if line.is_empty() {
        return false;
    }
    let lower = line.to_lowercase();
    const WORDS: [&str; 20] = [
        "must",
        "never",
        "don't",
        "do not",
        "dont",
        "only",
        "always",
        "without",
        "avoid",
        "should not",
        "shouldn't",
        "make sure",
        "required",
        "at most",
        "at least",
        "keep ",
        "no more than",
        "forbidden",
        "not allowed",
        "≤",
    ];
    WORDS.iter().any(|w| {
        lower.match_indices(w).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            before.is_none_or(|c| !c.is_alphanumeric())
        })
    })
}

/// The outcome of a call and what decided it.
fn judge(result: Option<&ToolResult>) -> (Outcome, Signal) {
    let Some(result) = result else {
        return (Outcome::Unknown, Signal::NoResult);
    };
    if let Some(code) = result.exit_code {
        let outcome = if code == 0 {
            Outcome::Succeeded
        } else {
            Outcome::Failed
        };
        return (outcome, Signal::ExitCode);
    }
    if result.is_error == Some(true) {
        return (Outcome::Failed, Signal::ErrorFlag);
    }
    if output_shows_failure(&result.output) {
        (Outcome::Failed, Signal::OutputRead)
    } else {
        (Outcome::Succeeded, Signal::OutputRead)
    }
}

/// Signs of failure in a command's output, for formats that record no exit code.
fn output_shows_failure(output: &str) -> bool {
    output.lines().any(failure_line)
}

fn failure_line(line: &str) -> bool {
    let t = line.trim_start();
    let lower = t.to_lowercase();
    lower.starts_with("error")
        || lower.starts_with("fatal:")
        || t.starts_with("FAILED")
        || t.starts_with("Traceback (most recent call last)")
        || lower.contains("command not found")
        || lower.contains("no such file or directory")
        || lower.contains("permission denied")
        || lower.contains("panicked at")
        || t.contains("test result: FAILED")
}

/// The first telling line of an output: a failure line, or the first non-empty one.
fn evidence(output: &str) -> String {
    let line = output
        .lines()
        .find(|l| failure_line(l))
        .or_else(|| output.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("");
    one_line(line.trim(), 200)
}

fn is_edit_tool(name: &str) -> bool {
    let lower = name.to_lowercase();
    [
        "edit",
        "write",
        "apply_patch",
        "code_action",
        "replace",
        "create",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

fn is_shell_tool(name: &str) -> bool {
    let lower = name.to_lowercase();
    ["bash", "shell", "command", "terminal", "exec"]
        .iter()
        .any(|w| lower.contains(w))
}

/// The command line of a shell call, from whichever field the format uses.
fn command_of(name: &str, input: &Value) -> Option<String> {
    if !is_shell_tool(name) {
        return None;
    }
    let field = [
        "command",
        "cmd",
        "CommandLine",
        "commandLine",
        "command_line",
    ]
    .iter()
    .find_map(|k| input.get(*k))?;
    let text = match field {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            // `["bash", "-lc", "cargo test"]`: the script is what was run.
            match parts.as_slice() {
                [shell, flag, script] if shell.ends_with("sh") && flag.starts_with('-') => {
                    (*script).to_owned()
                }
                _ => parts.join(" "),
            }
        }
        _ => return None,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The paths a call names: its file fields, and the files of a Codex patch.
fn touched_paths(name: &str, input: &Value, raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    for key in [
        "file_path",
        "path",
        "notebook_path",
        "filePath",
        "target_file",
        "TargetFile",
        "AbsolutePath",
        "file",
    ] {
        if let Some(p) = input.get(key).and_then(Value::as_str)
            && !p.trim().is_empty()
        {
            out.push(p.to_owned());
        }
    }
    if name.contains("apply_patch") || raw.contains("*** Begin Patch") {
        let patch = input
            .get("input")
            .or_else(|| input.get("patch"))
            .and_then(Value::as_str)
            .unwrap_or(raw);
        for line in patch.lines() {
            for marker in ["*** Add File: ", "*** Update File: ", "*** Delete File: "] {
                if let Some(p) = line.trim().strip_prefix(marker) {
                    out.push(p.trim().to_owned());
                }
            }
        }
    }
    out
}

fn relative(path: &str, cwd: Option<&Path>) -> String {
    match cwd.and_then(|c| Path::new(path).strip_prefix(c).ok()) {
        Some(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.to_owned(),
    }
}

/// The last `n` items.
fn tail<T>(mut items: Vec<T>, n: usize) -> Vec<T> {
    let drop = items.len().saturating_sub(n);
    items.drain(..drop);
    items
}

/// `text` on one line, at most `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// The last `max` characters of `text`.
fn last_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let skip = count - max;
    let at = text.char_indices().nth(skip).map_or(0, |(i, _)| i);
    format!("…{}", &text[at..])
}
