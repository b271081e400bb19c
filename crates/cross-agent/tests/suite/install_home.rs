//! The person `install` is tried on: a temporary HOME holding the agents' configuration as a
//! person has it (comments, other servers, their own hooks and allow rules, a JSONC settings
//! file without a final newline), the binary run with that HOME, and a byte-for-byte picture
//! of every file and link under it. Shared by the install test files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(super) const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");

/// The binary as the registrations name it (resolved, as `install` does).
pub(super) fn bin() -> PathBuf {
    Path::new(BIN).canonicalize().unwrap()
}

/// A person's HOME with the agents' configuration already in it.
pub(super) struct Person {
    dir: tempfile::TempDir,
}

pub(super) const CLAUDE_JSON: &str = r#"{
  "numStartups": 12,
  "theme": "dark",
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {}
    }
  },
  "projects": {
    "/home/me/work": {
      "allowedTools": []
    }
  }
}
"#;

pub(super) const CLAUDE_SETTINGS: &str = r#"{
  // My own settings: keep these comments.
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(git status)", // read-only git is fine
      "Read"
    ],
    "deny": []
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          { "type": "command", "command": "notify-send 'Claude is done'" }
        ]
      }
    ]
  }
}
"#;

pub(super) const CODEX_TOML: &str = r#"# Codex, my way.
model = "gpt-5-codex"   # the default model
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-server"
args = ["--port", "0"]

# A profile for quick questions.
[profiles.quick]
model = "gpt-5-mini"
"#;

pub(super) const GROK_TOML: &str = "[ui]\ntheme = \"light\"\n";

/// VS Code's JSONC: comments, a trailing comma, tabs and no final newline.
pub(super) const VSCODE_SETTINGS: &str =
    "{\n\t// editor\n\t\"editor.fontSize\": 14,\n\t\"files.autoSave\": \"afterDelay\",\n}";

impl Person {
    pub(super) fn empty() -> Person {
        Person {
            dir: tempfile::Builder::new()
                .prefix("cross-agent-install-")
                .tempdir()
                .unwrap(),
        }
    }

    pub(super) fn with_configs() -> Person {
        let person = Person::empty();
        person.write(".claude.json", CLAUDE_JSON);
        person.write(".claude/settings.json", CLAUDE_SETTINGS);
        person.write(".codex/config.toml", CODEX_TOML);
        person.write(".grok/config.toml", GROK_TOML);
        person.write(".config/Code/User/settings.json", VSCODE_SETTINGS);
        person
    }

    pub(super) fn home(&self) -> &Path {
        self.dir.path()
    }

    pub(super) fn path(&self, relative: &str) -> PathBuf {
        self.home().join(relative)
    }

    pub(super) fn write(&self, relative: &str, text: &str) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub(super) fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap()
    }

    /// The binary with this HOME and a PATH without any agent CLI.
    pub(super) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", "/usr/bin:/bin")
            .env("CROSS_AGENT_LOG", "error");
        command
    }

    pub(super) fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    pub(super) fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "cross-agent {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Every file and link under HOME with its bytes or target: a tree "hash" that shows
    /// exactly what changed.
    pub(super) fn tree(&self) -> BTreeMap<String, String> {
        let mut tree = BTreeMap::new();
        walk(self.home(), self.home(), &mut tree);
        tree
    }
}

fn walk(root: &Path, dir: &Path, tree: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let name = path.strip_prefix(root).unwrap().display().to_string();
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            tree.insert(
                name,
                format!("-> {}", std::fs::read_link(&path).unwrap().display()),
            );
        } else if kind.is_dir() {
            walk(root, &path, tree);
        } else {
            let bytes = std::fs::read(&path).unwrap();
            tree.insert(name, String::from_utf8_lossy(&bytes).into_owned());
        }
    }
}

pub(super) const EVERYTHING: &[&str] = &[
    "install",
    "--agents",
    "claude,codex,grok,vscode",
    "--panels",
    "--hooks",
];
