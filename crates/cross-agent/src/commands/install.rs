//! `cross-agent install` and `cross-agent uninstall`: register `cross-agent mcp` with every
//! agent found (Claude Code, Codex, Grok Build, Copilot in VS Code Stable and Insiders),
//! optionally the panel shims in the VS Code family's user settings (`--panels`), the Claude
//! Code hooks (`--hooks`) and VS Code's global tool auto-approval (`--copilot-auto-approve`),
//! and take exactly that out again. `--dry-run` prints the unified diff of every change and
//! writes nothing. The edits themselves are in [`crate::setup`].

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use crate::display::escape_cell;
use crate::setup::places::{AgentName, Places};
use crate::setup::plan::{self, Plan};
use crate::setup::preflight;
use crate::setup::{self, FileKind, Registration, SHIM_LINKS, Wanted};

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

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Print the unified diff of every change and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Only these (comma-separated); an agent named here is registered even when it is not
    /// found. Default: every agent found.
    #[arg(long, value_enum, value_delimiter = ',')]
    agents: Option<Vec<InstallTarget>>,
    /// Also point the VS Code / Insiders / VSCodium / Cursor panels at the shims.
    #[arg(long)]
    panels: bool,
    /// Also add the Claude Code hooks (`cross-agent hook <event>`), beside the person's own.
    #[arg(long)]
    hooks: bool,
    /// Add the spec's permission variables: agents the bridge starts run without asking.
    #[arg(long)]
    unattended: bool,
    /// Also set VS Code's `chat.tools.global.autoApprove` (Copilot runs every tool, not only
    /// cross-agent's, without asking).
    #[arg(long)]
    copilot_auto_approve: bool,
    /// Where the shim links go (`--panels`).
    #[arg(long, value_name = "DIR")]
    shim_dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Print the unified diff of every change and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Where `install --panels` put the shim links, when not the default.
    #[arg(long, value_name = "DIR")]
    shim_dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
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

impl InstallArgs {
    pub fn run(self) -> Result<ExitCode> {
        let places = Places::from_env()?;
        let command = this_binary()?;
        let mut env = BTreeMap::new();
        if let Some(home) =
            std::env::var_os(cross_agent_protocol::settings::HOME).filter(|home| !home.is_empty())
        {
            env.insert(
                cross_agent_protocol::settings::HOME.to_owned(),
                home.to_string_lossy().into_owned(),
            );
        }
        if self.unattended {
            for (key, value) in setup::UNATTENDED_ENV {
                env.insert(key.to_owned(), value.to_owned());
            }
        }
        let registration = Registration {
            command: command.clone(),
            env,
        };
        let named = |target| {
            self.agents
                .as_ref()
                .is_some_and(|list| list.contains(&target))
        };
        let mut agents = Vec::new();
        let mut warnings = Vec::new();
        if self.unattended {
            warnings.push(setup::UNATTENDED_WARNING.to_owned());
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
            let selected = match &self.agents {
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
                        hooks: self.hooks,
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
                        if self.copilot_auto_approve {
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
        if self.copilot_auto_approve {
            warnings.push(if copilot_selected {
                setup::COPILOT_AUTO_APPROVE_WARNING.to_owned()
            } else {
                format!(
                    "--copilot-auto-approve: Copilot is not being set up, so {} was not set",
                    setup::COPILOT_AUTO_APPROVE
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
        if self.hooks && !claude_selected {
            warnings.push(
                "--hooks: Claude Code is not being set up, so no hooks were added".to_owned(),
            );
        }
        if self.panels || named(InstallTarget::Vscode) {
            let dir = self
                .shim_dir
                .clone()
                .unwrap_or_else(|| default_shim_dir(&places));
            for (link, _) in SHIM_LINKS {
                plan.links.push(plan::shim_link(&dir, link, &command)?);
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
        report(
            &plan,
            self.dry_run,
            self.json,
            &json!({
                "command": [command, "mcp"],
                "agents": agents,
            }),
            &warnings,
            &notes,
            "install",
        )?;
        Ok(ExitCode::SUCCESS)
    }
}

impl UninstallArgs {
    pub fn run(self) -> Result<ExitCode> {
        let places = Places::from_env()?;
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
            self.shim_dir
                .clone()
                .unwrap_or_else(|| default_shim_dir(&places)),
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
        report(
            &plan,
            self.dry_run,
            self.json,
            &json!({}),
            &[],
            &notes,
            "uninstall",
        )?;
        Ok(ExitCode::SUCCESS)
    }
}

/// What to do once the files are written: Copilot's Agent Host reads its servers only when it
/// starts.
fn restart_notes(plan: &Plan) -> Vec<String> {
    let copilot_changes = plan
        .changes
        .iter()
        .any(|change| change.label.starts_with("Copilot") && change.changes_anything());
    if copilot_changes {
        vec![setup::COPILOT_RESTART.to_owned()]
    } else {
        Vec::new()
    }
}

/// The directories an editor's settings point the shims at.
fn linked_shim_dirs(settings: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(settings) else {
        return Vec::new();
    };
    let Ok(doc) = setup::json_config::JsonDoc::parse("settings", Some(&text)) else {
        return Vec::new();
    };
    SHIM_LINKS
        .iter()
        .filter_map(|(_, key)| doc.entry(&[], key))
        .filter_map(|value| Some(Path::new(value.as_str()?).parent()?.to_owned()))
        .collect()
}

/// Names what the person added or changed inside cross-agent's entries that uninstall takes
/// out with them, file by file, and why (without values: an `env` value may be a secret; the
/// dry run's diff shows them).
fn write_dropped(out: &mut impl Write, plan: &Plan, dry_run: bool) -> Result<()> {
    let changes: Vec<_> = plan
        .changes
        .iter()
        .filter(|change| !change.dropped.is_empty())
        .collect();
    if changes.is_empty() {
        return Ok(());
    }
    let (takes, go) = if dry_run {
        ("takes", "would go too (the diff above shows their values)")
    } else {
        ("took", "went too")
    };
    writeln!(
        out,
        "\nuninstall {takes} cross-agent's own entries out whole (an entry left with only your \
         keys could not start), so these you added or changed inside them {go}:"
    )?;
    for change in changes {
        writeln!(
            out,
            "  {}:",
            escape_cell(&change.path.display().to_string())
        )?;
        for dropped in &change.dropped {
            writeln!(out, "    {}", escape_cell(&dropped.describe()))?;
        }
    }
    Ok(())
}

/// Prints the diff (dry run) or applies the plan and lists what it did.
fn report(
    plan: &Plan,
    dry_run: bool,
    as_json: bool,
    extra: &Value,
    warnings: &[String],
    notes: &[String],
    verb: &str,
) -> Result<()> {
    let diff = plan.diff();
    // A dry run says what would stop the real one: a target it could not write.
    let refused = if dry_run {
        preflight::problems(plan)
    } else {
        Vec::new()
    };
    let files = if dry_run {
        plan.preview()
    } else {
        plan.apply()?
    };
    if as_json {
        let mut out = json!({
            "dry_run": dry_run,
            "files": files,
            "warnings": warnings,
            "notes": notes,
        });
        if dry_run {
            out["diff"] = Value::String(diff);
            out["refused"] = json!(refused);
        }
        if let (Some(out), Some(extra)) = (out.as_object_mut(), extra.as_object()) {
            out.extend(extra.clone());
        }
        for warning in warnings {
            eprintln!("cross-agent: {warning}");
        }
        return super::bridge_client::print_json(&out);
    }
    let mut out = std::io::stdout().lock();
    if let Some(agents) = extra.get("agents").and_then(Value::as_array) {
        for agent in agents {
            let state = match (agent["found"].as_bool(), agent["selected"].as_bool()) {
                (_, Some(true)) if agent["found"] == Value::Bool(true) => "found",
                (_, Some(true)) => "not found, set up because --agents names it",
                (Some(true), _) => "found, skipped (not in --agents)",
                _ => "not installed, skipped",
            };
            let user_data: Vec<&str> = agent["user_data"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let cli = match agent["cli"].as_str() {
                Some(cli) => format!(" ({cli})"),
                None if !user_data.is_empty() => format!(" ({})", user_data.join(", ")),
                None => String::new(),
            };
            writeln!(
                out,
                "{:<8} {state}{cli}",
                agent["agent"].as_str().unwrap_or("?")
            )?;
        }
    }
    for warning in warnings {
        writeln!(out, "\n{warning}\n")?;
    }
    if dry_run {
        write!(out, "{diff}")?;
        write_dropped(&mut out, plan, dry_run)?;
        if !refused.is_empty() {
            writeln!(
                out,
                "\n`cross-agent {verb}` would change nothing, because cross-agent cannot write \
                 everything it would change:"
            )?;
            for problem in &refused {
                writeln!(out, "  {}", escape_cell(problem))?;
            }
        }
        let count = plan.changes.iter().filter(|c| c.changes_anything()).count()
            + plan.links.iter().filter(|l| !l.in_place).count();
        writeln!(
            out,
            "dry run: nothing was written ({count} change(s) would be made by `cross-agent {verb}`)"
        )?;
        for note in notes {
            writeln!(out, "afterwards: {note}")?;
        }
        return Ok(());
    }
    for file in &files {
        let backup = file["backup"]
            .as_str()
            .map(|b| format!(" (backup: {b})"))
            .unwrap_or_default();
        writeln!(
            out,
            "{:<9} {}  [{}]{backup}",
            file["action"].as_str().unwrap_or("?"),
            escape_cell(file["path"].as_str().unwrap_or("?")),
            file["for"].as_str().unwrap_or("?"),
        )?;
    }
    write_dropped(&mut out, plan, dry_run)?;
    if files.iter().all(|f| f["action"] == "unchanged") {
        writeln!(out, "nothing to change")?;
    } else if verb == "install" {
        writeln!(
            out,
            "start a new agent session (or reload the VS Code window) to connect"
        )?;
    }
    for note in notes {
        writeln!(out, "{note}")?;
    }
    Ok(())
}
