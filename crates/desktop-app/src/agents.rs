//! The Agents panel: the agents' registrations and the panel shims. Install and uninstall are
//! the plans `cross-agent install` / `uninstall` work out (`cross_agent::setup::install`); the
//! panel shows a plan's unified diff first, as `install --dry-run` prints it, and writes only
//! when Apply is pressed — the plan that was shown, nothing worked out anew.

use std::sync::Arc;

use cross_agent::setup::install::{InstallOptions, Planned, plan_install, plan_uninstall};
use cross_agent::setup::places::Places;
use serde_json::Value;

use crate::jobs::Running;
use crate::{PlacesSource, Settings};

/// A plan on show, and whether it installs or uninstalls.
struct Shown {
    verb: &'static str,
    planned: Planned,
    diff: String,
    changes: usize,
}

enum Done {
    Planned(Result<Shown, String>),
    Applied(Result<String, String>),
}

pub struct AgentsPanel {
    settings: Arc<Settings>,
    places: PlacesSource,
    panels: bool,
    hooks: bool,
    shown: Option<Shown>,
    message: Option<Result<String, String>>,
    running: Running<Done>,
}

impl AgentsPanel {
    /// The panel over `settings`, its plans worked out for the agents' files `places` gives.
    pub fn new(settings: Arc<Settings>, places: PlacesSource) -> AgentsPanel {
        AgentsPanel {
            settings,
            places,
            panels: true,
            hooks: false,
            shown: None,
            message: None,
            running: Running::default(),
        }
    }

    /// Plans from now on for the files `places` gives.
    pub fn set_places(&mut self, places: PlacesSource) {
        self.places = places;
    }

    pub fn ui(&mut self, ui: &mut egui::Ui) {
        match self.running.poll() {
            Some(Done::Planned(Ok(shown))) => self.shown = Some(shown),
            Some(Done::Planned(Err(why))) => self.message = Some(Err(why)),
            Some(Done::Applied(outcome)) => self.message = Some(outcome),
            None => {}
        }
        ui.heading("Agents");
        ui.label(
            "Register cross-agent with every agent found (Claude Code, Codex, Grok, Copilot) and, \
             if you like, point the VS Code panels at the shims. The changes are shown first; \
             nothing is written until you apply them.",
        );
        ui.checkbox(
            &mut self.panels,
            "Panel shims (VS Code, Insiders, VSCodium, Cursor)",
        );
        ui.checkbox(
            &mut self.hooks,
            "Claude Code hooks (approvals from the phone)",
        );
        let idle = self.running.doing().is_none();
        ui.horizontal(|ui| {
            if ui
                .add_enabled(idle, egui::Button::new("Show install changes"))
                .clicked()
            {
                let options = InstallOptions {
                    panels: self.panels,
                    hooks: self.hooks,
                    ..InstallOptions::default()
                };
                let cli = self.settings.cli.clone();
                let places = Arc::clone(&self.places);
                self.message = None;
                self.running
                    .start(ui.ctx(), "Working out the changes…", move || {
                        Done::Planned(plan(&places, "install", |places| {
                            plan_install(places, &cli, &options)
                        }))
                    });
            }
            if ui
                .add_enabled(idle, egui::Button::new("Show uninstall changes"))
                .clicked()
            {
                let places = Arc::clone(&self.places);
                self.message = None;
                self.running
                    .start(ui.ctx(), "Working out the changes…", move || {
                        Done::Planned(plan(&places, "uninstall", |places| {
                            plan_uninstall(places, None)
                        }))
                    });
            }
        });
        self.running.show(ui);
        if let Some(shown) = &self.shown {
            for row in &shown.planned.agents {
                ui.label(agent_line(row));
            }
            for warning in &shown.planned.warnings {
                ui.colored_label(ui.visuals().warn_fg_color, warning);
            }
            ui.label(format!(
                "{} would make {} change(s):",
                shown.verb, shown.changes
            ));
            egui::ScrollArea::vertical()
                .max_height(320.0)
                .show(ui, |ui| {
                    ui.add(
                        egui::Label::new(egui::RichText::new(&shown.diff).monospace())
                            .selectable(true),
                    );
                });
            let apply = format!("Apply {}", shown.verb);
            if ui
                .add_enabled(idle && shown.changes > 0, egui::Button::new(apply))
                .clicked()
                && let Some(shown) = self.shown.take()
            {
                self.running.start(ui.ctx(), "Writing the files…", move || {
                    Done::Applied(apply_plan(&shown))
                });
            }
        }
        crate::show_message(ui, self.message.as_ref());
    }
}

/// Works a plan out and renders its diff.
fn plan(
    places: &PlacesSource,
    verb: &'static str,
    make: impl FnOnce(&Places) -> anyhow::Result<Planned>,
) -> Result<Shown, String> {
    let places = places().map_err(|e| format!("{e:#}"))?;
    let planned = make(&places).map_err(|e| format!("{e:#}"))?;
    let diff = planned.plan.diff();
    let changes = planned
        .plan
        .changes
        .iter()
        .filter(|c| c.changes_anything())
        .count()
        + planned.plan.links.iter().filter(|l| !l.in_place).count();
    Ok(Shown {
        verb,
        planned,
        diff,
        changes,
    })
}

fn apply_plan(shown: &Shown) -> Result<String, String> {
    let files = shown.planned.plan.apply().map_err(|e| format!("{e:#}"))?;
    let mut lines: Vec<String> = files
        .iter()
        .map(|file| {
            format!(
                "{} {} [{}]",
                file["action"].as_str().unwrap_or("?"),
                file["path"].as_str().unwrap_or("?"),
                file["for"].as_str().unwrap_or("?")
            )
        })
        .collect();
    lines.extend(shown.planned.notes.iter().cloned());
    Ok(lines.join("\n"))
}

fn agent_line(row: &Value) -> String {
    let found = row["found"].as_bool().unwrap_or(false);
    let selected = row["selected"].as_bool().unwrap_or(false);
    let cli = row["cli"]
        .as_str()
        .map(|cli| format!(" ({cli})"))
        .unwrap_or_default();
    format!(
        "{}: {}{cli}",
        row["agent"].as_str().unwrap_or("?"),
        match (found, selected) {
            (true, true) => "found",
            (true, false) => "found, skipped",
            (false, _) => "not installed",
        }
    )
}
