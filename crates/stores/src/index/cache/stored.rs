//! The entries loaded from the cache: kept as the bytes they were read as, each decoded when it
//! is looked at and copied out only into what needs it (see the parent module's notes) — or,
//! in a long-lived process, left in the cache file ([`Stored::spill`]).
//!
//! A daemon holds every session already, in the generations it lends to requests
//! ([`crate::live`]): the entries' bytes in memory were a second copy of every id, working
//! directory, title and path (about 360 bytes a session). Spilled, an entry is what a warm
//! walk compares — its kind, where it is in the file, and a hash of its path and of its stamp
//! — about 50 bytes; what else it holds is read back from the cache file, kept open, when a
//! walk needs it: one entry when its file changed, every session of the agents walked (in
//! windows of [`SPILL_WINDOW`]) when a walk builds its listing, the whole section when the
//! cache is written again.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::Refused;
use super::entry::{EntryView, PATH_AT, decode_entry};
use super::files::read_at;
use crate::index::discover::MIN_RUN;
use crate::index::{FastMap, FoldKind, hash64};
use crate::model::{Agent, Session};
use crate::roots::SourceFile;
use crate::walk::{Reader, name_bytes, os_str};

/// How much of a spilled entries section a walk reads at a time to build its sessions: the
/// listing is never held twice, as bytes and as sessions.
const SPILL_WINDOW: usize = 1 << 20;

/// The entries loaded from the cache (see the module notes).
pub(crate) struct Stored {
    /// The entries section as read; empty once spilled.
    bytes: Vec<u8>,
    /// Once spilled: the file the section is in, and what each entry's stamp hashes to.
    spilled: Option<Spilled>,
    /// Where each entry starts and ends in the section, and its kind.
    recs: Vec<Rec>,
    /// Entries by a hash of their path (the first of two with one hash; the other is simply
    /// read again).
    by_path: FastMap<u64, u32>,
    state: Vec<RecState>,
    /// Set when a spilled entry did not read back as it was loaded (the file changed in place
    /// under us, or the disk failed): the sessions read from it cannot be trusted, and the
    /// scanner lists again from the stores ([`Stored::is_damaged`]).
    damaged: std::sync::atomic::AtomicBool,
}

/// The entries section left in the cache file.
struct Spilled {
    /// The cache file the index was loaded from, kept open: a cache written meanwhile by
    /// another process replaces the name, not this file.
    file: File,
    /// Where the section starts in it.
    at: u64,
    /// Each entry's [`stamp_key`], by entry.
    stamps: Vec<u64>,
}

#[derive(Debug, Clone, Copy)]
struct Rec {
    start: usize,
    len: u32,
    kind: FoldKind,
}

impl Rec {
    fn end(&self) -> usize {
        self.start + self.len as usize
    }
}

/// Where a stored entry stands.
#[derive(Debug)]
pub(crate) enum RecState {
    /// In the index. The path the walk found it at is not kept: the entry holds it, and a
    /// daemon's index would hold every path twice (about 150 bytes a session).
    Live,
    /// During a refresh: of an agent being refreshed, its file not found yet.
    Unclaimed,
    /// Out of the index (its file changed and was read into an [`Entry`](crate::index::Entry), or is gone).
    Dead,
}

impl fmt::Debug for Stored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stored")
            .field("entries", &self.recs.len())
            .field("live", &self.live().count())
            .field("spilled", &self.spilled.is_some())
            .finish_non_exhaustive()
    }
}

/// What an unchanged file's entry agrees with: its kind, its file's size and mtime, and its
/// side file's path and stamp, in one hash (what a spilled entry keeps of them).
fn stamp_key(
    kind: FoldKind,
    size: u64,
    mtime_ns: Option<i64>,
    sidecar: Option<(&[u8], u64, Option<i64>)>,
) -> u64 {
    let mut key = Vec::with_capacity(64);
    key.push(kind as u8);
    key.extend_from_slice(&size.to_le_bytes());
    key.extend_from_slice(&mtime_ns.map_or([0xff; 9], |t| {
        let mut b = [0; 9];
        b[1..].copy_from_slice(&t.to_le_bytes());
        b
    }));
    if let Some((path, size, mtime_ns)) = sidecar {
        key.extend_from_slice(&size.to_le_bytes());
        key.extend_from_slice(&mtime_ns.unwrap_or(i64::MIN).to_le_bytes());
        key.push(u8::from(mtime_ns.is_some()));
        key.extend_from_slice(path);
    }
    hash64(&key)
}

impl Stored {
    /// Steps over every entry of the section `bytes` (`count` of them), checking that each
    /// decodes, and indexes them by path.
    pub(super) fn new(bytes: Vec<u8>, count: usize) -> Result<Stored, Refused> {
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
            let len = rest.len() - tail.len();
            recs.push(Rec {
                kind: view.kind,
                start,
                len: u32::try_from(len).map_err(|_| bad())?,
            });
            rest = tail;
        }
        if !rest.is_empty() {
            return Err(Refused::Corrupt(
                "session cache has trailing bytes".to_owned(),
            ));
        }
        let state = (0..recs.len()).map(|_| RecState::Live).collect();
        Ok(Stored {
            bytes,
            spilled: None,
            recs,
            by_path,
            state,
            damaged: Default::default(),
        })
    }

    /// The bytes it holds: the entries as read (none once spilled), and the tables over them.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.recs.capacity() * std::mem::size_of::<Rec>()
            + self.by_path.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
            + self.state.capacity() * std::mem::size_of::<RecState>()
            + self
                .spilled
                .as_ref()
                .map_or(0, |spilled| spilled.stamps.capacity() * 8)
    }

    /// How long the entries section is (in memory or not).
    pub(super) fn section_len(&self) -> usize {
        self.recs.last().map_or(0, Rec::end)
    }

    /// Leaves the entries in `file`, where the section starts at `at` (the file they were
    /// loaded from): only what a warm walk compares stays in memory.
    pub(crate) fn spill(&mut self, file: File, at: u64) {
        if self.spilled.is_some() {
            return;
        }
        let stamps = (0..self.recs.len())
            .map(|i| self.view(i).map_or(0, |view| view_stamp_key(&view)))
            .collect();
        self.spilled = Some(Spilled { file, at, stamps });
        self.bytes = Vec::new();
    }

    /// Reads a spilled section back into memory (to write the cache again from it).
    pub(super) fn unspill(&mut self) -> std::io::Result<()> {
        let Some(spilled) = &self.spilled else {
            return Ok(());
        };
        let mut bytes = vec![0u8; self.section_len()];
        read_at(&spilled.file, spilled.at, &mut bytes)?;
        // Written into a new cache under a fresh checksum: bytes that changed under us would
        // be made to look sound, so each entry must be the one loaded.
        if let Some(i) = (0..self.recs.len()).find(|&i| !self.reads_back(&bytes, 0, i)) {
            self.damaged
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("entry {i} of the session cache changed on disk since it was loaded"),
            ));
        }
        self.bytes = bytes;
        self.spilled = None;
        Ok(())
    }

    /// The bytes of entry `i`: borrowed, or read from the file once spilled.
    fn entry_bytes(&self, i: usize) -> Option<Cow<'_, [u8]>> {
        let rec = self.recs.get(i)?;
        match &self.spilled {
            None => self.bytes.get(rec.start..rec.end()).map(Cow::Borrowed),
            Some(spilled) => {
                let mut bytes = vec![0u8; rec.len as usize];
                if let Err(error) =
                    read_at(&spilled.file, spilled.at + rec.start as u64, &mut bytes)
                {
                    self.spill_failed(&error);
                    return None;
                }
                self.reads_back(&bytes, rec.start, i)
                    .then_some(Cow::Owned(bytes))
            }
        }
    }

    /// Entry `i`, decoded (in memory: see [`Stored::with_view`] for a spilled one).
    pub(super) fn view(&self, i: usize) -> Option<EntryView<'_>> {
        let rec = self.recs.get(i)?;
        let bytes = self.bytes.get(rec.start..rec.end())?;
        decode_entry(bytes).map(|(view, _)| view)
    }

    /// `f` of entry `i`, decoded, wherever it is.
    pub(crate) fn with_view<R>(&self, i: usize, f: impl FnOnce(EntryView<'_>) -> R) -> Option<R> {
        let bytes = self.entry_bytes(i)?;
        decode_entry(&bytes).map(|(view, _)| f(view))
    }

    /// Whether entry `i` is the file `source` describes, read by `kind`, unchanged.
    pub(crate) fn unchanged(&self, i: usize, kind: FoldKind, source: &SourceFile) -> bool {
        match &self.spilled {
            None => self
                .view(i)
                .is_some_and(|view| view.unchanged(kind, source)),
            Some(spilled) => {
                let sidecar = match &source.sidecar {
                    Some(now) => match name_bytes(now.path.as_os_str()) {
                        Some(path) => Some((path, now.stamp.size, now.stamp.mtime_ns)),
                        None => return false,
                    },
                    None => None,
                };
                let now = stamp_key(kind, source.stamp.size, source.stamp.mtime_ns, sidecar);
                spilled.stamps.get(i) == Some(&now)
            }
        }
    }

    /// The sessions of `agents` of entries `live` (in the section's order), decoded on every
    /// core: from the bytes in memory, or read from the file a window at a time once spilled.
    pub(crate) fn sessions_into(
        &self,
        live: &[usize],
        agents: &[Agent],
        sessions: &mut Vec<Session>,
    ) {
        let decode = |bytes: &[u8], base: usize, i: usize| -> Option<Session> {
            if self.spilled.is_some() && !self.reads_back(bytes, base, i) {
                return None;
            }
            let rec = self.recs.get(i)?;
            let at = rec.start.checked_sub(base)?;
            let (view, _) = decode_entry(bytes.get(at..at + rec.len as usize)?)?;
            view.session(None)
                .filter(|session| agents.contains(&session.agent))
        };
        let Some(spilled) = &self.spilled else {
            sessions.par_extend(
                live.par_iter()
                    .with_min_len(MIN_RUN)
                    .filter_map(|&i| decode(&self.bytes, 0, i)),
            );
            return;
        };
        let end = |i: usize| self.recs.get(i).map_or(0, Rec::end);
        let mut window = Vec::new();
        let mut rest = live;
        while let Some(&first) = rest.first() {
            let base = self.recs.get(first).map_or(0, |rec| rec.start);
            let n = rest
                .iter()
                .take_while(|&&i| end(i).saturating_sub(base) <= SPILL_WINDOW)
                .count()
                .max(1);
            let (run, tail) = rest.split_at(n);
            rest = tail;
            let last = run.last().map_or(base, |&i| end(i));
            window.resize(last.saturating_sub(base), 0);
            if let Err(error) = read_at(&spilled.file, spilled.at + base as u64, &mut window) {
                self.spill_failed(&error);
                continue;
            }
            sessions.par_extend(
                run.par_iter()
                    .with_min_len(MIN_RUN)
                    .filter_map(|&i| decode(&window, base, i)),
            );
        }
    }

    /// The entries in the index.
    pub(crate) fn live(&self) -> impl Iterator<Item = usize> + '_ {
        self.state
            .iter()
            .enumerate()
            .filter(|(_, state)| matches!(state, RecState::Live))
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

    /// The entries in the index, of `agents`, taken out of the index.
    pub(crate) fn take_live<'s>(
        &'s mut self,
        agents: &'s [Agent],
    ) -> impl Iterator<Item = usize> + 's {
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
                    RecState::Live => Some(i),
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

    /// Starts a refresh of `agents`: their entries wait to be claimed by the files found.
    pub(crate) fn begin_refresh(&mut self, agents: &[Agent]) {
        for (rec, state) in self.recs.iter().zip(&mut self.state) {
            if agents.contains(&rec.kind.agent()) && matches!(state, RecState::Live) {
                *state = RecState::Unclaimed;
            }
        }
    }

    /// The entry of the file at `path`, whatever its state. Once spilled, by its path's hash
    /// alone (64 bits: two paths of one store that share it, and a stamp besides, are not a
    /// case to read the file for); a changed file's entry is checked against its path when it
    /// is read back ([`Stored::with_view`]).
    pub(crate) fn find(&self, path: &Path) -> Option<usize> {
        let bytes = name_bytes(path.as_os_str())?;
        let i = *self.by_path.get(&hash64(bytes))? as usize;
        let rec = self.recs.get(i)?;
        if self.spilled.is_some() {
            return Some(i);
        }
        // The path follows the fixed-width fields (see `encode_entry`): compared without
        // decoding the rest.
        let stored = Reader(self.bytes.get(rec.start + PATH_AT..rec.end())?).bytes();
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
                dropped.extend(self.with_view(i, |view| PathBuf::from(os_str(view.path))));
            }
        }
        dropped
    }
}

/// What a warm walk compares an entry's file by: its fold, stamp and side file's.
fn view_stamp_key(view: &EntryView<'_>) -> u64 {
    stamp_key(
        view.kind,
        view.size,
        view.mtime_ns,
        view.sidecar
            .map(|seen| (seen.path, seen.size, seen.mtime_ns)),
    )
}

impl Stored {
    /// Whether entry `i`, in `bytes` (read from the section at `base`), is the entry loaded:
    /// it decodes, to the stamp kept for it and a path the index knows. Not so, the cache file
    /// changed in place under us (our own writes replace it by renaming): it is flagged damaged.
    fn reads_back(&self, bytes: &[u8], base: usize, i: usize) -> bool {
        let sound = (|| {
            let rec = self.recs.get(i)?;
            let at = rec.start.checked_sub(base)?;
            let (view, _) = decode_entry(bytes.get(at..at + rec.len as usize)?)?;
            let kept = self.spilled.as_ref()?.stamps.get(i)?;
            Some(view_stamp_key(&view) == *kept && self.by_path.contains_key(&hash64(view.path)))
        })()
        .unwrap_or(false);
        if !sound {
            self.damaged
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        sound
    }

    /// A spilled entry that cannot be read back: flagged, so the scanner lists again from the
    /// stores rather than leave its session out.
    fn spill_failed(&self, error: &std::io::Error) {
        tracing::warn!(%error, "cannot read the session cache's entries back");
        self.damaged
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether an entry left in the cache file did not read back as it was loaded.
    pub(crate) fn is_damaged(&self) -> bool {
        self.damaged.load(std::sync::atomic::Ordering::Relaxed)
    }
}
