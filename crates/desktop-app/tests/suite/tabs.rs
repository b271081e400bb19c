//! The Logs and Sessions tabs through AccessKit (`egui_kittest`): the level filter hides the
//! lines below the chosen level (a real log file in a temporary home), and each session row
//! shows its branch and window and its Focus and Hand off buttons call the sessions backend —
//! a recording one, so no test raises a window or runs a handoff.

use std::path::PathBuf;
use std::sync::Arc;

use cross_agent_desktop::{DesktopApp, SessionPlace, SessionsBackend, Settings, Tab};
use cross_agent_stores::Session;
use egui_kittest::kittest::Queryable as _;
use parking_lot::Mutex;
use pretty_assertions::assert_eq;

use super::panels::{Recorded, harness, step_until};

fn app(home: &std::path::Path, tab: Tab) -> DesktopApp {
    DesktopApp::new(
        Settings {
            home: home.to_owned(),
            telegram_api: None,
            cli: home.join("no-cross-agent-here"),
        },
        Arc::new(Recorded::default()),
    )
    .with_tab(tab)
}

#[test]
fn the_logs_level_filter_hides_the_lower_levels() {
    let home = tempfile::tempdir().unwrap();
    let logs = home.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(
        logs.join("daemon.log.2026-12-06"),
        "2026-12-06T08:00:00Z ERROR daemon: the disk is full\n\
         2026-12-06T08:00:01Z  WARN daemon: a slow store\n\
         2026-12-06T08:00:02Z  INFO daemon: listening\n\
         2026-12-06T08:00:03Z DEBUG daemon: a detail\n",
    )
    .unwrap();
    let mut harness = harness(app(home.path(), Tab::Logs));
    harness.run();
    // INFO by default: ERROR, WARN and INFO shown, DEBUG not.
    harness.get_by_label("2026-12-06T08:00:02Z  INFO daemon: listening");
    assert!(
        harness
            .query_by_label("2026-12-06T08:00:03Z DEBUG daemon: a detail")
            .is_none()
    );
    harness.get_by_label("WARN").click();
    harness.run();
    harness.get_by_label("2026-12-06T08:00:01Z  WARN daemon: a slow store");
    harness.get_by_label("2026-12-06T08:00:00Z ERROR daemon: the disk is full");
    assert!(
        harness
            .query_by_label("2026-12-06T08:00:02Z  INFO daemon: listening")
            .is_none()
    );
    harness.get_by_label("DEBUG").click();
    harness.run();
    harness.get_by_label("2026-12-06T08:00:03Z DEBUG daemon: a detail");
}

/// A sessions backend with two sessions that records what it is asked.
#[derive(Default)]
struct Sessions {
    calls: Mutex<Vec<String>>,
}

fn session(id: &str, title: &str, cwd: &str) -> Session {
    Session {
        agent: cross_agent_stores::Agent::Claude,
        session_id: id.to_owned(),
        cwd: Some(PathBuf::from(cwd)),
        title: Some(title.to_owned()),
        title_is_assigned: true,
        first_activity: None,
        last_activity: None,
        is_working: false,
        path: PathBuf::from("/nowhere.jsonl"),
        copilot: None,
    }
}

impl SessionsBackend for Sessions {
    fn list(&self) -> Vec<Session> {
        self.calls.lock().push("list".into());
        vec![
            session("aaaaaaaa-1", "port api", "/w/api"),
            session("bbbbbbbb-2", "notes", "/w/notes"),
        ]
    }
    fn places(&self, sessions: &[Session]) -> Vec<SessionPlace> {
        sessions
            .iter()
            .map(|s| match s.session_id.as_str() {
                "aaaaaaaa-1" => SessionPlace {
                    window: Some("0x3a00003 main.rs - api - Visual Studio Code".into()),
                    branch: Some("feat/login".into()),
                },
                _ => SessionPlace::default(),
            })
            .collect()
    }
    fn focus(&self, session: &Session) -> Result<String, String> {
        self.calls
            .lock()
            .push(format!("focus {}", session.session_id));
        Ok("raised window 0x3a00003 \"main.rs - api - Visual Studio Code\"".into())
    }
    fn hand_off(&self, session_id: &str, to: &str) -> Result<String, String> {
        self.calls
            .lock()
            .push(format!("hand_off {session_id} {to}"));
        Err("no cli:claude here (recorded)".into())
    }
}

#[test]
fn sessions_show_their_window_and_branch_and_the_buttons_call_through() {
    let home = tempfile::tempdir().unwrap();
    let backend = Arc::new(Sessions::default());
    let app = app(home.path(), Tab::Sessions).with_sessions(backend.clone());
    let mut harness = harness(app);
    step_until(&mut harness, "the listing", |h| {
        h.query_by_label("port api").is_some()
    });
    harness.get_by_label("feat/login");
    harness.get_by_label("0x3a00003 main.rs - api - Visual Studio Code");

    harness.get_by_label("Focus aaaaaaaa").click();
    step_until(&mut harness, "the focus", |h| {
        h.query_by_label("raised window 0x3a00003 \"main.rs - api - Visual Studio Code\"")
            .is_some()
    });
    harness.get_by_label("Hand off bbbbbbbb").click();
    step_until(&mut harness, "the handoff", |h| {
        h.query_by_label("no cli:claude here (recorded)").is_some()
    });
    assert_eq!(
        *backend.calls.lock(),
        ["list", "focus aaaaaaaa-1", "hand_off bbbbbbbb-2 cli:claude"]
    );
}
