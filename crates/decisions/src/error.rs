//! The one error type of the decisions library. The writer never returns it to the program
//! whose decision it records (a lost log line must not fail a send); queries and the CLI do.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file operation on the log failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A record could not be turned into JSON (a non-string map key in `details`, say).
    #[error("cannot encode a {kind} decision as JSON: {source}")]
    Encode {
        kind: String,
        #[source]
        source: serde_json::Error,
    },
    /// A `--since` / `--until` value that is neither a duration nor an RFC 3339 time.
    #[error(
        "{text:?} is not a time: give a duration back from now (90m, 24h, 2d, 1w) or an RFC 3339 \
         time (2026-05-01T12:00:00Z)"
    )]
    BadTime {
        text: String,
        /// What humantime found wrong with it as a duration, when it looked like one.
        #[source]
        source: Option<humantime::DurationError>,
    },
    /// A field path that is empty or has an empty segment (`details..guard`).
    #[error("{text:?} is not a field: name one (kind, guard) or a dotted path (details.guard)")]
    BadField { text: String },
    /// A `--where` without `=`.
    #[error("{text:?} is not a condition: write FIELD=VALUE (guard=hop_budget)")]
    BadCondition { text: String },
}

impl Error {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Error {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
