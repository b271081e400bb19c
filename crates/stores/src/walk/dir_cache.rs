//! The folder cache: each folder's listing remembered with the folder's identity between walks
//! (see the parent module for why reusing one is sound), kept in its file rather than on the
//! heap.
//!
//! A daemon keeps the cache between walks. Held as listings — a path, a buffer of names and a
//! vector of entries per folder — it was every file name of the stores on the daemon's heap (6.2 MB
//! at 111,000 sessions, whose stores have 1,637 folders to list). Here a folder is a [`Slot`] of 32
//! bytes: a hash of its path, its rule, where its record is in the folder-cache file and a hash of
//! that record. The file is kept open (opened never through a link, as the session cache is), and
//! the walk's threads read a folder's record back with `pread` when they meet the folder: one read
//! from the page cache beside the folder's `open` and `stat`, which a warm walk makes anyway. What
//! is read back is checked — its hash is the record's loaded, it decodes, and it names this folder,
//! rule and stamp — so a file truncated or written into in place under us (our own writes replace
//! it by renaming) or a read that fails means the folder is listed again, never that its files are
//! missing.
//!
//! The listings a walk makes are held in memory (as the records they will be) only until they
//! are saved; then the cache reads them from the file just written, like the others.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};

use super::{DirStamp, Rule, name_bytes, os_str};
use crate::index::cache::{open_to_read, read_at};
use crate::index::hash64;

/// What a folder entry is, as its listing says (links are followed at each walk).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(super) enum Kind {
    File = 1,
    Dir = 2,
    Symlink = 3,
}

impl Kind {
    fn from_u8(n: u8) -> Option<Kind> {
        match n {
            1 => Some(Kind::File),
            2 => Some(Kind::Dir),
            3 => Some(Kind::Symlink),
            _ => None,
        }
    }
}

/// One folder's listing as its record holds it: the entries the walk's rules look at
/// (candidate files, folders and links), sorted, their names back to back, then each name's end
/// and kind (5 bytes an entry). Checked when decoded.
#[derive(Debug, Clone, Copy)]
pub(super) struct Listed<'a> {
    names: &'a [u8],
    ends: &'a [u8],
}

impl<'a> Listed<'a> {
    /// The listing in a whole record (as `list_dir` makes one).
    pub(super) fn of_record(record: &'a [u8]) -> Option<Listed<'a>> {
        decode_record(record).map(|(decoded, _)| decoded.listed)
    }

    /// How many entries it has.
    pub(super) fn len(&self) -> usize {
        self.ends.len() / ENTRY_LEN
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&'a OsStr, Kind)> + 'a {
        let names = self.names;
        let mut start = 0usize;
        self.ends.chunks_exact(ENTRY_LEN).filter_map(move |entry| {
            let mut r = Reader(entry);
            let end = r.u32()? as usize;
            let kind = Kind::from_u8(r.u8()?)?;
            let name = names.get(start..end)?;
            start = end;
            Some((os_str(name), kind))
        })
    }
}

/// An entry's end and kind in a record.
const ENTRY_LEN: usize = 5;

/// One folder's record, decoded: who it is and what it holds.
struct Record<'a> {
    path: &'a [u8],
    rule: Rule,
    stamp: DirStamp,
    listed: Listed<'a>,
}

/// Appends the start of a folder's record — its path, rule and stamp — to `out`: the listing
/// follows ([`ListingWriter`]). `None` when the path cannot be stored.
pub(super) fn record_head(
    dir: &Path,
    rule: Rule,
    stamp: &DirStamp,
    out: &mut Vec<u8>,
) -> Option<()> {
    let path = name_bytes(dir.as_os_str())?;
    out.extend_from_slice(&u32::try_from(path.len()).ok()?.to_le_bytes());
    out.extend_from_slice(path);
    out.push(rule as u8);
    out.extend_from_slice(&stamp.dev.to_le_bytes());
    out.extend_from_slice(&stamp.ino.to_le_bytes());
    out.extend_from_slice(&stamp.mtime_ns.to_le_bytes());
    out.extend_from_slice(&stamp.ctime_ns.to_le_bytes());
    Some(())
}

/// Writes a listing after a record's head: its names' total length, the names, then the count
/// and each name's end and kind. `None` when a length does not fit the record.
pub(super) fn write_listing<'n>(
    out: &mut Vec<u8>,
    entries: impl ExactSizeIterator<Item = (&'n [u8], Kind)> + Clone,
) -> Option<()> {
    let names_len: usize = entries.clone().map(|(name, _)| name.len()).sum();
    out.extend_from_slice(&u32::try_from(names_len).ok()?.to_le_bytes());
    for (name, _) in entries.clone() {
        out.extend_from_slice(name);
    }
    out.extend_from_slice(&u32::try_from(entries.len()).ok()?.to_le_bytes());
    let mut end = 0u32;
    for (name, kind) in entries {
        end += u32::try_from(name.len()).ok()?;
        out.extend_from_slice(&end.to_le_bytes());
        out.push(kind as u8);
    }
    Some(())
}

/// Decodes the record at the start of `bytes`, and says how long it is.
fn decode_record(bytes: &[u8]) -> Option<(Record<'_>, usize)> {
    let mut r = Reader(bytes);
    let path_len = r.u32()? as usize;
    let path = r.take(path_len)?;
    let rule = Rule::from_u8(r.u8()?)?;
    let stamp = DirStamp {
        dev: r.u64()?,
        ino: r.u64()?,
        mtime_ns: r.u64()? as i64,
        ctime_ns: r.u64()? as i64,
    };
    let names_len = r.u32()? as usize;
    let names = r.take(names_len)?;
    let n = r.u32()? as usize;
    let ends = r.take(n.checked_mul(ENTRY_LEN)?)?;
    let mut last = 0u32;
    for entry in ends.chunks_exact(ENTRY_LEN) {
        let mut e = Reader(entry);
        let end = e.u32()?;
        Kind::from_u8(e.u8()?)?;
        if end < last || end as usize > names.len() {
            return None;
        }
        last = end;
    }
    let record = Record {
        path,
        rule,
        stamp,
        listed: Listed { names, ends },
    };
    Some((record, bytes.len() - r.0.len()))
}

/// Where one remembered folder's record is, and what it must read back as.
#[derive(Debug, Clone, Copy)]
struct Slot {
    path_hash: u64,
    /// `hash64` of the record's bytes.
    sum: u64,
    /// Where the record starts: in the file, or in [`DirCache::unsaved`].
    at: u64,
    len: u32,
    rule: Rule,
    in_file: bool,
}

/// Folder listings remembered between walks (see the parent module for why reusing them is
/// sound, and this one for where they are kept). Persisted beside the session index by
/// [`crate::scan`].
#[derive(Debug, Default)]
pub struct DirCache {
    /// By path hash; one folder a hash (of two paths with one hash, the second is simply listed
    /// every time).
    slots: Vec<Slot>,
    /// The folder-cache file the slots `in_file` are in, kept open: a cache written meanwhile
    /// by another process replaces the name, not this file.
    file: Option<File>,
    /// Records not in the file: made by a walk and not saved yet.
    unsaved: Vec<u8>,
    /// Differs from what was loaded or last saved.
    changed: bool,
}

impl DirCache {
    /// How many folders are remembered.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether the cache changed since it was loaded or saved.
    pub fn is_changed(&self) -> bool {
        self.changed
    }

    /// The bytes it holds: a slot a folder (32 bytes), and the records of listings not saved
    /// yet — the listings themselves stay in the file.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>() + self.unsaved.capacity()
    }

    /// `f` over the remembered listing of `dir` under `rule`, if its stamp is still `stamp` and
    /// its record reads back as it was remembered; with the index of its slot.
    pub(super) fn with_listing<R>(
        &self,
        dir: &Path,
        rule: Rule,
        stamp: &DirStamp,
        f: impl FnOnce(Listed<'_>) -> R,
    ) -> Option<(usize, R)> {
        let path = name_bytes(dir.as_os_str())?;
        let i = self.find(hash64(path))?;
        let slot = self.slots.get(i)?;
        if slot.rule != rule {
            return None;
        }
        let bytes = self.record(slot)?;
        let (record, len) = decode_record(&bytes)?;
        (len == bytes.len() && record.path == path && record.rule == rule && record.stamp == *stamp)
            .then(|| (i, f(record.listed)))
    }

    fn find(&self, path_hash: u64) -> Option<usize> {
        self.slots
            .binary_search_by_key(&path_hash, |slot| slot.path_hash)
            .ok()
    }

    /// A slot's record, if it reads back as it was remembered.
    fn record(&self, slot: &Slot) -> Option<Cow<'_, [u8]>> {
        let bytes = if slot.in_file {
            let mut bytes = vec![0u8; slot.len as usize];
            read_at(self.file.as_ref()?, slot.at, &mut bytes).ok()?;
            Cow::Owned(bytes)
        } else {
            let at = usize::try_from(slot.at).ok()?;
            Cow::Borrowed(self.unsaved.get(at..at.checked_add(slot.len as usize)?)?)
        };
        (hash64(&bytes) == slot.sum).then_some(bytes)
    }

    /// The cache after a walk of the rules `walked`: the folders it reused (by slot) kept, the
    /// settled listings it made (`fresh`, records) added, and the folders of rules not walked
    /// kept as they were.
    pub(super) fn after_walk(
        self,
        walked: &[Rule],
        reused: Vec<usize>,
        fresh: Vec<Vec<u8>>,
    ) -> DirCache {
        let old_walked = self
            .slots
            .iter()
            .filter(|slot| walked.contains(&slot.rule))
            .count();
        let changed = self.changed || !fresh.is_empty() || reused.len() != old_walked;
        let mut keep = vec![false; self.slots.len()];
        for i in reused {
            if let Some(k) = keep.get_mut(i) {
                *k = true;
            }
        }
        let mut slots = Vec::with_capacity(keep.len() + fresh.len());
        let mut unsaved = Vec::new();
        for (slot, reused) in self.slots.iter().zip(keep) {
            if !reused && walked.contains(&slot.rule) {
                continue;
            }
            if slot.in_file {
                slots.push(*slot);
            } else if let Some(bytes) = self.record(slot) {
                slots.extend(unsaved_slot(&mut unsaved, &bytes));
            }
        }
        for record in fresh {
            slots.extend(unsaved_slot(&mut unsaved, &record));
        }
        DirCache {
            slots: by_path(slots),
            file: self.file,
            unsaved,
            changed,
        }
    }
}

/// Appends `record` to `unsaved`, and says where it is.
fn unsaved_slot(unsaved: &mut Vec<u8>, record: &[u8]) -> Option<Slot> {
    let (decoded, len) = decode_record(record)?;
    let slot = Slot {
        path_hash: hash64(decoded.path),
        sum: hash64(record.get(..len)?),
        at: unsaved.len() as u64,
        len: u32::try_from(len).ok()?,
        rule: decoded.rule,
        in_file: false,
    };
    unsaved.extend_from_slice(record.get(..len)?);
    Some(slot)
}

/// `slots` sorted by path hash, the first of two with one hash kept.
fn by_path(mut slots: Vec<Slot>) -> Vec<Slot> {
    slots.sort_by_key(|slot| slot.path_hash);
    slots.dedup_by_key(|slot| slot.path_hash);
    slots.shrink_to_fit();
    slots
}

/// The file a [`DirCache`] is kept in: beside the session cache, `<name>-dirs.<ext>`.
pub fn dir_cache_file(index_cache: &Path) -> PathBuf {
    crate::index::cache::file_beside(index_cache, "dirs")
}

const DIRS_MAGIC: &[u8; 8] = b"XAGDIRS\x01";
/// Bump when the layout changes. 2: the body's checksum is XXH3.
const DIRS_VERSION: u32 = 2;
/// Magic, version, folder count, body length, body checksum.
const DIRS_HEADER_LEN: usize = 8 + 4 + 8 + 8 + 8;

impl DirCache {
    /// Reads the cache at `path`, and keeps the file open to read its listings back from.
    /// Missing, from another version or damaged: an empty cache, silently — it only saves
    /// system calls, and the walk rebuilds it.
    pub fn load(path: &Path) -> DirCache {
        let Ok(mut file) = open_to_read(path) else {
            return DirCache::default();
        };
        let mut bytes = Vec::new();
        if std::io::Read::read_to_end(&mut file, &mut bytes).is_err() {
            return DirCache::default();
        }
        match slots_of(&bytes) {
            Some(slots) => DirCache {
                slots: by_path(slots),
                file: Some(file),
                unsaved: Vec::new(),
                changed: false,
            },
            None => DirCache::default(),
        }
    }

    /// Writes the cache to `path` atomically (owner-only, as the session cache), marks it
    /// saved, and from then on reads its listings from that file. A remembered record that no
    /// longer reads back is left out (its folder is listed again).
    pub fn save(&mut self, path: &Path) -> crate::Result<()> {
        // The records in the file, read at once rather than one `pread` each.
        let file_end = self
            .slots
            .iter()
            .filter(|slot| slot.in_file)
            .map(|slot| slot.at + u64::from(slot.len))
            .max()
            .unwrap_or(0);
        let in_file = self.file.as_ref().and_then(|file| {
            let mut bytes = vec![0u8; usize::try_from(file_end).ok()?];
            read_at(file, 0, &mut bytes).ok().map(|()| bytes)
        });
        let mut body = Vec::with_capacity(
            self.slots
                .iter()
                .map(|slot| slot.len as usize)
                .sum::<usize>(),
        );
        let mut slots = Vec::with_capacity(self.slots.len());
        for slot in &self.slots {
            let (from, at) = if slot.in_file {
                (in_file.as_deref(), slot.at)
            } else {
                (Some(self.unsaved.as_slice()), slot.at)
            };
            let record = from.and_then(|bytes| {
                let at = usize::try_from(at).ok()?;
                bytes.get(at..at.checked_add(slot.len as usize)?)
            });
            let Some(record) = record.filter(|record| hash64(record) == slot.sum) else {
                continue;
            };
            slots.push(Slot {
                at: (DIRS_HEADER_LEN + body.len()) as u64,
                in_file: true,
                ..*slot
            });
            body.extend_from_slice(record);
        }
        drop(in_file);
        let mut header = Vec::with_capacity(DIRS_HEADER_LEN);
        header.extend_from_slice(DIRS_MAGIC);
        header.extend_from_slice(&DIRS_VERSION.to_le_bytes());
        header.extend_from_slice(&(slots.len() as u64).to_le_bytes());
        header.extend_from_slice(&(body.len() as u64).to_le_bytes());
        header.extend_from_slice(&hash64(&body).to_le_bytes());
        crate::index::cache::write_atomically_parts(path, &[&header, &body])?;
        self.changed = false;
        match open_to_read(path) {
            Ok(file) => {
                // Another process's cache written there since is no worry: its records do not
                // read back as these, and those folders are listed again.
                self.file = Some(file);
                self.slots = slots;
                self.unsaved = Vec::new();
            }
            // Not to be opened again: the records stay in memory.
            Err(_) => {
                for slot in &mut slots {
                    slot.at -= DIRS_HEADER_LEN as u64;
                    slot.in_file = false;
                }
                self.file = None;
                self.slots = slots;
                self.unsaved = body;
            }
        }
        Ok(())
    }
}

/// The slots of a folder-cache file's records, if it is whole and of this version.
fn slots_of(bytes: &[u8]) -> Option<Vec<Slot>> {
    let mut header = Reader(bytes.get(..DIRS_HEADER_LEN)?);
    if header.take(8)? != DIRS_MAGIC || header.u32()? != DIRS_VERSION {
        return None;
    }
    let count = usize::try_from(header.u64()?).ok()?;
    let body_len = usize::try_from(header.u64()?).ok()?;
    let sum = header.u64()?;
    let body = bytes.get(DIRS_HEADER_LEN..)?;
    if body.len() != body_len || hash64(body) != sum {
        return None;
    }
    let mut slots = Vec::with_capacity(count.min(body.len() / 40));
    let mut at = 0usize;
    for _ in 0..count {
        let rest = body.get(at..)?;
        let (record, len) = decode_record(rest)?;
        slots.push(Slot {
            path_hash: hash64(record.path),
            sum: hash64(rest.get(..len)?),
            at: (DIRS_HEADER_LEN + at) as u64,
            len: u32::try_from(len).ok()?,
            rule: record.rule,
            in_file: true,
        });
        at += len;
    }
    (at == body.len()).then_some(slots)
}

/// Little-endian fields off the front of a byte slice.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.take(4)?.try_into().ok().map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.take(8)?.try_into().ok().map(u64::from_le_bytes)
    }
}
