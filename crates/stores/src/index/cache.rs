//! The index persisted in one file, `$CROSS_AGENT_HOME/cache/sessions-index.bin`, so a new
//! process starts warm.
//!
//! Why a file of our own rather than SQLite (`hub.db`): the CLI lists sessions without a daemon,
//! and the warm listing budget (100 ms for 22,000 sessions, stat calls included) leaves room for
//! one sequential read and decode, not for 22,000 row look-ups. Why postcard: it decodes the
//! entries about as fast as memory can be copied, and every field it stores is a plain type of
//! this module. The agents' fold states are stored as JSON text inside it, because a fold may use
//! serde attributes a non-self-describing format cannot round-trip.
//!
//! Layout: `MAGIC`, then little-endian format version (u32), schema fingerprint, entry count,
//! entries length, entries checksum and folds length (u64 each); then the entries (postcard, one
//! after another) and the folds section (every entry's fold JSON, back to back). A warm listing
//! reads the header and the entries only: the folds section stays in the file (kept open) until
//! a changed file needs a fold, and an entry's fold is decoded — after checking its own hash —
//! only then. Entries of agents a listing does not cover are stepped over without allocating
//! and kept as bytes ([`load_for`]).
//!
//! The fingerprint covers this crate's version and the JSON shape of every fold's default state,
//! so a build whose folds changed starts afresh instead of resuming a state it would misread. A
//! cache that is missing, from another version, or whose checksum or decoding fails is rebuilt:
//! a cache is never worth an error.
//!
//! Written atomically (a temp file in the same folder, then rename), the folder `0700` and the
//! file `0600`: it holds session ids, working directories and titles.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::claude::ClaudeFold;
use crate::codex::CodexFold;
use crate::error::{Result, StoreError};
use crate::grok::GrokFold;
use crate::index::{
    Entry, FoldKind, FoldState, FoldsFile, Head, Pending, SessionIndex, SidecarSeen, fast_hash,
    fnv1a,
};
use crate::lines::Position;
use crate::model::{Agent, Session, TranscriptFold, UnixMillis};

/// The cache file's name inside `$CROSS_AGENT_HOME/cache/`.
pub const CACHE_FILE_NAME: &str = "sessions-index.bin";

const MAGIC: &[u8; 8] = b"XAGIDX\x00\x02";
/// Bump when the layout or a stored type changes.
const FORMAT_VERSION: u32 = 2;
/// Magic, version, fingerprint, entry count, entries length, entries checksum, folds length.
const HEADER_LEN: usize = 8 + 4 + 8 + 8 + 8 + 8 + 8;

/// One entry as stored: plain types of this module only, the fold state as a range of the
/// folds section with its own hash.
#[derive(Debug, Serialize, Deserialize)]
struct StoredEntry {
    kind: FoldKind,
    path: PathBuf,
    size: u64,
    mtime_ns: Option<i64>,
    compressed: bool,
    head: Head,
    offset: u64,
    line: u64,
    sidecar: Option<SidecarSeen>,
    /// `fold_len == 0`: no fold state was stored.
    fold_at: u64,
    fold_len: u64,
    fold_hash: u64,
    session: Option<StoredSession>,
}

/// [`Session`] as stored, in a shape of our own so a change to the shared model's serde
/// attributes cannot break the binary cache.
#[derive(Debug, Serialize, Deserialize)]
struct StoredSession {
    agent: Agent,
    session_id: String,
    cwd: Option<PathBuf>,
    title: Option<String>,
    title_is_assigned: bool,
    first_activity: Option<i64>,
    last_activity: Option<i64>,
    is_working: bool,
    path: SessionPath,
}

/// A session's path relative to its entry's file, which it nearly always is: stored whole only
/// when it is neither.
#[derive(Debug, Serialize, Deserialize)]
enum SessionPath {
    /// The transcript itself (Claude, Codex).
    File,
    /// The transcript's folder (a Grok session folder).
    Parent,
    Other(PathBuf),
}

/// [`StoredEntry`] read without copying anything out: what an entry of an agent not asked for
/// is stepped over with (its kind and its length are all that is kept). Same fields in the same
/// order with the same wire types.
#[derive(Deserialize)]
struct StoredEntrySkim<'a> {
    kind: FoldKind,
    _path: &'a str,
    _size: u64,
    _mtime_ns: Option<i64>,
    _compressed: bool,
    _head: Head,
    _offset: u64,
    _line: u64,
    #[serde(borrow)]
    _sidecar: Option<SidecarSkim<'a>>,
    _fold_at: u64,
    _fold_len: u64,
    _fold_hash: u64,
    #[serde(borrow)]
    _session: Option<StoredSessionSkim<'a>>,
}

#[derive(Deserialize)]
struct SidecarSkim<'a> {
    _path: &'a str,
    _size: u64,
    _mtime_ns: Option<i64>,
}

#[derive(Deserialize)]
struct StoredSessionSkim<'a> {
    _agent: Agent,
    _session_id: &'a str,
    _cwd: Option<&'a str>,
    _title: Option<&'a str>,
    _title_is_assigned: bool,
    _first_activity: Option<i64>,
    _last_activity: Option<i64>,
    _is_working: bool,
    #[serde(borrow)]
    _path: SessionPathSkim<'a>,
}

#[derive(Deserialize)]
enum SessionPathSkim<'a> {
    File,
    Parent,
    Other(#[allow(dead_code)] &'a str),
}

/// What loading found.
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
    fnv1a(shape.as_bytes())
}

fn fold_shape<F: TranscriptFold>() -> String {
    serde_json::to_string(&F::default()).unwrap_or_default()
}

/// Reads the cache at `path`: the header and the entries. The folds section is left in the
/// file (kept open) until a changed file needs a fold: a warm listing reads only the entries.
pub fn load(path: &Path) -> CacheLoad {
    load_for(path, &Agent::ALL)
}

/// [`load`], decoding only the entries of `agents` now: the others are kept as bytes and
/// decoded if they are ever needed (a listing of one agent, as a resolution does, then
/// allocates nothing for the others).
pub fn load_for(path: &Path, agents: &[Agent]) -> CacheLoad {
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
    match decode_entries(&entries, &header, agents) {
        Ok((decoded, pending)) => CacheLoad::Loaded(SessionIndex {
            entries: decoded,
            pending: (!pending.is_empty()).then_some(Pending {
                bytes: entries,
                ranges: pending,
            }),
            blob: Vec::new(),
            folds_file: Some(FoldsFile {
                file,
                at: (HEADER_LEN + header.entries_len) as u64,
                len: header.folds_len,
            }),
            dirty: false,
        }),
        Err(refused) => refused.into(),
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(buf)
}

/// Why a cache is not used (the [`CacheLoad`] cases without an index).
enum Refused {
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

/// The decoded entries, and the kind and range of each entry kept as bytes.
type Decoded = (Vec<Entry>, Vec<(FoldKind, usize, usize)>);

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
    match decode_entries(&bytes[HEADER_LEN..entries_end], &header, &Agent::ALL) {
        Ok((entries, _)) => CacheLoad::Loaded(SessionIndex {
            entries,
            pending: None,
            blob: bytes[entries_end..].to_vec(),
            folds_file: None,
            dirty: false,
        }),
        Err(refused) => refused.into(),
    }
}

/// The entries of `agents`, decoded, and where the others are in `all`.
fn decode_entries(all: &[u8], header: &Header, agents: &[Agent]) -> Result<Decoded, Refused> {
    // Only the entries are checked here; each fold is checked by its own hash when a changed
    // file needs it, so a warm start does not hash every fold.
    if fast_hash(all) != header.entries_sum {
        return Err(Refused::Corrupt(
            "session cache checksum does not match".to_owned(),
        ));
    }
    let count = usize::try_from(header.count).unwrap_or(usize::MAX);
    let mut entries = Vec::with_capacity(count.min(all.len()));
    let mut pending = Vec::new();
    let mut rest = all;
    let bad = |e: postcard::Error| Refused::Corrupt(format!("session cache does not decode: {e}"));
    for _ in 0..count {
        let start = all.len() - rest.len();
        let (skim, tail) = postcard::take_from_bytes::<StoredEntrySkim<'_>>(rest).map_err(bad)?;
        if agents.contains(&skim.kind.agent()) {
            let (stored, _) = postcard::take_from_bytes::<StoredEntry>(rest).map_err(bad)?;
            entries.push(from_stored(stored));
        } else {
            pending.push((skim.kind, start, all.len() - tail.len()));
        }
        rest = tail;
    }
    if !rest.is_empty() {
        return Err(Refused::Corrupt(
            "session cache has trailing bytes".to_owned(),
        ));
    }
    Ok((entries, pending))
}

/// Decodes one entry kept as bytes by [`load_for`] (checked when it was loaded).
pub(crate) fn decode_pending(bytes: &[u8]) -> Option<Entry> {
    postcard::take_from_bytes::<StoredEntry>(bytes)
        .ok()
        .map(|(stored, _)| from_stored(stored))
}

fn from_stored(stored: StoredEntry) -> Entry {
    let session = stored.session.map(|s| Session {
        agent: s.agent,
        session_id: s.session_id,
        cwd: s.cwd,
        title: s.title,
        title_is_assigned: s.title_is_assigned,
        first_activity: s.first_activity.map(UnixMillis),
        last_activity: s.last_activity.map(UnixMillis),
        is_working: s.is_working,
        path: match s.path {
            SessionPath::File => stored.path.clone(),
            SessionPath::Parent => stored
                .path
                .parent()
                .map_or_else(|| stored.path.clone(), Path::to_path_buf),
            SessionPath::Other(path) => path,
        },
    });
    let fold = match (
        usize::try_from(stored.fold_at),
        usize::try_from(stored.fold_len),
    ) {
        (Ok(at), Ok(len)) if len > 0 => FoldState::Stored {
            at,
            len,
            hash: stored.fold_hash,
        },
        _ => FoldState::Missing,
    };
    Entry {
        kind: stored.kind,
        path: stored.path,
        size: stored.size,
        mtime_ns: stored.mtime_ns,
        compressed: stored.compressed,
        head: stored.head,
        position: Position {
            offset: stored.offset,
            line: stored.line,
        },
        sidecar: stored.sidecar,
        fold,
        session,
    }
}

/// [`StoredEntry`] borrowed from an [`Entry`], so saving copies no strings. Same fields in the
/// same order with the same wire types: postcard writes a `&str`/`&Path` as it writes a
/// `String`/`PathBuf`, and [`SessionPathRef`] mirrors [`SessionPath`] variant for variant.
#[derive(Serialize)]
struct StoredEntryRef<'a> {
    kind: FoldKind,
    path: &'a Path,
    size: u64,
    mtime_ns: Option<i64>,
    compressed: bool,
    head: Head,
    offset: u64,
    line: u64,
    sidecar: Option<&'a SidecarSeen>,
    fold_at: u64,
    fold_len: u64,
    fold_hash: u64,
    session: Option<StoredSessionRef<'a>>,
}

#[derive(Serialize)]
struct StoredSessionRef<'a> {
    agent: Agent,
    session_id: &'a str,
    cwd: Option<&'a Path>,
    title: Option<&'a str>,
    title_is_assigned: bool,
    first_activity: Option<i64>,
    last_activity: Option<i64>,
    is_working: bool,
    path: SessionPathRef<'a>,
}

#[derive(Serialize)]
enum SessionPathRef<'a> {
    File,
    Parent,
    Other(&'a Path),
}

fn to_stored<'a>(
    entry: &'a Entry,
    fold_at: u64,
    fold_len: u64,
    fold_hash: u64,
) -> StoredEntryRef<'a> {
    let session = entry.session.as_ref().map(|s| StoredSessionRef {
        agent: s.agent,
        session_id: &s.session_id,
        cwd: s.cwd.as_deref(),
        title: s.title.as_deref(),
        title_is_assigned: s.title_is_assigned,
        first_activity: s.first_activity.map(|t| t.0),
        last_activity: s.last_activity.map(|t| t.0),
        is_working: s.is_working,
        path: if s.path.as_os_str() == entry.path.as_os_str() {
            SessionPathRef::File
        } else if Some(s.path.as_path()) == entry.path.parent() {
            SessionPathRef::Parent
        } else {
            SessionPathRef::Other(&s.path)
        },
    });
    StoredEntryRef {
        kind: entry.kind,
        path: &entry.path,
        size: entry.size,
        mtime_ns: entry.mtime_ns,
        compressed: entry.compressed,
        head: entry.head,
        offset: entry.position.offset,
        line: entry.position.line,
        sidecar: entry.sidecar.as_ref(),
        fold_at,
        fold_len,
        fold_hash,
        session,
    }
}

/// Writes `index` to `path` atomically, creating its folder `0700` and the file `0600`.
pub fn save(path: &Path, index: &SessionIndex) -> Result<()> {
    let encode_error = |e: postcard::Error| StoreError::Cache {
        path: path.to_path_buf(),
        message: format!("cannot encode: {e}"),
    };
    // Folds still in the file this index was loaded from are read now: they are written again.
    let from_file;
    let blob: &[u8] = match &index.folds_file {
        Some(source) => {
            from_file = source.read_all().unwrap_or_default();
            &from_file
        }
        None => &index.blob,
    };
    let mut entries = Vec::with_capacity(index.len() * 256);
    let mut folds = Vec::with_capacity(blob.len());
    let undecoded = index.pending_entries(&Agent::ALL);
    for entry in index.entries.iter().chain(&undecoded) {
        // A stored fold keeps its hash: a damaged one is caught when it is next used, as on
        // load. A stored range that is not in the buffer any more is dropped.
        let (fold, hash): (&[u8], u64) = match &entry.fold {
            FoldState::Stored { at, len, hash } => {
                match at.checked_add(*len).and_then(|end| blob.get(*at..end)) {
                    Some(bytes) => (bytes, *hash),
                    None => (&[], 0),
                }
            }
            FoldState::Fresh(text) => (text.as_bytes(), fast_hash(text.as_bytes())),
            FoldState::Missing => (&[], 0),
        };
        let at = folds.len() as u64;
        folds.extend_from_slice(fold);
        entries = postcard::to_extend(&to_stored(entry, at, fold.len() as u64, hash), entries)
            .map_err(encode_error)?;
    }
    let mut bytes = Vec::with_capacity(HEADER_LEN + entries.len() + folds.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&fingerprint().to_le_bytes());
    bytes.extend_from_slice(&((index.entries.len() + undecoded.len()) as u64).to_le_bytes());
    bytes.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&fast_hash(&entries).to_le_bytes());
    bytes.extend_from_slice(&(folds.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&entries);
    bytes.extend_from_slice(&folds);

    write_atomically(path, &bytes)
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

/// Creates `dir` (and missing parents) owner-only, and tightens it if it already exists.
pub fn private_dir(dir: &Path) -> Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| StoreError::io(dir, e))?;
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

    #[test]
    fn the_hash_sees_one_changed_byte() {
        let a = vec![7u8; 1001];
        let mut b = a.clone();
        b[500] = 8;
        assert_ne!(fast_hash(&a), fast_hash(&b));
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
        header.extend_from_slice(&fast_hash(b"abc").to_le_bytes());
        header.extend_from_slice(&0u64.to_le_bytes());
        header.extend_from_slice(b"abc");
        assert!(matches!(decode(header), CacheLoad::Corrupt(_)));
    }
}
