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
    /// How large the file being written grows before it may be left for a fresh one.
    rotate_from: u64,
    /// Set when the file being written was left for a fresh one, until the index moved the
    /// lists still in the old ([`Spill::take_left`]).
    left: AtomicBool,
    /// Set once a write failed; the warning is handed out once.
    write_failed: AtomicBool,
    warning: Mutex<Option<String>>,
    /// The first read that failed, as a report's error.
    failed: Arc<Mutex<Option<String>>>,
    /// Reads back made from the directory's record files (each a `pread`).
    reads: Arc<AtomicU64>,
}

/// One unnamed file of records.
#[derive(Debug)]
pub(crate) struct SpillFile {
    file: File,
    /// Bytes written (where the next region starts).
    end: AtomicU64,
    /// Bytes of regions no list holds any more.
    dead: AtomicU64,
    /// The bytes of each record in the file (one size a file).
    record: u32,
    dir: PathBuf,
    failed: Arc<Mutex<Option<String>>>,
    reads: Arc<AtomicU64>,
}

/// Where one list's records are: `len` records of the file's size from byte `at` of `file`,
/// both in one word — 16 bytes, so a list holding it or its records on the heap is 24
/// ([`crate::calls::CallList`], kept for every file).
#[derive(Debug)]
pub(crate) struct Region {
    file: Arc<SpillFile>,
    /// `at` in the low [`AT_BITS`] bits (1 TiB), `len` above (16 million records).
    place: u64,
}

/// Bits of a region's word for its byte offset; the rest are its length.
const AT_BITS: u32 = 40;

impl Spill {
    /// Records go to unnamed files in `dir` (made when the first list is written).
    pub fn new(dir: &Path) -> Arc<Spill> {
        Arc::new(Spill {
            dir: dir.to_path_buf(),
            current: Mutex::new(None),
            rotate_from: ROTATE_FROM,
            left: AtomicBool::new(false),
            write_failed: AtomicBool::new(false),
            warning: Mutex::new(None),
            failed: Arc::new(Mutex::new(None)),
            reads: Arc::new(AtomicU64::new(0)),
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
                self.warn_kept_in_memory(&e);
                None
            }
        }
    }

    /// Says once, for every write that failed, that what could not be written stays in memory.
    pub(crate) fn warn_kept_in_memory(&self, e: &io::Error) {
        if !self.write_failed.swap(true, Ordering::Relaxed) {
            let message = format!(
                "usage records are kept in memory: cannot write them to {}: {e}",
                self.dir.display()
            );
            *lock(&self.warning) = Some(message);
        }
    }

    /// A fresh unnamed file in the directory (for what is written in place, not appended:
    /// [`crate::states`]).
    pub(crate) fn tempfile(&self) -> io::Result<File> {
        tempfile::tempfile_in(&self.dir)
    }

    /// Keeps the first failed read of anything written to the directory for the next report.
    pub(crate) fn note_read_failure(&self, e: &io::Error) {
        note_failure(&self.failed, &self.dir, e);
    }

    fn try_write(&self, bytes: &[u8], len: u32, size: u32) -> io::Result<Region> {
        if u64::from(len) >= 1 << (64 - AT_BITS) {
            return Err(io::Error::other(format!("a list of {len} records")));
        }
        let mut current = lock(&self.current);
        let stale = current.as_ref().is_some_and(|file| {
            let end = file.end.load(Ordering::Relaxed);
            end >= self.rotate_from && file.dead.load(Ordering::Relaxed) * 2 > end
        });
        if stale {
            self.left.store(true, Ordering::Relaxed);
        }
        let other_size = current.as_ref().is_some_and(|file| file.record != size);
        if stale || other_size || current.is_none() {
            *current = Some(Arc::new(SpillFile {
                file: tempfile::tempfile_in(&self.dir)?,
                end: AtomicU64::new(0),
                dead: AtomicU64::new(0),
                record: size,
                dir: self.dir.clone(),
                failed: self.failed.clone(),
                reads: self.reads.clone(),
            }));
        }
        let Some(file) = current.as_ref() else {
            return Err(io::Error::other("no record file"));
        };
        let at = file.end.load(Ordering::Relaxed);
        if at + bytes.len() as u64 >= 1 << AT_BITS {
            return Err(io::Error::other("a record file of a terabyte"));
        }
        file.file.write_all_at(bytes, at)?;
        file.end.store(at + bytes.len() as u64, Ordering::Relaxed);
        Ok(Region {
            file: file.clone(),
            place: at | (u64::from(len) << AT_BITS),
        })
    }

    /// Whether a file was left for a fresh one since the last call: the lists still in it are
    /// to be written again ([`Spill::is_current`]), so the old file goes with its last region.
    pub(crate) fn take_left(&self) -> bool {
        self.left.swap(false, Ordering::Relaxed)
    }

    /// Whether `region` is in the file being written.
    pub(crate) fn is_current(&self, region: &Region) -> bool {
        lock(&self.current)
            .as_ref()
            .is_some_and(|file| Arc::ptr_eq(file, &region.file))
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
        (self.place >> AT_BITS) as usize
    }

    /// The region's first byte in its file.
    fn at(&self) -> u64 {
        self.place & ((1 << AT_BITS) - 1)
    }

    /// Reads records `first..first + out.len() / size` into `out`; a failure is kept for the
    /// next report ([`Spill::failure`]).
    pub(crate) fn read(&self, first: usize, out: &mut [u8]) -> io::Result<()> {
        let at = self.at() + (first as u64) * u64::from(self.file.record);
        self.file.reads.fetch_add(1, Ordering::Relaxed);
        let result = self.file.file.read_exact_at(out, at);
        if let Err(e) = &result {
            self.note_failure(e);
        }
        result
    }

    /// Keeps the first failed read for the next report.
    fn note_failure(&self, e: &io::Error) {
        note_failure(&self.file.failed, &self.file.dir, e);
    }
}

impl Region {
    /// Where the region is: its file (by identity) and byte offset, to read regions in order.
    pub(crate) fn place(&self) -> (usize, u64) {
        (Arc::as_ptr(&self.file) as usize, self.at())
    }

    /// The region's bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.len() as u64 * u64::from(self.file.record)
    }
}

/// Many regions read back in few large reads: a report reads its lists in the order they are
/// on disk, and a read takes up to `size` bytes from the first region not held on (the regions
/// after it in the same read; dead ones between them are read too, and at most half a file is).
#[derive(Debug)]
pub(crate) struct Window {
    file: Option<Arc<SpillFile>>,
    at: u64,
    bytes: Vec<u8>,
    size: u64,
}

impl Window {
    /// A window reading up to `size` bytes at once (beyond a region larger than that).
    pub(crate) fn new(size: u64) -> Window {
        Window {
            file: None,
            at: 0,
            bytes: Vec::new(),
            size,
        }
    }

    /// The bytes of `region`, read with the regions after it when not held yet.
    pub(crate) fn records(&mut self, region: &Region) -> io::Result<&[u8]> {
        let held = self
            .file
            .as_ref()
            .is_some_and(|file| Arc::ptr_eq(file, &region.file))
            && region.at() >= self.at
            && region.at() + region.bytes() <= self.at + self.bytes.len() as u64;
        if !held {
            let end = region.file.end.load(Ordering::Relaxed);
            let len = self
                .size
                .max(region.bytes())
                .min(end.saturating_sub(region.at()));
            let len = len.max(region.bytes());
            self.bytes.clear();
            self.bytes.resize(len as usize, 0);
            self.file = None;
            region.file.reads.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = region.file.file.read_exact_at(&mut self.bytes, region.at()) {
                self.bytes.clear();
                region.note_failure(&e);
                return Err(e);
            }
            self.file = Some(region.file.clone());
            self.at = region.at();
        }
        let from = (region.at() - self.at) as usize;
        Ok(&self.bytes[from..from + region.bytes() as usize])
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        self.file.dead.fetch_add(self.bytes(), Ordering::Relaxed);
    }
}

/// Keeps the first failed read back for the next report, naming the directory.
fn note_failure(failed: &Mutex<Option<String>>, dir: &Path, e: &io::Error) {
    let mut failed = lock(failed);
    if failed.is_none() {
        *failed = Some(format!(
            "cannot read back usage records from {} (an unnamed file there): {e}",
            dir.display()
        ));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
impl Spill {
    /// A spill leaving its file for a fresh one from `rotate_from` bytes on.
    pub(crate) fn rotating_from(dir: &Path, rotate_from: u64) -> Arc<Spill> {
        Arc::new(Spill {
            rotate_from,
            ..Arc::into_inner(Spill::new(dir)).unwrap_or_else(|| unreachable!())
        })
    }

    /// How many reads back were made from the directory's record files.
    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Cuts the file being written to nothing, as a damaged disk would leave it.
    pub(crate) fn damage(&self) {
        if let Some(file) = lock(&self.current).as_ref() {
            file.file.set_len(0).ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spill_in(dir: &Path, rotate_from: u64) -> Spill {
        Arc::into_inner(Spill::rotating_from(dir, rotate_from)).unwrap()
    }

    /// Regions dropped count as dead; once more than half of the file being written is dead,
    /// the next write goes to a fresh file, and regions still held in the old one read on.
    #[test]
    fn a_file_more_than_half_dead_is_left_for_a_fresh_one() {
        let dir = tempfile::tempdir().unwrap();
        let spill = spill_in(dir.path(), 1_000);
        let kept = spill.write(&[7; 300], 10, 30).unwrap();
        let dropped: Vec<Region> = (0..3)
            .map(|n| spill.write(&[n; 300], 10, 30).unwrap())
            .collect();
        assert_eq!(spill.bytes_written_and_dead(), (1_200, 0));
        drop(dropped);
        assert_eq!(spill.bytes_written_and_dead(), (1_200, 900));
        let fresh = spill.write(&[9; 60], 2, 30).unwrap();
        assert_eq!(spill.bytes_written_and_dead(), (60, 0));
        let mut bytes = [0; 300];
        kept.read(0, &mut bytes).unwrap();
        assert_eq!(bytes, [7; 300]);
        let mut bytes = [0; 60];
        fresh.read(0, &mut bytes).unwrap();
        assert_eq!(bytes, [9; 60]);
        // Below the size worth leaving, a dead file is written on.
        let small = spill_in(dir.path(), ROTATE_FROM);
        drop(small.write(&[1; 300], 10, 30));
        let held = small.write(&[2; 30], 1, 30).unwrap();
        assert_eq!(small.bytes_written_and_dead(), (330, 300));
        drop(held);
    }

    /// A region is 16 bytes, its place and length in one word; a list longer than the word
    /// holds is not written (it stays on the heap, said once), and records of another size go
    /// to a file of their own.
    #[test]
    fn a_region_is_one_word_and_a_list_past_it_is_not_written() {
        assert_eq!(std::mem::size_of::<Region>(), 16);
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new(dir.path());
        let first = spill.write(&[5; 60], 2, 30).unwrap();
        assert!(spill.write(&[], 1 << 24, 36).is_none());
        assert!(spill.take_warning().is_some());
        let other = spill.write(&[6; 72], 2, 36).unwrap();
        assert_ne!(first.place().0, other.place().0, "another file");
        assert_eq!((other.len(), other.bytes(), other.place().1), (2, 72, 0));
        let mut bytes = [0; 36];
        other.read(1, &mut bytes).unwrap();
        assert_eq!(bytes, [6; 36]);
        let mut bytes = [0; 30];
        first.read(1, &mut bytes).unwrap();
        assert_eq!(bytes, [5; 30]);
    }

    /// A read back that fails is an error, kept for the next report and naming the directory.
    #[test]
    fn a_damaged_read_is_an_error_naming_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new(dir.path());
        let region = spill.write(&[3; 90], 3, 30).unwrap();
        assert_eq!(spill.failure(), None);
        spill.damage();
        let mut bytes = [0; 30];
        assert!(region.read(1, &mut bytes).is_err());
        let failure = spill.failure().unwrap();
        assert!(
            failure.contains(&dir.path().display().to_string()),
            "{failure}"
        );
        assert!(Window::new(1 << 20).records(&region).is_err());
    }
}
