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
    /// A file of the review robot in the home (its state, its secret) that cannot be used as
    /// it is; `problem` says why and what to do.
    #[error("{}: {problem}", path.display())]
    State { path: PathBuf, problem: String },
    #[error("reading session {id}: {source}")]
    Store {
        id: String,
        #[source]
        source: StoreError,
    },
}

impl ReviewError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> ReviewError {
        ReviewError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
