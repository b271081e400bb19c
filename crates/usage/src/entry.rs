//! What the live index ([`crate::live`]) keeps of one usage file between refreshes: its
//! stamp and its parse — the file's usage as the accounting reads it — and, only while the file
//! is being written, its reader, to feed what is appended next. A file still for
//! [`IDLE_AFTER`] keeps no reader ([`Kept::Idle`]): at 111,000 files the readers and the bytes
//! they kept took more than the parses they serve, for files that are mostly never written again.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cross_agent_protocol::Agent;
use cross_agent_stores::FileStamp;

use crate::calls::Calls;
use crate::claude::ClaudeReader;
use crate::codex::CodexReader;
use crate::grok::GrokReader;
use crate::live::HOT;
use crate::spill::Spill;
use crate::{FileRef, FileUsage};

/// How long a file stays still before its reader is let go and only its parse kept
/// ([`Kept::Idle`]). A session being worked in writes every few seconds to a minute; one still
/// for this long is finished or waits on its user, and most of a store's files are years
/// still. An idle file that changes is read again from its start, as a rewritten one is: a
/// transcript is a few MB at most, tens of milliseconds, once, after which it is kept reading.
/// The same quarter hour as [`HOT`]: a sub-agent folder is listed as long as its session is
/// likely to be written, and a reader kept as long.
pub const IDLE_AFTER: Duration = HOT;

/// What is kept of one usage file between refreshes: its reader while it is being written, or
/// only its parse once it is still ([`IDLE_AFTER`]) or compressed. The parse is the accounting's
/// ([`Entry::parse`]): no second copy is kept.
#[derive(Debug, Clone)]
pub(crate) enum Kept {
    /// Read lately: the reader, to feed what is appended next.
    Reading(Box<Reading>),
    /// Still for a while, or a compressed rollout (read whole on each change): its parse
    /// alone; a change is read from the file's start.
    Idle(FileUsage),
}

/// A file's reader between reads, with the parse as a whole read would give it now when a
/// last line without its newline waits ([`AgentReader::finished`]).
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    reader: AgentReader,
    finished: Option<FileUsage>,
    /// The inode the bytes were read from (device, inode; [`NO_INODE`] when none): another one
    /// at the path is another file, read from its start. An idle file is read from its start
    /// on any change, so only a reader needs it.
    ino: (u64, u64),
}

/// One agent's reader. Its own file is the parse (a waiting last line left out).
#[derive(Debug, Clone)]
enum AgentReader {
    Claude(ClaudeReader),
    Codex(CodexReader),
    Grok(GrokReader),
}

impl AgentReader {
    fn feed(&mut self, bytes: &[u8]) {
        match self {
            AgentReader::Claude(r) => r.feed(bytes),
            AgentReader::Codex(r) => r.feed(bytes),
            AgentReader::Grok(r) => r.feed(bytes),
        }
    }

    fn feed_line(&mut self, line: &[u8]) {
        match self {
            AgentReader::Claude(r) => r.feed_line(line),
            AgentReader::Codex(r) => r.feed_line(line),
            AgentReader::Grok(r) => r.feed_line(line),
        }
    }

    /// The reader's file as read so far (a half-written last line left out).
    fn file(&self) -> FileRef<'_> {
        match self {
            AgentReader::Claude(r) => FileRef::Claude(r.file()),
            AgentReader::Codex(r) => FileRef::Codex(r.file()),
            AgentReader::Grok(r) => FileRef::Grok(r.file()),
        }
    }

    /// Gives back the room the reads left spare.
    fn shrink(&mut self) {
        match self {
            AgentReader::Claude(r) => r.shrink(),
            AgentReader::Codex(r) => r.shrink(),
            AgentReader::Grok(r) => r.shrink(),
        }
    }

    /// See [`Entry::compacted`].
    fn renew(&mut self) {
        match self {
            AgentReader::Claude(r) => r.renew(),
            AgentReader::Codex(r) => r.renew(),
            AgentReader::Grok(r) => r.renew(),
        }
    }

    /// The file as a whole read would give it now, when that is not [`AgentReader::file`]: a
    /// last line without its newline waits and is whole JSON (rare: a line being written). The
    /// reader is left waiting for more.
    fn finished(&self) -> Option<FileUsage> {
        match self {
            AgentReader::Claude(r) if r.waiting() => Some(FileUsage::Claude(r.finished())),
            AgentReader::Codex(r) if r.waiting() => Some(FileUsage::Codex(r.finished())),
            AgentReader::Grok(r) if r.waiting() => Some(FileUsage::Grok(r.finished())),
            _ => None,
        }
    }

    /// The file read whole: a waiting last line taken when it is whole JSON.
    fn finish(self) -> FileUsage {
        match self {
            AgentReader::Claude(r) => FileUsage::Claude(r.finish()),
            AgentReader::Codex(r) => FileUsage::Codex(r.finish()),
            AgentReader::Grok(r) => FileUsage::Grok(r.finish()),
        }
    }

    /// The file's list of calls (Claude replies, Codex calls; none for Grok).
    fn calls_mut(&mut self) -> Option<&mut Calls> {
        match self {
            AgentReader::Claude(r) => Some(&mut r.file_mut().messages),
            AgentReader::Codex(r) => Some(&mut r.file_mut().calls),
            AgentReader::Grok(_) => None,
        }
    }
}

/// A parse's list of calls (Claude replies, Codex calls; none for Grok).
fn calls_of(file: &mut FileUsage) -> Option<&mut Calls> {
    match file {
        FileUsage::Claude(f) => Some(&mut f.messages),
        FileUsage::Codex(f) => Some(&mut f.calls),
        FileUsage::Grok(_) => None,
    }
}

impl Kept {
    pub(crate) fn new(agent: Agent, path: &Path) -> Option<Kept> {
        let reader = match agent {
            Agent::Claude => AgentReader::Claude(ClaudeReader::new(path)),
            Agent::Codex => AgentReader::Codex(CodexReader::new(path)),
            Agent::Grok => AgentReader::Grok(GrokReader::new(path)),
            Agent::Copilot => return None,
        };
        Some(Kept::Reading(Box::new(Reading {
            reader,
            finished: None,
            ino: NO_INODE,
        })))
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        if let Kept::Reading(r) = self {
            r.reader.feed(bytes);
        }
    }

    /// One complete line, as the session index split it ([`crate::handoff`]).
    pub(crate) fn feed_line(&mut self, line: &[u8]) {
        if let Kept::Reading(r) = self {
            r.reader.feed_line(line);
        }
    }

    /// The file as last read.
    pub(crate) fn parse(&self) -> FileRef<'_> {
        match self {
            Kept::Reading(r) => match &r.finished {
                Some(file) => file.borrowed(),
                None => r.reader.file(),
            },
            Kept::Idle(file) => file.borrowed(),
        }
    }

    /// See [`Entry::compacted`].
    pub(crate) fn renew(&mut self) {
        match self {
            Kept::Reading(r) => {
                r.reader.renew();
                if let Some(finished) = &mut r.finished {
                    finished.renew();
                }
            }
            Kept::Idle(file) => file.renew(),
        }
    }

    /// The list of calls the file's reads go on with (a waiting line's parse shares it).
    pub(crate) fn calls_mut(&mut self) -> Option<&mut Calls> {
        match self {
            Kept::Reading(r) => r.reader.calls_mut(),
            Kept::Idle(file) => calls_of(file),
        }
    }

    /// The file's calls back on the heap, to read on; an error when they cannot be read back
    /// from disk (the file is then read again from its start).
    pub(crate) fn load_calls(&mut self) -> std::io::Result<()> {
        match self.calls_mut() {
            Some(calls) => crate::calls::load_shared(calls),
            _ => Ok(()),
        }
    }

    /// The reader finished and kept as a whole read's parse: a compressed rollout, or a file
    /// still for [`IDLE_AFTER`].
    pub(crate) fn into_whole(self) -> Kept {
        match self {
            Kept::Reading(r) => Kept::Idle(r.reader.finish()),
            idle @ Kept::Idle(_) => idle,
        }
    }

    /// Made ready to keep after a read of the file at inode `ino`: the room the read left spare
    /// given back, and a waiting line's parse made.
    pub(crate) fn settled(self, ino: Option<(u64, u64)>) -> Kept {
        match self {
            Kept::Reading(mut r) => {
                r.reader.shrink();
                r.finished = r.reader.finished();
                r.ino = ino.unwrap_or(NO_INODE);
                Kept::Reading(r)
            }
            idle @ Kept::Idle(_) => idle,
        }
    }
}

/// One usage file as last read (kept for every file: its agent is its parse's, the bytes its
/// reader was fed are its stamp's size).
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// What was read ([`Entry::stamp`]): its size is how many bytes the reader has been fed.
    size: u64,
    /// The stamp's mtime, [`NO_MTIME`] for none: 8 bytes where an `Option` takes 16, in an
    /// entry kept for every file in one list ([`crate::path_slots`]).
    mtime_ns: i64,
    pub(crate) reader: Kept,
}

/// An [`Entry`]'s mtime when its stamp has none (no file is stamped at the earliest
/// nanosecond `i64` holds, in 1677).
const NO_MTIME: i64 = i64::MIN;

impl Entry {
    /// The entry of `reader`, fed the `stamp.size` bytes of the file at inode `ino`: kept
    /// reading unless the file has been still for [`IDLE_AFTER`].
    pub(crate) fn new(stamp: FileStamp, ino: Option<(u64, u64)>, reader: Kept) -> Entry {
        let reader = if still(&stamp, SystemTime::now()) {
            reader.into_whole()
        } else {
            reader.settled(ino)
        };
        Entry {
            size: stamp.size,
            mtime_ns: stamp.mtime_ns.unwrap_or(NO_MTIME),
            reader,
        }
    }

    /// What was read: the size is how many bytes the reader has been fed.
    pub(crate) fn stamp(&self) -> FileStamp {
        FileStamp {
            size: self.size,
            mtime_ns: (self.mtime_ns != NO_MTIME).then_some(self.mtime_ns),
        }
    }

    /// The entry with its reader let go when its file has been still for [`IDLE_AFTER`].
    pub(crate) fn idled(self, now: SystemTime) -> Entry {
        if !matches!(self.reader, Kept::Reading(_)) || !still(&self.stamp(), now) {
            return self;
        }
        Entry {
            reader: self.reader.into_whole(),
            ..self
        }
    }

    /// Whether a reader is kept (the file was written lately).
    pub(crate) fn reading(&self) -> bool {
        matches!(self.reader, Kept::Reading(_))
    }

    /// The entry's allocations again, fresh and of exactly their size, made here one after
    /// another, the old ones dropped. A read's survivors (its calls, its path and names) are
    /// allocated on the reader threads between the parse's short-lived buffers, so after a
    /// refresh that read many files they sit thinly on many pages the allocator cannot give
    /// back; made again in a row they fill few, and the rest go back (the daemon purges at once).
    /// The entry itself is kept in the index's one list ([`crate::path_slots`]).
    pub(crate) fn compacted(self) -> Entry {
        let mut fresh = Entry::clone(&self);
        // The old dropped first, so the calls and path are held by the fresh entry alone.
        drop(self);
        fresh.reader.renew();
        fresh
    }

    /// Writes the file's calls to `spill` when nothing else holds them yet (a list the
    /// entry's waiting last line shares stays on the heap; see [`crate::spill`]).
    pub(crate) fn spill(&mut self, spill: &Spill) {
        if let Some(calls) = self.reader.calls_mut()
            && let Some(list) = Arc::get_mut(calls)
        {
            list.spill(spill);
        }
    }

    pub(crate) fn agent(&self) -> Agent {
        match self.parse() {
            FileRef::Claude(_) => Agent::Claude,
            FileRef::Codex(_) => Agent::Codex,
            FileRef::Grok(_) => Agent::Grok,
        }
    }

    /// The inode the bytes were read from, if known and a reader is kept.
    pub(crate) fn ino(&self) -> Option<(u64, u64)> {
        match &self.reader {
            Kept::Reading(r) => (r.ino != NO_INODE).then_some(r.ino),
            Kept::Idle(_) => None,
        }
    }

    /// The file's usage as last read.
    pub(crate) fn parse(&self) -> FileRef<'_> {
        self.reader.parse()
    }
}

/// Kept in the index's one list by the path its parse already holds.
impl crate::path_slots::Pathed for Entry {
    fn path(&self) -> &Path {
        self.parse().path()
    }
}

/// Whether the file the stamp was taken of has been still for [`IDLE_AFTER`] at `now` (a
/// stamp with no mtime, or one ahead of the clock, is not).
fn still(stamp: &FileStamp, now: SystemTime) -> bool {
    let Some(mtime_ns) = stamp.mtime_ns else {
        return false;
    };
    let Ok(now) = now.duration_since(UNIX_EPOCH) else {
        return false;
    };
    let now_ns = i128::try_from(now.as_nanos()).unwrap_or(i128::MAX);
    now_ns - i128::from(mtime_ns) >= IDLE_AFTER.as_nanos() as i128
}

/// No inode known (a compressed file, read whole; a Grok session with no `updates.jsonl`): no
/// file has inode 0.
pub(crate) const NO_INODE: (u64, u64) = (0, 0);

#[cfg(test)]
mod tests {
    /// An entry is kept for every usage file (110,000 at the largest stores), all in one list
    /// ([`crate::path_slots`]), so each byte counts: an idle one is its stamp (16 bytes) and its
    /// parse — the reader, its inode and a waiting line's parse are boxed apart, kept only while the file
    /// is written ([`crate::IDLE_AFTER`]), and a rollout's rare thread relations are boxed too.
    #[test]
    fn an_entry_fits_112_bytes() {
        assert!(std::mem::size_of::<super::Entry>() <= 112);
    }
}
