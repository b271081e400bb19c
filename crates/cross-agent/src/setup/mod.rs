//! What `cross-agent install` adds to each agent's configuration and how `uninstall` takes
//! exactly that out again. Every edit goes through a format-preserving editor
//! ([`json_config`], [`toml_config`]), so the person's comments, key order and layout survive,
//! and removal consults the backup taken before the first change so that nothing the person
//! had is removed.
//!
//! Claude Code's registration is written into `~/.claude.json` directly, the same entry
//! `claude mcp add -s user` writes, rather than by running that command: the CLI rewrites the
//! whole file in its own format, which would make neither a `--dry-run` diff nor a
//! byte-identical `uninstall` possible.
//!
//! Copilot in VS Code gets the same server in two files of each user-data directory: the
//! editor's `User/mcp.json` (`servers`) and the Agent Host's own
//! `User/globalStorage/agent-host-config.json` (`mcpServers`), which keeps the server in
//! sessions that outlive the window that registered it (docs/spec/cross-agent-mcp.md, Copilot).

pub mod files;
pub mod install;
pub mod journal;
pub mod json_config;
pub mod places;
pub mod plan;
pub mod preflight;
pub mod service;
pub mod toml_config;
pub mod user_edits;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{Value, json};

use self::json_config::JsonDoc;
use self::toml_config::TomlDoc;
use self::user_edits::{Dropped, Edit};

/// The name every agent knows the bridge by.
pub const SERVER_NAME: &str = "cross-agent";
/// Claude Code's server-level allow rule (docs/spec/cross-agent-mcp.md §3: one server name, no wildcard).
pub const ALLOW_RULE: &str = "mcp__cross-agent";
/// The Claude Code hook events the daemon uses, and the matcher of each (tool events match
/// every tool).
pub const HOOK_EVENTS: [(&str, Option<&str>); 6] = [
    ("SessionStart", None),
    ("UserPromptSubmit", None),
    ("PreToolUse", Some("*")),
    ("PostToolUse", Some("*")),
    ("Notification", None),
    ("Stop", None),
];
/// The three panel settings and the shim link each points at: the shim's own list, whose
/// names the binary answers to.
pub use cross_agent_shim::links::LINKS as SHIM_LINKS;
/// `--unattended`: the spec's two permission variables (docs/spec/cross-agent-mcp.md §3 "Unattended use").
pub const UNATTENDED_ENV: [(&str, &str); 2] = [
    ("CROSS_AGENT_CODEX_SANDBOX", "danger-full-access"),
    ("CROSS_AGENT_CLAUDE_PERMISSION_MODE", "bypassPermissions"),
];
/// The spec's warning, printed whenever `--unattended` is given.
pub const UNATTENDED_WARNING: &str = "WARNING: These two variables turn off the safety rails \
for an agent reached through the bridge. Claude edits files and runs commands without \
confirmation, and newly created Codex sessions run without a sandbox. Use this only for trusted \
local work. To revert, run `cross-agent install` again without --unattended; that restores the \
defaults (read-only / the agent's default permission mode). Grok has the same switch, and it is \
not part of the two: set CROSS_AGENT_GROK_PERMISSION_MODE yourself if you want it.";

/// VS Code's one setting that lets Copilot call tools without asking; it covers every tool,
/// not only cross-agent's (docs/spec/cross-agent-mcp.md, Copilot "Tool approvals").
pub const COPILOT_AUTO_APPROVE: &str = "chat.tools.global.autoApprove";
/// The spec's warning, printed whenever `--copilot-auto-approve` is given.
pub const COPILOT_AUTO_APPROVE_WARNING: &str = "WARNING: chat.tools.global.autoApprove applies \
to all tools; it is not a cross-agent-only permission. This includes file edits, terminal \
commands and other tools, as well as cross-agent. It also affects existing Manual-permissions \
Copilot Agent Host sessions. A workspace-only setting does not provide the same Agent Host \
behavior. Run Developer: Reload Window once for it to apply. Leave it unset to retain the \
existing approvals: delete the line from settings.json, or run `cross-agent uninstall`.";
/// The comment a VS Code settings file starts with when `install --copilot-auto-approve`
/// created it: without a backup it is what tells `uninstall` the setting is install's and not
/// one the person chose.
pub const CREATED_SETTINGS_MARK: &str = "// Made by `cross-agent install --copilot-auto-approve`; \
`cross-agent uninstall` takes it out again.";
/// Said whenever Copilot's files change: the host reads its configuration when it starts.
pub const COPILOT_RESTART: &str = "Copilot: quit VS Code fully and reopen it once. The Agent \
Host reads agent-host-config.json only when it starts; Reload Window keeps the same host \
running.";

/// What the registrations run: this binary's `mcp`, with its environment.
#[derive(Debug, Clone)]
pub struct Registration {
    pub command: PathBuf,
    pub env: BTreeMap<String, String>,
}

impl Registration {
    fn command_text(&self) -> String {
        self.command.to_string_lossy().into_owned()
    }

    fn env_value(&self) -> Value {
        Value::Object(
            self.env
                .iter()
                .map(|(key, value)| (key.clone(), Value::String(value.clone())))
                .collect(),
        )
    }

    /// Claude Code's `mcpServers` entry, as `claude mcp add -s user` writes it.
    pub fn claude_entries(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("type", Value::String("stdio".to_owned())),
            ("command", Value::String(self.command_text())),
            ("args", json!(["mcp"])),
            ("env", self.env_value()),
        ]
    }

    /// Codex's table: required (so `codex exec` waits for it), its tools approved (docs/spec/cross-agent-mcp.md §3),
    /// and an `env` table, since Codex passes an MCP server none of its own environment.
    pub fn codex_entries(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("command", Value::String(self.command_text())),
            ("args", json!(["mcp"])),
            ("required", Value::Bool(true)),
            (
                "default_tools_approval_mode",
                Value::String("approve".to_owned()),
            ),
            ("env", self.env_value()),
        ]
    }

    /// Grok's table (docs/spec/cross-agent-mcp.md §3 "Grok Build").
    pub fn grok_entries(&self) -> Vec<(&'static str, Value)> {
        let mut entries = vec![
            ("command", Value::String(self.command_text())),
            ("args", json!(["mcp"])),
        ];
        if !self.env.is_empty() {
            entries.push(("env", self.env_value()));
        }
        entries
    }

    /// Copilot's entry, the same in `mcp.json`'s `servers` and the Agent Host's
    /// `mcpServers` (docs/observed/copilot.md §6: VS Code's stdio server shape).
    pub fn copilot_entries(&self) -> Vec<(&'static str, Value)> {
        let mut entries = vec![
            ("type", Value::String("stdio".to_owned())),
            ("command", Value::String(self.command_text())),
            ("args", json!(["mcp"])),
        ];
        if !self.env.is_empty() {
            entries.push(("env", self.env_value()));
        }
        entries
    }

    /// The command a Claude Code hook runs for `event`.
    pub fn hook_command(&self, event: &str) -> String {
        format!(
            "{} hook {event}",
            cross_agent_process::shell_word(&self.command_text())
        )
    }
}

/// Whether a hook command is one `install --hooks` wrote: `<…/cross-agent> hook <Event>`, from
/// this binary or an earlier one.
pub fn is_our_hook(command: &str) -> bool {
    let mut words: Vec<&str> = command.split_whitespace().collect();
    let (Some(event), Some(verb)) = (words.pop(), words.pop()) else {
        return false;
    };
    let program = words.join(" ");
    let program = program.trim_matches('\'');
    verb == "hook"
        && HOOK_EVENTS.iter().any(|(name, _)| *name == event)
        && Path::new(program)
            .file_name()
            .is_some_and(|name| name == "cross-agent")
}

/// Which file a change is to: each kind has its own entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    ClaudeJson,
    ClaudeSettings,
    CodexConfig,
    GrokConfig,
    /// VS Code's user settings: the panel shims, and Copilot's auto-approval when asked.
    EditorSettings,
    /// VS Code's `User/mcp.json`.
    CopilotMcp,
    /// The VS Code Agent Host's `User/globalStorage/agent-host-config.json`.
    CopilotHostConfig,
}

impl FileKind {
    /// Where a JSON file of this kind keeps its servers (`None`: not a JSON server list).
    fn json_servers(self) -> Option<&'static str> {
        match self {
            FileKind::ClaudeJson | FileKind::CopilotHostConfig => Some("mcpServers"),
            FileKind::CopilotMcp => Some("servers"),
            FileKind::ClaudeSettings
            | FileKind::CodexConfig
            | FileKind::GrokConfig
            | FileKind::EditorSettings => None,
        }
    }
}

/// What `install` was asked to add to one file.
#[derive(Debug, Clone, Default)]
pub struct Wanted {
    /// Claude Code's settings.json: the allow rule.
    pub allow_rule: bool,
    /// Claude Code's settings.json: the hooks.
    pub hooks: bool,
    /// VS Code settings: the directory of the shim links.
    pub shim_dir: Option<PathBuf>,
    /// VS Code settings: [`COPILOT_AUTO_APPROVE`] (`--copilot-auto-approve`).
    pub copilot_auto_approve: bool,
}

/// The file's text after `install` (`before`: its text now, `None` when missing). Keys and
/// `env` variables the person added inside cross-agent's entry stay.
pub fn install_text(
    kind: FileKind,
    name: &str,
    before: Option<&str>,
    registration: &Registration,
    wanted: &Wanted,
) -> Result<String> {
    match kind {
        FileKind::ClaudeJson | FileKind::CopilotMcp | FileKind::CopilotHostConfig => {
            let doc = JsonDoc::parse(name, before)?;
            let servers = kind.json_servers().unwrap_or("mcpServers");
            let mut entries = if kind == FileKind::ClaudeJson {
                registration.claude_entries()
            } else {
                registration.copilot_entries()
            };
            match doc.entry(&[servers], SERVER_NAME) {
                Some(Value::Object(existing)) => {
                    keep_person_env(&mut entries, existing.get("env"));
                    for (key, value) in &entries {
                        doc.set_entry(&[servers, SERVER_NAME], key, value)?;
                    }
                }
                _ => {
                    let entry = Value::Object(
                        entries
                            .into_iter()
                            .map(|(key, value)| (key.to_owned(), value))
                            .collect(),
                    );
                    doc.set_entry(&[servers], SERVER_NAME, &entry)?;
                }
            }
            Ok(with_final_newline(before, doc.text()))
        }
        FileKind::ClaudeSettings => {
            let doc = JsonDoc::parse(name, before)?;
            if wanted.allow_rule {
                doc.add_to_array(&["permissions", "allow"], ALLOW_RULE)?;
            }
            if wanted.hooks {
                for (event, matcher) in HOOK_EVENTS {
                    doc.add_hook(event, matcher, &registration.hook_command(event))?;
                }
            }
            Ok(with_final_newline(before, doc.text()))
        }
        FileKind::CodexConfig | FileKind::GrokConfig => {
            let mut doc = TomlDoc::parse(name, before)?;
            let mut entries = if kind == FileKind::CodexConfig {
                registration.codex_entries()
            } else {
                registration.grok_entries()
            };
            let existing = doc.server(SERVER_NAME);
            keep_person_env(&mut entries, existing.as_ref().and_then(|e| e.get("env")));
            doc.set_server(SERVER_NAME, &entries)?;
            Ok(doc.text())
        }
        FileKind::EditorSettings => {
            let created = format!("{{\n  {CREATED_SETTINGS_MARK}\n}}\n");
            let start = match before {
                None if wanted.copilot_auto_approve => Some(created.as_str()),
                _ => before,
            };
            let doc = JsonDoc::parse(name, start)?;
            if let Some(dir) = &wanted.shim_dir {
                for (link, key) in SHIM_LINKS {
                    let target = dir.join(link).to_string_lossy().into_owned();
                    doc.set_entry(&[], key, &Value::String(target))?;
                }
            }
            if wanted.copilot_auto_approve {
                doc.set_entry(&[], COPILOT_AUTO_APPROVE, &Value::Bool(true))?;
            }
            Ok(with_final_newline(before, doc.text()))
        }
    }
}

/// Adds the variables the person put in the entry's `env` (`existing`) to the `env` install
/// writes: install owns only its own variables there.
fn keep_person_env(entries: &mut Vec<(&str, Value)>, existing: Option<&Value>) {
    let Some(theirs) = existing.and_then(Value::as_object) else {
        return;
    };
    let theirs: serde_json::Map<String, Value> = theirs
        .iter()
        .filter(|(name, _)| user_edits::install_env(name).is_none())
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if theirs.is_empty() {
        return;
    }
    match entries.iter_mut().find(|(key, _)| *key == "env") {
        Some((_, Value::Object(env))) => {
            for (name, value) in theirs {
                env.entry(name).or_insert(value);
            }
        }
        _ => entries.push(("env", Value::Object(theirs))),
    }
}

/// What `uninstall` makes of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Uninstalled {
    /// The file's text after it, or `None` when the file should go (cross-agent created it
    /// and nothing else is in it).
    pub text: Option<String>,
    /// What the person added or changed inside cross-agent's entries, which go with them.
    pub dropped: Vec<Dropped>,
}

/// What `uninstall` makes of a file. `backup` is the file before cross-agent first changed
/// it.
pub fn uninstall_text(
    kind: FileKind,
    name: &str,
    current: &str,
    backup: Option<&str>,
) -> Result<Uninstalled> {
    let mut dropped = Vec::new();
    let after = match kind {
        FileKind::ClaudeJson
        | FileKind::ClaudeSettings
        | FileKind::EditorSettings
        | FileKind::CopilotMcp
        | FileKind::CopilotHostConfig => {
            let doc = JsonDoc::parse(name, Some(current))?;
            let original = match backup {
                Some(text) => Some(JsonDoc::parse(name, Some(text))?.value()),
                None => None,
            };
            let original = original.as_ref();
            match kind {
                FileKind::ClaudeJson | FileKind::CopilotMcp | FileKind::CopilotHostConfig => {
                    let servers = kind.json_servers().unwrap_or("mcpServers");
                    if let Some(entry) = doc.entry(&[servers], SERVER_NAME) {
                        let at = format!("{servers}.{SERVER_NAME}");
                        let was = original
                            .and_then(|o| o.get(servers))
                            .and_then(|servers| servers.get(SERVER_NAME));
                        dropped = user_edits::in_server_entry(kind, &at, &entry, was);
                        if was.is_none() {
                            dropped.extend(
                                doc.comments_in_entry(&[servers], SERVER_NAME)
                                    .into_iter()
                                    .map(|text| Dropped {
                                        key: at.clone(),
                                        edit: Edit::Comment(text),
                                    }),
                            );
                        }
                    }
                    doc.remove_entry(&[servers], SERVER_NAME, original)?;
                    doc.prune_created(&[servers], original)?;
                }
                FileKind::ClaudeSettings => {
                    dropped = user_edits::in_hooks(&doc.value(), is_our_hook);
                    doc.remove_from_array(&["permissions", "allow"], ALLOW_RULE, original)?;
                    doc.prune_created(&["permissions", "allow"], original)?;
                    doc.remove_hooks(is_our_hook)?;
                    for (event, _) in HOOK_EVENTS {
                        doc.prune_created(&["hooks", event], original)?;
                    }
                }
                FileKind::EditorSettings | FileKind::CodexConfig | FileKind::GrokConfig => {
                    for (_, key) in SHIM_LINKS {
                        doc.remove_entry(&[], key, original)?;
                    }
                    take_out_auto_approve(&doc, original, current)?;
                }
            }
            if backup.is_none() && doc.is_empty() {
                return Ok(Uninstalled {
                    text: None,
                    dropped,
                });
            }
            doc.text()
        }
        FileKind::CodexConfig | FileKind::GrokConfig => {
            let mut doc = TomlDoc::parse(name, Some(current))?;
            let original = match backup {
                Some(text) => Some(TomlDoc::parse(name, Some(text))?),
                None => None,
            };
            if let Some(entry) = doc.server(SERVER_NAME) {
                let at = format!("mcp_servers.{SERVER_NAME}");
                let was = original.as_ref().and_then(|o| o.server(SERVER_NAME));
                dropped = user_edits::in_server_entry(kind, &at, &entry, was.as_ref());
                if was.is_none() {
                    dropped.extend(doc.server_comments(SERVER_NAME, &at));
                }
            }
            doc.remove_server(SERVER_NAME, original.as_ref())?;
            if backup.is_none() && doc.is_empty() {
                return Ok(Uninstalled {
                    text: None,
                    dropped,
                });
            }
            doc.text()
        }
    };
    // Only whitespace that cross-agent's own edit laid out can differ from the original:
    // give the original bytes back then.
    let text = match backup {
        Some(original)
            if after != original && without_whitespace(&after) == without_whitespace(original) =>
        {
            original.to_owned()
        }
        _ => after,
    };
    Ok(Uninstalled {
        text: Some(text),
        dropped,
    })
}

/// Takes [`COPILOT_AUTO_APPROVE`] out of VS Code's settings when `install
/// --copilot-auto-approve` is what put it there, and only then: it is a setting a person may
/// well have chosen themselves. With a backup (`original`, the file before cross-agent first
/// changed it) the backup's value is put back, or the key goes when the backup had none.
/// Without one the file is install's only when it carries [`CREATED_SETTINGS_MARK`].
fn take_out_auto_approve(doc: &JsonDoc, original: Option<&Value>, current: &str) -> Result<()> {
    if doc.entry(&[], COPILOT_AUTO_APPROVE) != Some(Value::Bool(true)) {
        return Ok(());
    }
    if original.is_some() || current.contains(CREATED_SETTINGS_MARK) {
        doc.remove_entry(&[], COPILOT_AUTO_APPROVE, original)?;
    }
    Ok(())
}

/// A file cross-agent creates ends with a newline; one that exists keeps how it ended.
fn with_final_newline(before: Option<&str>, mut text: String) -> String {
    let wants_newline = before.is_none_or(|b| b.trim().is_empty() || b.ends_with('\n'));
    if wants_newline && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn without_whitespace(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
