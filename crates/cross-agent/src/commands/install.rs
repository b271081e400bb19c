//! `cross-agent install` and `cross-agent uninstall`: register `cross-agent mcp` with every
//! agent found (Claude Code, Codex, Grok Build, Copilot in VS Code Stable and Insiders),
//! optionally the panel shims in the VS Code family's user settings (`--panels`), the Claude
//! Code hooks (`--hooks`) and VS Code's global tool auto-approval (`--copilot-auto-approve`),
//! and take exactly that out again. `--dry-run` prints the unified diff of every change and
//! writes nothing. The plans are worked out in [`crate::setup::install`], the edits in [`crate::setup`].

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};

use crate::display::escape_cell;
pub use crate::setup::install::this_binary;
use crate::setup::install::{InstallOptions, InstallTarget, plan_install, plan_uninstall};
use crate::setup::places::Places;
use crate::setup::plan::Plan;
use crate::setup::preflight;

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

impl InstallArgs {
    pub fn run(self) -> Result<ExitCode> {
        let places = Places::from_env()?;
        let command = this_binary()?;
        let options = InstallOptions {
            agents: self.agents,
            panels: self.panels,
            hooks: self.hooks,
            unattended: self.unattended,
            copilot_auto_approve: self.copilot_auto_approve,
            shim_dir: self.shim_dir,
        };
        let planned = plan_install(&places, &command, &options)?;
        report(
            &planned.plan,
            self.dry_run,
            self.json,
            &json!({
                "command": [command, "mcp"],
                "agents": planned.agents,
            }),
            &planned.warnings,
            &planned.notes,
            "install",
        )?;
        Ok(ExitCode::SUCCESS)
    }
}

impl UninstallArgs {
    pub fn run(self) -> Result<ExitCode> {
        let places = Places::from_env()?;
        let planned = plan_uninstall(&places, self.shim_dir.as_deref())?;
        report(
            &planned.plan,
            self.dry_run,
            self.json,
            &json!({}),
            &[],
            &planned.notes,
            "uninstall",
        )?;
        Ok(ExitCode::SUCCESS)
    }
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
