//! The writer: [`DecisionLog`], a cheap cloneable handle the engine keeps and calls at each
//! decision point.
//!
//! **It never fails the caller.** [`DecisionLog::record`] returns nothing: a full disk or a
//! removed directory must not refuse a send or lose a delivery whose only fault is that its
//! decision could not be logged. A write error is logged with `tracing` (the first, then every
//! hundredth) and counted in [`WriterStats`]; [`DecisionLog::try_record`] exists for tests.
//!
//! **Whole lines, several writers.** Daemon generations (an old one draining while a new one
//! runs) and CLI processes may append at once. Each append:
//!
//! 1. takes this handle's mutex (threads) and an exclusive `flock` on `decisions.lock`
//!    (processes) — held for microseconds, around the append and any rotation, so a rotation
//!    never renames a file under another writer's half-done append;
//! 2. reopens `decisions.jsonl` if another process rotated it (the open file's inode is no
//!    longer the path's);
//! 3. rotates first when the line would take the file past the size limit;
//! 4. starts the line with `\n` if the file does not end with one — the torn tail of a writer
//!    that crashed mid-line stays a single bad line that readers skip, and ours starts clean;
//! 5. writes the whole line with one `write` on a descriptor opened `O_APPEND`.
//!
//! The guarantee relied on: with `O_APPEND`, Linux (and every POSIX system) positions each
//! `write` at the end of the file atomically, so two writes never overwrite each other; and one
//! `write` of a regular file is not interleaved with another `write` to the same file (the inode
//! lock is held for the whole write). The lock in (1) makes the order total even on filesystems
//! where that second point is weaker (NFS), and is what makes rotation safe. A process that
//! does not take the lock (an old version) still cannot tear a line on a local filesystem.
//!
//! No `fsync`: a decision is worth less than a disk flush per line; a crash can lose the last
//! lines or leave a torn one, never damage earlier ones.
//!
//! The calls are blocking and short (one `flock`, one `fstat`, one `pread` of one byte, one
//! `write`); the engine may call them from async code as it calls its SQLite store.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cross_agent_protocol::decisions::Decision;
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::rotate::{self, CURRENT_FILE, LOCK_FILE, LogConfig};
use crate::{clock, redact};

/// Mode of the log's files: they name sessions, directories and conversations.
const FILE_MODE: u32 = 0o600;
/// Mode of the directory when the writer has to create it (normally the daemon has).
const DIR_MODE: u32 = 0o700;
/// How often a long-running writer looks at retention and the current file's age.
const UPKEEP_EVERY: Duration = Duration::from_secs(3600);

/// What a [`DecisionLog`] has done since it was created (all its clones together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Lines appended.
    pub written: u64,
    /// Decisions lost to a write error.
    pub failed: u64,
    /// Values replaced by `[withheld]` (see [`crate::redact`]).
    pub withheld: u64,
    /// Rotations this handle performed.
    pub rotations: u64,
}

/// The handle to `decisions.jsonl` in one directory. Clone it freely: clones share one open
/// file and one set of counters.
#[derive(Clone)]
pub struct DecisionLog {
    inner: Option<Arc<Inner>>,
}

impl std::fmt::Debug for DecisionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Some(inner) => f
                .debug_struct("DecisionLog")
                .field("dir", &inner.dir)
                .field("config", &inner.config)
                .finish_non_exhaustive(),
            None => f.write_str("DecisionLog(disabled)"),
        }
    }
}

struct Inner {
    dir: PathBuf,
    /// Whether the first append may create `dir`; not for a daemon, whose home is made at
    /// start-up and must not come back once deleted under it.
    create_dir: bool,
    config: LogConfig,
    state: Mutex<State>,
    written: AtomicU64,
    failed: AtomicU64,
    withheld: AtomicU64,
    rotations: AtomicU64,
}

#[derive(Default)]
struct State {
    lock: Option<File>,
    current: Option<Current>,
    /// When retention and the age rule are looked at next; `None` = at the next append.
    next_upkeep: Option<Instant>,
}

struct Current {
    file: File,
    dev: u64,
    ino: u64,
}

impl DecisionLog {
    /// The log in `dir` (the `CROSS_AGENT_HOME`), with limits from the environment
    /// ([`LogConfig::from_env`]). Opens nothing yet: the first decision creates the file, so
    /// constructing one never fails.
    pub fn new(dir: impl Into<PathBuf>) -> DecisionLog {
        DecisionLog::with_config(dir, LogConfig::from_env())
    }

    /// [`DecisionLog::new`] for the daemon: `dir` must exist when the first decision is
    /// written, and that decision fails (counted, like any failed write) rather than re-create
    /// a home deleted under the daemon.
    pub fn in_existing_home(dir: impl Into<PathBuf>) -> DecisionLog {
        let mut log = DecisionLog::new(dir);
        if let Some(inner) = log.inner.as_mut().and_then(Arc::get_mut) {
            inner.create_dir = false;
        }
        log
    }

    /// The log in `dir` with explicit limits.
    pub fn with_config(dir: impl Into<PathBuf>, config: LogConfig) -> DecisionLog {
        DecisionLog {
            inner: Some(Arc::new(Inner {
                dir: dir.into(),
                create_dir: true,
                config,
                state: Mutex::new(State::default()),
                written: AtomicU64::new(0),
                failed: AtomicU64::new(0),
                withheld: AtomicU64::new(0),
                rotations: AtomicU64::new(0),
            })),
        }
    }

    /// A log that records nothing (for engines built in tests that do not look at it).
    pub fn disabled() -> DecisionLog {
        DecisionLog { inner: None }
    }

    /// `decisions.jsonl`'s path; `None` when disabled.
    pub fn path(&self) -> Option<PathBuf> {
        self.inner.as_ref().map(|i| i.dir.join(CURRENT_FILE))
    }

    /// Appends one decision, stamping `at` now if it is empty. Never fails: see the module
    /// documentation.
    pub fn record(&self, decision: Decision) {
        let Some(inner) = &self.inner else {
            return;
        };
        let kind = decision.kind.clone();
        if let Err(error) = self.try_record(decision) {
            let failed = inner.failed.fetch_add(1, Ordering::Relaxed) + 1;
            if failed == 1 || failed.is_multiple_of(100) {
                tracing::warn!(%error, %kind, failed, "a decision could not be logged");
            } else {
                tracing::debug!(%error, %kind, failed, "a decision could not be logged");
            }
        }
    }

    /// [`DecisionLog::record`] for each decision, in order.
    pub fn record_all(&self, decisions: impl IntoIterator<Item = Decision>) {
        for decision in decisions {
            self.record(decision);
        }
    }

    /// Appends one decision and says whether it was written. For tests and tools; the engine
    /// uses [`DecisionLog::record`].
    pub fn try_record(&self, mut decision: Decision) -> Result<()> {
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        let withheld = redact::withhold(&mut decision);
        if withheld > 0 {
            inner.withheld.fetch_add(withheld as u64, Ordering::Relaxed);
        }
        let mut state = inner.state.lock();
        inner.append(&mut state, decision)?;
        inner.written.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub fn stats(&self) -> WriterStats {
        match &self.inner {
            Some(inner) => WriterStats {
                written: inner.written.load(Ordering::Relaxed),
                failed: inner.failed.load(Ordering::Relaxed),
                withheld: inner.withheld.load(Ordering::Relaxed),
                rotations: inner.rotations.load(Ordering::Relaxed),
            },
            None => WriterStats::default(),
        }
    }
}

/// Releases the `flock` when the append is done, however it ends.
struct Flock<'f>(&'f File);

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

impl Inner {
    fn append(&self, state: &mut State, mut decision: Decision) -> Result<()> {
        if state.lock.is_none() {
            if self.create_dir {
                ensure_dir(&self.dir)?;
            } else if !self.dir.is_dir() {
                return Err(Error::io(
                    "write a decision in",
                    &self.dir,
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "the home is gone (only start-up creates it)",
                    ),
                ));
            }
            state.lock = Some(open_private(&self.dir.join(LOCK_FILE), false)?);
        }
        let Some(lock) = state.lock.as_ref() else {
            return Ok(());
        };
        let lock_path = self.dir.join(LOCK_FILE);
        lock.lock().map_err(|e| Error::io("lock", &lock_path, e))?;
        let _held = Flock(lock);

        let path = self.dir.join(CURRENT_FILE);
        let upkeep_due = state.next_upkeep.is_none_or(|at| Instant::now() >= at);
        if upkeep_due {
            state.next_upkeep = Some(Instant::now() + UPKEEP_EVERY);
            self.upkeep(&path)?;
            state.current = None;
        }
        let mut current = reopen_if_rotated(state.current.take(), &path)?;

        if decision.at.is_empty() {
            // Stamped under the lock, so within one file the stamps of all writers ascend
            // (as far as the wall clock does).
            decision.at = clock::now();
        }
        let mut line = serde_json::to_vec(&decision).map_err(|source| Error::Encode {
            kind: decision.kind.to_string(),
            source,
        })?;
        line.push(b'\n');

        let mut size = current
            .file
            .metadata()
            .map_err(|e| Error::io("inspect", &path, e))?
            .len();
        if size > 0 && size + line.len() as u64 > self.config.max_bytes {
            drop(current);
            rotate::rotate_current(&self.dir)?;
            self.rotations.fetch_add(1, Ordering::Relaxed);
            rotate::apply_retention(&self.dir, &self.config, clock::now_millis())?;
            current = open_current(&path)?;
            size = 0;
        }
        if size > 0 {
            let mut last = [0u8; 1];
            current
                .file
                .read_at(&mut last, size - 1)
                .map_err(|e| Error::io("read", &path, e))?;
            if last[0] != b'\n' {
                line.insert(0, b'\n');
            }
        }
        let written = (&current.file).write_all(&line);
        state.current = Some(current);
        written.map_err(|e| Error::io("append to", &path, e))
    }

    /// Retention, and the age rule for a quiet current file (see [`crate::rotate`]).
    fn upkeep(&self, path: &Path) -> Result<()> {
        let now = clock::now_millis();
        let keep_ms = i64::try_from(self.config.keep_for.as_millis()).unwrap_or(i64::MAX);
        match File::open(path) {
            Ok(file) => {
                let oldest = rotate::first_stamp(&file).and_then(|s| clock::to_millis(&s));
                if oldest.is_some_and(|ms| ms < now.saturating_sub(keep_ms)) {
                    drop(file);
                    rotate::rotate_current(&self.dir)?;
                    self.rotations.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("open", path, e)),
        }
        rotate::apply_retention(&self.dir, &self.config, now)?;
        Ok(())
    }
}

/// The open current file if it is still `path`, else `path` opened afresh.
fn reopen_if_rotated(current: Option<Current>, path: &Path) -> Result<Current> {
    if let Some(current) = current {
        match fs::metadata(path) {
            Ok(meta) if meta.dev() == current.dev && meta.ino() == current.ino => {
                return Ok(current);
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("inspect", path, e)),
        }
    }
    open_current(path)
}

fn open_current(path: &Path) -> Result<Current> {
    let file = open_private(path, true)?;
    let meta = file.metadata().map_err(|e| Error::io("inspect", path, e))?;
    Ok(Current {
        file,
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

/// Opens (creating `0600`) for appending, or for locking; tightens a file an older version
/// created with a looser mode. A link at `path` is refused (`O_NOFOLLOW`), never followed.
fn open_private(path: &Path, append: bool) -> Result<File> {
    let mut options = OpenOptions::new();
    // Never through a link: one planted here would have the log appended to (and chmod-ed)
    // wherever it points.
    options
        .create(true)
        .mode(FILE_MODE)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    if append {
        // Read too: the last byte is checked before each append.
        options.read(true).append(true);
    } else {
        options.read(true).write(true).truncate(false);
    }
    let file = options.open(path).map_err(|e| Error::io("open", path, e))?;
    let mode = file
        .metadata()
        .map_err(|e| Error::io("inspect", path, e))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        file.set_permissions(fs::Permissions::from_mode(FILE_MODE))
            .map_err(|e| Error::io("restrict the mode of", path, e))?;
    }
    Ok(file)
}

fn ensure_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| Error::io("create", dir, e))
}
