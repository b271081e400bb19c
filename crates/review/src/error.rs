//! The review crate's one error type: what a caller can act on, naming the session or path.

use std::path::PathBuf;

use cross_agent_stores::{Agent, StoreError};

pub type Result<T> = std::result::Result<T, ReviewError>;

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// No store holds a session with this id.
    #[error("no session {id} in any agent's store (looked in: {looked})")]
    SessionNotFound { id: String, looked: String },
    /// The session is listed, but where its transcript is cannot be told (a Copilot session
    /// whose default chat or SDK folder is unknown).
    #[error("{agent} session {id} has no transcript to review: {why}")]
    NoTranscript {
        id: String,
        agent: Agent,
        why: String,
    },
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
    /// The session's model family is not known, so no reviewer can be told to be of another.
    #[error(
        "session {id} ({agent}) {model}, whose model family this build does not know; the \
         reviewer must be of another family, so none is chosen by guessing and nothing was asked"
    )]
    UnknownFamily {
        id: String,
        agent: Agent,
        /// "records model NAME" or "records no model".
        model: String,
    },
    /// `--reviewer NAME` names no provider of the pool.
    #[error("no provider named {name:?} is configured (configured: {configured})")]
    UnknownProvider { name: String, configured: String },
    /// `--reviewer NAME` names a provider of the session's own family.
    #[error(
        "provider {name} is of the {family} family, the session's own; a review needs a model \
         of another family"
    )]
    SameFamily { name: String, family: String },
    /// A review id that is not one (`rv_` and letters, digits, `-`, `_`).
    #[error("{id:?} is not a review id (they look like rv_0199…; see `cross-agent review list`)")]
    BadId { id: String },
    /// No kept report has this id.
    #[error("no review {id} is kept in {} (see `cross-agent review list`)", dir.display())]
    ReviewNotFound { id: String, dir: PathBuf },
    /// A kept report that does not read as one.
    #[error("{} is not a review report: {why}", path.display())]
    BadReport { path: PathBuf, why: String },
    /// The home refused a path (a link, another user's, a mode it cannot fix).
    #[error(transparent)]
    Home(#[from] cross_agent_home::Error),
    /// `config.toml` (its `[review]` table) is unsafe or cannot be read.
    #[error("{}: {problem}. {fix}", path.display())]
    Settings {
        path: PathBuf,
        problem: String,
        fix: String,
    },
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
