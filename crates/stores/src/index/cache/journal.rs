//! The journal beside the cache file: what a save after a change appends (entries read since
//! the last save, their folds, the paths that went out), and its replay on load. See the parent
//! module's notes for when a save appends and when it rewrites the whole file.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::index::{FoldState, SessionIndex, hash64};
use crate::walk::{Reader, name_bytes, os_str};

use super::entry::{EntryView, decode_entry, encode_entry, put_bytes};
use super::{FORMAT_VERSION, HEADER_LEN, Header, RecState, fingerprint};

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
pub(super) const JOURNAL_MIN_LIMIT: u64 = 1 << 20;

/// The cache file an index stands on, named by its entries' checksum and its length, and how
/// much of its journal the index has seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Base {
    pub(super) sum: u64,
    pub(super) len: u64,
    /// Bytes of the journal read or written (0: no journal).
    pub(super) journal_len: u64,
    /// The journal cannot be appended to: it ended in a record that does not check out (a
    /// write cut short), or it belongs to another base. The next save writes the whole cache.
    pub(super) rewrite: bool,
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
pub(super) fn journal_record(index: &SessionIndex) -> Vec<u8> {
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
pub(super) fn append_journal(
    cache: &Path,
    path: &Path,
    base: &Base,
    record: &[u8],
) -> std::io::Result<u64> {
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
pub(super) fn replay_journal(path: &Path, index: &mut SessionIndex) {
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
