//! The crate's one error type, and the warning a listing carries for a file it could not read
//! (the rest is still read).

use std::fmt;
use std::path::PathBuf;

/// What went wrong, naming the file, folder or display involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is a symbolic link, and links are never followed here; open the real file or folder instead of the link"
    )]
    Link { path: PathBuf },
    #[error("{path} is larger than {limit} bytes, more than an editor writes there; not read")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{path} is not what the editor writes there: {reason}")]
    Malformed { path: PathBuf, reason: String },
    #[error("the git repository at {path} cannot be read: {message}")]
    Git { path: PathBuf, message: String },
    /// `control`'s X11 backend failed; its message names the display.
    #[error("the X display cannot be asked for its windows: {0}")]
    X11(#[from] cross_agent_control::ControlError),
}

pub type Result<T> = std::result::Result<T, Error>;

/// A file or repository that was passed over, and why: said once on stderr (and in `--json`),
/// while everything else is listed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    pub message: String,
}

impl From<Error> for Warning {
    fn from(error: Error) -> Self {
        Warning {
            message: error.to_string(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
