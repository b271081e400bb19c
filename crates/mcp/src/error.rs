//! The one error type of this crate: what can stop the server itself. A failed *call* is never
//! one of these: it becomes a tool error the agent reads (see [`crate::link`]).

/// What stops `cross-agent mcp`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The async runtime could not be built.
    #[error("cannot start an async runtime: {0}")]
    Runtime(#[source] std::io::Error),

    /// The MCP session could not start (the client closed stdin, or sent something other than
    /// a handshake first).
    #[error("the MCP session did not start: {0}")]
    Start(#[source] Box<rmcp::service::ServerInitializeError>),

    /// The MCP session ended abnormally.
    #[error("the MCP session ended with an error: {0}")]
    Session(#[source] tokio::task::JoinError),

    /// Reading stdin or writing stdout failed.
    #[error("stdio failed: {0}")]
    Stdio(#[source] std::io::Error),
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
