//! The one model every agent's store is read into, and the incremental-read contract the index
//! relies on.
//!
//! A transcript is folded line by line into a small serialisable state. The index persists that
//! state with the byte offset of the last complete line, so when a file grows it resumes the fold
//! from the offset and reads only the appended bytes — a `custom-title` record appended anywhere
//! is still seen, because every line after the offset passes through the fold.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Which agent program a session belongs to: the protocol's type, so a session read here is
/// named the same way on the wire.
pub use cross_agent_protocol::bridge::Agent;

/// Milliseconds since the Unix epoch, UTC: the protocol's one timestamp type. Transcripts record
/// RFC 3339 strings; comparing and storing integers keeps the index small and sorting cheap.
pub use cross_agent_protocol::timestamp::UnixMillis;

/// One agent session found on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub agent: Agent,
    pub session_id: String,
    /// The directory the session works in, as the agent recorded it (never guessed from a
    /// folder name that loses information).
    pub cwd: Option<PathBuf>,
    pub title: Option<String>,
    /// True when a person named the session (Claude `custom-title`, a Codex thread name, a Grok
    /// manual title or GUI tab name); false for a title generated from the first message.
    pub title_is_assigned: bool,
    pub first_activity: Option<UnixMillis>,
    pub last_activity: Option<UnixMillis>,
    /// A turn is running (e.g. Claude's last assistant record stopped on `tool_use`).
    pub is_working: bool,
    /// The transcript (or, for Grok, the session folder; for Copilot, the session's
    /// `session.db` or the host catalog) this was read from.
    pub path: PathBuf,
    /// What only a Copilot session has (boxed: the other agents' 22,000 sessions pay a pointer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copilot: Option<Box<CopilotDetails>>,
}

impl Session {
    /// The bytes its strings hold (capacities), not counting the record itself.
    pub fn heap_bytes(&self) -> usize {
        self.session_id.capacity()
            + self.cwd.as_ref().map_or(0, PathBuf::capacity)
            + self.title.as_ref().map_or(0, String::capacity)
            + self.path.capacity()
            + self
                .copilot
                .as_ref()
                .map_or(0, |_| std::mem::size_of::<CopilotDetails>())
    }
}

/// A Copilot session's own facts: the protocol's type.
pub use cross_agent_protocol::bridge::CopilotDetails;

/// Something wrong with one file or line that was skipped; the rest of the listing goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreWarning {
    pub path: PathBuf,
    /// 1-based line number, where it helps.
    pub line: Option<u64>,
    pub message: String,
    /// For a skipped line, what was wrong with it: a listing counts these per file
    /// ([`crate::summary`]) rather than saying each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<LineProblem>,
}

/// Why a line of a transcript was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineProblem {
    /// Not JSON, or not the JSON object a record is.
    NotJson,
    /// Longer than [`crate::lines::MAX_LINE_BYTES`]: thrown away unread.
    TooLong,
    /// JSON, but a record of a known type whose fields do not decode.
    BadRecord,
}

impl fmt::Display for StoreWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Collects warnings while a store is read.
#[derive(Debug, Default)]
pub struct Warnings {
    pub items: Vec<StoreWarning>,
}

impl Warnings {
    pub fn push(&mut self, path: &Path, line: Option<u64>, message: impl Into<String>) {
        self.add(StoreWarning {
            path: path.to_path_buf(),
            line,
            message: message.into(),
            problem: None,
        });
    }

    /// A line skipped for `problem`; `message` says what exactly.
    pub fn push_line(
        &mut self,
        at: LineContext<'_>,
        problem: LineProblem,
        message: impl Into<String>,
    ) {
        self.add(StoreWarning {
            path: at.path.to_path_buf(),
            line: Some(at.line),
            message: message.into(),
            problem: Some(problem),
        });
    }

    fn add(&mut self, warning: StoreWarning) {
        // Debug, not warn: every caller reports the collected warnings itself (the CLI prints
        // them), so a `warn!` here would show each one twice.
        tracing::debug!("{warning}");
        self.items.push(warning);
    }
}

/// Where one line sits, so a fold can name it in a warning.
#[derive(Debug, Clone, Copy)]
pub struct LineContext<'a> {
    pub path: &'a Path,
    /// 1-based line number within the file.
    pub line: u64,
}

/// The incremental-read contract: a transcript's lines folded into a state that can be persisted
/// and resumed when the file grows.
///
/// Implementations must accept any bytes (non-JSON, unknown record types, garbage) without
/// panicking: a bad line becomes a warning and the fold goes on.
pub trait TranscriptFold: Default + Serialize + DeserializeOwned {
    /// Folds one complete line (without its trailing newline).
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings);

    /// The session this file describes so far, or `None` when it is not one to list (no user
    /// message yet, sidechain-only, a sub-agent thread, …).
    fn session(&self, path: &Path) -> Option<Session>;

    /// Folds a small side file read whole beside the transcript, each time its own stamp
    /// changes (Grok's `summary.json`, which Grok rewrites rather than appends to). The default
    /// ignores it: Claude and Codex have none.
    fn feed_sidecar(&mut self, bytes: &[u8], path: &Path, warnings: &mut Warnings) {
        let _ = (bytes, path, warnings);
    }
}

impl From<&Session> for cross_agent_protocol::bridge::IndexedSession {
    fn from(s: &Session) -> Self {
        cross_agent_protocol::bridge::IndexedSession {
            agent: s.agent,
            session_id: s.session_id.clone(),
            cwd: s.cwd.as_ref().map(|p| p.to_string_lossy().into_owned()),
            title: s.title.clone(),
            title_is_assigned: s.title_is_assigned,
            first_activity: s.first_activity.map(|t| t.0),
            last_activity: s.last_activity.map(|t| t.0),
            is_working: s.is_working,
            path: s.path.to_string_lossy().into_owned(),
            copilot: s.copilot.as_deref().cloned(),
        }
    }
}

impl From<cross_agent_protocol::bridge::IndexedSession> for Session {
    fn from(s: cross_agent_protocol::bridge::IndexedSession) -> Self {
        Session {
            agent: s.agent,
            session_id: s.session_id,
            cwd: s.cwd.map(PathBuf::from),
            title: s.title,
            title_is_assigned: s.title_is_assigned,
            first_activity: s.first_activity.map(UnixMillis),
            last_activity: s.last_activity.map(UnixMillis),
            is_working: s.is_working,
            path: PathBuf::from(s.path),
            copilot: s.copilot.map(Box::new),
        }
    }
}
