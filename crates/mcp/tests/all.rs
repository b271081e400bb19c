//! The `cross-agent-mcp` test binary: the server over real stdio (both protocol eras), the
//! caller-context rules, the Python MCP SDK as a client, and the real Claude Code and Codex
//! calling the server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
