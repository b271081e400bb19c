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
//! This module holds the file's header, loading and saving; one entry's byte layout is in
//! `entry`, the journal in `journal`, and writing files privately and atomically in
//! `files`.

use std::fs;
use std::io::Read;
use std::path::Path;

use crate::claude::ClaudeFold;
use crate::codex::CodexFold;
use crate::error::Result;
use crate::grok::GrokFold;
use crate::index::{FoldState, FoldsFile, SessionIndex, hash64};
use crate::model::{Agent, TranscriptFold};

mod entry;
mod files;
mod journal;
mod stored;

pub(crate) use entry::EntryView;
pub(crate) use entry::{decode_entry, encode_entry};
pub use files::private_dir;
pub(crate) use files::{open_to_read, read_at, write_atomically_parts};
pub use journal::journal_file;
pub(crate) use journal::{Base, file_beside};
use journal::{JOURNAL_MIN_LIMIT, append_journal, journal_record, replay_journal};
pub(crate) use stored::{RecState, Stored};

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

/// Reads the cache at `path`: the header and the entries. The folds section is left in the
/// file (kept open) until a changed file needs a fold: a warm listing reads only the entries,
/// and decodes each only as far as it needs.
pub fn load(path: &Path) -> CacheLoad {
    load_for(path, &[])
}

/// [`load`], for a listing of `agents`: when it covers Codex, its thread names are decoded
/// now too (a listing loads the cache on a thread of its own, beside the walk).
pub(crate) fn load_for(path: &Path, agents: &[Agent]) -> CacheLoad {
    let mut file = match files::open_to_read(path) {
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
                changed: Default::default(),
                one_shot: false,
                packed: None,
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
            changed: Default::default(),
            one_shot: false,
            packed: None,
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

/// Leaves the entries `index` loaded from its cache file in that file (kept open), for an
/// index kept in memory by a long-lived process (see `stored`). An index not loaded from a
/// file, or whose folds were read in whole, keeps them.
pub(crate) fn spill_entries(index: &mut SessionIndex) {
    let (Some(stored), Some(folds)) = (&mut index.stored, &index.folds_file) else {
        return;
    };
    match folds.file.try_clone() {
        Ok(file) => stored.spill(file, HEADER_LEN as u64),
        Err(error) => tracing::debug!(%error, "the session cache's entries stay in memory"),
    }
}

/// Makes the next [`save`] of `index` write the whole cache rather than append to the journal.
pub(crate) fn rewrite_on_save(index: &mut SessionIndex) {
    if let Some(base) = &mut index.base {
        base.rewrite = true;
    }
}

/// Every entry of `index` encoded, with the fold states to write after them (where they are
/// in memory), their total length, and how many entries there are.
fn encode_all<'a>(index: &'a SessionIndex) -> (Vec<u8>, Vec<FoldRef<'a>>, u64, u64) {
    let blob: &[u8] = &index.blob;
    let stored_len = index.stored.as_ref().map_or(0, Stored::section_len);
    // About 350 bytes an entry (100,000 sessions): room for 400 each, so the buffer is not
    // grown to twice its size near the end.
    let mut entries = Vec::with_capacity(stored_len + index.entries.len() * 400);
    // The fold states are in memory already (each entry's own, or the buffer read from the
    // file): they are written from where they are, not gathered.
    let mut folds: Vec<FoldRef<'a>> = Vec::with_capacity(index.entries.len() + stored_len / 256);
    let mut folds_len = 0u64;
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
    let mut put = |view: Option<EntryView<'_>>, fold: FoldRef<'a>, hash: u64| {
        let Some(mut view) = view else { return };
        view.fold_at = folds_len;
        view.fold_len = fold.0.len() as u64;
        view.fold_hash = hash;
        if encode_entry(&view, &mut entries).is_some() {
            folds_len += fold.0.len() as u64;
            folds.push(fold);
            count += 1;
        }
    };
    for entry in &index.entries {
        let (fold, hash): (&[u8], u64) = match &entry.fold {
            FoldState::Stored { at, len, hash } => stored_fold(*at as u64, *len as u64, *hash),
            FoldState::Fresh(text) => (text.as_bytes(), hash64(text.as_bytes())),
            FoldState::Missing => (&[], 0),
        };
        put(EntryView::of(entry, 0, 0, 0), FoldRef(fold), hash);
    }
    if let Some(stored) = &index.stored {
        for i in stored.live() {
            let Some(view) = stored.view(i) else { continue };
            let (fold, hash) = stored_fold(view.fold_at, view.fold_len, view.fold_hash);
            put(Some(view), FoldRef(fold), hash);
        }
    }
    (entries, folds, folds_len, count)
}

/// A fold state written from where it is in memory.
#[derive(Clone, Copy)]
struct FoldRef<'a>(&'a [u8]);

/// Writes the whole of `index` to `path` atomically and removes the journal.
fn rewrite(path: &Path, index: &mut SessionIndex) -> Result<()> {
    // Folds still in the file this index was loaded from are read now: they are written again,
    // and kept in memory (a long-lived scanner does not read them again next time).
    index.load_folds();
    // So are entries left in it (a long-lived scanner's, see `stored`).
    if let Some(stored) = &mut index.stored {
        stored
            .unspill()
            .map_err(|error| crate::error::StoreError::io(path, error))?;
    }
    let (entries, folds, folds_len, count) = encode_all(index);
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    header.extend_from_slice(&fingerprint().to_le_bytes());
    header.extend_from_slice(&count.to_le_bytes());
    header.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    header.extend_from_slice(&hash64(&entries).to_le_bytes());
    header.extend_from_slice(&folds_len.to_le_bytes());
    let file_len = (header.len() + entries.len()) as u64 + folds_len;

    // Written in its parts: gathered into one buffer, the cache of 100,000 sessions held
    // another 120 MB at the peak of a cold listing (measured with heaptrack, issue 30).
    let mut parts: Vec<&[u8]> = Vec::with_capacity(2 + folds.len());
    parts.push(&header);
    parts.push(&entries);
    parts.extend(folds.iter().map(|fold| fold.0));
    write_atomically_parts(path, &parts)?;
    drop(parts);
    // The journal extended the file just replaced; one written meanwhile by another process
    // against this file would be refused by its header anyway.
    let _ = fs::remove_file(journal_file(path));
    for entry in &mut index.entries {
        entry.saved = true;
    }
    index.drops.clear();
    index.base = Some(Base {
        sum: hash64(&entries),
        len: file_len,
        journal_len: 0,
        rewrite: false,
    });
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
}
