//! The `CROSS_AGENT_*` settings that shape a headless turn. They are read from the *caller's*
//! registration (the thin process forwards them with each call), never from the daemon's own
//! environment: each registration guards its own side (docs/spec/cross-agent-mcp.md §7).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cross_agent_protocol::bridge::Agent;
use cross_agent_protocol::settings as var;

/// The sandbox of a new Codex session when `CROSS_AGENT_CODEX_SANDBOX` is unset.
pub const DEFAULT_CODEX_SANDBOX: &str = "read-only";

/// Whether a boolean setting is on: unset or blank is off, `0` / `false` / `no` / `off` (any
/// case) are off, anything else is on (docs/spec/cross-agent-mcp.md §7).
pub fn flag(settings: &BTreeMap<String, String>, name: &str) -> bool {
    settings.get(name).is_some_and(|value| {
        let value = value.trim();
        !(value.is_empty()
            || ["0", "false", "no", "off"]
                .iter()
                .any(|off| value.eq_ignore_ascii_case(off)))
    })
}

/// A setting's value, when set and not blank.
pub fn value<'a>(settings: &'a BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    settings
        .get(name)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
}

/// The settings of one turn, read once from the caller's registration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnSettings {
    /// `CROSS_AGENT_{CLAUDE,CODEX,GROK}_BIN`.
    pub claude_bin: Option<String>,
    pub codex_bin: Option<String>,
    pub grok_bin: Option<String>,
    /// `CROSS_AGENT_{CLAUDE,CODEX,GROK}_MODEL`.
    pub claude_model: Option<String>,
    pub codex_model: Option<String>,
    pub grok_model: Option<String>,
    /// `CROSS_AGENT_CODEX_SANDBOX` (new Codex sessions only).
    pub codex_sandbox: Option<String>,
    /// `CROSS_AGENT_{CLAUDE,GROK}_PERMISSION_MODE`.
    pub claude_permission_mode: Option<String>,
    pub grok_permission_mode: Option<String>,
    /// `CROSS_AGENT_DISABLE_HEADLESS`.
    pub disable_headless: bool,
}

impl TurnSettings {
    /// Reads the settings from a registration's `CROSS_AGENT_*` variables.
    pub fn from_settings(settings: &BTreeMap<String, String>) -> TurnSettings {
        let get = |name: &str| value(settings, name).map(str::to_owned);
        TurnSettings {
            claude_bin: get(var::CLAUDE_BIN),
            codex_bin: get(var::CODEX_BIN),
            grok_bin: get(var::GROK_BIN),
            claude_model: get(var::CLAUDE_MODEL),
            codex_model: get(var::CODEX_MODEL),
            grok_model: get(var::GROK_MODEL),
            codex_sandbox: get(var::CODEX_SANDBOX),
            claude_permission_mode: get(var::CLAUDE_PERMISSION_MODE),
            grok_permission_mode: get(var::GROK_PERMISSION_MODE),
            disable_headless: flag(settings, var::DISABLE_HEADLESS),
        }
    }

    /// The configured binary of `agent`, if any.
    pub fn binary(&self, agent: Agent) -> Option<&str> {
        match agent {
            Agent::Claude => self.claude_bin.as_deref(),
            Agent::Codex => self.codex_bin.as_deref(),
            Agent::Grok => self.grok_bin.as_deref(),
            Agent::Copilot => None,
        }
    }

    /// The forced model of `agent`, if any.
    pub fn model(&self, agent: Agent) -> Option<&str> {
        match agent {
            Agent::Claude => self.claude_model.as_deref(),
            Agent::Codex => self.codex_model.as_deref(),
            Agent::Grok => self.grok_model.as_deref(),
            Agent::Copilot => None,
        }
    }
}

/// The binary to run for `agent`: the configured one, else the agent's name found on the
/// child's `PATH`; Grok also falls back to `~/.grok/bin/grok`, since an editor started from the
/// Dock does not read a shell profile (docs/spec/cross-agent-mcp.md §7). Returns the bare name when nothing is
/// found, so the spawn error names what was looked for.
pub fn resolve_binary(
    agent: Agent,
    settings: &TurnSettings,
    child_env: &BTreeMap<String, String>,
) -> PathBuf {
    if let Some(configured) = settings.binary(agent) {
        return PathBuf::from(configured);
    }
    let name = agent.as_str();
    if let Some(found) = child_env
        .get("PATH")
        .and_then(|path| which::which_in_global(name, Some(path)).ok()?.next())
    {
        return found;
    }
    if agent == Agent::Grok
        && let Some(home) = child_env.get("HOME")
    {
        let fallback = Path::new(home).join(".grok/bin/grok");
        if fallback.is_file() {
            return fallback;
        }
    }
    PathBuf::from(name)
}
