//! The sessions a long-lived process holds, kept compact: one agent's listing as fixed records
//! over one arena of text, with the strings sessions share (working directories, the folders
//! and endings of transcript paths) kept once — and a borrowed view of one session
//! ([`SessionRef`]) that resolution, sends, status and the listing read through, whether the
//! session is held here or is a whole [`Session`] (the CLI's own scan).
//!
//! Why: the daemon keeps every session of every agent (111,000 on a large machine) for
//! resolution and sends, and a [`Session`] is a 144-byte record and four strings of its own
//! (~350 bytes). A person has tens of projects, not thousands: working directories repeat,
//! every Claude transcript is `<projects>/<slug>/<id>.jsonl` and every Codex one
//! `<sessions>/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, so the folder and the ending repeat and
//! the file name repeats the id. Here a session is a 32-byte record, its id, its title and what
//! of its path is its own (a Codex rollout's time); the path is made again when asked
//! ([`SessionRef::path`]), exactly as it was. A session that does not fit (a path or directory
//! that is not UTF-8, a string longer than the record counts, a store of more than 65,000
//! distinct directories) is held whole beside the others:
//! what goes in comes out unchanged, whatever it is.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::model::{Agent, CopilotDetails, Session, UnixMillis};

/// One agent's sessions (in the listing's order), held compact; equal exactly when the
/// sessions they were made from are equal (the same sessions always make the same bytes).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HeldSessions {
    records: Vec<Record>,
    /// Each session's id, then what of its path is its own, then its title.
    text: String,
    /// Working directories, and the folders and endings of transcript paths: each once.
    shared: Interned,
    /// The Copilot sessions' own facts, by the index of their session (ascending).
    copilot: Vec<(u32, CopilotDetails)>,
    /// The sessions held whole ([`Record::text`] is the index here).
    whole: Vec<Session>,
}

/// One session's record: its times, where its strings are, and which shared strings it uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    /// [`UnixMillis`], or [`NO_TIME`] for none (with [`HAS_FIRST`]/[`HAS_LAST`] unset).
    first_activity: i64,
    last_activity: i64,
    /// Where its id starts in [`HeldSessions::text`] (or, held whole, its index there).
    text: u32,
    title_len: u16,
    /// Indexes into [`HeldSessions::shared`]; [`NONE`] for no directory.
    cwd: u16,
    /// The path's folder, with its last separator.
    path_dir: u16,
    /// What follows the id in the path (`.jsonl`, `/events.jsonl`), or nothing.
    path_end: u16,
    id_len: u8,
    /// The part of its path's file name before the id (a Codex rollout's time).
    own_path_len: u8,
    flags: u8,
    agent: u8,
}

// Every session pays one: kept at 32 bytes.
const _: () = assert!(std::mem::size_of::<Record>() == 32);

/// No directory; also the bound on shared strings (the sessions of a store with more distinct
/// directories than that are held whole past it).
const NONE: u16 = u16::MAX;
const NO_TIME: i64 = 0;

const HAS_FIRST: u8 = 1;
const HAS_LAST: u8 = 1 << 1;
const HAS_TITLE: u8 = 1 << 2;
const TITLE_IS_ASSIGNED: u8 = 1 << 3;
const IS_WORKING: u8 = 1 << 4;
/// The id stands in the path between its own part and its end.
const ID_IN_PATH: u8 = 1 << 5;
const HAS_COPILOT: u8 = 1 << 6;
/// Held whole in [`HeldSessions::whole`].
const WHOLE: u8 = 1 << 7;

/// Strings kept once each, numbered in the order first seen.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Interned {
    text: String,
    /// Where string `n` ends in `text` (it starts where `n - 1` ends).
    ends: Vec<u32>,
}

impl Interned {
    fn get(&self, n: u16) -> &str {
        let n = n as usize;
        let start = match n {
            0 => 0,
            _ => self.ends.get(n - 1).map_or(0, |&end| end as usize),
        };
        let end = self.ends.get(n).map_or(start, |&end| end as usize);
        self.text.get(start..end).unwrap_or_default()
    }

    fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * std::mem::size_of::<u32>()
    }
}

/// Numbers strings as they are first seen, while a [`HeldSessions`] is made.
#[derive(Default)]
struct Interner<'s> {
    numbers: HashMap<&'s str, u16>,
    kept: Interned,
}

impl<'s> Interner<'s> {
    /// The number of `s`, or `None` when there are too many or the shared text would outgrow
    /// a `u32`.
    fn number(&mut self, s: &'s str) -> Option<u16> {
        if let Some(&n) = self.numbers.get(s) {
            return Some(n);
        }
        let n = u16::try_from(self.kept.ends.len())
            .ok()
            .filter(|&n| n < NONE)?;
        let end = u32::try_from(self.kept.text.len() + s.len()).ok()?;
        self.kept.text.push_str(s);
        self.kept.ends.push(end);
        self.numbers.insert(s, n);
        Some(n)
    }
}

/// A transcript path cut where it repeats: `dir` + `own` + id + `end` (without the id when
/// the path does not hold it: `dir` + `own`).
struct PathCut<'s> {
    dir: &'s str,
    own: &'s str,
    end: &'s str,
    id_in_path: bool,
}

impl<'s> PathCut<'s> {
    fn of(path: &'s str, id: &str) -> PathCut<'s> {
        let (head, end, id_in_path) = match path.rfind(id).filter(|_| !id.is_empty()) {
            Some(at) => (&path[..at], &path[at + id.len()..], true),
            None => (path, "", false),
        };
        let split = head.rfind(std::path::is_separator).map_or(0, |at| at + 1);
        PathCut {
            dir: &head[..split],
            own: &head[split..],
            end,
            id_in_path,
        }
    }
}

impl HeldSessions {
    /// Holds `sessions` (the order kept).
    pub fn new(sessions: &[Session]) -> HeldSessions {
        let mut held = HeldSessions {
            records: Vec::with_capacity(sessions.len()),
            ..HeldSessions::default()
        };
        let mut shared = Interner::default();
        for (i, session) in sessions.iter().enumerate() {
            let record = held
                .compact(i, session, &mut shared)
                .unwrap_or_else(|| held.keep_whole(session));
            held.records.push(record);
        }
        held.shared = shared.kept;
        held.text.shrink_to_fit();
        held.shared.text.shrink_to_fit();
        held.shared.ends.shrink_to_fit();
        held.copilot.shrink_to_fit();
        held.whole.shrink_to_fit();
        held
    }

    /// The record of session number `i`, its strings written; `None` (nothing written, a
    /// directory numbered for it perhaps left unused) when it does not fit one.
    fn compact<'s>(
        &mut self,
        i: usize,
        s: &'s Session,
        shared: &mut Interner<'s>,
    ) -> Option<Record> {
        let path = PathCut::of(s.path.to_str()?, &s.session_id);
        let cwd = match s.cwd.as_deref() {
            Some(cwd) => shared.number(cwd.to_str()?)?,
            None => NONE,
        };
        let title = s.title.as_deref().unwrap_or_default();
        let text = u32::try_from(self.text.len()).ok()?;
        let id_len = u8::try_from(s.session_id.len()).ok()?;
        let own_path_len = u8::try_from(path.own.len()).ok()?;
        let title_len = u16::try_from(title.len()).ok()?;
        // Its last string must end where a `u32` still reaches.
        u32::try_from(self.text.len() + s.session_id.len() + path.own.len() + title.len()).ok()?;
        let path_dir = shared.number(path.dir)?;
        let path_end = shared.number(path.end)?;
        let mut flags = 0;
        for (set, flag) in [
            (s.first_activity.is_some(), HAS_FIRST),
            (s.last_activity.is_some(), HAS_LAST),
            (s.title.is_some(), HAS_TITLE),
            (s.title_is_assigned, TITLE_IS_ASSIGNED),
            (s.is_working, IS_WORKING),
            (path.id_in_path, ID_IN_PATH),
            (s.copilot.is_some(), HAS_COPILOT),
        ] {
            if set {
                flags |= flag;
            }
        }
        if let Some(details) = s.copilot.as_deref() {
            self.copilot.push((u32::try_from(i).ok()?, details.clone()));
        }
        self.text.push_str(&s.session_id);
        self.text.push_str(path.own);
        self.text.push_str(title);
        Some(Record {
            first_activity: s.first_activity.map_or(NO_TIME, |t| t.0),
            last_activity: s.last_activity.map_or(NO_TIME, |t| t.0),
            text,
            id_len,
            own_path_len,
            title_len,
            cwd,
            path_dir,
            path_end,
            flags,
            agent: agent_number(s.agent),
        })
    }

    /// The record of a session held whole.
    fn keep_whole(&mut self, s: &Session) -> Record {
        let at = u32::try_from(self.whole.len()).unwrap_or(u32::MAX);
        self.whole.push(s.clone());
        Record {
            first_activity: NO_TIME,
            last_activity: NO_TIME,
            text: at,
            id_len: 0,
            own_path_len: 0,
            title_len: 0,
            cwd: NONE,
            path_dir: NONE,
            path_end: NONE,
            flags: WHOLE,
            agent: agent_number(s.agent),
        }
    }

    /// Holding no session: for an agent not asked for, or without a store.
    pub fn none() -> &'static HeldSessions {
        static NONE: HeldSessions = HeldSessions {
            records: Vec::new(),
            text: String::new(),
            shared: Interned {
                text: String::new(),
                ends: Vec::new(),
            },
            copilot: Vec::new(),
            whole: Vec::new(),
        };
        &NONE
    }

    /// How many sessions it holds.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Session number `i`.
    pub fn get(&self, i: usize) -> Option<SessionRef<'_>> {
        self.records.get(i).map(|record| self.view(i, record))
    }

    /// Every session, in the order held.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            held: self,
            records: self.records.iter().enumerate(),
        }
    }

    /// Every session, copied out whole.
    pub fn to_sessions(&self) -> Vec<Session> {
        self.iter().map(SessionRef::to_session).collect()
    }

    /// Session number `i`, whose record is `record`.
    fn view<'a>(&'a self, i: usize, record: &'a Record) -> SessionRef<'a> {
        if record.flags & WHOLE != 0
            && let Some(session) = self.whole.get(record.text as usize)
        {
            return SessionRef(Inner::Whole(session));
        }
        SessionRef(Inner::Held(self, record, i))
    }

    /// Its records' bytes.
    pub fn record_bytes(&self) -> usize {
        self.records.capacity() * std::mem::size_of::<Record>()
    }

    /// The bytes of its strings and of what it holds beside the records.
    pub fn string_bytes(&self) -> usize {
        self.text.capacity()
            + self.shared.heap_bytes()
            + self.copilot.capacity() * std::mem::size_of::<(u32, CopilotDetails)>()
            + self.whole.capacity() * std::mem::size_of::<Session>()
            + self.whole.iter().map(Session::heap_bytes).sum::<usize>()
    }

    /// Everything it holds, in bytes (capacities).
    pub fn heap_bytes(&self) -> usize {
        self.record_bytes() + self.string_bytes()
    }
}

/// The sessions of a [`HeldSessions`], in order.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    held: &'a HeldSessions,
    records: std::iter::Enumerate<std::slice::Iter<'a, Record>>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = SessionRef<'a>;

    fn next(&mut self) -> Option<SessionRef<'a>> {
        let (i, record) = self.records.next()?;
        Some(self.held.view(i, record))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.records.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let (i, record) = self.records.next_back()?;
        Some(self.held.view(i, record))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a HeldSessions {
    type Item = SessionRef<'a>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

fn agent_number(agent: Agent) -> u8 {
    Agent::ALL
        .iter()
        .position(|&a| a == agent)
        .and_then(|n| u8::try_from(n).ok())
        .unwrap_or(0)
}

/// One session, borrowed: from a [`HeldSessions`] or a whole [`Session`]. Cheap to copy; its
/// path is the one field made on asking.
#[derive(Debug, Clone, Copy)]
pub struct SessionRef<'a>(Inner<'a>);

#[derive(Debug, Clone, Copy)]
enum Inner<'a> {
    Whole(&'a Session),
    /// The store, the record and its number there.
    Held(&'a HeldSessions, &'a Record, usize),
}

impl<'a> From<&'a Session> for SessionRef<'a> {
    fn from(session: &'a Session) -> Self {
        SessionRef(Inner::Whole(session))
    }
}

impl<'a> SessionRef<'a> {
    /// The whole session, or else the compact record and where its strings are.
    fn held(self) -> Result<&'a Session, (&'a HeldSessions, &'a Record)> {
        match self.0 {
            Inner::Whole(session) => Ok(session),
            Inner::Held(held, record, _) => Err((held, record)),
        }
    }

    /// The held text from `skip` bytes after the id's start, `len` long.
    fn text(held: &'a HeldSessions, record: &Record, skip: usize, len: usize) -> &'a str {
        let start = record.text as usize + skip;
        held.text.get(start..start + len).unwrap_or_default()
    }

    pub fn agent(self) -> Agent {
        match self.held() {
            Ok(s) => s.agent,
            Err((_, r)) => Agent::ALL
                .get(usize::from(r.agent))
                .copied()
                .unwrap_or(Agent::Claude),
        }
    }

    pub fn session_id(self) -> &'a str {
        match self.held() {
            Ok(s) => &s.session_id,
            Err((held, r)) => Self::text(held, r, 0, r.id_len.into()),
        }
    }

    pub fn title(self) -> Option<&'a str> {
        match self.held() {
            Ok(s) => s.title.as_deref(),
            Err((held, r)) => (r.flags & HAS_TITLE != 0).then(|| {
                let skip = usize::from(r.id_len) + usize::from(r.own_path_len);
                Self::text(held, r, skip, r.title_len.into())
            }),
        }
    }

    pub fn title_is_assigned(self) -> bool {
        match self.held() {
            Ok(s) => s.title_is_assigned,
            Err((_, r)) => r.flags & TITLE_IS_ASSIGNED != 0,
        }
    }

    /// The directory the session works in, as the agent recorded it.
    pub fn cwd(self) -> Option<&'a Path> {
        match self.held() {
            Ok(s) => s.cwd.as_deref(),
            Err((held, r)) => (r.cwd != NONE).then(|| Path::new(held.shared.get(r.cwd))),
        }
    }

    pub fn first_activity(self) -> Option<UnixMillis> {
        match self.held() {
            Ok(s) => s.first_activity,
            Err((_, r)) => (r.flags & HAS_FIRST != 0).then_some(UnixMillis(r.first_activity)),
        }
    }

    pub fn last_activity(self) -> Option<UnixMillis> {
        match self.held() {
            Ok(s) => s.last_activity,
            Err((_, r)) => (r.flags & HAS_LAST != 0).then_some(UnixMillis(r.last_activity)),
        }
    }

    pub fn is_working(self) -> bool {
        match self.held() {
            Ok(s) => s.is_working,
            Err((_, r)) => r.flags & IS_WORKING != 0,
        }
    }

    /// What the session was read from: borrowed from a whole session, made again (exactly as
    /// it was) from a held one.
    pub fn path(self) -> Cow<'a, Path> {
        match self.held() {
            Ok(s) => Cow::Borrowed(s.path.as_path()),
            Err((held, r)) => {
                let dir = held.shared.get(r.path_dir);
                let own = Self::text(held, r, r.id_len.into(), r.own_path_len.into());
                let id = self.session_id();
                let end = held.shared.get(r.path_end);
                let mut path = String::with_capacity(dir.len() + own.len() + id.len() + end.len());
                path.push_str(dir);
                path.push_str(own);
                if r.flags & ID_IN_PATH != 0 {
                    path.push_str(id);
                    path.push_str(end);
                }
                Cow::Owned(PathBuf::from(path))
            }
        }
    }

    /// Its path's bytes in pieces: compared and hashed without making the path.
    fn path_pieces(self) -> [&'a [u8]; 4] {
        match self.held() {
            Ok(s) => [s.path.as_os_str().as_encoded_bytes(), b"", b"", b""],
            Err((held, r)) => {
                let own = Self::text(held, r, r.id_len.into(), r.own_path_len.into());
                let (id, end) = if r.flags & ID_IN_PATH != 0 {
                    (self.session_id(), held.shared.get(r.path_end))
                } else {
                    ("", "")
                };
                let dir = held.shared.get(r.path_dir);
                [
                    dir.as_bytes(),
                    own.as_bytes(),
                    id.as_bytes(),
                    end.as_bytes(),
                ]
            }
        }
    }

    /// Whether its path is `other`'s, byte for byte.
    pub fn same_path(self, other: SessionRef<'_>) -> bool {
        let (a, b) = (self.path_pieces(), other.path_pieces());
        let len = |pieces: &[&[u8]; 4]| pieces.iter().map(|p| p.len()).sum::<usize>();
        len(&a) == len(&b) && a.iter().copied().flatten().eq(b.iter().copied().flatten())
    }

    /// A hash of its path's bytes: the same for the same path, held or whole.
    pub fn path_hash(self) -> u64 {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for piece in self.path_pieces() {
            hasher.update(piece);
        }
        hasher.digest()
    }

    /// What only a Copilot session has.
    pub fn copilot(self) -> Option<&'a CopilotDetails> {
        match self.0 {
            Inner::Whole(s) => s.copilot.as_deref(),
            Inner::Held(held, r, i) if r.flags & HAS_COPILOT != 0 => {
                let i = u32::try_from(i).ok()?;
                let at = held.copilot.binary_search_by_key(&i, |(n, _)| *n).ok()?;
                held.copilot.get(at).map(|(_, details)| details)
            }
            Inner::Held(..) => None,
        }
    }

    /// The session, copied out whole.
    pub fn to_session(self) -> Session {
        match self.held() {
            Ok(s) => s.clone(),
            Err(_) => Session {
                agent: self.agent(),
                session_id: self.session_id().to_owned(),
                cwd: self.cwd().map(Path::to_path_buf),
                title: self.title().map(str::to_owned),
                title_is_assigned: self.title_is_assigned(),
                first_activity: self.first_activity(),
                last_activity: self.last_activity(),
                is_working: self.is_working(),
                path: self.path().into_owned(),
                copilot: self.copilot().cloned().map(Box::new),
            },
        }
    }
}

/// Field by field, as [`Session`]'s own equality (the path byte for byte).
impl PartialEq for SessionRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (*self, *other);
        a.agent() == b.agent()
            && a.session_id() == b.session_id()
            && a.cwd() == b.cwd()
            && a.title() == b.title()
            && a.title_is_assigned() == b.title_is_assigned()
            && a.first_activity() == b.first_activity()
            && a.last_activity() == b.last_activity()
            && a.is_working() == b.is_working()
            && a.copilot() == b.copilot()
            && a.same_path(b)
    }
}

impl Eq for SessionRef<'_> {}

impl From<SessionRef<'_>> for cross_agent_protocol::bridge::IndexedSession {
    fn from(s: SessionRef<'_>) -> Self {
        cross_agent_protocol::bridge::IndexedSession {
            agent: s.agent(),
            session_id: s.session_id().to_owned(),
            cwd: s.cwd().map(|p| p.to_string_lossy().into_owned()),
            title: s.title().map(str::to_owned),
            title_is_assigned: s.title_is_assigned(),
            first_activity: s.first_activity().map(|t| t.0),
            last_activity: s.last_activity().map(|t| t.0),
            is_working: s.is_working(),
            path: s.path().to_string_lossy().into_owned(),
            copilot: s.copilot().cloned(),
        }
    }
}

/// A session as resolution and the listing read it: a whole [`Session`] or a view of a held
/// one, either way [`SessionRef`]'s fields.
pub trait AsSession<'a>: Copy + Into<SessionRef<'a>> {
    fn fields(self) -> SessionRef<'a> {
        self.into()
    }
}

impl<'a, S: Copy + Into<SessionRef<'a>>> AsSession<'a> for S {}

/// Sessions a lookup can index into: a whole listing's, or the ones held.
pub trait SessionList<'a>: Copy {
    type Item: AsSession<'a>;
    fn count(self) -> usize;
    fn at(self, i: usize) -> Option<Self::Item>;
    fn all(self) -> impl Iterator<Item = Self::Item>;
}

impl<'a> SessionList<'a> for &'a [Session] {
    type Item = &'a Session;
    fn count(self) -> usize {
        self.len()
    }
    fn at(self, i: usize) -> Option<&'a Session> {
        self.get(i)
    }
    fn all(self) -> impl Iterator<Item = &'a Session> {
        self.iter()
    }
}

// A `Vec`'s own, so the many callers holding one (tests, benches, the CLI) pass `&sessions`:
// its slice's.
impl<'a> SessionList<'a> for &'a Vec<Session> {
    type Item = &'a Session;
    fn count(self) -> usize {
        self.as_slice().count()
    }
    fn at(self, i: usize) -> Option<&'a Session> {
        self.as_slice().at(i)
    }
    fn all(self) -> impl Iterator<Item = &'a Session> {
        self.as_slice().all()
    }
}

impl<'a> SessionList<'a> for &'a HeldSessions {
    type Item = SessionRef<'a>;
    fn count(self) -> usize {
        self.len()
    }
    fn at(self, i: usize) -> Option<SessionRef<'a>> {
        self.get(i)
    }
    fn all(self) -> impl Iterator<Item = SessionRef<'a>> {
        self.iter()
    }
}

#[cfg(test)]
mod tests;
