//! Finding one session by id in any agent's store and reading it whole: Claude Code, Codex and
//! Grok through the bridge's own readers, Cursor and Antigravity through the foreign ones. All
//! read-only.

use std::path::{Path, PathBuf};

use cross_agent_stores::foreign::{ForeignSession, antigravity, cursor};
use cross_agent_stores::scan::{self, ScanOptions};
use cross_agent_stores::turns::{Turn, read_turns};
use cross_agent_stores::{Agent, StoreRoots, Warnings};
use serde::{Deserialize, Serialize};

use crate::error::{HandoffError, Result};

/// The family of agent program a session belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Claude,
    Codex,
    Grok,
    Cursor,
    Antigravity,
}

impl Family {
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Claude => "claude",
            Family::Codex => "codex",
            Family::Grok => "grok",
            Family::Cursor => "cursor",
            Family::Antigravity => "antigravity",
        }
    }

    pub fn product_name(self) -> &'static str {
        match self {
            Family::Claude => "Claude Code",
            Family::Codex => "Codex",
            Family::Grok => "Grok Build",
            Family::Cursor => "Cursor",
            Family::Antigravity => "Antigravity",
        }
    }

    /// The family of a transcript agent; Copilot's sessions have no transcript a handoff
    /// reads in this build.
    fn of(agent: Agent) -> Option<Family> {
        match agent {
            Agent::Claude => Some(Family::Claude),
            Agent::Codex => Some(Family::Codex),
            Agent::Grok => Some(Family::Grok),
            Agent::Copilot => None,
        }
    }
}

/// The agents whose sessions a handoff reads from their transcripts (Copilot's are not read in
/// this build).
const TRANSCRIPT_AGENTS: [Agent; 3] = [Agent::Claude, Agent::Codex, Agent::Grok];

/// One session, read whole.
#[derive(Debug, Clone)]
pub struct SourceSession {
    pub family: Family,
    pub session_id: String,
    pub title: Option<String>,
    pub cwd: Option<PathBuf>,
    /// The working directory was derived from the paths worked on (Antigravity records none).
    pub cwd_derived: bool,
    /// The transcript or store it was read from.
    pub path: PathBuf,
    pub turns: Vec<Turn>,
}

/// Where the stores are.
#[derive(Debug, Clone)]
pub struct Stores {
    /// Claude Code's, Codex's and Grok's roots.
    pub roots: StoreRoots,
    /// The session index's cache file, when the bridge's home allows one.
    pub cache_file: Option<PathBuf>,
    /// Cursor's `chats` folder.
    pub cursor_chats: PathBuf,
    /// Antigravity's `brain` folders (CLI and IDE).
    pub antigravity_brains: Vec<PathBuf>,
}

impl Stores {
    /// The stores of this user (from the environment and `home`).
    pub fn under(home: &Path, cache_file: Option<PathBuf>) -> Stores {
        Stores {
            roots: StoreRoots::from_env(),
            cache_file,
            cursor_chats: cursor::chats_root(home),
            antigravity_brains: antigravity::brain_roots(home),
        }
    }
}

/// Finds session `id` in every store and reads it. Cursor and Antigravity are looked up by
/// their folder names first (cheap); the others through the session index.
pub fn locate(stores: &Stores, id: &str, warnings: &mut Warnings) -> Result<SourceSession> {
    let read_foreign = |family, found: std::result::Result<ForeignSession, _>| match found {
        Ok(s) => Ok(from_foreign(family, s)),
        Err(source) => Err(HandoffError::Store {
            id: id.to_owned(),
            source,
        }),
    };
    // A session id is a single folder name; anything with a separator would climb out.
    let plain_id = !id.is_empty() && !id.contains(['/', '\\']) && id != "." && id != "..";
    if plain_id {
        if let Some(store) = cursor::find_session(&stores.cursor_chats, id) {
            return read_foreign(Family::Cursor, cursor::read_session(&store, warnings));
        }
        if let Some(log) = antigravity::find_session(&stores.antigravity_brains, id) {
            return read_foreign(
                Family::Antigravity,
                antigravity::read_session(&log, warnings),
            );
        }
    }
    let listing = scan::list_sessions(
        &stores.roots,
        &ScanOptions {
            cache_file: stores.cache_file.clone(),
            refresh: Default::default(),
            agents: TRANSCRIPT_AGENTS.to_vec(),
        },
    );
    warnings.items.extend(listing.warnings);
    let Some(session) = listing.sessions.into_iter().find(|s| s.session_id == id) else {
        let mut looked: Vec<String> = TRANSCRIPT_AGENTS
            .iter()
            .filter_map(|a| stores.roots.root(*a).map(|r| r.display().to_string()))
            .collect();
        looked.push(stores.cursor_chats.display().to_string());
        looked.extend(
            stores
                .antigravity_brains
                .iter()
                .map(|r| r.display().to_string()),
        );
        return Err(HandoffError::SessionNotFound {
            id: id.to_owned(),
            looked: looked.join(", "),
        });
    };
    let transcript = read_turns(session.agent, &session.path, warnings).map_err(|source| {
        HandoffError::Store {
            id: id.to_owned(),
            source,
        }
    })?;
    let Some(family) = Family::of(session.agent) else {
        return Err(HandoffError::SessionNotFound {
            id: id.to_owned(),
            looked: "the Claude Code, Codex and Grok stores".to_owned(),
        });
    };
    Ok(SourceSession {
        family,
        session_id: session.session_id,
        title: session.title,
        cwd: session.cwd,
        cwd_derived: false,
        path: session.path,
        turns: transcript.turns,
    })
}

/// Reads a Claude, Codex or Grok transcript file directly (the benchmark, and callers that
/// already hold the path).
pub fn read_transcript(
    agent: Agent,
    session_id: &str,
    path: &Path,
    cwd: Option<PathBuf>,
    warnings: &mut Warnings,
) -> Result<SourceSession> {
    let Some(family) = Family::of(agent) else {
        return Err(HandoffError::SessionNotFound {
            id: session_id.to_owned(),
            looked: "the Claude Code, Codex and Grok stores".to_owned(),
        });
    };
    let transcript = read_turns(agent, path, warnings).map_err(|source| HandoffError::Store {
        id: session_id.to_owned(),
        source,
    })?;
    Ok(SourceSession {
        family,
        session_id: session_id.to_owned(),
        title: None,
        cwd,
        cwd_derived: false,
        path: path.to_path_buf(),
        turns: transcript.turns,
    })
}

fn from_foreign(family: Family, s: ForeignSession) -> SourceSession {
    SourceSession {
        family,
        session_id: s.session_id,
        title: s.title,
        cwd: s.cwd,
        cwd_derived: s.cwd_derived,
        path: s.path,
        turns: s.turns,
    }
}
