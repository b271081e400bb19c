//! `cross-agent windows`: the editors' open workspaces, one row each — the editor, the live
//! window showing it (on X11), its folder, its git branch, ahead/behind its upstream, dirty and
//! untracked counts (a `+` when the deadline cut one short), and the sessions working in it
//! (a session whose cwd is under the folder and which is active or working). `--json` prints
//! the same as one object. What is read and what each field means: `docs/desktop.md`.

use std::borrow::Cow;
use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use cross_agent_stores::resolve::ActiveWindow;
use cross_agent_stores::{Session, UnixMillis};
use cross_agent_workspaces::listing::{self, GitCell, Listing, ListingOptions, Row};
use cross_agent_workspaces::state::Editor;
use cross_agent_workspaces::x11::LiveWindows;
use serde_json::{Value, json};

use crate::display::escape;
use crate::display::table::{Column, Plain, fit, fit_tail};

#[derive(Debug, Args)]
pub struct WindowsArgs {
    /// Every workspace the editors know (their `workspaceStorage`), not only the open ones.
    #[arg(long)]
    all: bool,
    /// How long one repository's git state may take, in milliseconds; a count cut short says
    /// so (`complete: false`, `+` in the table).
    #[arg(long, env = "CROSS_AGENT_GIT_DEADLINE_MS", default_value_t = 1500)]
    git_deadline_ms: u64,
    /// One JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

const FOLDER_WIDTH: usize = 40;
const WINDOW_WIDTH: usize = 36;
const SESSIONS_WIDTH: usize = 40;

impl WindowsArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let options = ListingOptions {
            editors: Editor::all(home.as_deref(), |name| std::env::var_os(name)),
            all: self.all,
            git: true,
            git_deadline: Duration::from_millis(self.git_deadline_ms),
            windows: LiveWindows::from_env(),
        };
        let listed = listing::list(&options);
        {
            let mut stderr = std::io::stderr().lock();
            for warning in &listed.warnings {
                let _ = writeln!(stderr, "warning: {}", escape(&warning.to_string()));
            }
        }
        // The sessions only when there is a folder to put them in.
        let sessions = if listed.rows.is_empty() {
            Vec::new()
        } else {
            super::sessions::every_session()
        };
        let window = ActiveWindow::from_env()?;
        let now = UnixMillis::now();
        let working: Vec<&Session> = sessions
            .iter()
            .filter(|s| s.is_working || window.is_active(s.last_activity, now))
            .collect();
        let mut stdout = BufWriter::new(std::io::stdout().lock());
        if self.json {
            serde_json::to_writer_pretty(&mut stdout, &listing_json(&listed, &working))?;
            writeln!(stdout)?;
        } else {
            write_table(&mut stdout, &listed, &working)?;
        }
        stdout.flush()?;
        Ok(ExitCode::SUCCESS)
    }
}

/// The sessions whose cwd is in `row`'s workspace (the deepest workspace holding it).
fn sessions_in<'s>(rows: &[Row], row: &Row, sessions: &[&'s Session]) -> Vec<&'s Session> {
    sessions
        .iter()
        .copied()
        .filter(|s| {
            s.cwd.as_deref().is_some_and(|cwd| {
                listing::row_for(rows, cwd).is_some_and(|r| std::ptr::eq(r, row))
            })
        })
        .collect()
}

fn listing_json(listed: &Listing, sessions: &[&Session]) -> Value {
    let rows: Vec<Value> = listed
        .rows
        .iter()
        .map(|row| {
            let mut value = serde_json::to_value(row).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut value {
                map.insert(
                    "folder".to_owned(),
                    json!(row.workspace.folder().map(|f| f.display().to_string())),
                );
                map.insert(
                    "sessions".to_owned(),
                    Value::Array(
                        sessions_in(&listed.rows, row, sessions)
                            .into_iter()
                            .map(|s| {
                                json!({
                                    "agent": s.agent.as_str(),
                                    "session_id": s.session_id,
                                    "title": s.title,
                                    "cwd": s.cwd.as_deref().map(|p| p.display().to_string()),
                                    "is_working": s.is_working,
                                    "last_activity": s.last_activity.map(UnixMillis::to_rfc3339),
                                })
                            })
                            .collect(),
                    ),
                );
            }
            value
        })
        .collect();
    json!({
        "display": listed.display,
        "workspaces": rows,
        "warnings": listed.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
    })
}

fn write_table(
    out: &mut impl Write,
    listed: &Listing,
    sessions: &[&Session],
) -> std::io::Result<()> {
    if listed.rows.is_empty() {
        writeln!(
            out,
            "no open workspaces found (VS Code, Insiders, VSCodium, Cursor, Windsurf); --all lists every known one"
        )?;
        writeln!(out, "display: {}", listed.display)?;
        return Ok(());
    }
    let mut table = Plain::new(&[
        Column::left("EDITOR"),
        Column::left("WINDOW"),
        Column::left("FOLDER"),
        Column::left("BRANCH"),
        Column::right("AHEAD/BEHIND"),
        Column::right("DIRTY"),
        Column::right("UNTRACKED"),
        Column::left("SESSIONS"),
    ]);
    for row in &listed.rows {
        let window = match &row.window {
            Some(w) => format!("{} {}", w.id, w.title),
            None if row.workspace.last_active => "(last active)".to_owned(),
            None => "-".to_owned(),
        };
        let folder = row
            .workspace
            .folder()
            .map_or_else(|| row.workspace.name.clone(), |f| f.display().to_string());
        let (branch, ahead_behind, dirty, untracked) = git_cells(&row.git);
        let in_it: Vec<String> = sessions_in(&listed.rows, row, sessions)
            .iter()
            .map(|s| format!("{}:{}", s.agent.as_str(), short_id(&s.session_id)))
            .collect();
        table.row([
            Cow::Borrowed(row.workspace.editor),
            fit(&window, WINDOW_WIDTH),
            fit_tail(&folder, FOLDER_WIDTH),
            Cow::Owned(branch),
            Cow::Owned(ahead_behind),
            Cow::Owned(dirty),
            Cow::Owned(untracked),
            Cow::Owned(fit(&or_dash(in_it.join(" ")), SESSIONS_WIDTH).into_owned()),
        ]);
    }
    table.write(out)?;
    writeln!(
        out,
        "{} workspace(s); display: {}. A + means the count was cut short by the deadline (--git-deadline-ms).",
        listed.rows.len(),
        listed.display
    )?;
    Ok(())
}

/// Branch, `↑a ↓b`, dirty and untracked, or dashes (and why, in the branch cell).
fn git_cells(git: &GitCell) -> (String, String, String, String) {
    match git {
        GitCell::Repository(state) => {
            let mut branch = state.branch_label();
            if let Some(commit) = &state.commit {
                branch = format!("{branch} @{commit}");
            }
            let ahead_behind = state.upstream.as_ref().map_or_else(
                || "-".to_owned(),
                |u| format!("↑{} ↓{}", u.ahead.short(), u.behind.short()),
            );
            (
                branch,
                ahead_behind,
                state.dirty.short(),
                state.untracked.short(),
            )
        }
        GitCell::None => dashes("(no git)"),
        GitCell::Skipped => dashes("-"),
        GitCell::Error { .. } => dashes("(unreadable: see warning)"),
    }
}

fn dashes(first: &str) -> (String, String, String, String) {
    (first.to_owned(), "-".into(), "-".into(), "-".into())
}

fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn or_dash(text: String) -> String {
    if text.is_empty() {
        "-".to_owned()
    } else {
        text
    }
}
