//! The Sessions panel: every agent's sessions as `cross-agent sessions` lists them
//! (`cross_agent::list_sessions`, the daemon's live index), each with where it sits on the
//! desktop — the window and the branch, `sessions`' PLACE column (`workspaces::Places`) — and
//! two buttons: Focus raises its editor window (`control::focus`, what `cross-agent focus`
//! and the Telegram Raise button call) and Hand off runs `cross-agent handoff SESSION --to
//! DEST --json` from beside the app, as the daemon's Telegram Hand off does: the code of each
//! stays in one place.
//!
//! The panel works through [`SessionsBackend`] so its tests drive it with a recording double;
//! [`SystemSessions`] is the real one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cross_agent_stores::Session;
use cross_agent_transports::panel::registry;

use crate::jobs::Running;

/// How long a handoff may take (it asks for a compact, which has its own timeouts).
const HANDOFF_TIMEOUT: Duration = Duration::from_secs(300);
/// The most sessions shown.
const MAX_ROWS: usize = 200;
/// The destinations offered, as `handoff destinations` names the command-line ones.
const DESTINATIONS: [&str; 3] = ["cli:claude", "cli:codex", "cli:grok"];

/// Where a session sits on the desktop, as `cross-agent sessions` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionPlace {
    /// The live window showing its workspace: `0x3a00003 main.rs - api - Visual Studio Code`.
    pub window: Option<String>,
    /// The git branch at its cwd.
    pub branch: Option<String>,
}

/// What the Sessions panel asks; blocking (each call runs on a job thread). An error is a
/// sentence for the person.
pub trait SessionsBackend: Send + Sync + 'static {
    /// Every agent's sessions, newest first (`cross-agent sessions`).
    fn list(&self) -> Vec<Session>;
    /// Where each of `sessions` sits, in order.
    fn places(&self, sessions: &[Session]) -> Vec<SessionPlace>;
    /// Raises the session's editor window (`cross-agent focus`); says which.
    fn focus(&self, session: &Session) -> Result<String, String>;
    /// Hands the session to `to` (`cross-agent handoff --to`); says what was done.
    fn hand_off(&self, session_id: &str, to: &str) -> Result<String, String>;
}

/// The real backend: the same library calls as the CLI, and `cross-agent handoff`.
pub struct SystemSessions {
    /// `CROSS_AGENT_HOME`: the panel shims' registrations, which tell two windows apart.
    pub home: PathBuf,
    /// The `cross-agent` binary a handoff runs.
    pub cli: PathBuf,
}

impl SessionsBackend for SystemSessions {
    fn list(&self) -> Vec<Session> {
        cross_agent::list_sessions()
    }

    fn places(&self, sessions: &[Session]) -> Vec<SessionPlace> {
        let (mut places, _) = cross_agent_workspaces::Places::from_env();
        sessions
            .iter()
            .map(|session| {
                let branch_anyway = session.is_working;
                session
                    .cwd
                    .as_deref()
                    .and_then(|cwd| places.of(cwd, branch_anyway))
                    .map(|place| SessionPlace {
                        window: place.window.map(|w| format!("{} {}", w.id, w.title)),
                        branch: place.branch,
                    })
                    .unwrap_or_default()
            })
            .collect()
    }

    fn focus(&self, session: &Session) -> Result<String, String> {
        let cwd = session.cwd.as_deref().ok_or_else(|| {
            format!(
                "session {} records no working directory, so its window cannot be told",
                session.session_id
            )
        })?;
        let editor_pids = registry::editor_pids(
            &registry::scan(&self.home).live,
            Some(&session.session_id),
            cwd,
        );
        cross_agent_control::focus::focus_from_env(cwd, &editor_pids)
            .map(|focused| focused.describe())
            .map_err(|e| e.to_string())
    }

    fn hand_off(&self, session_id: &str, to: &str) -> Result<String, String> {
        run_handoff(&self.cli, session_id, to)
    }
}

enum Done {
    Listed(Vec<(Session, SessionPlace)>),
    Said(Result<String, String>),
}

/// A button clicked on a row.
enum Click {
    Focus(Session),
    HandOff(String),
}

pub struct SessionsPanel {
    backend: Arc<dyn SessionsBackend>,
    sessions: Option<Vec<(Session, SessionPlace)>>,
    destination: usize,
    message: Option<Result<String, String>>,
    running: Running<Done>,
}

impl SessionsPanel {
    pub fn new(backend: Arc<dyn SessionsBackend>) -> SessionsPanel {
        SessionsPanel {
            backend,
            sessions: None,
            destination: 0,
            message: None,
            running: Running::default(),
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui) {
        match self.running.poll() {
            Some(Done::Listed(sessions)) => self.sessions = Some(sessions),
            Some(Done::Said(outcome)) => self.message = Some(outcome),
            None => {}
        }
        ui.heading("Sessions");
        let idle = self.running.doing().is_none();
        ui.horizontal(|ui| {
            if ui.add_enabled(idle, egui::Button::new("Refresh")).clicked()
                || (self.sessions.is_none() && idle)
            {
                let backend = Arc::clone(&self.backend);
                self.running
                    .start(ui.ctx(), "Listing the sessions…", move || {
                        let mut sessions = backend.list();
                        sessions.truncate(MAX_ROWS);
                        let places = backend.places(&sessions);
                        Done::Listed(sessions.into_iter().zip(places).collect())
                    });
            }
            // Labelled, so a screen reader names it.
            egui::ComboBox::from_label("Hand off to")
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
        let mut clicked = None;
        egui::ScrollArea::vertical()
            .auto_shrink([false, false])
            .show(ui, |ui| {
                egui::Grid::new("sessions").striped(true).show(ui, |ui| {
                    for header in ["Agent", "Title", "Folder", "State", "Branch", "Window"] {
                        ui.strong(header);
                    }
                    ui.end_row();
                    for (session, place) in sessions {
                        if let Some(click) = SessionsPanel::row(ui, session, place, idle) {
                            clicked = Some(click);
                        }
                        ui.end_row();
                    }
                });
            });
        let backend = Arc::clone(&self.backend);
        match clicked {
            Some(Click::Focus(session)) => {
                self.message = None;
                self.running.start(
                    ui.ctx(),
                    format!("Raising the window of {}…", session.session_id),
                    move || Done::Said(backend.focus(&session)),
                );
            }
            Some(Click::HandOff(id)) => {
                let to = DESTINATIONS[self.destination];
                self.message = None;
                self.running.start(
                    ui.ctx(),
                    format!("Handing {id} off to {to}…"),
                    move || Done::Said(backend.hand_off(&id, to)),
                );
            }
            None => {}
        }
    }

    /// One session's row; the button clicked on it, if one was.
    fn row(
        ui: &mut egui::Ui,
        session: &Session,
        place: &SessionPlace,
        idle: bool,
    ) -> Option<Click> {
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
        ui.label(place.branch.as_deref().unwrap_or("-"));
        ui.label(place.window.as_deref().unwrap_or("-"));
        let mut click = None;
        // Each row's buttons are told apart by their session for a screen reader (and tests).
        let short: String = session.session_id.chars().take(8).collect();
        let focus = ui
            .add_enabled(idle, egui::Button::new("Focus"))
            .on_hover_text("Raise the session's editor window");
        focus.widget_info(|| {
            egui::WidgetInfo::labeled(egui::Role::Button, idle, format!("Focus {short}"))
        });
        if focus.clicked() {
            click = Some(Click::Focus(session.clone()));
        }
        let hand_off = ui.add_enabled(idle, egui::Button::new("Hand off"));
        hand_off.widget_info(|| {
            egui::WidgetInfo::labeled(egui::Role::Button, idle, format!("Hand off {short}"))
        });
        if hand_off.clicked() {
            click = Some(Click::HandOff(session.session_id.clone()));
        }
        click
    }
}

/// `cross-agent handoff SESSION --to DEST --json`, its JSON or its last words on stderr.
fn run_handoff(cli: &Path, session: &str, to: &str) -> Result<String, String> {
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
