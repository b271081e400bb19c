//! The panels through AccessKit (`egui_kittest`), as a screen reader sees them: the pairing
//! code shown, the token field a password field whose token is stored as `telegram setup`
//! stores it (checked against the testkit's fake Bot API), the service buttons calling the
//! service backend — a recording one, so no test touches the machine's systemd.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cross_agent::setup::service::Status;
use cross_agent_desktop::{DesktopApp, ServiceControl, Settings, Tab};
use cross_agent_testkit::telegram::FakeBotApi;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use parking_lot::Mutex;
use pretty_assertions::assert_eq;

const TOKEN: &str = "123456:desk-test-token";

/// A service backend that records each call and answers it.
#[derive(Default)]
struct Recorded {
    calls: Mutex<Vec<&'static str>>,
}

impl Recorded {
    fn said(&self, call: &'static str) -> Result<String, String> {
        self.calls.lock().push(call);
        Ok(format!("{call}: done (recorded)"))
    }
}

impl ServiceControl for Recorded {
    fn install(&self) -> Result<String, String> {
        self.said("install")
    }
    fn uninstall(&self) -> Result<String, String> {
        self.said("uninstall")
    }
    fn start(&self) -> Result<String, String> {
        self.said("start")
    }
    fn stop(&self) -> Result<String, String> {
        self.said("stop")
    }
    fn status(&self) -> Result<Status, String> {
        self.calls.lock().push("status");
        Ok(Status {
            file: "/nowhere/cross-agent.service".into(),
            written: true,
            service_manager: true,
            state: Some("active".to_owned()),
        })
    }
}

fn settings(home: &Path, telegram_api: Option<&str>) -> Settings {
    Settings {
        home: home.to_owned(),
        telegram_api: telegram_api.map(str::to_owned),
        cli: home.join("no-cross-agent-here"),
    }
}

fn harness(app: DesktopApp) -> Harness<'static, DesktopApp> {
    Harness::builder()
        .with_size(egui::vec2(900.0, 640.0))
        .build_ui_state(|ui, app: &mut DesktopApp| app.ui(ui), app)
}

/// Steps the UI until `done` holds (a background job finished and was shown), 10 s at most.
fn step_until(
    harness: &mut Harness<'_, DesktopApp>,
    what: &str,
    done: impl Fn(&Harness<'_, DesktopApp>) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        harness.step();
        if done(harness) {
            return;
        }
        assert!(Instant::now() < deadline, "waited 10 s for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_new_pairing_code_is_shown_as_the_bot_expects_it() {
    let home = tempfile::tempdir().unwrap();
    cross_agent_telegram::store::write_token(home.path(), TOKEN).unwrap();
    let app = DesktopApp::new(settings(home.path(), None), Arc::new(Recorded::default()));
    let mut harness = harness(app);
    harness.run();
    harness.get_by_label("New pairing code").click();
    harness.run();
    let pending = cross_agent_telegram::store::read_access(home.path())
        .unwrap()
        .pending
        .expect("a pending code was stored");
    assert_eq!(pending.code.len(), 8);
    harness.get_by_label(&format!("/pair {}", pending.code));
}

#[test]
fn without_a_bot_no_pairing_code_can_be_asked_for() {
    let home = tempfile::tempdir().unwrap();
    let app = DesktopApp::new(settings(home.path(), None), Arc::new(Recorded::default()));
    let mut harness = harness(app);
    harness.run();
    harness.get_by_label("No bot is set up yet.");
    harness.get_by_label("New pairing code").click();
    harness.run();
    assert_eq!(
        cross_agent_telegram::store::read_access(home.path())
            .unwrap()
            .pending,
        None
    );
}

#[test]
fn the_token_is_typed_into_a_password_field_and_stored_as_telegram_setup_stores_it() {
    let bot = FakeBotApi::start(TOKEN, "desk_bot").unwrap();
    let home = tempfile::tempdir().unwrap();
    let app = DesktopApp::new(
        settings(home.path(), Some(bot.base_url())),
        Arc::new(Recorded::default()),
    );
    let mut harness = harness(app);
    harness.run();
    let field = harness.get_by_role_and_label(Role::PasswordInput, "Bot token");
    field.focus();
    field.type_text(TOKEN);
    harness.run();
    // What AccessKit (a screen reader, a screenshot tool) reads of the field is masked.
    let value = harness
        .get_by_role_and_label(Role::PasswordInput, "Bot token")
        .value()
        .unwrap_or_default();
    assert!(!value.contains("desk-test-token"), "{value:?}");
    assert_eq!(value.chars().count(), TOKEN.chars().count(), "{value:?}");

    harness.get_by_label("Save token").click();
    step_until(&mut harness, "the token to be checked and stored", |h| {
        h.query_by_label_contains("Stored. Bot @desk_bot is set up")
            .is_some()
    });
    assert_eq!(
        cross_agent_telegram::store::read_token(home.path()).unwrap(),
        Some(TOKEN.to_owned())
    );
    // Exactly `telegram setup`'s file: the token and a newline, owner-only.
    let file = home.path().join("telegram/token");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("{TOKEN}\n")
    );
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Checked with getMe, once; the field is empty again and the token shown nowhere.
    assert_eq!(bot.calls_to("getMe").len(), 1);
    assert_eq!(
        harness
            .get_by_role_and_label(Role::PasswordInput, "Bot token")
            .value()
            .unwrap_or_default(),
        ""
    );
    assert!(harness.query_by_label_contains("desk-test-token").is_none());
}

#[test]
fn a_token_the_bot_api_refuses_is_not_stored_and_the_reason_is_shown() {
    let bot = FakeBotApi::start(TOKEN, "desk_bot").unwrap();
    let home = tempfile::tempdir().unwrap();
    let app = DesktopApp::new(
        settings(home.path(), Some(bot.base_url())),
        Arc::new(Recorded::default()),
    );
    let mut harness = harness(app);
    harness.run();
    let field = harness.get_by_role_and_label(Role::PasswordInput, "Bot token");
    field.focus();
    field.type_text("999:wrong-token");
    harness.run();
    harness.get_by_label("Save token").click();
    step_until(&mut harness, "the refusal", |h| {
        h.query_by_label_contains("The token was not stored")
            .is_some()
    });
    assert_eq!(
        cross_agent_telegram::store::read_token(home.path()).unwrap(),
        None
    );
    assert!(harness.query_by_label_contains("wrong-token").is_none());
}

#[test]
fn the_service_buttons_are_there_and_a_click_runs_its_action() {
    let home = tempfile::tempdir().unwrap();
    let service = Arc::new(Recorded::default());
    let app = DesktopApp::new(settings(home.path(), None), service.clone()).with_tab(Tab::Service);
    let mut harness = harness(app);
    step_until(&mut harness, "the status", |h| {
        h.query_by_label("Service: active").is_some()
    });
    for button in ["Install", "Start", "Stop", "Uninstall", "Status"] {
        harness.get_by_role_and_label(Role::Button, button);
    }
    harness.get_by_label("Start").click();
    step_until(&mut harness, "the start", |h| {
        h.query_by_label("start: done (recorded)").is_some()
    });
    // The buttons wait while a call runs (here the status that follows every action).
    step_until(&mut harness, "the status after the start", |_| {
        service.calls.lock().len() == 3
    });
    harness.run();
    harness.get_by_label("Stop").click();
    step_until(&mut harness, "the stop", |h| {
        h.query_by_label("stop: done (recorded)").is_some()
    });
    // Each action is followed by a fresh status.
    step_until(&mut harness, "the status after the stop", |_| {
        service.calls.lock().len() == 5
    });
    assert_eq!(
        *service.calls.lock(),
        vec!["status", "start", "status", "stop", "status"]
    );
}
