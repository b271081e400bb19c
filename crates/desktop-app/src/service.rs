//! The Service panel: the daemon as a user service — install, start, stop, uninstall, status —
//! through a [`ServiceControl`]. The real one, [`SystemService`], calls
//! `cross_agent::setup::service`, which `cross-agent service` calls too; tests give the panel
//! their own so no test touches the machine's systemd.

use std::path::PathBuf;
use std::sync::Arc;

use cross_agent::setup::places::Places;
use cross_agent::setup::service::{self, Manager, Status};

use crate::jobs::Running;

/// The service actions the panel offers. Each returns what to tell the person, or why not.
pub trait ServiceControl: Send + Sync {
    fn install(&self) -> Result<String, String>;
    fn uninstall(&self) -> Result<String, String>;
    fn start(&self) -> Result<String, String>;
    fn stop(&self) -> Result<String, String>;
    fn status(&self) -> Result<Status, String>;
}

/// The machine's service manager (systemd user units, launchd), for the `cross-agent` binary
/// beside the app.
pub struct SystemService {
    /// The `cross-agent` the service runs (`daemon run`).
    pub cli: PathBuf,
}

impl SystemService {
    fn manager() -> Result<(Places, Manager), String> {
        let places = Places::from_env().map_err(|e| format!("{e:#}"))?;
        let manager = Manager::for_this_os(&places);
        Ok((places, manager))
    }
}

impl ServiceControl for SystemService {
    fn install(&self) -> Result<String, String> {
        let (places, manager) = SystemService::manager()?;
        if !self.cli.is_file() {
            return Err(crate::missing_cli(&self.cli));
        }
        service::install(&places, &manager, &self.cli, /*dry_run*/ false)
            .map_err(|e| format!("{e:#}"))
    }

    fn uninstall(&self) -> Result<String, String> {
        let (_, manager) = SystemService::manager()?;
        service::uninstall(&manager).map_err(|e| format!("{e:#}"))
    }

    fn start(&self) -> Result<String, String> {
        let (_, manager) = SystemService::manager()?;
        service::start(&manager).map_err(|e| format!("{e:#}"))
    }

    fn stop(&self) -> Result<String, String> {
        let (_, manager) = SystemService::manager()?;
        service::stop(&manager).map_err(|e| format!("{e:#}"))
    }

    fn status(&self) -> Result<Status, String> {
        let (_, manager) = SystemService::manager()?;
        Ok(service::status(&manager))
    }
}

enum Done {
    Said(Result<String, String>),
    Status(Result<Status, String>),
}

pub struct ServicePanel {
    control: Arc<dyn ServiceControl>,
    status: Option<Result<Status, String>>,
    message: Option<Result<String, String>>,
    running: Running<Done>,
    asked_status: bool,
}

impl ServicePanel {
    pub fn new(control: Arc<dyn ServiceControl>) -> ServicePanel {
        ServicePanel {
            control,
            status: None,
            message: None,
            running: Running::default(),
            asked_status: false,
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui) {
        match self.running.poll() {
            Some(Done::Said(said)) => {
                self.message = Some(said);
                // Whatever an action did, the status shown follows it.
                self.ask_status(ui.ctx());
            }
            Some(Done::Status(status)) => self.status = Some(status),
            None => {}
        }
        if !self.asked_status {
            self.asked_status = true;
            self.ask_status(ui.ctx());
        }
        ui.heading("Service");
        ui.label(
            "Run the daemon as a user service so it starts at login (systemd on Linux, launchd \
             on macOS). Without it the daemon starts itself on first use.",
        );
        match &self.status {
            Some(Ok(status)) => {
                ui.label(format!(
                    "Service file: {} ({})",
                    status.file.display(),
                    if status.written {
                        "written"
                    } else {
                        "not written"
                    }
                ));
                ui.label(match &status.state {
                    Some(state) => format!("Service: {state}"),
                    None => "Service manager: none answers here".to_owned(),
                });
            }
            Some(Err(why)) => {
                ui.colored_label(ui.visuals().error_fg_color, why);
            }
            None => {}
        }
        ui.add_space(8.0);
        ui.horizontal(|ui| {
            let idle = self.running.doing().is_none();
            type Action = fn(&dyn ServiceControl) -> Result<String, String>;
            let actions: [(&str, &str, Action); 4] = [
                ("Install", "Installing the service…", |c| c.install()),
                ("Start", "Starting the service…", |c| c.start()),
                ("Stop", "Stopping the service…", |c| c.stop()),
                ("Uninstall", "Removing the service…", |c| c.uninstall()),
            ];
            for (label, doing, action) in actions {
                if ui.add_enabled(idle, egui::Button::new(label)).clicked() {
                    let control = Arc::clone(&self.control);
                    self.running.start(ui.ctx(), doing, move || {
                        Done::Said(action(control.as_ref()))
                    });
                }
            }
            if ui.add_enabled(idle, egui::Button::new("Status")).clicked() {
                self.ask_status(ui.ctx());
            }
        });
        self.running.show(ui);
        crate::show_message(ui, self.message.as_ref());
    }

    fn ask_status(&mut self, ctx: &egui::Context) {
        let control = Arc::clone(&self.control);
        self.running
            .start(ctx, "Asking the service manager…", move || {
                Done::Status(control.status())
            });
    }
}
