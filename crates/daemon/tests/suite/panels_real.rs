//! Deliveries through real panel shims (`cross-agent shim claude`) in front of the real Claude
//! Code, with the test playing the VS Code extension over the shim's stdio (the testkit's
//! `PanelDriver`) and the daemon running in-process: a message into an idle and a busy panel,
//! the answer pushed back into the sender's own panel as a `BRIDGE REPLY`, two windows, and a
//! panel closed before its reply.
//!
//! A "window" is a `sh` process standing for a VS Code extension host: each shim is started
//! under one, so two windows have two different parents, as the window rule needs.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use cross_agent_protocol::bridge::{
    Agent, AncestorProcess, CallerContext, DeliveryState, TargetSelectedBy, Transport,
};
use cross_agent_protocol::panel::{PanelRegistration, PanelSessionState};
use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::endpoint::{Reply, Rule};
use cross_agent_testkit::panel::{CLAUDE_SDK_ARGS, PanelDriver, claude_initialize, claude_user};
use pretty_assertions::assert_eq;

use super::bridge_support::Bridge;

/// Long enough for a cold Claude start on a loaded machine.
pub(super) const TURN: Duration = Duration::from_secs(120);

/// A Claude panel: the extension's end of its stdio, the window process above the shim, and
/// the shim's pid.
pub(super) struct Panel {
    pub(super) driver: PanelDriver,
    /// The process standing for the window's extension host (the shim's parent).
    window: u32,
    pub(super) shim: u32,
}

impl Panel {
    /// Real Claude behind a real shim, started under a window process of its own, initialized.
    pub(super) fn open(bridge: &Bridge) -> Panel {
        Panel::open_with(bridge, &[])
    }

    /// [`Panel::open`] with more arguments for Claude (after the SDK's own).
    pub(super) fn open_with(bridge: &Bridge, extra: &[&str]) -> Panel {
        let claude = bridge.claude();
        let mut command = Command::new("sh");
        // `; exit` keeps sh as the shim's parent (no exec), as an extension host is.
        command
            .arg("-c")
            .arg("\"$@\"; exit $?")
            .arg("window")
            .arg(cross_agent_bin().unwrap())
            .arg("shim")
            .arg("claude")
            .arg(claude.binary())
            .args(CLAUDE_SDK_ARGS)
            .args(extra)
            .current_dir(&bridge.project)
            .env_clear()
            .envs(claude.env())
            .env("CROSS_AGENT_HOME", bridge.state.root());
        let mut driver = PanelDriver::start(command).unwrap();
        let window = driver.pid();
        driver.send(&claude_initialize("init-1")).unwrap();
        driver
            .next_line(TURN, |l| l["type"] == "control_response")
            .unwrap();
        let shim = registration_where(bridge, |r| r.ancestors.first() == Some(&window)).pid;
        Panel {
            driver,
            window,
            shim,
        }
    }

    /// A human turn typed into the panel, so it holds a conversation; returns its id.
    pub(super) fn converse(&mut self, bridge: &Bridge, prompt: &str) -> String {
        bridge
            .endpoint
            .push(Rule::on_user_text(prompt).reply_text("human reply").once());
        self.driver.send(&claude_user(prompt)).unwrap();
        self.driver
            .next_line(TURN, |l| l["type"] == "result")
            .unwrap();
        let shim = self.shim;
        let registration = registration_where(bridge, |r| {
            r.pid == shim
                && r.sessions
                    .first()
                    .is_some_and(|s| s.session_id.is_some() && s.state == PanelSessionState::Idle)
        });
        registration.sessions[0].session_id.clone().unwrap()
    }

    /// Every line the panel received on stdout that mentions `needle`.
    fn stdout_mentions(&self, needle: &str) -> bool {
        String::from_utf8_lossy(&self.driver.received()).contains(needle)
    }
}

/// Waits for a registration in `panels/` that satisfies `wanted`.
pub(super) fn registration_where(
    bridge: &Bridge,
    wanted: impl Fn(&PanelRegistration) -> bool,
) -> PanelRegistration {
    let dir: PathBuf = bridge.state.root().join("panels");
    let deadline = Instant::now() + TURN;
    loop {
        let found = std::fs::read_dir(&dir).ok().and_then(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .filter_map(|e| std::fs::read(e.path()).ok())
                .filter_map(|bytes| serde_json::from_slice::<PanelRegistration>(&bytes).ok())
                .find(|r| wanted(r))
        });
        if let Some(found) = found {
            return found;
        }
        assert!(Instant::now() < deadline, "no such registration in {dir:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A caller whose process ancestry runs through `chain` (nearest first).
fn with_ancestry(mut caller: CallerContext, chain: &[u32]) -> CallerContext {
    caller.ancestry = chain
        .iter()
        .map(|pid| AncestorProcess {
            pid: *pid,
            name: "x".into(),
            cmdline: String::new(),
        })
        .collect();
    caller
}

/// The prompts the scripted model received that carry `needle`.
pub(super) fn prompts_with(bridge: &Bridge, needle: &str) -> Vec<String> {
    bridge
        .endpoint
        .model_requests()
        .into_iter()
        .filter(|r| !r.side_request)
        .filter_map(|r| r.last_user_prompt)
        .filter(|p| p.contains(needle))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_panels_send_to_codex_comes_back_into_that_panel_as_a_bridge_reply() {
    let bridge = Bridge::start().await;
    let mut panel = Panel::open(&bridge);
    let session = panel.converse(&bridge, "hello from the panel r1");
    let thread = bridge.codex_session("seed codex r1");
    bridge
        .endpoint
        .push(Rule::on_user_text("question r1").reply(Reply::echo_token("codex answer r1")));
    bridge.endpoint.push(
        Rule::on_user_text("=== BRIDGE REPLY ===")
            .reply_text("noted the reply r1")
            .once(),
    );

    // The call comes from the panel's own MCP server: below the shim, with its session id.
    let caller = with_ancestry(bridge.claude_caller(&session), &[panel.shim, panel.window]);
    let mut params = bridge.send_params(Agent::Codex, "question r1", caller);
    params.session_id = Some(thread.clone());
    let receipt = bridge.accepted(params).await;
    assert!(receipt.return_panel_available_now, "{receipt:#?}");
    assert!(
        !receipt
            .warnings
            .iter()
            .any(|w| w.contains("return_panel_available_now is false")),
        "{:#?}",
        receipt.warnings
    );

    let request = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(request.state, DeliveryState::Delivered, "{request:#?}");
    assert!(!request.is_return_status_only);
    let return_id = request
        .return_delivery_id
        .clone()
        .expect("a return delivery");
    let back = bridge.wait_finished(&return_id).await;
    assert_eq!(back.state, DeliveryState::Delivered, "{back:#?}");
    assert_eq!(back.transport, Transport::Panel);
    assert_eq!(back.target_session_id.as_deref(), Some(session.as_str()));
    assert_eq!(
        back.answer.answers_delivery_id.as_deref(),
        Some(receipt.delivery_id.as_str())
    );
    // No hop spent on the way back: the conversation's count is the request's.
    assert_eq!(back.hop, request.hop);

    // The reply went into that panel's conversation: its model read the BRIDGE REPLY with the
    // Codex answer, and the panel showed the turn it ran on it.
    panel
        .driver
        .next_line(TURN, |l| {
            l["type"] == "result" && l["result"] == "noted the reply r1"
        })
        .unwrap();
    let prompt = prompts_with(&bridge, "=== BRIDGE REPLY ===").pop().unwrap();
    assert!(prompt.contains("codex answer r1"), "{prompt}");
    assert!(
        prompt.contains(&format!("from: codex session {thread}")),
        "{prompt}"
    );

    // bridge_status on the request shows the return delivery's outcome.
    let status = bridge.status(Some(&receipt.delivery_id)).await;
    assert_eq!(
        status.return_delivery.map(|r| r.state),
        Some(DeliveryState::Delivered)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_into_an_idle_and_into_a_busy_claude_panel() {
    let bridge = Bridge::start().await;
    let mut panel = Panel::open(&bridge);
    let session = panel.converse(&bridge, "hello panel i1");
    bridge
        .endpoint
        .push(Rule::on_user_text("idle question i1").reply(Reply::echo_token("panel answer i1")));
    // A Codex caller in the same window, naming no session: the tab in front is chosen.
    let caller = with_ancestry(
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000a1"),
        &[panel.window],
    );
    let receipt = bridge
        .accepted(bridge.send_params(Agent::Claude, "idle question i1", caller.clone()))
        .await;
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::PanelFocus);
    assert_eq!(receipt.target_session_id.as_deref(), Some(session.as_str()));
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert_eq!(record.transport, Transport::Panel);
    assert!(record.reply_preview.unwrap().starts_with("panel answer i1"));
    assert!(record.answer.reply_carries_request_id);
    // The person watching saw it: the bridged turn's result is on the panel's stdout.
    assert!(panel.stdout_mentions("panel answer i1"));
    // The Codex caller has no panel: the answer stays on the record.
    assert!(record.is_return_status_only);
    assert_eq!(record.return_delivery_id, None);

    // Busy: a slow human turn runs; the message waits for it and then goes in. The human's
    // answer is held until the message has left the daemon's queue for the shim's.
    let release = bridge.agents.path().join("release-human-i1");
    bridge.endpoint.push(
        Rule::on_user_text("slow human i1")
            .reply(Reply::text("human answer i1").after_file(&release))
            .once(),
    );
    bridge
        .endpoint
        .push(Rule::on_user_text("busy question i1").reply(Reply::echo_token("bridged answer i1")));
    panel.driver.send(&claude_user("slow human i1")).unwrap();
    let shim = panel.shim;
    registration_where(&bridge, |r| {
        r.pid == shim && r.sessions[0].state == PanelSessionState::Working
    });
    let mut named = bridge.send_params(Agent::Claude, "busy question i1", caller);
    named.session_id = Some(session.clone());
    let receipt = bridge.accepted(named).await;
    bridge
        .wait_record(&receipt.delivery_id, TURN, |r| {
            r.state != DeliveryState::Queued
        })
        .await;
    std::fs::write(&release, "").unwrap();
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(
        record
            .reply_preview
            .unwrap()
            .starts_with("bridged answer i1")
    );
    let received = String::from_utf8_lossy(&panel.driver.received()).into_owned();
    let human = received
        .find("human answer i1")
        .expect("the human's answer");
    let bridged = received
        .find("bridged answer i1")
        .expect("the bridged answer");
    assert!(human < bridged, "the human's turn ran first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_window_is_chosen_and_the_other_is_listed_yet_reachable_by_id() {
    let bridge = Bridge::start().await;
    let mut here = Panel::open(&bridge);
    let mut there = Panel::open(&bridge);
    let here_session = here.converse(&bridge, "window one w1");
    let there_session = there.converse(&bridge, "window two w1");
    bridge
        .endpoint
        .push(Rule::on_user_text("unaddressed w1").reply(Reply::echo_token("answer here w1")));
    bridge
        .endpoint
        .push(Rule::on_user_text("addressed w1").reply(Reply::echo_token("answer there w1")));
    let caller = with_ancestry(
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000b1"),
        &[here.window],
    );

    let receipt = bridge
        .accepted(bridge.send_params(Agent::Claude, "unaddressed w1", caller.clone()))
        .await;
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::PanelFocus);
    assert_eq!(
        receipt.target_session_id.as_deref(),
        Some(here_session.as_str())
    );

    let status = bridge
        .conn
        .client
        .call(cross_agent_protocol::bridge::BridgeStatusParams {
            cwd: None,
            scope: None,
            delivery_id: None,
            caller: caller.clone(),
        })
        .await
        .unwrap();
    let claude: &cross_agent_protocol::bridge::IdePanels = &status.ide_panels[&Agent::Claude];
    let tabs: Vec<_> = claude.tabs.iter().map(|t| t.session_id.clone()).collect();
    assert_eq!(tabs, [Some(here_session.clone())]);
    let others: Vec<_> = claude
        .other_window_sessions
        .iter()
        .map(|t| t.session_id.clone())
        .collect();
    assert_eq!(others, [Some(there_session.clone())]);

    let mut named = bridge.send_params(Agent::Claude, "addressed w1", caller);
    named.session_id = Some(there_session.clone());
    let receipt = bridge.accepted(named).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert_eq!(record.transport, Transport::Panel);
    assert!(there.stdout_mentions("answer there w1"));
    assert!(!here.stdout_mentions("answer there w1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_whose_panel_closed_fails_undelivered_and_nothing_is_resumed() {
    let bridge = Bridge::start().await;
    let mut panel = Panel::open(&bridge);
    let session = panel.converse(&bridge, "hello closing c1");
    let thread = bridge.codex_session("seed codex c1");
    // The Codex turn's answer is held until the panel has closed.
    let release = bridge.agents.path().join("release-codex-c1");
    bridge.endpoint.push(
        Rule::on_user_text("question c1")
            .reply(Reply::echo_token("codex answer c1").after_file(&release)),
    );
    let caller = with_ancestry(bridge.claude_caller(&session), &[panel.shim, panel.window]);
    let mut params = bridge.send_params(Agent::Codex, "question c1", caller);
    params.session_id = Some(thread);
    let receipt = bridge.accepted(params).await;
    assert!(receipt.return_panel_available_now);
    panel.driver.close_stdin();
    assert!(panel.driver.wait(TURN).unwrap().success());
    std::fs::write(&release, "").unwrap();

    let request = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(request.state, DeliveryState::Delivered, "{request:#?}");
    // The route is resolved again when the answer exists: no panel, so the answer stays on the
    // record and nothing is resumed.
    assert!(request.is_return_status_only, "{request:#?}");
    assert_eq!(request.return_delivery_id, None);
    let status = bridge.status(Some(&receipt.delivery_id)).await;
    assert!(status.peer_transcript.unwrap().answer.is_some());
    // No Claude turn ran on the reply: no CLI was started for it.
    assert_eq!(
        prompts_with(&bridge, "=== BRIDGE REPLY ==="),
        Vec::<String>::new()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_waiting_in_a_panel_that_then_closes_fails_as_undelivered() {
    let bridge = Bridge::start().await;
    let mut panel = Panel::open(&bridge);
    let session = panel.converse(&bridge, "hello closing c2");
    let thread = bridge.codex_session("seed codex c2");
    bridge
        .endpoint
        .push(Rule::on_user_text("question c2").reply(Reply::echo_token("codex answer c2")));
    // The sender is busy with a long turn of its own when the answer comes back: its answer is
    // held for the rest of the test (a gate never opened), however slow the machine.
    let never = bridge.agents.path().join("never-released-c2");
    bridge.endpoint.push(
        Rule::on_user_text("long human c2")
            .reply(Reply::text("human answer c2").after_file(&never))
            .once(),
    );
    panel.driver.send(&claude_user("long human c2")).unwrap();
    let shim = panel.shim;
    registration_where(&bridge, |r| {
        r.pid == shim && r.sessions[0].state == PanelSessionState::Working
    });
    let caller = with_ancestry(bridge.claude_caller(&session), &[panel.shim, panel.window]);
    let mut params = bridge.send_params(Agent::Codex, "question c2", caller);
    params.session_id = Some(thread);
    let receipt = bridge.accepted(params).await;
    let request = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(request.state, DeliveryState::Delivered, "{request:#?}");
    let return_id = request
        .return_delivery_id
        .clone()
        .expect("a return delivery");
    // The reply waits in the shim for the sender's turn; the window closes meanwhile.
    bridge
        .wait_record(&return_id, TURN, |r| r.state != DeliveryState::Queued)
        .await;
    let _ = Command::new("kill")
        .arg("-KILL")
        .arg(panel.shim.to_string())
        .status();
    // Claude, busy with the long turn, ends with its shim.
    cross_agent_testkit::leaks::assert_none_left(
        bridge.agents.path(),
        cross_agent_testkit::leaks::SETTLE,
    )
    .unwrap();
    let back = bridge.wait_finished(&return_id).await;
    assert_eq!(back.state, DeliveryState::Failed, "{back:#?}");
    assert!(back.is_undelivered, "{back:#?}");
    assert!(
        back.error
            .as_deref()
            .unwrap_or_default()
            .contains("no CLI was resumed"),
        "{back:#?}"
    );
    let request = bridge.status(Some(&receipt.delivery_id)).await;
    assert!(request.delivery.unwrap().is_return_status_only);
    assert_eq!(
        prompts_with(&bridge, "=== BRIDGE REPLY ==="),
        Vec::<String>::new()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panel_session_calls_send_to_codex_through_cross_agent_mcp_and_reads_the_reply_there() {
    use cross_agent_testkit::agents::{AgentKind, agent_binary};
    use cross_agent_testkit::endpoint::{Api, ToolCall};

    let bridge = Bridge::start().await;
    let thread = bridge.codex_session("seed codex m1");
    let bin = cross_agent_bin().unwrap().to_string_lossy().into_owned();
    let codex_home = bridge.agents.codex_home().to_string_lossy().into_owned();
    let codex_bin = agent_binary(AgentKind::Codex)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    // `cross-agent mcp` as the panel's MCP server, on this daemon's home.
    let config = serde_json::json!({"mcpServers": {"cross-agent": {
        "type": "stdio",
        "command": bin,
        "args": ["mcp"],
        "env": {
            "CROSS_AGENT_HOME": bridge.state.root().to_string_lossy(),
            "HOME": bridge.agents.path().to_string_lossy(),
            "PATH": std::env::var("PATH").unwrap_or_default(),
            "CROSS_AGENT_CODEX_BIN": codex_bin,
            "CODEX_HOME": codex_home,
            "SCRIPTED_KEY": "test-key",
            "CROSS_AGENT_CHILD_ENV": "SCRIPTED_KEY",
        },
    }}});
    let mut panel = Panel::open_with(
        &bridge,
        &[
            "--mcp-config",
            &config.to_string(),
            "--allowedTools",
            "mcp__cross-agent",
        ],
    );
    bridge.endpoint.push(
        Rule::on_user_text("Ask Codex m1")
            .tool_call(ToolCall::mcp(
                "cross-agent",
                "send_to_codex",
                serde_json::json!({"message": "question m1", "session_id": thread}),
            ))
            .for_api(Api::Anthropic)
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_tool_result("delivery_id")
            .reply_text("sent, waiting m1")
            .for_api(Api::Anthropic)
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_user_text("question m1")
            .reply(Reply::echo_token("codex answer m1"))
            .for_api(Api::Responses),
    );
    bridge.endpoint.push(
        Rule::on_user_text("=== BRIDGE REPLY ===")
            .reply_text("read the reply m1")
            .for_api(Api::Anthropic)
            .once(),
    );

    panel.driver.send(&claude_user("Ask Codex m1")).unwrap();
    panel
        .driver
        .next_line(TURN, |l| {
            l["type"] == "result" && l["result"] == "sent, waiting m1"
        })
        .unwrap();
    // The BRIDGE REPLY is put into this same panel: its model reads it, and the panel shows the
    // turn on its stdout.
    panel
        .driver
        .next_line(TURN, |l| {
            l["type"] == "result" && l["result"] == "read the reply m1"
        })
        .unwrap();
    let prompt = prompts_with(&bridge, "=== BRIDGE REPLY ===").pop().unwrap();
    assert!(prompt.contains("codex answer m1"), "{prompt}");
    // The request's record: sent from this panel's session, answered, its answer delivered back.
    let status = bridge.status(None).await;
    let request = status
        .deliveries
        .recent
        .iter()
        .find(|r| r.target_agent == Agent::Codex && r.answer.answers_delivery_id.is_none())
        .expect("the request's record")
        .clone();
    assert_eq!(request.from_agent, Some(Agent::Claude));
    assert_eq!(request.state, DeliveryState::Delivered, "{request:#?}");
    let back = bridge
        .wait_finished(
            &request
                .return_delivery_id
                .clone()
                .expect("a return delivery"),
        )
        .await;
    assert_eq!(back.state, DeliveryState::Delivered, "{back:#?}");
    assert_eq!(back.target_session_id, request.from_session);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_the_bridged_turn_waits_on_shows_in_bridge_status_until_answered() {
    use cross_agent_testkit::endpoint::ToolCall;
    use cross_agent_testkit::panel::claude_permission;

    let bridge = Bridge::start().await;
    let mut panel = Panel::open(&bridge);
    let session = panel.converse(&bridge, "hello approvals a1");
    let marker = bridge.project.join("approved-a1.txt");
    let command = format!("echo approved > {}", marker.display());
    bridge.endpoint.push(
        Rule::on_user_text("use the tool a1")
            .tool_call(ToolCall::new(
                "Bash",
                serde_json::json!({"command": command, "description": "write"}),
            ))
            .once(),
    );
    bridge
        .endpoint
        .push(Rule::on_any_tool_result().reply(Reply::echo_token("tool turn done a1")));
    let caller = with_ancestry(
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000c1"),
        &[panel.window],
    );
    let mut params = bridge.send_params(Agent::Claude, "use the tool a1", caller);
    params.session_id = Some(session);
    let receipt = bridge.accepted(params).await;

    // The panel asks its extension (the test) for the approval; nobody answers yet.
    let ask = panel
        .driver
        .next_line(TURN, |l| l["type"] == "control_request")
        .unwrap();
    let request_id = ask["request_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + TURN;
    let waiting = loop {
        let status = bridge.status(Some(&receipt.delivery_id)).await;
        if let Some(approval) = status.peer_panel.and_then(|p| p.awaiting_approval) {
            break approval;
        }
        assert!(Instant::now() < deadline, "no approval shown");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(waiting.request_id, request_id);
    assert_eq!(waiting.tool.as_deref(), Some("Bash"));
    assert_eq!(waiting.kind, "can_use_tool");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let status = bridge.status(Some(&receipt.delivery_id)).await;
    let panel_status = status.peer_panel.unwrap();
    assert_eq!(panel_status.state, "awaiting_approval");
    assert!(panel_status.awaiting_approval.unwrap().waiting_seconds >= 1);

    // Answered in the panel: the turn goes on and the answer is paired.
    panel
        .driver
        .send(&claude_permission(
            &request_id,
            true,
            &ask["request"]["input"],
        ))
        .unwrap();
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(
        record
            .reply_preview
            .unwrap()
            .starts_with("tool turn done a1")
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "approved\n");
    let status = bridge.status(Some(&receipt.delivery_id)).await;
    assert_eq!(status.peer_panel.unwrap().awaiting_approval, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_panel_turn_sends_one_progress_notice_to_the_idle_senders_panel() {
    let bridge = Bridge::start().await;
    let mut sender = Panel::open(&bridge);
    let mut peer = Panel::open(&bridge);
    let sender_session = sender.converse(&bridge, "hello sender p1");
    let peer_session = peer.converse(&bridge, "hello peer p1");
    bridge.endpoint.push(
        Rule::on_user_text("long question p1")
            .reply(Reply::echo_token("long answer p1").delay(Duration::from_secs(8))),
    );
    bridge.endpoint.push(
        Rule::on_user_text("=== PROGRESS (INFO) ===")
            .reply_text("noted the progress p1")
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_user_text("=== BRIDGE REPLY ===")
            .reply_text("noted the reply p1")
            .once(),
    );
    let mut caller = with_ancestry(
        bridge.claude_caller(&sender_session),
        &[sender.shim, sender.window],
    );
    caller
        .settings
        .insert("CROSS_AGENT_PANEL_PATIENCE".into(), "2".into());
    let mut params = bridge.send_params(Agent::Claude, "long question p1", caller);
    params.session_id = Some(peer_session);
    params.timeout = Some(1);
    let receipt = bridge.accepted(params).await;

    let request = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(request.state, DeliveryState::Delivered, "{request:#?}");
    let note = request.progress_note.clone().expect("a progress note");
    assert!(note.starts_with("=== PROGRESS (INFO) ==="), "{note}");
    let progress_id = request
        .progress_delivery_id
        .clone()
        .expect("a progress delivery");
    assert_ne!(Some(&progress_id), request.return_delivery_id.as_ref());
    let progress = bridge.wait_finished(&progress_id).await;
    assert_eq!(progress.state, DeliveryState::Delivered, "{progress:#?}");
    // The sender read the notice, then the answer, each in its own turn.
    sender
        .driver
        .next_line(TURN, |l| {
            l["type"] == "result" && l["result"] == "noted the reply p1"
        })
        .unwrap();
    assert!(sender.stdout_mentions("noted the progress p1"));
    assert_eq!(prompts_with(&bridge, "=== PROGRESS (INFO) ===").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_hook_require_takes_a_live_panel_and_off_goes_around_it() {
    let bridge = Bridge::start().await;
    let mut panel = Panel::open(&bridge);
    let session = panel.converse(&bridge, "hello hooks h1");
    let caller = |hook: &str| {
        let mut caller = with_ancestry(
            bridge.codex_caller("019a0000-0000-7000-8000-0000000000d1"),
            &[panel.window],
        );
        caller
            .settings
            .insert("CROSS_AGENT_UI_HOOK".into(), hook.into());
        caller
    };
    // require: the panel's conversation takes the unaddressed send.
    bridge
        .endpoint
        .push(Rule::on_user_text("require h1").reply(Reply::echo_token("panel took it h1")));
    let receipt = bridge
        .accepted(bridge.send_params(Agent::Claude, "require h1", caller("require")))
        .await;
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::PanelFocus);
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(
        (record.state, record.transport),
        (DeliveryState::Delivered, Transport::Panel)
    );
    // require, from another window (a caller under no shim's host): refused, nothing sent.
    let mut elsewhere = caller("require");
    elsewhere.ancestry.clear();
    let refusal = bridge
        .refused(bridge.send_params(Agent::Claude, "require elsewhere h1", elsewhere))
        .await;
    assert_eq!(
        refusal.reason,
        cross_agent_protocol::bridge::RefusalReason::UiHookRequire
    );
    // off: the same send goes around the panel, to the session on disk over its CLI.
    let receipt = bridge
        .accepted(bridge.send_params(Agent::Claude, "off h1", caller("off")))
        .await;
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Discovery);
    assert_eq!(receipt.target_session_id.as_deref(), Some(session.as_str()));
    let status = bridge.status(Some(&receipt.delivery_id)).await;
    assert_eq!(status.delivery.unwrap().transport, Transport::HeadlessCli);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_is_pushed_into_the_senders_panel_too() {
    let mut bridge = Bridge::start().await;
    // A daemon process of its own, so the watch can poll fast without touching other tests.
    bridge.stop_daemon().await;
    let (_daemon, conn) = super::bridge_support::spawn_daemon_process(
        bridge.state.root(),
        &bridge.state.dir.path().join("user"),
        &[("CROSS_AGENT_LATE_ANSWER_POLL_MS", "300")],
    )
    .await;
    bridge.conn = conn;
    let mut sender = Panel::open(&bridge);
    let sender_session = sender.converse(&bridge, "hello sender l1");
    let target = bridge.claude_session("seed target l1");
    bridge.endpoint.push(
        Rule::on_user_text("run the long review l1")
            .reply_text("Started the reviewers; I will report back.")
            .once(),
    );
    bridge
        .endpoint
        .push(Rule::on_user_text("=== BRIDGE REPLY ===").reply_text("noted l1"));
    let caller = with_ancestry(
        bridge.claude_caller(&sender_session),
        &[sender.shim, sender.window],
    );
    let mut params = bridge.send_params(Agent::Claude, "run the long review l1", caller);
    params.session_id = Some(target.clone());
    params.allow_same_agent = true;
    let receipt = bridge.accepted(params).await;
    let first = bridge.wait_finished(&receipt.delivery_id).await;
    assert!(first.answer.is_reply_possibly_interim, "{first:#?}");
    assert!(first.return_delivery_id.is_some(), "{first:#?}");

    let request = bridge
        .late_turn_answering(
            &target,
            "the reviewers reported l1",
            "FINAL REVIEW l1: two bugs found",
            &receipt.delivery_id,
        )
        .await;
    let late_id = request.late_reply_delivery_id.clone().unwrap();
    let late = bridge
        .wait_record(&late_id, TURN, |r| r.return_delivery_id.is_some())
        .await;
    let back = bridge
        .wait_finished(&late.return_delivery_id.clone().unwrap())
        .await;
    assert_eq!(back.state, DeliveryState::Delivered, "{back:#?}");
    assert_eq!(
        back.target_session_id.as_deref(),
        Some(sender_session.as_str())
    );
    let deadline = Instant::now() + TURN;
    let prompt = loop {
        if let Some(prompt) = prompts_with(&bridge, "FINAL REVIEW l1")
            .into_iter()
            .find(|p| p.contains("LATE ANSWER to request"))
        {
            break prompt;
        }
        assert!(
            Instant::now() < deadline,
            "the sender's panel never read the late answer"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(prompt.contains(&receipt.request_id), "{prompt}");
}

/// A conversation the panel opens for a delivery: once its id arrives the record names its
/// transcript and the busy lock moves to the session, so when the shim dies mid-turn (Claude
/// ends with it) the answer is read back from that transcript — and the message is never sent
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_the_panel_opened_is_recovered_from_its_transcript_when_the_shim_dies() {
    use cross_agent_testkit::endpoint::ToolCall;

    let bridge = Bridge::start().await;
    let mut panel = Panel::open(&bridge);
    // The answer is written, then the turn waits on an approval nobody gives (a write is
    // never approved without asking).
    let command = format!("echo k1 > {}", bridge.project.join("k1.txt").display());
    bridge
        .endpoint
        .push(Rule::on_user_text("fresh question k1").reply(
            Reply::echo_token("recovered answer k1").then_tool_call(ToolCall::new(
                "Bash",
                serde_json::json!({"command": command, "description": "write"}),
            )),
        ));
    let caller = with_ancestry(
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000c3"),
        &[panel.window],
    );
    let receipt = bridge
        .accepted(bridge.send_params(Agent::Claude, "fresh question k1", caller))
        .await;
    assert!(receipt.will_create_session, "{receipt:#?}");
    assert_eq!(receipt.target_session_id, None);

    // The id arrived: the record names the session and its transcript.
    let started = bridge
        .wait_record(&receipt.delivery_id, TURN, |r| {
            r.target_session_id.is_some() && r.target_transcript.is_some()
        })
        .await;
    assert_eq!(started.state, DeliveryState::AwaitingPeer, "{started:#?}");
    let session = started.target_session_id.clone().unwrap();
    assert_eq!(
        started.target_transcript.as_deref().map(PathBuf::from),
        Some(bridge.claude_transcript(&session))
    );
    // Its busy lock is the session's now (`claude:<id>`, no longer `claude:new:<delivery>`).
    let locks = bridge.status(None).await.locks;
    let held: Vec<&str> = locks
        .iter()
        .filter(|l| l.delivery_id.as_deref() == Some(receipt.delivery_id.as_str()))
        .map(|l| l.target_key.as_str())
        .collect();
    assert_eq!(held, [format!("claude:{session}")], "{locks:#?}");

    // The shim dies before the turn ends, its answer already in the transcript; Claude ends
    // with the shim, and nothing of this test is left running.
    panel
        .driver
        .next_line(TURN, |l| l["type"] == "control_request")
        .unwrap();
    let _ = Command::new("kill")
        .arg("-KILL")
        .arg(panel.shim.to_string())
        .status();
    cross_agent_testkit::leaks::assert_none_left(
        bridge.agents.path(),
        cross_agent_testkit::leaks::SETTLE,
    )
    .unwrap();
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert!(record.is_reply_recovered, "{record:#?}");
    assert!(
        record
            .reply_preview
            .as_deref()
            .is_some_and(|r| r.starts_with("recovered answer k1")),
        "{record:#?}"
    );
    assert_eq!(prompts_with(&bridge, "fresh question k1").len(), 1);
}
