//! The incremental session index: a cache of every transcript's fold, keyed by (path, size,
//! mtime), that re-reads only the bytes appended since it last looked.
//!
//! Each entry keeps the file's stamp, the [`Position`] after its last complete line, the agent's
//! fold state at that position (as JSON, so any serde shape a reader chooses round-trips), the
//! session the fold described, and a check of the file's head. On a refresh:
//!
//! - same stamp → nothing is opened;
//! - grown, mtime not earlier, head unchanged → the fold resumes at the stored position and sees
//!   every appended line (a `custom-title` appended anywhere is picked up);
//! - shrunk, mtime gone back, head changed, or the fold state no longer loads → read from 0;
//! - compressed (`.jsonl.zst`) → read whole whenever its stamp changes;
//! - new files are read; files that vanished drop out.
//!
//! Candidate files are found by [`crate::walk`], which remembers folder listings (persisted
//! beside the index) so a warm walk is one `stat` per file. Changed files are read on a few
//! threads (cold listings read everything). The index is persisted in one file and a journal of
//! the changes since it was written (see [`crate::index::cache`]), so a new process starts warm.
//!
//! The refresh is one pipeline (walk, match to the cache, read what changed, build sessions)
//! whose steps hand each other borrowed buffers: the index and the refresh are here, finding
//! the files and matching them to entries is [`discover`], reading what changed is `read`, the
//! in-memory tables' hasher is `hashing`, and the cache's format is [`cache`].

pub mod cache;
pub mod discover;
mod hashing;
mod packed;
mod read;

pub(crate) use discover::discover_sources;
pub use discover::{IO_READERS, discover_all};
pub(crate) use hashing::{FastMap, hash64};

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use self::discover::{MIN_RUN, PathTable};
use self::packed::{Packed, Packer};
use self::read::{Job, Kept, run_jobs, run_jobs_packed};
use crate::codex::ThreadNames;
use crate::lines::Position;
use crate::model::{Agent, LineContext, Session, TranscriptFold, Warnings};
use crate::roots::{FileStamp, Sidecar, SourceFile, StoreRoots};
use crate::tap::ReadTap;
use crate::walk::DirCache;

/// How much of a file's first line the head check covers. A file replaced by another whose first
/// line differs within this many bytes is re-read from the start.
pub const HEAD_CHECK_BYTES: usize = 4096;

/// What one refresh did, counted by the index itself. `bytes_read` is every byte the index read
/// from the agents' stores (transcripts, head checks, side files), which is what shows that a
/// warm refresh reads nothing and an append reads about what was appended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexStats {
    /// Candidate files discovery found.
    pub files_seen: usize,
    /// Files whose stamp had not changed: not opened.
    pub files_unchanged: usize,
    /// Files that grew and were read from their stored position.
    pub files_appended: usize,
    /// Files read from the start although the index knew them (shrunk, rewritten, compressed).
    pub files_reread: usize,
    /// Files the index had not seen before.
    pub files_new: usize,
    /// Files the index knew that are gone.
    pub files_dropped: usize,
    pub bytes_read: u64,
}

/// The index's own accounting of its memory, in bytes: the capacities of the buffers it owns
/// and the fixed size of its records (allocator overhead not counted), for the benches to say
/// where a daemon's memory goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexBytes {
    /// Files read by this process (not loaded from the cache).
    pub entries: usize,
    /// Their records (`size_of::<Entry>()` each, the session held inline).
    pub records: usize,
    /// Their paths (the file's, and a side file's).
    pub paths: usize,
    /// Their fold states, as JSON text.
    pub folds: usize,
    /// The strings of the sessions they hold (ids, working directories, titles, paths).
    pub sessions: usize,
    /// Entries loaded from the cache: their bytes and the tables over them.
    pub stored: usize,
    /// The cache's fold states, once read.
    pub blob: usize,
    /// The folder listings remembered between walks ([`crate::walk::DirCache::heap_bytes`]):
    /// kept by the scanner beside the index, not by the index itself.
    pub dirs: usize,
}

impl IndexBytes {
    /// Every part together.
    pub fn total(&self) -> usize {
        self.records + self.paths + self.folds + self.sessions + self.stored + self.blob + self.dirs
    }
}

/// A file's head: the length and hash of the start of its first line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Head {
    pub len: u32,
    pub hash: u64,
}

/// The stamp of a side file read whole (Grok's `summary.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SidecarSeen {
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: Option<i64>,
}

/// Where an entry's fold state (JSON text) is. A warm listing never needs a fold — only a file
/// that changed does — so folds loaded from the cache stay in the cache file, are read into one
/// shared buffer when a changed file first needs one, and are decoded on demand, after checking
/// their hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FoldState {
    /// In the folds section ([`SessionIndex::blob`] once read) at `at..at + len`.
    Stored { at: usize, len: usize, hash: u64 },
    /// Produced by this process.
    Fresh(String),
    /// Could not be stored: the next change re-reads the file from the start.
    Missing,
}

/// One indexed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub kind: FoldKind,
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: Option<i64>,
    pub compressed: bool,
    pub head: Head,
    pub position: Position,
    pub sidecar: Option<SidecarSeen>,
    pub fold: FoldState,
    pub session: Option<Session>,
    /// Already in the cache file or its journal: a save need not write it again.
    pub saved: bool,
}

impl Entry {
    fn stamp(&self) -> FileStamp {
        FileStamp {
            size: self.size,
            mtime_ns: self.mtime_ns,
        }
    }

    fn sidecar_matches(&self, source: &SourceFile) -> bool {
        match (&self.sidecar, &source.sidecar) {
            (None, None) => true,
            (Some(seen), Some(now)) => seen.matches(now),
            (Some(_), None) | (None, Some(_)) => false,
        }
    }
}

impl SidecarSeen {
    fn matches(&self, now: &Sidecar) -> bool {
        self.path == now.path && self.size == now.stamp.size && self.mtime_ns == now.stamp.mtime_ns
    }
}

/// Which fold reads a file: an agent's transcript fold, or the fold of a names side file that is
/// appended to like a transcript (Codex's `session_index.jsonl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum FoldKind {
    Claude,
    Codex,
    Grok,
    CodexNames,
}

impl FoldKind {
    /// The agent whose store the file belongs to.
    fn agent(self) -> Agent {
        match self {
            FoldKind::Claude => Agent::Claude,
            FoldKind::Codex | FoldKind::CodexNames => Agent::Codex,
            FoldKind::Grok => Agent::Grok,
        }
    }

    /// The fold of `agent`'s transcripts; none for Copilot, whose catalog is SQLite read whole
    /// at each walk (`crate::copilot`).
    fn of(agent: Agent) -> Option<FoldKind> {
        match agent {
            Agent::Claude => Some(FoldKind::Claude),
            Agent::Codex => Some(FoldKind::Codex),
            Agent::Grok => Some(FoldKind::Grok),
            Agent::Copilot => None,
        }
    }
}

/// The names file as a fold: it describes no session itself, the listing applies its names.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
struct NamesFold(ThreadNames);

impl TranscriptFold for NamesFold {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        crate::lines::LineSink::feed_line(&mut self.0, line, at, warnings);
    }

    fn session(&self, _path: &Path) -> Option<Session> {
        None
    }
}

/// The index in memory: every known file, and the fold states loaded from the cache.
#[derive(Debug, Default)]
pub struct SessionIndex {
    /// Entries read by this process.
    pub(crate) entries: Vec<Entry>,
    /// Entries loaded from the cache, decoded only as far as each use needs (a warm listing
    /// copies out nothing but the sessions it returns).
    pub(crate) stored: Option<cache::Stored>,
    /// The fold states of entries loaded from the cache ([`FoldState::Stored`]), once read.
    pub(crate) blob: Vec<u8>,
    /// Until then, where they are: the cache file, kept open (a cache written meanwhile by
    /// another process replaces the name, not this file).
    pub(crate) folds_file: Option<FoldsFile>,
    /// True when something changed since the index was loaded, so it is worth saving.
    pub(crate) dirty: bool,
    /// The cache file this index stands on, and how its journal stands (see
    /// [`crate::index::cache`]): a save appends what changed to the journal while it can.
    pub(crate) base: Option<cache::Base>,
    /// Files whose saved entries went out of the index since the last save (gone, or read
    /// again: a new entry for the same path follows in the same save).
    pub(crate) drops: Vec<PathBuf>,
    /// The Codex thread names decoded when the cache was loaded, with the stamp of the names
    /// file they were read from.
    pub(crate) preloaded_names: Option<(FileStamp, ThreadNames)>,
    /// The transcripts the last refresh found changed or gone: what else is derived from the
    /// same files (the daemon's usage index) reads only these instead of walking again.
    pub(crate) changed: ChangedFiles,
    /// Read once and dropped (a listing without a cache file): no fold state is kept, since
    /// nothing saves it or resumes from it, and no [`ChangedFiles`], since every file is new to
    /// it. At 100,000 sessions those are 30 MB each, held until the listing is made. Its
    /// files' entries are packed as they are read ([`packed`]), not held.
    pub(crate) one_shot: bool,
    /// The entries packed by the last refresh of a one-shot index, after [`Self::entries`]'s.
    /// Replaced by each refresh: the index does not look into them, so a second refresh reads
    /// every file again (nothing refreshes a one-shot index twice).
    pub(crate) packed: Option<Packed>,
}

/// The transcripts one refresh found new, changed (another stamp or side file) or gone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedFiles {
    /// New or changed, as the walk saw them (Claude, Codex and Grok transcripts; not the
    /// Codex names file).
    pub changed: Vec<SourceFile>,
    pub gone: Vec<PathBuf>,
}

impl ChangedFiles {
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.gone.is_empty()
    }

    pub fn len(&self) -> usize {
        self.changed.len() + self.gone.len()
    }

    fn note(&mut self, kind: FoldKind, source: &SourceFile) {
        if kind != FoldKind::CodexNames {
            self.changed.push(source.clone());
        }
    }
}

/// The folds section of the cache file an index was loaded from.
#[derive(Debug)]
pub(crate) struct FoldsFile {
    pub file: File,
    /// Where the section starts in the file, and its length.
    pub at: u64,
    pub len: usize,
}

impl FoldsFile {
    /// `len` bytes at `at` within the section.
    fn read_range(&self, at: usize, len: usize) -> std::io::Result<Vec<u8>> {
        use std::io::{Seek, SeekFrom};
        let mut buf = vec![0u8; len];
        let mut file = &self.file;
        file.seek(SeekFrom::Start(self.at + at as u64))?;
        file.read_exact(&mut buf)?;
        Ok(buf)
    }

    pub(crate) fn read_all(&self) -> std::io::Result<Vec<u8>> {
        self.read_range(0, self.len)
    }
}

/// Options of [`SessionIndex::refresh`].
#[derive(Debug, Clone, Copy)]
pub struct RefreshOptions {
    /// Threads reading changed files (and running the three discoveries). The default is
    /// rayon's global pool (one thread per core); another count runs on a pool of its own.
    pub threads: usize,
}

impl Default for RefreshOptions {
    fn default() -> Self {
        RefreshOptions {
            threads: crate::parallel::default_threads(),
        }
    }
}

impl IndexStats {
    /// Counts one file read by this refresh, `bytes` of it.
    fn count_read(&mut self, read: ReadKind, bytes: u64) {
        match read {
            ReadKind::Appended => self.files_appended += 1,
            ReadKind::Reread => self.files_reread += 1,
            ReadKind::New => self.files_new += 1,
        }
        self.bytes_read += bytes;
    }
}

/// How a file was (or was not) read this time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadKind {
    Appended,
    Reread,
    New,
}

impl SessionIndex {
    /// An empty index: the first refresh reads every file.
    pub fn new() -> Self {
        SessionIndex::default()
    }

    /// How many files the index knows.
    pub fn len(&self) -> usize {
        self.entries.len()
            + self.packed.as_ref().map_or(0, Packed::len)
            + self.stored.as_ref().map_or(0, cache::Stored::live_count)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the index changed since it was loaded or last saved.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Brings the index up to date with the stores under `roots`, reading only what changed.
    /// Never fails: whatever cannot be read is a warning naming the file.
    pub fn refresh(
        &mut self,
        roots: &StoreRoots,
        options: RefreshOptions,
        warnings: &mut Warnings,
    ) -> IndexStats {
        let (sources, _, _) = discover_sources(
            roots,
            options.threads,
            &Agent::ALL,
            DirCache::default(),
            warnings,
        );
        self.refresh_sources(sources, &Agent::ALL, options, None, warnings)
    }

    /// [`SessionIndex::refresh`] over an already discovered list of candidate files.
    ///
    /// `agents` are the agents whose stores `sources` covers: entries of the others were not
    /// looked at, so they are kept as they are rather than dropped. `tap` is offered every
    /// transcript read from its start ([`crate::tap`]).
    pub(crate) fn refresh_sources(
        &mut self,
        sources: Vec<(FoldKind, SourceFile)>,
        agents: &[Agent],
        options: RefreshOptions,
        tap: Option<&dyn ReadTap>,
        warnings: &mut Warnings,
    ) -> IndexStats {
        let mut stats = IndexStats {
            files_seen: sources.len(),
            ..IndexStats::default()
        };
        self.changed = ChangedFiles::default();
        if let Some(stored) = &mut self.stored {
            stored.begin_refresh(agents);
        }
        // Which stored entry each file is, and whether it is unchanged: looked up on every
        // core (hashing and comparing 24,000 paths is most of a warm refresh), then applied
        // below in the files' order.
        let matched: Vec<Option<(usize, bool)>> = match &self.stored {
            Some(stored) => sources
                .par_iter()
                .with_min_len(MIN_RUN)
                .map(|(kind, source)| {
                    let i = stored.find(&source.path)?;
                    Some((i, stored.unchanged(i, *kind, source)))
                })
                .collect(),
            None => Vec::new(),
        };
        let mut matched = matched.into_iter();
        let mut old = PathTable::new(std::mem::take(&mut self.entries));
        let mut kept = Vec::with_capacity(old.slots.len());
        // An index that knows no file reads every one: the jobs are made in one allocation of
        // their exact number rather than grown by doubling (a third of it unused, and the old
        // and new buffers held together while it grows).
        let knows_none = self.stored.is_none() && old.slots.is_empty();
        let mut jobs = Vec::with_capacity(if knows_none { sources.len() } else { 0 });
        for (kind, source) in sources {
            // An entry loaded from the cache: unchanged, it stays where it is (the path the walk
            // allocated is dropped: the entry has it). Each is claimed once;
            // a second file of the same path is a new one, as below.
            if let Some(stored) = &mut self.stored
                && let Some((i, unchanged)) = matched.next().flatten()
                && stored.is_unclaimed(i)
            {
                if unchanged {
                    stats.files_unchanged += 1;
                    stored.set(i, cache::RecState::Live);
                    continue;
                }
                // A file now read by another fold is a different file to us (and one found by
                // its path's hash alone, another path, is not this one).
                let path = crate::walk::name_bytes(source.path.as_os_str());
                let old = stored
                    .with_view(i, |view| {
                        (view.kind == kind && Some(view.path) == path)
                            .then(|| Box::new(view.into_entry(None)))
                    })
                    .flatten();
                stored.set(i, cache::RecState::Dead);
                self.drops.push(source.path.clone());
                self.changed.note(kind, &source);
                jobs.push(Job {
                    kind,
                    source,
                    old,
                    known: true,
                });
                continue;
            }
            match old.take(&source.path) {
                Some(entry)
                    if entry.kind == kind
                        && entry.stamp() == source.stamp
                        && entry.sidecar_matches(&source) =>
                {
                    stats.files_unchanged += 1;
                    kept.push(entry);
                }
                // A file now read by another fold is a different file to us.
                Some(entry) if entry.kind != kind => {
                    if entry.saved {
                        self.drops.push(entry.path);
                    }
                    self.changed.note(kind, &source);
                    jobs.push(Job {
                        kind,
                        source,
                        old: None,
                        known: true,
                    })
                }
                previous => {
                    let known = previous.is_some();
                    if let Some(entry) = previous.as_ref().filter(|entry| entry.saved) {
                        self.drops.push(entry.path.clone());
                    }
                    if !self.one_shot {
                        self.changed.note(kind, &source);
                    }
                    jobs.push(Job {
                        kind,
                        source,
                        old: previous.map(Box::new),
                        known,
                    });
                }
            }
        }
        for entry in old.into_remaining() {
            if agents.contains(&entry.kind.agent()) {
                stats.files_dropped += 1;
                self.changed.gone.push(entry.path.clone());
                if entry.saved {
                    self.drops.push(entry.path);
                }
            } else {
                kept.push(entry);
            }
        }
        if let Some(stored) = &mut self.stored {
            let gone = stored.end_refresh();
            stats.files_dropped += gone.len();
            self.changed.gone.extend(gone.iter().cloned());
            self.drops.extend(gone);
        }

        // A file that changed may resume from its stored fold: only those folds are read, by
        // their ranges in the cache file (the whole folds section — 500 bytes a session — is
        // never held for a few changed files).
        if self.blob.is_empty()
            && let Some(source) = &self.folds_file
        {
            for entry in jobs.iter_mut().filter_map(|job| job.old.as_mut()) {
                if let FoldState::Stored { at, len, hash } = entry.fold {
                    entry.fold = match source.read_range(at, len) {
                        Ok(bytes) if hash64(&bytes) == hash => {
                            String::from_utf8(bytes).map_or(FoldState::Missing, FoldState::Fresh)
                        }
                        Ok(_) | Err(_) => FoldState::Missing,
                    };
                }
            }
        }
        if self.one_shot {
            // Read once and dropped: the entries are packed as they are read (see `packed`).
            let packer = Packer::with_room(jobs.len());
            let results = run_jobs_packed(jobs, options.threads, &self.blob, &packer, tap);
            let files = results.len();
            for result in results {
                stats.count_read(result.read, result.bytes_read);
                warnings.items.extend(result.warnings);
                match result.kept {
                    Kept::Held(entry) => kept.push(*entry),
                    Kept::Packed | Kept::Unread => {}
                }
            }
            self.packed = Some(packer.finish(files));
        } else {
            self.read_held(jobs, options, tap, &mut stats, &mut kept, warnings);
        }

        self.dirty |= stats.files_dropped > 0
            || stats.files_appended > 0
            || stats.files_reread > 0
            || stats.files_new > 0;
        self.entries = kept;
        stats
    }

    /// Reads `jobs` into entries held in the index, after `kept`.
    fn read_held(
        &self,
        jobs: Vec<Job>,
        options: RefreshOptions,
        tap: Option<&dyn ReadTap>,
        stats: &mut IndexStats,
        kept: &mut Vec<Entry>,
        warnings: &mut Warnings,
    ) {
        let results = run_jobs(
            jobs,
            options.threads,
            &self.blob,
            /*keep_folds*/ true,
            tap,
        );
        // Collected in place: the entries take the results' own allocation, so the two are
        // never held together (a cold listing reads every file: at 100,000 sessions each is
        // 40 MB).
        let read: Vec<Entry> = results
            .into_iter()
            .filter_map(|result| {
                stats.count_read(result.read, result.bytes_read);
                warnings.items.extend(result.warnings);
                result.entry
            })
            .collect();
        if kept.is_empty() {
            *kept = read;
        } else {
            kept.extend(read);
        }
    }

    /// Reads the folds section from the cache file, if it was not read yet. A file that cannot
    /// be read leaves no folds: the files that need one are read from the start.
    pub(crate) fn load_folds(&mut self) {
        if let Some(source) = self.folds_file.take() {
            self.blob = source.read_all().unwrap_or_default();
        }
    }

    /// The JSON text of an entry's fold state, if it is intact.
    pub(crate) fn fold_text<'a>(blob: &'a [u8], fold: &'a FoldState) -> Option<&'a [u8]> {
        match fold {
            FoldState::Stored { at, len, hash } => blob
                .get(*at..at.checked_add(*len)?)
                .filter(|bytes| hash64(bytes) == *hash),
            FoldState::Fresh(text) => Some(text.as_bytes()),
            FoldState::Missing => None,
        }
    }

    /// The Codex thread names the index has read from `session_index.jsonl`.
    pub fn codex_names(&self) -> ThreadNames {
        self.names_fold()
            .and_then(|(_, text)| serde_json::from_slice::<NamesFold>(&text).ok())
            .map(|names| names.0)
            .unwrap_or_default()
    }

    /// [`SessionIndex::codex_names`], taking the names decoded when the cache was loaded if the
    /// names file has not changed since (see [`SessionIndex::preload_codex_names`]).
    pub(crate) fn take_codex_names(&mut self) -> ThreadNames {
        match (self.preloaded_names.take(), self.names_stamp()) {
            (Some((then, names)), Some(now)) if then == now => names,
            (_, None) => ThreadNames::default(),
            (_, Some(_)) => self.codex_names(),
        }
    }

    /// Decodes the names now, on the thread loading the cache, so the listing does not wait for
    /// it after the walk.
    pub(crate) fn preload_codex_names(&mut self) {
        if let Some(stamp) = self.names_stamp() {
            self.preloaded_names = Some((stamp, self.codex_names()));
        }
    }

    /// The stamp of the names file's entry.
    fn names_stamp(&self) -> Option<FileStamp> {
        let owned = self
            .entries
            .iter()
            .find(|entry| entry.kind == FoldKind::CodexNames)
            .map(Entry::stamp);
        owned.or_else(|| {
            let stored = self.stored.as_ref()?;
            stored.with_view(stored.live_of(FoldKind::CodexNames).next()?, |view| {
                FileStamp {
                    size: view.size,
                    mtime_ns: view.mtime_ns,
                }
            })
        })
    }

    /// The stamp and fold state (JSON) of the names file's entry, if it is intact.
    fn names_fold(&self) -> Option<(FileStamp, std::borrow::Cow<'_, [u8]>)> {
        use std::borrow::Cow;
        if let Some(entry) = self
            .entries
            .iter()
            .find(|entry| entry.kind == FoldKind::CodexNames)
        {
            let text = SessionIndex::fold_text(&self.blob, &entry.fold)?;
            return Some((entry.stamp(), Cow::Borrowed(text)));
        }
        let stored = self.stored.as_ref()?;
        let entry = stored.with_view(stored.live_of(FoldKind::CodexNames).next()?, |view| {
            view.into_entry(None)
        })?;
        let text = match (&entry.fold, &self.folds_file) {
            // Only this fold is read from the file, not the whole section.
            (FoldState::Stored { at, len, hash }, Some(source)) => source
                .read_range(*at, *len)
                .ok()
                .filter(|bytes| hash64(bytes) == *hash)?,
            (fold, _) => SessionIndex::fold_text(&self.blob, fold)?.to_vec(),
        };
        Some((entry.stamp(), Cow::Owned(text)))
    }

    /// What the index holds in memory, by part (see [`IndexBytes`]).
    pub fn heap_bytes(&self) -> IndexBytes {
        let mut bytes = IndexBytes {
            entries: self.entries.len(),
            records: self.entries.capacity() * std::mem::size_of::<Entry>(),
            blob: self.blob.capacity(),
            ..IndexBytes::default()
        };
        for entry in &self.entries {
            bytes.paths += entry.path.capacity();
            if let FoldState::Fresh(text) = &entry.fold {
                bytes.folds += text.capacity();
            }
            if let Some(sidecar) = &entry.sidecar {
                bytes.paths += sidecar.path.capacity();
            }
            if let Some(session) = &entry.session {
                bytes.sessions += session.heap_bytes();
            }
        }
        if let Some(stored) = &self.stored {
            bytes.stored = stored.heap_bytes();
        }
        bytes
    }

    /// Every session the index knows, as each file's fold describes it (names from side
    /// files and duplicate Codex rollouts are handled by [`crate::scan`]).
    pub fn sessions(&self) -> Vec<Session> {
        self.sessions_of(&Agent::ALL)
    }

    /// Whether entries it left in the cache file did not read back as they were loaded (the
    /// file changed in place under it): what it lists from them cannot be trusted.
    pub(crate) fn cache_damaged(&self) -> bool {
        self.stored.as_ref().is_some_and(cache::Stored::is_damaged)
    }

    /// The sessions of `agents` (copies; the index stays).
    pub fn sessions_of(&self, agents: &[Agent]) -> Vec<Session> {
        let mut sessions: Vec<Session> = self
            .entries
            .iter()
            .filter_map(|entry| entry.session.as_ref())
            .filter(|session| agents.contains(&session.agent))
            .cloned()
            .collect();
        if let Some(packed) = &self.packed {
            packed.sessions(agents, &mut sessions);
        }
        if let Some(stored) = &self.stored {
            let live: Vec<usize> = stored.live_of_agents(agents).collect();
            stored.sessions_into(&live, agents, &mut sessions);
        }
        sessions
    }

    /// The sessions of `agents`, as [`SessionIndex::sessions_of`] but without copying: the
    /// index is used up.
    pub fn into_sessions(mut self, agents: &[Agent]) -> Vec<Session> {
        let mut sessions: Vec<Session> = std::mem::take(&mut self.entries)
            .into_iter()
            .filter_map(|entry| entry.session)
            .filter(|session| agents.contains(&session.agent))
            .collect();
        if let Some(packed) = self.packed.take() {
            packed.into_sessions(agents, &mut sessions);
        }
        if let Some(mut stored) = self.stored.take() {
            let live: Vec<usize> = stored.take_live(agents).collect();
            stored.sessions_into(&live, agents, &mut sessions);
        }
        sessions
    }
}
