//! The one error type of the handoff library; every message names the session, path or
//! program involved.

use std::path::PathBuf;

/// A handoff step that could not be done.
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    /// No agent's store has a session with this id.
    #[error(
        "no session {id:?} in Claude Code's, Codex's, Grok's, Cursor's or Antigravity's store \
         (looked in {looked})"
    )]
    SessionNotFound { id: String, looked: String },
    /// The session's store could not be read.
    #[error("cannot read session {id}: {source}")]
    Store {
        id: String,
        #[source]
        source: cross_agent_stores::StoreError,
    },
    /// A file or folder of the handoff could not be written or read.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A name the handoff is about to write is a symbolic link, or not the kind of thing it
    /// writes there (a folder where `HANDOFF.md` goes): nothing is written.
    #[error("{} is {what}; {fix}", path.display())]
    Unsafe {
        path: PathBuf,
        what: String,
        fix: String,
    },
    /// A destination that is not `chat:ID`, `app:NAME` or `cli:NAME`, or one not installed.
    #[error("{dest:?} is not a destination: {why}")]
    BadDestination { dest: String, why: String },
    /// The session records no working directory, so there is nowhere to put the brief.
    #[error("session {id} records no working directory; hand it to a folder: handoff {id} PATH")]
    NoWorkingDirectory { id: String },
    /// A launch needs a display and there is none: the script can still be run by hand.
    #[error(
        "no DISPLAY or WAYLAND_DISPLAY, so no terminal can be opened; run the launcher by hand: \
         sh {}",
        script.display()
    )]
    NoDisplay { script: PathBuf },
    /// No terminal emulator was found on PATH.
    #[error("no terminal emulator found on PATH (tried {tried}); run the launcher by hand: sh {}", script.display())]
    NoTerminal { script: PathBuf, tried: String },
    /// A program could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// A `HANDOFF.md` without the receipt markers.
    #[error("{} has no receipt markers ({begin} … {end}); is it a handoff brief?", path.display())]
    NoReceiptBlock {
        path: PathBuf,
        begin: &'static str,
        end: &'static str,
    },
    /// The provider pool's configuration cannot be used.
    #[error(transparent)]
    Providers(#[from] cross_agent_providers::ProvidersError),
    /// A setting with a value that means nothing.
    #[error("{name}={value:?} is not valid: expected {expected}")]
    InvalidSetting {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
}

pub type Result<T, E = HandoffError> = std::result::Result<T, E>;

impl HandoffError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        HandoffError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
