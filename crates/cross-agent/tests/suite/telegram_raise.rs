//! The session card's Raise button, end to end: the built binary's daemon runs on a real
//! desktop (Xvfb + openbox, stand-in VS Code windows from testkit) and polls the fake Bot API;
//! the person taps Raise on a session's card and the session's window becomes the active one
//! (`_NET_ACTIVE_WINDOW`), the tap answered with the window's title; a session no window shows
//! gets no Raise, and a window gone since the card was posted is a refusal in words.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cross_agent_control::Control as _;
use cross_agent_control::x11::X11;
use cross_agent_testkit::desktop::{Desktop, wait_for};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};
use cross_agent_testkit::telegram::FakeBotApi;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::handoff::User;
use super::telegram::{WAIT, bot, spawn_fed, wait_within};

const PERSON: i64 = 5001;
const BETA: &str = "c-raise-beta";
const GAMMA: &str = "c-raise-gamma";

/// A user with two live Claude sessions (one in `beta/src`, one in `gamma`), a bot set up and
/// paired, and the daemon running on `desktop`.
struct Phone {
    user: User,
    api: FakeBotApi,
    daemon: Child,
}

impl Phone {
    fn start(desktop: &Desktop) -> Phone {
        let user = User::new();
        for (id, dir, title) in [
            (BETA, "work/beta/src", "port beta"),
            (GAMMA, "work/gamma", "gamma"),
        ] {
            let cwd = user.home.path().join(dir);
            std::fs::create_dir_all(&cwd).unwrap();
            let mut t = ClaudeTranscript::new(user.home.path(), &cwd.to_string_lossy(), id);
            t.user("hello", now_millis() - 120_000)
                .custom_title(title)
                .assistant_text("Hi.", now_millis() - 60_000);
            t.write().unwrap();
        }
        let (token, api) = bot();
        let phone_env = |command: &mut Command| {
            command
                .env("CROSS_AGENT_TELEGRAM_API", api.base_url())
                .env("CROSS_AGENT_TELEGRAM_POLL_TIMEOUT", "1");
        };
        let mut setup = user.command(&["telegram", "setup", "--json"]);
        phone_env(&mut setup);
        setup.stdout(Stdio::piped()).stderr(Stdio::piped());
        let setup = spawn_fed(&mut setup, &format!("{token}\n"));
        assert!(setup.wait_with_output().unwrap().status.success());
        let mut daemon = user.command(&["daemon", "run"]);
        phone_env(&mut daemon);
        let daemon = daemon
            .env("DISPLAY", desktop.display())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut pair = user.command(&["telegram", "pair", "--json"]);
        phone_env(&mut pair);
        let code: Value = serde_json::from_slice(&pair.output().unwrap().stdout).unwrap();
        api.push_message(
            PERSON,
            PERSON,
            &format!("/pair {}", code["code"].as_str().unwrap()),
        );
        assert!(
            wait_within(WAIT, || user
                .decisions()
                .iter()
                .any(|d| d["kind"] == "telegram_pair" && d["outcome"] == "paired")),
            "paired"
        );
        Phone { user, api, daemon }
    }

    /// `/sessions`, and the card of `session_id` it posts: (message id, button labels,
    /// callback data).
    fn card(&self, session_id: &str) -> (i64, Vec<String>, Vec<String>) {
        let skip = self.api.sent().len();
        self.api.push_message(PERSON, PERSON, "/sessions");
        let mut found = None;
        assert!(
            wait_within(WAIT, || {
                found = self.api.sent().into_iter().skip(skip).find(|(_, body)| {
                    body["text"]
                        .as_str()
                        .is_some_and(|t| t.contains(session_id))
                });
                found.is_some()
            }),
            "a card for {session_id}: {:#?}",
            self.api.sent()
        );
        let (message_id, body) = found.unwrap();
        let row = body["reply_markup"]["inline_keyboard"][0]
            .as_array()
            .unwrap()
            .clone();
        let field = |name: &str| -> Vec<String> {
            row.iter()
                .map(|b| b[name].as_str().unwrap().to_owned())
                .collect()
        };
        (message_id, field("text"), field("callback_data"))
    }

    /// Taps `data` on card `message_id`; the words the tap was answered with.
    fn tap(&self, message_id: i64, data: &str) -> String {
        let message = json!({"message_id": message_id, "date": 1_760_000_000,
            "chat": {"id": PERSON, "type": "private"}});
        let update = self.api.push_callback_on(PERSON, message, data);
        let id = format!("cb{update}");
        let answer = self
            .api
            .wait_for_call("answerCallbackQuery", WAIT, |body| {
                body["callback_query_id"] == id.as_str()
            })
            .expect("the tap is answered");
        answer.body["text"].as_str().unwrap_or("").to_owned()
    }
}

impl Drop for Phone {
    fn drop(&mut self) {
        let _ = self.user.command(&["daemon", "stop"]).output();
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

#[test]
fn raise_on_a_card_brings_the_sessions_window_to_the_front_and_says_which() {
    let desktop = Desktop::start().unwrap();
    let records = tempfile::tempdir().unwrap();
    let _alpha = desktop
        .open_window(
            "a.rs — alpha — Visual Studio Code",
            &records.path().join("a"),
        )
        .unwrap();
    let beta = desktop
        .open_window(
            "b.rs — beta — Visual Studio Code",
            &records.path().join("b"),
        )
        .unwrap();
    let control = X11::connect(desktop.display()).unwrap();
    wait_for("both windows", Duration::from_secs(10), || {
        Ok(control.windows()?.len() == 2)
    })
    .unwrap();
    let windows = control.windows().unwrap();
    let beta_id = windows
        .iter()
        .find(|w| w.pid == Some(beta.pid()))
        .unwrap()
        .id;
    // The last window mapped is in front: alpha's is raised first so the tap has to move it.
    let alpha_window = windows.iter().find(|w| w.id != beta_id).unwrap();
    control.focus(alpha_window).unwrap();

    let phone = Phone::start(&desktop);
    // gamma: no window names it, so its card offers no Raise.
    let (_, labels, _) = phone.card(GAMMA);
    assert_eq!(
        labels,
        [
            "✍️ Prompt",
            "ℹ️ Status",
            "🎯 Focus",
            "🤝 Hand off",
            "🔍 Review"
        ]
    );
    let (message_id, labels, data) = phone.card(BETA);
    assert_eq!(labels.last().map(String::as_str), Some("🪟 Raise"));
    assert_eq!(labels.len(), 6);

    let said = phone.tap(message_id, &data[5]);
    assert_eq!(said, "Raised window “b.rs — beta — Visual Studio Code”");
    assert_eq!(control.active().unwrap(), Some(beta_id));
    // Focus keeps its meaning: nothing about windows.
    let focus = phone.tap(message_id, &data[2]);
    assert_eq!(focus, "Focused");

    // The window closes after the card was posted: the tap says why nothing was raised.
    drop(beta);
    wait_for("beta's window to go", Duration::from_secs(10), || {
        Ok(control.windows()?.len() == 1)
    })
    .unwrap();
    let said = phone.tap(message_id, &data[5]);
    assert!(
        said.starts_with("Not raised: no editor window has"),
        "{said}"
    );
    let raised: Vec<String> = phone
        .user
        .decisions()
        .iter()
        .filter(|d| d["kind"] == "telegram_raise")
        .map(|d| format!("{} {}", d["outcome"], d["session"]))
        .collect();
    assert_eq!(
        raised,
        [
            format!("\"raised\" \"{BETA}\""),
            format!("\"refused\" \"{BETA}\"")
        ]
    );
}
