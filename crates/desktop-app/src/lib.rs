//! The desktop app, `cross-agent-desktop` (issue 27 §3; docs/desktop.md): the set-up and
//! service control for people who would rather click — the Telegram bot's token and pairing,
//! the daemon's user service, the agents' registrations and panel shims, the daemon's log, the
//! sessions with their window and branch, Focus and Hand off. Every panel calls the library functions the matching `cross-agent`
//! command calls (the `cross-agent` library's `setup` and `list_sessions`, the `telegram`
//! crate), or runs `cross-agent` itself where the daemon's Telegram bot does too (handoff), so
//! nothing is written twice. It is its own binary so the headless `cross-agent` never links a
//! GUI toolkit; `cross-agent desktop` runs it from beside itself.
//!
//! The UI is [`DesktopApp::ui`], one function over an `egui::Ui`, so the tests drive it with
//! `egui_kittest` (AccessKit queries) and [`run`] puts it in a real window (eframe, glow).

mod agents;
mod jobs;
pub mod logs;
mod service;
mod sessions;
mod telegram;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use cross_agent::setup::places::Places;
pub use service::{ServiceControl, SystemService};
pub use sessions::{SessionPlace, SessionsBackend, SystemSessions};

/// Where the app works: the state directory, the Bot API, the `cross-agent` binary.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `CROSS_AGENT_HOME` (or its default).
    pub home: PathBuf,
    /// `CROSS_AGENT_TELEGRAM_API`: the Bot API's base (`None`: the public one).
    pub telegram_api: Option<String>,
    /// The `cross-agent` binary beside this one: what the service and the registrations run,
    /// and what a handoff runs.
    pub cli: PathBuf,
}

impl Settings {
    /// From the environment, as every `cross-agent` command reads it.
    pub fn from_env() -> anyhow::Result<Settings> {
        let home = cross_agent_home::Home::from_env()?;
        home.ensure_root()?;
        let exe = std::env::current_exe()?;
        let exe = exe.canonicalize().unwrap_or(exe);
        let cli = exe
            .parent()
            .map(|dir| dir.join("cross-agent"))
            .unwrap_or_else(|| PathBuf::from("cross-agent"));
        Ok(Settings {
            home: home.root().to_owned(),
            telegram_api: std::env::var(cross_agent_protocol::settings::TELEGRAM_API)
                .ok()
                .filter(|base| !base.trim().is_empty()),
            cli,
        })
    }
}

/// Where the agents keep the files the Agents panel plans for, worked out anew for each plan
/// (an agent installed meanwhile is found): the process's `HOME` and overrides
/// ([`Places::from_env`]), or what [`DesktopApp::with_places`] gives.
pub type PlacesSource = Arc<dyn Fn() -> anyhow::Result<Places> + Send + Sync>;

/// The panels, in the order of the tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Telegram,
    Service,
    Agents,
    Logs,
    Sessions,
}

impl Tab {
    pub const ALL: [Tab; 5] = [
        Tab::Telegram,
        Tab::Service,
        Tab::Agents,
        Tab::Logs,
        Tab::Sessions,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Telegram => "Telegram",
            Tab::Service => "Service",
            Tab::Agents => "Agents",
            Tab::Logs => "Logs",
            Tab::Sessions => "Sessions",
        }
    }
}

/// The whole app: the tab bar and the panel of the chosen tab.
pub struct DesktopApp {
    tab: Tab,
    telegram: telegram::TelegramPanel,
    service: service::ServicePanel,
    agents: agents::AgentsPanel,
    logs: logs::LogsPanel,
    sessions: sessions::SessionsPanel,
}

impl DesktopApp {
    /// The app over `settings`, its service actions through `service`.
    pub fn new(settings: Settings, service: Arc<dyn ServiceControl>) -> DesktopApp {
        let settings = Arc::new(settings);
        DesktopApp {
            tab: Tab::Telegram,
            telegram: telegram::TelegramPanel::new(Arc::clone(&settings)),
            service: service::ServicePanel::new(service),
            agents: agents::AgentsPanel::new(Arc::clone(&settings), Arc::new(Places::from_env)),
            logs: logs::LogsPanel::new(Arc::clone(&settings)),
            sessions: sessions::SessionsPanel::new(Arc::new(SystemSessions {
                home: settings.home.clone(),
                cli: settings.cli.clone(),
            })),
        }
    }

    /// Its Sessions panel through `backend` (the tests' double) instead of the system's.
    pub fn with_sessions(mut self, backend: Arc<dyn SessionsBackend>) -> DesktopApp {
        self.sessions = sessions::SessionsPanel::new(backend);
        self
    }

    /// Its Agents panel's plans for the places `places` works out (the tests' temporary home)
    /// instead of the process's `HOME`.
    pub fn with_places(
        mut self,
        places: impl Fn() -> anyhow::Result<Places> + Send + Sync + 'static,
    ) -> DesktopApp {
        self.agents.set_places(Arc::new(places));
        self
    }

    /// Opens on `tab`.
    pub fn with_tab(mut self, tab: Tab) -> DesktopApp {
        self.tab = tab;
        self
    }

    /// One frame of the app.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        egui::Frame::central_panel(ui.style()).show(ui, |ui| {
            // The panel's background fills the window, not only what the tab draws.
            ui.set_min_size(ui.available_size());
            ui.horizontal(|ui| {
                for tab in Tab::ALL {
                    ui.selectable_value(&mut self.tab, tab, tab.title());
                }
            });
            ui.separator();
            match self.tab {
                Tab::Telegram => self.telegram.ui(ui),
                Tab::Service => self.service.ui(ui),
                Tab::Agents => self.agents.ui(ui),
                Tab::Logs => self.logs.ui(ui),
                Tab::Sessions => self.sessions.ui(ui),
            }
        });
    }
}

impl eframe::App for DesktopApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        DesktopApp::ui(self, ui);
    }
}

/// What a panel says when an action ends: its words, or why it failed in the error colour.
fn show_message(ui: &mut egui::Ui, message: Option<&Result<String, String>>) {
    match message {
        Some(Ok(said)) => {
            ui.label(said);
        }
        Some(Err(why)) => {
            ui.colored_label(ui.visuals().error_fg_color, why);
        }
        None => {}
    }
}

/// Why an action that runs `cross-agent` cannot.
fn missing_cli(cli: &Path) -> String {
    format!(
        "the cross-agent binary is not at {} (the app runs the one beside it; build both with \
         cargo build -p cross-agent -p cross-agent-desktop --release)",
        cli.display()
    )
}

/// Opens the window and runs the app until it is closed.
pub fn run() -> ExitCode {
    let settings = match Settings::from_env() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("cross-agent-desktop: {error:#}");
            return ExitCode::FAILURE;
        }
    };
    let service = Arc::new(SystemService {
        cli: settings.cli.clone(),
    });
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("cross-agent")
            .with_app_id("cross-agent-desktop")
            .with_inner_size([900.0, 640.0]),
        ..eframe::NativeOptions::default()
    };
    let app = DesktopApp::new(settings, service);
    match eframe::run_native(
        "cross-agent",
        options,
        Box::new(|_creation| Ok(Box::new(app))),
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cross-agent-desktop: the window could not be opened: {error}");
            ExitCode::FAILURE
        }
    }
}
