//! Finding the files the index folds and matching them to what it knew: the agents' transcripts
//! and Codex's names file, found by one walk of the stores (reusing the folder listings), and the
//! previous entries by path, taken out one by one as the walk finds their files.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::path::Path;

use super::hashing::{FastMap, hash64};
use super::{Entry, FoldKind};
use crate::codex::session_index_path;
use crate::model::{Agent, Warnings};
use crate::roots::{FileStamp, SourceFile, StoreRoots};
use crate::walk::{DirCache, WalkRoot, WalkStats};

/// How many files are read at once when many are (a cold listing): sized for the storage, not
/// for the cores. A file read from a cold page cache is mostly waiting on the device, and an SSD
/// (or a virtual disk) answers many requests at once only if it is given them: one reader per
/// core leaves it idle most of the time. Each reader holds one 256 KiB buffer, so the pool adds
/// 4 MiB at most.
pub const IO_READERS: usize = 16;

/// The fewest files for which the readers are [`IO_READERS`] rather than one per core: below it
/// the pool's threads would cost more than they save.
pub(super) const IO_POOL_MIN_FILES: usize = 64;

/// The threads for `files` reads (or folder visits) when the caller asked for `threads`.
pub(crate) fn io_threads(threads: usize, files: usize) -> usize {
    if files >= IO_POOL_MIN_FILES {
        threads.max(IO_READERS)
    } else {
        threads
    }
}

/// The fewest items a parallel run over sessions or sources takes. Copying sessions out of the
/// cache (three strings each) and matching files to entries are most of what is left of a warm
/// listing once the files are `stat`ed, so they are split over the cores — but only in runs
/// long enough to be worth handing to another thread.
pub(super) const MIN_RUN: usize = 4096;

/// The previous entries by path, taken out one by one as discovery finds their files.
///
/// Keyed by a hash of the path's bytes rather than by `PathBuf`: `Path`'s own `Hash` walks
/// components and is several times slower, and the warm listing does this for every file. Two
/// paths with the same hash are told apart by comparing them; the loser is simply read again.
pub(super) struct PathTable {
    pub(super) slots: Vec<Option<Entry>>,
    pub(super) by_hash: FastMap<u64, usize>,
}

impl PathTable {
    pub(super) fn new(entries: Vec<Entry>) -> PathTable {
        let mut by_hash =
            HashMap::with_capacity_and_hasher(entries.len(), BuildHasherDefault::default());
        for (i, entry) in entries.iter().enumerate() {
            by_hash.insert(path_hash(&entry.path), i);
        }
        PathTable {
            slots: entries.into_iter().map(Some).collect(),
            by_hash,
        }
    }

    pub(super) fn take(&mut self, path: &Path) -> Option<Entry> {
        let i = *self.by_hash.get(&path_hash(path))?;
        let slot = self.slots.get_mut(i)?;
        // Compare bytes: `Path`'s own equality walks components, several times slower.
        if slot
            .as_ref()
            .is_some_and(|entry| entry.path.as_os_str() == path.as_os_str())
        {
            slot.take()
        } else {
            None
        }
    }

    pub(super) fn into_remaining(self) -> impl Iterator<Item = Entry> {
        self.slots.into_iter().flatten()
    }
}

pub(super) fn path_hash(path: &Path) -> u64 {
    hash64(path.as_os_str().as_encoded_bytes())
}

/// Every file the index folds: the agents' transcripts and Codex's names file, found by one
/// walk of the agents' stores reusing the folder listings in `dirs`. Returns the listings to
/// keep for next time and what the walk did.
pub(crate) fn discover_sources(
    roots: &StoreRoots,
    threads: usize,
    agents: &[Agent],
    dirs: DirCache,
    warnings: &mut Warnings,
) -> (Vec<(FoldKind, SourceFile)>, DirCache, WalkStats) {
    let (mut sources, dirs, stats) = discover_cached(roots, threads, agents, dirs, warnings);
    if agents.contains(&Agent::Codex)
        && let Some(names) = codex_names_source(roots)
    {
        sources.push((FoldKind::CodexNames, names));
    }
    (sources, dirs, stats)
}

/// `session_index.jsonl` as a source the index folds like a transcript, when it exists.
pub(super) fn codex_names_source(roots: &StoreRoots) -> Option<SourceFile> {
    let path = session_index_path(roots.codex_home.as_deref()?);
    let stamp = FileStamp::read(&path)?;
    Some(SourceFile {
        agent: Agent::Codex,
        path,
        stamp,
        compressed: false,
        sidecar: None,
        scope_cwd: None,
    })
}

/// Every candidate transcript of `agents`, their stores walked together on `threads` threads
/// (the walk is mostly `stat` calls; see [`crate::walk`]).
pub fn discover_all(
    roots: &StoreRoots,
    threads: usize,
    agents: &[Agent],
    warnings: &mut Warnings,
) -> Vec<SourceFile> {
    discover_cached(roots, threads, agents, DirCache::default(), warnings)
        .0
        .into_iter()
        .map(|(_, source)| source)
        .collect()
}

pub(super) fn discover_cached(
    roots: &StoreRoots,
    threads: usize,
    agents: &[Agent],
    dirs: DirCache,
    warnings: &mut Warnings,
) -> (Vec<(FoldKind, SourceFile)>, DirCache, WalkStats) {
    let mut walk_roots: Vec<(Agent, WalkRoot)> = Vec::new();
    for agent in agents {
        match agent {
            Agent::Claude => {
                walk_roots.extend(crate::claude::walk_root(roots).map(|r| (*agent, r)))
            }
            Agent::Codex => walk_roots.extend(
                crate::codex::walk_roots(roots)
                    .into_iter()
                    .map(|r| (*agent, r)),
            ),
            Agent::Grok => walk_roots.extend(crate::grok::walk_root(roots).map(|r| (*agent, r))),
            // Nothing to walk: the catalog is read by `crate::copilot` at each listing.
            Agent::Copilot => {}
        }
    }
    let just_roots: Vec<WalkRoot> = walk_roots.iter().map(|(_, r)| r.clone()).collect();
    // With no folder listings remembered the walk lists every folder, likely from a cold cache:
    // it waits on the device as the reads do, and gets as many threads.
    let threads = if dirs.is_empty() {
        io_threads(threads, usize::MAX)
    } else {
        threads
    };
    let (found, dirs, stats) = crate::walk::walk(&just_roots, threads, dirs, warnings);
    // One vector of the exact size, filled once: 24,000 sources are 3 MB, and every fresh
    // page of memory costs a fault (slow in a virtual machine). One more slot for Codex's names
    // file.
    let mut sources = Vec::with_capacity(
        found
            .iter()
            .map(|f| f.files.iter().map(Vec::len).sum::<usize>() + f.probed.len())
            .sum::<usize>()
            + 1,
    );
    for ((agent, _), found) in walk_roots.into_iter().zip(found) {
        let Some(kind) = FoldKind::of(agent) else {
            continue;
        };
        match agent {
            Agent::Claude => sources.extend(crate::claude::sources(found).map(|s| (kind, s))),
            Agent::Codex => sources.extend(crate::codex::sources(found).map(|s| (kind, s))),
            Agent::Grok => sources.extend(
                crate::grok::sources(found, warnings)
                    .into_iter()
                    .map(|s| (kind, s)),
            ),
            Agent::Copilot => {}
        }
    }
    (sources, dirs, stats)
}
