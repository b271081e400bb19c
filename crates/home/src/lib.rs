//! The state directory, `CROSS_AGENT_HOME`: where it is and the rules that keep it this user's
//! alone (docs/architecture.md, "Crates and what each may depend on": below `ipc`, beside
//! `process`; it links no RPC).
//!
//! Every process that writes there — the daemon, the CLI, the MCP server, the shims, the
//! Telegram bot — must refuse an unsafe home *before* it creates anything in it, and most of
//! them have no business with the daemon's RPC, so this lives in a crate of its own.
//!
//! - [`home`]: where the state lives and the refusal rules; owner-only directories and files.
//! - [`safety`]: whether a home (and the socket in it) is this user's alone, checked before
//!   anything there is created, opened or written.
//! - [`pidfile`]: the `daemon.pid` lock that makes the daemon one per home.
//! - [`atomic`]: replacing a file whole, owner-only, through a temporary file and a rename.

pub mod atomic;
mod error;
pub mod home;
pub mod pidfile;
pub mod safety;

pub use error::{Error, Result};
pub use home::Home;
