//! Finds the workspace's own `cross-agent` binary for tests in other packages, which cannot name
//! it through `CARGO_BIN_EXE_*`. `scripts/test` builds it once and exports
//! `CROSS_AGENT_TEST_BIN`; without that (a bare `cargo test -p …`) it is built here, once per test
//! process, so a test never runs a stale binary.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The path of the `cross-agent` binary, building it if `CROSS_AGENT_TEST_BIN` is not set.
pub fn cross_agent_bin() -> Result<PathBuf> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| locate().map_err(|error| format!("{error:#}")))
        .clone()
        .map_err(anyhow::Error::msg)
}

fn locate() -> Result<PathBuf> {
    if let Some(bin) = std::env::var_os("CROSS_AGENT_TEST_BIN") {
        let bin = PathBuf::from(bin);
        if bin.is_file() {
            return Ok(bin);
        }
        bail!("CROSS_AGENT_TEST_BIN points at {}, which is not a file", bin.display());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "build",
            "-p",
            "cross-agent",
            "--bin",
            "cross-agent",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo build -p cross-agent")?;
    if !output.status.success() {
        bail!("cargo build -p cross-agent failed");
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| message["target"]["name"] == "cross-agent")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .context("cargo did not name the cross-agent executable")
}
