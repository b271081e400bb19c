//! Codex's usage: the `event_msg` `token_count` events of a rollout
//! (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`), one per model call.
//!
//! Each event carries `info.last_token_usage` (this call) and `info.total_token_usage` (the
//! thread's running total). A call is counted from `last_token_usage`, never by adding running
//! totals; an event whose running total did not move (Codex repeats the event when only the
//! rate limits changed) is the same call again and is skipped. Kinds are made disjoint: input
//! = `input_tokens − cached_input_tokens`, cache read = `cached_input_tokens`, output =
//! `output_tokens` (reasoning is part of it). The model is the latest `turn_context.model`.
//!
//! What ties rollouts together, from Codex's `SessionMeta` (docs/observed/usage.md): a forked
//! thread's `session_meta` has `forked_from_id` and the fork's rollout starts with a copy of the
//! base's history (its `session_meta` and `token_count` events included); a spawned sub-agent's
//! `source` is `{"subagent":{"thread_spawn":{"parent_thread_id":…,"depth":…}}}`. The reader only
//! records these; [`crate::account`] decides what is a replay.

use std::path::{Path, PathBuf};

use cross_agent_protocol::timestamp::UnixMillis;
use serde::Deserialize;
use serde_json::Value;

use crate::account::{RateLimitWindow, RateLimits};
use crate::lines::LineBuffer;
use crate::tokens::Tokens;

/// Codex's own usage record: all five counts as Codex writes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
pub struct RawUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub reasoning_output_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
}

impl RawUsage {
    /// The disjoint kinds: cached input is taken out of input.
    pub fn tokens(&self) -> Tokens {
        Tokens {
            input: self.input_tokens.saturating_sub(self.cached_input_tokens),
            output: self.output_tokens,
            cache_write_5m: 0,
            cache_write_1h: 0,
            cache_read: self.cached_input_tokens.min(self.input_tokens),
        }
    }
}

/// One model call as a `token_count` event recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexCall {
    pub timestamp: Option<UnixMillis>,
    pub model: Option<String>,
    /// `info.last_token_usage`: this call.
    pub last: RawUsage,
    /// `info.total_token_usage`: the thread's running total after it. With `last`, the identity
    /// of the call when a fork or resume copies it into another rollout.
    pub total: RawUsage,
}

/// What one rollout records about usage.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CodexFile {
    pub path: PathBuf,
    /// The first `session_meta`'s `id`: this rollout's thread.
    pub thread_id: Option<String>,
    /// The thread this one was forked from: `forked_from_id`, else the id of a second
    /// `session_meta` (the base's, copied in with its history).
    pub forked_from: Option<String>,
    /// `source.subagent.thread_spawn.parent_thread_id`: the thread that spawned this one.
    pub parent_thread: Option<String>,
    pub cwd: Option<String>,
    pub started: Option<UnixMillis>,
    pub calls: Vec<CodexCall>,
    /// The latest `rate_limits` of the file.
    pub rate_limits: Option<RateLimits>,
    pub bad_lines: u64,
}

/// Reads one rollout from any number of appended pieces.
#[derive(Debug, Clone, Default)]
pub struct CodexReader {
    file: CodexFile,
    lines: LineBuffer,
    model: Option<String>,
    last_total: Option<RawUsage>,
}

#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    payload: Option<Value>,
}

#[derive(Deserialize)]
struct Info {
    #[serde(default)]
    total_token_usage: Option<RawUsage>,
    #[serde(default)]
    last_token_usage: Option<RawUsage>,
}

impl CodexReader {
    pub fn new(path: &Path) -> Self {
        Self {
            file: CodexFile {
                path: path.to_path_buf(),
                ..CodexFile::default()
            },
            ..Self::default()
        }
    }

    /// Reads the bytes appended since the last call.
    pub fn feed(&mut self, bytes: &[u8]) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(bytes, |line| self.line(line));
        self.lines = lines;
    }

    /// What has been read so far.
    pub fn file(&self) -> &CodexFile {
        &self.file
    }

    /// The file read whole: a last line without a newline is taken when it is whole JSON.
    pub fn finish(mut self) -> CodexFile {
        let mut lines = std::mem::take(&mut self.lines);
        lines.finish(|line| self.line(line));
        self.file
    }

    fn line(&mut self, raw: &[u8]) {
        if raw.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let line: Line = match serde_json::from_slice(raw) {
            Ok(line) => line,
            Err(_) => {
                self.file.bad_lines += 1;
                return;
            }
        };
        let timestamp = line
            .timestamp
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339);
        if let Some(ts) = timestamp {
            self.file.started = Some(self.file.started.map_or(ts, |s| s.min(ts)));
        }
        let Some(payload) = line.payload else {
            return;
        };
        match line.kind.as_deref() {
            Some("session_meta") => self.meta(&payload),
            Some("turn_context") => {
                if let Some(model) = payload.get("model").and_then(Value::as_str) {
                    self.model = Some(model.to_owned());
                }
            }
            Some("event_msg")
                if payload.get("type").and_then(Value::as_str) == Some("token_count") =>
            {
                self.token_count(&payload, timestamp);
            }
            _ => {}
        }
    }

    fn meta(&mut self, payload: &Value) {
        let id = payload.get("id").and_then(Value::as_str).map(str::to_owned);
        if self.file.thread_id.is_none() {
            self.file.thread_id = id;
            self.file.cwd = payload
                .get("cwd")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.file.forked_from = payload
                .get("forked_from_id")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.file.parent_thread = payload
                .get("source")
                .and_then(|s| s.get("subagent"))
                .and_then(|s| s.get("thread_spawn"))
                .and_then(|s| s.get("parent_thread_id"))
                .and_then(Value::as_str)
                .map(str::to_owned);
        } else if self.file.forked_from.is_none() && id != self.file.thread_id {
            // A copied history's own `session_meta`: the base of this fork.
            self.file.forked_from = id;
        }
    }

    fn token_count(&mut self, payload: &Value, timestamp: Option<UnixMillis>) {
        if let Some(limits) = payload
            .get("rate_limits")
            .and_then(|v| rate_limits(v, timestamp))
        {
            self.file.rate_limits = Some(limits);
        }
        let Some(info) = payload.get("info").filter(|v| !v.is_null()) else {
            return;
        };
        let Ok(info) = Info::deserialize(info) else {
            self.file.bad_lines += 1;
            return;
        };
        let (Some(last), Some(total)) = (info.last_token_usage, info.total_token_usage) else {
            return;
        };
        // The same running total again is the same call again (a rate-limit-only update).
        if self.last_total == Some(total) {
            return;
        }
        self.last_total = Some(total);
        self.file.calls.push(CodexCall {
            timestamp,
            model: self.model.clone(),
            last,
            total,
        });
    }
}

/// Reads a whole rollout's bytes.
pub fn read(path: &Path, bytes: &[u8]) -> CodexFile {
    let mut reader = CodexReader::new(path);
    reader.feed(bytes);
    reader.finish()
}

fn rate_limits(value: &Value, at: Option<UnixMillis>) -> Option<RateLimits> {
    let window = |name: &str| -> Option<RateLimitWindow> {
        let w = value.get(name).filter(|v| !v.is_null())?;
        Some(RateLimitWindow {
            used_percent: w.get("used_percent").and_then(Value::as_f64)?,
            window_minutes: w.get("window_minutes").and_then(Value::as_u64),
            // Older Codex versions wrote `resets_in_seconds` (from the event) instead.
            resets_at: w.get("resets_at").and_then(Value::as_i64).or_else(|| {
                let secs = w.get("resets_in_seconds").and_then(Value::as_i64)?;
                Some(at?.0 / 1000 + secs)
            }),
        })
    };
    let limits = RateLimits {
        observed_at: at,
        primary: window("primary"),
        secondary: window("secondary"),
    };
    (limits.primary.is_some() || limits.secondary.is_some()).then_some(limits)
}
