//! Usage kept current in a long-lived process (the daemon): every usage file's reader is kept
//! with the byte offset it has read to, and a refresh feeds it only the bytes appended since —
//! as the session index does for the listing (`cross_agent_stores::index`).
//!
//! On a refresh, for each file the stores list (and each Claude sub-agent transcript):
//! - same size and mtime → nothing is opened;
//! - grown, same inode, written lately → the kept reader is fed the bytes after its offset;
//! - shrunk, or another inode at the path (replaced) → read again from the start;
//! - idle (still for [`crate::IDLE_AFTER`]: no reader is kept, only its parse) → read again
//!   from the start on any change;
//! - compressed (`.jsonl.zst`) → read whole whenever its stamp changes;
//! - new files are read; files gone drop out.
//!
//! A refresh after a change need not walk the stores: [`UsageIndex::refresh_changed`] takes the
//! files the session index's walk found changed (`LiveScanner::changes_since`), plus the
//! sub-agent transcripts of the sessions that changed lately, and looks at those only. The whole
//! walk ([`UsageIndex::refresh`]) is for the first read, other roots, and the periodic re-walk
//! that catches what no change pointed at. Files are read in parallel, on the session index's
//! readers ([`cross_agent_stores::parallel::read_files`]).
//!
//! What counts once across files is decided by [`crate::ledger`], by the rules of
//! [`crate::account`]: after a change, only for the calls the changed files record (a copy in
//! one file is only known to be a copy by comparing it with the others, so those are compared
//! again), every other file's share kept. It is kept until the next change, so a warm query
//! prices the kept shares and reads nothing.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use cross_agent_protocol::Agent;
use cross_agent_stores::index::ChangedFiles;
use cross_agent_stores::{FileStamp, StoreRoots, Warnings};

use crate::account::Accounting;
use crate::entry::{Entry, Kept};
use crate::handoff::Handoffs;
use crate::ledger::{Ledger, LedgerStats};
use crate::path_slots::PathSlots;
use crate::scan::{CHUNK, claude_subagent_files, open_no_follow, read_one, subagent_files_of};
use crate::spill::Spill;
use crate::{FileRef, scan};

/// What one refresh did, counted so tests can show that a warm refresh reads nothing and an
/// append reads about what was appended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefreshStats {
    /// Whether the stores were walked (every usage file `stat`ed), not only the changed files.
    pub walked: bool,
    /// Files looked at: every one a walk found, or the changed ones (each `stat`ed or opened).
    pub files_seen: usize,
    /// Sub-agent folders of lately changed sessions listed (a refresh after a change).
    pub folders_listed: usize,
    pub files_unchanged: usize,
    pub files_appended: usize,
    /// Known files read again from the start (shrunk, replaced, compressed).
    pub files_reread: usize,
    pub files_new: usize,
    pub files_dropped: usize,
    pub bytes_read: u64,
    /// Files taken as the session index read them ([`crate::handoff`]), each then kept,
    /// resumed or read again as if it were this index's own last read.
    pub files_handed: usize,
    /// Files whose kept parse was made again in a row after the read ([`Entry::compacted`]),
    /// and how long that took.
    pub files_compacted: usize,
    pub compacting: Duration,
}

impl RefreshStats {
    fn add(&mut self, other: &RefreshStats) {
        self.files_appended += other.files_appended;
        self.files_reread += other.files_reread;
        self.files_new += other.files_new;
        self.bytes_read += other.bytes_read;
    }
}

/// How long after its transcript last changed a Claude session's sub-agent folder is listed on
/// every refresh after a change: a sub-agent writes its own file while the session's may stay
/// still for minutes. Later sub-agent writes wait for the periodic walk.
pub(crate) const HOT: Duration = Duration::from_secs(15 * 60);

/// A file to look at: what the stores list, and the sub-agent transcripts.
#[derive(Debug)]
struct Candidate {
    agent: Agent,
    path: PathBuf,
    stamp: FileStamp,
    compressed: bool,
}

/// How many files a refresh reads (or takes from the session index) before what it keeps of
/// them is made again in a row ([`Entry::compacted`]): the cold refresh, a change of roots, a
/// re-walk after many changes. Fewer leave at most ~1,000 files' calls (~1.5 MB at 22,000
/// sessions, where a file keeps ~1.5 KB) thinly spread, within what the allocator keeps
/// spare anyway, and the pages they sit on are reused by the next reads.
pub(crate) const COMPACT_AFTER: usize = 1_000;

/// Every file's entry, by path.
type Entries = PathSlots<Entry>;

/// Every usage file's kept parse, and the accounting over them while nothing changes.
#[derive(Debug, Default)]
pub struct UsageIndex {
    roots: Option<StoreRoots>,
    /// Every file's entry in one list, found by the parse's own path ([`crate::path_slots`]).
    entries: Entries,
    accounting: Option<Arc<Accounting>>,
    /// The accounting kept current by file.
    ledger: Ledger,
    /// Files read, dropped or handed over since the accounting was last decided (each path the
    /// entry's own, not a copy, where the file has an entry).
    dirty: HashSet<Arc<Path>>,
    /// Claude session folders (`projects/<slug>/<session>`) whose transcript changed lately,
    /// with when: their `subagents/` are listed on each refresh after a change.
    hot: HashMap<PathBuf, Instant>,
    /// The files the session index read since the last refresh, parsed on its read
    /// ([`crate::handoff`]): taken in place of reading them again.
    handoffs: Option<Arc<Handoffs>>,
    /// Where the files' call records are written once read ([`crate::spill`]); `None`: kept
    /// on the heap.
    spill: Option<Arc<Spill>>,
}

impl UsageIndex {
    pub fn new() -> UsageIndex {
        UsageIndex::default()
    }

    /// An index that takes the files the session index reads from `handoffs` (give the
    /// scanner [`Handoffs::tap`]) instead of reading them again.
    pub fn with_handoffs(handoffs: Arc<Handoffs>) -> UsageIndex {
        UsageIndex {
            handoffs: Some(handoffs),
            ..UsageIndex::default()
        }
    }

    /// The index with its files' call records written to unnamed files in `dir` once read,
    /// read back when a report or the accounting looks at them ([`crate::spill`]): the heap
    /// keeps only where they are.
    pub fn with_records_in(mut self, dir: &Path) -> UsageIndex {
        self.spill = Some(Spill::new(dir));
        self
    }

    /// The first read back of call records that failed, naming their directory: a report made
    /// with them is not whole and must be an error.
    pub fn records_failure(&self) -> Option<String> {
        self.spill.as_ref().and_then(|spill| spill.failure())
    }

    /// How many files are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many files keep their reader (written within [`crate::IDLE_AFTER`] of their last
    /// read); the others keep only their parse.
    pub fn readers(&self) -> usize {
        self.entries
            .values()
            .filter(|entry| entry.reading())
            .count()
    }

    /// Brings every file under `roots` current, walking the stores and reading only what
    /// changed; whatever cannot be read is a warning naming it (its last good parse is dropped,
    /// so nothing stale counts). Other roots than last time start the index afresh.
    pub fn refresh(&mut self, roots: &StoreRoots, warnings: &mut Vec<String>) -> RefreshStats {
        self.start_again_after_a_failed_read();
        self.use_roots(roots);
        let candidates = candidates(roots, warnings);
        let mut stats = RefreshStats {
            walked: true,
            files_seen: candidates.len(),
            ..RefreshStats::default()
        };
        let mut old =
            std::mem::replace(&mut self.entries, Entries::with_capacity(candidates.len()));
        let mut changed = self.read_changed(candidates, &mut old, &mut stats, warnings);
        stats.files_dropped = old.len();
        changed |= !old.is_empty();
        self.dirty
            .extend(old.into_values().map(|entry| entry.parse().path().clone()));
        if changed {
            self.accounting = None;
        }
        self.hot.retain(|_, at| at.elapsed() < HOT);
        stats
    }

    /// Brings the files in `changes` current (what the session index's walks found changed or
    /// gone since the last refresh), and the sub-agent transcripts of the Claude sessions that
    /// changed lately, without walking the stores. Other roots than last time, or an index never
    /// walked, are walked whole ([`UsageIndex::refresh`]).
    pub fn refresh_changed(
        &mut self,
        roots: &StoreRoots,
        changes: &[Arc<ChangedFiles>],
        warnings: &mut Vec<String>,
    ) -> RefreshStats {
        self.start_again_after_a_failed_read();
        if self.roots.as_ref() != Some(roots) {
            return self.refresh(roots, warnings);
        }
        let now = Instant::now();
        let mut stats = RefreshStats::default();
        let mut changed = false;
        // The last word on each path wins: a file gone and then back is read.
        let mut wanted: HashMap<PathBuf, Option<Candidate>> = HashMap::new();
        for walk in changes {
            for path in &walk.gone {
                wanted.insert(path.clone(), None);
            }
            for source in &walk.changed {
                if source.agent == Agent::Claude {
                    self.hot.insert(source.path.with_extension(""), now);
                }
                wanted.insert(
                    source.path.clone(),
                    Some(Candidate {
                        agent: source.agent,
                        path: source.path.clone(),
                        stamp: source.stamp,
                        compressed: source.compressed,
                    }),
                );
            }
        }
        self.hot.retain(|_, at| at.elapsed() < HOT);
        for folder in self.hot.keys() {
            stats.folders_listed += 1;
            for path in subagent_files_of(folder, warnings) {
                if let Some(c) = subagent_candidate(path, warnings) {
                    wanted.insert(c.path.clone(), Some(c));
                }
            }
        }
        let mut candidates = Vec::new();
        let mut old = Entries::default();
        for (path, candidate) in wanted {
            let entry = self.entries.remove(path.as_path());
            match candidate {
                Some(c) => {
                    if let Some(entry) = entry {
                        old.insert(entry);
                    }
                    candidates.push(c);
                }
                None => {
                    if let Some(entry) = entry {
                        stats.files_dropped += 1;
                        changed = true;
                        self.dirty.insert(entry.parse().path().clone());
                    }
                }
            }
        }
        stats.files_seen = candidates.len();
        changed |= self.read_changed(candidates, &mut old, &mut stats, warnings);
        if changed {
            self.accounting = None;
        }
        stats
    }

    /// After a read back of call records failed ([`UsageIndex::records_failure`]: the report
    /// made then was an error), everything is read again from the stores into fresh record
    /// files: what the records said is not trusted, the transcripts are the truth.
    fn start_again_after_a_failed_read(&mut self) {
        if let Some(spill) = &self.spill
            && spill.failure().is_some()
        {
            self.spill = Some(Spill::new(spill.dir()));
            self.roots = None;
        }
    }

    /// Other roots than last time start the index afresh.
    fn use_roots(&mut self, roots: &StoreRoots) {
        if self.roots.as_ref() != Some(roots) {
            self.entries.clear();
            self.hot.clear();
            self.accounting = None;
            self.ledger = Ledger::default();
            self.dirty.clear();
            self.roots = Some(roots.clone());
        }
    }

    /// Keeps the candidates whose entry in `old` has their stamp, reads the others in
    /// parallel, and puts both in the index (taking them out of `old`); true when any was read.
    fn read_changed(
        &mut self,
        candidates: Vec<Candidate>,
        old: &mut Entries,
        stats: &mut RefreshStats,
        warnings: &mut Vec<String>,
    ) -> bool {
        // What the session index read meanwhile is the latest read of those files: it stands
        // in for this index's own (kept, resumed or read again like it); the rest is dropped.
        let mut handed = self
            .handoffs
            .as_ref()
            .map(|handoffs| handoffs.take())
            .unwrap_or_default();
        let mut jobs = Vec::new();
        let mut changed = false;
        let now = SystemTime::now();
        // Handed over unchanged: read on the session index's threads, so compacted with the read.
        let mut taken = Vec::new();
        for c in candidates {
            let mine = old.remove(c.path.as_path());
            let handed_entry = handed.remove(&c.path);
            let handed_over = handed_entry.is_some();
            let previous = match handed_entry {
                Some(entry) => {
                    stats.files_handed += 1;
                    changed = true;
                    Some(*entry)
                }
                None => mine,
            };
            match previous {
                Some(entry) if entry.agent() == c.agent && entry.stamp() == c.stamp => {
                    stats.files_unchanged += 1;
                    let entry = entry.idled(now);
                    if handed_over {
                        taken.push(entry);
                    } else {
                        self.entries.insert(entry);
                    }
                }
                previous => jobs.push((c, previous)),
            }
        }
        changed |= !jobs.is_empty();
        // Each file read or handed over is dirty by its fresh entry's path (below); one that
        // left no entry by its own.
        let results = cross_agent_stores::parallel::read_files(jobs, |(c, previous)| {
            let mut counted = RefreshStats::default();
            let result = read(&c, previous, &mut counted);
            let no_entry = (!matches!(result, Ok(Some(_)))).then_some(c.path);
            (result, counted, no_entry)
        });
        let compact = taken.len() + results.len() >= COMPACT_AFTER;
        let mut fresh = taken;
        for (result, counted, no_entry) in results {
            stats.add(&counted);
            if let Some(path) = no_entry {
                self.dirty.insert(Arc::from(path));
            }
            match result {
                Ok(Some(entry)) => fresh.push(entry),
                Ok(None) => {}
                Err(message) => warnings.push(message),
            }
        }
        let at = Instant::now();
        for mut entry in fresh {
            if let Some(spill) = &self.spill {
                entry.spill(spill);
            }
            let entry = if compact {
                stats.files_compacted += 1;
                entry.compacted()
            } else {
                entry
            };
            // Dirty by the entry's own path, after the compaction made it afresh.
            self.dirty.insert(entry.parse().path().clone());
            self.entries.insert(entry);
        }
        if compact {
            stats.compacting = at.elapsed();
        }
        self.entries.trim();
        changed |= self.move_records_left();
        if let Some(warning) = self.spill.as_ref().and_then(|spill| spill.take_warning()) {
            warnings.push(warning);
        }
        changed
    }

    /// After the record file was left for a fresh one (more than half of it dead), the lists
    /// still in it are written again to the fresh one, and their files are taken out of the
    /// ledger and put in again, so the ledger and the shares let go of the old lists and the
    /// old file is gone with them. True when any was moved.
    fn move_records_left(&mut self) -> bool {
        let Some(spill) = self.spill.clone() else {
            return false;
        };
        if !spill.take_left() {
            return false;
        }
        let mut moved = false;
        for entry in self.entries.values_mut() {
            let path = entry.parse().path().clone();
            let Some(calls) = entry.reader.calls_mut() else {
                continue;
            };
            if !calls.in_a_file_left(&spill) {
                continue;
            }
            // Not read back: the failure is kept, and the next refresh reads the stores again.
            if crate::calls::load_shared(calls).is_ok() {
                Arc::make_mut(calls).spill(&spill);
                self.dirty.insert(path);
                moved = true;
            }
        }
        moved
    }

    /// What counts once, and for whom, over every kept parse: decided again, for what the
    /// changed files touch only, after a refresh that changed something.
    pub fn accounting(&mut self) -> Arc<Accounting> {
        if let Some(kept) = &self.accounting
            && self.dirty.is_empty()
        {
            return kept.clone();
        }
        let entries = &self.entries;
        let parse = |path: &Path| entries.get(path).map(|entry| entry.parse());
        let accounting = Arc::new(self.ledger.update(
            self.dirty.drain(),
            &parse,
            self.spill.as_ref(),
        ));
        // A cold build left room for every file's path in the set (2 MB of buckets at
        // 111,000 files), kept by `drain`: given back, as a refresh's few need little.
        self.dirty.shrink_to(0);
        self.accounting = Some(accounting.clone());
        accounting
    }

    /// Where the index's heap bytes are, by part, estimated from what each part holds (not
    /// counted by the allocator; `usage_memory` prints it beside the live heap).
    pub fn heap_parts(&self) -> Vec<(&'static str, usize)> {
        use std::mem::size_of;
        let mut parts = Vec::new();
        let mut entries = self.entries.heap_bytes();
        let mut paths = 0;
        let mut names = 0;
        let mut calls = 0;
        let mut records = 0;
        let mut turns = 0;
        for entry in self.entries.values() {
            let file = entry.parse();
            paths += file.path().as_os_str().len() + 16;
            // Cwds are shared by every file that names them: not counted per file.
            // An id held in the path is the path's; one with its own text counts here.
            let (list, id, strings) = match file {
                FileRef::Claude(f) => (
                    Some(&f.messages),
                    &f.session_id,
                    [f.parent_session.as_deref(), None],
                ),
                FileRef::Codex(f) => {
                    if f.relations.is_some() {
                        names += size_of::<crate::codex::Relations>();
                    }
                    (
                        Some(&f.calls),
                        &f.thread_id,
                        [f.forked_from(), f.parent_thread()],
                    )
                }
                FileRef::Grok(f) => {
                    turns += f.turns.capacity() * size_of::<crate::grok::GrokTurn>();
                    (None, &f.session_id, [None, None])
                }
            };
            names += id.as_ref().map_or(0, crate::Name::own_heap_bytes);
            // Each its own allocation (with an `Arc`'s two counts beside the text).
            names += strings
                .iter()
                .map(|s| s.map_or(0, |s| s.len() + 16))
                .sum::<usize>();
            if let Some(list) = list {
                // The list itself with its `Arc`'s counts, and what it holds.
                calls += size_of::<crate::calls::CallList>() + 16 + list.heap_bytes();
                records += list.len();
            }
            if let Kept::Reading(reading) = &entry.reader {
                entries += size_of_val(&**reading);
            }
        }
        parts.push(("entries (readers, stamps, map)", entries));
        parts.push(("paths", paths));
        parts.push(("file names (ids, cwds)", names));
        parts.push(("call lists", calls));
        parts.push(("Grok turns", turns));
        parts.push((
            "changed files (their set's room)",
            self.dirty.capacity() * (size_of::<Arc<Path>>() + 1),
        ));
        self.ledger.heap_parts(&mut parts);
        parts.push(("(call records)", records));
        parts
    }

    /// What the last decision of [`UsageIndex::accounting`] looked at.
    pub fn accounting_stats(&self) -> LedgerStats {
        self.ledger.stats()
    }
}

/// The files a whole scan would read, with their stamps.
fn candidates(roots: &StoreRoots, warnings: &mut Vec<String>) -> Vec<Candidate> {
    let mut found = Warnings::default();
    let mut out: Vec<Candidate> = Vec::new();
    for source in scan::sources(roots, &mut found) {
        out.push(Candidate {
            agent: source.agent,
            path: source.path,
            stamp: source.stamp,
            compressed: source.compressed,
        });
    }
    if let Some(config) = &roots.claude_config {
        let projects = cross_agent_stores::claude::projects_dir(config);
        for path in claude_subagent_files(&projects, warnings) {
            out.extend(subagent_candidate(path, warnings));
        }
    }
    warnings.extend(
        found
            .items
            .into_iter()
            .map(|w| format!("{}: {}", w.path.display(), w.message)),
    );
    out
}

/// A sub-agent transcript with its stamp, or a warning naming it.
fn subagent_candidate(path: PathBuf, warnings: &mut Vec<String>) -> Option<Candidate> {
    match fs::symlink_metadata(&path) {
        Ok(meta) => Some(Candidate {
            agent: Agent::Claude,
            stamp: stamp_of(&meta),
            path,
            compressed: false,
        }),
        Err(e) => {
            warnings.push(format!("cannot read {}: {e}", path.display()));
            None
        }
    }
}

fn stamp_of(meta: &fs::Metadata) -> FileStamp {
    FileStamp {
        size: meta.len(),
        mtime_ns: Some(meta.mtime() * 1_000_000_000 + meta.mtime_nsec()),
    }
}

/// Reads what changed in one file: the appended bytes when it only grew, else all of it.
fn read(
    c: &Candidate,
    previous: Option<Entry>,
    stats: &mut RefreshStats,
) -> Result<Option<Entry>, String> {
    let known = previous.is_some();
    if c.compressed {
        // Nothing to resume in a compressed stream: read whole, as a scan does.
        let parsed = read_one(c.agent, &c.path, true)?;
        if known {
            stats.files_reread += 1;
        } else {
            stats.files_new += 1;
        }
        stats.bytes_read += c.stamp.size;
        return Ok(parsed.map(|parsed| Entry::new(c.stamp, /*ino*/ None, Kept::Idle(parsed))));
    }
    let file = match open_no_follow(&c.path) {
        Ok(file) => Some(file),
        // Grok's `updates.jsonl` may not exist yet: a session with nothing recorded.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && c.agent == Agent::Grok => None,
        Err(e) => return Err(scan::open_error(&c.path, &e)),
    };
    let io_error = |e: std::io::Error| format!("cannot read {}: {e}", c.path.display());
    let (ino, size) = match &file {
        Some(file) => {
            let meta = file.metadata().map_err(io_error)?;
            (Some((meta.dev(), meta.ino())), meta.len())
        }
        None => (None, 0),
    };
    // Resumed only when the same file grew: same inode, not shorter than what was read.
    let resume = previous.filter(|entry| {
        entry.agent() == c.agent
            && entry.ino().is_some()
            && entry.ino() == ino
            && size >= entry.stamp().size
            && entry.reading()
    });
    // A reader whose calls cannot be read back from disk starts again from the file's start.
    let resume = resume.and_then(|mut entry| entry.reader.load_calls().ok().map(|()| entry));
    let (mut reader, mut offset) = match resume {
        Some(entry) => {
            stats.files_appended += 1;
            {
                let size = entry.stamp().size;
                (entry.reader, size)
            }
        }
        None => {
            if known {
                stats.files_reread += 1;
            } else {
                stats.files_new += 1;
            }
            let Some(reader) = Kept::new(c.agent, &c.path) else {
                return Ok(None);
            };
            (reader, 0)
        }
    };
    if let Some(mut file) = file {
        file.seek(SeekFrom::Start(offset)).map_err(io_error)?;
        let mut chunk = vec![0u8; CHUNK];
        loop {
            match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    reader.feed(&chunk[..n]);
                    offset += n as u64;
                    stats.bytes_read += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(e)),
            }
        }
    }
    // What was read, not what the walk saw before: a write in between shows next time.
    let stamp = if offset == c.stamp.size {
        c.stamp
    } else {
        FileStamp {
            size: offset,
            mtime_ns: None,
        }
    };
    Ok(Some(Entry::new(stamp, ino, reader)))
}
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::IDLE_AFTER;
    use crate::{GroupBy, PriceTable, Report, account};

    /// A Claude store of `sessions` transcripts of three replies each under `home`.
    fn claude_store(home: &Path, sessions: usize) -> StoreRoots {
        let config = home.join(".claude");
        let project = config.join("projects/-work-shop");
        fs::create_dir_all(&project).unwrap();
        for s in 0..sessions {
            let text: String = (0..3)
                .map(|n| {
                    format!(
                        r#"{{"type":"assistant","sessionId":"s{s}","requestId":"r{s}-{n}","timestamp":"2026-12-01T10:00:0{n}.000Z","message":{{"id":"m{s}-{n}","model":"claude-sonnet-4-5-20250929","usage":{{"input_tokens":{},"output_tokens":7}}}}}}"#,
                        s * 10 + n
                    ) + "\n"
                })
                .collect();
            fs::write(project.join(format!("s{s}.jsonl")), text).unwrap();
        }
        StoreRoots {
            claude_config: Some(config),
            ..StoreRoots::default()
        }
    }

    /// Records that cannot be read back (the record file cut short under the index): the report
    /// made with them is known not to be whole — the failure names the records' directory —
    /// and the next refresh reads the stores again, after which the figures are exact.
    #[test]
    fn a_damaged_read_back_is_a_failure_naming_the_directory_and_the_stores_are_read_again() {
        let home = tempfile::tempdir().unwrap();
        let records = tempfile::tempdir().unwrap();
        let roots = claude_store(home.path(), 20);
        let mut index = UsageIndex::new().with_records_in(records.path());
        let mut warnings = Vec::new();
        index.refresh(&roots, &mut warnings);
        assert_eq!(warnings, Vec::<String>::new());
        let prices = PriceTable::shipped().unwrap();
        let fresh = Report::build(
            &account(&crate::scan::scan(&roots).files),
            &prices,
            GroupBy::Session,
            None,
        );
        let accounting = index.accounting();
        assert_eq!(
            Report::build(&accounting, &prices, GroupBy::Session, None),
            fresh
        );
        assert_eq!(index.records_failure(), None);

        index.spill.as_ref().unwrap().damage();
        let damaged = Report::build(&accounting, &prices, GroupBy::Session, None);
        assert_ne!(damaged, fresh);
        let failure = index.records_failure().unwrap();
        assert!(
            failure.contains(&records.path().display().to_string()),
            "{failure}"
        );

        drop(accounting);
        let stats = index.refresh(&roots, &mut warnings);
        assert_eq!(stats.files_new, 20);
        assert_eq!(index.records_failure(), None);
        let accounting = index.accounting();
        assert_eq!(
            Report::build(&accounting, &prices, GroupBy::Session, None),
            fresh
        );
    }

    /// The record files this process holds open in `dir` (unnamed: `/proc/self/fd` links to
    /// them read `<dir>/#<inode> (deleted)`).
    fn record_files_open(dir: &Path) -> usize {
        fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|fd| fs::read_link(fd.ok()?.path()).ok())
            .filter(|target| target.starts_with(dir))
            .count()
    }

    /// Half the files grow round after round (each list taken back, written again, the old
    /// region dead) while the other half stay as they were: once more than half of the record
    /// file is dead, later lists go to a fresh file, the idle files' lists are moved there and
    /// taken out of the ledger and put in again, and the old file is gone — the reports exact
    /// throughout (the ledger's key states are in a file of their own, written in place).
    #[test]
    fn a_record_file_more_than_half_dead_is_left_and_its_lists_moved_out() {
        let home = tempfile::tempdir().unwrap();
        let records = tempfile::tempdir().unwrap();
        let roots = claude_store(home.path(), 10);
        let project = home.path().join(".claude/projects/-work-shop");
        let mut index = UsageIndex::new();
        index.spill = Some(Spill::rotating_from(records.path(), 1_000));
        let prices = PriceTable::shipped().unwrap();
        let mut warnings = Vec::new();
        let mut left = 0;
        let mut stale = None;
        for round in 0..12 {
            index.refresh(&roots, &mut warnings);
            assert_eq!(warnings, Vec::<String>::new());
            let accounting = index.accounting();
            let fresh = account(&crate::scan::scan(&roots).files);
            for by in [GroupBy::Session, GroupBy::Day] {
                assert_eq!(
                    Report::build(&accounting, &prices, by, None),
                    Report::build(&fresh, &prices, by, None),
                    "round {round}"
                );
            }
            drop(accounting);
            let (written, dead) = index.spill.as_ref().unwrap().bytes_written_and_dead();
            // The round after a file more than half dead: a fresh one, holding every list (the
            // idle files' moved), none of them dead yet.
            if let Some((before, _)) = stale {
                assert!(
                    written < before && dead == 0,
                    "round {round}: {written} {dead}"
                );
                left += 1;
            }
            stale = (written >= 1_000 && dead * 2 > written).then_some((written, dead));
            // One record file, and the ledger's key states' ([`crate::states`]).
            assert_eq!(record_files_open(records.path()), 2, "round {round}");
            for s in 0..5 {
                let line = format!(
                    r#"{{"type":"assistant","sessionId":"s{s}","requestId":"x{round}","timestamp":"2026-12-01T11:00:00.000Z","message":{{"id":"x{s}-{round}","model":"claude-sonnet-4-5-20250929","usage":{{"input_tokens":3,"output_tokens":7}}}}}}"#
                ) + "\n";
                let mut file = fs::OpenOptions::new()
                    .append(true)
                    .open(project.join(format!("s{s}.jsonl")))
                    .unwrap();
                std::io::Write::write_all(&mut file, line.as_bytes()).unwrap();
            }
        }
        assert!(left >= 2, "the record file was left {left} times");
        assert_eq!(index.records_failure(), None);
    }

    /// Files still for [`crate::IDLE_AFTER`] keep no reader: their entries (each in the index's
    /// one list, with its slot in the table beside it) come to at most 192 bytes a file, where
    /// each entry took 224 with its reader.
    #[test]
    fn idle_files_keep_no_reader_and_their_entries_take_at_most_192_bytes_each() {
        let home = tempfile::tempdir().unwrap();
        let files = 200;
        let roots = claude_store(home.path(), files);
        let then = std::time::SystemTime::now() - IDLE_AFTER - Duration::from_secs(60);
        let project = home.path().join(".claude/projects/-work-shop");
        for s in 0..files {
            let file = fs::OpenOptions::new()
                .write(true)
                .open(project.join(format!("s{s}.jsonl")))
                .unwrap();
            file.set_modified(then).unwrap();
        }
        let mut index = UsageIndex::new();
        let mut warnings = Vec::new();
        index.refresh(&roots, &mut warnings);
        assert_eq!((index.len(), index.readers()), (files, 0));
        let entries = index
            .heap_parts()
            .into_iter()
            .find(|(part, _)| part.starts_with("entries"))
            .unwrap()
            .1;
        assert!(entries <= files * 192, "{entries} bytes for {files} files");
    }
}
