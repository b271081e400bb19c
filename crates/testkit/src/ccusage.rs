//! `ccusage`, the best-known reader of the same usage files, run beside ours: the usage tests
//! compare its totals with ours on the same temporary stores. `scripts/install-agents` installs
//! the pinned version into `.tools/ccusage/`; missing, the helper says how to install it — a test
//! run without it fails, it never skips.
//!
//! Every run is offline (`--offline`: its bundled prices, no fetch), in UTC, with a clean
//! environment whose HOME and working folder are the test's own, so neither the developer's
//! stores nor a `ccusage.json` config of theirs is read.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::agents::workspace_root;

/// The pinned version `scripts/install-agents` installs.
pub const VERSION: &str = "20.0.24";

/// Overrides where the `ccusage` program is.
pub const OVERRIDE_VAR: &str = "CROSS_AGENT_TEST_CCUSAGE";

/// The `ccusage` program, checked to be the pinned version.
pub fn binary() -> Result<PathBuf> {
    let path = match std::env::var_os(OVERRIDE_VAR) {
        Some(path) => PathBuf::from(path),
        None => workspace_root().join(".tools/ccusage/node_modules/.bin/ccusage"),
    };
    if !path.exists() {
        bail!(
            "ccusage is not installed at {}: run scripts/install-agents (or set {OVERRIDE_VAR})",
            path.display()
        );
    }
    let out = Command::new(&path)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", path.display()))?;
    let version = String::from_utf8_lossy(&out.stdout);
    if !version.contains(VERSION) {
        bail!(
            "{} is {}, not the pinned {VERSION}: run scripts/install-agents",
            path.display(),
            version.trim()
        );
    }
    Ok(path)
}

/// Which of ccusage's readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `ccusage claude …` over `CLAUDE_CONFIG_DIR`.
    Claude,
    /// `ccusage codex …` over `CODEX_HOME`.
    Codex,
}

/// Runs `ccusage <source> session --json --offline -z UTC` over `store` (the Claude config
/// folder or the Codex home) and returns its JSON. `home` is the run's HOME and working folder.
pub fn sessions(source: Source, store: &Path, home: &Path) -> Result<Value> {
    let (name, var) = match source {
        Source::Claude => ("claude", "CLAUDE_CONFIG_DIR"),
        Source::Codex => ("codex", "CODEX_HOME"),
    };
    let bin = binary()?;
    let out = Command::new(&bin)
        .args([name, "session", "--json", "--offline", "-z", "UTC"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env(var, store)
        .env("NO_COLOR", "1")
        .current_dir(home)
        .output()
        .with_context(|| format!("running {}", bin.display()))?;
    if !out.status.success() {
        bail!(
            "ccusage {name} session failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "ccusage {name} session printed no JSON: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
