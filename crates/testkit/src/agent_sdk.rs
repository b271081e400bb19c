//! The official Claude Agent SDK for TypeScript (`@anthropic-ai/claude-agent-sdk`), the library
//! the Claude Code VS Code extension and other SDK hosts are built on, as a real client of the
//! panel shim. `scripts/install-agents` installs the pinned version into `.tools/agent-sdk/`
//! (without its bundled Claude Code: the tests hand it the pinned CLI); a host script imports
//! [`entry`] and runs under `node`. Missing, the helpers say how to install it: a test run
//! without it fails, it never skips.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::agents::workspace_root;

/// The pinned version `scripts/install-agents` installs.
pub const VERSION: &str = "0.3.328";

/// Overrides where the SDK package is (its folder, holding `package.json` and `sdk.mjs`).
pub const OVERRIDE_VAR: &str = "CROSS_AGENT_TEST_AGENT_SDK";

/// The SDK's package folder, checked to hold the pinned version.
pub fn package_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os(OVERRIDE_VAR) {
        Some(dir) => PathBuf::from(dir),
        None => {
            workspace_root().join(".tools/agent-sdk/node_modules/@anthropic-ai/claude-agent-sdk")
        }
    };
    let manifest = dir.join("package.json");
    let text = std::fs::read_to_string(&manifest).with_context(|| {
        format!(
            "the Claude Agent SDK is not installed at {}: run scripts/install-agents (or set \
             {OVERRIDE_VAR})",
            dir.display()
        )
    })?;
    let package: Value =
        serde_json::from_str(&text).with_context(|| format!("reading {}", manifest.display()))?;
    if package["version"] != VERSION {
        bail!(
            "{} is version {}, not the pinned {VERSION}: run scripts/install-agents",
            dir.display(),
            package["version"]
        );
    }
    Ok(dir)
}

/// The module a host script imports (`query()` and the rest): the package's `sdk.mjs`.
pub fn entry() -> Result<PathBuf> {
    Ok(package_dir()?.join("sdk.mjs"))
}
