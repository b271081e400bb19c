//! The one error type of the store readers.
//!
//! Most trouble with the agents' files is not an error at all: a bad line or an unreadable file
//! becomes a [`crate::StoreWarning`] and the listing goes on. `StoreError` is for the few calls
//! that are about one file and cannot answer without it (opening a transcript to resume it, the
//! turns of one session), and every message names the path involved. It also carries the
//! refusals of name resolution ([`crate::resolve`]): an ambiguous or unproven name lists every
//! candidate, and a name that matches nothing lists similar titles.

use std::path::PathBuf;


/// An operation on one store file that could not be done.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file or folder could not be opened, read or listed.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A compressed rollout could not be decoded.
    #[error("cannot decompress {}: {source}", path.display())]
    Zstd {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An editor state database could not be opened or queried.
    #[error("cannot read the SQLite database {}: {message}", path.display())]
    Sqlite { path: PathBuf, message: String },
    /// The file is not in the shape this reader knows (e.g. a `summary.json` that is not JSON).
    #[error("{} is not a {what}: {message}", path.display())]
    Format {
        path: PathBuf,
        what: &'static str,
        message: String,
    },
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }

    /// The path the error is about, when it is about one file.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            StoreError::Io { path, .. }
            | StoreError::Zstd { path, .. }
            | StoreError::Sqlite { path, .. }
            | StoreError::Format { path, .. } => Some(path),
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
