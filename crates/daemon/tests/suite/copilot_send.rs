//! Sending to Copilot through the daemon: a real daemon, a fake VS Code Agent Host (AHP on its
//! Unix socket, registry entry and all) answering through the scripted model endpoint, and the
//! host's catalog files as VS Code writes them. Each test checks what the record says and what
//! the host was sent; the last two drive a real Codex thread and a real Claude panel whose model
//! calls `send_to_copilot`, and follow the answer back into that panel as a `BRIDGE REPLY`.

use std::time::Duration;

use cross_agent_protocol::bridge::{
    Agent, AncestorProcess, BridgeStatusParams, BridgeStatusResponse, CallerContext, DeliveryState,
    HandOverOutcome, RefusalReason, SendParams, TargetSelectedBy, Transport,
};
use cross_agent_testkit::agent_host::{FakeAgentHost, FakeSession, TurnScript};
use cross_agent_testkit::endpoint::{Api, Reply, Rule};
use cross_agent_testkit::synthetic_stores::{CopilotEditor, SdkEvents, now_millis};

use super::bridge_support::{Bridge, spawn_daemon_process};

/// A Copilot session in VS Code's catalog under the bridge's HOME (the default Linux place).
pub(super) struct Copilot {
    pub(super) editor: CopilotEditor,
    pub(super) id: String,
    pub(super) title: String,
    /// The SDK session behind its default chat.
    pub(super) sdk_id: String,
}

impl Copilot {
    pub(super) fn in_catalog(bridge: &Bridge, title: &str) -> Copilot {
        let editor = CopilotEditor::new(&bridge.agents.path().join(".config/Code"));
        let id = uuid::Uuid::new_v4().to_string();
        let now = now_millis();
        let sdk_id = uuid::Uuid::new_v4().to_string();
        editor
            .register(&format!("copilotcli:/{id}"), now - 60_000, now)
            .unwrap();
        editor
            .session(&id)
            .unwrap()
            .title(title)
            .unwrap()
            .default_chat(&sdk_id, "gpt-5")
            .unwrap()
            .working_directory(&bridge.project.to_string_lossy())
            .unwrap();
        Copilot {
            editor,
            id,
            title: title.to_owned(),
            sdk_id,
        }
    }

    pub(super) fn uri(&self) -> String {
        format!("copilotcli:/{}", self.id)
    }

    /// Its editor's Agent Host, running, serving this session with `script`.
    pub(super) fn host(&self, bridge: &Bridge, script: TurnScript) -> FakeAgentHost {
        FakeAgentHost::builder(&self.editor.user_data)
            .model_endpoint(&bridge.endpoint)
            .session(
                FakeSession::new(&self.title)
                    .id(&self.id)
                    .cwd(bridge.project.to_string_lossy())
                    .script(script),
            )
            .start()
            .unwrap()
    }
}

fn to_copilot(bridge: &Bridge, message: &str, session: Option<&str>) -> SendParams {
    let mut params = bridge.send_params(Agent::Copilot, message, bridge.codex_caller("t-caller"));
    params.session_id = session.map(str::to_owned);
    params
}

/// The `chat/turnStarted` actions the host was sent.
pub(super) fn turns_started(host: &FakeAgentHost) -> Vec<serde_json::Value> {
    host.dispatched()
        .into_iter()
        .filter(|d| d.to_string().contains("chat/turnStarted"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copilot_session_named_by_name_uuid_or_uri_answers_through_its_agent_host() {
    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "copilot-test");
    let host = copilot.host(&bridge, TurnScript::Answer);
    bridge.endpoint.push(
        Rule::on_user_text("which port")
            .reply(Reply::echo_token("Port 8080."))
            .times(3),
    );

    for name in [copilot.title.clone(), copilot.id.clone(), copilot.uri()] {
        let receipt = bridge
            .accepted(to_copilot(&bridge, "which port does it use?", Some(&name)))
            .await;
        assert_eq!(receipt.transport, Transport::AgentHost, "{receipt:#?}");
        assert_eq!(
            receipt.target_session_id.as_deref(),
            Some(copilot.id.as_str())
        );
        assert_eq!(receipt.target_selected_by, TargetSelectedBy::Caller);
        let record = bridge.wait_finished(&receipt.delivery_id).await;
        assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
        assert_eq!(record.transport, Transport::AgentHost);
        assert!(record.answer.reply_carries_request_id, "{record:#?}");
        let preview = record.reply_preview.unwrap_or_default();
        assert!(preview.starts_with("Port 8080."), "{preview}");
        assert!(preview.ends_with(&receipt.request_id), "{preview}");
        assert_eq!(record.outcome, None);
    }
    // One turn per send, each carrying the bridge envelope with its request token.
    let started = turns_started(&host);
    assert_eq!(started.len(), 3, "{started:#?}");
    assert!(
        started
            .iter()
            .all(|t| t.to_string().contains("request: req_")),
        "{started:#?}"
    );
    // The three went over one connection the carrier keeps for the host (the daemon's host
    // watcher has its own, `-watch`).
    let carrier_connections = host
        .received()
        .iter()
        .filter(|m| {
            m["method"] == "initialize"
                && m["params"]["clientId"]
                    .as_str()
                    .is_some_and(|id| !id.ends_with("-watch"))
        })
        .count();
    assert_eq!(carrier_connections, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_turn_fails_with_the_hosts_words_and_is_not_resent() {
    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "copilot-refuses");
    let host = copilot.host(
        &bridge,
        TurnScript::Reject("the session is read-only right now".into()),
    );
    let receipt = bridge
        .accepted(to_copilot(&bridge, "hello", Some(&copilot.title)))
        .await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Failed);
    assert!(record.is_undelivered, "{record:#?}");
    let error = record.error.unwrap_or_default();
    assert!(
        error.contains("the session is read-only right now"),
        "{error}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(turns_started(&host).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_drops_after_the_dispatch_leaves_the_outcome_unknown_and_nothing_resent() {
    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "copilot-drops");
    let host = copilot.host(&bridge, TurnScript::DropAfterDispatch);
    let receipt = bridge
        .accepted(to_copilot(&bridge, "hello", Some(&copilot.id)))
        .await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Failed);
    assert_eq!(
        record.outcome,
        Some(HandOverOutcome::Unknown),
        "{record:#?}"
    );
    // It may have started: not marked undelivered, and never sent again.
    assert!(!record.is_undelivered);
    assert!(
        record
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("unknown outcome"),
        "{record:#?}"
    );
    let status = bridge.status(Some(&receipt.delivery_id)).await;
    let shown = serde_json::to_value(status.delivery.unwrap()).unwrap();
    assert_eq!(shown["outcome"], "unknown");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(turns_started(&host).len(), 1);
    // The decisions log names the transport and the unknown outcome.
    let log = std::fs::read_to_string(bridge.state.root().join("decisions.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .filter(|d: &serde_json::Value| d["delivery"] == receipt.delivery_id.as_str())
        .collect();
    let accepted = lines.iter().find(|d| d["kind"] == "send_accepted").unwrap();
    assert_eq!(accepted["details"]["transport"], "agent-host", "{lines:#?}");
    let outcome = lines
        .iter()
        .find(|d| d["kind"] == "delivery_outcome")
        .unwrap();
    assert_eq!(outcome["details"]["transport"], "agent-host");
    assert_eq!(outcome["details"]["outcome"], "unknown", "{outcome:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_error_fails_the_delivery_with_the_hosts_words() {
    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "copilot-errors");
    let _host = copilot.host(&bridge, TurnScript::Fail("model quota exceeded".into()));
    let receipt = bridge
        .accepted(to_copilot(&bridge, "hello", Some(&copilot.title)))
        .await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Failed);
    assert!(
        record
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("model quota exceeded"),
        "{record:#?}"
    );
    assert_eq!(record.reply_preview, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_busy_with_another_turn_is_waited_for_up_to_the_timeout_and_nothing_sent() {
    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "copilot-busy");
    let host = FakeAgentHost::builder(&copilot.editor.user_data)
        .model_endpoint(&bridge.endpoint)
        .session(FakeSession::new(&copilot.title).id(&copilot.id).busy())
        .start()
        .unwrap();
    let mut params = to_copilot(&bridge, "hello", Some(&copilot.title));
    params.timeout = Some(3);
    let sent_at = std::time::Instant::now();
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert!(
        sent_at.elapsed() >= Duration::from_secs(2),
        "it waited for the chat: {:?}",
        sent_at.elapsed()
    );
    assert_eq!(record.state, DeliveryState::Failed);
    assert!(record.is_undelivered, "{record:#?}");
    assert!(
        record.error.as_deref().unwrap_or_default().contains("busy"),
        "{record:#?}"
    );
    assert!(turns_started(&host).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_on_no_running_host_is_refused_naming_it_and_vs_code() {
    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "copilot-closed");
    let refusal = bridge
        .refused(to_copilot(&bridge, "hello", Some(&copilot.title)))
        .await;
    assert_eq!(refusal.reason, RefusalReason::NotAvailable, "{refusal:#?}");
    assert!(refusal.message.contains("host not running"), "{refusal:#?}");
    assert!(refusal.message.contains(&copilot.id), "{refusal:#?}");
    assert!(refusal.message.contains("VS Code"), "{refusal:#?}");
    // Nothing was recorded: no delivery in flight.
    let status = bridge.status(None).await;
    assert!(
        serde_json::to_string(&status)
            .unwrap()
            .find("agent-host")
            .is_none(),
        "{status:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_refuses_new_session_a_missing_target_and_an_ambiguous_name() {
    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "twin");
    let _twin = Copilot::in_catalog(&bridge, "twin");
    let host = copilot.host(&bridge, TurnScript::Answer);

    let mut new = to_copilot(&bridge, "hello", None);
    new.new_session = true;
    let refusal = bridge.refused(new).await;
    assert_eq!(refusal.reason, RefusalReason::InvalidArguments);
    assert!(refusal.message.contains("new_session"), "{refusal:#?}");

    // No name and no pin: never discovered, even with a session on a live host.
    let refusal = bridge.refused(to_copilot(&bridge, "hello", None)).await;
    assert_eq!(refusal.reason, RefusalReason::RequireExplicitTarget);

    let refusal = bridge
        .refused(to_copilot(&bridge, "hello", Some("twin")))
        .await;
    assert_eq!(refusal.reason, RefusalReason::AmbiguousName, "{refusal:#?}");
    assert_eq!(refusal.candidates.len(), 2);

    let refusal = bridge
        .refused(to_copilot(&bridge, "hello", Some("no-such-chat")))
        .await;
    assert_eq!(refusal.reason, RefusalReason::NoSuchSession, "{refusal:#?}");
    assert!(turns_started(&host).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_under_ui_hook_off_is_refused_there_being_no_cli_fallback() {
    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "copilot-off");
    let host = copilot.host(&bridge, TurnScript::Answer);
    let mut params = to_copilot(&bridge, "hello", Some(&copilot.title));
    params
        .caller
        .settings
        .insert("CROSS_AGENT_UI_HOOK".into(), "off".into());
    let refusal = bridge.refused(params).await;
    assert_eq!(refusal.reason, RefusalReason::NotAvailable, "{refusal:#?}");
    assert!(refusal.message.contains("CROSS_AGENT_UI_HOOK=off"));
    assert!(turns_started(&host).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphaned_copilot_delivery_is_never_resent_and_its_answer_is_read_from_the_sdk_events() {
    let mut bridge = Bridge::start().await;
    bridge.stop_daemon().await;
    let (mut daemon, conn) = spawn_daemon_process(
        bridge.state.root(),
        &bridge.state.dir.path().join("user"),
        &[],
    )
    .await;
    bridge.conn = conn;
    let copilot = Copilot::in_catalog(&bridge, "copilot-orphan");
    // Accepted, then silent: the answer never comes over the connection.
    let host = copilot.host(&bridge, TurnScript::Silent);
    let receipt = bridge
        .accepted(to_copilot(
            &bridge,
            "orphaned copilot job",
            Some(&copilot.title),
        ))
        .await;
    bridge
        .wait_record(&receipt.delivery_id, Duration::from_secs(60), |r| {
            r.state == DeliveryState::AwaitingPeer
        })
        .await;

    // Killed outright; meanwhile Copilot finished the turn, as its SDK's events say.
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    let mut events = SdkEvents::new(
        &bridge.agents.path().join(".copilot/session-state"),
        &copilot.sdk_id,
    );
    let now = now_millis();
    events
        .user_message(
            &format!("orphaned copilot job\nrequest: {}", receipt.request_id),
            now,
        )
        .turn_start(now + 1)
        .assistant(
            &format!("COPILOT ANSWER\n{}", receipt.request_id),
            None,
            now + 2,
        )
        .turn_end(now + 3);
    events.write().unwrap();

    bridge.daemon = Some(super::Running::start(&bridge.state.home));
    bridge.conn = super::connect(&bridge.state.home).await;
    let record = bridge
        .status(Some(&receipt.delivery_id))
        .await
        .delivery
        .unwrap();
    assert_eq!(record.state, DeliveryState::Failed, "{record:#?}");
    assert!(record.is_orphaned, "{record:#?}");
    assert!(record.is_reply_recovered, "{record:#?}");
    assert!(record.answer.reply_carries_request_id, "{record:#?}");
    let preview = record.reply_preview.unwrap_or_default();
    assert!(preview.starts_with("COPILOT ANSWER"), "{preview}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(turns_started(&host).len(), 1);
}

/// A call from the Copilot MCP process of SDK session `sdk` (nothing else says who calls).
pub(super) fn copilot_caller(bridge: &Bridge, sdk: &str) -> CallerContext {
    CallerContext {
        client_name: None,
        codex_turn_metadata: None,
        copilot_agent_session_id: Some(sdk.to_owned()),
        ..bridge.codex_caller("unused")
    }
}

fn from_copilot(bridge: &Bridge, sdk: &str, target: &str) -> SendParams {
    let mut params = bridge.send_params(Agent::Copilot, "hello", copilot_caller(bridge, sdk));
    params.session_id = Some(target.to_owned());
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copilot_caller_is_its_sdk_sessions_default_chat() {
    let bridge = Bridge::start().await;
    let caller = Copilot::in_catalog(&bridge, "copilot-caller");
    let target = Copilot::in_catalog(&bridge, "copilot-target");
    let _host = target.host(&bridge, TurnScript::Answer);
    bridge
        .endpoint
        .push(Rule::on_user_text("hello").reply(Reply::echo_token("hi back")));

    let receipt = bridge
        .accepted(from_copilot(&bridge, &caller.sdk_id, &target.title))
        .await;
    assert_eq!(
        receipt.reply_lands_in_session.as_deref(),
        Some(caller.id.as_str())
    );
    // No verified return route in this build: the answer stays on the record.
    assert!(!receipt.return_panel_available_now);
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.from_agent, Some(Agent::Copilot));
    assert_eq!(record.from_session.as_deref(), Some(caller.id.as_str()));
    assert!(record.is_return_status_only, "{record:#?}");

    // Copilot → Copilot without a name: refused as a self-call before any lookup.
    let mut unnamed = from_copilot(&bridge, &caller.sdk_id, &target.title);
    unnamed.session_id = None;
    let refusal = bridge.refused(unnamed).await;
    assert_eq!(refusal.reason, RefusalReason::SelfCall, "{refusal:#?}");

    // Inherited by another agent's process, the variable means nothing.
    let codex = CallerContext {
        copilot_agent_session_id: Some(caller.sdk_id.clone()),
        ..bridge.codex_caller("t-codex")
    };
    let mut params = bridge.send_params(Agent::Copilot, "hello", codex);
    params.session_id = Some(target.title.clone());
    let receipt = bridge.accepted(params).await;
    assert_eq!(receipt.reply_lands_in_session.as_deref(), Some("t-codex"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copilot_caller_that_maps_to_no_one_chat_is_refused_with_the_reason() {
    let bridge = Bridge::start().await;
    let target = Copilot::in_catalog(&bridge, "copilot-target");
    let host = target.host(&bridge, TurnScript::Answer);

    // Missing: a side chat's SDK session, which no default chat names.
    let refusal = bridge
        .refused(from_copilot(&bridge, "sdk-of-a-side-chat", &target.title))
        .await;
    assert_eq!(
        refusal.reason,
        RefusalReason::CallerUnresolved,
        "{refusal:#?}"
    );
    assert!(refusal.message.contains("side chat"), "{refusal:#?}");

    // Archived.
    let archived = Copilot::in_catalog(&bridge, "copilot-archived");
    archived
        .editor
        .session(&archived.id)
        .unwrap()
        .set("archived", "true")
        .unwrap();
    let refusal = bridge
        .refused(from_copilot(&bridge, &archived.sdk_id, &target.title))
        .await;
    assert_eq!(refusal.reason, RefusalReason::CallerUnresolved);
    assert!(refusal.message.contains("archived"), "{refusal:#?}");

    // Two default chats backed by one SDK session.
    let first = Copilot::in_catalog(&bridge, "copilot-one");
    let second = Copilot::in_catalog(&bridge, "copilot-two");
    second
        .editor
        .session(&second.id)
        .unwrap()
        .default_chat(&first.sdk_id, "gpt-5")
        .unwrap();
    let refusal = bridge
        .refused(from_copilot(&bridge, &first.sdk_id, &target.title))
        .await;
    assert_eq!(refusal.reason, RefusalReason::CallerUnresolved);
    assert!(
        refusal.message.contains(&first.id) && refusal.message.contains(&second.id),
        "{refusal:#?}"
    );
    assert!(turns_started(&host).is_empty());

    // bridge_status says why the caller's session is unknown.
    let status: BridgeStatusResponse = bridge
        .conn
        .client
        .call(BridgeStatusParams {
            cwd: None,
            scope: None,
            delivery_id: None,
            caller: copilot_caller(&bridge, "sdk-of-a-side-chat"),
        })
        .await
        .unwrap();
    assert_eq!(status.caller.agent, Some(Agent::Copilot));
    assert_eq!(status.caller.session_id, None);
    assert!(
        status.caller.how.contains("side chat"),
        "{:?}",
        status.caller
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copilot_senders_answer_goes_back_into_its_chat_through_its_own_host() {
    let bridge = Bridge::start().await;
    let caller = Copilot::in_catalog(&bridge, "copilot-asks");
    let target = Copilot::in_catalog(&bridge, "copilot-answers");
    let caller_session = FakeSession::new(&caller.title)
        .id(&caller.id)
        .cwd(bridge.project.to_string_lossy());
    // One editor, one host, both chats; this test process owns the host's endpoint entry.
    let host = FakeAgentHost::builder(&caller.editor.user_data)
        .model_endpoint(&bridge.endpoint)
        .session(caller_session.clone())
        .session(
            FakeSession::new(&target.title)
                .id(&target.id)
                .cwd(bridge.project.to_string_lossy()),
        )
        .start()
        .unwrap();
    bridge.endpoint.push(
        Rule::on_user_text("which port")
            .reply(Reply::echo_token("Port 8080."))
            .times(2),
    );
    bridge
        .endpoint
        .push(Rule::on_user_text("BRIDGE REPLY").reply_text("noted"));
    // The MCP process VS Code's host started for the caller: a child of the host's owner.
    let mut mcp = std::process::Command::new("sleep")
        .arg("120")
        .spawn()
        .unwrap();
    let owner = AncestorProcess {
        pid: std::process::id(),
        name: "code".into(),
        cmdline: "code --agent-host".into(),
    };
    let mut context = copilot_caller(&bridge, &caller.sdk_id);
    context.pid = mcp.id();
    context.ancestry = vec![owner];

    let mut params = bridge.send_params(Agent::Copilot, "which port does it use?", context);
    params.session_id = Some(target.id.clone());
    let receipt = bridge.accepted(params).await;
    assert!(receipt.return_panel_available_now, "{receipt:#?}");
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(!record.is_return_status_only, "{record:#?}");
    let back_id = record
        .return_delivery_id
        .clone()
        .expect("a return delivery");
    let back = bridge.wait_finished(&back_id).await;
    assert_eq!(back.state, DeliveryState::Delivered, "{back:#?}");
    assert_eq!(back.transport, Transport::AgentHost);
    let into_caller: Vec<_> = host
        .dispatched()
        .into_iter()
        .filter(|d| d["channel"] == caller_session.chat_uri())
        .collect();
    assert_eq!(into_caller.len(), 1, "{into_caller:#?}");
    let text = into_caller[0].to_string();
    assert!(text.contains("BRIDGE REPLY"), "{text}");
    assert!(text.contains("Port 8080."), "{text}");

    // Not below the host (a stored catalog entry is no return address): status only.
    let mut elsewhere = copilot_caller(&bridge, &caller.sdk_id);
    elsewhere.pid = mcp.id();
    elsewhere.ancestry = Vec::new();
    let mut params = bridge.send_params(Agent::Copilot, "which port does it use?", elsewhere);
    params.session_id = Some(target.id.clone());
    let receipt = bridge.accepted(params).await;
    assert!(!receipt.return_panel_available_now, "{receipt:#?}");
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert!(record.is_return_status_only, "{record:#?}");
    assert_eq!(record.return_delivery_id, None);
    mcp.kill().unwrap();
    mcp.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copilot_return_route_is_checked_again_when_the_answer_comes() {
    let bridge = Bridge::start().await;
    let caller = Copilot::in_catalog(&bridge, "copilot-asks");
    let target = Copilot::in_catalog(&bridge, "copilot-answers");
    let host = FakeAgentHost::builder(&caller.editor.user_data)
        .model_endpoint(&bridge.endpoint)
        .session(FakeSession::new(&caller.title).id(&caller.id))
        .session(FakeSession::new(&target.title).id(&target.id))
        .start()
        .unwrap();
    let release = bridge.agents.path().join("release-copilot-answer");
    bridge.endpoint.push(
        Rule::on_user_text("slow question")
            .reply(Reply::echo_token("slow answer").after_file(&release))
            .once(),
    );
    let mut mcp = std::process::Command::new("sleep")
        .arg("120")
        .spawn()
        .unwrap();
    let mut context = copilot_caller(&bridge, &caller.sdk_id);
    context.pid = mcp.id();
    context.ancestry = vec![AncestorProcess {
        pid: std::process::id(),
        name: "code".into(),
        cmdline: String::new(),
    }];
    let mut params = bridge.send_params(Agent::Copilot, "slow question", context);
    params.session_id = Some(target.id.clone());
    let receipt = bridge.accepted(params).await;
    assert!(receipt.return_panel_available_now);
    bridge
        .wait_record(&receipt.delivery_id, Duration::from_secs(60), |r| {
            r.state == DeliveryState::AwaitingPeer
        })
        .await;
    // The MCP process is gone by the time the answer comes: the route no longer holds.
    mcp.kill().unwrap();
    mcp.wait().unwrap();
    std::fs::write(&release, "").unwrap();
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(record.is_return_status_only, "{record:#?}");
    assert_eq!(record.return_delivery_id, None);
    let caller_chat = FakeSession::new(&caller.title).id(&caller.id).chat_uri();
    assert!(
        !host
            .dispatched()
            .iter()
            .any(|d| d["channel"] == caller_chat),
        "nothing was put into the caller's chat"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_agent_send_copilot_names_the_session_by_uri() {
    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "copilot-cli");
    let host = copilot.host(&bridge, TurnScript::Answer);
    bridge
        .endpoint
        .push(Rule::on_user_text("from a shell").reply(Reply::echo_token("shell answer")));
    let exe = cross_agent_testkit::binaries::cross_agent_bin().unwrap();
    let (home, root, project, uri) = (
        bridge.agents.path().to_owned(),
        bridge.state.root().to_owned(),
        bridge.project.clone(),
        copilot.uri(),
    );
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .args([
                "send",
                "copilot",
                "--session",
                &uri,
                "from a shell",
                "--json",
            ])
            .env_clear()
            .env("HOME", &home)
            .env("CROSS_AGENT_HOME", &root)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(&project)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let receipt: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(receipt["transport"], "agent-host", "{receipt:#}");
    assert_eq!(receipt["target_session_id"], copilot.id.as_str());
    let delivery_id = receipt["delivery_id"].as_str().unwrap().to_owned();
    let record = bridge.wait_finished(&delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(
        record
            .reply_preview
            .unwrap_or_default()
            .starts_with("shell answer")
    );
    assert_eq!(turns_started(&host).len(), 1);
}

/// The real Codex (its app-server behind a panel shim, as the VS Code extension runs it), with
/// `cross-agent mcp` registered, calls `send_to_copilot`: the message reaches the Copilot chat
/// through its host, and the record names Codex's thread as the sender. (`codex exec` starts
/// without MCP tools that are not ready within about a second; the panel waits for them.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_codex_thread_reaches_copilot_through_send_to_copilot() {
    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "copilot-test");
    let host = copilot.host(&bridge, TurnScript::Answer);
    let server = cross_agent_testkit::agents::McpServer::new(
        "cross-agent",
        cross_agent_testkit::binaries::cross_agent_bin().unwrap(),
    )
    .arg("mcp")
    .env("CROSS_AGENT_HOME", bridge.state.root().to_string_lossy())
    .env("HOME", bridge.agents.path().to_string_lossy());
    let codex = bridge.codex().with_mcp_server(server).unwrap();
    let mut panel = super::panels_codex::CodexPanel::open_with(&bridge, &codex);
    let thread = panel.start_thread(&bridge);
    panel.wait_mcp_ready(&thread);
    bridge.endpoint.push(
        Rule::on_user_text("ask copilot about the port")
            .tool_call(cross_agent_testkit::endpoint::ToolCall::mcp(
                "cross-agent",
                "send_to_copilot",
                serde_json::json!({
                    "message": "relay-copilot-7: which port does it use?",
                    "session_id": "copilot-test",
                }),
            ))
            .for_api(Api::Responses)
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_tool_result("delivery_id")
            .reply_text("asked Copilot")
            .for_api(Api::Responses)
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_user_text("relay-copilot-7")
            .reply(Reply::echo_token("Port 8080 (Copilot)."))
            .for_api(Api::Anthropic)
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_user_text("=== BRIDGE REPLY ===")
            .reply_text("read the Copilot reply")
            .for_api(Api::Responses)
            .once(),
    );
    panel.type_turn(&thread, "ask copilot about the port");

    // The delivery Codex's call made, as the decisions log names it.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let delivery_id = loop {
        let log = std::fs::read_to_string(bridge.state.root().join("decisions.jsonl"))
            .unwrap_or_default();
        let found = log
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find(|d| d["kind"] == "send_accepted")
            .and_then(|d| d["delivery"].as_str().map(str::to_owned));
        if let Some(id) = found {
            break id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no send was accepted: {log}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let record = bridge.wait_finished(&delivery_id).await;
    let started = turns_started(&host);
    assert_eq!(started.len(), 1, "{started:#?}");
    assert!(started[0].to_string().contains("relay-copilot-7"));
    assert_eq!(record.transport, Transport::AgentHost);
    assert_eq!(record.from_agent, Some(Agent::Codex));
    assert_eq!(record.from_session.as_deref(), Some(thread.as_str()));
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(record.answer.reply_carries_request_id, "{record:#?}");

    // The answer comes back into that same thread through the shim: the extension sees the
    // injected BRIDGE REPLY, and the thread's turn on it, whose model read Copilot's words.
    panel
        .driver
        .next_line(Duration::from_secs(120), |l| {
            l["method"] == "item/completed"
                && l["params"]["threadId"] == thread
                && l["params"]["item"]["type"] == "agentMessage"
                && l["params"]["item"]["text"] == "read the Copilot reply"
        })
        .unwrap();
    assert!(panel.shows_user_message("=== BRIDGE REPLY ==="));
    let prompt = bridge
        .endpoint
        .model_requests()
        .into_iter()
        .filter(|r| !r.side_request)
        .filter_map(|r| r.last_user_prompt)
        .rfind(|p| p.contains("=== BRIDGE REPLY ==="))
        .unwrap();
    assert!(prompt.contains("Port 8080 (Copilot)."), "{prompt}");
    let back = bridge
        .wait_finished(
            &record
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
async fn a_real_claude_panel_reaches_copilot_through_send_to_copilot_and_reads_the_answer_there() {
    use super::panels_real::{Panel, TURN, prompts_with};
    use cross_agent_testkit::endpoint::ToolCall;
    use cross_agent_testkit::panel::claude_user;

    let bridge = Bridge::start().await;
    let copilot = Copilot::in_catalog(&bridge, "copilot-test");
    let host = copilot.host(&bridge, TurnScript::Answer);
    // `cross-agent mcp` as the panel's MCP server, on this daemon's home.
    let config = serde_json::json!({"mcpServers": {"cross-agent": {
        "type": "stdio",
        "command": cross_agent_testkit::binaries::cross_agent_bin().unwrap(),
        "args": ["mcp"],
        "env": {
            "CROSS_AGENT_HOME": bridge.state.root().to_string_lossy(),
            "HOME": bridge.agents.path().to_string_lossy(),
            "PATH": std::env::var("PATH").unwrap_or_default(),
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
        Rule::on_user_text("ask copilot about the port c1")
            .tool_call(ToolCall::mcp(
                "cross-agent",
                "send_to_copilot",
                serde_json::json!({
                    "message": "relay-copilot-c1: which port does it use?",
                    "session_id": "copilot-test",
                }),
            ))
            .for_api(Api::Anthropic)
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_tool_result("delivery_id")
            .reply_text("asked Copilot c1")
            .for_api(Api::Anthropic)
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_user_text("=== BRIDGE REPLY ===")
            .reply_text("read the Copilot reply c1")
            .for_api(Api::Anthropic)
            .once(),
    );
    // The Copilot chat's model (its host asks the same endpoint).
    bridge.endpoint.push(
        Rule::on_user_text("relay-copilot-c1")
            .reply(Reply::echo_token("Port 8080 (Copilot c1)."))
            .for_api(Api::Anthropic)
            .once(),
    );

    panel
        .driver
        .send(&claude_user("ask copilot about the port c1"))
        .unwrap();
    let sent = panel
        .driver
        .next_line(TURN, |l| {
            l["type"] == "result" && l["result"] == "asked Copilot c1"
        })
        .unwrap();
    let session = sent["session_id"].as_str().unwrap().to_owned();
    // The answer comes back into this same panel: its model reads the BRIDGE REPLY carrying
    // Copilot's words, and the panel shows the turn it ran on it.
    panel
        .driver
        .next_line(TURN, |l| {
            l["type"] == "result" && l["result"] == "read the Copilot reply c1"
        })
        .unwrap();
    let prompt = prompts_with(&bridge, "=== BRIDGE REPLY ===").pop().unwrap();
    assert!(prompt.contains("Port 8080 (Copilot c1)."), "{prompt}");
    assert!(
        prompt.contains(&format!("from: copilot session {}", copilot.id)),
        "{prompt}"
    );

    // The host got one turn, the one Claude asked for.
    let started = turns_started(&host);
    assert_eq!(started.len(), 1, "{started:#?}");
    assert!(started[0].to_string().contains("relay-copilot-c1"));
    // The request's record: from this panel's session to that chat, answered and paired, its
    // answer delivered back into the panel.
    let status = bridge.status(None).await;
    let request = status
        .deliveries
        .recent
        .iter()
        .find(|r| r.target_agent == Agent::Copilot && r.answer.answers_delivery_id.is_none())
        .expect("the request's record")
        .clone();
    assert_eq!(request.transport, Transport::AgentHost);
    assert_eq!(request.from_agent, Some(Agent::Claude));
    assert_eq!(request.from_session.as_deref(), Some(session.as_str()));
    assert_eq!(
        request.target_session_id.as_deref(),
        Some(copilot.id.as_str())
    );
    assert_eq!(request.state, DeliveryState::Delivered, "{request:#?}");
    assert!(request.answer.reply_carries_request_id, "{request:#?}");
    let preview = request.reply_preview.clone().unwrap_or_default();
    assert!(preview.starts_with("Port 8080 (Copilot c1)."), "{preview}");
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
    assert_eq!(back.target_session_id.as_deref(), Some(session.as_str()));
    assert_eq!(
        back.answer.answers_delivery_id.as_deref(),
        Some(request.delivery_id.as_str())
    );
}
