//! Claude Code's usage: the `message.usage` and `message.model` of each assistant line in
//! `<config>/projects/<slug>/<session>.jsonl` and its sub-agents' `<session>/subagents/*.jsonl`.
//!
//! Claude writes one API reply on several lines (one per content block), each carrying the
//! reply's usage; older versions wrote a partial `output_tokens` on the earlier ones. So a reply
//! — `message.id` + `requestId` — is kept once, with its last, largest usage. Lines of the
//! `<synthetic>` model were made by Claude Code itself, with no API call, and count nothing.
//! Cache writes are split into 5-minute and 1-hour (`cache_creation.ephemeral_5m_input_tokens`
//! / `ephemeral_1h_input_tokens`); without the split, `cache_creation_input_tokens` is taken as
//! 5-minute writes (the default TTL).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use cross_agent_protocol::timestamp::UnixMillis;
use serde::Deserialize;

use crate::lines::LineBuffer;
use crate::tokens::Tokens;

/// The model name Claude Code gives lines it wrote without calling the API.
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

/// One API reply as this file recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeMessage {
    /// `message.id`; a line without one is keyed by its own `uuid`.
    pub message_id: String,
    /// `requestId`, when the line has one.
    pub request_id: Option<String>,
    /// The earliest timestamp of the reply's lines.
    pub timestamp: Option<UnixMillis>,
    pub model: Option<String>,
    pub tokens: Tokens,
    /// `isSidechain`: written by a sub-agent.
    pub sidechain: bool,
}

/// What one Claude transcript records about usage.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClaudeFile {
    pub path: PathBuf,
    /// `sessionId` of the first line that had one.
    pub session_id: Option<String>,
    /// For `<session>/subagents/*.jsonl`: the session folder's name, the parent it counts for.
    pub parent_session: Option<String>,
    pub cwd: Option<String>,
    /// The earliest timestamp in the file.
    pub started: Option<UnixMillis>,
    /// Each reply once, in first-seen order.
    pub messages: Vec<ClaudeMessage>,
    /// Lines that were not JSON (a damaged file), counted so a caller can say so.
    pub bad_lines: u64,
}

/// Reads one transcript from any number of appended pieces.
#[derive(Debug, Clone, Default)]
pub struct ClaudeReader {
    file: ClaudeFile,
    lines: LineBuffer,
    by_key: HashMap<(String, Option<String>), usize>,
}

#[derive(Deserialize)]
struct Line {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default, rename = "sessionId")]
    session_id: Option<String>,
    #[serde(default, rename = "requestId")]
    request_id: Option<String>,
    #[serde(default)]
    uuid: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default, rename = "isSidechain")]
    is_sidechain: bool,
    #[serde(default)]
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation: Option<CacheCreation>,
}

#[derive(Deserialize)]
struct CacheCreation {
    #[serde(default)]
    ephemeral_5m_input_tokens: u64,
    #[serde(default)]
    ephemeral_1h_input_tokens: u64,
}

impl Usage {
    fn tokens(&self) -> Tokens {
        let (write_5m, write_1h) = match &self.cache_creation {
            Some(split)
                if split.ephemeral_5m_input_tokens + split.ephemeral_1h_input_tokens > 0
                    || self.cache_creation_input_tokens == 0 =>
            {
                (
                    split.ephemeral_5m_input_tokens,
                    split.ephemeral_1h_input_tokens,
                )
            }
            _ => (self.cache_creation_input_tokens, 0),
        };
        Tokens {
            input: self.input_tokens,
            output: self.output_tokens,
            cache_write_5m: write_5m,
            cache_write_1h: write_1h,
            cache_read: self.cache_read_input_tokens,
        }
    }
}

impl ClaudeReader {
    /// A reader for the transcript at `path`; a file under `<session>/subagents/` counts for
    /// that session.
    pub fn new(path: &Path) -> Self {
        Self {
            file: ClaudeFile {
                path: path.to_path_buf(),
                parent_session: parent_of_subagent_file(path),
                ..ClaudeFile::default()
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

    /// What has been read so far, a half-written last line left out.
    pub fn file(&self) -> &ClaudeFile {
        &self.file
    }

    /// The file read whole: a last line without a newline is taken when it is whole JSON.
    pub fn finish(mut self) -> ClaudeFile {
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
        if self.file.session_id.is_none() {
            self.file.session_id = line.session_id.clone();
        }
        if self.file.cwd.is_none() {
            self.file.cwd = line.cwd.clone();
        }
        if line.kind.as_deref() != Some("assistant") {
            return;
        }
        let Some(message) = line.message else {
            return;
        };
        let Some(usage) = message.usage else {
            return;
        };
        if message.model.as_deref() == Some(SYNTHETIC_MODEL) {
            return;
        }
        let Some(message_id) = message.id.or(line.uuid) else {
            return;
        };
        let tokens = usage.tokens();
        let key = (message_id, line.request_id);
        match self.by_key.get(&key) {
            Some(&at) => {
                let kept = &mut self.file.messages[at];
                // The last line's usage is the reply's; an earlier, larger one (never seen in
                // practice) is not given up for a smaller later one.
                if tokens.total() >= kept.tokens.total() {
                    kept.tokens = tokens;
                }
                if kept.model.is_none() {
                    kept.model = message.model;
                }
                kept.timestamp = match (kept.timestamp, timestamp) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            None => {
                self.by_key.insert(key.clone(), self.file.messages.len());
                self.file.messages.push(ClaudeMessage {
                    message_id: key.0,
                    request_id: key.1,
                    timestamp,
                    model: message.model,
                    tokens,
                    sidechain: line.is_sidechain,
                });
            }
        }
    }
}

/// Reads a whole transcript's bytes.
pub fn read(path: &Path, bytes: &[u8]) -> ClaudeFile {
    let mut reader = ClaudeReader::new(path);
    reader.feed(bytes);
    reader.finish()
}

/// `<…>/<session>/subagents/<file>.jsonl` → `<session>`.
pub fn parent_of_subagent_file(path: &Path) -> Option<String> {
    let folder = path.parent()?;
    if folder.file_name()? != "subagents" {
        return None;
    }
    Some(folder.parent()?.file_name()?.to_str()?.to_owned())
}
