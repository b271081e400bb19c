//! Where a long-lived process keeps its renderings' text: an unnamed file in its own state
//! directory ([`TextDir`]), read back with `pread` as a listing is written, so 50 MB of listing
//! at 100,000 sessions is the kernel's page cache (reclaimable, and not the daemon's resident
//! set: read, never mapped) rather than the daemon's heap.
//!
//! The file is made with `O_TMPFILE` where the system has it (`tempfile::tempfile_in`): it has
//! no name, so nothing can be planted at one, and it is gone when the last handle to it closes —
//! when the rendering and every listing made from it are dropped, or the daemon exits. A
//! rendering is written whole once made and never changed after, but for the in-place recost,
//! which only a rendering that nothing else holds may do ([`super::RenderedAgent::recost`]). A
//! file that cannot be made or written (a full disk, the directory gone) leaves that rendering's
//! text on the heap, as without a directory, and says so once in the log.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The directory the renderings' text is kept in, and whether the log was told it failed.
#[derive(Debug)]
pub struct TextDir {
    dir: Arc<Path>,
    /// Warnings written about it (at most one).
    warned: AtomicUsize,
}

/// A rendering's text in its unnamed file.
#[derive(Debug)]
pub(crate) struct KeptFile {
    file: File,
    len: usize,
    dir: Arc<Path>,
}

impl TextDir {
    pub fn new(dir: impl Into<PathBuf>) -> TextDir {
        TextDir {
            dir: Arc::from(dir.into()),
            warned: AtomicUsize::new(0),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// How many warnings it wrote to the log: one once a text could not be kept in it.
    pub fn warnings(&self) -> usize {
        self.warned.load(Ordering::Relaxed)
    }

    /// `text` in a new unnamed file of the directory; `None` when it cannot be (the text stays
    /// where it is), which the log is told the first time.
    pub(crate) fn keep(&self, text: &[u8]) -> Option<KeptFile> {
        match self.write(text) {
            Ok(file) => Some(file),
            Err(error) => {
                self.warn_once(&error);
                None
            }
        }
    }

    fn write(&self, text: &[u8]) -> io::Result<KeptFile> {
        let mut file = tempfile::tempfile_in(&self.dir)?;
        file.write_all(text)?;
        Ok(KeptFile {
            file,
            len: text.len(),
            dir: Arc::clone(&self.dir),
        })
    }

    /// Says once that the directory failed, for this rendering or an earlier one.
    pub(crate) fn warn_once(&self, error: &io::Error) {
        if self
            .warned
            .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            tracing::warn!(
                dir = %self.dir.display(),
                %error,
                "cannot keep the listing's text in a file of the state directory; keeping it in \
                 memory instead"
            );
        }
    }
}

impl KeptFile {
    /// The text's length.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Reads its text from `at` into the whole of `out`.
    pub(crate) fn read_at(&self, at: usize, out: &mut [u8]) -> io::Result<()> {
        if at.saturating_add(out.len()) > self.len {
            return Err(self.error(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "bytes {at}..{} are past its end ({})",
                    at.saturating_add(out.len()),
                    self.len
                ),
            )));
        }
        read_exact_at(&self.file, out, at as u64).map_err(|error| self.error(error))
    }

    /// The whole text.
    pub(crate) fn read_all(&self) -> io::Result<Vec<u8>> {
        let mut out = vec![0; self.len];
        self.read_at(0, &mut out)?;
        Ok(out)
    }

    /// Writes `bytes` over the text at `at` (same length: the recost's patch in place).
    pub(crate) fn patch(&self, at: usize, bytes: &[u8]) -> io::Result<()> {
        write_all_at(&self.file, bytes, at as u64).map_err(|error| self.error(error))
    }

    /// The file (a writer sends long runs from it; a test damages it).
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// `error`, naming the directory the file is in.
    fn error(&self, error: io::Error) -> io::Error {
        io::Error::new(
            error.kind(),
            format!(
                "cannot read the listing's kept text (an unnamed file in {}): {error}",
                self.dir.display()
            ),
        )
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
}

#[cfg(unix)]
fn write_all_at(file: &File, buf: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, at)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut at: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, at)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(windows)]
fn write_all_at(file: &File, mut buf: &[u8], mut at: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_write(buf, at)? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => {
                buf = &buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}
