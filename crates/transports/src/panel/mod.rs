//! The panel transport (docs/spec/cross-agent-mcp.md "IDE panel integration"): a message goes into a conversation
//! an editor panel holds, through the shim wedged between the extension and the agent, so the
//! person watching the panel sees it. The shims register in `CROSS_AGENT_HOME/panels/`; the
//! daemon reads that folder when it resolves a target or a route back.
//!
//! - [`registry`]: reading and checking the registrations, removing dead shims' files.
//! - [`window`]: the caller's window, its own panel, the tab an unaddressed send goes to.
//! - [`client`]: one request on a shim's socket and the events it answers with.

pub mod client;
pub mod registry;
pub mod window;

#[cfg(test)]
mod tests;
