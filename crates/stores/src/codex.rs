//! Codex's store: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl` (and
//! `.jsonl.zst`, and the same under `archived_sessions/`). Every line is
//! `{"timestamp":…,"type":…,"payload":…}`; the first is `session_meta`.
//!
//! Which threads are a person's: sub-agent and internal threads are filed in the same store and
//! are excluded by what they are — a `source` that is a sub-agent or internal source, or a
//! `thread_source` other than `"user"`. A missing `thread_source` counts: threads started from
//! the VS Code panel (`app-server`) have `source: "vscode"` and no `thread_source` at all
//! (observed with codex-cli 0.171.0, `docs/observed/codex.md` §7), so requiring `"user"` would hide
//! every panel thread.
//!
//! Names live beside the rollouts in `session_index.jsonl`, appended on every rename: the entry
//! with the newest `updated_at` wins and an empty name clears nothing (it is skipped).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::claude::title_from_text;
use crate::lines::LineSink;
use crate::model::{
    Agent, LineContext, LineProblem, Session, TranscriptFold, UnixMillis, Warnings,
};
use crate::roots::{SourceFile, StoreRoots};
use crate::skim;
use crate::walk::{DirCache, Found, Rule, WalkRoot, walk};

/// `$CODEX_HOME/session_index.jsonl`, the thread names.
pub fn session_index_path(codex_home: &Path) -> PathBuf {
    codex_home.join("session_index.jsonl")
}

/// Every rollout under `sessions/` and `archived_sessions/`, plain or `.zst`, with its stamp,
/// unread.
pub fn discover(roots: &StoreRoots, warnings: &mut Warnings) -> Vec<SourceFile> {
    let (found, _, _) = walk(&walk_roots(roots), 1, DirCache::default(), warnings);
    found.into_iter().flat_map(sources).collect()
}

/// Where discovery walks: `sessions/YYYY/MM/DD/rollout-*`; `archived_sessions` is flat in
/// current Codex, dated in some versions: depth 3 covers both.
pub(crate) fn walk_roots(roots: &StoreRoots) -> Vec<WalkRoot> {
    let Some(home) = roots.codex_home.as_deref() else {
        return Vec::new();
    };
    ["sessions", "archived_sessions"]
        .into_iter()
        .map(|sub| WalkRoot {
            root: home.join(sub),
            rule: Rule::Codex,
            max_depth: 3,
            min_file_depth: 0,
            keep: is_rollout_name,
            probes: &[],
        })
        .collect()
}

/// The rollouts a walk of one of [`walk_roots`] found.
pub(crate) fn sources(found: Found) -> impl Iterator<Item = SourceFile> {
    found
        .files
        .into_iter()
        .flatten()
        .map(|(path, stamp)| SourceFile {
            agent: Agent::Codex,
            compressed: crate::lines::is_zstd_path(&path),
            stamp,
            path,
            sidecar: None,
            scope_cwd: None,
        })
}

/// Whether a file name (from a folder listing, so no separators) is a rollout's. On the name
/// alone: `Path::file_name` parses components, and a warm listing asks this of every rollout.
fn is_rollout_name(name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    name.starts_with("rollout-") && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst"))
}

/// The listing fold of one rollout.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodexFold {
    /// `session_meta.payload.id` (the thread id).
    pub thread_id: Option<String>,
    pub cwd: Option<String>,
    /// `session_meta.payload.source`, as JSON text (a string or a sub-agent object).
    pub source: Option<String>,
    pub thread_source: Option<String>,
    pub originator: Option<String>,
    /// When `session_meta` said the thread started.
    pub started_at: Option<UnixMillis>,
    /// The first prompt a person typed: the generated title.
    pub first_prompt: Option<String>,
    /// A user message was seen.
    pub has_user_message: bool,
    /// A turn started and neither completed nor was aborted.
    pub turn_open: bool,
    pub first_activity: Option<UnixMillis>,
    pub last_activity: Option<UnixMillis>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    source: Option<&'a RawValue>,
    #[serde(borrow, default)]
    thread_source: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    originator: Option<Cow<'a, str>>,
}

/// The fields of one payload the fold reads, as raw JSON.
#[derive(Default)]
struct Payload<'a> {
    kind: Option<Cow<'a, str>>,
    /// `event_msg` `user_message` (older Codex).
    message: Option<&'a [u8]>,
    /// `response_item` `message`.
    role: Option<Cow<'a, str>>,
    content: Option<&'a [u8]>,
    /// `event_msg` `item_completed` (current Codex).
    item: Option<&'a [u8]>,
}

impl<'a> Payload<'a> {
    fn skim(raw: &'a [u8]) -> Self {
        let mut p = Payload::default();
        let _ = skim::for_each_field(raw, |k, v| {
            match k {
                b"type" => p.kind = skim::string(v),
                b"message" => p.message = Some(v),
                b"role" => p.role = skim::string(v),
                b"content" => p.content = Some(v),
                b"item" => p.item = Some(v),
                _ => {}
            }
            true
        });
        p
    }
}

impl TranscriptFold for CodexFold {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        let mut timestamp = None;
        let mut kind = None;
        let mut payload = None;
        let skimmed = skim::for_each_field(line, |k, v| {
            match k {
                b"timestamp" => timestamp = Some(v),
                b"type" => kind = skim::string(v),
                b"payload" => payload = Some(v),
                _ => {}
            }
            true
        });
        if let Err(e) = skimmed {
            warnings.push_line(at, LineProblem::NotJson, format!("not a JSON record: {e}"));
            return;
        }
        if let Some(ts) = timestamp
            .and_then(skim::string)
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339)
        {
            self.first_activity = Some(self.first_activity.map_or(ts, |t| t.min(ts)));
            self.last_activity = Some(self.last_activity.map_or(ts, |t| t.max(ts)));
        }
        let Some(payload) = payload else {
            return;
        };
        match kind.as_deref() {
            Some("session_meta") => self.fold_meta(payload, at, warnings),
            Some("event_msg") => {
                let p = Payload::skim(payload);
                match p.kind.as_deref() {
                    Some("task_started") => self.turn_open = true,
                    Some("task_complete" | "turn_aborted") => self.turn_open = false,
                    Some("user_message") => {
                        self.has_user_message = true;
                        if self.first_prompt.is_none() {
                            self.first_prompt = p
                                .message
                                .and_then(skim::string)
                                .as_deref()
                                .and_then(title_from_text);
                        }
                    }
                    Some("item_completed") => {
                        let Some(item) = p.item else {
                            return;
                        };
                        let item = Payload::skim(item);
                        if item.kind.as_deref() == Some("UserMessage") {
                            self.has_user_message = true;
                            if self.first_prompt.is_none() {
                                self.first_prompt = item
                                    .content
                                    .and_then(first_text)
                                    .as_deref()
                                    .and_then(title_from_text);
                            }
                        }
                    }
                    _ => {}
                }
            }
            Some("response_item") if self.first_prompt.is_none() => {
                // Older rollouts without event_msg user messages: a user-role message that is
                // not context Codex injected.
                let p = Payload::skim(payload);
                if p.kind.as_deref() == Some("message") && p.role.as_deref() == Some("user") {
                    let text = p.content.and_then(first_text);
                    if let Some(text) = text.filter(|t| !is_injected_context(t)) {
                        self.has_user_message = true;
                        self.first_prompt = title_from_text(&text);
                    }
                }
            }
            _ => {}
        }
    }

    fn session(&self, path: &Path) -> Option<Session> {
        if !self.counts() {
            return None;
        }
        let session_id = self.thread_id.clone()?;
        Some(Session {
            agent: Agent::Codex,
            session_id,
            cwd: self.cwd.as_ref().map(PathBuf::from),
            title: self.first_prompt.clone(),
            title_is_assigned: false,
            first_activity: self.started_at.or(self.first_activity),
            last_activity: self.last_activity,
            is_working: self.turn_open,
            path: path.to_path_buf(),
            copilot: None,
        })
    }
}

impl CodexFold {
    fn fold_meta(&mut self, payload: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        let meta: Meta<'_> = match serde_json::from_slice(payload) {
            Ok(m) => m,
            Err(e) => {
                warnings.push_line(at, LineProblem::BadRecord, format!("bad session_meta: {e}"));
                return;
            }
        };
        // A rollout may repeat `session_meta` (a resumed or forked thread copies its parent's):
        // the first one is this file's own thread.
        if self.thread_id.is_some() {
            return;
        }
        self.thread_id = meta.id.map(Cow::into_owned);
        self.cwd = meta.cwd.map(Cow::into_owned);
        self.source = meta.source.map(|s| s.get().to_owned());
        self.thread_source = meta.thread_source.map(Cow::into_owned);
        self.originator = meta.originator.map(Cow::into_owned);
        self.started_at = meta
            .timestamp
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339);
    }

    /// Whether this thread is one a person works in (see the module notes for why a missing
    /// `thread_source` counts).
    pub fn counts(&self) -> bool {
        self.thread_id.is_some()
            && self.has_user_message
            && !self.source.as_deref().is_some_and(is_non_user_source)
            && self.thread_source.as_deref().is_none_or(|t| t == "user")
    }
}

/// A `session_meta.source` (JSON text) of a sub-agent or internal thread: `{"subagent": …}`,
/// `"subagent_…"`, `"internal"`, `{"internal": …}` and their camel-case spellings.
fn is_non_user_source(source_json: &str) -> bool {
    let lower = source_json.to_ascii_lowercase();
    let name = lower.trim_start_matches(['{', '"', ' ']);
    name.starts_with("subagent") || name.starts_with("sub_agent") || name.starts_with("internal")
}

/// Context Codex sends as a user message that no person typed.
fn is_injected_context(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<environment_context>")
        || t.starts_with("<user_instructions>")
        || t.starts_with("# AGENTS.md")
        || t.starts_with("<turn_aborted>")
        || t.starts_with("<skills_instructions>")
}

/// The first non-empty `text` of a content array.
fn first_text(content: &[u8]) -> Option<String> {
    skim::items(content)
        .into_iter()
        .filter_map(|item| skim::field(item, b"text").and_then(skim::string))
        .find(|t| !t.trim().is_empty())
        .map(Cow::into_owned)
}

/// Thread names from `session_index.jsonl`, folded line by line (the file is append-only, so the
/// index can resume it from an offset like a transcript).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadNames {
    pub by_id: HashMap<String, ThreadName>,
}

/// The winning name of one thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadName {
    pub name: String,
    pub updated_at: Option<UnixMillis>,
    /// The line it came from, so that of two entries with the same `updated_at` the later one
    /// wins.
    pub line: u64,
}

#[derive(Deserialize)]
struct IndexEntry<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thread_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    updated_at: Option<Cow<'a, str>>,
}

impl LineSink for ThreadNames {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        let entry: IndexEntry<'_> = match serde_json::from_slice(line) {
            Ok(e) => e,
            Err(e) => {
                warnings.push_line(at, LineProblem::NotJson, format!("not a JSON record: {e}"));
                return;
            }
        };
        let (Some(id), Some(name)) = (entry.id, entry.thread_name) else {
            return;
        };
        let name = name.trim();
        if id.is_empty() || name.is_empty() {
            return;
        }
        let updated_at = entry
            .updated_at
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339);
        let candidate = ThreadName {
            name: name.to_owned(),
            updated_at,
            line: at.line,
        };
        match self.by_id.get(id.as_ref()) {
            Some(current) if (current.updated_at, current.line) > (updated_at, at.line) => {}
            _ => {
                self.by_id.insert(id.into_owned(), candidate);
            }
        }
    }
}

impl ThreadNames {
    /// The name of a thread, if a person gave it one.
    pub fn get(&self, thread_id: &str) -> Option<&str> {
        self.by_id.get(thread_id).map(|n| n.name.as_str())
    }

    /// Gives `session` its thread name, marking the title assigned.
    pub fn apply(&self, session: &mut Session) {
        if let Some(name) = self.get(&session.session_id) {
            session.title = Some(name.to_owned());
            session.title_is_assigned = true;
        }
    }
}

/// Reads the whole `session_index.jsonl` (a missing file is no names, not a warning).
pub fn read_thread_names(codex_home: &Path, warnings: &mut Warnings) -> ThreadNames {
    let path = session_index_path(codex_home);
    let mut names = ThreadNames::default();
    if !path.exists() {
        return names;
    }
    if let Err(e) = crate::lines::read_all_lines(&path, &mut names, warnings) {
        warnings.push(&path, None, e.to_string());
    }
    names
}

/// Keeps one session per thread id: the newest rollout (by last activity, then by file name,
/// which starts with the rollout's creation time). Several rollouts share an id when a thread
/// is archived and unarchived, or resumed into a new file.
pub fn newest_per_thread(sessions: Vec<Session>) -> Vec<Session> {
    let mut best: HashMap<String, Session> = HashMap::new();
    for s in sessions {
        match best.get(&s.session_id) {
            Some(cur) if newer_key(cur) >= newer_key(&s) => {}
            _ => {
                best.insert(s.session_id.clone(), s);
            }
        }
    }
    best.into_values().collect()
}

fn newer_key(s: &Session) -> (Option<UnixMillis>, Option<&std::ffi::OsStr>) {
    (s.last_activity, s.path.file_name())
}
