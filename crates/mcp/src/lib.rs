//! The MCP server users register in each agent (`cross-agent mcp`). It gathers who is calling,
//! forwards each tool call to the daemon and renders the answer; it holds no business logic.
//! Filled in by the messaging issue.
