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

use std::path::Path;
use std::sync::Arc;

use cross_agent_protocol::timestamp::UnixMillis;
use serde::Deserialize;
use serde_json::Value;

use crate::account::{RateLimitWindow, RateLimits};
use crate::calls::{Call, Calls};
use crate::keys::{CallKey, ModelId};
use crate::lines::{self, LineRecords, Reader};
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

/// One model call as a `token_count` event recorded it: its usage (`info.last_token_usage`)
/// as disjoint kinds, the model of its turn, and as its key the running total
/// (`info.total_token_usage`) and last usage hashed ([`usage_key`]) — with the thread's family
/// ([`key_in`]), the identity of the call when a fork or resume copies it into another rollout.
pub type CodexCall = Call;

/// The hash of a call's running total and last usage.
pub fn usage_key(total: &RawUsage, last: &RawUsage) -> CallKey {
    CallKey::of(|w| {
        for usage in [total, last] {
            write_usage(w, usage);
        }
    })
}

/// A usage record's five counts, into a key.
fn write_usage(w: &mut crate::keys::KeyWriter, usage: &RawUsage) {
    w.u64(usage.input_tokens)
        .u64(usage.cached_input_tokens)
        .u64(usage.output_tokens)
        .u64(usage.reasoning_output_tokens)
        .u64(usage.total_tokens);
}

/// A thread family's name hashed, as a call's identity across rollouts holds it ([`key_in`]).
pub fn family_hash(family: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(family.as_bytes())
}

/// A call's identity across rollouts: its usage (`key`, [`usage_key`]) in the thread family
/// hashed as `family` ([`family_hash`]).
pub fn key_in(key: CallKey, family: u64) -> CallKey {
    CallKey::of(|w| {
        w.u64(family).bytes(&key.bytes());
    })
}

/// What one rollout records about usage.
#[derive(Debug, Clone, PartialEq)]
pub struct CodexFile {
    /// Shared: the live index keys the file by it and its ledger orders files by it.
    pub path: Arc<Path>,
    /// The first `session_meta`'s `id`: this rollout's thread (shared, not copied, with the
    /// file's share of the calls in the live index: [`crate::Share::session_id`]).
    pub thread_id: Option<crate::Name>,
    /// What ties this thread to others, when anything does (boxed: most rollouts have none,
    /// and a parse is kept for every rollout).
    pub relations: Option<Box<Relations>>,
    /// Shared with every file that names it ([`crate::keys::shared_cwd`]).
    pub cwd: Option<crate::keys::Cwd>,
    pub started: crate::lines::Earliest,
    pub calls: Calls,
    /// The latest `rate_limits` of the file (apart: most rollouts' parses are kept with it;
    /// shared, not copied, with the live ledger's slot for the file).
    pub rate_limits: Option<Arc<RateLimits>>,
    pub bad_lines: u64,
}

/// A thread's ties to others, as its rollout records them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Relations {
    /// The thread this one was forked from: `forked_from_id`, else the id of a second
    /// `session_meta` (the base's, copied in with its history).
    pub forked_from: Option<Box<str>>,
    /// `source.subagent.thread_spawn.parent_thread_id`: the thread that spawned this one.
    pub parent_thread: Option<Box<str>>,
}

impl CodexFile {
    /// See [`Relations::forked_from`].
    pub fn forked_from(&self) -> Option<&str> {
        self.relations.as_ref()?.forked_from.as_deref()
    }

    /// See [`Relations::parent_thread`].
    pub fn parent_thread(&self) -> Option<&str> {
        self.relations.as_ref()?.parent_thread.as_deref()
    }
}

/// Reads one rollout from any number of appended pieces.
pub type CodexReader = Reader<CodexLines>;

/// What a rollout's lines are taken for: the calls, each with the model of its turn.
#[derive(Debug, Clone, Default)]
pub struct CodexLines {
    model: Option<ModelId>,
    /// The last call's running total, hashed (compared only, and kept for every rollout's
    /// reader: 16 bytes where the counts took 40).
    last_total: Option<CallKey>,
}

/// The fields of a rollout line the reader looks at (public only as [`CodexLines`]'s line type;
/// nothing outside reads them).
#[derive(Deserialize)]
pub struct Line {
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

impl LineRecords for CodexLines {
    type Line = Line;
    type File = CodexFile;

    fn start(path: &Path) -> CodexFile {
        CodexFile {
            path: Arc::from(path),
            thread_id: None,
            relations: None,
            cwd: None,
            started: crate::lines::Earliest::default(),
            calls: Calls::default(),
            rate_limits: None,
            bad_lines: 0,
        }
    }

    fn timestamp(line: &Line) -> Option<UnixMillis> {
        line.timestamp
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339)
    }

    fn started(file: &mut CodexFile) -> &mut crate::lines::Earliest {
        &mut file.started
    }

    fn bad_lines(file: &mut CodexFile) -> &mut u64 {
        &mut file.bad_lines
    }

    fn shrink(&mut self, file: &mut CodexFile) {
        // Only a list no share holds: another's would be copied to be trimmed.
        if let Some(calls) = Arc::get_mut(&mut file.calls) {
            calls.shrink_to_fit();
        }
    }

    fn renew(file: &mut CodexFile) {
        crate::names::renew(&mut file.path, &mut [&mut file.thread_id]);
        if let Some(limits) = &mut file.rate_limits
            && Arc::strong_count(limits) == 1
        {
            *limits = Arc::new(RateLimits::clone(limits));
        }
        crate::calls::renew(&mut file.calls);
    }

    fn record(&mut self, file: &mut CodexFile, line: Line, timestamp: Option<UnixMillis>) {
        let Some(payload) = line.payload else {
            return;
        };
        match line.kind.as_deref() {
            Some("session_meta") => meta(file, &payload),
            Some("turn_context") => {
                if let Some(model) = payload.get("model").and_then(Value::as_str) {
                    self.model = Some(ModelId::intern(model));
                }
            }
            Some("event_msg")
                if payload.get("type").and_then(Value::as_str) == Some("token_count") =>
            {
                self.token_count(file, &payload, timestamp);
            }
            _ => {}
        }
    }
}

/// The thread's own `session_meta`, or a copied one naming the base of a fork.
fn meta(file: &mut CodexFile, payload: &Value) {
    let id: Option<&str> = payload.get("id").and_then(Value::as_str);
    if file.thread_id.is_none() {
        // Held in the path when the rollout is named by it (nearly always).
        file.thread_id = id.map(|id| crate::Name::in_path(id, &file.path));
        file.cwd = payload
            .get("cwd")
            .and_then(Value::as_str)
            .map(crate::keys::shared_cwd);
        let relations = Relations {
            forked_from: payload
                .get("forked_from_id")
                .and_then(Value::as_str)
                .map(Box::from),
            parent_thread: payload
                .get("source")
                .and_then(|s| s.get("subagent"))
                .and_then(|s| s.get("thread_spawn"))
                .and_then(|s| s.get("parent_thread_id"))
                .and_then(Value::as_str)
                .map(Box::from),
        };
        file.relations = (relations != Relations::default()).then(|| Box::new(relations));
    } else if file.forked_from().is_none() && id != file.thread_id.as_deref() {
        // A copied history's own `session_meta`: the base of this fork.
        file.relations.get_or_insert_default().forked_from = id.map(Box::from);
    }
}

impl CodexLines {
    fn token_count(
        &mut self,
        file: &mut CodexFile,
        payload: &Value,
        timestamp: Option<UnixMillis>,
    ) {
        if let Some(limits) = payload
            .get("rate_limits")
            .and_then(|v| rate_limits(v, timestamp))
        {
            file.rate_limits = Some(Arc::new(limits));
        }
        let Some(info) = payload.get("info").filter(|v| !v.is_null()) else {
            return;
        };
        let Ok(info) = Info::deserialize(info) else {
            file.bad_lines += 1;
            return;
        };
        let (Some(last), Some(total)) = (info.last_token_usage, info.total_token_usage) else {
            return;
        };
        // The same running total again is the same call again (a rate-limit-only update).
        let total_key = CallKey::of(|w| {
            write_usage(w, &total);
        });
        if self.last_total == Some(total_key) {
            return;
        }
        self.last_total = Some(total_key);
        Arc::make_mut(&mut file.calls).push(Call {
            key: usage_key(&total, &last),
            timestamp,
            model: self.model,
            tokens: last.tokens(),
        });
    }
}

/// Reads a whole rollout's bytes.
pub fn read(path: &Path, bytes: &[u8]) -> CodexFile {
    lines::read::<CodexLines>(path, bytes)
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
