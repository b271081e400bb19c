//! The one error type of the provider pool's configuration: a file or setting that cannot be
//! used, named with the entry at fault and what to do. Asking a provider never returns this:
//! a provider that does not answer is a [`crate::Failure`], which the caller records.

use std::path::PathBuf;

/// Why the pool could not be configured.
#[derive(Debug, thiserror::Error)]
pub enum ProvidersError {
    /// A setting (`CROSS_AGENT_PROVIDERS`, `CROSS_AGENT_PROVIDER_TIMEOUT`, …) that means
    /// nothing; `value` is the offending entry, never a key (keys are never in settings).
    #[error("{name}: {value:?} is not valid: {why}")]
    InvalidSetting {
        name: &'static str,
        value: String,
        why: String,
    },
    /// `providers.toml` does not parse, or an entry in it is wrong.
    #[error("{}: {why}", path.display())]
    BadFile { path: PathBuf, why: String },
    /// `providers.toml` is not safe to read: writable by others, a link, someone else's.
    #[error("refusing {}: {problem}. {fix}", path.display())]
    Unsafe {
        path: PathBuf,
        problem: String,
        fix: String,
    },
    /// The home's own check refused the file (a link, another user's).
    #[error(transparent)]
    Home(#[from] cross_agent_home::Error),
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// This crate's result type.
pub type Result<T, E = ProvidersError> = std::result::Result<T, E>;
