//! Grok Build's store: `$GROK_HOME/sessions/<encoded cwd>/<session id>/` holding `summary.json`
//! (rewritten in place) and `updates.jsonl` (appended: one ACP `session/update` or
//! `_x.ai/session/update` notification per line, wrapped as `{timestamp, method, params}`).
//!
//! Grok cannot run on these machines, so this follows public descriptions, not recordings:
//! - the folder name is the cwd percent-encoded (`urlencoding::encode`: every byte but
//!   `A-Za-z0-9-_.~` as `%XX`); when that is longer than 255 bytes it is `<slug>-<hash16>`
//!   and the folder holds a `.cwd` file with the real path (Grok Build's `encode_cwd_dirname` /
//!   `decode_cwd_from_dirname`, public source of its `grok_home` module);
//! - `summary.json` is Grok's `Summary`: `info.{id,cwd}`, `session_summary`, `generated_title`,
//!   `title_is_manual` (set by `/rename`), `session_kind` (`"subagent…"` is hidden), `hidden`,
//!   `created_at`, `updated_at`, `last_active_at` (public source of its
//!   `session/persistence.rs`); the spec (docs/spec/cross-agent-mcp.md §3, §5) says the same about `/rename` and
//!   sub-agents;
//! - `updates.jsonl` lines as replayed over ACP (`user_message_chunk`, `agent_message_chunk`,
//!   `tool_call`, `tool_call_update`, and `_x.ai` `turn_completed`), per the ACP docs and
//!   `docs/observed/telegram_ahp_grok.md` §3.
//!
//! Tab names a person typed in the Grok Build GUI extension are not in Grok's files but in the
//! editor's `state.vscdb` (SQLite, table `ItemTable`, key `sahilrakhaiya.grok-build-gui`). No
//! public description of that value exists; [`read_gui_names`] reads it tolerantly, read-only.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::claude::title_from_text;
use crate::error::StoreError;
use crate::model::{
    Agent, LineContext, LineProblem, Session, TranscriptFold, UnixMillis, Warnings,
};
use crate::roots::{Sidecar, SourceFile, StoreRoots};
use crate::skim;
use crate::walk::{DirCache, Found, Rule, WalkRoot, walk};

/// The `ItemTable` key the Grok Build GUI extension keeps its state under.
pub const GUI_STATE_KEY: &str = "sahilrakhaiya.grok-build-gui";

/// `$GROK_HOME/sessions`.
pub fn sessions_dir(grok_home: &Path) -> PathBuf {
    grok_home.join("sessions")
}

/// The cwd a `sessions/<folder>` stands for, decided from its name alone: percent-decoded, it
/// is an absolute path. `None` for the hashed form of a long cwd (see [`folder_cwd`]).
pub fn decode_folder_name(name: &str) -> Option<PathBuf> {
    let bytes = percent_decode(name)?;
    let absolute = bytes.first() == Some(&b'/')
        || (bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':');
    if !absolute {
        return None;
    }
    bytes_to_path(bytes)
}

/// The cwd of a `sessions/<folder>`: from its name, or for a hashed long-cwd folder from the
/// `.cwd` file inside it (one small read per project folder, never per session).
pub fn folder_cwd(dir: &Path) -> Option<PathBuf> {
    let name = dir.file_name()?.to_str()?;
    if let Some(cwd) = decode_folder_name(name) {
        return Some(cwd);
    }
    let text = std::fs::read_to_string(dir.join(".cwd")).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| PathBuf::from(text))
}

/// The folder name Grok gives a short cwd (the inverse of [`decode_folder_name`]).
pub fn encode_folder_name(cwd: &str) -> String {
    let mut out = String::with_capacity(cwd.len() * 3);
    for b in cwd.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            let hi = hex(*b.get(i + 1)?)?;
            let lo = hex(*b.get(i + 2)?)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(unix)]
fn bytes_to_path(bytes: Vec<u8>) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

#[cfg(not(unix))]
fn bytes_to_path(bytes: Vec<u8>) -> Option<PathBuf> {
    String::from_utf8(bytes).ok().map(PathBuf::from)
}

/// Every session folder holding a `summary.json`, as a [`SourceFile`] whose lines are
/// `updates.jsonl` and whose sidecar is `summary.json`, with the cwd from the folder name.
/// Sub-agent sessions Grok files under `<session>/subagents/` are not listed.
pub fn discover(roots: &StoreRoots, warnings: &mut Warnings) -> Vec<SourceFile> {
    let Some(root) = walk_root(roots) else {
        return Vec::new();
    };
    let (mut found, _, _) = walk(&[root], 1, DirCache::default(), warnings);
    sources(found.pop().unwrap_or_default(), warnings)
}

/// The two files of a session folder, looked up by name: a session folder is never listed, so
/// a session costs two `stat` calls.
const SESSION_FILES: &[&str] = &["summary.json", "updates.jsonl"];

/// Where discovery walks: `sessions/<cwd folder>/<session folder>`.
pub(crate) fn walk_root(roots: &StoreRoots) -> Option<WalkRoot> {
    Some(WalkRoot {
        root: sessions_dir(roots.grok_home.as_deref()?),
        rule: Rule::Grok,
        max_depth: 1,
        min_file_depth: usize::MAX,
        keep: |_| false,
        probes: SESSION_FILES,
    })
}

/// The sessions a walk of [`walk_root`] found: every session folder with a `summary.json`.
pub(crate) fn sources(found: Found, warnings: &mut Warnings) -> Vec<SourceFile> {
    let mut out = Vec::with_capacity(found.probed.len());
    // Session folders come grouped by their cwd folder: its cwd is worked out once.
    let mut current: Option<(PathBuf, Option<PathBuf>)> = None;
    for (session_dir, stamps) in found.probed {
        let [Some(summary_stamp), updates_stamp] = stamps[..] else {
            continue;
        };
        let Some(cwd_dir) = session_dir.parent() else {
            continue;
        };
        if current.as_ref().is_none_or(|(dir, _)| dir != cwd_dir) {
            let scope_cwd = folder_cwd(cwd_dir);
            if scope_cwd.is_none() {
                warnings.push(
                    cwd_dir,
                    None,
                    "cannot tell which directory this folder is for (no .cwd file)",
                );
            }
            current = Some((cwd_dir.to_path_buf(), scope_cwd));
        }
        let scope_cwd = current.as_ref().and_then(|(_, cwd)| cwd.clone());
        out.push(SourceFile {
            agent: Agent::Grok,
            path: session_dir.join(SESSION_FILES[1]),
            stamp: updates_stamp.unwrap_or_default(),
            compressed: false,
            sidecar: Some(Sidecar {
                path: session_dir.join(SESSION_FILES[0]),
                stamp: summary_stamp,
            }),
            scope_cwd,
        });
    }
    out
}

/// What the listing keeps of `summary.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrokSummary {
    pub id: Option<String>,
    pub cwd: Option<String>,
    pub session_summary: Option<String>,
    pub generated_title: Option<String>,
    pub title_is_manual: bool,
    pub session_kind: Option<String>,
    pub hidden: Option<bool>,
    pub created_at: Option<UnixMillis>,
    pub updated_at: Option<UnixMillis>,
    pub last_active_at: Option<UnixMillis>,
}

#[derive(Deserialize)]
struct SummaryFile<'a> {
    #[serde(borrow, default)]
    info: Option<SummaryInfo<'a>>,
    #[serde(borrow, default)]
    session_summary: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    generated_title: Option<Cow<'a, str>>,
    #[serde(default)]
    title_is_manual: Option<bool>,
    #[serde(borrow, default)]
    session_kind: Option<Cow<'a, str>>,
    #[serde(default)]
    hidden: Option<bool>,
    #[serde(borrow, default)]
    created_at: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    updated_at: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    last_active_at: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct SummaryInfo<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
}

impl GrokSummary {
    /// Parses `summary.json`.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Self, StoreError> {
        let f: SummaryFile<'_> =
            serde_json::from_slice(bytes).map_err(|source| StoreError::Format {
                path: path.to_path_buf(),
                what: "Grok summary.json",
                source,
            })?;
        let owned = |s: Option<Cow<'_, str>>| s.map(Cow::into_owned);
        let (id, cwd) = match f.info {
            Some(info) => (owned(info.id), owned(info.cwd)),
            None => (None, None),
        };
        Ok(GrokSummary {
            id,
            cwd,
            session_summary: owned(f.session_summary),
            generated_title: owned(f.generated_title),
            title_is_manual: f.title_is_manual.unwrap_or(false),
            session_kind: owned(f.session_kind),
            hidden: f.hidden,
            created_at: f.created_at.as_deref().and_then(UnixMillis::parse_rfc3339),
            updated_at: f.updated_at.as_deref().and_then(UnixMillis::parse_rfc3339),
            last_active_at: f
                .last_active_at
                .as_deref()
                .and_then(UnixMillis::parse_rfc3339),
        })
    }

    /// Grok's own rule (`Summary::is_hidden`): `hidden` when set, else a `subagent…` kind.
    pub fn is_hidden(&self) -> bool {
        self.hidden.unwrap_or_else(|| {
            self.session_kind
                .as_deref()
                .is_some_and(|k| k.starts_with("subagent"))
        })
    }

    /// The `/rename` title (Grok's `manual_title_opt`): `generated_title` when
    /// `title_is_manual`, never the `session_summary` fallback.
    pub fn manual_title(&self) -> Option<&str> {
        self.title_is_manual
            .then_some(self.generated_title.as_deref())
            .flatten()
            .map(str::trim)
            .filter(|t| !t.is_empty())
    }

    /// Grok's display title: `generated_title` if non-blank, else `session_summary`.
    pub fn display_title(&self) -> Option<&str> {
        self.generated_title
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .or_else(|| {
                self.session_summary
                    .as_deref()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
            })
    }
}

/// The listing fold of one Grok session: `summary.json` (as a sidecar) plus `updates.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrokFold {
    pub summary: Option<GrokSummary>,
    /// `params.sessionId` of the first update that had one.
    pub session_id: Option<String>,
    pub first_prompt: Option<String>,
    pub has_user_message: bool,
    /// A prompt was sent and no `turn_completed` / `prompt_complete` followed.
    pub turn_open: bool,
    pub first_activity: Option<UnixMillis>,
    pub last_activity: Option<UnixMillis>,
}

/// When an `updates.jsonl` line was written: `_meta.agentTimestampMs` when a writer adds it,
/// else the envelope's `timestamp` (seconds).
fn line_time(timestamp: Option<&[u8]>, meta: Option<&[u8]>) -> Option<UnixMillis> {
    let parse = |raw: &[u8]| std::str::from_utf8(raw).ok()?.parse::<f64>().ok();
    if let Some(ms) = meta
        .and_then(|m| skim::field(m, b"agentTimestampMs"))
        .and_then(parse)
        .filter(|ms| ms.is_finite() && *ms > 0.0 && *ms < 1e16)
    {
        return Some(UnixMillis(ms as i64));
    }
    let secs = timestamp
        .and_then(parse)
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e13)?;
    Some(UnixMillis((secs * 1000.0) as i64))
}

impl TranscriptFold for GrokFold {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        let (mut timestamp, mut method, mut params, mut meta) = (None, None, None, None);
        let skimmed = skim::for_each_field(line, |k, v| {
            match k {
                b"timestamp" => timestamp = Some(v),
                b"method" => method = skim::string(v),
                b"params" => params = Some(v),
                b"_meta" => meta = Some(v),
                _ => {}
            }
            true
        });
        if let Err(e) = skimmed {
            warnings.push_line(at, LineProblem::NotJson, format!("not a JSON record: {e}"));
            return;
        }
        if let Some(ts) = line_time(timestamp, meta) {
            self.first_activity = Some(self.first_activity.map_or(ts, |t| t.min(ts)));
            self.last_activity = Some(self.last_activity.map_or(ts, |t| t.max(ts)));
        }
        let Some(params) = params else {
            return;
        };
        let (mut session_id, mut update) = (None, None);
        let _ = skim::for_each_field(params, |k, v| {
            match k {
                b"sessionId" => session_id = skim::string(v),
                b"update" => update = Some(v),
                _ => {}
            }
            true
        });
        if self.session_id.is_none()
            && let Some(id) = session_id.filter(|s| !s.is_empty())
        {
            self.session_id = Some(id.into_owned());
        }
        if method.as_deref() == Some("_x.ai/session/prompt_complete") {
            self.turn_open = false;
            return;
        }
        let Some(update) = update else {
            return;
        };
        let (mut kind, mut content) = (None, None);
        let _ = skim::for_each_field(update, |k, v| {
            match k {
                b"sessionUpdate" => kind = skim::string(v),
                b"content" => content = Some(v),
                _ => {}
            }
            true
        });
        match kind.as_deref() {
            Some("user_message_chunk") => {
                self.has_user_message = true;
                self.turn_open = true;
                if self.first_prompt.is_none() {
                    self.first_prompt = content
                        .and_then(|c| skim::field(c, b"text"))
                        .and_then(skim::string)
                        .as_deref()
                        .and_then(title_from_text);
                }
            }
            Some("turn_completed") => self.turn_open = false,
            _ => {}
        }
    }

    fn session(&self, path: &Path) -> Option<Session> {
        // `path` is `updates.jsonl`; the session is its folder.
        let dir = path.parent()?;
        let summary = self.summary.as_ref();
        if summary.is_some_and(GrokSummary::is_hidden) {
            return None;
        }
        let session_id = summary
            .and_then(|s| s.id.clone())
            .or_else(|| dir.file_name()?.to_str().map(str::to_owned))
            .or_else(|| self.session_id.clone())?;
        let cwd = summary
            .and_then(|s| s.cwd.as_ref().map(PathBuf::from))
            .or_else(|| {
                dir.parent()
                    .and_then(|p| p.file_name())
                    .and_then(|n| n.to_str())
                    .and_then(decode_folder_name)
            });
        let (title, title_is_assigned) = match summary.and_then(GrokSummary::manual_title) {
            Some(t) => (Some(t.to_owned()), true),
            None => (
                summary
                    .and_then(GrokSummary::display_title)
                    .map(str::to_owned)
                    .or_else(|| self.first_prompt.clone()),
                false,
            ),
        };
        let summary_last = summary.and_then(|s| s.last_active_at.or(s.updated_at));
        let last_activity = match (self.last_activity, summary_last) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let first_activity = match (self.first_activity, summary.and_then(|s| s.created_at)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // A session Grok opened but nobody prompted yet has a summary and no messages: it is
        // still listed (the GUI shows it, and a shim may write the first prompt into it).
        Some(Session {
            agent: Agent::Grok,
            session_id,
            cwd,
            title,
            title_is_assigned,
            first_activity,
            last_activity,
            is_working: self.turn_open,
            path: dir.to_path_buf(),
            copilot: None,
        })
    }

    fn feed_sidecar(&mut self, bytes: &[u8], path: &Path, warnings: &mut Warnings) {
        match GrokSummary::parse(bytes, path) {
            Ok(summary) => self.summary = Some(summary),
            // Grok rewrites summary.json via a temp file and rename, so a bad one is really bad:
            // keep what we had and say so.
            Err(e) => warnings.push(path, None, e.to_string()),
        }
    }
}

/// Tab names a person typed in the Grok Build GUI extension, by Grok session id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuiNames {
    pub by_session: HashMap<String, String>,
}

impl GuiNames {
    pub fn get(&self, session_id: &str) -> Option<&str> {
        self.by_session.get(session_id).map(String::as_str)
    }

    /// Gives `session` its tab name, which wins over a `/rename` title: it is the name the
    /// person sees on the tab.
    pub fn apply(&self, session: &mut Session) {
        if let Some(name) = self.get(&session.session_id) {
            session.title = Some(name.to_owned());
            session.title_is_assigned = true;
        }
    }
}

/// Reads the GUI tab names from every configured `state.vscdb`, read-only. A database that
/// cannot be read is a warning and contributes no names: those sessions are then reached by
/// id, as the spec asks ("names simply stop resolving").
pub fn read_gui_names(roots: &StoreRoots, warnings: &mut Warnings) -> GuiNames {
    let mut names = GuiNames::default();
    for db in &roots.grok_names_dbs {
        if !db.exists() {
            if roots.grok_names_dbs_explicit {
                warnings.push(db, None, "Grok names database not found");
            }
            continue;
        }
        match read_gui_state(db) {
            Ok(Some(value)) => collect_names(&value, &mut names.by_session),
            Ok(None) => {}
            Err(e) => warnings.push(db, None, e.to_string()),
        }
    }
    names
}

/// The extension's JSON value from one `state.vscdb`, or `None` when it has none.
pub fn read_gui_state(db: &Path) -> Result<Option<Value>, StoreError> {
    use rusqlite::{OpenFlags, OptionalExtension};
    let sql_err = |source: rusqlite::Error| StoreError::Sqlite {
        path: db.to_path_buf(),
        source,
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let uri = sqlite_uri(db);
    // Plain read-only first; if the editor holds the file in a way that stops even that
    // (a WAL file we may not create the index for), read it as an immutable snapshot.
    let conn = rusqlite::Connection::open_with_flags(format!("{uri}?mode=ro"), flags)
        .or_else(|_| rusqlite::Connection::open_with_flags(format!("{uri}?immutable=1"), flags))
        .map_err(sql_err)?;
    conn.busy_timeout(std::time::Duration::from_millis(250))
        .map_err(sql_err)?;
    let query = || -> rusqlite::Result<Option<Vec<u8>>> {
        conn.query_row(
            "SELECT value FROM ItemTable WHERE key = ?1",
            [GUI_STATE_KEY],
            |row| {
                let v = row.get_ref(0)?;
                Ok(match v {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        t.to_vec()
                    }
                    _ => Vec::new(),
                })
            },
        )
        .optional()
    };
    let raw = match query() {
        Ok(raw) => raw,
        Err(_) => {
            // Locked mid-write: one retry on an immutable snapshot.
            let conn = rusqlite::Connection::open_with_flags(format!("{uri}?immutable=1"), flags)
                .map_err(sql_err)?;
            conn.query_row(
                "SELECT value FROM ItemTable WHERE key = ?1",
                [GUI_STATE_KEY],
                |row| row.get::<_, Vec<u8>>(0),
            )
            .optional()
            .map_err(sql_err)?
        }
    };
    let Some(raw) = raw else {
        return Ok(None);
    };
    serde_json::from_slice(&raw)
        .map(Some)
        .map_err(|source| StoreError::Format {
            path: db.to_path_buf(),
            what: "Grok Build GUI state",
            source,
        })
}

/// A `file:` URI for SQLite, with the characters URIs reserve escaped.
fn sqlite_uri(path: &Path) -> String {
    let mut out = String::from("file:");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~' | b':') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Keys an object names a session by.
const ID_KEYS: [&str; 4] = ["sessionId", "session_id", "acpSessionId", "id"];
/// Keys a tab's name is kept under.
const NAME_KEYS: [&str; 7] = [
    "customName",
    "customTitle",
    "tabName",
    "name",
    "title",
    "label",
    "displayName",
];

/// Collects (session id → name) pairs from the extension's state, whatever its nesting: objects
/// that carry a session id and a name, and maps under a key mentioning "name" from id to
/// string. There is no public description of this value, so the reader is tolerant and only
/// takes non-empty strings.
fn collect_names(value: &Value, out: &mut HashMap<String, String>) {
    match value {
        Value::Object(map) => {
            let id = ID_KEYS
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str))
                .filter(|s| !s.trim().is_empty());
            let name = NAME_KEYS
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str))
                .map(str::trim)
                .filter(|s| !s.is_empty());
            if let (Some(id), Some(name)) = (id, name) {
                out.insert(id.to_owned(), name.to_owned());
            }
            for (key, child) in map {
                if key.to_ascii_lowercase().contains("name")
                    && let Value::Object(names) = child
                {
                    for (id, name) in names {
                        if let Some(name) = name.as_str().map(str::trim).filter(|s| !s.is_empty()) {
                            out.insert(id.clone(), name.to_owned());
                        }
                    }
                }
                collect_names(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_names(v, out)),
        // Some extensions store their state as a JSON string inside the JSON value.
        Value::String(s) if s.starts_with('{') || s.starts_with('[') => {
            if let Ok(inner) = serde_json::from_str::<Value>(s) {
                collect_names(&inner, out);
            }
        }
        _ => {}
    }
}
