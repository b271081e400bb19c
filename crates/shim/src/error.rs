//! The shim's one error type. Every error of the shim's own ends in fail-open: before the agent
//! starts, the real binary is exec'ed as-is; after, the shim stops intercepting and keeps passing
//! bytes. So these errors are logged and named, never shown on the extension's wire.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the state directory cannot be used: {0}")]
    Home(#[source] cross_agent_home::Error),
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no real {agent} binary: {detail}")]
    RealBinary { agent: &'static str, detail: String },
    #[error("{0}")]
    Usage(String),
    #[error("cannot encode the registration: {0}")]
    Encode(#[source] serde_json::Error),
}

impl Error {
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
