//! Call records kept on disk instead of the heap: once a file is read, its list of fixed-size
//! records ([`crate::calls`]) is written to an unnamed file in a directory the index is given
//! (`O_TMPFILE` through [`tempfile::tempfile_in`]: no name, nothing to follow, gone at exit),
//! and the list keeps only where its records are ([`Region`]). They are read back with
//! `pread` into a bounded buffer when a report, the ledger or the accounting looks at them: the
//! pages are the kernel's page cache, not the process's resident set (a mapping's would count).
//!
//! A write that fails (a full disk, the directory gone or read-only) keeps that file's records
//! in memory, as without a directory, and is said once ([`Spill::take_warning`]). A read that
//! fails is kept ([`Spill::failure`]) so a report is an error naming the directory, never a
//! smaller figure.
//!
//! A region is dead once no list holds it (a file read again, appended to or dropped): when
//! more than half of the file being written is dead, later writes go to a fresh file, and the
//! old one is gone with its last live region.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A file written only past this many bytes is kept however much of it is dead: a fresh file
/// per few replies would cost more than the space.
const ROTATE_FROM: u64 = 4 << 20;

/// Where an index's call records go: the directory, the file being written, and what went
/// wrong.
#[derive(Debug)]
pub struct Spill {
    dir: PathBuf,
    current: Mutex<Option<Arc<SpillFile>>>,
    /// Set once a write failed; the warning is handed out once.
    write_failed: AtomicBool,
    warning: Mutex<Option<String>>,
    /// The first read that failed, as a report's error.
    failed: Arc<Mutex<Option<String>>>,
}

/// One unnamed file of records.
#[derive(Debug)]
pub(crate) struct SpillFile {
    file: File,
    /// Bytes written (where the next region starts).
    end: AtomicU64,
    /// Bytes of regions no list holds any more.
    dead: AtomicU64,
    dir: PathBuf,
    failed: Arc<Mutex<Option<String>>>,
}

/// Where one list's records are: `len` records of `size` bytes from byte `at` of `file`.
#[derive(Debug)]
pub(crate) struct Region {
    file: Arc<SpillFile>,
    at: u64,
    len: u32,
    size: u32,
}

impl Spill {
    /// Records go to unnamed files in `dir` (made when the first list is written).
    pub fn new(dir: &Path) -> Arc<Spill> {
        Arc::new(Spill {
            dir: dir.to_path_buf(),
            current: Mutex::new(None),
            write_failed: AtomicBool::new(false),
            warning: Mutex::new(None),
            failed: Arc::new(Mutex::new(None)),
        })
    }

    /// The directory records are written to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `bytes` (`len` records of `size` bytes) and says where; `None` when the write
    /// failed (the caller keeps them in memory; the first failure is a warning).
    pub(crate) fn write(&self, bytes: &[u8], len: u32, size: u32) -> Option<Region> {
        match self.try_write(bytes, len, size) {
            Ok(region) => Some(region),
            Err(e) => {
                if !self.write_failed.swap(true, Ordering::Relaxed) {
                    let message = format!(
                        "usage records are kept in memory: cannot write them to {}: {e}",
                        self.dir.display()
                    );
                    *lock(&self.warning) = Some(message);
                }
                None
            }
        }
    }

    fn try_write(&self, bytes: &[u8], len: u32, size: u32) -> io::Result<Region> {
        let mut current = lock(&self.current);
        let stale = current.as_ref().is_some_and(|file| {
            let end = file.end.load(Ordering::Relaxed);
            end >= ROTATE_FROM && file.dead.load(Ordering::Relaxed) * 2 > end
        });
        if stale || current.is_none() {
            *current = Some(Arc::new(SpillFile {
                file: tempfile::tempfile_in(&self.dir)?,
                end: AtomicU64::new(0),
                dead: AtomicU64::new(0),
                dir: self.dir.clone(),
                failed: self.failed.clone(),
            }));
        }
        let Some(file) = current.as_ref() else {
            return Err(io::Error::other("no record file"));
        };
        let at = file.end.load(Ordering::Relaxed);
        file.file.write_all_at(bytes, at)?;
        file.end.store(at + bytes.len() as u64, Ordering::Relaxed);
        Ok(Region {
            file: file.clone(),
            at,
            len,
            size,
        })
    }

    /// The warning of a failed write, once.
    pub fn take_warning(&self) -> Option<String> {
        lock(&self.warning).take()
    }

    /// The first read back that failed, naming the directory: a report made since is not whole.
    pub fn failure(&self) -> Option<String> {
        lock(&self.failed).clone()
    }

    /// Bytes written to the files still open and bytes of them dead (for tests and the memory
    /// example).
    pub fn bytes_written_and_dead(&self) -> (u64, u64) {
        lock(&self.current).as_ref().map_or((0, 0), |file| {
            (
                file.end.load(Ordering::Relaxed),
                file.dead.load(Ordering::Relaxed),
            )
        })
    }
}

impl Region {
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Reads records `first..first + out.len() / size` into `out`; a failure is kept for the
    /// next report ([`Spill::failure`]).
    pub(crate) fn read(&self, first: usize, out: &mut [u8]) -> io::Result<()> {
        let at = self.at + (first as u64) * u64::from(self.size);
        let result = self.file.file.read_exact_at(out, at);
        if let Err(e) = &result {
            let mut failed = lock(&self.file.failed);
            if failed.is_none() {
                *failed = Some(format!(
                    "cannot read back usage records from {} (an unnamed file there): {e}",
                    self.file.dir.display()
                ));
            }
        }
        result
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let bytes = u64::from(self.len) * u64::from(self.size);
        self.file.dead.fetch_add(bytes, Ordering::Relaxed);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
