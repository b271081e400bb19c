//! The store walk every discovery uses: every agent's folders listed level by level on a few
//! threads, every candidate file `stat`ed, and folder listings remembered between walks.
//!
//! A warm listing is bounded by system calls, not by parsing: one `stat` per transcript is
//! unavoidable (a file that is appended to changes neither its folder nor anything else a
//! cheaper call could see), but listing every folder again is not. A folder's entries change
//! only when an entry is created, removed or renamed in it, and each of those sets the folder's
//! mtime (and ctime). So a [`DirCache`] keeps each folder's listing with the folder's identity
//! (device, inode, mtime, ctime), and a folder whose `stat` still shows that identity is not
//! listed again — its remembered candidates are `stat`ed as they would have been.
//!
//! Why that is sound:
//! - an entry added, removed or renamed sets the folder's mtime to the current time, so a
//!   remembered mtime differs from it — provided the remembered one was not itself "now". File
//!   systems stamp times from a coarse clock (one tick of up to 10 ms; a few seconds on FAT), so
//!   two changes in one tick carry the same mtime. A listing is therefore remembered only once
//!   its folder's mtime is [`SETTLE`] older than the moment the listing started (git's "racily
//!   clean" rule); a younger folder is listed again next time;
//! - a folder replaced by another (moved away, deleted and re-created) has another inode, and
//!   the remembered one is kept by the old folder while it exists; a changed mtime set back by
//!   hand still moves the ctime, which cannot be set;
//! - files are `stat`ed every time, so an append (which changes only the file) is always seen;
//!   symbolic links are followed every time, so a link pointed elsewhere is seen.
//!
//! The walk is breadth-first: each level's folders are opened, `stat`ed and listed (or
//! remembered) on the threads, and the thread that visits a folder also `stat`s the candidate
//! files in it, by name relative to the open folder (a path lookup of every leading component
//! for each of 24,000 files is what a warm listing would otherwise spend most on). Then the
//! level is checked in a fixed order for folders already visited (symlink loops, duplicate links
//! — the first in walk order wins, so the result does not depend on thread timing; a duplicate
//! is dropped with its entries). The result is in a fixed order too.
//!
//! The folder cache is kept off the heap, in its file, and read back as the walk meets each
//! folder ([`dir_cache`]). The walk is the warm listing's hot path (its figures are in
//! `cargo bench -p cross-agent-stores --bench sessions`): its per-thread visit, the folder
//! cache it reads and the fixed-order merge are tuned together.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, Metadata};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;

use crate::model::{StoreWarning, Warnings};
use crate::roots::FileStamp;

mod dir_cache;

pub(crate) use dir_cache::Reader;
pub use dir_cache::{DirCache, dir_cache_file};
use dir_cache::{Kind, Listed, record_head, write_listing};

/// How much older than the start of a listing a folder's mtime must be for the listing to be
/// remembered: comfortably more than any file system's timestamp granularity.
pub const SETTLE: Duration = Duration::from_secs(3);

/// Whose rules a root is walked by. A listing remembered for one set of rules keeps only what
/// those rules look at, so another walk of the same folder does not reuse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub(crate) enum Rule {
    Claude = 1,
    Codex = 2,
    Grok = 3,
}

impl Rule {
    fn from_u8(n: u8) -> Option<Rule> {
        match n {
            1 => Some(Rule::Claude),
            2 => Some(Rule::Codex),
            3 => Some(Rule::Grok),
            _ => None,
        }
    }
}

/// One folder tree to walk.
#[derive(Debug, Clone)]
pub(crate) struct WalkRoot {
    pub root: PathBuf,
    pub rule: Rule,
    /// Folder levels below the root to list (0: the root's own entries only).
    pub max_depth: usize,
    /// Files shallower than this are not candidates (1: none directly in the root).
    pub min_file_depth: usize,
    /// Which file names are candidates.
    pub keep: fn(&OsStr) -> bool,
    /// Names looked up with one `stat` each, without listing, in every folder found at
    /// `max_depth` (Grok's session folders hold exactly two files of known names).
    pub probes: &'static [&'static str],
}

/// What a walk found under one root, in walk order.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Candidate regular files (links followed) with their stamps, folder by folder (kept as
    /// the visits made them: one vector of 24,000 grown as folders come would be copied and
    /// faulted in again at every doubling).
    pub files: Vec<Vec<(PathBuf, FileStamp)>>,
    /// Folders at `max_depth`, with the stamp of each probe name (`None`: no such file).
    pub probed: Vec<(PathBuf, Vec<Option<FileStamp>>)>,
}

/// What a walk did, for the benchmark and the tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalkStats {
    /// Folders whose entries were read from disk.
    pub dirs_listed: usize,
    /// Folders whose remembered listing was still good.
    pub dirs_reused: usize,
    /// Files `stat`ed (candidates and probes).
    pub files_stated: usize,
}

/// A folder's identity: while its `stat` shows the same, its entries are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirStamp {
    dev: u64,
    ino: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl DirStamp {
    /// On Linux the walk takes the stamp from the folder it opens ([`OpenDir::open`]).
    #[cfg(unix)]
    #[cfg_attr(target_os = "linux", allow(dead_code))]
    fn of(meta: &Metadata) -> DirStamp {
        use std::os::unix::fs::MetadataExt;
        DirStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Without inode numbers and ctimes nothing proves a folder unchanged: never remembered.
    #[cfg(not(unix))]
    fn of(_meta: &Metadata) -> DirStamp {
        DirStamp {
            dev: 0,
            ino: 0,
            mtime_ns: i64::MAX,
            ctime_ns: i64::MAX,
        }
    }

    /// Whether a listing that started at `started` may be remembered with this stamp.
    fn settled(&self, started: SystemTime) -> bool {
        let Ok(since_epoch) = started.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let limit = since_epoch.saturating_sub(SETTLE).as_nanos();
        i128::from(self.mtime_ns) < limit as i128
    }
}

/// A name's bytes as stored. On Unix any name; elsewhere UTF-8 names only.
#[cfg(unix)]
pub(crate) fn name_bytes(name: &OsStr) -> Option<&[u8]> {
    use std::os::unix::ffi::OsStrExt;
    Some(name.as_bytes())
}

#[cfg(not(unix))]
pub(crate) fn name_bytes(name: &OsStr) -> Option<&[u8]> {
    name.to_str().map(str::as_bytes)
}

#[cfg(unix)]
pub(crate) fn os_str(bytes: &[u8]) -> &OsStr {
    use std::os::unix::ffi::OsStrExt;
    OsStr::from_bytes(bytes)
}

#[cfg(not(unix))]
pub(crate) fn os_str(bytes: &[u8]) -> &OsStr {
    std::str::from_utf8(bytes)
        .map(OsStr::new)
        .unwrap_or_default()
}

/// One folder as the walk saw it.
struct Visit {
    /// The folder's `stat` (links followed); `None` when it could not be read.
    stamp: Option<DirStamp>,
    listing: Listing,
    /// What its entries gave, when it was listed or remembered.
    entries: Option<Entries>,
    warnings: Vec<StoreWarning>,
}

/// What one folder's entries gave, in listing order: candidate files with their stamps,
/// folders to visit next, folders probed. The visiting thread `stat`s the files itself, relative
/// to the folder it has open, so no folder is looked up twice and no path is built on the
/// walk's own thread.
#[derive(Default)]
struct Entries {
    files: Vec<(PathBuf, FileStamp)>,
    subdirs: Vec<PathBuf>,
    probed: Vec<(PathBuf, Vec<Option<FileStamp>>)>,
    /// Files and probes `stat`ed.
    stated: usize,
    /// Files that could not be `stat`ed. Apart from the folder's own warnings: a folder found
    /// to be a duplicate is dropped with its entries, as if it had never been listed.
    warnings: Vec<StoreWarning>,
}

enum Listing {
    /// Not listed (unreadable, not a folder).
    None,
    /// The remembered listing at this index of the old cache.
    Reused(usize),
    /// Listed now, as its record; `remember` when it is settled and its names can be stored.
    Fresh { record: Vec<u8>, remember: bool },
}

/// A folder waiting to be visited.
struct Pending {
    dir: PathBuf,
    depth: usize,
    root: usize,
}

/// Walks `roots` on up to `threads` threads, reusing the listings in `cache`. Returns what was
/// found under each root (same order as `roots`), the cache to keep (these roots' folders as
/// they are now, other rules' folders as they were), and what the walk did.
pub(crate) fn walk(
    roots: &[WalkRoot],
    threads: usize,
    cache: DirCache,
    warnings: &mut Warnings,
) -> (Vec<Found>, DirCache, WalkStats) {
    crate::parallel::on_threads(threads, || walk_levels(roots, cache, warnings))
}

/// [`walk`] on the current rayon pool.
fn walk_levels(
    roots: &[WalkRoot],
    cache: DirCache,
    warnings: &mut Warnings,
) -> (Vec<Found>, DirCache, WalkStats) {
    let started = SystemTime::now();
    let mut stats = WalkStats::default();
    let mut found: Vec<Found> = roots.iter().map(|_| Found::default()).collect();
    let mut seen: HashSet<(usize, u64, u64)> = HashSet::new();
    let mut reused: Vec<usize> = Vec::new();
    let mut fresh: Vec<Vec<u8>> = Vec::new();

    let mut level: Vec<Pending> = roots
        .iter()
        .enumerate()
        .map(|(i, root)| Pending {
            dir: root.root.clone(),
            depth: 0,
            root: i,
        })
        .collect();
    while !level.is_empty() {
        // A few folders per task: visiting one is a handful of system calls, and folders differ
        // widely in how many files they hold.
        let visits: Vec<Visit> = level
            .par_iter()
            .with_max_len(4)
            .map(|pending| {
                let root = &roots[pending.root];
                visit(&pending.dir, pending.depth, root, &cache, started)
            })
            .collect();
        let mut next = Vec::new();
        for (pending, visit) in level.into_iter().zip(visits) {
            warnings.items.extend(visit.warnings);
            let Some(stamp) = visit.stamp else { continue };
            if !seen.insert((pending.root, stamp.dev, stamp.ino)) && cfg!(unix) {
                warnings.push(
                    &pending.dir,
                    None,
                    "folder already visited (symlink loop or duplicate link); skipped",
                );
                continue;
            }
            match &visit.listing {
                Listing::None => continue,
                Listing::Reused(i) => {
                    stats.dirs_reused += 1;
                    reused.push(*i);
                }
                Listing::Fresh { .. } => stats.dirs_listed += 1,
            }
            let Some(entries) = visit.entries else {
                continue;
            };
            stats.files_stated += entries.stated;
            warnings.items.extend(entries.warnings);
            let into = &mut found[pending.root];
            if !entries.files.is_empty() {
                into.files.push(entries.files);
            }
            into.probed.extend(entries.probed);
            next.extend(entries.subdirs.into_iter().map(|dir| Pending {
                dir,
                depth: pending.depth + 1,
                root: pending.root,
            }));
            if let Listing::Fresh {
                record,
                remember: true,
            } = visit.listing
            {
                fresh.push(record);
            }
        }
        level = next;
    }

    let walked: Vec<Rule> = roots.iter().map(|r| r.rule).collect();
    let cache = cache.after_walk(&walked, reused, fresh);
    (found, cache, stats)
}

/// `stat`s one folder and lists it, or takes its remembered listing; then `stat`s the
/// candidate files in it.
fn visit(
    dir: &Path,
    depth: usize,
    root: &WalkRoot,
    cache: &DirCache,
    started: SystemTime,
) -> Visit {
    let is_root = depth == 0;
    let mut warnings = Warnings::default();
    let mut out = Visit {
        stamp: None,
        listing: Listing::None,
        entries: None,
        warnings: Vec::new(),
    };
    let (handle, stamp) = match OpenDir::open(dir) {
        Ok(opened) => opened,
        Err(DirError::NotAFolder) => {
            if is_root {
                warnings.push(dir, None, "expected a folder, found a file");
            }
            out.warnings = warnings.items;
            return out;
        }
        // A missing root: that agent is not installed. A missing folder below it: gone since
        // its parent was listed.
        Err(DirError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(DirError::Io(e)) => {
            let what = if is_root {
                "cannot read folder"
            } else {
                "cannot stat"
            };
            warnings.push(dir, None, format!("{what}: {e}"));
            out.warnings = warnings.items;
            return out;
        }
    };
    out.stamp = Some(stamp);
    let remembered = cache.with_listing(dir, root.rule, &stamp, |listed| {
        entries(dir, depth, root, listed, &handle, &mut warnings)
    });
    if let Some((i, entries)) = remembered {
        out.listing = Listing::Reused(i);
        out.entries = Some(entries);
    } else if let Some((record, storable)) = list_dir(dir, root, &stamp, &mut warnings) {
        out.entries = Listed::of_record(&record)
            .map(|listed| entries(dir, depth, root, listed, &handle, &mut warnings));
        out.listing = Listing::Fresh {
            record,
            remember: storable && stamp.settled(started),
        };
    }
    out.warnings = warnings.items;
    out
}

/// Goes through a folder's entries as `root`'s rules say: links followed (every time: where a
/// link points is not part of its folder's stamp; a broken one is a warning in `warnings`),
/// candidate files and probes `stat`ed, folders to visit collected.
fn entries(
    dir: &Path,
    depth: usize,
    root: &WalkRoot,
    listed: Listed<'_>,
    handle: &OpenDir,
    warnings: &mut Warnings,
) -> Entries {
    let wants_files = depth >= root.min_file_depth;
    let mut out = Entries {
        files: Vec::with_capacity(if wants_files { listed.len() } else { 0 }),
        ..Entries::default()
    };
    let mut stat_warnings = Warnings::default();
    // Each path allocated once, at its size (`Path::join` copies the folder, then grows it).
    let join = |name: &OsStr| {
        let mut path = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
        path.push(dir);
        path.push(name);
        path
    };
    for (name, kind) in listed.iter() {
        let kind = match kind {
            Kind::Symlink => {
                let path = join(name);
                match fs::metadata(&path) {
                    Ok(meta) if meta.is_dir() => Kind::Dir,
                    Ok(meta) if meta.is_file() => {
                        if wants_files && (root.keep)(name) {
                            out.files.push((path, FileStamp::of(&meta)));
                        }
                        continue;
                    }
                    Ok(_) => continue,
                    Err(e) => {
                        warnings.push(&path, None, format!("broken or looping symlink: {e}"));
                        continue;
                    }
                }
            }
            other => other,
        };
        match kind {
            Kind::File => {
                if !(wants_files && (root.keep)(name)) {
                    continue;
                }
                out.stated += 1;
                let path = join(name);
                match handle.stat(name_bytes(name), &path, None, /*follow*/ false) {
                    Ok(stat) if stat.is_file => out.files.push((path, stat.stamp)),
                    Ok(_) => {}
                    // Gone since its folder was listed: as if it had not been there.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => stat_warnings.push(&path, None, format!("cannot stat: {e}")),
                }
            }
            Kind::Dir if depth < root.max_depth => out.subdirs.push(join(name)),
            Kind::Dir if !root.probes.is_empty() => {
                let path = join(name);
                let mut rel = name_bytes(name).map(<[u8]>::to_vec);
                let stamps = root
                    .probes
                    .iter()
                    .map(|probe| {
                        out.stated += 1;
                        let rel = rel.as_mut().map(|rel| {
                            rel.truncate(name.len());
                            rel.push(b'/');
                            rel.extend_from_slice(probe.as_bytes());
                            rel.as_slice()
                        });
                        // A probe that is not there: no such file, whatever the reason.
                        handle
                            .stat(rel, &path, Some(probe), /*follow*/ true)
                            .ok()
                            .map(|stat| stat.stamp)
                    })
                    .collect();
                out.probed.push((path, stamps));
            }
            Kind::Dir | Kind::Symlink => {}
        }
    }
    out.warnings = stat_warnings.items;
    out
}

/// Why a folder could not be opened.
enum DirError {
    /// It is something else than a folder.
    NotAFolder,
    Io(std::io::Error),
}

/// A folder open for `stat`s of its entries by name (Linux: an `O_PATH` descriptor, which
/// spares the kernel the lookup of every leading component of each path; elsewhere the paths).
struct OpenDir {
    #[cfg(target_os = "linux")]
    fd: rustix::fd::OwnedFd,
}

impl OpenDir {
    /// Opens `dir` (links followed) and `stat`s it.
    #[cfg(target_os = "linux")]
    fn open(dir: &Path) -> Result<(OpenDir, DirStamp), DirError> {
        use rustix::fs::{Mode, OFlags};
        let opened = rustix::fs::open(
            dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .and_then(|fd| rustix::fs::fstat(&fd).map(|st| (fd, st)));
        match opened {
            Ok((fd, st)) => Ok((
                OpenDir { fd },
                DirStamp {
                    dev: st.st_dev,
                    ino: st.st_ino,
                    mtime_ns: nanos(st.st_mtime, i64::try_from(st.st_mtime_nsec).unwrap_or(0)),
                    ctime_ns: nanos(st.st_ctime, i64::try_from(st.st_ctime_nsec).unwrap_or(0)),
                },
            )),
            // Not a folder, or a leading component is not one: told apart as `std` would.
            Err(rustix::io::Errno::NOTDIR) => match fs::metadata(dir) {
                Ok(_) => Err(DirError::NotAFolder),
                Err(e) => Err(DirError::Io(e)),
            },
            Err(e) => Err(DirError::Io(e.into())),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn open(dir: &Path) -> Result<(OpenDir, DirStamp), DirError> {
        match fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => Ok((OpenDir {}, DirStamp::of(&meta))),
            Ok(_) => Err(DirError::NotAFolder),
            Err(e) => Err(DirError::Io(e)),
        }
    }

    /// The stamp of the entry `rel` (a name, or a name and a probe) of the folder, at `path`
    /// (joined with `probe`, if any): `lstat` unless `follow`.
    #[cfg(target_os = "linux")]
    fn stat(
        &self,
        rel: Option<&[u8]>,
        path: &Path,
        probe: Option<&str>,
        follow: bool,
    ) -> std::io::Result<Stat> {
        use rustix::fs::{AtFlags, FileType};
        let Some(rel) = rel.filter(|rel| !rel.is_empty()) else {
            return std_stat(
                &probe.map_or_else(|| path.to_path_buf(), |p| path.join(p)),
                follow,
            );
        };
        let flags = if follow {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        let st = rustix::fs::statat(&self.fd, rel, flags).map_err(std::io::Error::from)?;
        // As `FileStamp::of` has it: no mtime before the epoch or past `i64` nanoseconds.
        let mtime_ns = u64::try_from(st.st_mtime)
            .ok()
            .and_then(|secs| i64::try_from(secs).ok())
            .and_then(|secs| secs.checked_mul(1_000_000_000))
            .and_then(|ns| ns.checked_add(i64::try_from(st.st_mtime_nsec).ok()?));
        Ok(Stat {
            stamp: FileStamp {
                size: u64::try_from(st.st_size).unwrap_or(0),
                mtime_ns,
            },
            is_file: FileType::from_raw_mode(st.st_mode) == FileType::RegularFile,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn stat(
        &self,
        _rel: Option<&[u8]>,
        path: &Path,
        probe: Option<&str>,
        follow: bool,
    ) -> std::io::Result<Stat> {
        std_stat(
            &probe.map_or_else(|| path.to_path_buf(), |p| path.join(p)),
            follow,
        )
    }
}

/// Lists one folder: the entries `root`'s rules look at, sorted by name, as the folder's record
/// (its path, rule and `stamp`, then the listing). The second value says whether the listing is
/// complete and storable (an entry that could not be read, or on some
/// platforms a name that is not UTF-8, means it is used this time and never remembered).
fn list_dir(
    dir: &Path,
    root: &WalkRoot,
    stamp: &DirStamp,
    warnings: &mut Warnings,
) -> Option<(Vec<u8>, bool)> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            warnings.push(dir, None, format!("cannot list folder: {e}"));
            return None;
        }
    };
    let mut storable = true;
    let mut kept: Vec<(std::ffi::OsString, Kind)> = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                warnings.push(dir, None, format!("cannot list folder: {e}"));
                storable = false;
                continue;
            }
        };
        let file_type = match entry.file_type() {
            Ok(t) => t,
            Err(e) => {
                warnings.push(&entry.path(), None, format!("cannot stat: {e}"));
                storable = false;
                continue;
            }
        };
        let name = entry.file_name();
        let kind = if file_type.is_symlink() {
            Kind::Symlink
        } else if file_type.is_dir() {
            Kind::Dir
        } else if file_type.is_file() && (root.keep)(&name) {
            Kind::File
        } else {
            continue;
        };
        kept.push((name, kind));
    }
    kept.sort_unstable();
    let mut named: Vec<(&[u8], Kind)> = Vec::with_capacity(kept.len());
    for (name, kind) in &kept {
        match name_bytes(name) {
            Some(bytes) => named.push((bytes, *kind)),
            None => {
                warnings.push(&dir.join(name), None, "the name is not UTF-8; skipped");
                storable = false;
            }
        }
    }
    let mut record = Vec::with_capacity(
        64 + dir.as_os_str().len() + named.iter().map(|(n, _)| n.len() + 5).sum::<usize>(),
    );
    if record_head(dir, root.rule, stamp, &mut record).is_none() {
        // A path that cannot be stored (not UTF-8, elsewhere than on Unix): used this time only.
        storable = false;
        record.clear();
        record_head(Path::new(""), root.rule, stamp, &mut record)?;
    }
    let head_len = record.len();
    if write_listing(&mut record, named.iter().copied()).is_none() {
        // Names past 4 GiB in one folder: nothing to go by.
        record.truncate(head_len);
        write_listing(&mut record, std::iter::empty())?;
        storable = false;
    }
    Some((record, storable))
}

/// A file's stamp and whether it is a regular file.
struct Stat {
    stamp: FileStamp,
    is_file: bool,
}

fn std_stat(path: &Path, follow: bool) -> std::io::Result<Stat> {
    let meta = if follow {
        fs::metadata(path)
    } else {
        fs::symlink_metadata(path)
    }?;
    Ok(Stat {
        stamp: FileStamp::of(&meta),
        is_file: meta.is_file(),
    })
}

/// A timestamp in nanoseconds, saturating: a folder stamped centuries ahead (a clock gone wrong,
/// `touch -d 2300-01-01`) must not overflow the walk.
fn nanos(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}
