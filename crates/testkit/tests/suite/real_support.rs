//! Shared setup for the tests that drive the real Claude Code and Codex CLIs: a scripted
//! endpoint, a temp HOME with a project folder, and readers for what the agents left on disk.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cross_agent_testkit::agents::{AgentHome, McpServer};
use cross_agent_testkit::endpoint::ModelEndpoint;
use serde_json::Value;

pub struct Bench {
    pub endpoint: ModelEndpoint,
    pub home: AgentHome,
    pub project: PathBuf,
}

impl Bench {
    pub fn new() -> Result<Self> {
        let endpoint = ModelEndpoint::start()?;
        let home = AgentHome::new()?;
        let project = home.project("proj")?;
        Ok(Self {
            endpoint,
            home,
            project,
        })
    }

    /// The MCP probe server registered as `name`, logging to a file under the HOME.
    pub fn probe(&self, name: &str) -> (McpServer, PathBuf) {
        let log = self.home.path().join(format!("{name}-calls.jsonl"));
        let server = McpServer::new(name, env!("CARGO_BIN_EXE_mcp-probe"))
            .env("MCP_PROBE_LOG", log.to_string_lossy());
        (server, log)
    }
}

/// Every JSON line of a JSONL file; a line that does not parse fails the test, naming it.
pub fn read_jsonl(path: &Path) -> Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(n, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("{}:{} is not JSON: {line}", path.display(), n + 1))
        })
        .collect()
}

/// The tool calls the probe logged (its `call` records, not the raw traffic).
pub fn probe_calls(log: &Path) -> Result<Vec<Value>> {
    Ok(read_jsonl(log)?
        .into_iter()
        .filter(|record| record.get("call").is_some())
        .collect())
}

/// All text anywhere inside a JSON value, for "does this request mention X" checks.
pub fn contains_text(value: &Value, needle: &str) -> bool {
    match value {
        Value::String(text) => text.contains(needle),
        Value::Array(items) => items.iter().any(|item| contains_text(item, needle)),
        Value::Object(map) => map.values().any(|item| contains_text(item, needle)),
        _ => false,
    }
}
