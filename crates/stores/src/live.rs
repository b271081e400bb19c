//! The session index kept live in a long-lived process (the daemon): listed once, then kept
//! current by file-system notifications, so a listing with nothing changed walks nothing.
//!
//! Each agent's listing is held whole ([`LiveScanner`]). A notification under an agent's store
//! (inotify / FSEvents / ReadDirectoryChangesW, through the `notify` crate) marks that agent
//! stale; the next listing, or [`LiveScanner::catch_up`] meanwhile, refreshes it through the
//! in-memory [`Scanner`], which re-reads only the appended bytes. Notifications can be lost
//! (a queue overflow, a store created after the watch began, a filesystem that sends none), so
//! every agent is also walked again once its listing is older than the re-walk interval: the
//! safety net. The watch is set up before a walk, so a change made during one marks it stale
//! again rather than being missed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::codex::session_index_path;
use crate::model::{Agent, Session, StoreWarning, UnixMillis};
use crate::render::{Chosen, RenderedAgent, write_listing};
use crate::resolve::ActiveWindow;
use crate::roots::StoreRoots;
use crate::scan::{Listing, ScanOptions, Scanner, sort_newest_first};

/// How long a listing is trusted without a notification before its store is walked again, when
/// the caller does not say.
pub const DEFAULT_REWALK: Duration = Duration::from_secs(30);

/// How a [`LiveScanner`] keeps current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveOptions {
    /// A store is walked again once its listing is this old, whatever the notifications said.
    pub rewalk: Duration,
    /// Whether to ask for notifications at all; without them (a filesystem that sends none,
    /// such as some network mounts) listings are as current as the re-walk keeps them.
    pub notifications: bool,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            rewalk: DEFAULT_REWALK,
            notifications: true,
        }
    }
}

/// A [`Scanner`] whose listings are kept current by notifications and a periodic re-walk.
#[derive(Debug)]
pub struct LiveScanner {
    scanner: Scanner,
    live: LiveOptions,
    watch: Option<Watch>,
    /// Each agent's last listing, by [`agent_slot`].
    held: [Option<Held>; 3],
}

/// One agent's listing as last walked.
#[derive(Debug)]
struct Held {
    walked: Instant,
    sessions: Vec<Session>,
    warnings: Vec<StoreWarning>,
    /// The sessions as `sessions --json` prints them, made on the first listing that asks and
    /// then kept current by every walk (see [`RenderedAgent::update`]).
    rendered: Option<RenderedAgent>,
}

/// What [`LiveScanner::render_listing`] wrote.
#[derive(Debug, Default)]
pub struct RenderedListing {
    /// How many sessions the listing holds.
    pub sessions: usize,
    pub warnings: Vec<StoreWarning>,
}

/// The notifications watched for one set of roots.
struct Watch {
    roots: StoreRoots,
    /// Set by the watcher's thread when something changed under an agent's store.
    stale: Arc<[AtomicBool; 3]>,
    /// The folders that did not exist when the watch began: one appearing re-arms the watch.
    missing: Vec<PathBuf>,
    /// Kept for its drop, which ends the watch; `None` where notifications are unavailable.
    _watcher: Option<RecommendedWatcher>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("roots", &self.roots)
            .field("missing", &self.missing)
            .finish_non_exhaustive()
    }
}

/// A place a notification under which concerns an agent.
struct Watched {
    agent: Agent,
    path: PathBuf,
    /// A folder watched with everything below it, or (`false`) only the named files in it.
    recursive: bool,
    /// For a non-recursive watch, the entries whose changes count.
    names: Vec<std::ffi::OsString>,
}

impl LiveScanner {
    /// A live index starting from the cache in `options`.
    pub fn new(options: ScanOptions, live: LiveOptions) -> LiveScanner {
        LiveScanner {
            scanner: Scanner::new(options),
            live,
            watch: None,
            held: [None, None, None],
        }
    }

    /// The sessions of `agents` (all when empty), newest first, as [`Scanner::list_agents`]
    /// gives them: from memory when nothing changed under their stores, else after refreshing
    /// the agents whose stores did. Listing other roots than the last call moves the watch.
    pub fn list_agents(&mut self, roots: &StoreRoots, agents: &[Agent]) -> Listing {
        let agents: Vec<Agent> = if agents.is_empty() {
            Agent::ALL.to_vec()
        } else {
            let mut agents = agents.to_vec();
            agents.sort();
            agents.dedup();
            agents
        };
        self.watch_roots(roots);
        let mut listing = Listing::default();
        for &agent in &agents {
            if let Some(walked) = self.refresh_if_stale(roots, agent) {
                listing.stats = walked.stats;
                listing.walk = walked.walk;
                listing.timings = walked.timings;
            }
        }
        for agent in &agents {
            if let Some(held) = &self.held[agent_slot(*agent)] {
                listing.sessions.extend(held.sessions.iter().cloned());
                listing.warnings.extend(held.warnings.iter().cloned());
            }
        }
        if agents.len() > 1 {
            sort_newest_first(&mut listing.sessions);
        }
        listing
    }

    /// Writes into `out` the listing `cross-agent sessions --json` prints: the sessions of
    /// `agents` (in that order) that `admit` lets through, at most `limit` of each, newest
    /// first, with `is_active` as `window` has it at `now` — copied from the renderings kept
    /// per agent, which are made again only when that agent's sessions changed. Brings the
    /// agents current first, as [`LiveScanner::list_agents`] does.
    pub fn render_listing(
        &mut self,
        roots: &StoreRoots,
        agents: &[Agent],
        admit: impl Fn(&Session) -> bool,
        limit: Option<usize>,
        (window, now): (ActiveWindow, UnixMillis),
        out: &mut Vec<u8>,
    ) -> RenderedListing {
        let mut wanted: Vec<Agent> = Vec::new();
        for agent in agents {
            if !wanted.contains(agent) {
                wanted.push(*agent);
            }
        }
        self.watch_roots(roots);
        for &agent in &wanted {
            self.refresh_if_stale(roots, agent);
            if let Some(held) = &mut self.held[agent_slot(agent)]
                && held.rendered.is_none()
            {
                held.rendered = Some(RenderedAgent::new(&held.sessions));
            }
        }
        let mut result = RenderedListing::default();
        let empty = RenderedAgent::default();
        let chosen: Vec<(Agent, Chosen<'_>)> = wanted
            .iter()
            .map(|&agent| {
                let Some(held) = &self.held[agent_slot(agent)] else {
                    return (agent, Chosen::Sessions(Vec::new()));
                };
                result.warnings.extend(held.warnings.iter().cloned());
                let mut indices: Vec<usize> = held
                    .sessions
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| admit(s))
                    .map(|(i, _)| i)
                    .collect();
                if let Some(limit) = limit {
                    indices.truncate(limit);
                }
                result.sessions += indices.len();
                let chosen = Chosen::Kept {
                    sessions: &held.sessions,
                    rendered: held.rendered.as_ref().unwrap_or(&empty),
                    indices,
                };
                (agent, chosen)
            })
            .collect();
        write_listing(out, &chosen, window, now);
        result
    }

    /// Calls `f` with `agent`'s sessions, newest first, brought current as
    /// [`LiveScanner::list_agents`] does but lent rather than copied: a resolution looks at
    /// 10,000 sessions and keeps one.
    pub fn with_sessions<R>(
        &mut self,
        roots: &StoreRoots,
        agent: Agent,
        f: impl FnOnce(&[Session], &[StoreWarning]) -> R,
    ) -> R {
        self.watch_roots(roots);
        self.refresh_if_stale(roots, agent);
        match &self.held[agent_slot(agent)] {
            Some(held) => f(&held.sessions, &held.warnings),
            None => f(&[], &[]),
        }
    }

    /// Marks `agent`'s listing stale, so the next listing walks its store without waiting for a
    /// notification: for a change the owner made itself (a turn it ran wrote a transcript), which
    /// the next listing must show even if the notification is still on its way.
    pub fn mark_stale(&self, agent: Agent) {
        if let Some(watch) = &self.watch {
            watch.stale[agent_slot(agent)].store(true, Ordering::SeqCst);
        }
    }

    /// Refreshes every agent listed before whose store changed or whose re-walk is due, so the
    /// next listing finds it current. For a timer of the owning process.
    pub fn catch_up(&mut self) {
        let Some(roots) = self.watch.as_ref().map(|watch| watch.roots.clone()) else {
            return;
        };
        self.watch_roots(&roots);
        for agent in Agent::ALL {
            if self.held[agent_slot(agent)].is_some() {
                self.refresh_if_stale(&roots, agent);
            }
        }
    }

    /// Walks `agent`'s store when its listing is missing, marked stale, or older than the
    /// re-walk interval; returns that walk's listing (its sessions moved into `held`).
    fn refresh_if_stale(&mut self, roots: &StoreRoots, agent: Agent) -> Option<Listing> {
        let slot = agent_slot(agent);
        // Cleared before the walk: a change made while it runs marks the agent stale again.
        let notified = self
            .watch
            .as_ref()
            .is_some_and(|watch| watch.stale[slot].swap(false, Ordering::SeqCst));
        let due = self.held[slot]
            .as_ref()
            .is_none_or(|held| held.walked.elapsed() >= self.live.rewalk);
        if !notified && !due {
            return None;
        }
        let walked = Instant::now();
        let mut listing = self.scanner.list_agents(roots, &[agent]);
        let sessions = std::mem::take(&mut listing.sessions);
        // A walk that changed nothing (the periodic one, or a notification about a file that
        // adds no session, name or activity) keeps the rendering; one that changed a few
        // sessions renders those few again, here, off the request (the index loop's catch-up).
        let rendered = match self.held[slot].take() {
            Some(held) if held.sessions == sessions => held.rendered,
            Some(Held {
                sessions: before,
                rendered: Some(kept),
                ..
            }) => Some(RenderedAgent::update(&before, &kept, &sessions)),
            _ => None,
        };
        self.held[slot] = Some(Held {
            walked,
            sessions,
            warnings: std::mem::take(&mut listing.warnings),
            rendered,
        });
        Some(listing)
    }

    /// Watches `roots` (unless already watched and no missing folder appeared): a new watch
    /// drops the listings held for other roots.
    fn watch_roots(&mut self, roots: &StoreRoots) {
        if let Some(watch) = &self.watch
            && watch.roots == *roots
            && !watch.missing.iter().any(|path| path.exists())
        {
            return;
        }
        let same_roots = self
            .watch
            .as_ref()
            .is_some_and(|watch| watch.roots == *roots);
        if !same_roots {
            self.held = [None, None, None];
        }
        // The old watcher goes first: two watches of the same folders would both report.
        self.watch = None;
        let watch = start_watch(roots, self.live.notifications);
        if same_roots {
            // A folder appeared that was not watched: what is in it was never notified.
            for flag in watch.stale.iter() {
                flag.store(true, Ordering::SeqCst);
            }
        }
        self.watch = Some(watch);
    }
}

/// The index of an agent's slot in per-agent arrays.
fn agent_slot(agent: Agent) -> usize {
    match agent {
        Agent::Claude => 0,
        Agent::Codex => 1,
        Agent::Grok => 2,
    }
}

/// Every place whose changes alter an agent's listing: the folders the walk lists (with all
/// below them), and the side files read whole (Codex's names file, the Grok GUI's tab names).
fn watched_places(roots: &StoreRoots) -> Vec<Watched> {
    let mut places = Vec::new();
    let tree = |agent, path: PathBuf| Watched {
        agent,
        path,
        recursive: true,
        names: Vec::new(),
    };
    let files = |agent, path: &Path| {
        let name = path.file_name().map(|n| n.to_owned())?;
        let mut wal = name.clone();
        wal.push("-wal");
        Some(Watched {
            agent,
            path: path.parent()?.to_path_buf(),
            recursive: false,
            names: vec![name, wal],
        })
    };
    if let Some(root) = crate::claude::walk_root(roots) {
        places.push(tree(Agent::Claude, root.root));
    }
    for root in crate::codex::walk_roots(roots) {
        places.push(tree(Agent::Codex, root.root));
    }
    if let Some(home) = roots.codex_home.as_deref() {
        places.extend(files(Agent::Codex, &session_index_path(home)));
    }
    if let Some(root) = crate::grok::walk_root(roots) {
        places.push(tree(Agent::Grok, root.root));
    }
    for db in &roots.grok_names_dbs {
        places.extend(files(Agent::Grok, db));
    }
    places
}

/// Starts watching `roots`. A place that does not exist, or that cannot be watched, is left to
/// the re-walk; one that does not exist re-arms the watch when it appears.
fn start_watch(roots: &StoreRoots, notifications: bool) -> Watch {
    let stale: Arc<[AtomicBool; 3]> = Arc::new(Default::default());
    let places = Arc::new(watched_places(roots));
    let handler = {
        let stale = Arc::clone(&stale);
        let places = Arc::clone(&places);
        move |event: notify::Result<notify::Event>| match event {
            // Reads (ours included) change nothing.
            Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
            Ok(event) => {
                for path in &event.paths {
                    for place in places.iter().filter(|place| place.concerns(path)) {
                        stale[agent_slot(place.agent)].store(true, Ordering::SeqCst);
                    }
                }
            }
            // A lost event (a queue overflow) may have been anything.
            Err(_) => {
                for flag in stale.iter() {
                    flag.store(true, Ordering::SeqCst);
                }
            }
        }
    };
    let mut missing = Vec::new();
    let watcher = match notifications.then(|| notify::recommended_watcher(handler)) {
        None => None,
        Some(Ok(mut watcher)) => {
            for place in places.iter() {
                let mode = if place.recursive {
                    RecursiveMode::Recursive
                } else {
                    RecursiveMode::NonRecursive
                };
                if !place.path.is_dir() {
                    missing.push(place.path.clone());
                } else if let Err(error) = watcher.watch(&place.path, mode) {
                    tracing::warn!(
                        path = %place.path.display(),
                        %error,
                        "cannot watch for changes; relying on the periodic re-walk"
                    );
                }
            }
            Some(watcher)
        }
        Some(Err(error)) => {
            tracing::warn!(%error, "no file-system notifications; relying on the periodic re-walk");
            None
        }
    };
    Watch {
        roots: roots.clone(),
        stale,
        missing,
        _watcher: watcher,
    }
}

impl Watched {
    /// Whether a change at `path` concerns this place.
    fn concerns(&self, path: &Path) -> bool {
        if self.recursive {
            return path.starts_with(&self.path);
        }
        path.parent() == Some(self.path.as_path())
            && path
                .file_name()
                .is_some_and(|name| self.names.iter().any(|n| n == name))
    }
}
