//! The Sessions panel: every agent's sessions as `cross-agent sessions` lists them
//! (`cross_agent::list_sessions`, the daemon's live index), each with Hand off. A handoff runs
//! `cross-agent handoff SESSION --to DEST --json` from beside the app, as the daemon's
//! Telegram Hand off does: the handoff's code stays in one place.
//!
//! Issue 27 §1 and §2 plug in here: the window and branch columns (the workspaces crate) go
//! in [`SessionsPanel::row`] where marked, and the Focus button calls the control crate's focus
//! where marked; until they land the button is shown disabled.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_stores::Session;

use crate::Settings;
use crate::jobs::Running;

/// How long a handoff may take (it asks for a compact, which has its own timeouts).
const HANDOFF_TIMEOUT: Duration = Duration::from_secs(300);
/// The most sessions shown.
const MAX_ROWS: usize = 200;
/// The destinations offered, as `handoff destinations` names the command-line ones.
const DESTINATIONS: [&str; 3] = ["cli:claude", "cli:codex", "cli:grok"];

enum Done {
    Listed(Vec<Session>),
    HandedOff(Result<String, String>),
}

pub struct SessionsPanel {
    settings: Arc<Settings>,
    sessions: Option<Vec<Session>>,
    destination: usize,
    message: Option<Result<String, String>>,
    running: Running<Done>,
}

impl SessionsPanel {
    pub fn new(settings: Arc<Settings>) -> SessionsPanel {
        SessionsPanel {
            settings,
            sessions: None,
            destination: 0,
            message: None,
            running: Running::default(),
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui) {
        match self.running.poll() {
            Some(Done::Listed(sessions)) => self.sessions = Some(sessions),
            Some(Done::HandedOff(outcome)) => self.message = Some(outcome),
            None => {}
        }
        ui.heading("Sessions");
        let idle = self.running.doing().is_none();
        ui.horizontal(|ui| {
            if ui.add_enabled(idle, egui::Button::new("Refresh")).clicked()
                || (self.sessions.is_none() && idle)
            {
                self.running.start(ui.ctx(), "Listing the sessions…", || {
                    Done::Listed(cross_agent::list_sessions())
                });
            }
            ui.label("Hand off to");
            egui::ComboBox::from_id_salt("handoff-destination")
                .selected_text(DESTINATIONS[self.destination])
                .show_ui(ui, |ui| {
                    for (index, destination) in DESTINATIONS.iter().enumerate() {
                        ui.selectable_value(&mut self.destination, index, *destination);
                    }
                });
        });
        self.running.show(ui);
        crate::show_message(ui, self.message.as_ref());
        let Some(sessions) = &self.sessions else {
            return;
        };
        if sessions.is_empty() {
            ui.label("No sessions found.");
        }
        let mut hand_off = None;
        egui::ScrollArea::vertical()
            .auto_shrink([false, false])
            .show(ui, |ui| {
                egui::Grid::new("sessions").striped(true).show(ui, |ui| {
                    for session in sessions.iter().take(MAX_ROWS) {
                        if SessionsPanel::row(ui, session, idle) {
                            hand_off = Some(session.session_id.clone());
                        }
                        ui.end_row();
                    }
                });
            });
        if let Some(id) = hand_off {
            let cli = self.settings.cli.clone();
            let to = DESTINATIONS[self.destination];
            self.message = None;
            self.running.start(
                ui.ctx(),
                format!("Handing {id} off to {to}…"),
                move || Done::HandedOff(run_handoff(&cli, &id, to)),
            );
        }
    }

    /// One session's row; true when its Hand off was clicked.
    fn row(ui: &mut egui::Ui, session: &Session, idle: bool) -> bool {
        ui.label(session.agent.as_str());
        ui.label(session.title.as_deref().unwrap_or("(untitled)"));
        ui.label(
            session
                .cwd
                .as_deref()
                .map(|cwd| cwd.display().to_string())
                .unwrap_or_default(),
        );
        ui.label(if session.is_working { "working" } else { "" });
        // Issue 27 §1: the window and the branch of the session's workspace go here.
        // Issue 27 §2: Focus raises the session's window through the control crate; wired when
        // that crate lands.
        ui.add_enabled(false, egui::Button::new("Focus"))
            .on_disabled_hover_text("Focus comes with the control backend (issue 27 §2)");
        ui.add_enabled(idle, egui::Button::new("Hand off"))
            .clicked()
    }
}

/// `cross-agent handoff SESSION --to DEST --json`, its JSON or its last words on stderr.
fn run_handoff(cli: &PathBuf, session: &str, to: &str) -> Result<String, String> {
    if !cli.is_file() {
        return Err(crate::missing_cli(cli));
    }
    let mut command = std::process::Command::new(cli);
    command.args(["handoff", session, "--to", to, "--json"]);
    let finished = cross_agent_process::run::run(command, None, HANDOFF_TIMEOUT)
        .map_err(|error| format!("`cross-agent handoff` could not run: {error:?}"))?;
    if finished.status.success() {
        let value: serde_json::Value = serde_json::from_slice(&finished.stdout)
            .map_err(|e| format!("`cross-agent handoff` printed no JSON: {e}"))?;
        return Ok(format!("Handed off: {value}"));
    }
    let stderr = String::from_utf8_lossy(&finished.stderr);
    Err(stderr
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("`cross-agent handoff` failed")
        .trim()
        .to_owned())
}
