//! The review crate's one error type: what a caller can act on, naming the session or path.

use std::path::PathBuf;

use cross_agent_stores::{Agent, StoreError};

pub type Result<T> = std::result::Result<T, ReviewError>;

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// No store holds a session with this id.
    #[error("no session {id} in any agent's store (looked in: {looked})")]
    SessionNotFound { id: String, looked: String },
    /// The session's agent has no transcript this build reads.
    #[error(
        "session {id} is a {agent} session, whose transcript this build cannot read yet; \
         review a Claude Code, Codex or Grok Build session"
    )]
    Unsupported { id: String, agent: Agent },
    /// The transcript is a symbolic link where a file should be.
    #[error(
        "{} is a symbolic link, not a transcript file; the review never follows links in an \
         agent's store — point the agent's store at the real folder, or remove the link",
        path.display()
    )]
    Symlink { path: PathBuf },
    #[error("reading {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("reading session {id}: {source}")]
    Store {
        id: String,
        #[source]
        source: StoreError,
    },
    /// `config.toml` (its `[review]` table) is unsafe or cannot be read.
    #[error("{}: {problem}. {fix}", path.display())]
    Settings {
        path: PathBuf,
        problem: String,
        fix: String,
    },
    /// A file in the home is a link or someone else's (the message names it and the fix).
    #[error(transparent)]
    Home(#[from] cross_agent_home::Error),
    /// The daemon, asked to send a correction, could not be reached or failed.
    #[error("asking the daemon to send the correction: {0}")]
    Daemon(#[source] Box<cross_agent_ipc::Error>),
}

impl ReviewError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> ReviewError {
        ReviewError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
