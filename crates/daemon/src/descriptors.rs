//! The daemon process's file descriptors: the limit raised as far as it may go, and the ones
//! a detached daemon inherited from whoever started it closed.
//!
//! The limit: every client connection, every turn's pipes and the store's files take a
//! descriptor, and many systems and containers give a process a soft limit of 1,024. The soft
//! limit is raised to the hard one at start (an unprivileged process may, and services such as
//! systemd's recommend it); the connection cap ([`crate::server`]) is then sized from what is
//! left, so clients can never take the descriptors the daemon needs for its own work.
//!
//! Inherited descriptors: a client that starts the daemon (`cross-agent daemon start`, or any
//! client's autostart) may itself hold descriptors without close-on-exec that its parent gave
//! it — `cross-agent daemon start 3>&1 | cat` hands it the pipe to `cat` as descriptor 3 — and
//! the daemon inherits them. Holding such a pipe keeps `cat` (and whatever waits on it) waiting
//! until the daemon exits, so a detached daemon closes every descriptor above stderr that came
//! to it without close-on-exec, before it opens anything of its own.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Where `setrlimit` refuses the hard limit itself (macOS reports an unlimited hard limit but
/// takes no soft limit above `OPEN_MAX`), the soft limit is raised this far instead.
const FALLBACK_SOFT_LIMIT: u64 = 10_240;

/// What [`raise_limit`] did, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitChange {
    /// The soft limit found at start (`None`: unlimited).
    pub before: Option<u64>,
    /// The soft limit now.
    pub after: Option<u64>,
    /// The hard limit (`None`: unlimited).
    pub hard: Option<u64>,
    /// Why a raise failed, when it did.
    pub failed: Option<String>,
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit (or as near as the system
/// allows). Never fails the start: a limit that cannot be raised is reported and served with.
pub fn raise_limit() -> LimitChange {
    let found = getrlimit(Resource::Nofile);
    let mut change = LimitChange {
        before: found.current,
        after: found.current,
        hard: found.maximum,
        failed: None,
    };
    let Some(current) = found.current else {
        return change;
    };
    let target = found.maximum.unwrap_or(FALLBACK_SOFT_LIMIT);
    if target <= current {
        return change;
    }
    let fallback = FALLBACK_SOFT_LIMIT.min(target);
    let attempts = [Some(target), (fallback != target).then_some(fallback)];
    for soft in attempts.into_iter().flatten() {
        if soft <= current {
            break;
        }
        match setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(soft),
                maximum: found.maximum,
            },
        ) {
            Ok(()) => {
                change.after = Some(soft);
                change.failed = None;
                return change;
            }
            Err(error) => change.failed = Some(error.to_string()),
        }
    }
    change
}

/// This process's soft `RLIMIT_NOFILE`; `None` when unlimited.
pub fn soft_limit() -> Option<u64> {
    getrlimit(Resource::Nofile).current
}

/// Closes every descriptor above stderr that this process holds without close-on-exec, and
/// returns their numbers. Call it first thing in a detached daemon.
///
/// Only descriptors without close-on-exec are closed: every descriptor Rust's standard library
/// (and so this program) opens has close-on-exec set, so those without it are exactly the ones
/// inherited across `exec` — nothing in this process owns them.
pub fn close_inherited() -> Vec<i32> {
    // Linux lists a process's descriptors in /proc/self/fd; macOS and the BSDs in /dev/fd.
    let listing = if cfg!(target_os = "linux") {
        "/proc/self/fd"
    } else {
        "/dev/fd"
    };
    // Collected first: the listing's own descriptor is open while it is read (and has
    // close-on-exec, so it would be skipped anyway; it is closed by the time of the loop).
    let open: Vec<i32> = match std::fs::read_dir(listing) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .filter(|fd| *fd > 2)
            .collect(),
        Err(_) => Vec::new(),
    };
    open.into_iter()
        .filter(|fd| close_if_inherited(*fd))
        .collect()
}

/// Closes `fd` when it is open without close-on-exec; whether it did.
#[allow(unsafe_code)]
fn close_if_inherited(fd: i32) -> bool {
    use rustix::io::{FdFlags, fcntl_getfd};
    // Closing a descriptor by number is `unsafe` in Rust's I/O-safety model, because code that
    // owns it would go on using a closed (or reused) number; no well-kept crate offers it
    // otherwise (`nix` and `close_fds` mark it `unsafe` too).
    // SAFETY: `fd` was just listed as open, and the flag check below leaves every descriptor
    // this process opened (they all carry close-on-exec) alone; one without the flag was
    // inherited across `exec`, so no object in this process owns it. Borrowing it for the
    // `fcntl` is sound for the same reason, and a number closed meanwhile only makes `fcntl`
    // fail with EBADF, which leaves it alone.
    let inherited = match fcntl_getfd(unsafe { rustix::fd::BorrowedFd::borrow_raw(fd) }) {
        Ok(flags) => !flags.contains(FdFlags::CLOEXEC),
        Err(_) => false,
    };
    if inherited {
        // SAFETY: see above; nothing in this process owns an inherited descriptor.
        unsafe { rustix::io::close(fd) };
    }
    inherited
}
