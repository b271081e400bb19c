//! Where each agent keeps its sessions, and the file walk every discovery uses.
//!
//! Discovery lists candidate files with their (size, mtime) stamp without reading them, so the
//! index can tell which files changed since its last look before opening anything. The walk
//! itself is [`crate::walk`]: it never aborts — an unreadable folder, a dangling link or a
//! symlink loop is a warning naming the path, and the rest of the tree is still listed.

use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use cross_agent_protocol::settings as var;
use serde::{Deserialize, Serialize};

use crate::copilot::CopilotPlaces;
use crate::model::Agent;

/// The roots of the three agents' own stores. `None` means that agent's store is not looked at.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StoreRoots {
    /// Claude Code's config folder: `CLAUDE_CONFIG_DIR`, else `~/.claude`, else
    /// `~/.config/claude` (whichever exists). Transcripts are under `projects/`.
    pub claude_config: Option<PathBuf>,
    /// `CODEX_HOME`, else `~/.codex`. Rollouts are under `sessions/` and `archived_sessions/`.
    pub codex_home: Option<PathBuf>,
    /// `GROK_HOME`, else `~/.grok`. Sessions are under `sessions/`.
    pub grok_home: Option<PathBuf>,
    /// The editor `state.vscdb` files the Grok Build GUI extension keeps its tab names in:
    /// `CROSS_AGENT_GROK_NAMES_DB` (`:`-separated), else VS Code's Linux and macOS locations.
    pub grok_names_dbs: Vec<PathBuf>,
    /// True when `grok_names_dbs` came from `CROSS_AGENT_GROK_NAMES_DB`: a missing file is then
    /// worth a warning, while a missing default location just means no VS Code here.
    pub grok_names_dbs_explicit: bool,
    /// Where VS Code's Agent Host keeps Copilot's sessions: the `CROSS_AGENT_COPILOT_*` lists,
    /// else VS Code Stable's and Insiders' user-data folders (see [`crate::copilot::places`]).
    #[serde(default)]
    pub copilot: CopilotPlaces,
}

impl StoreRoots {
    /// The roots this process would use, from its environment and `HOME`.
    pub fn from_env() -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Self::from_vars(home.as_deref(), |name| std::env::var_os(name))
    }

    /// The roots for a given home folder and variable lookup; [`StoreRoots::from_env`] with the
    /// process's own. Split out so tests can drive it without touching the real environment.
    pub fn from_vars(home: Option<&Path>, var: impl Fn(&str) -> Option<OsString>) -> Self {
        let non_empty = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);

        let claude_config = non_empty("CLAUDE_CONFIG_DIR").or_else(|| {
            let home = home?;
            let dot = home.join(".claude");
            let xdg = home.join(".config").join("claude");
            // Prefer whichever exists; `~/.claude` when neither does, so a later first run of
            // Claude Code is picked up without restarting.
            Some(if !dot.exists() && xdg.exists() {
                xdg
            } else {
                dot
            })
        });
        let codex_home = non_empty("CODEX_HOME").or_else(|| home.map(|h| h.join(".codex")));
        let grok_home = non_empty("GROK_HOME").or_else(|| home.map(|h| h.join(".grok")));

        let (grok_names_dbs, grok_names_dbs_explicit) = match var(var::GROK_NAMES_DB) {
            Some(list) if !list.is_empty() => (
                std::env::split_paths(&list)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect(),
                true,
            ),
            _ => (home.map(default_vscdb_paths).unwrap_or_default(), false),
        };

        let copilot = CopilotPlaces::from_vars(home, &var);
        StoreRoots {
            claude_config,
            codex_home,
            grok_home,
            grok_names_dbs,
            grok_names_dbs_explicit,
            copilot,
        }
    }

    /// Every store under one home folder, ignoring the environment: what tests use.
    pub fn under_home(home: &Path) -> Self {
        StoreRoots {
            claude_config: Some(home.join(".claude")),
            codex_home: Some(home.join(".codex")),
            grok_home: Some(home.join(".grok")),
            grok_names_dbs: default_vscdb_paths(home),
            grok_names_dbs_explicit: false,
            copilot: CopilotPlaces::under_home(home),
        }
    }

    /// The store root of one agent.
    pub fn root(&self, agent: Agent) -> Option<&Path> {
        match agent {
            Agent::Claude => self.claude_config.as_deref(),
            Agent::Codex => self.codex_home.as_deref(),
            Agent::Grok => self.grok_home.as_deref(),
            // Copilot's sessions are spread over several editors' folders: see `copilot`.
            Agent::Copilot => None,
        }
    }
}

/// VS Code's global state database on Linux and on macOS (both listed: only one exists).
fn default_vscdb_paths(home: &Path) -> Vec<PathBuf> {
    let tail = Path::new("Code/User/globalStorage/state.vscdb");
    vec![
        home.join(".config").join(tail),
        home.join("Library/Application Support").join(tail),
    ]
}

/// A file's size and modification time: when both match what the index saw, the file is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct FileStamp {
    pub size: u64,
    /// Nanoseconds since the Unix epoch; `None` where the platform does not say.
    pub mtime_ns: Option<i64>,
}

impl FileStamp {
    pub fn of(meta: &Metadata) -> Self {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_nanos()).ok());
        FileStamp {
            size: meta.len(),
            mtime_ns,
        }
    }

    /// The stamp of a path, following links; `None` when it cannot be stat'ed.
    pub fn read(path: &Path) -> Option<Self> {
        fs::metadata(path).ok().map(|m| Self::of(&m))
    }
}

/// One candidate transcript found by discovery, not yet read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    pub agent: Agent,
    /// The file whose lines feed the agent's fold: a Claude transcript, a Codex rollout, a Grok
    /// session's `updates.jsonl` (which may not exist yet: then its stamp is all zero).
    pub path: PathBuf,
    pub stamp: FileStamp,
    /// A `.jsonl.zst` rollout: it cannot be resumed at a byte offset, so it is read whole (with
    /// [`crate::lines::read_zstd_lines`]) whenever its stamp changes.
    pub compressed: bool,
    /// A small file read whole beside the transcript whenever its own stamp changes (Grok's
    /// `summary.json`); feed it with [`crate::TranscriptFold::feed_sidecar`].
    pub sidecar: Option<Sidecar>,
    /// The directory the session works in when it is known without opening the transcript
    /// (Grok files sessions under a folder named for it). Used to decide a scope cheaply.
    pub scope_cwd: Option<PathBuf>,
}

/// A whole-file companion of a transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sidecar {
    pub path: PathBuf,
    pub stamp: FileStamp,
}
