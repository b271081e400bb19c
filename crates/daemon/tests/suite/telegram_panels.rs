//! A real Codex app-server panel's command approval answered from the phone: the real
//! `cross-agent shim codex app-server` in front of the real Codex, the test playing the VS Code
//! extension, a daemon process polling the fake Bot API. The card shows the whole command; the
//! tap goes through the shim (`answer_approval`); the command runs.

use std::time::{Duration, Instant};

use cross_agent_telegram::store::{self, Access, Paired};
use cross_agent_testkit::endpoint::{Rule, ToolCall};
use cross_agent_testkit::telegram::FakeBotApi;
use serde_json::{Value, json};

use super::bridge_support::{Bridge, spawn_daemon_process};
use super::panels_codex::CodexPanel;

const TURN: Duration = Duration::from_secs(120);
const PHONE: i64 = 5001;

fn read_json(path: &std::path::Path) -> Value {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null)
}

fn wait_for<T>(what: &str, mut find: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TURN;
    loop {
        if let Some(found) = find() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not seen in time");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_codex_panel_command_approval_is_answered_from_the_phone() {
    let token = format!("4242:SECRET{}", uuid::Uuid::new_v4().simple());
    let api = FakeBotApi::start(&token, "panels_bot").unwrap();
    let mut bridge = Bridge::start().await;
    bridge.stop_daemon().await;
    let root = bridge.state.root().to_owned();
    store::write_token(&root, &token).unwrap();
    store::write_access(
        &root,
        &Access {
            paired: vec![Paired {
                user_id: PHONE,
                chat_id: PHONE,
                name: "phone".into(),
                paired_at: "2026-12-01T00:00:00Z".into(),
            }],
            pending: None,
        },
    )
    .unwrap();
    let user = bridge.state.dir.path().join("user");
    let (_daemon, conn) = spawn_daemon_process(
        &root,
        &user,
        &[
            ("CROSS_AGENT_TELEGRAM_API", api.base_url()),
            ("CROSS_AGENT_TELEGRAM_POLL_TIMEOUT", "1"),
        ],
    )
    .await;
    bridge.conn = conn;
    wait_for("the poller", || {
        (read_json(&root.join("telegram/status.json"))["state"] == "polling").then_some(())
    });

    let marker = bridge.project.join("marker.txt");
    let command = format!("echo approved > {}", marker.display());
    bridge.endpoint.push(
        Rule::on_user_text("run the marker command")
            .tool_call(ToolCall::new("exec_command", json!({"cmd": command})))
            .once(),
    );
    bridge
        .endpoint
        .push(Rule::on_any_tool_result().reply_text("command done"));
    let mut panel = CodexPanel::open(&bridge);
    // `untrusted` asks before any command that is not known to be safe; the sandbox lets the
    // approved command write the marker in the project. (Under `read-only` Codex runs an
    // approved command in the sandbox first and again outside it only when it takes the
    // failure for a sandbox denial — which it once did not, on a loaded machine: the marker's
    // absence then said nothing about the phone's answer.)
    panel
        .driver
        .send(
            &json!({"id": 900, "method": "thread/start", "params": {"cwd": bridge.project,
                "approvalPolicy": "untrusted", "sandbox": "workspace-write"}})
            .to_string(),
        )
        .unwrap();
    let started = panel.driver.next_line(TURN, |l| l["id"] == 900).unwrap();
    let thread = started["result"]["thread"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    panel
        .driver
        .send(
            &json!({"id": 901, "method": "turn/start", "params": {"threadId": thread,
                "input": [{"type": "text", "text": "run the marker command"}]}})
            .to_string(),
        )
        .unwrap();

    let card = wait_for("the approval card", || {
        api.calls_to("sendMessage")
            .into_iter()
            .find(|c| c.body.get("reply_markup").is_some())
    });
    let shown = card.body["text"].as_str().unwrap();
    assert!(shown.contains("Codex panel · command"), "{shown}");
    assert!(
        shown.contains(&command.replace('>', "&gt;")),
        "the whole command: {shown}"
    );
    let allow = card.body["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(allow.starts_with("a:"));
    api.push_callback(PHONE, PHONE, 1, &allow);
    panel
        .driver
        .next_line(TURN, |l| {
            l["method"] == "turn/completed" && l["params"]["threadId"] == thread.as_str()
        })
        .unwrap();
    // Should the command not have run, what Codex told the model of it says why.
    let told_the_model = || {
        let requests = bridge.endpoint.model_requests();
        let input = requests.last().map(|r| r.body["input"].clone());
        let text = input.map(|i| i.to_string()).unwrap_or_default();
        text.chars()
            .rev()
            .take(3000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<String>()
    };
    assert_eq!(
        std::fs::read_to_string(&marker).ok().as_deref(),
        Some("approved\n"),
        "allowed from the phone: the command ran; Codex's last input to the model ends: {}",
        told_the_model()
    );
    let decisions = std::fs::read_to_string(root.join("decisions.jsonl")).unwrap();
    assert!(
        decisions.lines().any(|line| {
            let d: Value = serde_json::from_str(line).unwrap();
            d["kind"] == "approval"
                && d["outcome"] == "allowed"
                && d["agent"] == "codex"
                && d["details"]["via"] == "panel"
                && d["details"]["user_id"] == PHONE
        }),
        "{decisions}"
    );
    // The panel's turn end is notified (a Codex panel has no Stop hook).
    wait_for("the turn-ended notification", || {
        api.calls_to("sendMessage").into_iter().find(|c| {
            c.body["text"]
                .as_str()
                .unwrap_or("")
                .contains("Codex panel")
                && c.body["text"].as_str().unwrap_or("").contains("finished")
        })
    });
    let _ = std::process::Command::new(cross_agent_testkit::binaries::cross_agent_bin().unwrap())
        .args(["daemon", "stop"])
        .env("CROSS_AGENT_HOME", &root)
        .env("HOME", &user)
        .status();
}
