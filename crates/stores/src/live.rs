//! The session index kept live in a long-lived process (the daemon): listed once, then kept
//! current by file-system notifications, so a listing with nothing changed walks nothing.
//!
//! Each agent's listing is held whole, as one generation behind an `Arc` ([`LiveScanner`]). A
//! notification under an agent's store (inotify / FSEvents / ReadDirectoryChangesW, through the
//! `notify` crate) counts a change for that agent; the next listing, or [`LiveScanner::catch_up`]
//! meanwhile, refreshes it through the in-memory [`Scanner`], which re-reads only the appended
//! bytes. Notifications can be lost (a queue overflow, a store created after the watch began, a
//! filesystem that sends none), so every agent is also walked again once its listing is older
//! than the re-walk interval: the safety net. The watch is set up before a walk, and the change
//! count is read before it, so a change made during one leaves the agent stale rather than
//! being missed.
//!
//! Walks and requests do not share a lock. A walk (one at a time) stats and reads into a new
//! generation with only the walk lock held, then swaps it in under the short lock requests take
//! to borrow the current generations. A request whose agents have seen no change since their
//! last walk never waits, however long a walk runs: the periodic re-walk is the index loop's,
//! and a due one is served from memory meanwhile. Only a request that must see a change already
//! counted (a notification, [`LiveScanner::mark_stale`]) waits for the walk that brings it in.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use parking_lot::Mutex;

use crate::codex::session_index_path;
use crate::held::{HeldSessions, SessionRef};
use crate::model::{Agent, StoreWarning, UnixMillis};
use crate::render::{
    Chosen, Chunks, ListingParts, RenderedAgent, SpentOf, TextDir, write_listing_spent,
};
use crate::resolve::{ActiveWindow, Lookup, NameIndex, Resolved};
use crate::roots::StoreRoots;
use crate::scan::{Listing, ScanOptions, Scanner, sort_newest_first};
use changes::ChangeLog;
pub use changes::{ChangesSince, LogMark};
use kept::KeptRendering;

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
    /// Every request waits for a running walk, as before walks ran beside requests: only for a
    /// benchmark to measure the difference in one run.
    pub serial_walks: bool,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            rewalk: DEFAULT_REWALK,
            notifications: true,
            serial_walks: false,
        }
    }
}

/// A [`Scanner`] whose listings are kept current by notifications and a periodic re-walk; shared
/// by reference between the requests and the timer that keeps it current.
#[derive(Debug)]
pub struct LiveScanner {
    live: LiveOptions,
    /// Changes counted per agent (by [`agent_slot`]): by the watcher's thread for each
    /// notification, by [`LiveScanner::mark_stale`]. A generation is current while the count it
    /// was walked at is still the count.
    changes: Arc<[AtomicU64; SLOTS]>,
    /// The walks: one at a time, and no request waits on this lock unless it must see a change.
    walker: Mutex<Walker>,
    /// The generations requests read: held only to swap one in or to clone its `Arc` out.
    shown: Mutex<Shown>,
    /// Taken by every request and walk when [`LiveOptions::serial_walks`] asks.
    serial: Mutex<()>,
    /// Where the kept renderings' text is kept instead of the heap: the session cache's
    /// directory (none without a cache: the text stays in memory).
    text_dir: Option<TextDir>,
}

/// What only a walk touches.
#[derive(Debug)]
struct Walker {
    scanner: Scanner,
    watch: Option<Watch>,
    /// When each agent's held generation was walked.
    walked: [Option<Instant>; SLOTS],
}

/// The generations lent to requests, and what tells whether they are current.
#[derive(Debug, Default)]
struct Shown {
    /// The roots the generations are of (the watched ones).
    roots: Option<StoreRoots>,
    /// The folders that did not exist when the watch began: one appearing sends a request to
    /// the walk lock, which re-arms the watch.
    missing: Arc<[PathBuf]>,
    held: [Option<Arc<Held>>; SLOTS],
    /// The change count each generation was walked at.
    seen: [u64; SLOTS],
    /// What each agent's recent walks found changed, for [`LiveScanner::changes_since`].
    log: [ChangeLog; SLOTS],
    /// Moved whenever the held listings are dropped (other roots): a mark from before names
    /// walks of another index.
    epoch: u64,
}

/// One agent's listing as last walked: a generation, never changed once shown.
#[derive(Debug)]
struct Held {
    /// Compact ([`HeldSessions`]): what resolution, sends and status read, lent as views.
    sessions: HeldSessions,
    warnings: Vec<StoreWarning>,
    /// The sessions as `sessions --json` prints them, made on the first listing that asks (or
    /// carried over by a walk that changed a few sessions, see [`RenderedAgent::update`]); with
    /// the cost fields of a table spliced in, made again when a listing (or the owner's timer,
    /// [`LiveScanner::recost`]) names another. One text, with or without costs: never two.
    rendered: Mutex<Option<KeptRendering>>,
    /// Where each id and title is among `sessions`, for resolution: made by the first lookup,
    /// and by the walk that replaces this generation once one was made.
    names: OnceLock<NameIndex>,
}

impl Held {
    fn new(sessions: HeldSessions, warnings: Vec<StoreWarning>) -> Held {
        Held {
            sessions,
            warnings,
            rendered: Mutex::new(None),
            names: OnceLock::new(),
        }
    }

    fn names(&self) -> &NameIndex {
        self.names.get_or_init(|| NameIndex::new(&self.sessions))
    }
}

/// Whatever a listing's costs are read from, only told apart (by address) from another: the
/// cost fields made from one are kept while listings bring the same one.
pub type SpentTable = Arc<dyn std::any::Any + Send + Sync>;

/// A [`SpentTable`] held without keeping it alive (its address is not reused meanwhile).
pub type WeakTable = std::sync::Weak<dyn std::any::Any + Send + Sync>;

/// What a listing shows of each session's cost: `of` gives it, reading `table` (the caller's,
/// unchanged while it is the same `Arc`), so the fields can be made once per table.
#[derive(Clone, Copy)]
pub struct ListingSpent<'a> {
    pub table: &'a SpentTable,
    pub of: SpentOf<'a>,
    /// What `table` shares with the table made before it, when the caller knows: a rendering
    /// carrying that one's fields, none of whose sessions moved, carries `table`'s as it is.
    pub unmoved: Option<Unmoved<'a>>,
}

/// The sessions whose cost fields are the same in a table as in the one made before it
/// (`since`): every one whose id `moved` does not name. An agent none of whose sessions moved
/// (nothing of its store changed) keeps its text: no file read back, no cost looked up.
#[derive(Clone, Copy)]
pub struct Unmoved<'a> {
    pub since: &'a WeakTable,
    pub moved: &'a dyn Fn(&str) -> bool,
}

/// Some agents' current generations, lent to a request: read with no lock held.
#[derive(Debug, Default)]
pub struct Snapshot {
    agents: Vec<(Agent, Option<Arc<Held>>)>,
}

impl Snapshot {
    /// The agents asked for, in the order asked (each once).
    pub fn agents(&self) -> impl Iterator<Item = Agent> + '_ {
        self.agents.iter().map(|(agent, _)| *agent)
    }

    /// `agent`'s sessions, newest first (none when it was not asked for or has no store).
    pub fn sessions(&self, agent: Agent) -> &HeldSessions {
        self.held(agent)
            .map_or(HeldSessions::none(), |held| &held.sessions)
    }

    /// The warnings of every agent asked for, in the order asked.
    pub fn warnings(&self) -> impl Iterator<Item = &StoreWarning> + '_ {
        self.agents
            .iter()
            .filter_map(|(_, held)| held.as_deref())
            .flat_map(|held| held.warnings.iter())
    }

    /// The one session of `agent` that `query` names, as [`crate::resolve::lookup`] finds it,
    /// through the index of ids and titles kept with the generation: a send by name looks at
    /// its candidates, not at every session, and copies none.
    pub fn lookup(
        &self,
        agent: Agent,
        query: &str,
        asked: Lookup<'_>,
    ) -> crate::error::Result<Resolved<SessionRef<'_>>> {
        let held = self.sessions(agent);
        match self.held(agent) {
            Some(kept) => kept.names().lookup(held, query, asked),
            None => crate::resolve::lookup(held, query, asked),
        }
    }

    fn held(&self, agent: Agent) -> Option<&Held> {
        self.agents
            .iter()
            .find(|(a, _)| *a == agent)
            .and_then(|(_, held)| held.as_deref())
    }
}

/// What [`LiveScanner::render_listing`] made.
#[derive(Debug, Default)]
pub struct RenderedListing {
    /// How many sessions the listing holds.
    pub sessions: usize,
    pub warnings: Vec<StoreWarning>,
    /// The listing's bytes.
    pub bytes: ListingBytes,
}

/// A listing's bytes as the parts it was made of: the bytes made for it and runs of the kept
/// renderings, which it holds (the generations they belong to) rather than copies — a full
/// listing at 100,000 sessions is 40 MB that a daemon writes to its socket from the renderings
/// it keeps (read back from their files a chunk at a time, [`ListingBytes::chunks`]).
#[derive(Debug, Default)]
pub struct ListingBytes {
    /// The renderings of the listing's agents, in its order.
    kept: Vec<Option<Arc<RenderedAgent>>>,
    parts: ListingParts,
}

impl ListingBytes {
    /// The listing's length in bytes.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Its bytes, in order, in chunks of one bounded buffer ([`Chunks`]); an error (a kept
    /// text that cannot be read back) ends them: the listing is not whole.
    pub fn chunks<'a>(&'a self) -> Chunks<'a, impl Fn(usize) -> Option<&'a RenderedAgent> + 'a> {
        self.parts
            .chunks(|agent| self.kept.get(agent).and_then(Option::as_deref))
    }

    /// Writes its bytes to `out`, a chunk at a time.
    pub fn write_to(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        let mut chunks = self.chunks();
        while let Some(chunk) = chunks.next() {
            out.write_all(chunk?)?;
        }
        Ok(())
    }

    /// Its bytes in one buffer (a copy: for tests and small listings).
    pub fn read_all(&self) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len());
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// [`ListingBytes::read_all`], for tests.
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        self.read_all().expect("the listing's kept text reads back")
    }
}

/// What a [`LiveScanner`] holds in memory, by part, in bytes (its own accounting: buffer
/// capacities and record sizes, allocator overhead not counted).
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveBytes {
    /// The index the walks refresh.
    pub index: crate::index::IndexBytes,
    /// Sessions in the generations held.
    pub sessions: usize,
    /// Their records ([`HeldSessions::record_bytes`]).
    pub session_records: usize,
    /// Their strings, shared ones once ([`HeldSessions::string_bytes`]).
    pub session_strings: usize,
    /// The renderings kept for the listing on the heap: the places of their elements, and
    /// their text while it is not kept in a file.
    pub rendered: usize,
    /// Their text kept in files of the state directory (the page cache's, not the heap's; not
    /// in [`LiveBytes::total`]).
    pub rendered_in_files: usize,
    /// The id and title indexes kept for resolution.
    pub names: usize,
}

impl LiveBytes {
    /// Every part together.
    pub fn total(&self) -> usize {
        self.index.total()
            + self.session_records
            + self.session_strings
            + self.rendered
            + self.names
    }
}

/// The notifications watched for one set of roots.
struct Watch {
    roots: StoreRoots,
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

/// Why an agent is walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Only when never listed or a change was counted since: what a request must see.
    Changed,
    /// Also when the re-walk is due: the index loop's safety net.
    ChangedOrDue,
}

impl LiveScanner {
    /// A live index starting from the cache in `options`.
    pub fn new(options: ScanOptions, live: LiveOptions) -> LiveScanner {
        let text_dir = options
            .cache_file
            .as_deref()
            .and_then(Path::parent)
            .map(TextDir::new);
        LiveScanner {
            live,
            changes: Arc::new(Default::default()),
            walker: Mutex::new(Walker {
                scanner: Scanner::new(options),
                watch: None,
                walked: [None; SLOTS],
            }),
            text_dir,
            shown: Mutex::new(Shown::default()),
            serial: Mutex::new(()),
        }
    }

    /// The current generations of `agents` (all when empty; each once, in the order given): from
    /// memory when nothing changed under their stores since their last walk, else after
    /// refreshing the agents whose stores did. Listing other roots than the last call moves the
    /// watch.
    pub fn snapshot(&self, roots: &StoreRoots, agents: &[Agent]) -> Snapshot {
        let mut wanted: Vec<Agent> = Vec::new();
        for agent in if agents.is_empty() {
            &Agent::ALL[..]
        } else {
            agents
        } {
            if !wanted.contains(agent) {
                wanted.push(*agent);
            }
        }
        let _serial = self.live.serial_walks.then(|| self.serial.lock());
        if let Some(snapshot) = self.current(roots, &wanted) {
            return snapshot;
        }
        let mut walker = self.walker.lock();
        self.watch_roots(&mut walker, roots);
        for &agent in &wanted {
            self.refresh(&mut walker, roots, agent, Need::Changed);
        }
        // Taken before the walk lock is let go: another root's listing could clear them after.
        let shown = self.shown.lock();
        Snapshot {
            agents: wanted
                .iter()
                .map(|&agent| (agent, shown.held[agent_slot(agent)].clone()))
                .collect(),
        }
    }

    /// The sessions of `agents` (all when empty), newest first, as [`Scanner::list_agents`]
    /// gives them, copied (the walk's statistics are not kept): see [`LiveScanner::snapshot`]
    /// for the lent form.
    pub fn list_agents(&self, roots: &StoreRoots, agents: &[Agent]) -> Listing {
        let mut agents = agents.to_vec();
        agents.sort();
        let snapshot = self.snapshot(roots, &agents);
        let mut listing = Listing::default();
        for agent in snapshot.agents() {
            listing
                .sessions
                .extend(snapshot.sessions(agent).iter().map(SessionRef::to_session));
        }
        listing.warnings.extend(snapshot.warnings().cloned());
        if snapshot.agents.len() > 1 {
            sort_newest_first(&mut listing.sessions);
        }
        listing
    }

    /// The listing `cross-agent sessions --json` prints: the sessions of `agents` (in that
    /// order) that `admit` lets through, at most `limit` of each, newest first, with
    /// `is_active` as `window` has it at `now` and what each cost when `spent` says — runs of
    /// the renderings kept per agent (made again only when that agent's sessions changed),
    /// referred to, not copied ([`ListingBytes`]). Brings the agents current first, as
    /// [`LiveScanner::snapshot`] does; made with no lock held.
    pub fn render_listing(
        &self,
        roots: &StoreRoots,
        agents: &[Agent],
        admit: impl Fn(SessionRef<'_>) -> bool,
        limit: Option<usize>,
        (window, now, spent): (ActiveWindow, UnixMillis, Option<ListingSpent<'_>>),
    ) -> RenderedListing {
        let snapshot = self.snapshot(roots, agents);
        let mut result = RenderedListing::default();
        result.warnings.extend(snapshot.warnings().cloned());
        // With this table's cost fields (spliced in once per table and generation, usually by
        // the owner's timer before any listing asks) before the listing, which refers to them.
        let renderings: Vec<Option<Arc<RenderedAgent>>> = snapshot
            .agents
            .iter()
            .map(|(_, held)| {
                Some(
                    held.as_deref()?
                        .rendering(spent.as_ref(), self.text_dir.as_ref()),
                )
            })
            .collect();
        let chosen: Vec<(Agent, Chosen<'_>)> = snapshot
            .agents
            .iter()
            .zip(&renderings)
            .map(|((agent, held), rendered)| {
                let (Some(held), Some(rendered)) = (held.as_deref(), rendered.as_deref()) else {
                    return (*agent, Chosen::Sessions(Vec::new()));
                };
                let mut indices: Vec<usize> = held
                    .sessions
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| admit(*s))
                    .map(|(i, _)| i)
                    .collect();
                if let Some(limit) = limit {
                    indices.truncate(limit);
                }
                result.sessions += indices.len();
                let chosen = Chosen::Kept {
                    sessions: &held.sessions,
                    rendered,
                    indices,
                    costs_kept: spent.is_some(),
                };
                (*agent, chosen)
            })
            .collect();
        // Which Claude sessions a running process holds changes without a file the index
        // watches: read at each listing (a few small files).
        let registry = roots
            .claude_config
            .as_deref()
            .filter(|_| agents.contains(&Agent::Claude))
            .map(|config| {
                let mut warnings = crate::Warnings::default();
                let registry = crate::claude_registry::Registry::read(config, &mut warnings);
                result.warnings.extend(warnings.items);
                registry
            });
        let mut parts = ListingParts::default();
        write_listing_spent(
            &mut parts,
            &chosen,
            window,
            now,
            registry.as_ref(),
            spent.map(|spent| spent.of),
        );
        drop(chosen);
        result.bytes = ListingBytes {
            kept: renderings,
            parts,
        };
        result
    }

    /// Calls `f` with `agent`'s sessions, newest first, brought current as
    /// [`LiveScanner::snapshot`] does and lent rather than copied: a resolution looks at
    /// 10,000 sessions and keeps one.
    pub fn with_sessions<R>(
        &self,
        roots: &StoreRoots,
        agent: Agent,
        f: impl FnOnce(&HeldSessions, &[StoreWarning]) -> R,
    ) -> R {
        let snapshot = self.snapshot(roots, &[agent]);
        match snapshot.held(agent) {
            Some(held) => f(&held.sessions, &held.warnings),
            None => f(HeldSessions::none(), &[]),
        }
    }

    /// [`LiveScanner::with_sessions`] with the index of their ids and titles, kept with them:
    /// a lookup by id or exact name ([`NameIndex::lookup`]) finds its candidates without
    /// walking every session.
    pub fn with_named_sessions<R>(
        &self,
        roots: &StoreRoots,
        agent: Agent,
        f: impl FnOnce(&HeldSessions, &NameIndex, &[StoreWarning]) -> R,
    ) -> R {
        let snapshot = self.snapshot(roots, &[agent]);
        match snapshot.held(agent) {
            Some(held) => f(&held.sessions, held.names(), &held.warnings),
            None => f(HeldSessions::none(), &NameIndex::default(), &[]),
        }
    }

    /// What it holds in memory now, by part (waits for a running walk).
    pub fn heap_bytes(&self) -> LiveBytes {
        let index = self.walker.lock().scanner.heap_bytes();
        let shown = self.shown.lock();
        let mut bytes = LiveBytes {
            index,
            ..LiveBytes::default()
        };
        for held in shown.held.iter().flatten() {
            bytes.sessions += held.sessions.len();
            bytes.session_records += held.sessions.record_bytes();
            bytes.session_strings += held.sessions.string_bytes();
            if let Some(kept) = held.rendered.lock().as_ref() {
                bytes.rendered += kept.text.heap_bytes();
                bytes.rendered_in_files += kept.text.file_bytes();
            }
            bytes.names += held.names.get().map_or(0, NameIndex::heap_bytes);
        }
        bytes
    }

    /// Splices `spent`'s cost fields into the renderings a listing made of `roots`' current
    /// generations, where they do not carry them yet: for the owner's timer once the accounting
    /// moved (or a walk carried a rendering over), so the next listing with costs finds them
    /// made instead of making them itself. Renders nothing no listing asked for.
    pub fn recost(&self, roots: &StoreRoots, spent: ListingSpent<'_>) {
        let held: Vec<Arc<Held>> = {
            let shown = self.shown.lock();
            if shown.roots.as_ref() != Some(roots) {
                return;
            }
            shown.held.iter().flatten().cloned().collect()
        };
        for held in held {
            held.recost(&spent, self.text_dir.as_ref());
        }
    }

    /// Whether a listing made a rendering of one of `roots`' current generations: only then is
    /// there a text to [`LiveScanner::recost`].
    pub fn has_renderings(&self, roots: &StoreRoots) -> bool {
        let shown = self.shown.lock();
        shown.roots.as_ref() == Some(roots)
            && shown
                .held
                .iter()
                .flatten()
                .any(|held| held.rendered.lock().is_some())
    }

    /// Lays the live Copilot hosts' own listings (kept by the daemon's host watcher) over every
    /// Copilot walk from now on; the watcher calls [`LiveScanner::mark_stale`] when they change.
    pub fn attach_copilot_hosts(&self, hosts: crate::copilot::LiveHosts) {
        self.walker.lock().scanner.attach_copilot_hosts(hosts);
    }

    /// Hands every transcript a walk reads from its start to `tap` too ([`crate::tap`]): the
    /// daemon's usage index takes its first read from the session index's.
    pub fn set_tap(&self, tap: crate::tap::Tap) {
        self.walker.lock().scanner.set_tap(tap);
    }

    /// Counts a change for `agent`, so the next listing walks its store without waiting for a
    /// notification: for a change the owner made itself (a turn it ran wrote a transcript), which
    /// the next listing must show even if the notification is still on its way.
    pub fn mark_stale(&self, agent: Agent) {
        self.changes[agent_slot(agent)].fetch_add(1, Ordering::SeqCst);
    }

    /// How many changes have been counted under `agent`'s store so far (notifications and
    /// [`LiveScanner::mark_stale`]): what else a process derives from the same files (the usage
    /// index) is read again only when this moved, or after the same re-walk interval.
    pub fn change_count(&self, agent: Agent) -> u64 {
        self.changes[agent_slot(agent)].load(Ordering::SeqCst)
    }

    /// Where `agent`'s walks stand now: [`LiveScanner::changes_since`] it later tells what the
    /// walks after found changed.
    pub fn log_mark(&self, agent: Agent) -> LogMark {
        let shown = self.shown.lock();
        shown.log[agent_slot(agent)].mark(shown.epoch)
    }

    /// The transcripts of `agent` that its walks since `mark` found new, changed or gone, and
    /// the mark to ask from next time: what else a process derives from the same files (the
    /// usage index) reads these instead of walking the store again.
    pub fn changes_since(&self, agent: Agent, mark: LogMark) -> (ChangesSince, LogMark) {
        let shown = self.shown.lock();
        shown.log[agent_slot(agent)].since(shown.epoch, mark)
    }

    /// The interval after which a store is walked again whatever the notifications said.
    pub fn rewalk(&self) -> Duration {
        self.live.rewalk
    }

    /// Refreshes every agent listed before whose store changed or whose re-walk is due, so the
    /// next listing finds it current. For a timer of the owning process; requests meanwhile are
    /// served the generations held (see the module's header).
    pub fn catch_up(&self) {
        let _serial = self.live.serial_walks.then(|| self.serial.lock());
        let mut walker = self.walker.lock();
        let Some(roots) = walker.watch.as_ref().map(|watch| watch.roots.clone()) else {
            return;
        };
        self.watch_roots(&mut walker, &roots);
        for agent in Agent::ALL {
            if self.shown.lock().held[agent_slot(agent)].is_some() {
                self.refresh(&mut walker, &roots, agent, Need::ChangedOrDue);
            }
        }
    }

    /// The generations of `agents` when every one is held for `roots` and no change was
    /// counted since its walk (nor a missing store folder appeared); `None` sends the request
    /// to the walk lock.
    fn current(&self, roots: &StoreRoots, agents: &[Agent]) -> Option<Snapshot> {
        let (snapshot, missing) = {
            let shown = self.shown.lock();
            if shown.roots.as_ref() != Some(roots) {
                return None;
            }
            let mut taken = Vec::with_capacity(agents.len());
            for &agent in agents {
                let slot = agent_slot(agent);
                let held = shown.held[slot].clone()?;
                if shown.seen[slot] != self.changes[slot].load(Ordering::SeqCst) {
                    return None;
                }
                taken.push((agent, Some(held)));
            }
            (Snapshot { agents: taken }, Arc::clone(&shown.missing))
        };
        // A stat or two, outside the lock.
        if missing.iter().any(|path| path.exists()) {
            return None;
        }
        Some(snapshot)
    }

    /// Walks `agent`'s store when `need` says so, then swaps the new generation in: the walk
    /// runs with only the walk lock held.
    fn refresh(&self, walker: &mut Walker, roots: &StoreRoots, agent: Agent, need: Need) {
        let slot = agent_slot(agent);
        // Read before the walk: a change counted while it runs leaves the agent stale.
        let count = self.changes[slot].load(Ordering::SeqCst);
        let (before, seen) = {
            let shown = self.shown.lock();
            (shown.held[slot].clone(), shown.seen[slot])
        };
        let due = walker.walked[slot].is_none_or(|at| at.elapsed() >= self.live.rewalk);
        let walk = before.is_none() || seen != count || (need == Need::ChangedOrDue && due);
        if !walk {
            return;
        }
        let walked = Instant::now();
        let mut listing = walker.scanner.list_agents(roots, &[agent]);
        let changed = std::mem::take(&mut listing.changed);
        // Held compact until the next change; the walk's whole sessions go with the listing.
        let sessions = HeldSessions::new(&std::mem::take(&mut listing.sessions));
        let warnings = std::mem::take(&mut listing.warnings);
        // A walk that changed nothing (the periodic one, or a notification about a file that
        // adds no session, name or activity) keeps the generation and its rendering; one that
        // changed a few sessions renders those few again, here, off the request.
        let held = match before {
            Some(before) if before.sessions == sessions && before.warnings == warnings => before,
            Some(before) => {
                let held = Held::new(sessions, warnings);
                let kept = before
                    .rendered
                    .lock()
                    .as_ref()
                    .map(|kept| Arc::clone(&kept.text));
                if let Some(kept) = kept {
                    *held.rendered.lock() = Some(KeptRendering::carried(
                        &before.sessions,
                        &kept,
                        &held.sessions,
                        self.text_dir.as_ref(),
                    ));
                }
                // Resolution was asked of this store: its index is made here, off the request.
                if before.names.get().is_some() {
                    held.names();
                }
                Arc::new(held)
            }
            None => Arc::new(Held::new(sessions, warnings)),
        };
        walker.walked[slot] = Some(walked);
        let mut shown = self.shown.lock();
        shown.held[slot] = Some(held);
        shown.seen[slot] = count;
        shown.log[slot].record(changed);
    }

    /// Watches `roots` (unless already watched and no missing folder appeared): a new watch
    /// drops the listings held for other roots.
    fn watch_roots(&self, walker: &mut Walker, roots: &StoreRoots) {
        if let Some(watch) = &walker.watch
            && watch.roots == *roots
            && !watch.missing.iter().any(|path| path.exists())
        {
            return;
        }
        let same_roots = walker
            .watch
            .as_ref()
            .is_some_and(|watch| watch.roots == *roots);
        // The old watcher goes first: two watches of the same folders would both report.
        walker.watch = None;
        let watch = start_watch(roots, self.live.notifications, &self.changes);
        if same_roots {
            // A folder appeared that was not watched: what is in it was never notified.
            for count in self.changes.iter() {
                count.fetch_add(1, Ordering::SeqCst);
            }
        } else {
            walker.walked = [None; SLOTS];
        }
        let mut shown = self.shown.lock();
        // A mark taken before any roots were watched stands: nothing was logged yet.
        if !same_roots && shown.roots.is_some() {
            shown.held = Default::default();
            shown.log = Default::default();
            shown.epoch += 1;
        }
        shown.roots = Some(roots.clone());
        shown.missing = watch.missing.clone().into();
        drop(shown);
        walker.watch = Some(watch);
    }
}

/// How many per-agent slots there are: one per agent.
const SLOTS: usize = Agent::ALL.len();

/// The index of an agent's slot in per-agent arrays.
fn agent_slot(agent: Agent) -> usize {
    match agent {
        Agent::Claude => 0,
        Agent::Codex => 1,
        Agent::Grok => 2,
        Agent::Copilot => 3,
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
    for place in &roots.copilot.places {
        // The host catalog beside other extensions' storage: only its own files, the journal
        // (whose appearing and going is a write) included.
        if let Some(db) = place.host_db.as_deref()
            && let Some(mut watched) = files(Agent::Copilot, db)
        {
            let mut journal = db.as_os_str().to_owned();
            journal.push("-journal");
            watched
                .names
                .extend(PathBuf::from(journal).file_name().map(|n| n.to_owned()));
            places.push(watched);
        }
        // The session databases, the SDK's events and the endpoint registry (a host starting
        // or stopping) with everything below them.
        for dir in [
            place.session_dir.as_deref(),
            place.sdk_session_dir.as_deref(),
            place.endpoint_dir.as_deref(),
        ]
        .into_iter()
        .flatten()
        {
            if !places
                .iter()
                .any(|p: &Watched| p.recursive && dir.starts_with(&p.path))
            {
                places.push(tree(Agent::Copilot, dir.to_path_buf()));
            }
        }
    }
    places
}

/// Starts watching `roots`. A place that does not exist, or that cannot be watched, is left to
/// the re-walk; one that does not exist re-arms the watch when it appears.
fn start_watch(
    roots: &StoreRoots,
    notifications: bool,
    changes: &Arc<[AtomicU64; SLOTS]>,
) -> Watch {
    let places = Arc::new(watched_places(roots));
    let handler = {
        let changes = Arc::clone(changes);
        let places = Arc::clone(&places);
        move |event: notify::Result<notify::Event>| match event {
            // Reads (ours included) change nothing.
            Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
            Ok(event) => {
                for path in &event.paths {
                    for place in places.iter().filter(|place| place.concerns(path)) {
                        changes[agent_slot(place.agent)].fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
            // A lost event (a queue overflow) may have been anything.
            Err(_) => {
                for count in changes.iter() {
                    count.fetch_add(1, Ordering::SeqCst);
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

mod changes;
mod kept;
#[cfg(test)]
mod tests;
