//! How the thin cross-agent processes (CLI subcommands, `cross-agent mcp`) reach the per-user
//! daemon, and how the daemon serves them, without linking the engine (docs/architecture.md,
//! "Crates and what each may depend on"). The state directory itself — where it is, its safety
//! rules, the pidfile lock — is `cross_agent_home`'s, below this crate; every path and check
//! here goes through it, so a client refuses an unsafe home before it creates anything there
//! (an autostart writes a log).
//!
//! - [`transport`]: the local socket (a Unix socket; Windows named pipes would be a sibling of
//!   it behind the same functions).
//! - [`frame`]: newline-delimited JSON with a size limit, shared by client and server.
//! - [`client`]: the request/response client with request ids, multiplexed on one connection.
//! - [`autostart`]: [`connect_or_start`], which starts the daemon when nothing answers.
//! - [`draining`]: the lock and record a replaced daemon keeps while it finishes its work.
//! - [`blocking`]: a small synchronous wrapper for CLI commands.
//! - [`oneshot`]: a runtime-free blocking client for a command's one request, which can also
//!   read an answer's trailer (`index_listing`).

pub mod autostart;
pub mod blocking;
pub mod client;
pub mod draining;
mod error;
pub mod frame;
pub mod oneshot;
pub mod process;
pub mod transport;

pub use autostart::{ConnectOptions, Connection, connect, connect_or_start};
pub use client::Client;
pub use error::{Error, Result};
