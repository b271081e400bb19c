//! The one error type of the store readers.
//!
//! Most trouble with the agents' files is not an error at all: a bad line or an unreadable file
//! becomes a [`crate::StoreWarning`] and the listing goes on. `StoreError` is for the few calls
//! that are about one file and cannot answer without it (opening a transcript to resume it, the
//! turns of one session), and every message names the path involved. It also carries the
//! refusals of name resolution ([`crate::resolve`]): an ambiguous or unproven name lists every
//! candidate, and a name that matches nothing lists similar titles.

use std::path::PathBuf;

use crate::model::Agent;
use crate::resolve::{Candidate, Scope, SimilarTitle};

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
    #[error("cannot read the SQLite database {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// The file is not in the shape this reader knows (e.g. a `summary.json` that is not JSON).
    #[error("{} is not a {what}: {source}", path.display())]
    Format {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A setting (an environment variable or an option) has a value that means nothing.
    #[error("{name}={value:?} is not valid: expected {expected}")]
    InvalidSetting {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
    /// A name two or more sessions answer to: refused rather than guessed.
    #[error(
        "{} {agent} sessions answer to the name {name:?}, so it is refused rather than guessed; \
         address the one you mean by its id (or rename the others):\n{}",
        candidates.len(),
        crate::resolve::candidate_lines(candidates)
    )]
    AmbiguousName {
        agent: Agent,
        name: String,
        candidates: Vec<Candidate>,
    },
    /// A name matched once, but by a lookup that stopped at a configured bound, so it cannot be
    /// shown to be unique.
    #[error(
        "the name {name:?} matched one {agent} session among the {reached} most recently active, \
         but the lookup stopped there ({bound_setting}; {total} sessions in all), so it cannot be \
         shown to be unique and is refused; address it by its id:\n{}",
        crate::resolve::candidate_lines(std::slice::from_ref(candidate.as_ref()))
    )]
    ScanBoundReached {
        agent: Agent,
        name: String,
        candidate: Box<Candidate>,
        reached: usize,
        total: usize,
        bound_setting: &'static str,
    },
    /// Neither an id nor an exact name matched.
    #[error(
        "no {agent} session has the id or the exact name {query:?} (scope {scope}){}{}",
        crate::resolve::reached_note(reached),
        crate::resolve::similar_lines(similar)
    )]
    NoSuchSession {
        agent: Agent,
        query: String,
        scope: Scope,
        /// Titles close to the query: shown, never chosen.
        similar: Vec<SimilarTitle>,
        /// `(reached, total, setting)` when a configured bound stopped the lookup.
        reached: Option<(usize, usize, &'static str)>,
    },
    /// The session cache could not be written (reading a bad one is only a warning).
    #[error("session cache {}: {message}", path.display())]
    Cache { path: PathBuf, message: String },
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
            | StoreError::Format { path, .. }
            | StoreError::Cache { path, .. } => Some(path),
            StoreError::InvalidSetting { .. }
            | StoreError::AmbiguousName { .. }
            | StoreError::ScanBoundReached { .. }
            | StoreError::NoSuchSession { .. } => None,
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
