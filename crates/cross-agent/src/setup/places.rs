//! Where each agent keeps the files `install` edits, and whether the agent is installed: its
//! CLI on `PATH` or in its usual per-user place, or its configuration directory. Honours the
//! agents' own overrides (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `GROK_HOME`, `XDG_CONFIG_HOME`).

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
}

impl Places {
    pub fn from_env() -> Result<Places> {
        let home = std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                anyhow!("HOME is not set: cannot tell where the agents keep their settings")
            })?;
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let (claude_dir, claude_json) = match var("CLAUDE_CONFIG_DIR") {
            Some(dir) => (dir.clone(), dir.join(".claude.json")),
            None => (home.join(".claude"), home.join(".claude.json")),
        };
        let codex_dir = var("CODEX_HOME").unwrap_or_else(|| home.join(".codex"));
        let grok_dir = var("GROK_HOME").unwrap_or_else(|| home.join(".grok"));
        let editors = editor_user_dirs(&home, var("XDG_CONFIG_HOME"))
            .into_iter()
            .map(|(name, user)| Editor {
                name,
                settings: user.join("settings.json"),
                found: user.is_dir(),
            })
            .collect();
        Ok(Places {
            claude_settings: claude_dir.join("settings.json"),
            claude_json,
            claude_dir,
            codex_config: codex_dir.join("config.toml"),
            codex_dir,
            grok_config: grok_dir.join("config.toml"),
            grok_dir,
            editors,
            home,
        })
    }

    /// The agent's CLI: on `PATH`, else in its usual per-user place.
    pub fn cli(&self, agent: AgentName) -> Option<PathBuf> {
        if let Some(found) = find_on_path(agent.program()) {
            return Some(found);
        }
        let usual: &[&str] = match agent {
            AgentName::Claude => &[".claude/local/claude", ".local/bin/claude"],
            AgentName::Codex => &[".local/bin/codex"],
            AgentName::Grok => &[".grok/bin/grok", ".local/bin/grok"],
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
            }
    }
}

/// The three agents `install` registers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentName {
    Claude,
    Codex,
    Grok,
}

impl AgentName {
    pub const ALL: [AgentName; 3] = [AgentName::Claude, AgentName::Codex, AgentName::Grok];

    pub fn program(self) -> &'static str {
        match self {
            AgentName::Claude => "claude",
            AgentName::Codex => "codex",
            AgentName::Grok => "grok",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            AgentName::Claude => "Claude Code",
            AgentName::Codex => "Codex",
            AgentName::Grok => "Grok Build",
        }
    }
}

/// The user-data `User` folders of the VS Code family on this OS.
fn editor_user_dirs(home: &Path, xdg_config: Option<PathBuf>) -> Vec<(&'static str, PathBuf)> {
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
    .map(|(name, folder)| (name, base.join(folder).join("User")))
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
