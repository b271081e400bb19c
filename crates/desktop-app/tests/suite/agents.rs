//! The Agents panel through AccessKit (`egui_kittest`), on a temporary home given with
//! `DesktopApp::with_places`: it lists the agents' registrations, shows the install's unified
//! diff before anything is written, and writes the plan it showed only when Apply is pressed.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use cross_agent::setup::places::Places;
use cross_agent_desktop::{DesktopApp, Settings, Tab};
use egui::accesskit::Role;
use egui_kittest::kittest::{NodeT as _, Queryable as _};

use super::panels::{Recorded, harness, step_until};

/// The places of a home holding only Claude Code's folder: no overrides, whatever this
/// process's environment says.
fn places_in(home: PathBuf) -> impl Fn() -> anyhow::Result<Places> + Send + Sync + 'static {
    move || Places::from_vars(&|name: &str| (name == "HOME").then(|| OsString::from(&home)))
}

#[test]
fn the_agents_panel_lists_the_registrations_and_shows_the_diff_before_installing() {
    let home = tempfile::tempdir().unwrap();
    let user = home.path().join("user");
    std::fs::create_dir_all(user.join(".claude")).unwrap();
    let state = home.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let settings = Settings {
        home: state,
        telegram_api: None,
        cli: home.path().join("bin/cross-agent"),
    };
    let app = DesktopApp::new(settings, Arc::new(Recorded::default()))
        .with_places(places_in(user.clone()))
        .with_tab(Tab::Agents);
    let mut harness = harness(app);
    harness.run();
    harness.get_by_label("Show install changes").click();
    step_until(&mut harness, "the install plan", |h| {
        h.query_by_label_contains("install would make").is_some()
    });

    // Claude Code is found by its folder in the temporary home.
    harness.get_by_label_contains("claude: found");
    // The diff names the temporary home's `.claude.json`, created with the server entry.
    let claude_json = user.join(".claude.json");
    let created = format!("--- /dev/null\n+++ b{}", claude_json.display());
    let diff = harness.get_by_label_contains(&created);
    assert!(
        diff.accesskit_node()
            .value()
            .or_else(|| diff.accesskit_node().label())
            .is_some_and(|text| text.contains("\"cross-agent\"")),
        "{diff:?}"
    );
    // Shown, not written.
    assert!(!claude_json.exists(), "written before Apply");

    harness
        .get_by_role_and_label(Role::Button, "Apply install")
        .click();
    step_until(&mut harness, "the install", |h| {
        h.query_by_label_contains(".claude.json").is_some()
            && h.query_by_label_contains("install would make").is_none()
    });
    let written = std::fs::read_to_string(&claude_json).unwrap();
    assert!(written.contains("\"cross-agent\""), "{written}");
    assert!(
        written.contains(&home.path().join("bin/cross-agent").display().to_string()),
        "{written}"
    );
}
