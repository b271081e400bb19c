//! Deliveries through the real `cross-agent shim grok` in front of the fake Grok ACP agent (the
//! real one cannot run here), with the test playing the VS Code extension and the daemon
//! running in-process: a message into an idle panel session, and a new conversation with no
//! empty session left in the panel going over the CLI instead.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use cross_agent_protocol::bridge::{Agent, DeliveryState, Transport};
use cross_agent_protocol::panel::PanelSessionState;
use cross_agent_testkit::binaries::{cross_agent_bin, fake_grok_bin};
use cross_agent_testkit::panel::PanelDriver;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::bridge_support::Bridge;
use super::panels_codex::{registration_where, with_ancestry};

const TURN: Duration = Duration::from_secs(60);

/// A Grok panel: the extension's end of the shim's stdio, the window above the shim, the shim.
struct GrokPanel {
    driver: PanelDriver,
    window: u32,
    shim: u32,
    next_id: u64,
}

impl GrokPanel {
    fn open(bridge: &Bridge) -> GrokPanel {
        GrokPanel::open_with(bridge, &[])
    }

    /// [`GrokPanel::open`] with more variables for the fake Grok.
    fn open_with(bridge: &Bridge, env: &[(&str, &str)]) -> GrokPanel {
        let mut command = Command::new("sh");
        // `; exit` keeps sh as the shim's parent (no exec), as an extension host is.
        command
            .arg("-c")
            .arg("\"$@\"; exit $?")
            .arg("window")
            .arg(cross_agent_bin().unwrap())
            .args(["shim", "grok", "agent", "stdio"])
            .current_dir(&bridge.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", bridge.agents.path())
            .env("CROSS_AGENT_REAL_GROK", fake_grok_bin().unwrap())
            .env("CROSS_AGENT_HOME", bridge.state.root())
            .envs(env.iter().copied());
        let driver = PanelDriver::start(command).unwrap();
        let window = driver.pid();
        let mut panel = GrokPanel {
            driver,
            window,
            shim: 0,
            next_id: 0,
        };
        panel.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
        panel.shim = registration_where(bridge, |r| r.ancestors.first() == Some(&window)).pid;
        panel
    }

    fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let id = self.next_id;
        self.next_id += 1;
        self.driver
            .send(
                &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
                    .to_string(),
            )
            .unwrap();
        self.driver.next_line(TURN, |l| l["id"] == id).unwrap()
    }

    /// A session the extension opens (nobody has prompted it yet); its id.
    fn new_session(&mut self, bridge: &Bridge) -> String {
        let created = self.request(
            "session/new",
            json!({"cwd": bridge.project, "mcpServers": []}),
        );
        created["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    /// A prompt a human types into `session`; returns when its turn ended.
    fn type_prompt(&mut self, session: &str, text: &str) {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        );
    }

    fn registration_file(&self, bridge: &Bridge) -> PathBuf {
        bridge
            .state
            .root()
            .join("panels")
            .join(format!("grok-{}.json", self.shim))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_into_an_idle_grok_panel_session_shows_a_quoted_block_and_records_the_answer() {
    let bridge = Bridge::start().await;
    let mut panel = GrokPanel::open(&bridge);
    let session = panel.new_session(&bridge);
    panel.type_prompt(&session, "human hello g1");
    let shim = panel.shim;
    registration_where(&bridge, |r| {
        r.pid == shim
            && r.sessions.iter().any(|s| {
                s.session_id.as_deref() == Some(session.as_str())
                    && s.has_history
                    && s.state == PanelSessionState::Idle
            })
    });

    let caller = with_ancestry(
        bridge.claude_caller("5a1d0000-0000-4000-8000-0000000000e1"),
        &[panel.window],
    );
    let receipt = bridge
        .accepted(bridge.send_params(Agent::Grok, "question g1", caller))
        .await;
    assert_eq!(receipt.target_session_id.as_deref(), Some(session.as_str()));
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert_eq!(record.transport, Transport::Panel);
    let answer = record.reply_preview.clone().unwrap_or_default();
    assert!(answer.starts_with("grok: "), "{record:#?}");
    assert!(answer.contains(&record.request_id), "{record:#?}");
    // The panel showed the relayed message as a quoted block at the head of the reply.
    let shown = String::from_utf8_lossy(&panel.driver.received()).into_owned();
    assert!(shown.contains("> **claude · session"), "{shown}");
    assert!(shown.contains("question g1"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_grok_conversation_with_no_empty_session_left_goes_over_the_cli() {
    let bridge = Bridge::start().await;
    let mut panel = GrokPanel::open(&bridge);
    let session = panel.new_session(&bridge);
    let shim = panel.shim;
    registration_where(&bridge, |r| {
        r.pid == shim
            && r.sessions
                .iter()
                .any(|s| s.session_id.as_deref() == Some(session.as_str()) && !s.has_history)
    });
    // The registration as the daemon may read it a moment before the person types: the
    // session still empty. Then the person types into it, and the daemon acts on that read.
    let file = panel.registration_file(&bridge);
    let before = std::fs::read(&file).unwrap();
    panel.type_prompt(&session, "human hello g2");
    registration_where(&bridge, |r| {
        r.pid == shim && r.sessions.iter().all(|s| s.has_history)
    });
    std::fs::write(&file, &before).unwrap();

    let log = bridge.agents.path().join("fake-grok.log");
    let mut caller = with_ancestry(
        bridge.claude_caller("5a1d0000-0000-4000-8000-0000000000e2"),
        &[panel.window],
    );
    caller.settings.insert(
        "CROSS_AGENT_GROK_BIN".into(),
        fake_grok_bin().unwrap().to_string_lossy().into_owned(),
    );
    caller
        .child_env
        .insert("FAKE_GROK_LOG".into(), log.to_string_lossy().into_owned());
    let mut params = bridge.send_params(Agent::Grok, "fresh start g2", caller);
    params.new_session = true;
    let receipt = bridge.accepted(params).await;
    assert!(receipt.will_create_session, "{receipt:#?}");
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert_eq!(record.transport, Transport::HeadlessCli, "{record:#?}");
    let created = record.target_session_id.clone().expect("a new session id");
    assert_ne!(created, session);
    assert!(
        record
            .reply_preview
            .as_deref()
            .is_some_and(|r| r.starts_with("grok cli: ")),
        "{record:#?}"
    );
    // `grok --single=<message> --session-id <new uuid>`, and nothing into the panel.
    let logged = std::fs::read_to_string(&log).unwrap();
    let argv: Vec<String> = logged
        .lines()
        .filter_map(|l| l.strip_prefix("argv: "))
        .filter_map(|l| serde_json::from_str(l).ok())
        .next_back()
        .expect("the CLI ran");
    assert!(argv[0].starts_with("--single="), "{argv:?}");
    let at = argv.iter().position(|a| a == "--session-id").unwrap();
    assert_eq!(argv[at + 1], created);
    assert!(uuid::Uuid::parse_str(&created).is_ok(), "{created}");
    let shown = String::from_utf8_lossy(&panel.driver.received()).into_owned();
    assert!(!shown.contains("fresh start g2"), "{shown}");
}

/// Five replies wait in five busy senders' panels (each shim took its reply `queued` behind the
/// person's running turn) while a request to an idle peer goes through: the replies hold no
/// worker, and each is written once its sender's turn ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_queued_for_busy_senders_leave_the_workers_to_other_requests() {
    let bridge = Bridge::start().await;
    let fake_grok = fake_grok_bin().unwrap().to_string_lossy().into_owned();
    let mut senders = Vec::new();
    for _ in 0..5 {
        let mut panel = GrokPanel::open_with(&bridge, &[("FAKE_GROK_SLOW_MS", "8000")]);
        let session = panel.new_session(&bridge);
        // The person's slow turn, left running.
        let id = panel.next_id;
        panel.next_id += 1;
        panel
            .driver
            .send(
                &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "slow human g3"}]}})
                    .to_string(),
            )
            .unwrap();
        let shim = panel.shim;
        registration_where(&bridge, |r| {
            r.pid == shim
                && r.sessions
                    .iter()
                    .any(|s| s.state == PanelSessionState::Working)
        });
        senders.push((panel, session));
    }

    // Each busy session asks a new Grok session over the CLI (it answers at once).
    let mut requests = Vec::new();
    for (panel, session) in &senders {
        let mut caller = with_ancestry(
            bridge.claude_caller("5a1d0000-0000-4000-8000-0000000000e3"),
            &[panel.shim, panel.window],
        );
        caller.claude_code_session_id = None;
        caller.client_name = Some("grok".into());
        caller.grok_session_id = Some(session.clone());
        caller
            .settings
            .insert("CROSS_AGENT_GROK_BIN".into(), fake_grok.clone());
        let mut params = bridge.send_params(Agent::Grok, "question g3", caller);
        params.new_session = true;
        params.allow_same_agent = true;
        let receipt = bridge.accepted(params).await;
        assert!(receipt.return_panel_available_now, "{receipt:#?}");
        requests.push(receipt.delivery_id);
    }
    let mut returns = Vec::new();
    for id in &requests {
        let request = bridge.wait_finished(id).await;
        assert_eq!(request.state, DeliveryState::Delivered, "{request:#?}");
        returns.push(
            request
                .return_delivery_id
                .clone()
                .expect("a return delivery"),
        );
    }
    for id in &returns {
        bridge
            .wait_record(id, TURN, |r| r.state == DeliveryState::AwaitingPeer)
            .await;
    }

    // A request to an idle peer is carried while all five replies still wait.
    let mut caller = bridge.codex_caller("019a0000-0000-7000-8000-0000000000e3");
    caller
        .settings
        .insert("CROSS_AGENT_GROK_BIN".into(), fake_grok.clone());
    let mut params = bridge.send_params(Agent::Grok, "idle peer g3", caller);
    params.new_session = true;
    let receipt = bridge.accepted(params).await;
    let record = bridge
        .wait_record(&receipt.delivery_id, TURN, |r| r.state.is_finished())
        .await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    for id in &returns {
        let status = bridge.status(Some(id)).await;
        let back = status.delivery.unwrap();
        assert!(!back.state.is_finished(), "{back:#?}");
    }

    // Each reply is written once its sender's turn ends.
    for (id, (panel, _)) in returns.iter().zip(&senders) {
        let back = bridge.wait_finished(id).await;
        assert_eq!(back.state, DeliveryState::Delivered, "{back:#?}");
        let shown = String::from_utf8_lossy(&panel.driver.received()).into_owned();
        assert!(shown.contains("=== BRIDGE REPLY ==="), "{shown}");
    }
}
