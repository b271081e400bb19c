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

use crate::model::{
    Agent, LineContext, LineProblem, Session, TranscriptFold, UnixMillis, Warnings,
};
use crate::roots::{SourceFile, StoreRoots};
use crate::skim;
use crate::walk::{DirCache, Found, Rule, WalkRoot, walk};

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
    let Some(root) = walk_root(roots) else {
        return Vec::new();
    };
    let (mut found, _, _) = walk(&[root], 1, DirCache::default(), warnings);
    sources(found.pop().unwrap_or_default()).collect()
}

/// Where discovery walks: `projects/`, one level of project folders below it.
pub(crate) fn walk_root(roots: &StoreRoots) -> Option<WalkRoot> {
    Some(WalkRoot {
        root: projects_dir(roots.claude_config.as_deref()?),
        rule: Rule::Claude,
        max_depth: 1,
        // Files directly in `projects/` are not transcripts.
        min_file_depth: 1,
        keep: |name| crate::lines::has_extension(name.as_encoded_bytes(), b"jsonl"),
        probes: &[],
    })
}

/// The transcripts a walk of [`walk_root`] found.
pub(crate) fn sources(found: Found) -> impl Iterator<Item = SourceFile> {
    found
        .files
        .into_iter()
        .flatten()
        .map(|(path, stamp)| SourceFile {
            agent: Agent::Claude,
            stamp,
            path,
            compressed: false,
            sidecar: None,
            scope_cwd: None,
        })
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

/// The fields of a record the listing needs, as raw JSON; everything else is stepped over.
#[derive(Default)]
struct Record<'a> {
    kind: Option<Cow<'a, str>>,
    is_sidechain: bool,
    is_meta: bool,
    cwd: Option<&'a [u8]>,
    session_id: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    message: Option<&'a [u8]>,
    custom_title: Option<&'a [u8]>,
    ai_title: Option<&'a [u8]>,
    relocated_cwd: Option<&'a [u8]>,
}

impl<'a> Record<'a> {
    fn skim(line: &'a [u8]) -> Result<Self, skim::SkimError> {
        let mut r = Record::default();
        skim::for_each_field(line, |key, value| {
            match key {
                b"type" => r.kind = skim::string(value),
                b"isSidechain" => r.is_sidechain = skim::boolean(value) == Some(true),
                b"isMeta" => r.is_meta = skim::boolean(value) == Some(true),
                b"cwd" => r.cwd = Some(value),
                b"sessionId" => r.session_id = Some(value),
                b"timestamp" => r.timestamp = Some(value),
                b"message" => r.message = Some(value),
                b"customTitle" => r.custom_title = Some(value),
                b"aiTitle" => r.ai_title = Some(value),
                b"relocatedCwd" => r.relocated_cwd = Some(value),
                _ => {}
            }
            true
        })?;
        Ok(r)
    }
}

/// A raw string value, owned and non-empty.
fn owned(raw: Option<&[u8]>) -> Option<String> {
    raw.and_then(skim::string)
        .filter(|s| !s.is_empty())
        .map(Cow::into_owned)
}

/// The `type` of each block of a content array (`None` for content that is a plain string).
fn block_kinds(content: &[u8]) -> Option<Vec<Option<Cow<'_, str>>>> {
    if !content.starts_with(b"[") {
        return None;
    }
    Some(
        skim::items(content)
            .into_iter()
            .map(|item| skim::field(item, b"type").and_then(skim::string))
            .collect(),
    )
}

impl TranscriptFold for ClaudeFold {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        let record = match Record::skim(line) {
            Ok(r) => r,
            Err(e) => {
                warnings.push_line(at, LineProblem::NotJson, format!("not a JSON record: {e}"));
                return;
            }
        };
        if self.session_id.is_none() {
            self.session_id = owned(record.session_id);
        }
        if self.cwd.is_none() {
            self.cwd = owned(record.cwd);
        }
        if let Some(ts) = record
            .timestamp
            .and_then(skim::string)
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339)
        {
            self.first_activity = Some(self.first_activity.map_or(ts, |t| t.min(ts)));
            self.last_activity = Some(self.last_activity.map_or(ts, |t| t.max(ts)));
        }
        match record.kind.as_deref() {
            Some("custom-title") => {
                let title = record
                    .custom_title
                    .and_then(skim::string)
                    .unwrap_or_default();
                self.custom_title = Some(title.trim().to_owned());
            }
            Some("ai-title") => {
                if let Some(t) = record.ai_title.and_then(skim::string) {
                    let t = t.trim();
                    self.ai_title = (!t.is_empty()).then(|| t.to_owned());
                }
            }
            Some("relocated") => {
                if let Some(cwd) = owned(record.relocated_cwd) {
                    self.relocated_cwd = Some(cwd);
                }
            }
            Some("user") if !record.is_sidechain => {
                self.has_main_chain = true;
                if record.is_meta {
                    return;
                }
                self.has_user_message = true;
                let Some(content) = record.message.and_then(|m| skim::field(m, b"content")) else {
                    return;
                };
                // A tool's result continues the running turn; anything a person typed (or
                // Claude's "[Request interrupted by user]" marker) means the turn is over.
                let tool_results_only = block_kinds(content).is_some_and(|kinds| {
                    !kinds.is_empty() && kinds.iter().all(|k| k.as_deref() == Some("tool_result"))
                });
                if !tool_results_only {
                    self.pending_tool_use = false;
                    if self.first_prompt.is_none() {
                        self.first_prompt = prompt_title(content);
                    }
                }
            }
            Some("assistant") if !record.is_sidechain => {
                self.has_main_chain = true;
                let Some(message) = record.message else {
                    return;
                };
                let mut stop_reason = None;
                let mut content = None;
                let _ = skim::for_each_field(message, |k, v| {
                    match k {
                        b"stop_reason" => stop_reason = skim::string(v),
                        b"content" => content = Some(v),
                        _ => {}
                    }
                    true
                });
                let last_block_is_tool_use = content
                    .and_then(block_kinds)
                    .and_then(|kinds| kinds.into_iter().last())
                    .is_some_and(|k| k.as_deref() == Some("tool_use"));
                self.pending_tool_use =
                    stop_reason.as_deref() == Some("tool_use") || last_block_is_tool_use;
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
            copilot: None,
        })
    }
}

/// The generated title a prompt gives: its first meaningful line, cut to
/// [`PROMPT_TITLE_CHARS`]. `None` for command echoes and injected context.
fn prompt_title(content: &[u8]) -> Option<String> {
    let text = match skim::string(content) {
        Some(s) => s,
        None => skim::items(content)
            .into_iter()
            .filter(|item| {
                skim::field(item, b"type").and_then(skim::string).as_deref() == Some("text")
            })
            .filter_map(|item| skim::field(item, b"text").and_then(skim::string))
            .find(|t| !is_injected(t))?,
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
