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

use std::path::Path;
use std::sync::Arc;

use hashbrown::HashTable;

use cross_agent_protocol::timestamp::UnixMillis;
use serde::Deserialize;

use crate::calls::{Call, Calls};
use crate::keys::{CallKey, ModelId};
use crate::lines::{self, LineRecords, Reader};
use crate::tokens::Tokens;

/// The model name Claude Code gives lines it wrote without calling the API.
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

/// One API reply as this file recorded it: `message.id` + `requestId` (a line without a
/// `message.id` is keyed by its own `uuid`) hashed as its key ([`key_of`]), the earliest
/// timestamp of its lines, its model and its largest usage.
pub type ClaudeMessage = Call;

/// The key of the reply `message_id` of request `request_id`.
pub fn key_of(message_id: &str, request_id: Option<&str>) -> CallKey {
    CallKey::of(|w| {
        w.str(message_id).opt_str(request_id);
    })
}

/// What one Claude transcript records about usage.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaudeFile {
    /// Shared: the live index keys the file by it and its ledger orders files by it.
    pub path: Arc<Path>,
    /// `sessionId` of the first line that had one (shared, not copied, with the file's share
    /// of the calls in the live index: [`crate::Share::session_id`]).
    pub session_id: Option<crate::Name>,
    /// For `<session>/subagents/*.jsonl`: the session folder's name, the parent it counts for
    /// (shared with the file's share, as `session_id` is).
    pub parent_session: Option<Arc<str>>,
    /// Shared with every file that names it ([`crate::keys::shared_cwd`]).
    pub cwd: Option<crate::keys::Cwd>,
    /// The earliest timestamp in the file.
    pub started: crate::lines::Earliest,
    /// Each reply once, in first-seen order.
    pub messages: Calls,
    /// Lines that were not JSON (a damaged file), counted so a caller can say so.
    pub bad_lines: u64,
}

/// Reads one transcript from any number of appended pieces.
pub type ClaudeReader = Reader<ClaudeLines>;

/// What a Claude transcript's lines are taken for: each reply once, by its key.
#[derive(Debug, Clone, Default)]
pub struct ClaudeLines {
    /// Each reply's place in the file's `messages`, found by its key: the table holds only the
    /// place (4 bytes), the key is the message's own. Claude writes a reply's lines together,
    /// but a reply's lines apart (resumed, interleaved sub-agent lines) must still be one reply,
    /// so every reply is findable, not only the last.
    places: HashTable<u32>,
}

impl ClaudeLines {
    /// Makes the table again when [`LineRecords::shrink`] dropped it and the file's replies
    /// are read on: every reply is in it once (a new key is pushed, a known one set in place).
    fn restore(&mut self, file: &ClaudeFile) {
        let messages = &file.messages;
        if self.places.len() == messages.len() {
            return;
        }
        self.places.clear();
        self.places.reserve(messages.len(), |&at| {
            messages.key(at as usize).map_or(0, |k| k.short())
        });
        for at in 0..messages.len() {
            if let Some(key) = messages.key(at) {
                self.insert(file, key, at);
            }
        }
    }

    /// The place of the reply with this key, if the file has it.
    fn find(&self, file: &ClaudeFile, key: CallKey) -> Option<usize> {
        self.places
            .find(key.short(), |&at| {
                file.messages.key(at as usize) == Some(key)
            })
            .map(|&at| at as usize)
    }

    /// Notes the reply at `at` (not in the file before).
    fn insert(&mut self, file: &ClaudeFile, key: CallKey, at: usize) {
        let messages = &file.messages;
        self.places.insert_unique(key.short(), at as u32, |&at| {
            messages.key(at as usize).map_or(0, |k| k.short())
        });
    }
}

/// The fields of a transcript line the reader looks at (public only as [`ClaudeLines`]'s line
/// type; nothing outside reads them).
#[derive(Deserialize)]
pub struct Line {
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

impl LineRecords for ClaudeLines {
    type Line = Line;
    type File = ClaudeFile;

    /// A file under `<session>/subagents/` counts for that session.
    fn start(path: &Path) -> ClaudeFile {
        ClaudeFile {
            path: Arc::from(path),
            session_id: None,
            parent_session: parent_of_subagent_file(path).map(Arc::from),
            cwd: None,
            started: crate::lines::Earliest::default(),
            messages: Calls::default(),
            bad_lines: 0,
        }
    }

    fn timestamp(line: &Line) -> Option<UnixMillis> {
        line.timestamp
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339)
    }

    fn started(file: &mut ClaudeFile) -> &mut crate::lines::Earliest {
        &mut file.started
    }

    fn bad_lines(file: &mut ClaudeFile) -> &mut u64 {
        &mut file.bad_lines
    }

    /// The place table is dropped: the live index keeps every file's reader, and most files
    /// are never appended to again, so a table of 4 bytes a reply (plus a control byte and up
    /// to half again empty) would be kept for nothing; the next line with a reply makes it
    /// again from the replies ([`ClaudeLines::restore`]).
    fn shrink(&mut self, file: &mut ClaudeFile) {
        self.places = HashTable::new();
        // Only a list no share holds: another's would be copied to be trimmed.
        if let Some(messages) = Arc::get_mut(&mut file.messages) {
            messages.shrink_to_fit();
        }
    }

    fn renew(file: &mut ClaudeFile) {
        crate::names::renew(&mut file.path, &mut [&mut file.session_id]);
        crate::calls::renew_text(&mut file.parent_session);
        crate::calls::renew(&mut file.messages);
    }

    fn record(&mut self, file: &mut ClaudeFile, line: Line, timestamp: Option<UnixMillis>) {
        if file.session_id.is_none() {
            // Held in the path when the file is named by it (nearly always).
            file.session_id = line
                .session_id
                .as_deref()
                .map(|id| crate::Name::in_path(id, &file.path));
        }
        if file.cwd.is_none() {
            file.cwd = line.cwd.as_deref().map(crate::keys::shared_cwd);
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
        let key = key_of(&message_id, line.request_id.as_deref());
        let model = message.model.as_deref().map(ModelId::intern);
        self.restore(file);
        match self.find(file, key) {
            Some(at) => {
                let messages = Arc::make_mut(&mut file.messages);
                let Some(mut kept) = messages.get(at) else {
                    return;
                };
                // The last line's usage is the reply's; an earlier, larger one (never seen in
                // practice) is not given up for a smaller later one.
                if tokens.total() >= kept.tokens.total() {
                    kept.tokens = tokens;
                }
                if kept.model.is_none() {
                    kept.model = model;
                }
                kept.timestamp = match (kept.timestamp, timestamp) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                messages.set(at, kept);
            }
            None => {
                let at = file.messages.len();
                Arc::make_mut(&mut file.messages).push(Call {
                    key,
                    timestamp,
                    model,
                    tokens,
                });
                self.insert(file, key, at);
            }
        }
    }
}

/// Reads a whole transcript's bytes.
pub fn read(path: &Path, bytes: &[u8]) -> ClaudeFile {
    lines::read::<ClaudeLines>(path, bytes)
}

/// `<…>/<session>/subagents/<file>.jsonl` → `<session>`.
pub fn parent_of_subagent_file(path: &Path) -> Option<String> {
    let folder = path.parent()?;
    if folder.file_name()? != "subagents" {
        return None;
    }
    Some(folder.parent()?.file_name()?.to_str()?.to_owned())
}
