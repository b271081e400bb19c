//! The test bench: a scripted model endpoint (Anthropic Messages and OpenAI Responses, streaming)
//! and helpers that run the real Claude Code and Codex CLIs offline in a temporary HOME; a fake
//! VS Code Agent Host (`agent_host`) for the Copilot side; a real sshd on loopback (`sshd`)
//! standing for another machine.

pub mod agent_host;
pub mod agent_sdk;
pub mod agents;
pub mod binaries;
pub mod ccusage;
pub mod deliveries;
pub mod desktop;
pub mod endpoint;
pub mod foreign_stores;
pub mod leaks;
pub mod logs;
pub mod mcp_client;
pub mod panel;
pub mod sshd;
pub mod synthetic_stores;
pub mod telegram;

pub use endpoint::{
    Api, EndpointConfig, InputKind, ModelEndpoint, RecordedRequest, Reply, Rule, ScriptedUsage,
    ToolCall,
};
