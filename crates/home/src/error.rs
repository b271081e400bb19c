//! The one error type of this crate. Every message names the path or pid involved and, where
//! there is one, what the person can do about it.

use std::path::PathBuf;

/// Everything that can go wrong finding, checking or writing the state directory.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Neither `CROSS_AGENT_HOME` nor `HOME` is set.
    #[error(
        "cannot tell where cross-agent keeps its state: neither CROSS_AGENT_HOME nor HOME is set"
    )]
    NoHome,

    /// `CROSS_AGENT_HOME` points somewhere cross-agent must not make owner-only.
    #[error(
        "refusing CROSS_AGENT_HOME={path}: {reason}; cross-agent makes its state directory \
         owner-only and would change the permissions of files that are not its own. Point \
         CROSS_AGENT_HOME at a directory of its own, such as ~/.cross-agent"
    )]
    HomeRefused {
        /// The path as given (or defaulted).
        path: PathBuf,
        /// Which rule refused it.
        reason: String,
    },

    /// The home, something in it or a directory above it is not safe to use: another user's,
    /// writable by others, or a symbolic link. Nothing was created or changed.
    #[error(
        "unsafe state directory: {path} {problem}; nothing was created, changed or sent. {fix}"
    )]
    HomeUnsafe {
        /// The offending path.
        path: PathBuf,
        /// What was found there (owner, mode, link target).
        problem: String,
        /// What to do about it.
        fix: String,
    },

    /// The daemon socket is not this user's own: not a byte is written to it.
    #[error(
        "refusing to talk to the daemon socket {socket}: {problem}; nothing was sent. Fix: {fix}"
    )]
    SocketUnsafe {
        /// The socket path.
        socket: PathBuf,
        /// What was found there.
        problem: String,
        /// What to do about it.
        fix: String,
    },

    /// A file or directory in the home could not be made owner-only.
    #[error(
        "cannot make {path} owner-only ({detail}); cross-agent will not keep session ids, \
         working directories and message summaries where other users could read them. Put \
         CROSS_AGENT_HOME on a filesystem that supports chmod"
    )]
    NotPrivate {
        /// The file or directory.
        path: PathBuf,
        /// What chmod said, or the mode it left.
        detail: String,
    },

    /// A filesystem operation failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done ("create", "read", "open", …).
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The pidfile lock is held by another daemon.
    #[error(
        "a cross-agent daemon is already running for this home ({}); it holds {pidfile}",
        describe_pid(*.pid)
    )]
    AlreadyRunning {
        /// The holder's pid, when the pidfile says.
        pid: Option<u32>,
        /// The pidfile.
        pidfile: PathBuf,
    },
}

fn describe_pid(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("pid {pid}"),
        None => "its pid is not written yet".to_owned(),
    }
}

impl Error {
    /// An [`Error::Io`] for `action` on `path`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
