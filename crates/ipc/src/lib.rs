//! How the thin cross-agent processes (CLI subcommands, `cross-agent mcp`, the shims) reach the
//! per-user daemon, without linking the engine.
//!
//! - [`home`]: where the state lives (`CROSS_AGENT_HOME`) and the rules that keep it owner-only.
//!   It lives here, not in the engine, because every client must refuse an unsafe home *before*
//!   it creates anything there (an autostart writes a log), and clients may not link `hub`.
//! - [`transport`]: the local socket (a Unix socket; Windows named pipes would be a sibling of
//!   it behind the same functions).
//! - [`frame`]: newline-delimited JSON with a size limit, shared by client and server.
//! - [`client`]: the request/response client with request ids, multiplexed on one connection.
//! - [`autostart`]: [`connect_or_start`], which starts the daemon when nothing answers.
//! - [`pidfile`]: the `daemon.pid` lock that makes the daemon one per home.
//! - [`draining`]: the lock and record a replaced daemon keeps while it finishes its work.
//! - [`blocking`]: a small synchronous wrapper for CLI commands.
//! - [`oneshot`]: a runtime-free blocking client for a command's one request, which can also
//!   read an answer's trailer (`index_listing`).
//! - [`safety`]: whether a home (and the socket in it) is this user's alone, checked before
//!   anything there is created, opened or written.

pub mod autostart;
pub mod blocking;
pub mod client;
pub mod draining;
mod error;
pub mod frame;
pub mod home;
pub mod oneshot;
pub mod pidfile;
pub mod process;
pub mod safety;
pub mod transport;

pub use autostart::{ConnectOptions, Connection, connect, connect_or_start};
pub use client::Client;
pub use error::{Error, Result};
pub use home::Home;
