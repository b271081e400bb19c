//! Copilot as the caller, driven the way VS Code's Agent Host drives it: the product's own
//! `cross-agent mcp` started with the SDK's `COPILOT_AGENT_SESSION_ID` (or without it), each
//! `tools/call` carrying the `_meta` a host may add (the caller-session key is not seen on the
//! wire yet: docs/observed/copilot.md §6), a fake Agent Host serving the caller's chat, and the
//! answers — on time, late, or from a real Codex thread — followed back into that chat.

use std::time::Duration;

use cross_agent_caller::COPILOT_CALLER_SESSION_META_KEY;
use cross_agent_protocol::bridge::{
    Agent, AncestorProcess, DeliveryRecord, DeliveryState, RefusalReason, SendResponse, Transport,
};
use cross_agent_testkit::agent_host::{FakeAgentHost, FakeSession};
use cross_agent_testkit::endpoint::{Api, Reply, Rule};
use cross_agent_testkit::mcp_client::McpClient;
use serde_json::json;

use super::bridge_support::{Bridge, spawn_daemon_process};
use super::copilot_send::{Copilot, copilot_caller};
use super::panels_real::Panel;

/// `cross-agent mcp` as the Copilot SDK starts it for SDK session `sdk` (none: an older host),
/// on this bridge's daemon and homes, able to start a real Codex turn.
fn copilot_mcp(bridge: &Bridge, sdk: Option<&str>) -> McpClient {
    let exe = cross_agent_testkit::binaries::cross_agent_bin().unwrap();
    let (home, root, codex_home) = (
        bridge.agents.path().to_string_lossy().into_owned(),
        bridge.state.root().to_string_lossy().into_owned(),
        bridge.agents.codex_home().to_string_lossy().into_owned(),
    );
    let path = std::env::var("PATH").unwrap_or_default();
    let codex_bin = bridge.settings()["CROSS_AGENT_CODEX_BIN"].clone();
    let mut env = vec![
        ("HOME", home.as_str()),
        ("PATH", path.as_str()),
        ("CROSS_AGENT_HOME", root.as_str()),
        ("CODEX_HOME", codex_home.as_str()),
        ("SCRIPTED_KEY", "test-key"),
        ("CROSS_AGENT_CHILD_ENV", "SCRIPTED_KEY"),
        ("CROSS_AGENT_CODEX_BIN", codex_bin.as_str()),
    ];
    if let Some(sdk) = sdk {
        env.push(("COPILOT_AGENT_SESSION_ID", sdk));
    }
    McpClient::start(&exe, &["mcp"], &env, &bridge.project, "vscode-agent-host").unwrap()
}

/// Calls `send_to_<agent>` at `target`, the call's `_meta` naming `caller_session` when given.
async fn send_from(
    mcp: McpClient,
    agent: Agent,
    target: &str,
    message: &str,
    caller_session: Option<&str>,
) -> (McpClient, SendResponse) {
    let arguments = json!({"message": message, "session_id": target});
    let meta =
        caller_session.map(|s| json!({COPILOT_CALLER_SESSION_META_KEY: s, "progressToken": 1}));
    let tool = agent.send_tool().to_owned();
    tokio::task::spawn_blocking(move || {
        let mut mcp = mcp;
        let result = mcp.call_tool(&tool, arguments, meta).unwrap();
        let response = serde_json::from_value(result["structuredContent"].clone())
            .unwrap_or_else(|e| panic!("{e}: {result:#}"));
        (mcp, response)
    })
    .await
    .unwrap()
}

/// One host serving `sessions`, its endpoint entry owned by this test process (so the MCP
/// processes the test starts run below it).
fn host_of(bridge: &Bridge, sessions: &[&Copilot]) -> FakeAgentHost {
    let mut builder =
        FakeAgentHost::builder(&sessions[0].editor.user_data).model_endpoint(&bridge.endpoint);
    for s in sessions {
        builder = builder.session(FakeSession::new(&s.title).id(&s.id));
    }
    builder.start().unwrap()
}

fn chat_of(copilot: &Copilot) -> String {
    FakeSession::new(&copilot.title).id(&copilot.id).chat_uri()
}

/// What the host was sent into `chat`.
fn into_chat(host: &FakeAgentHost, chat: &str) -> Vec<String> {
    host.dispatched()
        .into_iter()
        .filter(|d| d["channel"] == chat)
        .map(|d| d.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_caller_metadata_must_name_the_sdk_bindings_session_and_alone_names_a_live_one() {
    let bridge = Bridge::start().await;
    let caller = Copilot::in_catalog(&bridge, "copilot-asks");
    let other = Copilot::in_catalog(&bridge, "copilot-other");
    let target = Copilot::in_catalog(&bridge, "copilot-answers");
    let host = host_of(&bridge, &[&caller, &other, &target]);
    bridge
        .endpoint
        .push(Rule::on_user_text("meta question").reply(Reply::echo_token("meta answer")));
    bridge
        .endpoint
        .push(Rule::on_user_text("BRIDGE REPLY").reply_text("noted"));

    // Both present, naming different sessions: refused, naming both; nothing sent.
    let mcp = copilot_mcp(&bridge, Some(&caller.sdk_id));
    let (mcp, response) = send_from(
        mcp,
        Agent::Copilot,
        &target.id,
        "meta question",
        Some(&other.uri()),
    )
    .await;
    let SendResponse::Refused(refusal) = response else {
        panic!("{response:#?}")
    };
    assert_eq!(
        refusal.reason,
        RefusalReason::CallerUnresolved,
        "{refusal:#?}"
    );
    assert!(
        refusal.message.contains(&other.uri()) && refusal.message.contains(&caller.id),
        "{refusal:#?}"
    );
    assert!(into_chat(&host, &chat_of(&target)).is_empty());

    // Both present, naming the same session: the caller is that session, its route verified.
    let (_mcp, response) = send_from(
        mcp,
        Agent::Copilot,
        &target.id,
        "meta question",
        Some(&caller.uri()),
    )
    .await;
    let SendResponse::Accepted(receipt) = response else {
        panic!("{response:#?}")
    };
    assert_eq!(
        receipt.reply_lands_in_session.as_deref(),
        Some(caller.id.as_str())
    );
    assert!(receipt.return_panel_available_now, "{receipt:#?}");

    // The metadata alone (an older SDK variable-less host): one unarchived session on a live
    // host, here named by its bare UUID.
    let mcp = copilot_mcp(&bridge, None);
    let (mcp, response) = send_from(
        mcp,
        Agent::Copilot,
        &target.id,
        "meta question",
        Some(&caller.id),
    )
    .await;
    let SendResponse::Accepted(alone) = response else {
        panic!("{response:#?}")
    };
    assert_eq!(
        alone.reply_lands_in_session.as_deref(),
        Some(caller.id.as_str())
    );
    assert!(alone.return_panel_available_now, "{alone:#?}");
    let record = bridge.wait_finished(&alone.delivery_id).await;
    assert_eq!(record.from_agent, Some(Agent::Copilot));
    assert!(!record.is_return_status_only, "{record:#?}");

    // Alone, naming a session no catalog registers: refused, naming it.
    let unknown = format!("ahp-session:/{}", uuid::Uuid::new_v4());
    let (mcp, response) = send_from(
        mcp,
        Agent::Copilot,
        &target.id,
        "meta question",
        Some(&unknown),
    )
    .await;
    let SendResponse::Refused(refusal) = response else {
        panic!("{response:#?}")
    };
    assert_eq!(
        refusal.reason,
        RefusalReason::CallerUnresolved,
        "{refusal:#?}"
    );
    assert!(refusal.message.contains(&unknown), "{refusal:#?}");

    // Neither: the caller is unknown and the answer stays on the record (status-only).
    let (_mcp, response) = send_from(mcp, Agent::Copilot, &target.id, "meta question", None).await;
    let SendResponse::Accepted(neither) = response else {
        panic!("{response:#?}")
    };
    assert_eq!(neither.reply_lands_in_session, None, "{neither:#?}");
    let record = bridge.wait_finished(&neither.delivery_id).await;
    assert!(record.is_return_status_only, "{record:#?}");
    assert_eq!(record.return_delivery_id, None);
}

/// A Copilot sender whose request to a real Claude session was answered without its request
/// id (interim), then a later turn of that session carrying the id. `host_gone` drops the
/// sender's host before the later turn, and then the late answer must stay on its record.
/// Returns the bridge, what the sender's chat was sent, and the late answer's delivery id.
async fn late_answer_to_a_copilot_sender(host_gone: bool) -> (Bridge, Vec<String>, String) {
    let mut bridge = Bridge::start().await;
    bridge.stop_daemon().await;
    let (daemon, conn) = spawn_daemon_process(
        bridge.state.root(),
        &bridge.state.dir.path().join("user"),
        &[("CROSS_AGENT_LATE_ANSWER_POLL_MS", "300")],
    )
    .await;
    bridge.conn = conn;
    let caller = Copilot::in_catalog(&bridge, "copilot-asks");
    let mut host = Some(host_of(&bridge, &[&caller]));
    bridge.endpoint.push(
        Rule::on_user_text("seed late copilot")
            .reply_text("ready")
            .once(),
    );
    let target = bridge
        .claude()
        .turn(&bridge.project, "seed late copilot")
        .run()
        .unwrap()
        .expect_success()
        .unwrap()
        .session_id()
        .unwrap()
        .to_owned();
    bridge.endpoint.push(
        Rule::on_user_text("run the long review")
            .reply_text("Started the reviewers; I will report back.")
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_user_text("BRIDGE REPLY")
            .reply_text("noted")
            .for_api(Api::Anthropic),
    );
    let mut mcp = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let mut context = copilot_caller(&bridge, &caller.sdk_id);
    context.pid = mcp.id();
    context.ancestry = vec![AncestorProcess {
        pid: std::process::id(),
        name: "code".into(),
        cmdline: String::new(),
    }];
    context.client_name = None;
    let mut params = bridge.send_params(Agent::Claude, "run the long review", context);
    params.session_id = Some(target.clone());
    let receipt = bridge.accepted(params).await;
    assert!(receipt.return_panel_available_now, "{receipt:#?}");
    let first = bridge.wait_finished(&receipt.delivery_id).await;
    assert!(first.answer.is_reply_possibly_interim, "{first:#?}");
    let chat = chat_of(&caller);
    if host_gone {
        drop(host.take());
    }
    let request = bridge
        .late_turn_answering(
            &target,
            "the reviewers reported",
            "FINAL REVIEW: one bug",
            &receipt.delivery_id,
        )
        .await;
    let late = request.late_reply_delivery_id.clone().unwrap();
    if host_gone {
        let late = bridge
            .wait_record(&late, Duration::from_secs(30), |r| r.is_return_status_only)
            .await;
        assert_eq!(late.return_delivery_id, None, "{late:#?}");
        mcp.kill().unwrap();
        mcp.wait().unwrap();
        drop(daemon);
        return (bridge, Vec::new(), late.delivery_id);
    }
    let back = bridge
        .wait_record(&late, Duration::from_secs(60), |r| {
            // Its own return delivery, not the interim reply's it was copied with.
            r.return_delivery_id.is_some() && r.return_delivery_id != first.return_delivery_id
        })
        .await;
    let back = bridge
        .wait_finished(back.return_delivery_id.as_deref().unwrap())
        .await;
    assert_eq!(back.state, DeliveryState::Delivered, "{back:#?}");
    assert_eq!(back.transport, Transport::AgentHost);
    // Nothing more comes after the one late answer.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let sent = into_chat(host.as_ref().unwrap(), &chat);
    mcp.kill().unwrap();
    mcp.wait().unwrap();
    drop(daemon);
    (bridge, sent, late)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_goes_back_into_the_copilot_senders_chat_exactly_once() {
    let (_bridge, sent, _late) = late_answer_to_a_copilot_sender(/*host_gone*/ false).await;
    let late: Vec<_> = sent
        .iter()
        .filter(|t| t.contains("LATE ANSWER to request"))
        .collect();
    assert_eq!(late.len(), 1, "{sent:#?}");
    assert!(late[0].contains("FINAL REVIEW: one bug"), "{}", late[0]);
    // The interim reply went there first, as a reply of its own.
    assert_eq!(sent.len(), 2, "{sent:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_stays_on_the_record_when_the_copilot_senders_host_is_gone() {
    // The late record is read (status-only, no return delivery) inside the helper, while its
    // daemon still runs.
    let (_bridge, sent, late) = late_answer_to_a_copilot_sender(/*host_gone*/ true).await;
    assert!(sent.is_empty());
    assert!(late.starts_with("dlv_"), "{late}");
}

/// Issue 25 §6: a Copilot caller (`cross-agent mcp` started with `COPILOT_AGENT_SESSION_ID`)
/// sends to a real Codex thread, and the answer comes back into its chat on its verified route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copilot_caller_reaches_a_real_codex_thread_and_gets_the_answer_in_its_chat() {
    let bridge = Bridge::start().await;
    let caller = Copilot::in_catalog(&bridge, "copilot-asks-codex");
    let host = host_of(&bridge, &[&caller]);
    let thread = bridge.codex_session("seed codex for copilot");
    bridge.endpoint.push(
        Rule::on_user_text("relay-codex-25")
            .reply(Reply::echo_token("Port 9090 (Codex)."))
            .for_api(Api::Responses)
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_user_text("=== BRIDGE REPLY ===")
            .reply_text("read the Codex reply")
            .for_api(Api::Anthropic)
            .once(),
    );
    let mcp = copilot_mcp(&bridge, Some(&caller.sdk_id));
    let (_mcp, response) = send_from(
        mcp,
        Agent::Codex,
        &thread,
        "relay-codex-25: which port does it use?",
        None,
    )
    .await;
    let SendResponse::Accepted(receipt) = response else {
        panic!("{response:#?}")
    };
    assert_eq!(
        receipt.reply_lands_in_session.as_deref(),
        Some(caller.id.as_str())
    );
    assert!(receipt.return_panel_available_now, "{receipt:#?}");
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert_eq!(record.from_agent, Some(Agent::Copilot));
    assert_eq!(record.from_session.as_deref(), Some(caller.id.as_str()));
    assert_eq!(record.target_session_id.as_deref(), Some(thread.as_str()));
    assert!(record.answer.reply_carries_request_id, "{record:#?}");
    let back = bridge
        .wait_finished(
            record
                .return_delivery_id
                .as_deref()
                .expect("a return delivery"),
        )
        .await;
    assert_eq!(back.state, DeliveryState::Delivered, "{back:#?}");
    assert_eq!(back.transport, Transport::AgentHost);
    assert_eq!(back.target_session_id.as_deref(), Some(caller.id.as_str()));
    let sent = into_chat(&host, &chat_of(&caller));
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert!(sent[0].contains("BRIDGE REPLY"), "{}", sent[0]);
    assert!(sent[0].contains("Port 9090 (Codex)."), "{}", sent[0]);
}

/// A Copilot sender (its MCP process below the host that serves its chat) asks a Claude panel
/// session a question that runs past `CROSS_AGENT_PANEL_PATIENCE`. Returns the request's
/// record when it settled and what the sender's chat was sent.
async fn progress_to_a_copilot_sender(busy: bool) -> (Bridge, DeliveryRecord, Vec<String>) {
    let bridge = Bridge::start().await;
    let caller = Copilot::in_catalog(&bridge, "copilot-waits");
    let mut session = FakeSession::new(&caller.title).id(&caller.id);
    if busy {
        session = session.busy();
    }
    let host = FakeAgentHost::builder(&caller.editor.user_data)
        .model_endpoint(&bridge.endpoint)
        .session(session)
        .start()
        .unwrap();
    let mut peer = Panel::open(&bridge);
    let peer_session = peer.converse(&bridge, "hello peer cp1");
    bridge.endpoint.push(
        Rule::on_user_text("long question cp1")
            .reply(Reply::echo_token("long answer cp1").delay(Duration::from_secs(6)))
            .once(),
    );
    bridge
        .endpoint
        .push(Rule::on_user_text("=== PROGRESS (INFO) ===").reply_text("noted the progress cp1"));
    bridge
        .endpoint
        .push(Rule::on_user_text("=== BRIDGE REPLY ===").reply_text("noted the reply cp1"));
    let mut mcp = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let mut context = copilot_caller(&bridge, &caller.sdk_id);
    context.pid = mcp.id();
    context.ancestry = vec![AncestorProcess {
        pid: std::process::id(),
        name: "code".into(),
        cmdline: String::new(),
    }];
    context.client_name = None;
    context
        .settings
        .insert("CROSS_AGENT_PANEL_PATIENCE".into(), "2".into());
    let mut params = bridge.send_params(Agent::Claude, "long question cp1", context);
    params.session_id = Some(peer_session);
    params.timeout = Some(1);
    let receipt = bridge.accepted(params).await;
    assert!(receipt.return_panel_available_now, "{receipt:#?}");
    let request = bridge.wait_finished(&receipt.delivery_id).await;
    if let Some(back) = &request.return_delivery_id {
        bridge.wait_finished(back).await;
    }
    let sent = into_chat(&host, &chat_of(&caller));
    mcp.kill().unwrap();
    mcp.wait().unwrap();
    (bridge, request, sent)
}

/// The spec's progress rule holds for a Copilot sender too: return traffic goes to its chat
/// on its verified route, and `PROGRESS (INFO)` is sent there while the chat is idle, as a
/// notice of its own before the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_turn_sends_one_progress_notice_into_the_idle_copilot_senders_chat() {
    let (bridge, request, sent) = progress_to_a_copilot_sender(/*busy*/ false).await;
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
    assert_eq!(progress.transport, Transport::AgentHost);
    assert_eq!(sent.len(), 2, "the notice, then the answer: {sent:#?}");
    assert!(sent[0].contains("PROGRESS (INFO)"), "{}", sent[0]);
    assert!(sent[1].contains("BRIDGE REPLY"), "{}", sent[1]);
}

/// "INFO does not wait for a busy sender": a Copilot sender's chat running a turn gets no
/// progress notice — nothing dispatched into it, not retried — and the note stays on the
/// request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_copilot_senders_chat_gets_no_progress_notice_and_the_note_stays() {
    let (bridge, request, sent) = progress_to_a_copilot_sender(/*busy*/ true).await;
    let note = request.progress_note.clone().expect("a progress note");
    assert!(note.starts_with("=== PROGRESS (INFO) ==="), "{note}");
    // Queued (whether the chat is busy is known only when it goes out), then refused there.
    let progress_id = request
        .progress_delivery_id
        .clone()
        .expect("a progress delivery");
    let progress = bridge.wait_finished(&progress_id).await;
    assert_eq!(progress.state, DeliveryState::Failed, "{progress:#?}");
    assert!(progress.is_undelivered, "{progress:#?}");
    let error = progress.error.unwrap();
    assert!(
        error.contains("a progress notice never waits for a busy sender"),
        "{error}"
    );
    assert!(
        sent.iter().all(|t| !t.contains("PROGRESS (INFO)")),
        "{sent:#?}"
    );
}
