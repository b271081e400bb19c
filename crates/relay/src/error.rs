//! The relay crate's one error enum.

use std::path::PathBuf;
use std::time::Duration;

/// What can go wrong hosting relays or sending through one.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// A file or directory of a relay could not be read or written.
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The relay endpoint could not listen on loopback.
    #[error("the relay endpoint cannot listen on 127.0.0.1: {0}")]
    Bind(#[source] std::io::Error),
    /// The relay's Claude Code could not be started.
    #[error("could not start the relay {relay} ({program}): {source}", program = program.display())]
    Spawn {
        relay: String,
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The relay took its send turn but Claude gave no receipt in time. The relay was stopped,
    /// so the message cannot go out later; whether it went out before is unknown.
    #[error(
        "relay {relay}: no receipt from Claude for send {send_id} within {:?}; the relay was stopped so it cannot send later",
        limit
    )]
    Timeout {
        relay: String,
        send_id: String,
        limit: Duration,
    },
    /// A receipt file exists but is not one.
    #[error("the receipt {} is not valid: {reason}", path.display())]
    BadReceipt { path: PathBuf, reason: String },
    /// Bad input from the caller.
    #[error("{0}")]
    Invalid(String),
    /// A bug: a task of the host failed.
    #[error("relay host: {0}")]
    Internal(String),
    /// The host is stopping.
    #[error("the relay host is shutting down")]
    ShuttingDown,
}

impl RelayError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        RelayError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
