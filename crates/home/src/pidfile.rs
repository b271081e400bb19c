//! `daemon.pid`: the lock that makes the daemon one per home.
//!
//! The daemon holds an exclusive `flock` on the file for its whole life and writes its pid into
//! it. The lock, not the file's presence or content, is the truth: the kernel drops it when the
//! process dies however it dies, so a pidfile left by a crashed daemon is simply taken over, and
//! ten daemons started at once end with exactly one holding it. The file is never deleted,
//! because a delete racing a new daemon's open could leave two daemons locking two different
//! files of the same name.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::home::open_private_rw;

/// How often, and how long apart, a daemon retries a lock that is held. A client probing the
/// lock ([`probe`]) holds it for microseconds; a daemon holds it for good.
const ACQUIRE_ATTEMPTS: u32 = 10;
const ACQUIRE_PAUSE: Duration = Duration::from_millis(20);

/// The held lock. Dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct PidLock {
    file: File,
    path: PathBuf,
}

impl PidLock {
    /// Takes the lock and writes this process's pid into the file. Another holder is
    /// [`Error::AlreadyRunning`] with its pid.
    pub fn acquire(path: &Path) -> Result<PidLock> {
        let mut file = open_private_rw(path)?;
        let mut attempt = 0;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    attempt += 1;
                    if attempt >= ACQUIRE_ATTEMPTS {
                        return Err(Error::AlreadyRunning {
                            pid: read_pid(&mut file),
                            pidfile: path.to_owned(),
                        });
                    }
                    std::thread::sleep(ACQUIRE_PAUSE);
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", path, e)),
            }
        }
        let pid = std::process::id();
        let written = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(format!("{pid}\n").as_bytes()))
            .and_then(|()| file.sync_data());
        written.map_err(|e| Error::io("write", path, e))?;
        Ok(PidLock {
            file,
            path: path.to_owned(),
        })
    }

    /// The pidfile.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file at the pidfile's path is still the one this lock holds and names this
    /// process: `Ok(false)` once it is gone (its home deleted), replaced by another file, or
    /// holds another pid — the daemon holding this lock is then no longer the one clients of the
    /// home find, and stops. `Err` when that could not be told (the `stat` itself failed): not
    /// an answer, so the caller must not take it for "gone".
    ///
    /// It opens nothing: the path is compared by `lstat` with the file this lock already holds
    /// open, and the pid is read through that same descriptor. A daemon out of file descriptors
    /// can still tell, where opening the file again would fail with `EMFILE`.
    pub fn names_this_process(&self) -> std::io::Result<bool> {
        use std::os::unix::fs::{FileExt, MetadataExt};
        let at_path = match std::fs::symlink_metadata(&self.path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(error) => return Err(error),
        };
        let held = self.file.metadata()?;
        if (at_path.dev(), at_path.ino()) != (held.dev(), held.ino()) {
            return Ok(false);
        }
        // A pid is at most ten digits and a newline; anything longer is not ours.
        let mut bytes = [0_u8; 24];
        let read = self.file.read_at(&mut bytes, 0)?;
        let pid = std::str::from_utf8(&bytes[..read])
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok());
        Ok(pid == Some(std::process::id()))
    }
}

impl Drop for PidLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Who holds a pidfile, as seen from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// Nobody: no daemon runs for this home (a pid in the file is stale).
    Free,
    /// A live process holds the lock; its pid when the file already says.
    Held(Option<u32>),
}

/// Looks at the pidfile without keeping the lock: used by `daemon status` / `stop` when the
/// socket does not answer, and by autostart to tell a lost race from a daemon that died.
pub fn probe(path: &Path) -> Result<Holder> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(crate::home::no_follow_flag())
        .open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Holder::Free),
        Err(e) => return Err(Error::io("open", path, e)),
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            Ok(Holder::Free)
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(Holder::Held(read_pid(&mut file))),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
    }
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn one_holder_at_a_time_and_a_stale_file_is_taken_over() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("daemon.pid");
        std::fs::write(&path, "999999999\n").unwrap();
        assert_eq!(probe(&path).unwrap(), Holder::Free);

        let lock = PidLock::acquire(&path).unwrap();
        let me = std::process::id();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{me}\n"));
        assert_eq!(probe(&path).unwrap(), Holder::Held(Some(me)));
        match PidLock::acquire(&path) {
            Err(Error::AlreadyRunning { pid, .. }) => assert_eq!(pid, Some(me)),
            other => panic!("expected AlreadyRunning, got {other:?}"),
        }
        drop(lock);
        assert_eq!(probe(&path).unwrap(), Holder::Free);
        drop(PidLock::acquire(&path).unwrap());
    }

    #[test]
    fn a_lock_tells_when_its_file_no_longer_names_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("daemon.pid");
        let lock = PidLock::acquire(&path).unwrap();
        assert!(lock.names_this_process().unwrap());
        std::fs::write(&path, "1\n").unwrap();
        assert!(!lock.names_this_process().unwrap());
        std::fs::remove_file(&path).unwrap();
        assert!(!lock.names_this_process().unwrap());
    }

    #[test]
    fn a_pidfile_replaced_by_another_file_is_not_this_locks_even_with_this_pid() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("daemon.pid");
        let lock = PidLock::acquire(&path).unwrap();
        // Another file renamed over it: a second daemon could lock that one.
        let other = tmp.path().join("other");
        std::fs::write(&other, format!("{}\n", std::process::id())).unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert!(!lock.names_this_process().unwrap());
    }

    #[test]
    fn a_pidfile_that_cannot_be_looked_at_is_no_answer() {
        let tmp = tempfile::tempdir().unwrap();
        // A path past PATH_MAX: `lstat` fails with ENAMETOOLONG, which says nothing about
        // whether the file is there.
        let deep = tmp.path().join("d".repeat(5000)).join("daemon.pid");
        let lock = PidLock {
            file: open_private_rw(&tmp.path().join("daemon.pid")).unwrap(),
            path: deep,
        };
        assert!(lock.names_this_process().is_err());
    }

    #[test]
    fn a_missing_pidfile_is_free() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(probe(&tmp.path().join("nope")).unwrap(), Holder::Free);
    }
}
