//! Usage kept current in a long-lived process (the daemon): every usage file's reader is kept
//! with the byte offset it has read to, and a refresh feeds it only the bytes appended since —
//! as the session index does for the listing (`cross_agent_stores::index`).
//!
//! On a refresh, for each file the stores list (and each Claude sub-agent transcript):
//! - same size and mtime → nothing is opened;
//! - grown, same inode → the kept reader is fed the bytes after its offset;
//! - shrunk, or another inode at the path (replaced) → read again from the start;
//! - compressed (`.jsonl.zst`) → read whole whenever its stamp changes;
//! - new files are read; files gone drop out.
//!
//! What counts once across files is decided again by [`crate::account`] over every kept parse,
//! but only when some file changed: a copy in one file is only known to be a copy by comparing
//! it with the others, so the decision cannot be made per file. It is kept until the next
//! change, so a warm query prices the kept charges and reads nothing.

use std::collections::HashMap;
use std::fs;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cross_agent_protocol::Agent;
use cross_agent_stores::{FileStamp, StoreRoots, Warnings};

use crate::account::{Accounting, account_refs};
use crate::claude::ClaudeReader;
use crate::codex::CodexReader;
use crate::grok::GrokReader;
use crate::scan::{CHUNK, claude_subagent_files, open_no_follow, read_one};
use crate::{FileUsage, scan};

/// What one refresh did, counted so tests can show that a warm refresh reads nothing and an
/// append reads about what was appended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefreshStats {
    pub files_seen: usize,
    pub files_unchanged: usize,
    pub files_appended: usize,
    /// Known files read again from the start (shrunk, replaced, compressed).
    pub files_reread: usize,
    pub files_new: usize,
    pub files_dropped: usize,
    pub bytes_read: u64,
}

/// One agent's reader, kept between refreshes.
#[derive(Debug, Clone)]
enum Kept {
    Claude(ClaudeReader),
    Codex(CodexReader),
    Grok(GrokReader),
    /// A compressed rollout: read whole on each change, nothing to resume.
    Whole,
}

impl Kept {
    fn new(agent: Agent, path: &Path) -> Option<Kept> {
        match agent {
            Agent::Claude => Some(Kept::Claude(ClaudeReader::new(path))),
            Agent::Codex => Some(Kept::Codex(CodexReader::new(path))),
            Agent::Grok => Some(Kept::Grok(GrokReader::new(path))),
            Agent::Copilot => None,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        match self {
            Kept::Claude(r) => r.feed(bytes),
            Kept::Codex(r) => r.feed(bytes),
            Kept::Grok(r) => r.feed(bytes),
            Kept::Whole => {}
        }
    }

    /// The file as read so far, a last line without its newline taken when it is whole JSON
    /// (as a whole read takes it), the reader itself left waiting for more.
    ///
    /// With no line half written (nearly always) the reader's own file is taken rather than
    /// copied — at 110,000 files the copies were a second set of every parse — and `true` says
    /// it must be given back ([`Kept::give_back`]) before the reader is fed again.
    fn parsed(&mut self) -> Option<(FileUsage, bool)> {
        match self {
            Kept::Claude(r) => Some(match r.take_file() {
                Some(file) => (FileUsage::Claude(file), true),
                None => (FileUsage::Claude(r.finished()), false),
            }),
            Kept::Codex(r) => Some(match r.take_file() {
                Some(file) => (FileUsage::Codex(file), true),
                None => (FileUsage::Codex(r.finished()), false),
            }),
            Kept::Grok(r) => Some(match r.take_file() {
                Some(file) => (FileUsage::Grok(file), true),
                None => (FileUsage::Grok(r.finished()), false),
            }),
            Kept::Whole => None,
        }
    }

    /// Puts back the file [`Kept::parsed`] took from the reader.
    fn give_back(&mut self, parsed: FileUsage) {
        match (self, parsed) {
            (Kept::Claude(r), FileUsage::Claude(file)) => r.put_file(file),
            (Kept::Codex(r), FileUsage::Codex(file)) => r.put_file(file),
            (Kept::Grok(r), FileUsage::Grok(file)) => r.put_file(file),
            _ => {}
        }
    }
}

/// One usage file as last read.
#[derive(Debug, Clone)]
struct Entry {
    agent: Agent,
    stamp: FileStamp,
    /// The inode the bytes were read from: another one at the path is another file.
    ino: Option<(u64, u64)>,
    /// How many bytes the reader has been fed.
    offset: u64,
    reader: Kept,
    parsed: FileUsage,
    /// `parsed` is the reader's own file, taken from it: given back before it reads on.
    lent: bool,
}

/// A file to look at: what the stores list, and the sub-agent transcripts.
struct Candidate {
    agent: Agent,
    path: PathBuf,
    stamp: FileStamp,
    compressed: bool,
}

/// Every usage file's kept parse, and the accounting over them while nothing changes.
#[derive(Debug, Default)]
pub struct UsageIndex {
    roots: Option<StoreRoots>,
    /// Boxed: a file's reader and parse are some hundreds of bytes, and a map holds its values
    /// inline in a table kept about twice as large as it is full (at 110,000 files that was
    /// 100 MB of table, twice over while a refresh fills a new one).
    entries: HashMap<PathBuf, Box<Entry>>,
    accounting: Option<Arc<Accounting>>,
}

impl UsageIndex {
    pub fn new() -> UsageIndex {
        UsageIndex::default()
    }

    /// How many files are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Brings every file under `roots` current, reading only what changed; whatever cannot be
    /// read is a warning naming it (its last good parse is dropped, so nothing stale counts).
    /// Other roots than last time start the index afresh.
    pub fn refresh(&mut self, roots: &StoreRoots, warnings: &mut Vec<String>) -> RefreshStats {
        if self.roots.as_ref() != Some(roots) {
            self.entries.clear();
            self.accounting = None;
            self.roots = Some(roots.clone());
        }
        let candidates = candidates(roots, warnings);
        let mut stats = RefreshStats {
            files_seen: candidates.len(),
            ..RefreshStats::default()
        };
        let mut old = std::mem::take(&mut self.entries);
        self.entries.reserve(candidates.len());
        let mut changed = false;
        for c in candidates {
            let previous = match old.remove(&c.path) {
                Some(entry) if entry.agent == c.agent && entry.stamp == c.stamp => {
                    stats.files_unchanged += 1;
                    self.entries.insert(c.path, entry);
                    continue;
                }
                other => other,
            };
            changed = true;
            match read(&c, previous, &mut stats) {
                Ok(Some(entry)) => {
                    self.entries.insert(c.path, entry);
                }
                Ok(None) => {}
                Err(message) => warnings.push(message),
            }
        }
        stats.files_dropped = old.len();
        changed |= !old.is_empty();
        if changed {
            self.accounting = None;
        }
        stats
    }

    /// What counts once, and for whom, over every kept parse: decided again only after a
    /// refresh that changed something.
    pub fn accounting(&mut self) -> Arc<Accounting> {
        if let Some(kept) = &self.accounting {
            return kept.clone();
        }
        let mut files: Vec<(&PathBuf, &FileUsage)> = self
            .entries
            .iter()
            .map(|(path, entry)| (path, &entry.parsed))
            .collect();
        // The order a whole scan reads them in, so both decide ties the same way.
        files.sort_by(|a, b| a.0.cmp(b.0));
        let files: Vec<&FileUsage> = files.into_iter().map(|(_, f)| f).collect();
        let accounting = Arc::new(account_refs(&files));
        self.accounting = Some(accounting.clone());
        accounting
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
            match fs::symlink_metadata(&path) {
                Ok(meta) => out.push(Candidate {
                    agent: Agent::Claude,
                    stamp: stamp_of(&meta),
                    path,
                    compressed: false,
                }),
                Err(e) => warnings.push(format!("cannot read {}: {e}", path.display())),
            }
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

fn stamp_of(meta: &fs::Metadata) -> FileStamp {
    FileStamp {
        size: meta.len(),
        mtime_ns: Some(meta.mtime() * 1_000_000_000 + meta.mtime_nsec()),
    }
}

/// Reads what changed in one file: the appended bytes when it only grew, else all of it.
fn read(
    c: &Candidate,
    previous: Option<Box<Entry>>,
    stats: &mut RefreshStats,
) -> Result<Option<Box<Entry>>, String> {
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
        return Ok(parsed.map(|parsed| {
            Box::new(Entry {
                agent: c.agent,
                stamp: c.stamp,
                ino: None,
                offset: c.stamp.size,
                reader: Kept::Whole,
                parsed,
                lent: false,
            })
        }));
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
        entry.agent == c.agent
            && entry.ino.is_some()
            && entry.ino == ino
            && size >= entry.offset
            && !matches!(entry.reader, Kept::Whole)
    });
    let (mut reader, mut offset) = match resume {
        Some(entry) => {
            stats.files_appended += 1;
            let mut reader = entry.reader;
            if entry.lent {
                reader.give_back(entry.parsed);
            }
            (reader, entry.offset)
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
    let Some((parsed, lent)) = reader.parsed() else {
        return Ok(None);
    };
    Ok(Some(Box::new(Entry {
        agent: c.agent,
        // What was read, not what the walk saw before: a write in between shows next time.
        stamp: if offset == c.stamp.size {
            c.stamp
        } else {
            FileStamp {
                size: offset,
                mtime_ns: None,
            }
        },
        ino,
        offset,
        reader,
        parsed,
        lent,
    })))
}
