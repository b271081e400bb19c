//! One listing of every session on disk: load the persisted index, bring it up to date, apply
//! the names kept beside the transcripts, and save it again.
//!
//! This is what the `sessions` command and (later) the daemon call. The result holds every
//! session of every agent, newest first — no cap: resolution over it is a scan of a `Vec` in
//! memory, and the index makes producing it cheap (see [`crate::index`]).
//!
//! The cache lives at `$CROSS_AGENT_HOME/cache/sessions-index.bin` (`CROSS_AGENT_HOME` defaults
//! to `~/.cross-agent`). A home that is `/`, the user's home itself, or inside one of the agents'
//! own stores is refused, as the spec asks of `CROSS_AGENT_HOME`: the listing still works, it just
//! starts cold every time and says why.

use std::cmp::Reverse;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::codex::newest_per_thread;
use crate::error::{Result, StoreError};
use crate::grok::read_gui_names;
use crate::index::cache::{self, CACHE_FILE_NAME, CacheLoad};
use crate::index::{IndexStats, RefreshOptions, SessionIndex};
use crate::model::{Agent, Session, StoreWarning, Warnings};
use crate::roots::StoreRoots;

/// `CROSS_AGENT_HOME`: where cross-agent keeps its own state.
pub const HOME_ENV: &str = "CROSS_AGENT_HOME";

/// Options of [`list_sessions`].
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// The cache file to start from and save to; `None` reads every file every time.
    pub cache_file: Option<PathBuf>,
    pub refresh: RefreshOptions,
}

/// Every session on disk, and what it took to list them.
#[derive(Debug, Default)]
pub struct Listing {
    /// Every agent's sessions, newest first (sessions with no recorded activity last).
    pub sessions: Vec<Session>,
    /// Files and lines that were skipped, each naming the file.
    pub warnings: Vec<StoreWarning>,
    pub stats: IndexStats,
    pub timings: Timings,
}

/// Where a listing spent its time, for the benchmark and `--verbose`-style diagnostics.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    pub load_cache: Duration,
    pub refresh: Duration,
    pub names: Duration,
    pub save_cache: Duration,
}

impl Listing {
    /// The sessions of one agent, newest first.
    pub fn of(&self, agent: Agent) -> impl Iterator<Item = &Session> {
        self.sessions.iter().filter(move |s| s.agent == agent)
    }
}

/// Lists every session under `roots`, starting from and updating the cache in `options`.
/// Never fails: a store or cache problem is a warning, and the listing goes on without it.
pub fn list_sessions(roots: &StoreRoots, options: &ScanOptions) -> Listing {
    let mut warnings = Warnings::default();
    let mut timings = Timings::default();

    let started = Instant::now();
    let mut index = match &options.cache_file {
        Some(path) => match cache::load(path) {
            CacheLoad::Loaded(index) => index,
            CacheLoad::Missing | CacheLoad::Outdated => SessionIndex::new(),
            CacheLoad::Corrupt(why) => {
                warnings.push(path, None, format!("{why}; rebuilding it"));
                SessionIndex::new()
            }
        },
        None => SessionIndex::new(),
    };
    timings.load_cache = started.elapsed();

    let started = Instant::now();
    let stats = index.refresh(roots, options.refresh, &mut warnings);
    timings.refresh = started.elapsed();

    let started = Instant::now();
    let sessions = named_sessions(&index, roots, &mut warnings);
    timings.names = started.elapsed();

    let started = Instant::now();
    if let Some(path) = &options.cache_file
        && index.is_dirty()
        && let Err(e) = cache::save(path, &index)
    {
        warnings.push(path, None, format!("cannot save the session cache: {e}"));
    }
    timings.save_cache = started.elapsed();

    Listing {
        sessions,
        warnings: warnings.items,
        stats,
        timings,
    }
}

/// The index's sessions with the names kept outside the transcripts applied (Codex thread names,
/// Grok GUI tab names), one per Codex thread, newest first.
fn named_sessions(
    index: &SessionIndex,
    roots: &StoreRoots,
    warnings: &mut Warnings,
) -> Vec<Session> {
    let mut sessions = index.sessions();

    let codex_names = index.codex_names();
    let mut codex = Vec::new();
    let mut others = Vec::with_capacity(sessions.len());
    for mut session in sessions.drain(..) {
        if session.agent == Agent::Codex {
            codex_names.apply(&mut session);
            codex.push(session);
        } else {
            others.push(session);
        }
    }
    others.extend(newest_per_thread(codex));
    let mut sessions = others;

    if sessions.iter().any(|s| s.agent == Agent::Grok) {
        let gui_names = read_gui_names(roots, warnings);
        if !gui_names.by_session.is_empty() {
            for session in sessions.iter_mut().filter(|s| s.agent == Agent::Grok) {
                gui_names.apply(session);
            }
        }
    }

    sort_newest_first(&mut sessions);
    sessions
}

/// Newest first; ties (and sessions without activity) in a stable order by agent, then id.
pub fn sort_newest_first(sessions: &mut [Session]) {
    sessions.sort_by(|a, b| {
        Reverse(a.last_activity)
            .cmp(&Reverse(b.last_activity))
            .then_with(|| a.agent.cmp(&b.agent))
            .then_with(|| a.session_id.cmp(&b.session_id))
    });
}

/// `CROSS_AGENT_HOME`, else `~/.cross-agent`.
pub fn cross_agent_home() -> Option<PathBuf> {
    match std::env::var_os(HOME_ENV) {
        Some(home) if !home.is_empty() => Some(PathBuf::from(home)),
        _ => std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(|home| PathBuf::from(home).join(".cross-agent")),
    }
}

/// The cache file under `home`, once `home` is known to be safe to keep state in: not `/`, not
/// the user's home folder, not inside (or equal to) any agent's own store, following symlinks.
pub fn cache_file_in(home: &Path, roots: &StoreRoots) -> Result<PathBuf> {
    let resolved = resolve_existing(home);
    let unsafe_home = |why: String| StoreError::UnsafeHome {
        path: home.to_path_buf(),
        why,
    };
    if resolved.parent().is_none() {
        return Err(unsafe_home("it is the filesystem root".to_owned()));
    }
    if let Some(user_home) = std::env::var_os("HOME").filter(|h| !h.is_empty())
        && resolved == resolve_existing(Path::new(&user_home))
    {
        return Err(unsafe_home("it is your home folder".to_owned()));
    }
    for agent in Agent::ALL {
        if let Some(root) = roots.root(agent) {
            let root = resolve_existing(root);
            if resolved.starts_with(&root) {
                return Err(unsafe_home(format!(
                    "it is inside {agent}'s own store {}",
                    root.display()
                )));
            }
        }
    }
    Ok(home.join("cache").join(CACHE_FILE_NAME))
}

/// The cache file this process should use, from `CROSS_AGENT_HOME` / `HOME`.
pub fn cache_file_from_env(roots: &StoreRoots) -> Result<PathBuf> {
    let home = cross_agent_home().ok_or_else(|| StoreError::UnsafeHome {
        path: PathBuf::from("~/.cross-agent"),
        why: "neither CROSS_AGENT_HOME nor HOME is set".to_owned(),
    })?;
    cache_file_in(&home, roots)
}

/// `path` with symlinks resolved as far as it exists, the rest appended as written: a home that
/// does not exist yet can still be compared with the stores.
fn resolve_existing(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in missing.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}
