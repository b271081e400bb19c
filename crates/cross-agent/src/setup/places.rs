//! Where each agent keeps the files `install` edits, and whether the agent is installed: its
//! CLI on `PATH` or in its usual per-user place, or its configuration directory. Honours the
//! agents' own overrides (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `GROK_HOME`, `XDG_CONFIG_HOME`).
//! Copilot has no CLI here: it is the VS Code Agent Host, found by its user-data directory
//! (docs/observed/copilot.md §2.2), resolved by the same rule the session listing uses
//! (`cross_agent_stores::copilot::vscode_user_data`: `VSCODE_PORTABLE`, `VSCODE_APPDATA`,
//! `XDG_CONFIG_HOME`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};

/// One VS Code–family editor's user settings.
#[derive(Debug, Clone)]
pub struct Editor {
    /// "VS Code", "VS Code Insiders", "VSCodium", "Cursor".
    pub name: &'static str,
    /// `<user data>/User/settings.json`.
    pub settings: PathBuf,
    /// Whether its `User` folder exists (the editor has been run).
    pub found: bool,
}

/// One VS Code user-data directory whose Agent Host runs Copilot, and the files `install`
/// edits in it (docs/observed/copilot.md §2.2 and §6).
#[derive(Debug, Clone)]
pub struct CopilotPlace {
    /// "VS Code (portable)", "VS Code" or "VS Code Insiders".
    pub editor: &'static str,
    /// `<user data>`: `~/.config/Code`, `~/Library/Application Support/Code - Insiders`, ….
    pub user_data: PathBuf,
    /// `<user data>/User/mcp.json`: the editor's user MCP servers (`servers`).
    pub mcp_json: PathBuf,
    /// `<user data>/User/globalStorage/agent-host-config.json`: the host's own servers
    /// (`mcpServers`), read when the host starts.
    pub host_config: PathBuf,
    /// `<user data>/User/settings.json`, where `chat.tools.global.autoApprove` lives.
    pub settings: PathBuf,
    /// Whether the user-data directory exists (the editor has been run).
    pub found: bool,
}

impl CopilotPlace {
    /// What a change to one of its files is for, as `install` and `uninstall` print it.
    pub fn label(&self) -> String {
        format!("Copilot ({})", self.editor)
    }
}

/// Every file and program `install`, `uninstall` and `doctor` look at.
#[derive(Debug, Clone)]
pub struct Places {
    pub home: PathBuf,
    /// `~/.claude.json`: Claude Code's user-level `mcpServers`.
    pub claude_json: PathBuf,
    /// `~/.claude/settings.json`: permissions and hooks.
    pub claude_settings: PathBuf,
    pub claude_dir: PathBuf,
    pub codex_config: PathBuf,
    pub codex_dir: PathBuf,
    pub grok_config: PathBuf,
    pub grok_dir: PathBuf,
    pub editors: Vec<Editor>,
    /// A portable VS Code's (when `VSCODE_PORTABLE` is set), then Stable's and Insiders'.
    pub copilot: Vec<CopilotPlace>,
}

impl Places {
    /// From this process's environment.
    pub fn from_env() -> Result<Places> {
        Places::from_vars(&|name| std::env::var_os(name))
    }

    /// From the variables `env` answers (`HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, …), so a
    /// caller — the desktop app's tests — can point them at a temporary home without changing
    /// the process's environment. `PATH` is still the process's (the agents' CLIs).
    pub fn from_vars(env: &dyn Fn(&str) -> Option<OsString>) -> Result<Places> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = var("HOME").ok_or_else(|| {
            anyhow!("HOME is not set: cannot tell where the agents keep their settings")
        })?;
        let (claude_dir, claude_json) = match var("CLAUDE_CONFIG_DIR") {
            Some(dir) => (dir.clone(), dir.join(".claude.json")),
            None => (home.join(".claude"), home.join(".claude.json")),
        };
        let codex_dir = var("CODEX_HOME").unwrap_or_else(|| home.join(".codex"));
        let grok_dir = var("GROK_HOME").unwrap_or_else(|| home.join(".grok"));
        let data_dirs = editor_data_dirs(&home, var("XDG_CONFIG_HOME"));
        let editors = data_dirs
            .iter()
            .map(|(name, data)| Editor {
                name,
                settings: data.join("User/settings.json"),
                found: data.join("User").is_dir(),
            })
            .collect();
        let copilot = copilot_places(&home, env);
        Ok(Places {
            claude_settings: claude_dir.join("settings.json"),
            claude_json,
            claude_dir,
            codex_config: codex_dir.join("config.toml"),
            codex_dir,
            grok_config: grok_dir.join("config.toml"),
            grok_dir,
            editors,
            copilot,
            home,
        })
    }

    /// The user-data directories to set Copilot up in: each one that exists, or the first
    /// (a portable VS Code's, else Stable's) when none does (Copilot named in `--agents` is set
    /// up even when not found).
    pub fn copilot_targets(&self) -> Vec<&CopilotPlace> {
        let found: Vec<_> = self.copilot.iter().filter(|place| place.found).collect();
        if found.is_empty() {
            return self.copilot.iter().take(1).collect();
        }
        found
    }

    /// The agent's CLI: on `PATH`, else in its usual per-user place.
    pub fn cli(&self, agent: AgentName) -> Option<PathBuf> {
        // Copilot is reached through the editor's Agent Host, not a CLI of its own (the
        // standalone Copilot CLI is outside the spec).
        if agent == AgentName::Copilot {
            return None;
        }
        if let Some(found) = find_on_path(agent.program()) {
            return Some(found);
        }
        let usual: &[&str] = match agent {
            AgentName::Claude => &[".claude/local/claude", ".local/bin/claude"],
            AgentName::Codex => &[".local/bin/codex"],
            AgentName::Grok => &[".grok/bin/grok", ".local/bin/grok"],
            AgentName::Copilot => &[],
        };
        usual
            .iter()
            .map(|relative| self.home.join(relative))
            .find(|path| is_executable(path))
    }

    /// Whether the agent is installed: its CLI, or its configuration directory.
    pub fn agent_found(&self, agent: AgentName) -> bool {
        self.cli(agent).is_some()
            || match agent {
                AgentName::Claude => self.claude_dir.is_dir() || self.claude_json.is_file(),
                AgentName::Codex => self.codex_dir.is_dir(),
                AgentName::Grok => self.grok_dir.is_dir(),
                AgentName::Copilot => self.copilot.iter().any(|place| place.found),
            }
    }
}

/// The agents `install` registers with. Setup's own list: the protocol's `Agent` names the
/// agents the bridge talks to, and grows on its own schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentName {
    Claude,
    Codex,
    Grok,
    /// GitHub Copilot in VS Code (the Agent Host).
    Copilot,
}

impl AgentName {
    pub const ALL: [AgentName; 4] = [
        AgentName::Claude,
        AgentName::Codex,
        AgentName::Grok,
        AgentName::Copilot,
    ];

    pub fn program(self) -> &'static str {
        match self {
            AgentName::Claude => "claude",
            AgentName::Codex => "codex",
            AgentName::Grok => "grok",
            AgentName::Copilot => "copilot",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            AgentName::Claude => "Claude Code",
            AgentName::Codex => "Codex",
            AgentName::Grok => "Grok Build",
            AgentName::Copilot => "Copilot",
        }
    }
}

/// The user-data folders whose Agent Host runs Copilot, by the listing's own rule, and the
/// files `install` edits in each.
fn copilot_places(home: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<CopilotPlace> {
    cross_agent_stores::copilot::vscode_user_data(
        cross_agent_stores::copilot::Os::current(),
        Some(home),
        &env,
    )
    .into_iter()
    .map(|place| CopilotPlace {
        editor: place.editor,
        mcp_json: place.path.join("User/mcp.json"),
        host_config: place.path.join("User/globalStorage/agent-host-config.json"),
        settings: place.path.join("User/settings.json"),
        found: place.path.is_dir(),
        user_data: place.path,
    })
    .collect()
}

/// The user-data folders of the VS Code family on this OS (`--user-data-dir`,
/// `VSCODE_PORTABLE` and `VSCODE_APPDATA` aside).
fn editor_data_dirs(home: &Path, xdg_config: Option<PathBuf>) -> Vec<(&'static str, PathBuf)> {
    let base = if cfg!(target_os = "macos") {
        home.join("Library/Application Support")
    } else {
        xdg_config.unwrap_or_else(|| home.join(".config"))
    };
    [
        ("VS Code", "Code"),
        ("VS Code Insiders", "Code - Insiders"),
        ("VSCodium", "VSCodium"),
        ("Cursor", "Cursor"),
    ]
    .into_iter()
    .map(|(name, folder)| (name, base.join(folder)))
    .collect()
}

/// The first executable file named `program` in the folders of `PATH`.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    which::which_global(program).ok()
}

pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}
