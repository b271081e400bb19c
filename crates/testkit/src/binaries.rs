//! Finds the workspace's own binaries (`cross-agent`, the `mcp-probe` test server) for tests in
//! other packages, which cannot name them through `CARGO_BIN_EXE_*`. `scripts/test` builds
//! them once and exports `CROSS_AGENT_TEST_BIN` / `CROSS_AGENT_TEST_MCP_PROBE`; without that (a
//! bare `cargo test -p …`) each is built here, once per test process, so a test never runs a
//! stale binary.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use parking_lot::Mutex;
use serde_json::Value;

/// The path of the `cross-agent` binary.
pub fn cross_agent_bin() -> Result<PathBuf> {
    workspace_bin("cross-agent", "cross-agent", "CROSS_AGENT_TEST_BIN")
}

/// The path of the `mcp-probe` test MCP server (testkit's own binary).
pub fn mcp_probe_bin() -> Result<PathBuf> {
    workspace_bin(
        "cross-agent-testkit",
        "mcp-probe",
        "CROSS_AGENT_TEST_MCP_PROBE",
    )
}

/// The path of `fake-grok`, the ACP agent standing in for `grok agent stdio`.
pub fn fake_grok_bin() -> Result<PathBuf> {
    workspace_bin(
        "cross-agent-testkit",
        "fake-grok",
        "CROSS_AGENT_TEST_FAKE_GROK",
    )
}

/// The path of `stdio-recorder` (testkit's own binary), which records what an agent behind it
/// received and sent.
pub fn stdio_recorder_bin() -> Result<PathBuf> {
    workspace_bin(
        "cross-agent-testkit",
        "stdio-recorder",
        "CROSS_AGENT_TEST_STDIO_RECORDER",
    )
}

/// The path of the `agent-standin` CLI agent stand-in (testkit's own binary).
pub fn agent_standin_bin() -> Result<PathBuf> {
    workspace_bin(
        "cross-agent-testkit",
        "agent-standin",
        "CROSS_AGENT_TEST_AGENT_STANDIN",
    )
}

/// The path of `x11-recorder`, the stand-in editor window that records the keys and pastes it
/// receives (testkit's own binary).
pub fn x11_recorder_bin() -> Result<PathBuf> {
    workspace_bin(
        "cross-agent-testkit",
        "x11-recorder",
        "CROSS_AGENT_TEST_X11_RECORDER",
    )
}

/// A binary of a workspace package: from `override_var` when set, else built by cargo once per
/// process.
fn workspace_bin(package: &str, bin: &str, override_var: &str) -> Result<PathBuf> {
    static FOUND: Mutex<BTreeMap<String, Result<PathBuf, String>>> = Mutex::new(BTreeMap::new());
    let mut found = FOUND.lock();
    found
        .entry(bin.to_owned())
        .or_insert_with(|| locate(package, bin, override_var).map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(anyhow::Error::msg)
}

fn locate(package: &str, bin: &str, override_var: &str) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(override_var) {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        bail!(
            "{override_var} points at {}, which is not a file",
            path.display()
        );
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["build", "-p", package, "--bin", bin])
        .arg("--message-format=json-render-diagnostics")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running cargo build -p {package} --bin {bin}"))?;
    if !output.status.success() {
        bail!("cargo build -p {package} --bin {bin} failed");
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| message["target"]["name"] == bin)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .with_context(|| format!("cargo did not name the {bin} executable"))
}
