//! `cross-agent focus SESSION [--type TEXT] [--json]`: raises the editor window a session
//! lives in (docs/desktop.md "Focus and GUI fallback"), and with `--type` runs the GUI
//! fallback by hand: TEXT pasted into the session's chat input and submitted, under the same
//! rules as the daemon's (turned on, nobody at the keyboard for `idle_seconds`), recorded as a
//! `gui_fallback` decision. The session is found in the agents' stores without the daemon: by
//! its id, else by its exact name among every agent's sessions (two sessions of that name are
//! refused, naming both).

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::Args;
use cross_agent_control::fallback::{self, Request, Verdict};
use cross_agent_control::focus::{Focused, focus_cwd};
use cross_agent_control::{Control, ControlError};
use cross_agent_decisions::DecisionLog;
use cross_agent_home::Home;
use cross_agent_stores::scan::{self, ScanOptions};
use cross_agent_stores::{Session, StoreRoots};

use crate::display::escape;

#[derive(Debug, Args)]
pub struct FocusArgs {
    /// The session: its id, or its exact name (any agent's).
    session: String,
    /// Paste TEXT into the session's chat input and submit it (the GUI fallback by hand): only
    /// when it is turned on (CROSS_AGENT_GUI_FALLBACK=1 or [control] gui_fallback) and there
    /// was no keyboard or mouse input for idle_seconds.
    #[arg(long = "type", value_name = "TEXT")]
    text: Option<String>,
    /// The outcome as JSON.
    #[arg(long)]
    json: bool,
}

impl FocusArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let session = find(&self.session)?;
        let cwd = session.cwd.clone().with_context(|| {
            format!(
                "session {} records no working directory, so its window cannot be told",
                session.session_id
            )
        })?;
        // The panel shims' ancestry names the editor's process (the window's `_NET_WM_PID`),
        // which tells two windows of one folder apart.
        let editor_pids = match Home::from_env() {
            Ok(home) => cross_agent_transports::panel::registry::editor_pids(
                &cross_agent_transports::panel::registry::scan(home.root()).live,
                Some(&session.session_id),
                &cwd,
            ),
            Err(_) => Vec::new(),
        };
        cross_agent_control::with_env(|control| match self.text {
            None => focus(control, &cwd, &editor_pids, self.json),
            Some(text) => type_text(control, &session, &cwd, &editor_pids, &text, self.json),
        })
    }
}

fn focus(
    control: Result<&dyn Control, ControlError>,
    cwd: &std::path::Path,
    editor_pids: &[u32],
    json: bool,
) -> anyhow::Result<ExitCode> {
    let focused = match focus_cwd(control, cwd, editor_pids) {
        Ok(focused) => focused,
        Err(e) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"focused": false, "reason": e.to_string()})
                );
            }
            eprintln!("cross-agent focus: {}", escape(&e.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut out = std::io::stdout().lock();
    if json {
        let mut value = serde_json::to_value(&focused)?;
        if let Some(map) = value.as_object_mut() {
            map.insert("focused".to_owned(), true.into());
        }
        writeln!(out, "{value}")?;
    } else {
        match &focused {
            Focused::Window { window } => writeln!(
                out,
                "raised window {:#x} {}",
                window.id,
                escape(&window.title)
            )?,
            Focused::EditorCli { cli, folder } => writeln!(
                out,
                "asked {} to raise the window of {} (--reuse-window; this desktop cannot \
                 check which window came up)",
                escape(cli),
                escape(folder)
            )?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn type_text(
    control: Result<&dyn Control, ControlError>,
    session: &Session,
    cwd: &std::path::Path,
    editor_pids: &[u32],
    text: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    home.ensure_root()?;
    let config = cross_agent_control::settings::load(home.root())?;
    let report = fallback::run(
        control,
        &config,
        &Request {
            agent: session.agent,
            session: Some(&session.session_id),
            delivery: None,
            cwd,
            editor_pids,
            text,
        },
        &DecisionLog::new(home.root()),
    );
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else if report.verdict == Verdict::Submitted {
        println!("{}", escape(&report.reason));
    }
    if report.verdict != Verdict::Submitted {
        eprintln!("cross-agent focus --type: {}", escape(&report.reason));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The one session `query` names: by id, else by exact name, among every agent's sessions.
fn find(query: &str) -> anyhow::Result<Session> {
    let roots = StoreRoots::from_env();
    let listing = scan::list_sessions(&roots, &ScanOptions::default());
    let query = query.trim();
    if let Some(session) = listing.sessions.iter().find(|s| s.session_id == query) {
        return Ok(session.clone());
    }
    let named: Vec<&Session> = listing
        .sessions
        .iter()
        .filter(|s| s.title.as_deref().map(str::trim) == Some(query))
        .collect();
    match named.as_slice() {
        [one] => Ok((*one).clone()),
        [] => bail!(
            "no session has the id or name {:?} (`cross-agent sessions` lists them)",
            escape(query)
        ),
        many => bail!(
            "{} sessions are named {:?}: {}; name one by its id",
            many.len(),
            escape(query),
            many.iter()
                .map(|s| format!("{} {}", s.agent.as_str(), s.session_id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
