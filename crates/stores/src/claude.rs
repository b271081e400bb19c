//! Claude Code's store: `<config>/projects/<slug>/<session>.jsonl`, one JSON record per line.
//!
//! The folder slug replaces every non-alphanumeric character of the cwd with `-`, so it cannot
//! be decoded: the cwd comes from the records' own `cwd` field (and a later `relocated` record,
//! which Claude appends when a session is moved to another directory).
//!
//! Names: a person's `/rename` appends `{"type":"custom-title","customTitle":…}`, so the **last**
//! one wins (an empty one clears it). Claude's own generated title is an `ai-title` record; with
//! neither, the first prompt stands in. Both of those are descriptions, not names.
//!
//! A turn is running while the last assistant record stopped on `tool_use`: Claude writes one
//! record per content block, and the tool's result and the next reply follow.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::lines::parse_timestamp;
use crate::model::{Agent, LineContext, Session, TranscriptFold, UnixMillis, Warnings};
use crate::roots::{FileStamp, SourceFile, StoreRoots, Walk, walk_files};

/// Longest generated title kept from a first prompt, in characters.
pub const PROMPT_TITLE_CHARS: usize = 120;

/// `<config>/projects`, where Claude Code files transcripts by project.
pub fn projects_dir(config: &Path) -> PathBuf {
    config.join("projects")
}

/// The project folder name Claude Code uses for a cwd: every non-alphanumeric character becomes
/// `-`. Lossy, so only ever used forwards (to narrow a look-up), never decoded.
pub fn project_slug(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Every `projects/<slug>/*.jsonl` under the Claude config root, with its stamp, unread.
/// Sub-agent transcripts Claude keeps in deeper folders (`<session>/subagents/…`) are not listed.
pub fn discover(roots: &StoreRoots, warnings: &mut Warnings) -> Vec<SourceFile> {
    let Some(config) = roots.claude_config.as_deref() else {
        return Vec::new();
    };
    let projects = projects_dir(config);
    let mut keep = |p: &Path| p.extension().is_some_and(|e| e == "jsonl");
    walk_files(&projects, Walk { max_depth: 1 }, &mut keep, warnings)
        .into_iter()
        .filter(|(path, _)| path.parent() != Some(projects.as_path()))
        .map(|(path, meta)| SourceFile {
            agent: Agent::Claude,
            stamp: FileStamp::of(&meta),
            path,
            compressed: false,
            sidecar: None,
            scope_cwd: None,
        })
        .collect()
}

/// The listing fold of one Claude transcript: small, serialisable, resumable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaudeFold {
    /// `sessionId` of the first record that had one.
    pub session_id: Option<String>,
    /// `cwd` of the first record that had one.
    pub cwd: Option<String>,
    /// The last `relocated` record's `relocatedCwd`: where the session lives now.
    pub relocated_cwd: Option<String>,
    /// The last `custom-title` (`Some("")` when the last one cleared the name).
    pub custom_title: Option<String>,
    /// The last `ai-title`.
    pub ai_title: Option<String>,
    /// The first real prompt a person typed (meta records and command echoes left out).
    pub first_prompt: Option<String>,
    /// A user record outside any sidechain was seen.
    pub has_user_message: bool,
    /// A user or assistant record outside any sidechain was seen.
    pub has_main_chain: bool,
    /// The last main-chain assistant record stopped on `tool_use`, and no prompt came after it.
    pub pending_tool_use: bool,
    pub first_activity: Option<UnixMillis>,
    pub last_activity: Option<UnixMillis>,
}

/// The fields of a record the listing needs; everything else is skipped unparsed.
#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    is_sidechain: Option<bool>,
    #[serde(rename = "isMeta", default)]
    is_meta: Option<bool>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(rename = "customTitle", borrow, default)]
    custom_title: Option<Cow<'a, str>>,
    #[serde(rename = "aiTitle", borrow, default)]
    ai_title: Option<Cow<'a, str>>,
    #[serde(rename = "relocatedCwd", borrow, default)]
    relocated_cwd: Option<Cow<'a, str>>,
}

/// The parts of `message` the listing looks at.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct BlockKind<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TextBlock<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

impl TranscriptFold for ClaudeFold {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        let record: Record<'_> = match serde_json::from_slice(line) {
            Ok(r) => r,
            Err(e) => {
                warnings.push(at.path, Some(at.line), format!("not a JSON record: {e}"));
                return;
            }
        };
        if self.session_id.is_none()
            && let Some(id) = record.session_id.as_deref().filter(|s| !s.is_empty())
        {
            self.session_id = Some(id.to_owned());
        }
        if self.cwd.is_none()
            && let Some(cwd) = record.cwd.as_deref().filter(|s| !s.is_empty())
        {
            self.cwd = Some(cwd.to_owned());
        }
        if let Some(ts) = record.timestamp.as_deref().and_then(parse_timestamp) {
            self.first_activity = Some(self.first_activity.map_or(ts, |t| t.min(ts)));
            self.last_activity = Some(self.last_activity.map_or(ts, |t| t.max(ts)));
        }
        let sidechain = record.is_sidechain == Some(true);
        match record.kind.as_deref() {
            Some("custom-title") => {
                self.custom_title = Some(record.custom_title.unwrap_or_default().trim().to_owned());
            }
            Some("ai-title") => {
                if let Some(t) = record.ai_title.as_deref().map(str::trim) {
                    self.ai_title = (!t.is_empty()).then(|| t.to_owned());
                }
            }
            Some("relocated") => {
                if let Some(cwd) = record.relocated_cwd.as_deref().filter(|s| !s.is_empty()) {
                    self.relocated_cwd = Some(cwd.to_owned());
                }
            }
            Some("user") if !sidechain => {
                self.has_main_chain = true;
                if record.is_meta == Some(true) {
                    return;
                }
                self.has_user_message = true;
                let Some(content) = record
                    .message
                    .and_then(|m| serde_json::from_str::<Message<'_>>(m.get()).ok())
                    .and_then(|m| m.content)
                else {
                    return;
                };
                // A tool's result continues the running turn; anything a person typed (or
                // Claude's "[Request interrupted by user]" marker) means the turn is over.
                if !is_tool_result_only(content) {
                    self.pending_tool_use = false;
                    if self.first_prompt.is_none() {
                        self.first_prompt = prompt_title(content);
                    }
                }
            }
            Some("assistant") if !sidechain => {
                self.has_main_chain = true;
                let Some(message) = record
                    .message
                    .and_then(|m| serde_json::from_str::<Message<'_>>(m.get()).ok())
                else {
                    return;
                };
                let last_block_is_tool_use = message
                    .content
                    .and_then(|c| serde_json::from_str::<Vec<BlockKind<'_>>>(c.get()).ok())
                    .and_then(|blocks| blocks.into_iter().last())
                    .is_some_and(|b| b.kind.as_deref() == Some("tool_use"));
                self.pending_tool_use =
                    message.stop_reason.as_deref() == Some("tool_use") || last_block_is_tool_use;
            }
            _ => {}
        }
    }

    fn session(&self, path: &Path) -> Option<Session> {
        if !self.has_user_message || !self.has_main_chain {
            return None;
        }
        let session_id = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .or_else(|| self.session_id.clone())?;
        let assigned = self.custom_title.as_deref().filter(|t| !t.is_empty());
        let (title, title_is_assigned) = match assigned {
            Some(t) => (Some(t.to_owned()), true),
            None => (
                self.ai_title.clone().or_else(|| self.first_prompt.clone()),
                false,
            ),
        };
        Some(Session {
            agent: Agent::Claude,
            session_id,
            cwd: self
                .relocated_cwd
                .as_ref()
                .or(self.cwd.as_ref())
                .map(PathBuf::from),
            title,
            title_is_assigned,
            first_activity: self.first_activity,
            last_activity: self.last_activity,
            is_working: self.pending_tool_use,
            path: path.to_path_buf(),
        })
    }
}

/// True when a user record's content is only tool results. Claude writes compact JSON, so the
/// structural `"type":"tool_result"` can be looked for without parsing (inside a string its
/// quotes would be escaped).
fn is_tool_result_only(content: &RawValue) -> bool {
    let raw = content.get().as_bytes();
    if raw.first() != Some(&b'[') {
        return false;
    }
    if memchr::memmem::find(raw, b"\"tool_result\"").is_none() {
        return false;
    }
    match serde_json::from_str::<Vec<BlockKind<'_>>>(content.get()) {
        Ok(blocks) => {
            !blocks.is_empty()
                && blocks
                    .iter()
                    .all(|b| b.kind.as_deref() == Some("tool_result"))
        }
        Err(_) => false,
    }
}

/// The generated title a prompt gives: its first meaningful line, cut to
/// [`PROMPT_TITLE_CHARS`]. `None` for command echoes and injected context.
fn prompt_title(content: &RawValue) -> Option<String> {
    let text: String = match serde_json::from_str::<Cow<'_, str>>(content.get()) {
        Ok(s) => s.into_owned(),
        Err(_) => serde_json::from_str::<Vec<TextBlock<'_>>>(content.get())
            .ok()?
            .into_iter()
            .filter(|b| b.kind.as_deref() == Some("text"))
            .filter_map(|b| b.text)
            .find(|t| !is_injected(t))?
            .into_owned(),
    };
    if is_injected(&text) {
        return None;
    }
    title_from_text(&text)
}

/// Text Claude Code puts in a user record that a person did not type.
fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    t.is_empty()
        || t.starts_with("<command-")
        || t.starts_with("<local-command-")
        || t.starts_with("<system-reminder>")
        || t.starts_with("<ide_")
        || t.starts_with("Caveat: The messages below were generated")
        || t.starts_with("[Request interrupted")
}

/// The first non-blank line of `text`, whitespace collapsed, cut to [`PROMPT_TITLE_CHARS`].
pub(crate) fn title_from_text(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let collapsed: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(collapsed.chars().take(PROMPT_TITLE_CHARS).collect())
}
