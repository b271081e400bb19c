//! The one error type of the daemon crate.

use std::path::PathBuf;

/// Everything that stops the daemon from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The home, the pidfile: see the inner error.
    #[error(transparent)]
    Home(#[from] cross_agent_home::Error),

    /// The socket, a drain lock: see the inner error.
    #[error(transparent)]
    Ipc(#[from] cross_agent_ipc::Error),

    /// The store: see the inner error.
    #[error(transparent)]
    Hub(#[from] cross_agent_hub::Error),

    /// The log could not be opened.
    #[error("cannot open the daemon log in {dir}: {source}")]
    Log {
        /// `logs/`.
        dir: PathBuf,
        /// What went wrong.
        #[source]
        source: tracing_appender::rolling::InitError,
    },

    /// Signal handlers could not be installed.
    #[error("cannot install the daemon's signal handlers: {0}")]
    Signals(#[source] std::io::Error),

    /// The runtime could not be built.
    #[error("cannot start the daemon's async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

impl Error {
    /// When another daemon already holds this home: its pid (if written) and the pidfile.
    pub fn already_running(&self) -> Option<(Option<u32>, &std::path::Path)> {
        match self {
            Error::Home(cross_agent_home::Error::AlreadyRunning { pid, pidfile })
            | Error::Ipc(cross_agent_ipc::Error::Home(cross_agent_home::Error::AlreadyRunning {
                pid,
                pidfile,
            })) => Some((*pid, pidfile.as_path())),
            _ => None,
        }
    }
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
