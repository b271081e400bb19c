//! The other machines this daemon reaches over SSH (docs/remote.md; docs/architecture.md,
//! "Crates and what each may depend on": beside `mcp`, above `ipc`).
//!
//! Nothing of ours listens on a network port. For each host in `hosts.toml` the daemon keeps
//! one child `ssh -T -o BatchMode=yes <dest> cross-agent rpc --stdio`; on the far side that
//! command is an ordinary local client of the remote daemon, relaying the daemon RPC's frames
//! byte for byte. Over those pipes this side runs the same [`cross_agent_ipc::Client`] it uses
//! on its own socket, so a request for another machine is one call on its link.
//!
//! - [`file`]: `hosts.toml` — the names, their ssh destinations, read and written safely.
//! - [`link`]: one host's link: the ssh child, `hello`, pings, reconnecting with back-off.
//! - [`Links`]: every host's link, kept in step with `hosts.toml`, and their status.

mod error;
pub mod file;
pub mod link;
mod links;

pub use error::{Error, Result};
pub use links::{Links, LinksConfig};
