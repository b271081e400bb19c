//! `cross-agent mcp`: the MCP server an agent registers (`claude mcp add cross-agent --
//! cross-agent mcp`). It speaks MCP on stdin/stdout until the agent closes it; stdout carries
//! the protocol only, logs go to stderr.

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Args)]
pub struct McpArgs {}

impl McpArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        cross_agent_mcp::run()?;
        Ok(ExitCode::SUCCESS)
    }
}
