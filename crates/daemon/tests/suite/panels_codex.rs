//! Deliveries through the real `cross-agent shim codex` in front of the real Codex app-server,
//! with the test playing the VS Code extension over the shim's stdio (`initialize`,
//! `thread/start`, `turn/start`) and the daemon running in-process: a message into a panel
//! thread, a panel thread calling `send_to_claude` through `cross-agent mcp` and reading the
//! `BRIDGE REPLY` in that same thread, and a new conversation opened in the panel.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use cross_agent_protocol::bridge::{
    Agent, AncestorProcess, CallerContext, DeliveryState, Transport,
};
use cross_agent_protocol::panel::{PanelRegistration, PanelSessionState};
use cross_agent_testkit::agents::{AgentKind, Codex, McpServer, agent_binary};
use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::endpoint::{Api, Reply, Rule, ToolCall};
use cross_agent_testkit::panel::PanelDriver;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::bridge_support::Bridge;

/// Long enough for a cold Codex start on a loaded machine.
const TURN: Duration = Duration::from_secs(120);

/// A Codex panel: the extension's end of the shim's stdio, the window process above the shim,
/// and the shim's pid.
pub(super) struct CodexPanel {
    pub driver: PanelDriver,
    pub window: u32,
    pub shim: u32,
    next_id: u64,
}

impl CodexPanel {
    /// The real Codex app-server behind `cross-agent shim codex app-server`, started under a
    /// window process of its own, past the extension's `initialize`.
    pub fn open(bridge: &Bridge) -> CodexPanel {
        CodexPanel::open_with(bridge, &bridge.codex())
    }

    /// [`CodexPanel::open`] with this Codex configuration (its MCP servers, say).
    pub fn open_with(bridge: &Bridge, codex: &Codex) -> CodexPanel {
        let app_server = codex.app_server(&bridge.project);
        let mut command = Command::new("sh");
        // `; exit` keeps sh as the shim's parent (no exec), as an extension host is.
        command
            .arg("-c")
            .arg("\"$@\"; exit $?")
            .arg("window")
            .arg(cross_agent_bin().unwrap())
            .arg("shim")
            .arg("codex")
            .arg("app-server")
            .current_dir(&bridge.project)
            .env_clear()
            .envs(
                app_server
                    .get_envs()
                    .filter_map(|(key, value)| Some((key.to_owned(), value?.to_owned()))),
            )
            .env(
                "CROSS_AGENT_REAL_CODEX",
                agent_binary(AgentKind::Codex).unwrap(),
            )
            .env("CROSS_AGENT_HOME", bridge.state.root());
        let driver = PanelDriver::start(command).unwrap();
        let window = driver.pid();
        let mut panel = CodexPanel {
            driver,
            window,
            shim: 0,
            next_id: 1,
        };
        panel.request(
            "initialize",
            json!({"clientInfo": {"name": "codex_vscode", "title": "Test Extension", "version": "0.0.1"}, "capabilities": null}),
        );
        panel
            .driver
            .send(&json!({"method": "initialized"}).to_string())
            .unwrap();
        panel.shim = registration_where(bridge, |r| r.ancestors.first() == Some(&window)).pid;
        panel
    }

    /// One extension request; its response.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.driver
            .send(&json!({"id": id, "method": method, "params": params}).to_string())
            .unwrap();
        self.driver.next_line(TURN, |l| l["id"] == id).unwrap()
    }

    /// A thread the extension starts, as the panel does for a new tab; its id.
    pub fn start_thread(&mut self, bridge: &Bridge) -> String {
        let started = self.request(
            "thread/start",
            json!({"cwd": bridge.project, "approvalPolicy": "never", "sandbox": "read-only"}),
        );
        started["result"]["thread"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no thread in {started}"))
            .to_owned()
    }

    /// A human turn typed into `thread`; waits for it to complete.
    pub fn type_turn(&mut self, thread: &str, text: &str) {
        self.request(
            "turn/start",
            json!({"threadId": thread, "input": [{"type": "text", "text": text}]}),
        );
        self.driver
            .next_line(TURN, |l| {
                l["method"] == "turn/completed" && l["params"]["threadId"] == thread
            })
            .unwrap();
    }

    /// Waits until the shim's registration shows `thread` idle.
    pub fn wait_idle(&self, bridge: &Bridge, thread: &str) {
        let shim = self.shim;
        registration_where(bridge, |r| {
            r.pid == shim
                && r.sessions.iter().any(|s| {
                    s.session_id.as_deref() == Some(thread) && s.state == PanelSessionState::Idle
                })
        });
    }

    /// Waits until the thread's MCP servers are ready (their status may come before the
    /// `thread/start` response, so every line received is looked at).
    pub fn wait_mcp_ready(&self, thread: &str) {
        let deadline = Instant::now() + TURN;
        while !self.driver.lines().iter().any(|l| {
            l["method"] == "mcpServer/startupStatus/updated"
                && l["params"]["threadId"] == thread
                && l["params"]["status"] == "ready"
        }) {
            assert!(
                Instant::now() < deadline,
                "the MCP servers of {thread} never got ready"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the extension was shown a user message carrying `needle` (the panel draws it).
    pub fn shows_user_message(&self, needle: &str) -> bool {
        self.driver.lines().iter().any(|l| {
            l["method"] == "item/started"
                && l["params"]["item"]["type"] == "userMessage"
                && l["params"]["item"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(needle))
        })
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
pub(super) fn with_ancestry(mut caller: CallerContext, chain: &[u32]) -> CallerContext {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_callers_send_goes_into_the_codex_panel_thread_and_its_answer_is_recorded() {
    let bridge = Bridge::start().await;
    bridge
        .endpoint
        .push(Rule::on_user_text("human hello c1").reply_text("hello human c1"));
    bridge
        .endpoint
        .push(Rule::on_user_text("question c1").reply(Reply::echo_token("codex answer c1")));
    let mut panel = CodexPanel::open(&bridge);
    let thread = panel.start_thread(&bridge);
    panel.type_turn(&thread, "human hello c1");
    panel.wait_idle(&bridge, &thread);

    let caller = bridge.claude_caller("5a1d0000-0000-4000-8000-0000000000c1");
    let mut params = bridge.send_params(Agent::Codex, "question c1", caller);
    params.session_id = Some(thread.clone());
    let receipt = bridge.accepted(params).await;
    assert_eq!(receipt.target_session_id.as_deref(), Some(thread.as_str()));
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert_eq!(record.transport, Transport::Panel);
    assert!(
        record
            .reply_preview
            .as_deref()
            .is_some_and(|r| r.starts_with("codex answer c1")),
        "{record:#?}"
    );
    // Paired by the request token the answer echoes.
    assert!(record.answer.reply_carries_request_id, "{record:#?}");
    // The person watching the panel saw the message and the answer.
    assert!(panel.shows_user_message("question c1"));
    assert!(String::from_utf8_lossy(&panel.driver.received()).contains("codex answer c1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_panel_thread_calls_send_to_claude_and_the_bridge_reply_lands_in_that_thread() {
    let bridge = Bridge::start().await;
    let claude_session = bridge.claude_session("seed claude x1");
    let claude = bridge.claude();
    let mut env = serde_json::Map::new();
    for (key, value) in claude.env() {
        env.insert(key.clone(), json!(value.to_string_lossy()));
    }
    let mcp = McpServer::new("cross-agent", cross_agent_bin().unwrap())
        .arg("mcp")
        .env("CROSS_AGENT_HOME", bridge.state.root().to_string_lossy())
        .env("CROSS_AGENT_CLAUDE_BIN", claude.binary().to_string_lossy())
        .env(
            "CROSS_AGENT_CHILD_ENV",
            "ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY,CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        );
    let mcp = env.iter().fold(mcp, |mcp, (key, value)| {
        mcp.env(key, value.as_str().unwrap_or_default())
    });
    // Written after the Bridge's own config.toml: `bridge.codex()` would write it again without
    // the server.
    let codex = bridge.codex().with_mcp_server(mcp).unwrap();

    bridge.endpoint.push(
        Rule::on_user_text("human hello x1")
            .reply_text("hello human x1")
            .for_api(Api::Responses)
            .once(),
    );
    let mut panel = CodexPanel::open_with(&bridge, &codex);
    let thread = panel.start_thread(&bridge);
    // As the extension does, the first turn waits for the thread's MCP servers (Codex itself
    // waits only about a second, then runs without their tools).
    panel.wait_mcp_ready(&thread);
    // A second thread in the same app-server: the reply must find the one that asked.
    let other = panel.start_thread(&bridge);
    panel.type_turn(&other, "human hello x1");

    bridge.endpoint.push(
        Rule::on_user_text("Ask Claude x1")
            .tool_call(ToolCall::mcp(
                "cross-agent",
                "send_to_claude",
                json!({"message": "question x1", "session_id": claude_session}),
            ))
            .for_api(Api::Responses)
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_tool_result("delivery_id")
            .reply_text("sent, waiting x1")
            .for_api(Api::Responses)
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_user_text("question x1")
            .reply(Reply::echo_token("claude answer x1"))
            .for_api(Api::Anthropic),
    );
    bridge.endpoint.push(
        Rule::on_user_text("=== BRIDGE REPLY ===")
            .reply_text("read the reply x1")
            .for_api(Api::Responses)
            .once(),
    );
    panel.type_turn(&thread, "Ask Claude x1");

    // The BRIDGE REPLY is put into that same thread through the shim: the extension sees the
    // injected user message, and the thread's turn on it.
    panel
        .driver
        .next_line(TURN, |l| {
            l["method"] == "item/completed"
                && l["params"]["threadId"] == thread
                && l["params"]["item"]["type"] == "agentMessage"
                && l["params"]["item"]["text"] == "read the reply x1"
        })
        .unwrap();
    assert!(panel.shows_user_message("=== BRIDGE REPLY ==="));

    let status = bridge.status(None).await;
    let request = status
        .deliveries
        .recent
        .iter()
        .find(|r| r.target_agent == Agent::Claude && r.answer.answers_delivery_id.is_none())
        .expect("the request's record")
        .clone();
    assert_eq!(request.from_agent, Some(Agent::Codex));
    assert_eq!(request.from_session.as_deref(), Some(thread.as_str()));
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
    assert_eq!(back.transport, Transport::Panel);
    assert_eq!(back.target_session_id.as_deref(), Some(thread.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nothing_else_a_send_opens_a_new_conversation_in_the_codex_panel() {
    let bridge = Bridge::start().await;
    bridge
        .endpoint
        .push(Rule::on_user_text("first words n1").reply(Reply::echo_token("new answer n1")));
    let panel = CodexPanel::open(&bridge);
    let caller = with_ancestry(
        bridge.claude_caller("5a1d0000-0000-4000-8000-0000000000d1"),
        &[panel.window],
    );
    let receipt = bridge
        .accepted(bridge.send_params(Agent::Codex, "first words n1", caller))
        .await;
    assert!(receipt.will_create_session, "{receipt:#?}");
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert_eq!(record.transport, Transport::Panel);
    assert!(
        record
            .reply_preview
            .as_deref()
            .is_some_and(|r| r.starts_with("new answer n1")),
        "{record:#?}"
    );
    let thread = record.target_session_id.clone().expect("the new thread");
    // The panel was told of the thread, titled "sender: head of the message".
    let lines = panel.driver.lines();
    let named = lines
        .iter()
        .find(|l| l["method"] == "thread/name/updated" && l["params"]["threadId"] == thread)
        .unwrap_or_else(|| panic!("no thread/name/updated for {thread}"));
    let name = named["params"]["threadName"].as_str().unwrap_or_default();
    assert!(
        name.starts_with("claude") && name.contains("first words n1"),
        "{named}"
    );
    assert!(panel.shows_user_message("first words n1"));
}
