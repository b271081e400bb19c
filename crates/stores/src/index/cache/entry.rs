//! One cache entry's byte layout: the borrowed view of an entry ([`EntryView`]), its
//! fixed-width fields and flags, and encoding and decoding it (see the parent module's notes
//! for where entries sit in the file).

use std::path::{Path, PathBuf};

use crate::index::{Entry, FoldKind, FoldState, Head, SidecarSeen};
use crate::lines::Position;
use crate::model::{Agent, Session, UnixMillis};
use crate::roots::SourceFile;
use crate::walk::{Reader, name_bytes, os_str};

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
pub(super) const PATH_AT: usize = 1 + 1 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 8 + 8;
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
        // Copilot sessions are read from the editor's catalog at each walk, never cached.
        Agent::Copilot => 5,
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
    pub(crate) fn of(
        entry: &'a Entry,
        fold_at: u64,
        fold_len: u64,
        fold_hash: u64,
    ) -> Option<Self> {
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
            copilot: None,
        })
    }
}

/// Stored text as a `String`; it was UTF-8 when it was written, and the entries' checksum held.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(super) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Option<()> {
    out.extend_from_slice(&u32::try_from(bytes.len()).ok()?.to_le_bytes());
    out.extend_from_slice(bytes);
    Some(())
}

/// Appends one entry to `out`: kind and flags (u8 each); size, mtime, head length (u32), head
/// hash, offset, line, fold at, fold length, fold hash (u64 unless said); the path; then the
/// sidecar (flags, size, mtime, path) and the session (agent, flags, path kind, first and last
/// activity, id, then cwd, title and other path when present). Byte strings are a u32 length
/// and the bytes. `None` (nothing appended) when a string is longer than a u32 can say.
pub(crate) fn encode_entry(view: &EntryView<'_>, out: &mut Vec<u8>) -> Option<()> {
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
    pub(super) fn i64(&mut self) -> Option<i64> {
        self.u64().map(|n| n as i64)
    }

    pub(super) fn bytes(&mut self) -> Option<&'a [u8]> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
                copilot: None,
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
}
