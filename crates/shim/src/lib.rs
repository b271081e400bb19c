//! The panel shims (spec 004 "IDE panel integration"): `cross-agent shim <claude|codex|grok>`
//! sits between an editor extension and the real agent binary, passes every byte through
//! unchanged both ways, and puts bridged turns into the conversations the panel shows.
//!
//! - [`adapter`]: what every agent's wire adapter does — a state machine fed whole lines from
//!   either side and asked for injections, with no I/O of its own, so it is tested on recorded
//!   lines and reused by the one runtime that owns the pipes.
//! - [`claude`]: stream-json (`claudeCode.claudeProcessWrapper`).
//! - [`codex`]: `codex app-server` JSON-RPC (`chatgpt.cliExecutable`).
//! - [`grok`]: ACP over `grok agent … stdio` (`grok.cliPath`).

pub mod adapter;
pub mod claude;
pub mod codex;
pub mod grok;
mod rpc;
