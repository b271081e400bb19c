//! The one error type of this crate: every message names the host, the file or the program
//! involved, and what to do.

use std::path::PathBuf;

/// What can go wrong with hosts and their file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The state directory's rules refused something (a link, another owner).
    #[error(transparent)]
    Home(#[from] cross_agent_home::Error),

    /// Reading or writing `hosts.toml` failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// `hosts.toml` is not what this build reads.
    #[error(
        "{path} is not a hosts file cross-agent can read: {problem}; fix or remove it (docs/remote.md)"
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the entry.
        problem: String,
    },

    /// A host name that is not allowed.
    #[error(
        "`{name}` is not a host name cross-agent accepts: {problem} (letters, digits, `.`, `_` \
         and `-`, starting with a letter or digit, at most 64)"
    )]
    BadName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        problem: &'static str,
    },

    /// An ssh destination that is not allowed.
    #[error("`{destination}` is not an ssh destination cross-agent passes to ssh: {problem}")]
    BadDestination {
        /// The destination given.
        destination: String,
        /// What is wrong with it.
        problem: &'static str,
    },

    /// `hosts add` of a name that is there already with another destination.
    #[error(
        "host `{name}` is already set up for `{existing}`; `cross-agent hosts remove {name}` first \
         to point it elsewhere"
    )]
    AlreadyThere {
        /// The name.
        name: String,
        /// Its destination now.
        existing: String,
    },

    /// `hosts remove` of a name that is not there.
    #[error("no host is named `{name}` (exact names; `cross-agent hosts list` shows them)")]
    NoSuchHost {
        /// The name given.
        name: String,
    },
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
