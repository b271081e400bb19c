//! One listing of every session on disk: load the persisted index, bring it up to date, apply
//! the names kept beside the transcripts, and save it again.
//!
//! This is what the `sessions` command (without a daemon) and the daemon's live index call. The
//! result holds every session of every agent, newest first — no cap: resolution over it is a
//! scan of a `Vec` in memory, and the index makes producing it cheap (see [`crate::index`]).
//!
//! The cache lives at `$CROSS_AGENT_HOME/cache/sessions-index.bin` ([`cache_file`]), with the
//! journal of its changes and the folder listings beside it; the caller decides whether that
//! home is safe to write (the CLI uses `ipc::Home`, which refuses `/`, `$HOME` and the agents'
//! own stores). Without a cache file the listing still works, cold.

use std::cmp::Reverse;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::collections::hash_map::Entry;

use crate::codex::ThreadNames;
use crate::grok::{GuiNames, read_gui_names};
use crate::index::cache::{self, CACHE_FILE_NAME, CacheLoad};
use crate::index::{
    ChangedFiles, FastMap, IndexStats, RefreshOptions, SessionIndex, discover_sources,
};
use crate::model::{Agent, Session, StoreWarning, UnixMillis, Warnings};
use crate::roots::StoreRoots;
use crate::walk::{DirCache, WalkStats, dir_cache_file};

/// Options of [`list_sessions`].
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// The cache file to start from and save to; `None` reads every file every time.
    pub cache_file: Option<PathBuf>,
    pub refresh: RefreshOptions,
    /// Only these agents' stores are looked at and listed; empty means all. The cache keeps the
    /// other agents' entries as they were, so resolving a Claude name does not walk Codex's
    /// rollouts (every file of a store costs a `stat`, which dominates a warm listing).
    pub agents: Vec<Agent>,
}

/// Every session on disk, and what it took to list them.
#[derive(Debug, Default)]
pub struct Listing {
    /// Every agent's sessions, newest first (sessions with no recorded activity last).
    pub sessions: Vec<Session>,
    /// Files and lines that were skipped: one warning per file, naming it (see
    /// [`crate::summary`]).
    pub warnings: Vec<StoreWarning>,
    pub stats: IndexStats,
    /// What the walk of the stores did (folders listed or remembered, files `stat`ed).
    pub walk: WalkStats,
    pub timings: Timings,
    /// The transcripts this listing found new, changed or gone since the index last looked;
    /// empty from [`list_sessions`] without a cache file (every file is new to it).
    pub changed: ChangedFiles,
}

/// Where a listing spent its time, for the benchmark and `--verbose`-style diagnostics.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    /// Reading and decoding the cache (on its own thread, overlapping `refresh`).
    pub load_cache: Duration,
    /// Discovering every file and reading the changed ones.
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
///
/// For one listing in a short-lived process (the CLI without a daemon). A long-lived one (the
/// daemon) keeps a [`crate::live::LiveScanner`]: a [`Scanner`], which holds the index in memory
/// between listings instead of loading the cache file each time, kept current by file-system
/// notifications.
pub fn list_sessions(roots: &StoreRoots, options: &ScanOptions) -> Listing {
    let agents = wanted_agents(options);
    let mut warnings = Warnings::default();
    let mut timings = Timings::default();

    // Loading the cache and walking the stores do not depend on each other: the walk is mostly
    // waiting on `stat` calls, so the cache is decoded meanwhile on a thread of its own.
    let started = Instant::now();
    let dirs_file = options.cache_file.as_deref().map(dir_cache_file);
    let wanted = agents.as_slice();
    let (loaded, (sources, mut dirs, walk), load_time) = std::thread::scope(|scope| {
        let loader = options.cache_file.as_deref().map(|path| {
            scope.spawn(move || {
                let started = Instant::now();
                (cache::load_for(path, wanted), started.elapsed())
            })
        });
        // The folder listings are needed before the walk; they are read while the loader
        // starts on the cache.
        let dirs = dirs_file.as_deref().map(DirCache::load).unwrap_or_default();
        let sources = discover_sources(roots, options.refresh.threads, wanted, dirs, &mut warnings);
        let (loaded, load_time) = match loader.map(|handle| handle.join()) {
            Some(Ok((loaded, took))) => (Some(loaded), took),
            Some(Err(_)) => (
                Some(CacheLoad::Corrupt("loading it panicked".to_owned())),
                Duration::ZERO,
            ),
            None => (None, Duration::ZERO),
        };
        (loaded, sources, load_time)
    });
    let discovered = started.elapsed();
    timings.load_cache = load_time;
    let mut index = loaded_index(loaded, options.cache_file.as_deref(), &mut warnings);
    // Without a cache file the index is read and dropped here: it keeps no fold state and no
    // list of changed files (every file is new to it).
    index.one_shot = options.cache_file.is_none();
    save_dirs(&mut dirs, dirs_file.as_deref(), &mut warnings);
    // Let go before the files are read rather than at the end: a cold walk's listings are held
    // until saved, and are not needed again.
    drop(dirs);

    let (stats, codex_names) = refresh_and_save(
        &mut index,
        sources,
        &agents,
        options,
        None,
        &mut warnings,
        &mut timings,
    );
    timings.refresh += discovered;

    let changed = std::mem::take(&mut index.changed);
    let started = Instant::now();
    let mut sessions = index.into_sessions(&agents);
    sessions.extend(copilot_sessions(
        roots,
        &agents,
        &mut crate::copilot::Cache::default(),
        &mut warnings,
    ));
    let sessions = named_sessions(sessions, &codex_names, roots, &mut warnings);
    timings.names += started.elapsed();

    Listing {
        sessions,
        warnings: crate::summary::per_file(warnings.items),
        stats,
        walk,
        timings,
        changed,
    }
}

/// Saves the folder listings when they changed. A failure is a warning: the next walk lists
/// the folders again.
fn save_dirs(dirs: &mut DirCache, path: Option<&Path>, warnings: &mut Warnings) {
    if let Some(path) = path
        && dirs.is_changed()
        && let Err(e) = dirs.save(path)
    {
        warnings.push(path, None, format!("cannot save the folder cache: {e}"));
    }
}

/// A session index kept in memory between listings, for a long-lived process: the cache file is
/// read once, then each listing only walks the stores and reads what changed, and saves the
/// cache when something did.
#[derive(Debug)]
pub struct Scanner {
    options: ScanOptions,
    index: Option<SessionIndex>,
    dirs: Option<DirCache>,
    /// Copilot's catalog files as last read: a walk opens only those that changed.
    copilot: crate::copilot::Cache,
    /// Offered every transcript read from its start ([`Scanner::set_tap`]).
    tap: Option<crate::tap::Tap>,
}

impl Scanner {
    /// Lays the live Copilot hosts' own listings over every Copilot walk from now on.
    pub fn attach_copilot_hosts(&mut self, hosts: crate::copilot::LiveHosts) {
        self.copilot.attach_live_hosts(hosts);
    }

    pub fn new(options: ScanOptions) -> Scanner {
        Scanner {
            options,
            index: None,
            dirs: None,
            copilot: crate::copilot::Cache::default(),
            tap: None,
        }
    }

    /// Hands every transcript the index reads from its start to `tap` too, line by line, from
    /// the next walk on ([`crate::tap`]).
    pub fn set_tap(&mut self, tap: crate::tap::Tap) {
        self.tap = Some(tap);
    }

    /// What the index and the folder listings kept between listings hold in memory (none
    /// before the first listing).
    pub fn heap_bytes(&self) -> crate::index::IndexBytes {
        crate::index::IndexBytes {
            dirs: self.dirs.as_ref().map_or(0, DirCache::heap_bytes),
            ..self
                .index
                .as_ref()
                .map(SessionIndex::heap_bytes)
                .unwrap_or_default()
        }
    }

    /// Lists the sessions of the agents in the options (all when empty), as [`list_sessions`].
    pub fn list(&mut self, roots: &StoreRoots) -> Listing {
        self.list_agents(roots, &self.options.agents.clone())
    }

    /// Lists the sessions of `agents` only (all when empty): a lookup of one agent's name walks
    /// only that agent's store.
    pub fn list_agents(&mut self, roots: &StoreRoots, agents: &[Agent]) -> Listing {
        let options = ScanOptions {
            agents: agents.to_vec(),
            ..self.options.clone()
        };
        let agents = wanted_agents(&options);
        let mut warnings = Warnings::default();
        let mut timings = Timings::default();

        let mut index = match self.index.take() {
            Some(index) => index,
            None => {
                let started = Instant::now();
                let loaded = options.cache_file.as_deref().map(cache::load);
                timings.load_cache = started.elapsed();
                loaded_index(loaded, options.cache_file.as_deref(), &mut warnings)
            }
        };
        let started = Instant::now();
        let dirs_file = options.cache_file.as_deref().map(dir_cache_file);
        let dirs = match self.dirs.take() {
            Some(dirs) => dirs,
            None => dirs_file.as_deref().map(DirCache::load).unwrap_or_default(),
        };
        let (sources, mut dirs, walk) =
            discover_sources(roots, options.refresh.threads, &agents, dirs, &mut warnings);
        // Saved, the listings the walk made are read from the file from then on: the cache
        // keeps only where each folder's is (`walk::DirCache`).
        save_dirs(&mut dirs, dirs_file.as_deref(), &mut warnings);
        self.dirs = Some(dirs);
        let discovered = started.elapsed();
        let (stats, codex_names) = refresh_and_save(
            &mut index,
            sources,
            &agents,
            &options,
            self.tap.as_ref().map(|tap| &*tap.0),
            &mut warnings,
            &mut timings,
        );
        timings.refresh += discovered;

        let changed = std::mem::take(&mut index.changed);
        let started = Instant::now();
        let mut sessions = index.sessions_of(&agents);
        if index.cache_damaged() {
            // Entries left in the cache file did not read back as loaded: someone wrote into
            // the file in place (ours are replaced by renaming). Nothing of this index is
            // kept — the cache is loaded again (refused by its checksum when it changed) or
            // the stores read — rather than list without the sessions that did not read back.
            // Once only: an index just loaded holds its entries in memory.
            tracing::warn!(
                cache = ?options.cache_file,
                "the session cache changed on disk while this process held it open; listing \
                 again from the stores"
            );
            drop(index);
            return self.list_agents(roots, &options.agents);
        }
        sessions.extend(copilot_sessions(
            roots,
            &agents,
            &mut self.copilot,
            &mut warnings,
        ));
        let sessions = named_sessions(sessions, &codex_names, roots, &mut warnings);
        timings.names += started.elapsed();
        let mut index = compacted(index, options.cache_file.as_deref(), &agents);
        // The generations a long-lived process lends out hold every session: the cache's
        // entries need not be held a second time (see `index::cache::stored`).
        cache::spill_entries(&mut index);
        self.index = Some(index);

        Listing {
            sessions,
            warnings: crate::summary::per_file(warnings.items),
            stats,
            walk,
            timings,
            changed,
        }
    }
}

/// How many files read by this process an index kept between listings holds before it is
/// loaded again from the cache it saved ([`compacted`]).
const COMPACT_AT: usize = 512;

/// The index to keep between listings: `index` itself, or — when it holds many files read by
/// this process (a first listing without a cache reads them all), or every fold state (read in
/// whole to write the cache again), and is saved — the same index loaded again from its cache.
/// Each file read here holds its own path, session and fold state (about 1.1 KB at 100,000
/// sessions); loaded from the cache, an entry is its saved bytes, and the fold states stay in
/// the file until a changed file needs one.
fn compacted(index: SessionIndex, cache_file: Option<&Path>, agents: &[Agent]) -> SessionIndex {
    let Some(path) = cache_file else {
        return index;
    };
    let holds_folds = !index.blob.is_empty();
    if (index.entries.len() < COMPACT_AT && !holds_folds) || index.is_dirty() {
        return index;
    }
    // Let go first, so the two are never held together (at 100,000 sessions that is the
    // daemon's peak); it is all in the file just saved.
    drop(index);
    match cache::load_for(path, agents) {
        // The same files as saved a moment ago: a file another process changed since is
        // simply read again at the next walk, as after any load.
        CacheLoad::Loaded(loaded) => loaded,
        // Not to be had back (the file removed or replaced meanwhile): the next walk reads
        // the stores again, as a first one does.
        CacheLoad::Missing | CacheLoad::Outdated | CacheLoad::Corrupt(_) => SessionIndex::new(),
    }
}

/// Copilot's sessions, when the listing covers Copilot: read from the editors' catalogs whole
/// each time (a few small databases; the transcripts' index is not involved).
fn copilot_sessions(
    roots: &StoreRoots,
    agents: &[Agent],
    cache: &mut crate::copilot::Cache,
    warnings: &mut Warnings,
) -> Vec<Session> {
    if agents.contains(&Agent::Copilot) {
        crate::copilot::list_cached(&roots.copilot, cache, warnings)
    } else {
        Vec::new()
    }
}

/// The agents a listing covers, each once.
fn wanted_agents(options: &ScanOptions) -> Vec<Agent> {
    let mut agents: Vec<Agent> = if options.agents.is_empty() {
        Agent::ALL.to_vec()
    } else {
        options.agents.clone()
    };
    agents.sort();
    agents.dedup();
    agents
}

/// The index a cache load gave, or an empty one (with a warning when the cache was damaged).
fn loaded_index(
    loaded: Option<CacheLoad>,
    cache_file: Option<&Path>,
    warnings: &mut Warnings,
) -> SessionIndex {
    match (loaded, cache_file) {
        (Some(CacheLoad::Loaded(index)), _) => index,
        (Some(CacheLoad::Corrupt(why)), Some(path)) => {
            warnings.push(path, None, format!("{why}; rebuilding it"));
            SessionIndex::new()
        }
        _ => SessionIndex::new(),
    }
}

/// Brings `index` up to date with `sources`, reads the Codex names, and saves the cache when
/// anything changed.
fn refresh_and_save(
    index: &mut SessionIndex,
    sources: Vec<(crate::index::FoldKind, crate::roots::SourceFile)>,
    agents: &[Agent],
    options: &ScanOptions,
    tap: Option<&dyn crate::tap::ReadTap>,
    warnings: &mut Warnings,
    timings: &mut Timings,
) -> (IndexStats, ThreadNames) {
    let started = Instant::now();
    let stats = index.refresh_sources(sources, agents, options.refresh, tap, warnings);
    timings.refresh = started.elapsed();

    let started = Instant::now();
    let codex_names = if agents.contains(&Agent::Codex) {
        index.take_codex_names()
    } else {
        ThreadNames::default()
    };
    timings.names = started.elapsed();

    let started = Instant::now();
    // Many files read at once are written with the whole cache rather than journalled: a
    // long-lived scanner then holds them as the cache's bytes (see `compacted`), where a
    // journal's would come back as entries of their own.
    if index.entries.len() >= COMPACT_AT {
        cache::rewrite_on_save(index);
    }
    if let Some(path) = &options.cache_file
        && index.is_dirty()
    {
        match cache::save(path, index) {
            Ok(()) => index.dirty = false,
            Err(e) => warnings.push(path, None, format!("cannot save the session cache: {e}")),
        }
    }
    timings.save_cache = started.elapsed();
    (stats, codex_names)
}

/// The index's sessions with the names kept outside the transcripts applied (Codex thread names,
/// Grok GUI tab names), one per Codex thread, newest first.
fn named_sessions(
    mut sessions: Vec<Session>,
    codex_names: &ThreadNames,
    roots: &StoreRoots,
    warnings: &mut Warnings,
) -> Vec<Session> {
    let gui_names = if sessions.iter().any(|s| s.agent == Agent::Grok) {
        read_gui_names(roots, warnings)
    } else {
        GuiNames::default()
    };
    // A relay's transcript (a cross-agent relay runs in `<CROSS_AGENT_HOME>/relays/xa-…`) is
    // never a session: listing it would let a send or a handoff pick it.
    sessions.retain(|s| {
        s.agent != Agent::Claude
            || !s
                .cwd
                .as_deref()
                .is_some_and(crate::claude_registry::is_relay_cwd)
    });
    for session in &mut sessions {
        match session.agent {
            Agent::Codex => codex_names.apply(session),
            Agent::Grok => gui_names.apply(session),
            Agent::Claude | Agent::Copilot => {}
        }
    }

    // One session per Codex thread: the newest rollout, by the rule of
    // `codex::newest_per_thread` (last activity, then the file name, which starts with the
    // rollout's creation time). Done on indices, so no session is moved or copied for it.
    let mut keep = vec![true; sessions.len()];
    let mut newest: FastMap<&str, usize> = FastMap::default();
    let recency = |s: &Session| (s.last_activity, s.path.file_name().map(|n| n.to_owned()));
    for (i, session) in sessions.iter().enumerate() {
        if session.agent != Agent::Codex {
            continue;
        }
        match newest.entry(session.session_id.as_str()) {
            Entry::Vacant(slot) => {
                slot.insert(i);
            }
            Entry::Occupied(mut slot) => {
                let current = *slot.get();
                if recency(&sessions[current]) >= recency(session) {
                    keep[i] = false;
                } else {
                    keep[current] = false;
                    slot.insert(i);
                }
            }
        }
    }
    drop(newest);
    if keep.iter().any(|k| !k) {
        let mut keep = keep.into_iter();
        sessions.retain(|_| keep.next().unwrap_or(true));
    }

    sort_newest_first(&mut sessions);
    sessions
}

/// Newest first; ties (and sessions without activity) in a stable order by agent, then id.
///
/// Sorts small keys and then moves each session once: sorting the sessions themselves would
/// move every one of them about log2(n) times, which is most of the cost at 22,000 sessions.
/// The keys hold what decides nearly every comparison, so the sort does not reach into the
/// sessions (scattered in memory) except to break a tie.
pub fn sort_newest_first(sessions: &mut [Session]) {
    let mut order: Vec<(Reverse<Option<UnixMillis>>, Agent, usize)> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (Reverse(s.last_activity), s.agent, i))
        .collect();
    order.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)).then_with(|| {
            let (a, b) = (&sessions[a.2], &sessions[b.2]);
            a.session_id
                .cmp(&b.session_id)
                .then_with(|| a.path.as_os_str().cmp(b.path.as_os_str()))
        })
    });
    // Put each session in its place by following the permutation's cycles: every swap puts
    // one session where it belongs, in place — no second buffer of 22,000 sessions, whose every
    // fresh page would cost a fault.
    let mut dest: Vec<usize> = vec![0; order.len()];
    for (to, &(_, _, from)) in order.iter().enumerate() {
        dest[from] = to;
    }
    for start in 0..dest.len() {
        while dest[start] != start {
            let to = dest[start];
            sessions.swap(start, to);
            dest.swap(start, to);
        }
    }
}

/// The cache file inside a state directory (`$CROSS_AGENT_HOME`). Which directory is safe to
/// keep state in is the caller's rule to apply (`ipc::Home`): this crate only reads stores.
pub fn cache_file(home: &Path) -> PathBuf {
    home.join("cache").join(CACHE_FILE_NAME)
}
