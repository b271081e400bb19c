//! The panel shims (docs/spec/cross-agent-mcp.md "IDE panel integration"): `cross-agent shim <claude|codex|grok>`
//! sits between an editor extension and the real agent binary, passes every byte through
//! unchanged both ways, and puts bridged turns into the conversations the panel shows. It never
//! contacts the daemon: it keeps a registration in `CROSS_AGENT_HOME/panels/` and answers the
//! daemon on its own socket (see `docs/architecture.md`, "Panel shims").
//!
//! - [`cli`]: the entry, decided from argv before anything heavy; [`links`] for the editor
//!   settings' one-path form.
//! - [`intercept`]: which calls are panel sessions; everything else is exec'ed to the real
//!   binary ([`real_binary`] finds it).
//! - [`runtime`]: the process around a panel session — pipes, socket, registration, fail-open.
//! - [`adapter`]: what every agent's wire adapter does — a state machine fed whole lines from
//!   either side and asked for injections, with no I/O of its own, so it is tested on recorded
//!   lines and reused by the one runtime that owns the pipes.
//! - [`claude`]: stream-json (`claudeCode.claudeProcessWrapper`, or the link as an SDK host's
//!   `pathToClaudeCodeExecutable`); [`json_head`] reads a line's `type` from its head.
//! - [`codex`]: `codex app-server` JSON-RPC (`chatgpt.cliExecutable`).
//! - [`grok`]: ACP over `grok agent … stdio` (`grok.cliPath`).

pub mod adapter;
pub mod agents;
pub mod claude;
pub mod cli;
pub mod codex;
mod error;
pub mod grok;
pub mod intercept;
pub mod json_head;
pub mod links;
pub mod log;
pub mod real_binary;
pub mod registration;
mod rpc;
pub mod runtime;

pub use error::{Error, Result};
