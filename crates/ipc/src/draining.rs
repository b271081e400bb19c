//! `draining-<generation>.lock` / `.json`: the record a replaced daemon keeps while it finishes
//! what it carries.
//!
//! During a handover two daemons of one home are alive at once, so `daemon.pid` cannot be the
//! only lock: the replaced daemon lets go of it (the successor takes it) and holds an exclusive
//! `flock` on `draining-<generation>.lock` instead, for as long as it lives. As with the pidfile,
//! the lock is the truth — the kernel drops it however the process ends — so a successor (or a
//! `daemon status`) sees exactly which generations are still alive and draining:
//!
//! - a successor does not mark those generations' in-flight deliveries orphaned at start
//!   (their carrier is alive and finishing them);
//! - `daemon status` and `bridge_status` list them with what they still carry, read from
//!   `draining-<generation>.json`, which the draining daemon rewrites (write + rename, so a
//!   reader never sees half a file) whenever its counts change.
//!
//! A record whose lock nobody holds is stale (its daemon has exited) and is removed by whoever
//! finds it.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use cross_agent_protocol::rpc::{CarriedCounts, DrainingDaemon};

use crate::error::{Error, Result};
use crate::home::{Home, open_private_rw};

const PREFIX: &str = "draining-";

fn lock_path(home: &Home, generation: u64) -> PathBuf {
    home.root().join(format!("{PREFIX}{generation}.lock"))
}

fn info_path(home: &Home, generation: u64) -> PathBuf {
    home.root().join(format!("{PREFIX}{generation}.json"))
}

/// The held drain lock of one generation. Dropping it releases the lock and removes the record.
#[derive(Debug)]
pub struct DrainLock {
    file: File,
    lock: PathBuf,
    info: PathBuf,
    record: DrainingDaemon,
}

impl DrainLock {
    /// Takes `draining-<generation>.lock` for this process and writes its first record.
    pub fn acquire(home: &Home, generation: u64, since: &str) -> Result<DrainLock> {
        let lock = lock_path(home, generation);
        let file = open_private_rw(&lock)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::AlreadyRunning {
                    pid: None,
                    pidfile: lock,
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", &lock, e)),
        }
        let mut held = DrainLock {
            file,
            info: info_path(home, generation),
            lock,
            record: DrainingDaemon {
                pid: std::process::id(),
                generation,
                since: since.to_owned(),
                carried: CarriedCounts::default(),
            },
        };
        held.write()?;
        Ok(held)
    }

    /// Records what the daemon still carries (only when it changed).
    pub fn update(&mut self, carried: CarriedCounts) -> Result<()> {
        if carried == self.record.carried {
            return Ok(());
        }
        self.record.carried = carried;
        self.write()
    }

    fn write(&mut self) -> Result<()> {
        let text = serde_json::to_vec(&self.record)
            .map_err(|e| Error::io("encode", &self.info, std::io::Error::other(e)))?;
        let dir = self.info.parent().unwrap_or(Path::new("."));
        // A new owner-only file of a random name (`O_EXCL`, so never a link), renamed over.
        let mut temp = tempfile::Builder::new()
            .permissions(std::fs::Permissions::from_mode(crate::home::FILE_MODE))
            .tempfile_in(dir)
            .map_err(|e| Error::io("create a temporary file in", dir, e))?;
        temp.write_all(&text)
            .map_err(|e| Error::io("write", temp.path(), e))?;
        temp.persist(&self.info)
            .map_err(|e| Error::io("rename", &self.info, e.error))?;
        Ok(())
    }
}

impl Drop for DrainLock {
    fn drop(&mut self) {
        // Remove before unlocking: a reader that finds the file without a holder removes it
        // too, so the order only narrows the window in which it is seen stale.
        let _ = std::fs::remove_file(&self.info);
        let _ = std::fs::remove_file(&self.lock);
        let _ = self.file.unlock();
    }
}

/// The generations of `home` that are draining now (their lock is held), with their latest
/// record, oldest first. Stale records are removed on the way.
pub fn list(home: &Home) -> Vec<DrainingDaemon> {
    let Ok(entries) = std::fs::read_dir(home.root()) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(generation) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|n| n.strip_suffix(".lock"))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        let lock = lock_path(home, generation);
        if !is_held(&lock) {
            let _ = std::fs::remove_file(info_path(home, generation));
            let _ = std::fs::remove_file(&lock);
            continue;
        }
        let record = std::fs::read(info_path(home, generation))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<DrainingDaemon>(&bytes).ok())
            .unwrap_or(DrainingDaemon {
                generation,
                ..DrainingDaemon::default()
            });
        found.push(record);
    }
    found.sort_by_key(|d| d.generation);
    found
}

/// The generations draining now, for a successor deciding what is not orphaned.
pub fn live_generations(home: &Home) -> Vec<u64> {
    list(home).into_iter().map(|d| d.generation).collect()
}

fn is_held(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(std::fs::TryLockError::Error(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn a_held_record_is_listed_and_a_dropped_one_is_gone() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::at(tmp.path().join("state")).unwrap();
        home.ensure_root().unwrap();
        let mut lock = DrainLock::acquire(&home, 4, "2026-01-01T00:00:00Z").unwrap();
        let carried = CarriedCounts {
            turns_running: 1,
            answers_pending: 1,
            late_answer_watches: 0,
        };
        lock.update(carried).unwrap();
        assert_eq!(
            list(&home),
            vec![DrainingDaemon {
                pid: std::process::id(),
                generation: 4,
                since: "2026-01-01T00:00:00Z".into(),
                carried,
            }]
        );
        assert_eq!(live_generations(&home), vec![4]);
        drop(lock);
        assert_eq!(list(&home), vec![]);
    }

    #[test]
    fn a_record_nobody_holds_is_stale_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::at(tmp.path().join("state")).unwrap();
        home.ensure_root().unwrap();
        std::fs::write(home.root().join("draining-2.lock"), "").unwrap();
        std::fs::write(home.root().join("draining-2.json"), "{}").unwrap();
        assert_eq!(list(&home), vec![]);
        assert!(!home.root().join("draining-2.lock").exists());
        assert!(!home.root().join("draining-2.json").exists());
    }
}
