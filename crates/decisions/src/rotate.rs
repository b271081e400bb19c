//! The log's files and their lifetime: where they are, rotation by size, and retention.
//!
//! `decisions.jsonl` is the file written now. When a line would take it past
//! [`LogConfig::max_bytes`] it is renamed `decisions.<n>.jsonl`, `n` one more than the highest
//! number present, and a new `decisions.jsonl` is started. Numbers only grow: a rotated file is
//! never renamed again, so a reader that listed the directory a moment ago still finds every
//! file it listed (only retention removes one), and the number orders files oldest first.
//!
//! Retention keeps about two weeks ([`LogConfig::keep_for`]): a rotated file whose newest record
//! is older than that is deleted, and beyond [`LogConfig::max_files`] rotated files the oldest go
//! too. The file being written is never deleted; when its oldest record is past `keep_for` it is
//! rotated even if small, so a quiet log ages out too. All of this runs under the writers' lock.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use cross_agent_protocol::settings as var;
use memchr::{memchr, memrchr};

use crate::error::{Error, Result};
use crate::{clock, line};

/// The file written now.
pub const CURRENT_FILE: &str = "decisions.jsonl";
/// The lock every writer takes around an append (and a rotation).
pub const LOCK_FILE: &str = "decisions.lock";

/// Default size at which the log is rotated: 16 MiB, about 60,000 records.
pub const DEFAULT_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Default age past which rotated files are deleted.
pub const DEFAULT_KEEP_FOR: Duration = Duration::from_secs(14 * 24 * 3600);
/// Default cap on rotated files (1 GiB at the default size), whatever their age: a runaway
/// writer must not fill the disk within the two weeks.
pub const DEFAULT_MAX_FILES: usize = 64;

/// How much of a file's head or tail is read to find its first or last record's time.
const EDGE_BYTES: u64 = 64 * 1024;

/// Size and age limits of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogConfig {
    /// A line that would take the current file past this starts a new one (a single line longer
    /// than this is still written whole, into a file of its own).
    pub max_bytes: u64,
    /// Rotated files whose newest record is older than this are deleted.
    pub keep_for: Duration,
    /// At most this many rotated files are kept.
    pub max_files: usize,
}

impl Default for LogConfig {
    fn default() -> LogConfig {
        LogConfig {
            max_bytes: DEFAULT_MAX_BYTES,
            keep_for: DEFAULT_KEEP_FOR,
            max_files: DEFAULT_MAX_FILES,
        }
    }
}

impl LogConfig {
    /// The defaults, with `CROSS_AGENT_DECISIONS_MAX_BYTES` when it is a positive number.
    pub fn from_env() -> LogConfig {
        LogConfig::from_vars(|name| std::env::var(name).ok())
    }

    /// [`LogConfig::from_env`] over a given variable lookup.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> LogConfig {
        let mut config = LogConfig::default();
        if let Some(max) = var(var::DECISIONS_MAX_BYTES)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|v| *v > 0)
        {
            config.max_bytes = max;
        }
        config
    }
}

/// `decisions.<n>.jsonl` → `n`.
pub fn rotated_number(file_name: &str) -> Option<u64> {
    let middle = file_name
        .strip_prefix("decisions.")?
        .strip_suffix(".jsonl")?;
    if middle.is_empty() || !middle.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    middle.parse().ok()
}

/// The path of rotated file `n`.
pub fn rotated_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("decisions.{n}.jsonl"))
}

/// The rotated files in `dir`, oldest (lowest number) first. A missing directory has none.
pub fn rotated_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("list", dir, e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("list", dir, e))?;
        if let Some(n) = entry.file_name().to_str().and_then(rotated_number) {
            files.push((n, entry.path()));
        }
    }
    files.sort_unstable_by_key(|(n, _)| *n);
    Ok(files)
}

/// Renames the current file to the next number. `None` when there was no current file.
pub(crate) fn rotate_current(dir: &Path) -> Result<Option<PathBuf>> {
    let current = dir.join(CURRENT_FILE);
    let next = rotated_files(dir)?.last().map_or(1, |(n, _)| n + 1);
    let target = rotated_path(dir, next);
    match fs::rename(&current, &target) {
        Ok(()) => Ok(Some(target)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("rotate", &current, e)),
    }
}

/// Deletes rotated files past the age and count limits; returns what was deleted. The current
/// file is never touched.
pub fn apply_retention(dir: &Path, config: &LogConfig, now_ms: i64) -> Result<Vec<PathBuf>> {
    let keep_ms = i64::try_from(config.keep_for.as_millis()).unwrap_or(i64::MAX);
    let cutoff = now_ms.saturating_sub(keep_ms);
    let mut deleted = Vec::new();
    let mut kept = Vec::new();
    for (_, path) in rotated_files(dir)? {
        let newest = match File::open(&path) {
            Ok(file) => newest_record_ms(&file),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        match newest {
            Some(ms) if ms < cutoff => remove(&path, &mut deleted)?,
            _ => kept.push(path),
        }
    }
    let excess = kept.len().saturating_sub(config.max_files);
    for path in kept.into_iter().take(excess) {
        remove(&path, &mut deleted)?;
    }
    Ok(deleted)
}

fn remove(path: &Path, deleted: &mut Vec<PathBuf>) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => {
            deleted.push(path.to_owned());
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("delete", path, e)),
    }
}

/// The time of a file's newest record: its last readable line's `at`, else its modification
/// time (a file of torn lines still ages out).
pub fn newest_record_ms(file: &File) -> Option<i64> {
    let len = file.metadata().ok()?.len();
    last_stamp(file, len)
        .and_then(|s| clock::to_millis(&s))
        .or_else(|| {
            let modified = file.metadata().ok()?.modified().ok()?;
            let ms = modified.duration_since(UNIX_EPOCH).ok()?.as_millis();
            i64::try_from(ms).ok()
        })
}

/// The `at` of the first record in the file's first 64 KiB.
pub fn first_stamp(file: &File) -> Option<String> {
    let mut buf = vec![0; usize::try_from(EDGE_BYTES).ok()?];
    let n = read_full_at(file, &mut buf, 0).ok()?;
    let buf = buf.get(..n)?;
    let mut start = 0;
    while start < buf.len() {
        let end = memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i);
        if let Some(stamp) = line::stamp(&buf[start..end]) {
            return Some(stamp.into_owned());
        }
        start = end + 1;
    }
    None
}

/// The `at` of the last record in the file's last 64 KiB (a torn last line is passed over).
pub fn last_stamp(file: &File, len: u64) -> Option<String> {
    let from = len.saturating_sub(EDGE_BYTES);
    let mut buf = vec![0; usize::try_from(len - from).ok()?];
    let n = read_full_at(file, &mut buf, from).ok()?;
    let mut buf = buf.get(..n)?;
    while !buf.is_empty() {
        let start = memrchr(b'\n', &buf[..buf.len() - 1]).map_or(0, |i| i + 1);
        // The first piece of a tail that starts mid-file is part of a line: not a record.
        if start == 0 && from > 0 {
            return None;
        }
        if let Some(stamp) = line::stamp(buf[start..].trim_ascii_end()) {
            return Some(stamp.into_owned());
        }
        buf = &buf[..start];
    }
    None
}

/// Reads until `buf` is full or the file ends; returns how much was read.
pub(crate) fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let at = offset + filled as u64;
        match file.read_at(&mut buf[filled..], at) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
