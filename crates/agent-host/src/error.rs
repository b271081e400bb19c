//! The crate's one error type. Each message names the socket, session or chat involved and what
//! happened, in words a user can act on; none ever holds the connection token.

use std::path::PathBuf;
use std::time::Duration;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong talking to an Agent Host.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nothing exists at the published socket path: the host is gone.
    #[error(
        "no agent host socket at {socket}: VS Code (or its agent host) is not running there any more"
    )]
    SocketMissing { socket: PathBuf },

    /// The socket path is a symbolic link or not a socket; it is not followed.
    #[error("refusing the agent host socket {socket}: it is {what}, not the host's own socket")]
    SocketRefused { socket: PathBuf, what: &'static str },

    /// Connecting to the socket failed (nobody listening, permissions).
    #[error("cannot connect to the agent host at {socket}: {source}")]
    Connect {
        socket: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The host refused the WebSocket upgrade, e.g. 403 for a wrong or stale token.
    #[error(
        "the agent host at {socket} refused the connection (HTTP {status}){hint}",
        hint = if *status == 403 { ": the connection token is wrong or stale; read it again from the host's endpoint entry" } else { "" }
    )]
    Refused { socket: PathBuf, status: u16 },

    /// The WebSocket upgrade failed otherwise.
    #[error("the WebSocket handshake with the agent host at {socket} failed: {detail}")]
    Handshake { socket: PathBuf, detail: String },

    /// No offered protocol version suits the host (`-32005`).
    #[error(
        "the agent host at {socket} speaks none of the protocol versions offered ({offered}); it supports {supported}: {message}",
        offered = offered.join(", "),
        supported = if supported.is_empty() { "no version it named".to_owned() } else { supported.join(", ") }
    )]
    UnsupportedVersion {
        socket: PathBuf,
        offered: Vec<String>,
        supported: Vec<String>,
        message: String,
    },

    /// The host answered a request with a JSON-RPC error.
    #[error("the agent host at {socket} answered {method} with error {code}: {message}")]
    Rpc {
        socket: PathBuf,
        method: &'static str,
        code: i32,
        message: String,
    },

    /// The host's answer did not have the expected shape.
    #[error("the agent host at {socket} answered {what} with something unexpected: {detail}")]
    Malformed {
        socket: PathBuf,
        what: String,
        detail: String,
    },

    /// The connection ended while waiting for something other than a turn's hand-over.
    #[error("the connection to the agent host at {socket} ended while {during}: {reason}")]
    ConnectionLost {
        socket: PathBuf,
        during: String,
        reason: String,
    },

    /// A request got no answer in time.
    #[error("the agent host at {socket} did not answer {during} within {after:?}")]
    Timeout {
        socket: PathBuf,
        during: String,
        after: Duration,
    },

    /// The session is not ready for a turn (still being created, or failed).
    #[error(
        "the Copilot session {session} is not ready for a message (its lifecycle is {lifecycle})"
    )]
    SessionNotReady { session: String, lifecycle: String },

    /// The session's snapshot names no default chat; it is never derived.
    #[error("the Copilot session {session} has no default chat to deliver to")]
    NoDefaultChat { session: String },

    /// The default chat is not among the session's chats.
    #[error("the default chat {chat} of the Copilot session {session} is not one of its chats")]
    ChatNotInSession { session: String, chat: String },

    /// The chat is running a turn already; a second one is not started.
    #[error("the Copilot chat {chat} is busy with turn {turn}; try again when it is idle")]
    ChatBusy { chat: String, turn: String },

    /// The chat does not take messages (`read-only` or `hidden`).
    #[error("the Copilot chat {chat} does not take messages (interactivity {interactivity})")]
    ChatNotInteractive { chat: String, interactivity: String },

    /// The host echoed the turn with a `rejectionReason`: it did not start. Never resend.
    #[error("the agent host refused the message for {chat}: {reason}")]
    Rejected { chat: String, reason: String },

    /// The turn was sent but neither accepted nor refused before the connection ended or the
    /// wait ran out. It may have started: never resend it.
    #[error(
        "unknown outcome: the message for {chat} (turn {turn_id}) was sent but the agent host neither accepted nor refused it ({why}); it may have started, so it must not be resent"
    )]
    UnknownOutcome {
        chat: String,
        turn_id: String,
        why: String,
    },

    /// The turn ended with `chat/error`.
    #[error("Copilot's turn {turn_id} in {chat} failed: {message}")]
    TurnFailed {
        chat: String,
        turn_id: String,
        message: String,
    },

    /// The turn ended with `chat/turnCancelled`.
    #[error("Copilot's turn {turn_id} in {chat} was cancelled before it answered")]
    TurnCancelled { chat: String, turn_id: String },

    /// The turn was accepted but its answer did not end in time, or the connection ended first.
    #[error("no answer from Copilot for turn {turn_id} in {chat}: {why}")]
    NoAnswer {
        chat: String,
        turn_id: String,
        why: String,
    },
}
