//! The index persisted in one file, `$CROSS_AGENT_HOME/cache/sessions-index.bin`, so a new
//! process starts warm.
//!
//! Why a file of our own rather than SQLite (`hub.db`): the CLI lists sessions without a daemon,
//! and the warm listing budget (100 ms for 22,000 sessions, stat calls included) leaves room for
//! one sequential read, not for 22,000 row look-ups. Why a hand-made layout rather than a serde
//! format: a warm listing must not pay for decoding what it does not use. Every entry is a run
//! of fixed-width little-endian fields and length-prefixed byte strings, so loading only steps
//! over each entry once — checking it and noting where it starts — and builds the table by path
//! that the refresh looks files up in; nothing is copied out. An entry is decoded
//! (`EntryView`) when the refresh compares its stamp, and its strings are copied out only
//! into the listing's sessions, or into an `Entry` when its file changed (`Stored`). The
//! agents' fold states are stored as JSON text, because a fold may use serde attributes a
//! non-self-describing format cannot round-trip.
//!
//! Layout: `MAGIC`, then little-endian format version (u32), schema fingerprint, entry count,
//! entries length, entries checksum and folds length (u64 each); then the entries, one after
//! another (see `encode_entry`), and the folds section (every entry's fold JSON, back to
//! back). A warm listing reads the header and the entries only: the folds section stays in the
//! file (kept open) until a changed file needs a fold, and an entry's fold is decoded — after
//! checking its own hash — only then.
//!
//! A save after a change does not write all of that again (16 MB for 22,000 sessions): what
//! changed — entries read since the last save, with their folds, and the paths that went out —
//! is appended as one record to a journal beside the file, `sessions-index-journal.bin`
//! ([`journal_file`]), which a load replays in order. The journal's header names the file it
//! extends (its entries' checksum and length), so a journal left beside another file is never
//! replayed. Each record carries its length and checksum and is written in one `write`: a
//! record cut short by a crash, or damaged, ends the replay there — what it held is simply read
//! again from the stores — and the next save writes the whole cache. So does a save whose
//! journal would outgrow a quarter of the file (compaction), and then the journal is removed.
//!
//! The fingerprint covers this crate's version and the JSON shape of every fold's default state,
//! so a build whose folds changed starts afresh instead of resuming a state it would misread. A
//! cache that is missing, from another version, or whose checksum or decoding fails is rebuilt:
//! a cache is never worth an error.
//!
//! Written atomically (a temp file in the same folder, then rename), the folder `0700` and the
//! file `0600`: it holds session ids, working directories and titles.
//!
//! Past the usual ~800 lines because its tests live here (they need the private layout to
//! damage it byte by byte); the code itself is about 850 lines of one on-disk format.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::claude::ClaudeFold;
use crate::codex::CodexFold;
use crate::error::{Result, StoreError};
use crate::grok::GrokFold;
use crate::index::{
    Entry, FastMap, FoldKind, FoldState, FoldsFile, Head, SessionIndex, SidecarSeen, hash64,
};
use crate::lines::Position;
use crate::model::{Agent, Session, TranscriptFold, UnixMillis};
use crate::roots::SourceFile;
use crate::walk::{Reader, name_bytes, os_str};

/// The cache file's name inside `$CROSS_AGENT_HOME/cache/`.
pub const CACHE_FILE_NAME: &str = "sessions-index.bin";

const MAGIC: &[u8; 8] = b"XAGIDX\x00\x03";
/// Bump when the layout or a stored type changes, so an older cache is rebuilt silently
/// ([`CacheLoad::Outdated`]) rather than refused as damaged. 4: every checksum and hash is XXH3.
const FORMAT_VERSION: u32 = 4;
/// Magic, version, fingerprint, entry count, entries length, entries checksum, folds length.
const HEADER_LEN: usize = 8 + 4 + 8 + 8 + 8 + 8 + 8;

/// What loading found.
// One value at a time, moved once: boxing the index would cost an allocation for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum CacheLoad {
    /// The index as it was saved.
    Loaded(SessionIndex),
    /// No cache yet: start empty, nothing to report.
    Missing,
    /// A cache from another format or build: start empty, nothing to report.
    Outdated,
    /// A cache that cannot be used (unreadable, truncated, checksum or decode failure): start
    /// empty, and report it as a warning naming the file.
    Corrupt(String),
}

/// Identifies the shape of everything a cache stores, so a cache written by a build with other
/// folds is not resumed.
fn fingerprint() -> u64 {
    let mut shape = String::from(env!("CARGO_PKG_VERSION"));
    for default_state in [
        fold_shape::<ClaudeFold>(),
        fold_shape::<CodexFold>(),
        fold_shape::<GrokFold>(),
    ] {
        shape.push('\n');
        shape.push_str(&default_state);
    }
    hash64(shape.as_bytes())
}

fn fold_shape<F: TranscriptFold>() -> String {
    serde_json::to_string(&F::default()).unwrap_or_default()
}

/// One entry as stored, borrowed from the bytes it was read from (or from an [`Entry`] being
/// saved). Paths are raw bytes (any bytes on Unix), text is UTF-8 checked when copied out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryView<'a> {
    pub kind: FoldKind,
    pub path: &'a [u8],
    pub size: u64,
    pub mtime_ns: Option<i64>,
    pub compressed: bool,
    pub head: Head,
    pub position: Position,
    pub sidecar: Option<SidecarView<'a>>,
    /// Where the fold state is in the folds section; `fold_len == 0`: none was stored.
    pub fold_at: u64,
    pub fold_len: u64,
    pub fold_hash: u64,
    pub session: Option<SessionView<'a>>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct SidecarView<'a> {
    pub path: &'a [u8],
    pub size: u64,
    pub mtime_ns: Option<i64>,
}

/// [`Session`] as stored, in a shape of our own so a change to the shared model cannot break
/// the binary cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionView<'a> {
    pub agent: Agent,
    pub session_id: &'a [u8],
    pub cwd: Option<&'a [u8]>,
    pub title: Option<&'a [u8]>,
    pub title_is_assigned: bool,
    pub first_activity: Option<i64>,
    pub last_activity: Option<i64>,
    pub is_working: bool,
    pub path: SessionPath<'a>,
}

/// A session's path relative to its entry's file, which it nearly always is: stored whole only
/// when it is neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionPath<'a> {
    /// The transcript itself (Claude, Codex).
    File,
    /// The transcript's folder (a Grok session folder).
    Parent,
    Other(&'a [u8]),
}

// Flag bits of an entry, of its sidecar and of its session.
const COMPRESSED: u8 = 1;
const HAS_MTIME: u8 = 2;
const HAS_SIDECAR: u8 = 4;
const HAS_SESSION: u8 = 8;
const SIDECAR_HAS_MTIME: u8 = 1;
/// Where an entry's path (its length) starts: after kind, flags, size, mtime, head length, head
/// hash, offset, line and the fold's place, length and hash.
const PATH_AT: usize = 1 + 1 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 8 + 8;
const ASSIGNED: u8 = 1;
const WORKING: u8 = 2;
const HAS_FIRST: u8 = 4;
const HAS_LAST: u8 = 8;
const HAS_CWD: u8 = 16;
const HAS_TITLE: u8 = 32;

fn kind_code(kind: FoldKind) -> u8 {
    match kind {
        FoldKind::Claude => 1,
        FoldKind::Codex => 2,
        FoldKind::Grok => 3,
        FoldKind::CodexNames => 4,
    }
}

fn kind_of(code: u8) -> Option<FoldKind> {
    match code {
        1 => Some(FoldKind::Claude),
        2 => Some(FoldKind::Codex),
        3 => Some(FoldKind::Grok),
        4 => Some(FoldKind::CodexNames),
        _ => None,
    }
}

fn agent_code(agent: Agent) -> u8 {
    match agent {
        Agent::Claude => 1,
        Agent::Codex => 2,
        Agent::Grok => 3,
    }
}

fn agent_of(code: u8) -> Option<Agent> {
    match code {
        1 => Some(Agent::Claude),
        2 => Some(Agent::Codex),
        3 => Some(Agent::Grok),
        _ => None,
    }
}

impl<'a> EntryView<'a> {
    /// The view of an entry in memory; `None` when its paths cannot be stored (a name that is
    /// not UTF-8 where the platform has no byte paths): such an entry is simply read again.
    fn of(entry: &'a Entry, fold_at: u64, fold_len: u64, fold_hash: u64) -> Option<Self> {
        let path = name_bytes(entry.path.as_os_str())?;
        let sidecar = match &entry.sidecar {
            Some(seen) => Some(SidecarView {
                path: name_bytes(seen.path.as_os_str())?,
                size: seen.size,
                mtime_ns: seen.mtime_ns,
            }),
            None => None,
        };
        let session = match &entry.session {
            Some(s) => Some(SessionView {
                agent: s.agent,
                session_id: s.session_id.as_bytes(),
                cwd: match &s.cwd {
                    Some(cwd) => Some(name_bytes(cwd.as_os_str())?),
                    None => None,
                },
                title: s.title.as_deref().map(str::as_bytes),
                title_is_assigned: s.title_is_assigned,
                first_activity: s.first_activity.map(|t| t.0),
                last_activity: s.last_activity.map(|t| t.0),
                is_working: s.is_working,
                path: if s.path.as_os_str() == entry.path.as_os_str() {
                    SessionPath::File
                } else if Some(s.path.as_path()) == entry.path.parent() {
                    SessionPath::Parent
                } else {
                    SessionPath::Other(name_bytes(s.path.as_os_str())?)
                },
            }),
            None => None,
        };
        Some(EntryView {
            kind: entry.kind,
            path,
            size: entry.size,
            mtime_ns: entry.mtime_ns,
            compressed: entry.compressed,
            head: entry.head,
            position: entry.position,
            sidecar,
            fold_at,
            fold_len,
            fold_hash,
            session,
        })
    }

    /// Whether the file `source` describes is the one this entry was made from, unchanged.
    pub(crate) fn unchanged(&self, kind: FoldKind, source: &SourceFile) -> bool {
        self.kind == kind
            && self.size == source.stamp.size
            && self.mtime_ns == source.stamp.mtime_ns
            && match (&self.sidecar, &source.sidecar) {
                (None, None) => true,
                (Some(seen), Some(now)) => {
                    name_bytes(now.path.as_os_str()) == Some(seen.path)
                        && seen.size == now.stamp.size
                        && seen.mtime_ns == now.stamp.mtime_ns
                }
                (Some(_), None) | (None, Some(_)) => false,
            }
    }

    /// The entry in memory, its file at `path` (the same path, already allocated by the walk)
    /// or at its stored path.
    pub(crate) fn into_entry(self, path: Option<PathBuf>) -> Entry {
        let path = path.unwrap_or_else(|| PathBuf::from(os_str(self.path)));
        let session = self.session(Some(&path));
        let fold = match (
            usize::try_from(self.fold_at),
            usize::try_from(self.fold_len),
        ) {
            (Ok(at), Ok(len)) if len > 0 => FoldState::Stored {
                at,
                len,
                hash: self.fold_hash,
            },
            _ => FoldState::Missing,
        };
        Entry {
            kind: self.kind,
            size: self.size,
            mtime_ns: self.mtime_ns,
            compressed: self.compressed,
            head: self.head,
            position: self.position,
            sidecar: self.sidecar.map(|seen| SidecarSeen {
                path: PathBuf::from(os_str(seen.path)),
                size: seen.size,
                mtime_ns: seen.mtime_ns,
            }),
            fold,
            session,
            path,
            saved: true,
        }
    }

    /// The session this entry describes, copied out. `path` is the entry's file when the
    /// caller has it allocated already.
    pub(crate) fn session(&self, path: Option<&Path>) -> Option<Session> {
        self.session_owning(path.map(Path::to_path_buf))
    }

    /// [`EntryView::session`], the session taking `path` (the entry's file) when it is the
    /// transcript itself, so nothing is copied for it.
    pub(crate) fn session_owning(&self, path: Option<PathBuf>) -> Option<Session> {
        let s = self.session.as_ref()?;
        let file = || PathBuf::from(os_str(self.path));
        Some(Session {
            agent: s.agent,
            session_id: text(s.session_id),
            cwd: s.cwd.map(|cwd| PathBuf::from(os_str(cwd))),
            title: s.title.map(text),
            title_is_assigned: s.title_is_assigned,
            first_activity: s.first_activity.map(UnixMillis),
            last_activity: s.last_activity.map(UnixMillis),
            is_working: s.is_working,
            path: match s.path {
                SessionPath::File => path.unwrap_or_else(file),
                SessionPath::Parent => {
                    let file = Path::new(os_str(self.path));
                    file.parent()
                        .map_or_else(|| file.to_path_buf(), Path::to_path_buf)
                }
                SessionPath::Other(other) => PathBuf::from(os_str(other)),
            },
        })
    }
}

/// Stored text as a `String`; it was UTF-8 when it was written, and the entries' checksum held.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Option<()> {
    out.extend_from_slice(&u32::try_from(bytes.len()).ok()?.to_le_bytes());
    out.extend_from_slice(bytes);
    Some(())
}

/// Appends one entry to `out`: kind and flags (u8 each); size, mtime, head length (u32), head
/// hash, offset, line, fold at, fold length, fold hash (u64 unless said); the path; then the
/// sidecar (flags, size, mtime, path) and the session (agent, flags, path kind, first and last
/// activity, id, then cwd, title and other path when present). Byte strings are a u32 length
/// and the bytes. `None` (nothing appended) when a string is longer than a u32 can say.
fn encode_entry(view: &EntryView<'_>, out: &mut Vec<u8>) -> Option<()> {
    let start = out.len();
    let written = (|| {
        let mut flags = 0;
        if view.compressed {
            flags |= COMPRESSED;
        }
        if view.mtime_ns.is_some() {
            flags |= HAS_MTIME;
        }
        if view.sidecar.is_some() {
            flags |= HAS_SIDECAR;
        }
        if view.session.is_some() {
            flags |= HAS_SESSION;
        }
        out.push(kind_code(view.kind));
        out.push(flags);
        out.extend_from_slice(&view.size.to_le_bytes());
        out.extend_from_slice(&view.mtime_ns.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&view.head.len.to_le_bytes());
        out.extend_from_slice(&view.head.hash.to_le_bytes());
        out.extend_from_slice(&view.position.offset.to_le_bytes());
        out.extend_from_slice(&view.position.line.to_le_bytes());
        out.extend_from_slice(&view.fold_at.to_le_bytes());
        out.extend_from_slice(&view.fold_len.to_le_bytes());
        out.extend_from_slice(&view.fold_hash.to_le_bytes());
        put_bytes(out, view.path)?;
        if let Some(sidecar) = &view.sidecar {
            out.push(if sidecar.mtime_ns.is_some() {
                SIDECAR_HAS_MTIME
            } else {
                0
            });
            out.extend_from_slice(&sidecar.size.to_le_bytes());
            out.extend_from_slice(&sidecar.mtime_ns.unwrap_or(0).to_le_bytes());
            put_bytes(out, sidecar.path)?;
        }
        if let Some(s) = &view.session {
            let mut flags = 0;
            for (set, bit) in [
                (s.title_is_assigned, ASSIGNED),
                (s.is_working, WORKING),
                (s.first_activity.is_some(), HAS_FIRST),
                (s.last_activity.is_some(), HAS_LAST),
                (s.cwd.is_some(), HAS_CWD),
                (s.title.is_some(), HAS_TITLE),
            ] {
                if set {
                    flags |= bit;
                }
            }
            out.push(agent_code(s.agent));
            out.push(flags);
            out.push(match s.path {
                SessionPath::File => 0,
                SessionPath::Parent => 1,
                SessionPath::Other(_) => 2,
            });
            out.extend_from_slice(&s.first_activity.unwrap_or(0).to_le_bytes());
            out.extend_from_slice(&s.last_activity.unwrap_or(0).to_le_bytes());
            put_bytes(out, s.session_id)?;
            if let Some(cwd) = s.cwd {
                put_bytes(out, cwd)?;
            }
            if let Some(title) = s.title {
                put_bytes(out, title)?;
            }
            if let SessionPath::Other(other) = s.path {
                put_bytes(out, other)?;
            }
        }
        Some(())
    })();
    if written.is_none() {
        out.truncate(start);
    }
    written
}

impl<'a> Reader<'a> {
    fn i64(&mut self) -> Option<i64> {
        self.u64().map(|n| n as i64)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }
}

/// Reads one entry off the front of `bytes`: the entry and the rest. `None` when it does not
/// decode (the cache is then corrupt).
pub(crate) fn decode_entry(bytes: &[u8]) -> Option<(EntryView<'_>, &[u8])> {
    let mut r = Reader(bytes);
    let kind = kind_of(r.u8()?)?;
    let flags = r.u8()?;
    let size = r.u64()?;
    let mtime = r.i64()?;
    let head = Head {
        len: r.u32()?,
        hash: r.u64()?,
    };
    let position = Position {
        offset: r.u64()?,
        line: r.u64()?,
    };
    let (fold_at, fold_len, fold_hash) = (r.u64()?, r.u64()?, r.u64()?);
    let path = r.bytes()?;
    let sidecar = if flags & HAS_SIDECAR != 0 {
        let sidecar_flags = r.u8()?;
        let size = r.u64()?;
        let mtime = r.i64()?;
        Some(SidecarView {
            path: r.bytes()?,
            size,
            mtime_ns: (sidecar_flags & SIDECAR_HAS_MTIME != 0).then_some(mtime),
        })
    } else {
        None
    };
    let session = if flags & HAS_SESSION != 0 {
        let agent = agent_of(r.u8()?)?;
        let flags = r.u8()?;
        let path_kind = r.u8()?;
        let first = r.i64()?;
        let last = r.i64()?;
        let session_id = r.bytes()?;
        let cwd = if flags & HAS_CWD != 0 {
            Some(r.bytes()?)
        } else {
            None
        };
        let title = if flags & HAS_TITLE != 0 {
            Some(r.bytes()?)
        } else {
            None
        };
        let path = match path_kind {
            0 => SessionPath::File,
            1 => SessionPath::Parent,
            2 => SessionPath::Other(r.bytes()?),
            _ => return None,
        };
        Some(SessionView {
            agent,
            session_id,
            cwd,
            title,
            title_is_assigned: flags & ASSIGNED != 0,
            first_activity: (flags & HAS_FIRST != 0).then_some(first),
            last_activity: (flags & HAS_LAST != 0).then_some(last),
            is_working: flags & WORKING != 0,
            path,
        })
    } else {
        None
    };
    let view = EntryView {
        kind,
        path,
        size,
        mtime_ns: (flags & HAS_MTIME != 0).then_some(mtime),
        compressed: flags & COMPRESSED != 0,
        head,
        position,
        sidecar,
        fold_at,
        fold_len,
        fold_hash,
        session,
    };
    Some((view, r.0))
}

/// The entries loaded from the cache, kept as the bytes they were read as: each is decoded
/// when it is looked at, and copied out only into what needs it (see the module notes).
pub(crate) struct Stored {
    bytes: Vec<u8>,
    /// Where each entry starts and ends in `bytes`, and its kind.
    recs: Vec<Rec>,
    /// Entries by a hash of their path (the first of two with one hash; the other is simply
    /// read again).
    by_path: FastMap<u64, u32>,
    state: Vec<RecState>,
}

#[derive(Debug, Clone, Copy)]
struct Rec {
    kind: FoldKind,
    start: usize,
    end: usize,
}

/// Where a stored entry stands.
#[derive(Debug)]
pub(crate) enum RecState {
    /// In the index; with its path when the walk found it (so it is not allocated twice).
    Live(Option<PathBuf>),
    /// During a refresh: of an agent being refreshed, its file not found yet.
    Unclaimed,
    /// Out of the index (its file changed and was read into an [`Entry`], or is gone).
    Dead,
}

impl fmt::Debug for Stored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stored")
            .field("entries", &self.recs.len())
            .field("live", &self.live().count())
            .finish_non_exhaustive()
    }
}

impl Stored {
    /// Steps over every entry of the section `bytes` (`count` of them), checking that each
    /// decodes, and indexes them by path.
    fn new(bytes: Vec<u8>, count: usize) -> Result<Stored, Refused> {
        let bad = || Refused::Corrupt("session cache does not decode".to_owned());
        let capacity = count.min(bytes.len() / 64);
        let mut recs = Vec::with_capacity(capacity);
        let mut by_path = FastMap::with_capacity_and_hasher(capacity, Default::default());
        let mut rest: &[u8] = &bytes;
        for _ in 0..count {
            let start = bytes.len() - rest.len();
            let (view, tail) = decode_entry(rest).ok_or_else(bad)?;
            let i = u32::try_from(recs.len()).map_err(|_| bad())?;
            by_path.entry(hash64(view.path)).or_insert(i);
            recs.push(Rec {
                kind: view.kind,
                start,
                end: bytes.len() - tail.len(),
            });
            rest = tail;
        }
        if !rest.is_empty() {
            return Err(Refused::Corrupt(
                "session cache has trailing bytes".to_owned(),
            ));
        }
        let state = (0..recs.len()).map(|_| RecState::Live(None)).collect();
        Ok(Stored {
            bytes,
            recs,
            by_path,
            state,
        })
    }

    /// Entry `i`, decoded.
    pub(crate) fn view(&self, i: usize) -> Option<EntryView<'_>> {
        let rec = self.recs.get(i)?;
        let bytes = self.bytes.get(rec.start..rec.end)?;
        decode_entry(bytes).map(|(view, _)| view)
    }

    /// The entries in the index.
    pub(crate) fn live(&self) -> impl Iterator<Item = usize> + '_ {
        self.state
            .iter()
            .enumerate()
            .filter(|(_, state)| matches!(state, RecState::Live(_)))
            .map(|(i, _)| i)
    }

    /// The entries in the index made by the fold `kind`.
    pub(crate) fn live_of(&self, kind: FoldKind) -> impl Iterator<Item = usize> + '_ {
        self.live()
            .filter(move |&i| self.recs.get(i).is_some_and(|rec| rec.kind == kind))
    }

    /// The entries in the index of `agents`.
    pub(crate) fn live_of_agents<'s>(
        &'s self,
        agents: &'s [Agent],
    ) -> impl Iterator<Item = usize> + 's {
        self.live().filter(move |&i| {
            self.recs
                .get(i)
                .is_some_and(|rec| agents.contains(&rec.kind.agent()))
        })
    }

    /// The entries in the index, of `agents`, with the path the walk found each at (if it
    /// did), taken out of the index.
    pub(crate) fn take_live<'s>(
        &'s mut self,
        agents: &'s [Agent],
    ) -> impl Iterator<Item = (usize, Option<PathBuf>)> + 's {
        let recs = &self.recs;
        self.state
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| {
                recs.get(*i)
                    .is_some_and(|r| agents.contains(&r.kind.agent()))
            })
            .filter_map(
                |(i, state)| match std::mem::replace(state, RecState::Dead) {
                    RecState::Live(path) => Some((i, path)),
                    other => {
                        *state = other;
                        None
                    }
                },
            )
    }

    /// How many entries are in the index.
    pub(crate) fn live_count(&self) -> usize {
        self.live().count()
    }

    /// The path the walk found entry `i` at, if it did.
    pub(crate) fn found_path(&self, i: usize) -> Option<&Path> {
        match self.state.get(i)? {
            RecState::Live(path) => path.as_deref(),
            RecState::Unclaimed | RecState::Dead => None,
        }
    }

    /// Starts a refresh of `agents`: their entries wait to be claimed by the files found.
    pub(crate) fn begin_refresh(&mut self, agents: &[Agent]) {
        for (rec, state) in self.recs.iter().zip(&mut self.state) {
            if agents.contains(&rec.kind.agent()) && matches!(state, RecState::Live(_)) {
                *state = RecState::Unclaimed;
            }
        }
    }

    /// The entry of the file at `path`, whatever its state.
    pub(crate) fn find(&self, path: &Path) -> Option<usize> {
        let bytes = name_bytes(path.as_os_str())?;
        let i = *self.by_path.get(&hash64(bytes))? as usize;
        let rec = self.recs.get(i)?;
        // The path follows the fixed-width fields (see `encode_entry`): compared without
        // decoding the rest.
        let stored = Reader(self.bytes.get(rec.start + PATH_AT..rec.end)?).bytes();
        (stored == Some(bytes)).then_some(i)
    }

    /// Whether entry `i` still waits to be claimed by a file in this refresh.
    pub(crate) fn is_unclaimed(&self, i: usize) -> bool {
        matches!(self.state.get(i), Some(RecState::Unclaimed))
    }

    pub(crate) fn set(&mut self, i: usize, state: RecState) {
        if let Some(slot) = self.state.get_mut(i) {
            *slot = state;
        }
    }

    /// Ends a refresh: the entries no file claimed are dropped. Returns their paths.
    pub(crate) fn end_refresh(&mut self) -> Vec<PathBuf> {
        let mut dropped = Vec::new();
        for i in 0..self.state.len() {
            if self.is_unclaimed(i) {
                self.set(i, RecState::Dead);
                dropped.extend(self.view(i).map(|view| PathBuf::from(os_str(view.path))));
            }
        }
        dropped
    }
}

/// Reads the cache at `path`: the header and the entries. The folds section is left in the
/// file (kept open) until a changed file needs a fold: a warm listing reads only the entries,
/// and decodes each only as far as it needs.
pub fn load(path: &Path) -> CacheLoad {
    load_for(path, &[])
}

/// [`load`], for a listing of `agents`: when it covers Codex, its thread names are decoded
/// now too (a listing loads the cache on a thread of its own, beside the walk).
pub(crate) fn load_for(path: &Path, agents: &[Agent]) -> CacheLoad {
    let mut file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return CacheLoad::Missing,
        Err(e) => return CacheLoad::Corrupt(format!("cannot read the session cache: {e}")),
    };
    let file_len = match file.metadata() {
        Ok(meta) => meta.len(),
        Err(e) => return CacheLoad::Corrupt(format!("cannot read the session cache: {e}")),
    };
    let mut header = [0u8; HEADER_LEN];
    if file.read_exact(&mut header).is_err() {
        return CacheLoad::Corrupt("not a session cache (bad header)".to_owned());
    }
    let header = match Header::parse(&header, file_len) {
        Ok(header) => header,
        Err(refused) => return refused.into(),
    };
    let mut entries = vec![0u8; header.entries_len];
    if let Err(e) = file.read_exact(&mut entries) {
        return CacheLoad::Corrupt(format!("cannot read the session cache: {e}"));
    }
    match stored_entries(entries, &header) {
        Ok(stored) => {
            let mut index = SessionIndex {
                entries: Vec::new(),
                stored: Some(stored),
                blob: Vec::new(),
                folds_file: Some(FoldsFile {
                    file,
                    at: (HEADER_LEN + header.entries_len) as u64,
                    len: header.folds_len,
                }),
                dirty: false,
                base: Some(Base {
                    sum: header.entries_sum,
                    len: file_len,
                    journal_len: 0,
                    rewrite: false,
                }),
                drops: Vec::new(),
                preloaded_names: None,
            };
            replay_journal(&journal_file(path), &mut index);
            if agents.contains(&Agent::Codex) {
                index.preload_codex_names();
            }
            CacheLoad::Loaded(index)
        }
        Err(refused) => refused.into(),
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(buf)
}

/// Why a cache is not used (the [`CacheLoad`] cases without an index).
pub(crate) enum Refused {
    Outdated,
    Corrupt(String),
}

impl From<Refused> for CacheLoad {
    fn from(refused: Refused) -> CacheLoad {
        match refused {
            Refused::Outdated => CacheLoad::Outdated,
            Refused::Corrupt(why) => CacheLoad::Corrupt(why),
        }
    }
}

/// What the header says.
struct Header {
    count: u64,
    entries_len: usize,
    entries_sum: u64,
    folds_len: usize,
}

impl Header {
    /// Checks the header of a cache file of `file_len` bytes.
    fn parse(bytes: &[u8], file_len: u64) -> Result<Header, Refused> {
        if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
            return Err(Refused::Corrupt(
                "not a session cache (bad header)".to_owned(),
            ));
        }
        let mut version = [0u8; 4];
        version.copy_from_slice(&bytes[8..12]);
        if u32::from_le_bytes(version) != FORMAT_VERSION || u64_at(bytes, 12) != fingerprint() {
            return Err(Refused::Outdated);
        }
        let entries_len = u64_at(bytes, 28);
        let folds_len = u64_at(bytes, 44);
        let expected = (HEADER_LEN as u64)
            .checked_add(entries_len)
            .and_then(|n| n.checked_add(folds_len));
        let truncated = || Refused::Corrupt("session cache is truncated".to_owned());
        if expected != Some(file_len) {
            return Err(truncated());
        }
        Ok(Header {
            count: u64_at(bytes, 20),
            entries_len: usize::try_from(entries_len).map_err(|_| truncated())?,
            entries_sum: u64_at(bytes, 36),
            folds_len: usize::try_from(folds_len).map_err(|_| truncated())?,
        })
    }
}

/// A whole cache file already in memory (the tests' way in).
#[cfg(test)]
fn decode(bytes: Vec<u8>) -> CacheLoad {
    let header = match Header::parse(&bytes, bytes.len() as u64) {
        Ok(header) => header,
        Err(refused) => return refused.into(),
    };
    let entries_end = HEADER_LEN + header.entries_len;
    match stored_entries(bytes[HEADER_LEN..entries_end].to_vec(), &header) {
        Ok(stored) => CacheLoad::Loaded(SessionIndex {
            entries: Vec::new(),
            stored: Some(stored),
            blob: bytes[entries_end..].to_vec(),
            folds_file: None,
            dirty: false,
            base: None,
            drops: Vec::new(),
            preloaded_names: None,
        }),
        Err(refused) => refused.into(),
    }
}

/// The entries section, checked and indexed.
fn stored_entries(all: Vec<u8>, header: &Header) -> Result<Stored, Refused> {
    // Only the entries are checked here; each fold is checked by its own hash when a changed
    // file needs it, so a warm start does not hash every fold.
    if hash64(&all) != header.entries_sum {
        return Err(Refused::Corrupt(
            "session cache checksum does not match".to_owned(),
        ));
    }
    let count = usize::try_from(header.count).unwrap_or(usize::MAX);
    Stored::new(all, count)
}

/// Saves `index` to `path`: what changed since it was loaded or last saved is appended to the
/// journal beside it while the journal is small and belongs to the file the index stands on;
/// otherwise the whole cache is written again, atomically (folder `0700`, file `0600`), and the
/// journal removed.
pub fn save(path: &Path, index: &mut SessionIndex) -> Result<()> {
    if let Some(base) = index.base.filter(|base| !base.rewrite) {
        let record = journal_record(index);
        let limit = (base.len / 4).max(JOURNAL_MIN_LIMIT);
        if base.journal_len + record.len() as u64 <= limit
            && let Ok(journal_len) = append_journal(path, &journal_file(path), &base, &record)
        {
            for entry in &mut index.entries {
                entry.saved = true;
            }
            index.drops.clear();
            index.base = Some(Base {
                journal_len,
                ..base
            });
            return Ok(());
        }
    }
    rewrite(path, index)
}

/// Writes the whole of `index` to `path` atomically and removes the journal.
fn rewrite(path: &Path, index: &mut SessionIndex) -> Result<()> {
    // Folds still in the file this index was loaded from are read now: they are written again,
    // and kept in memory (a long-lived scanner does not read them again next time).
    index.load_folds();
    let blob: &[u8] = &index.blob;
    let stored_len = index.stored.as_ref().map_or(0, |s| s.bytes.len());
    let mut entries = Vec::with_capacity(stored_len + index.entries.len() * 320);
    let mut folds = Vec::with_capacity(blob.len());
    let mut count = 0u64;
    // A stored fold keeps its hash: a damaged one is caught when it is next used, as on load.
    // A stored range that is not in the buffer any more is dropped.
    let stored_fold = |at: u64, len: u64, hash: u64| -> (&[u8], u64) {
        let range = usize::try_from(at).ok().zip(usize::try_from(len).ok());
        match range.and_then(|(at, len)| blob.get(at..at.checked_add(len)?)) {
            Some(bytes) if !bytes.is_empty() => (bytes, hash),
            _ => (&[], 0),
        }
    };
    let mut put = |view: Option<EntryView<'_>>, fold: &[u8], hash: u64| {
        let Some(mut view) = view else { return };
        view.fold_at = folds.len() as u64;
        view.fold_len = fold.len() as u64;
        view.fold_hash = hash;
        if encode_entry(&view, &mut entries).is_some() {
            folds.extend_from_slice(fold);
            count += 1;
        }
    };
    for entry in &index.entries {
        let (fold, hash): (&[u8], u64) = match &entry.fold {
            FoldState::Stored { at, len, hash } => stored_fold(*at as u64, *len as u64, *hash),
            FoldState::Fresh(text) => (text.as_bytes(), hash64(text.as_bytes())),
            FoldState::Missing => (&[], 0),
        };
        put(EntryView::of(entry, 0, 0, 0), fold, hash);
    }
    if let Some(stored) = &index.stored {
        for i in stored.live() {
            let Some(view) = stored.view(i) else { continue };
            let (fold, hash) = stored_fold(view.fold_at, view.fold_len, view.fold_hash);
            put(Some(view), fold, hash);
        }
    }
    let mut bytes = Vec::with_capacity(HEADER_LEN + entries.len() + folds.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&fingerprint().to_le_bytes());
    bytes.extend_from_slice(&count.to_le_bytes());
    bytes.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&hash64(&entries).to_le_bytes());
    bytes.extend_from_slice(&(folds.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&entries);
    bytes.extend_from_slice(&folds);

    write_atomically(path, &bytes)?;
    // The journal extended the file just replaced; one written meanwhile by another process
    // against this file would be refused by its header anyway.
    let _ = fs::remove_file(journal_file(path));
    for entry in &mut index.entries {
        entry.saved = true;
    }
    index.drops.clear();
    index.base = Some(Base {
        sum: hash64(&entries),
        len: bytes.len() as u64,
        journal_len: 0,
        rewrite: false,
    });
    Ok(())
}

/// The journal beside a cache file, `<name>-journal.<ext>`.
pub fn journal_file(cache: &Path) -> PathBuf {
    file_beside(cache, "journal")
}

/// A file kept beside the session cache, named for it: `<name>-<role>.<ext>`.
pub(crate) fn file_beside(cache: &Path, role: &str) -> PathBuf {
    let stem = cache
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match cache.extension() {
        Some(ext) => format!("{stem}-{role}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{role}"),
    };
    cache.with_file_name(name)
}

const JOURNAL_MAGIC: &[u8; 8] = b"XAGJRN\x00\x01";
/// Magic, format version, fingerprint, the base file's entries checksum and length.
const JOURNAL_HEADER_LEN: usize = 8 + 4 + 8 + 8 + 8;
/// A journal may grow to a quarter of its base, and to at least this, before the next save
/// writes the whole cache again.
const JOURNAL_MIN_LIMIT: u64 = 1 << 20;

/// The cache file an index stands on, named by its entries' checksum and its length, and how
/// much of its journal the index has seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Base {
    sum: u64,
    len: u64,
    /// Bytes of the journal read or written (0: no journal).
    journal_len: u64,
    /// The journal cannot be appended to: it ended in a record that does not check out (a
    /// write cut short), or it belongs to another base. The next save writes the whole cache.
    rewrite: bool,
}

fn journal_header(base: &Base) -> Vec<u8> {
    let mut header = Vec::with_capacity(JOURNAL_HEADER_LEN);
    header.extend_from_slice(JOURNAL_MAGIC);
    header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    header.extend_from_slice(&fingerprint().to_le_bytes());
    header.extend_from_slice(&base.sum.to_le_bytes());
    header.extend_from_slice(&base.len.to_le_bytes());
    header
}

/// One journal record: payload length (u32) and checksum (u64), then the payload: the paths
/// dropped (count, then each as a byte string), and the entries added or replaced (count, then
/// each entry as [`encode_entry`] writes it, its fold state following it). Replayed in order,
/// drops before entries, a record brings an index loaded from the base to where it was saved.
fn journal_record(index: &SessionIndex) -> Vec<u8> {
    let mut payload = Vec::new();
    let drops: Vec<&[u8]> = index
        .drops
        .iter()
        .filter_map(|path| name_bytes(path.as_os_str()))
        .collect();
    payload.extend_from_slice(&(drops.len() as u32).to_le_bytes());
    for path in drops {
        // A path too long for a u32 was never stored either.
        let _ = put_bytes(&mut payload, path);
    }
    let count_at = payload.len();
    payload.extend_from_slice(&0u32.to_le_bytes());
    let mut count = 0u32;
    let blob: &[u8] = &index.blob;
    for entry in index.entries.iter().filter(|entry| !entry.saved) {
        let fold: &[u8] = match &entry.fold {
            FoldState::Fresh(text) => text.as_bytes(),
            // Only entries read by this process are unsaved, and their folds are fresh; one
            // that is not is written without its fold (its file is read again when it grows).
            FoldState::Stored { at, len, .. } => at
                .checked_add(*len)
                .and_then(|end| blob.get(*at..end))
                .unwrap_or_default(),
            FoldState::Missing => &[],
        };
        let Some(view) = EntryView::of(entry, 0, fold.len() as u64, hash64(fold)) else {
            continue;
        };
        if encode_entry(&view, &mut payload).is_some() {
            payload.extend_from_slice(fold);
            count += 1;
        }
    }
    payload[count_at..count_at + 4].copy_from_slice(&count.to_le_bytes());
    let mut record = Vec::with_capacity(12 + payload.len());
    record.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    record.extend_from_slice(&hash64(&payload).to_le_bytes());
    record.extend_from_slice(&payload);
    record
}

/// Appends `record` to the journal of `base` at `path` (creating it, `0600`, with its header
/// when there is none). Refused when the journal there belongs to another base. Returns the
/// journal's length after it.
fn append_journal(cache: &Path, path: &Path, base: &Base, record: &[u8]) -> std::io::Result<u64> {
    let mut options = OpenOptions::new();
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a link planted in the state directory (docs/spec/cross-agent-mcp.md §7: a state directory of the bridge's own).
        options
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    let mut file = options.open(path)?;
    let header = journal_header(base);
    let len = file.metadata()?.len();
    // The cache may have been written again by another process since this one loaded it (a
    // long-lived daemon beside short CLI runs): a journal started now would extend a file that
    // is gone, and the next load would ignore it. Refused, so the caller writes the whole cache.
    if !cache_is_base(cache, base) {
        return Err(std::io::Error::other(
            "the session cache was written again by another process",
        ));
    }
    let mut bytes = Vec::with_capacity(header.len() + record.len());
    if len == 0 {
        bytes.extend_from_slice(&header);
    } else {
        let mut found = vec![0u8; header.len()];
        file.read_exact(&mut found)?;
        if found != header {
            return Err(std::io::Error::other(
                "the journal belongs to another cache file",
            ));
        }
    }
    bytes.extend_from_slice(record);
    // One write: a record is whole or, cut short by a crash, fails its checksum on replay.
    file.write_all(&bytes)?;
    Ok(file.metadata()?.len())
}

/// Whether the cache file at `cache` is still `base`: its length and its entries' checksum.
fn cache_is_base(cache: &Path, base: &Base) -> bool {
    let Ok(mut file) = fs::File::open(cache) else {
        return false;
    };
    let mut bytes = vec![0u8; HEADER_LEN];
    let read = file.metadata().map(|m| m.len()).and_then(|len| {
        file.read_exact(&mut bytes)?;
        Ok(len)
    });
    match read {
        Ok(len) => Header::parse(&bytes, len)
            .is_ok_and(|header| len == base.len && header.entries_sum == base.sum),
        Err(_) => false,
    }
}

/// Replays the journal at `path` onto `index`, just loaded from its base. A journal of another
/// base, or a record that does not check out (a torn tail), stops the replay: what it held is
/// read again from the stores, and the next save writes the whole cache.
fn replay_journal(path: &Path, index: &mut SessionIndex) {
    let Some(base) = index.base.as_mut() else {
        return;
    };
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(_) => {
            base.rewrite = true;
            return;
        }
    };
    let Some(mut rest) = bytes
        .strip_prefix(journal_header(base).as_slice())
        .filter(|_| bytes.len() >= JOURNAL_HEADER_LEN)
    else {
        base.rewrite = true;
        return;
    };
    let mut records = Vec::new();
    while !rest.is_empty() {
        let Some((payload, tail)) = take_record(rest) else {
            break;
        };
        let Some(record) = decode_record(payload) else {
            break;
        };
        records.push(record);
        rest = tail;
    }
    base.rewrite = !rest.is_empty();
    base.journal_len = (bytes.len() - rest.len()) as u64;
    // Where each replayed path's entry is, so a later record replaces it without a search.
    let mut positions: std::collections::HashMap<PathBuf, usize> = index
        .entries
        .iter()
        .enumerate()
        .map(|(i, entry)| (entry.path.clone(), i))
        .collect();
    for record in records {
        apply_record(index, &mut positions, record);
    }
}

/// The payload of the record at the front of `bytes`, and the rest; `None` when it is cut short
/// or its checksum fails.
fn take_record(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut r = Reader(bytes);
    let len = r.u32()? as usize;
    let sum = r.u64()?;
    let payload = r.take(len)?;
    (hash64(payload) == sum).then_some((payload, r.0))
}

/// A record's drops, and its entries with their fold states.
type Record<'a> = (Vec<&'a [u8]>, Vec<(EntryView<'a>, &'a [u8])>);

fn decode_record(payload: &[u8]) -> Option<Record<'_>> {
    let mut r = Reader(payload);
    let drops = (0..r.u32()?)
        .map(|_| r.bytes())
        .collect::<Option<Vec<_>>>()?;
    let count = r.u32()?;
    let mut entries = Vec::new();
    for _ in 0..count {
        let (view, tail) = decode_entry(r.0)?;
        let mut tail = Reader(tail);
        let fold = tail.take(usize::try_from(view.fold_len).ok()?)?;
        entries.push((view, fold));
        r = tail;
    }
    r.0.is_empty().then_some((drops, entries))
}

fn apply_record(
    index: &mut SessionIndex,
    positions: &mut std::collections::HashMap<PathBuf, usize>,
    (drops, entries): Record<'_>,
) {
    // The order of `entries` carries no meaning, so a replaced one is swapped out.
    let drop_path = |index: &mut SessionIndex,
                     positions: &mut std::collections::HashMap<PathBuf, usize>,
                     path: &[u8]| {
        let path = Path::new(os_str(path));
        if let Some(stored) = &mut index.stored
            && let Some(i) = stored.find(path)
        {
            stored.set(i, RecState::Dead);
        }
        if let Some(i) = positions.remove(path) {
            index.entries.swap_remove(i);
            if let Some(moved) = index.entries.get(i) {
                positions.insert(moved.path.clone(), i);
            }
        }
    };
    for path in drops {
        drop_path(index, positions, path);
    }
    for (view, fold) in entries {
        drop_path(index, positions, view.path);
        let mut entry = view.into_entry(None);
        entry.fold = match std::str::from_utf8(fold) {
            Ok(text) if !text.is_empty() && hash64(fold) == view.fold_hash => {
                FoldState::Fresh(text.to_owned())
            }
            _ => FoldState::Missing,
        };
        positions.insert(entry.path.clone(), index.entries.len());
        index.entries.push(entry);
    }
}

/// Writes `bytes` to `path` through a temp file in the same folder and a rename, creating the
/// folder `0700` and the file `0600`.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().ok_or_else(|| StoreError::Cache {
        path: path.to_path_buf(),
        message: "has no parent folder".to_owned(),
    })?;
    private_dir(dir)?;
    let tmp = temp_path(path);
    let written = write_private(&tmp, bytes).and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::io(path, e));
    }
    Ok(())
}

fn temp_path(path: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp-{}-{nanos}", std::process::id()));
    path.with_file_name(name)
}

/// Creates `dir` owner-only (its parent must exist), and tightens it if it already exists. A link
/// standing there is refused: the chmod would act on its target, outside the state directory.
pub fn private_dir(dir: &Path) -> Result<()> {
    if fs::symlink_metadata(dir).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(StoreError::Cache {
            path: dir.to_path_buf(),
            message: "is a symbolic link; cross-agent writes nothing through one (remove it)"
                .to_owned(),
        });
    }
    // Only the cache folder itself: the state directory it lives in is created at start-up,
    // and a daemon whose state directory was deleted must fail here rather than re-create it.
    let mut builder = fs::DirBuilder::new();
    builder.recursive(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    match builder.create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {}
        Err(e) => return Err(StoreError::io(dir, e)),
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| StoreError::io(dir, e))?;
    }
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Caches outlive builds: the hash must stay the specified XXH3 (its reference value for
    /// the empty input), not whatever a dependency update makes of it.
    #[test]
    fn the_hash_is_the_specified_xxh3() {
        assert_eq!(hash64(b""), 0x2D06_8005_38D3_94C2);
    }

    #[test]
    fn garbage_is_corrupt_not_a_panic() {
        assert!(matches!(
            decode(b"nonsense".to_vec()),
            CacheLoad::Corrupt(_)
        ));
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        header.extend_from_slice(&fingerprint().to_le_bytes());
        header.extend_from_slice(&5u64.to_le_bytes());
        header.extend_from_slice(&3u64.to_le_bytes());
        header.extend_from_slice(&hash64(b"abc").to_le_bytes());
        header.extend_from_slice(&0u64.to_le_bytes());
        header.extend_from_slice(b"abc");
        assert!(matches!(decode(header), CacheLoad::Corrupt(_)));
    }

    fn sample_entry() -> Entry {
        let path = PathBuf::from("/home/u/.grok/sessions/x/s1/updates.jsonl");
        Entry {
            kind: FoldKind::Grok,
            size: 1234,
            mtime_ns: Some(-5),
            compressed: true,
            head: Head { len: 17, hash: 99 },
            position: Position {
                offset: 1200,
                line: 7,
            },
            sidecar: Some(SidecarSeen {
                path: path.with_file_name("summary.json"),
                size: 88,
                mtime_ns: None,
            }),
            fold: FoldState::Fresh("{\"a\":1}".to_owned()),
            session: Some(Session {
                agent: Agent::Grok,
                session_id: "s1".to_owned(),
                cwd: Some(PathBuf::from("/work/proj")),
                title: Some("a title".to_owned()),
                title_is_assigned: true,
                first_activity: Some(UnixMillis(3)),
                last_activity: None,
                is_working: true,
                path: path.parent().unwrap().to_path_buf(),
            }),
            path,
            saved: false,
        }
    }

    #[test]
    fn an_entry_round_trips_through_its_encoding() {
        let entry = sample_entry();
        let mut bytes = Vec::new();
        encode_entry(&EntryView::of(&entry, 0, 8, 42).unwrap(), &mut bytes).unwrap();
        encode_entry(&EntryView::of(&entry, 8, 0, 0).unwrap(), &mut bytes).unwrap();
        let (first, rest) = decode_entry(&bytes).unwrap();
        let back = first.into_entry(None);
        assert_eq!(
            back,
            Entry {
                fold: FoldState::Stored {
                    at: 0,
                    len: 8,
                    hash: 42
                },
                saved: true,
                ..entry.clone()
            }
        );
        let (second, rest) = decode_entry(rest).unwrap();
        assert!(rest.is_empty());
        assert_eq!(second.into_entry(None).fold, FoldState::Missing);
        assert_eq!(second.session_owning(None), entry.session);

        // Every cut short is refused, not a panic.
        for end in 0..bytes.len() / 2 {
            assert!(decode_entry(&bytes[..end]).is_none(), "{end}");
        }
    }

    /// A state directory of the bridge's own (docs/spec/cross-agent-mcp.md §7): a link standing where the cache folder goes is refused, and the folder it
    /// points to (outside the state directory) keeps its mode.
    #[cfg(unix)]
    #[test]
    fn a_link_in_place_of_the_cache_folder_is_refused_not_chmod_ed() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o755)).unwrap();
        let cache = tmp.path().join("cache");
        std::os::unix::fs::symlink(&outside, &cache).unwrap();
        assert!(private_dir(&cache).is_err());
        assert!(write_atomically(&cache.join("sessions.bin"), b"x").is_err());
        let mode = fs::metadata(&outside).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    }
}
