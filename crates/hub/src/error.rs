//! The one error type of the engine crate. Messages name the file involved.

use std::path::PathBuf;

/// Everything the engine can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// SQLite failed on the store.
    #[error("the cross-agent store {path} failed while trying to {action}: {source}")]
    Db {
        /// `hub.db`.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },

    /// The store was written by a newer cross-agent.
    #[error(
        "the cross-agent store {path} has schema version {found}, newer than the {known} this \
         build knows; it was written by a newer cross-agent. Run that version, or move the file \
         away to start afresh"
    )]
    SchemaTooNew {
        /// `hub.db`.
        path: PathBuf,
        /// The version found in `schema_migrations`.
        found: i64,
        /// The highest version this build has.
        known: i64,
    },

    /// Applying a migration failed.
    #[error(
        "cannot upgrade the cross-agent store {path} to schema version {version} ({name}): {source}"
    )]
    Migration {
        /// `hub.db`.
        path: PathBuf,
        /// The migration's version.
        version: i64,
        /// The migration's name.
        name: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },

    /// The store is damaged and another daemon still serves from it, so it is not moved aside.
    #[error(
        "the cross-agent store {path} is damaged ({why}); the daemon being replaced still serves \
         from it, so it was left in place: stop the daemon (`cross-agent daemon stop`) and start \
         it again, which moves the damaged store aside and creates a fresh one"
    )]
    Damaged {
        /// `hub.db`.
        path: PathBuf,
        /// What the integrity check found.
        why: String,
    },

    /// A damaged store could not be moved aside.
    #[error(
        "the cross-agent store {path} is damaged ({why}) and could not be moved aside to {to}: \
         {source}; move it (and its -wal and -shm files) away by hand, and start again"
    )]
    Quarantine {
        /// The file being moved.
        path: PathBuf,
        /// Where it was going.
        to: PathBuf,
        /// What the integrity check found.
        why: String,
        /// The rename's error.
        #[source]
        source: std::io::Error,
    },

    /// A record or payload could not be encoded or decoded as JSON.
    #[error("a delivery record in the cross-agent store does not read back: {0}")]
    Encode(#[source] serde_json::Error),
    /// The price table could not be read (the message names the file and the fix).
    #[error("{0}")]
    Usage(#[from] cross_agent_usage::Error),
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
