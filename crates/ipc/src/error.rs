//! The one error type of this crate. Every message names the path, socket or pid involved and,
//! where there is one, what the person can do about it. The state directory's own errors are
//! `cross_agent_home`'s, carried whole in [`Error::Home`].

use std::path::PathBuf;
use std::time::Duration;

use cross_agent_protocol::rpc::ErrorCode;

/// Everything that can go wrong reaching the daemon.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The state directory, its socket or a lock in it: see the inner error.
    #[error(transparent)]
    Home(#[from] cross_agent_home::Error),

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

    /// The socket path does not fit in a `sockaddr_un`.
    #[error(
        "the socket path {path} is {len} bytes, longer than the {max} a Unix socket allows; \
         set CROSS_AGENT_HOME to a shorter directory"
    )]
    SocketPathTooLong {
        /// The socket path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The most the platform allows.
        max: usize,
    },

    /// Nothing listens on the socket (it is missing, or refuses connections).
    #[error("no cross-agent daemon is answering on {socket}")]
    NotRunning {
        /// The socket tried.
        socket: PathBuf,
    },

    /// Connecting failed for another reason (permissions, …).
    #[error("cannot connect to the cross-agent daemon at {socket}: {source}")]
    Connect {
        /// The socket tried.
        socket: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// Binding the daemon socket found something live already listening there.
    #[error(
        "{socket} is already served by another process; stop it (`cross-agent daemon stop`) \
         before starting another daemon on this home"
    )]
    SocketInUse {
        /// The socket path.
        socket: PathBuf,
    },

    /// The socket path is taken by something that is not a socket.
    #[error("{path} exists and is not a socket; move it out of the way and try again")]
    NotASocket {
        /// The path.
        path: PathBuf,
    },

    /// A frame exceeded the size limit (incoming: it was skipped; outgoing: it was not sent).
    #[error("a frame longer than {limit} bytes was refused")]
    FrameTooLarge {
        /// The limit in bytes.
        limit: usize,
    },

    /// A frame was not the JSON expected.
    #[error("malformed frame: {source}")]
    Malformed {
        /// What serde_json said.
        #[source]
        source: serde_json::Error,
    },

    /// A value could not be encoded as JSON (a bug, reported rather than panicking).
    #[error("cannot encode a frame: {source}")]
    Encode {
        /// What serde_json said.
        #[source]
        source: serde_json::Error,
    },

    /// Reading or writing the socket failed.
    #[error("the connection to the daemon at {socket} failed: {source}")]
    Transport {
        /// The socket.
        socket: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The connection closed with the request unanswered.
    #[error("the connection to the daemon at {socket} closed before it answered")]
    Closed {
        /// The socket.
        socket: PathBuf,
    },

    /// The daemon answered with an error.
    #[error("the daemon answered `{method}` with an error: {message} ({})", .code.as_str())]
    Rpc {
        /// The method called.
        method: &'static str,
        /// The daemon's error code.
        code: ErrorCode,
        /// The daemon's message.
        message: String,
    },

    /// The daemon speaks another protocol version than this build.
    #[error(
        "the running daemon (pid {daemon_pid}, cross-agent {daemon_version}) speaks protocol \
         {daemon}, but this cross-agent speaks protocol {client}; restart it with \
         `cross-agent daemon restart` so both come from the same build"
    )]
    ProtocolMismatch {
        /// This build's version.
        client: u32,
        /// The daemon's version.
        daemon: u32,
        /// The daemon's pid.
        daemon_pid: u32,
        /// The daemon's cross-agent version.
        daemon_version: String,
    },

    /// Something took longer than allowed.
    #[error("timed out after {waited:?} waiting for {what} on {socket}")]
    Timeout {
        /// What was awaited.
        what: &'static str,
        /// The socket.
        socket: PathBuf,
        /// How long was waited.
        waited: Duration,
    },

    /// The daemon program could not be started.
    #[error("cannot start the daemon program {bin}: {source}")]
    Spawn {
        /// The program.
        bin: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// An autostarted daemon never answered.
    #[error("the cross-agent daemon did not come up within {waited:?}: {detail}; see {log}")]
    DaemonDidNotStart {
        /// How long was waited.
        waited: Duration,
        /// The log to read.
        log: PathBuf,
        /// What was seen.
        detail: String,
    },

    /// An autostarted daemon exited before it answered: the reason it gave, at once.
    #[error(
        "the cross-agent daemon could not start: {reason} ({bin} exited with {status}; its output is in {log})"
    )]
    DaemonFailed {
        /// What the daemon said last (its error), or that it said nothing.
        reason: String,
        /// The program started.
        bin: PathBuf,
        /// How it exited.
        status: String,
        /// The console log holding its output.
        log: PathBuf,
    },

    /// A signal could not be sent.
    #[error("cannot signal the daemon (pid {pid}): {source}")]
    Signal {
        /// The pid.
        pid: u32,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The blocking wrapper could not build its runtime.
    #[error("cannot start an async runtime: {0}")]
    Runtime(#[source] std::io::Error),
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
