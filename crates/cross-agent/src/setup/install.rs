//! The plans behind `cross-agent install` and `uninstall`: which files of which agents change
//! and how, worked out without writing anything. The command prints a plan's diff (`--dry-run`)
//! or applies it; the desktop app shows the same diff before its Apply button. Nothing here
//! prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::ValueEnum;
use serde_json::{Value, json};

use super::places::{AgentName, Places};
use super::plan::{self, Plan};
use super::{FileKind, Registration, SHIM_LINKS, Wanted};

/// What `--agents` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InstallTarget {
    Claude,
    Codex,
    Grok,
    /// GitHub Copilot in VS Code and Insiders (the Agent Host): `User/mcp.json` and
    /// `User/globalStorage/agent-host-config.json`.
    Copilot,
    /// The VS Code family's user settings (the panel shims; implies --panels).
    Vscode,
}

/// What an install adds: `install`'s flags.
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// Only these; `None`: every agent found.
    pub agents: Option<Vec<InstallTarget>>,
    /// The panel shims in the VS Code family's user settings.
    pub panels: bool,
    /// The Claude Code hooks.
    pub hooks: bool,
    /// The spec's permission variables.
    pub unattended: bool,
    /// VS Code's `chat.tools.global.autoApprove`.
    pub copilot_auto_approve: bool,
    /// Where the shim links go; `None`: [`default_shim_dir`].
    pub shim_dir: Option<PathBuf>,
}

/// A plan with what the person should know about it.
#[derive(Debug)]
pub struct Planned {
    pub plan: Plan,
    /// One row per agent: `agent`, `found`, `cli`, `selected` (and Copilot's `user_data`), as
    /// `install --json` prints them; empty for an uninstall.
    pub agents: Vec<Value>,
    pub warnings: Vec<String>,
    /// What to do once the files are written.
    pub notes: Vec<String>,
}

/// This binary, as the registrations name it.
pub fn this_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding this binary's path")?;
    Ok(exe.canonicalize().unwrap_or(exe))
}

/// Where shim links go by default: a per-user bin directory, never inside
/// `CROSS_AGENT_HOME` (which refuses links).
pub fn default_shim_dir(places: &Places) -> PathBuf {
    places.home.join(".local/bin")
}

/// The install plan for `command` (the `cross-agent` binary the registrations run).
pub fn plan_install(places: &Places, command: &Path, options: &InstallOptions) -> Result<Planned> {
    let mut env = BTreeMap::new();
    if let Some(home) =
        std::env::var_os(cross_agent_protocol::settings::HOME).filter(|home| !home.is_empty())
    {
        env.insert(
            cross_agent_protocol::settings::HOME.to_owned(),
            home.to_string_lossy().into_owned(),
        );
    }
    if options.unattended {
        for (key, value) in super::UNATTENDED_ENV {
            env.insert(key.to_owned(), value.to_owned());
        }
    }
    let registration = Registration {
        command: command.to_owned(),
        env,
    };
    let named = |target| {
        options
            .agents
            .as_ref()
            .is_some_and(|list| list.contains(&target))
    };
    let mut agents = Vec::new();
    let mut warnings = Vec::new();
    if options.unattended {
        warnings.push(super::UNATTENDED_WARNING.to_owned());
    }
    // VS Code's settings.json of each editor with what install adds to it: the panel
    // shims and Copilot's auto-approval go into one change of the file.
    let mut editor_settings: Vec<(&'static str, PathBuf, Wanted)> = Vec::new();
    let mut plan = Plan {
        home: places.home.clone(),
        ..Plan::default()
    };
    for agent in AgentName::ALL {
        let target = match agent {
            AgentName::Claude => InstallTarget::Claude,
            AgentName::Codex => InstallTarget::Codex,
            AgentName::Grok => InstallTarget::Grok,
            AgentName::Copilot => InstallTarget::Copilot,
        };
        let found = places.agent_found(agent);
        let selected = match &options.agents {
            Some(_) => named(target),
            None => found,
        };
        let mut row = json!({
            "agent": agent.program(),
            "found": found,
            "cli": places.cli(agent),
            "selected": selected,
        });
        if agent == AgentName::Copilot {
            row["user_data"] = json!(
                places
                    .copilot
                    .iter()
                    .filter(|place| place.found)
                    .map(|place| &place.user_data)
                    .collect::<Vec<_>>()
            );
        }
        agents.push(row);
        if !selected {
            continue;
        }
        let home = &places.home;
        match agent {
            AgentName::Claude => {
                plan.install_file(
                    home,
                    &places.claude_json,
                    FileKind::ClaudeJson,
                    agent.title(),
                    &registration,
                    &Wanted::default(),
                )?;
                let wanted = Wanted {
                    allow_rule: true,
                    hooks: options.hooks,
                    ..Wanted::default()
                };
                plan.install_file(
                    home,
                    &places.claude_settings,
                    FileKind::ClaudeSettings,
                    agent.title(),
                    &registration,
                    &wanted,
                )?;
            }
            AgentName::Codex => plan.install_file(
                home,
                &places.codex_config,
                FileKind::CodexConfig,
                agent.title(),
                &registration,
                &Wanted::default(),
            )?,
            AgentName::Grok => plan.install_file(
                home,
                &places.grok_config,
                FileKind::GrokConfig,
                agent.title(),
                &registration,
                &Wanted::default(),
            )?,
            AgentName::Copilot => {
                for place in places.copilot_targets() {
                    for (path, kind) in [
                        (&place.mcp_json, FileKind::CopilotMcp),
                        (&place.host_config, FileKind::CopilotHostConfig),
                    ] {
                        plan.install_file(
                            home,
                            path,
                            kind,
                            &place.label(),
                            &registration,
                            &Wanted::default(),
                        )?;
                    }
                    if options.copilot_auto_approve {
                        editor_settings.push((
                            place.editor,
                            place.settings.clone(),
                            Wanted {
                                copilot_auto_approve: true,
                                ..Wanted::default()
                            },
                        ));
                    }
                }
            }
        }
    }
    let copilot_selected = agents
        .iter()
        .any(|a| a["agent"] == "copilot" && a["selected"] == Value::Bool(true));
    if options.copilot_auto_approve {
        warnings.push(if copilot_selected {
            super::COPILOT_AUTO_APPROVE_WARNING.to_owned()
        } else {
            format!(
                "--copilot-auto-approve: Copilot is not being set up, so {} was not set",
                super::COPILOT_AUTO_APPROVE
            )
        });
    }
    if !agents.iter().any(|a| a["selected"] == Value::Bool(true)) {
        warnings.push(format!(
            "no agent found (looked for claude, codex and grok on PATH and in their \
             usual places, for ~/.claude, ~/.codex, ~/.grok, and for VS Code's user \
             data ({})); name one with --agents to set it up anyway",
            places
                .copilot
                .iter()
                .map(|place| place.user_data.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let claude_selected = agents
        .first()
        .is_some_and(|a| a["selected"] == Value::Bool(true));
    if options.hooks && !claude_selected {
        warnings
            .push("--hooks: Claude Code is not being set up, so no hooks were added".to_owned());
    }
    if options.panels || named(InstallTarget::Vscode) {
        let dir = options
            .shim_dir
            .clone()
            .unwrap_or_else(|| default_shim_dir(places));
        for (link, _) in SHIM_LINKS {
            plan.links.push(plan::shim_link(&dir, link, command)?);
        }
        let editors: Vec<_> = places.editors.iter().filter(|e| e.found).collect();
        if editors.is_empty() {
            warnings.push(format!(
                "--panels: no VS Code, Insiders, VSCodium or Cursor user settings found (looked for {}); the shim links were made, the settings were not written",
                places.editors.iter().map(|e| e.settings.display().to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        for editor in editors {
            match editor_settings
                .iter_mut()
                .find(|(_, path, _)| *path == editor.settings)
            {
                Some((_, _, wanted)) => wanted.shim_dir = Some(dir.clone()),
                None => editor_settings.push((
                    editor.name,
                    editor.settings.clone(),
                    Wanted {
                        shim_dir: Some(dir.clone()),
                        ..Wanted::default()
                    },
                )),
            }
        }
    }
    for (name, path, wanted) in &editor_settings {
        plan.install_file(
            &places.home,
            path,
            FileKind::EditorSettings,
            name,
            &registration,
            wanted,
        )?;
    }
    let notes = restart_notes(&plan);
    Ok(Planned {
        plan,
        agents,
        warnings,
        notes,
    })
}

/// The uninstall plan: every file install may have changed, and the shim links in `shim_dir`
/// and wherever an editor's settings point them.
pub fn plan_uninstall(places: &Places, shim_dir: Option<&Path>) -> Result<Planned> {
    let home = &places.home;
    let mut plan = Plan {
        home: places.home.clone(),
        uninstall: true,
        ..Plan::default()
    };
    plan.uninstall_file(
        home,
        &places.claude_json,
        FileKind::ClaudeJson,
        AgentName::Claude.title(),
    )?;
    plan.uninstall_file(
        home,
        &places.claude_settings,
        FileKind::ClaudeSettings,
        AgentName::Claude.title(),
    )?;
    plan.uninstall_file(
        home,
        &places.codex_config,
        FileKind::CodexConfig,
        AgentName::Codex.title(),
    )?;
    plan.uninstall_file(
        home,
        &places.grok_config,
        FileKind::GrokConfig,
        AgentName::Grok.title(),
    )?;
    for place in &places.copilot {
        plan.uninstall_file(home, &place.mcp_json, FileKind::CopilotMcp, &place.label())?;
        plan.uninstall_file(
            home,
            &place.host_config,
            FileKind::CopilotHostConfig,
            &place.label(),
        )?;
    }
    let mut shim_dirs = vec![
        shim_dir
            .map(Path::to_owned)
            .unwrap_or_else(|| default_shim_dir(places)),
    ];
    for editor in &places.editors {
        shim_dirs.extend(linked_shim_dirs(&editor.settings));
        plan.uninstall_file(
            home,
            &editor.settings,
            FileKind::EditorSettings,
            editor.name,
        )?;
    }
    shim_dirs.sort();
    shim_dirs.dedup();
    for dir in &shim_dirs {
        for (link, _) in SHIM_LINKS {
            plan.links.extend(plan::shim_link_to_remove(dir, link));
        }
    }
    let notes = restart_notes(&plan);
    Ok(Planned {
        plan,
        agents: Vec::new(),
        warnings: Vec::new(),
        notes,
    })
}

/// What to do once the files are written: Copilot's Agent Host reads its servers only when it
/// starts.
fn restart_notes(plan: &Plan) -> Vec<String> {
    let copilot_changes = plan
        .changes
        .iter()
        .any(|change| change.label.starts_with("Copilot") && change.changes_anything());
    if copilot_changes {
        vec![super::COPILOT_RESTART.to_owned()]
    } else {
        Vec::new()
    }
}

/// The directories an editor's settings point the shims at.
fn linked_shim_dirs(settings: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(settings) else {
        return Vec::new();
    };
    let Ok(doc) = super::json_config::JsonDoc::parse("settings", Some(&text)) else {
        return Vec::new();
    };
    SHIM_LINKS
        .iter()
        .filter_map(|(_, key)| doc.entry(&[], key))
        .filter_map(|value| Some(Path::new(value.as_str()?).parent()?.to_owned()))
        .collect()
}
