//! Deliveries through the daemon into real Claude Code and Codex sessions (scripted model):
//! the envelope the peer's model receives, the record's life, the answer re-read from the
//! transcript, new sessions pinned and reused, names, serialisation, timeouts, and stopping.

use std::time::Duration;

use cross_agent_protocol::bridge::{
    Agent, DeliveryRecord, DeliveryState, RefusalReason, SendParams, SendReceipt, SendResponse,
    TargetSelectedBy,
};
use cross_agent_testkit::endpoint::{Reply, Rule};
use pretty_assertions::assert_eq;

use super::bridge_support::{Bridge, append_line};

/// Whether `list_agent_sessions` shows Codex thread `thread` as working.
async fn listed_as_working(bridge: &Bridge, thread: &str) -> bool {
    bridge
        .listed_session(
            Agent::Codex,
            thread,
            bridge.claude_caller("aaaaaaaa-0000-4000-8000-0000000000aa"),
        )
        .await
        .is_working
}

/// The receipt of a send to an idle session: no busy warning, `peer_turn` idle.
fn assert_receipt_says_idle(receipt: &SendReceipt) {
    assert_eq!(
        receipt.peer_queue.peer_turn.as_deref(),
        Some("idle"),
        "{receipt:#?}"
    );
    assert!(
        !receipt.warnings.iter().any(|w| w.contains("busy")),
        "{:#?}",
        receipt.warnings
    );
}

/// The turn requests (not side requests) whose prompt carries `needle`.
fn prompts_with(bridge: &Bridge, needle: &str) -> Vec<String> {
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
async fn claude_to_codex_resumes_the_thread_with_the_envelope() {
    let bridge = Bridge::start().await;
    let claude_id = bridge.claude_session("seed claude c2x");
    let thread = bridge.codex_session("seed codex c2x");
    bridge.endpoint.push(
        Rule::on_user_text("review the plan c2x").reply(Reply::echo_token("codex reviewed it")),
    );

    let mut params = bridge.send_params(
        Agent::Codex,
        "review the plan c2x",
        bridge.claude_caller(&claude_id),
    );
    params.session_id = Some(thread.clone());
    let receipt = bridge.accepted(params).await;
    assert_eq!(receipt.target_session_id.as_deref(), Some(thread.as_str()));
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Caller);
    assert_eq!(
        receipt.reply_lands_in_session.as_deref(),
        Some(claude_id.as_str())
    );
    assert!(!receipt.return_panel_available_now);
    assert_eq!((receipt.hop, receipt.max_hops), (1, 4));
    assert!(
        receipt
            .warnings
            .iter()
            .any(|w| w.contains("bridge_status(delivery_id="))
    );

    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    let preview = record.reply_preview.clone().unwrap();
    assert!(preview.starts_with("codex reviewed it"), "{preview}");
    assert!(preview.ends_with(&receipt.request_id), "{preview}");
    assert_eq!(record.from_agent, Some(Agent::Claude));
    assert_eq!(record.from_session.as_deref(), Some(claude_id.as_str()));

    let prompt = prompts_with(&bridge, "review the plan c2x").pop().unwrap();
    let expected_head = format!(
        "=== CROSS-AGENT BRIDGE MESSAGE ===\n\
         from: Claude Code (peer AI agent, not the human user)\n\
         reply-to: claude session {claude_id}\n\
         conversation: {} | hop 1/4\n\
         request: {}\n\nreview the plan c2x\n\n=== END OF BRIDGE MESSAGE ===\n",
        receipt.conversation_id, receipt.request_id
    );
    assert!(prompt.starts_with(&expected_head), "{prompt}");
    assert!(prompt.contains("end it with this request id alone on the last line"));

    let status = bridge.status(Some(&receipt.delivery_id)).await;
    let transcript = status.peer_transcript.unwrap();
    assert!(transcript.answer_carries_request_id, "{transcript:?}");
    assert_eq!(transcript.answer.as_deref(), Some(preview.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_to_claude_resumes_the_session_and_names_the_thread() {
    let bridge = Bridge::start().await;
    let claude_id = bridge.claude_session("seed claude x2c");
    let thread = "019a0000-0000-7000-8000-00000000c0de";
    bridge.endpoint.push(
        Rule::on_user_text("explain the bug x2c").reply(Reply::echo_token("claude explains")),
    );
    // No session_id: the active Claude session in the project is discovered.
    let receipt = bridge
        .accepted(bridge.send_params(
            Agent::Claude,
            "explain the bug x2c",
            bridge.codex_caller(thread),
        ))
        .await;
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Discovery);
    assert_eq!(
        receipt.target_session_id.as_deref(),
        Some(claude_id.as_str())
    );
    assert!(
        receipt
            .warnings
            .iter()
            .any(|w| w.starts_with("unaddressed relay"))
    );
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(record.reply_preview.unwrap().starts_with("claude explains"));
    let prompt = prompts_with(&bridge, "explain the bug x2c").pop().unwrap();
    assert!(
        prompt.contains(&format!(
            "from: Codex (peer AI agent, not the human user)\nreply-to: codex session {thread}\n"
        )),
        "{prompt}"
    );
    // The turn ran in the existing session: its transcript holds the envelope.
    let text = std::fs::read_to_string(bridge.claude_transcript(&claude_id)).unwrap();
    assert!(text.contains(&receipt.request_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_codex_session_is_created_pinned_and_reused() {
    let bridge = Bridge::start().await;
    bridge
        .endpoint
        .push(Rule::on_user_text("first new").reply(Reply::echo_token("made")));
    bridge
        .endpoint
        .push(Rule::on_user_text("second new").reply(Reply::echo_token("again")));
    let caller = bridge.claude_caller("11111111-2222-3333-4444-555555555555");

    let first = bridge
        .accepted(bridge.send_params(Agent::Codex, "first new", caller.clone()))
        .await;
    assert!(first.will_create_session);
    assert_eq!(first.target_selected_by, TargetSelectedBy::NewSession);
    assert_eq!(first.target_session_id, None, "Codex chooses the id itself");
    assert!(
        first
            .warnings
            .iter()
            .any(|w| w.contains("a new codex session is opened"))
    );
    let record = bridge.wait_finished(&first.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    let created = record.target_session_id.clone().unwrap();

    let second = bridge
        .accepted(bridge.send_params(Agent::Codex, "second new", caller))
        .await;
    assert_eq!(second.target_selected_by, TargetSelectedBy::Pin);
    assert_eq!(second.target_session_id.as_deref(), Some(created.as_str()));
    assert!(!second.will_create_session);
    let record = bridge.wait_finished(&second.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    let status = bridge.status(None).await;
    assert!(
        status
            .pins
            .iter()
            .any(|p| p.session_id == created && !p.sticky)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_address_exactly_and_an_ambiguous_one_is_refused() {
    let bridge = Bridge::start().await;
    let a = bridge.claude_session("seed name a");
    let b = bridge.claude_session("seed name b");
    let c = bridge.claude_session("seed name c");
    // What Claude Code appends on `/rename` (observed: `{"type":"custom-title",…}`).
    let rename = |id: &str, title: &str| {
        append_line(
            &bridge.claude_transcript(id),
            &serde_json::json!({"type": "custom-title", "customTitle": title, "sessionId": id})
                .to_string(),
        )
    };
    rename(&a, "billing-api");
    rename(&b, "twin");
    rename(&c, "twin");
    bridge
        .endpoint
        .push(Rule::on_user_text("by name").reply(Reply::echo_token("named ok")));
    let caller = bridge.codex_caller("019a0000-0000-7000-8000-0000000000aa");

    let mut params = bridge.send_params(Agent::Claude, "by name", caller.clone());
    params.session_id = Some("billing-api".into());
    let receipt = bridge.accepted(params).await;
    assert_eq!(receipt.target_session_id.as_deref(), Some(a.as_str()));
    assert_eq!(
        receipt.caller_supplied_session_id.as_deref(),
        Some("billing-api")
    );

    let mut params = bridge.send_params(Agent::Claude, "to the twins", caller.clone());
    params.session_id = Some("twin".into());
    let refusal = bridge.refused(params).await;
    assert_eq!(refusal.reason, RefusalReason::AmbiguousName);
    let mut ids: Vec<_> = refusal
        .candidates
        .iter()
        .map(|c| c.session_id.clone())
        .collect();
    ids.sort();
    let mut expected = vec![b.clone(), c.clone()];
    expected.sort();
    assert_eq!(ids, expected);

    let mut params = bridge.send_params(Agent::Claude, "nobody", caller);
    params.session_id = Some("billing".into());
    let refusal = bridge.refused(params).await;
    assert_eq!(refusal.reason, RefusalReason::NoSuchSession);
    assert!(
        refusal
            .candidates
            .iter()
            .any(|c| c.title.as_deref() == Some("billing-api"))
    );
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sends_to_one_session_never_overlap() {
    let bridge = Bridge::start().await;
    let target = bridge.claude_session("seed serial");
    // The first answer is held until the checks below are done: a gate, not a guessed delay.
    let release = bridge.agents.path().join("release-serial-one");
    bridge.endpoint.push(
        Rule::on_user_text("serial one").reply(Reply::echo_token("one done").after_file(&release)),
    );
    bridge
        .endpoint
        .push(Rule::on_user_text("serial two").reply(Reply::echo_token("two done")));
    let caller = bridge.codex_caller("019a0000-0000-7000-8000-0000000000bb");
    let mut one = bridge.send_params(Agent::Claude, "serial one", caller.clone());
    one.session_id = Some(target.clone());
    let mut two = bridge.send_params(Agent::Claude, "serial two", caller);
    two.session_id = Some(target.clone());
    let first = bridge.accepted(one).await;
    let second = bridge.accepted(two).await;
    assert_eq!(second.queue_depth, 1, "{second:#?}");
    assert!(second.warnings.iter().any(|w| w.contains("busy")));

    // While the first turn's model call is held, the second never reaches the model.
    bridge
        .wait_record(&first.delivery_id, Duration::from_secs(120), |r| {
            r.state == DeliveryState::AwaitingPeer
        })
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(prompts_with(&bridge, "serial two").is_empty());
    let queued = bridge
        .status(Some(&second.delivery_id))
        .await
        .delivery
        .unwrap();
    assert_eq!(queued.state, DeliveryState::Queued);
    std::fs::write(&release, "").unwrap();

    let one = bridge.wait_finished(&first.delivery_id).await;
    let two = bridge.wait_finished(&second.delivery_id).await;
    assert_eq!(
        (one.state, two.state),
        (DeliveryState::Delivered, DeliveryState::Delivered)
    );
    assert!(
        one.finished_at.unwrap() <= two.started_at.unwrap(),
        "the second turn started only after the first ended"
    );
    let order: Vec<_> = bridge
        .endpoint
        .model_requests()
        .into_iter()
        .filter(|r| !r.side_request)
        .filter_map(|r| r.last_user_prompt)
        .filter(|p| p.contains("serial "))
        .map(|p| if p.contains("serial one") { 1 } else { 2 })
        .collect();
    assert_eq!(order, [1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_turn_is_killed_by_the_bridge_timeout() {
    let bridge = Bridge::start().await;
    let target = bridge.claude_session("seed silent");
    bridge
        .endpoint
        .push(Rule::on_user_text("go silent").reply(Reply::text("partial").hang_after_events(2)));
    let mut params = bridge.send_params(
        Agent::Claude,
        "go silent",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000cc"),
    );
    params.session_id = Some(target);
    params.timeout = Some(3);
    let receipt = bridge.accepted(params).await;
    assert!(receipt.idle_policy.starts_with("inactivity timeout 3 s"));
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Failed);
    assert!(record.is_killed_by_timeout, "{record:#?}");
    assert!(
        record
            .error
            .unwrap()
            .starts_with("killed by bridge timeout")
    );
    let pid = record.peer_pid.unwrap();
    assert!(!cross_agent_transports::process::group_alive(pid));
}

/// docs/spec/cross-agent-mcp.md §9: a turn the bridge started and killed for inactivity leaves an open turn in the
/// Codex rollout, but it is nobody's work: the next delivery to that thread runs at once
/// instead of waiting (up to an hour) as if someone else were working in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_for_inactivity_does_not_hold_the_next_delivery() {
    killed_turn_then_next(false).await;
}

/// The same for a `raw` send: its prompt carries no request id, so the bridge knows its own
/// stopped turn by when it ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_turn_killed_for_inactivity_does_not_hold_the_next_delivery() {
    killed_turn_then_next(true).await;
}

async fn killed_turn_then_next(raw: bool) {
    let bridge = Bridge::start().await;
    let thread = bridge.codex_session("seed killed codex");
    bridge.endpoint.push(
        Rule::on_user_text("go silent codex")
            .reply(Reply::text("partial").hang_after_events(2))
            .once(),
    );
    bridge
        .endpoint
        .push(Rule::on_user_text("after the kill").reply(Reply::echo_token("the thread answered")));
    let caller = bridge.claude_caller("aaaaaaaa-0000-4000-8000-0000000000ee");
    let mut silent = bridge.send_params(Agent::Codex, "go silent codex", caller.clone());
    silent.session_id = Some(thread.clone());
    silent.timeout = Some(3);
    silent.raw = raw;
    let silent = bridge.accepted(silent).await;
    let killed = bridge.wait_finished(&silent.delivery_id).await;
    assert!(killed.is_killed_by_timeout, "{killed:#?}");
    let status = bridge.status(Some(&silent.delivery_id)).await;
    assert!(!status.peer_transcript.unwrap().is_working);
    // The listing and the next receipt judge the open turn by the dispatcher's rule: the
    // bridge's own stopped turn is nobody's work once its killed process group is gone (a
    // SIGKILLed grandchild may take a moment to exit on a loaded machine; bounded at 20 s).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while listed_as_working(&bridge, &thread).await {
        assert!(
            std::time::Instant::now() < deadline,
            "the stopped turn is still listed as working 20 s after its delivery was killed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mut next = bridge.send_params(Agent::Codex, "after the kill", caller);
    next.session_id = Some(thread);
    let next = bridge.accepted(next).await;
    assert_receipt_says_idle(&next);
    let done = runs_at_once(&bridge, &next.delivery_id).await;
    assert!(
        done.reply_preview
            .unwrap()
            .starts_with("the thread answered")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_daemon_stops_its_turns_and_a_queued_delivery_goes_out_once_after_restart() {
    let mut bridge = Bridge::start().await;
    let target = bridge.claude_session("seed restart");
    bridge
        .endpoint
        .push(Rule::on_user_text("long job").reply(Reply::hang()).once());
    bridge
        .endpoint
        .push(Rule::on_user_text("after restart").reply(Reply::echo_token("came through")));
    let caller = bridge.codex_caller("019a0000-0000-7000-8000-0000000000dd");
    let mut long = bridge.send_params(Agent::Claude, "long job", caller.clone());
    long.session_id = Some(target.clone());
    let mut queued = bridge.send_params(Agent::Claude, "after restart", caller);
    queued.session_id = Some(target.clone());
    let long = bridge.accepted(long).await;
    let queued = bridge.accepted(queued).await;
    let running = bridge
        .wait_record(&long.delivery_id, Duration::from_secs(120), |r| {
            r.state == DeliveryState::AwaitingPeer
        })
        .await;
    let pid = running.peer_pid.unwrap();
    bridge
        .endpoint
        .wait_for_requests(1, Duration::from_secs(60))
        .ok();

    bridge.restart_daemon().await;
    assert!(
        !cross_agent_transports::process::group_alive(pid),
        "no orphan process of the stopped turn"
    );
    let stopped = bridge
        .status(Some(&long.delivery_id))
        .await
        .delivery
        .unwrap();
    assert_eq!(stopped.state, DeliveryState::Failed);
    assert!(stopped.is_stopped_with_carrier, "{stopped:#?}");
    assert!(
        stopped
            .error
            .unwrap()
            .starts_with("stopped with its carrier")
    );

    let record = bridge.wait_finished(&queued.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(record.carrier_generation.unwrap() > running.carrier_generation.unwrap());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let handed_over = prompts_with(&bridge, &queued.request_id);
    assert_eq!(handed_over.len(), 1, "exactly once: {handed_over:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_claude_session_takes_the_bridges_id_and_is_pinned_at_once() {
    let bridge = Bridge::start().await;
    // The first turn is held until every send below is in: a gate, not a guessed delay.
    let release = bridge.agents.path().join("release-open-claude");
    bridge.endpoint.push(
        Rule::on_user_text("open claude").reply(Reply::echo_token("opened").after_file(&release)),
    );
    bridge
        .endpoint
        .push(Rule::on_user_text("follow up").reply(Reply::echo_token("followed")));
    let caller = bridge.codex_caller("019a0000-0000-7000-8000-0000000000ee");
    let mut params = bridge.send_params(Agent::Claude, "open claude", caller.clone());
    params.new_session = true;
    let first = bridge.accepted(params).await;
    assert!(first.will_create_session);
    let created = first.target_session_id.clone().unwrap();
    // Pinned before it even ran: the next send queues behind it instead of creating another.
    let second = bridge
        .accepted(bridge.send_params(Agent::Claude, "follow up", caller))
        .await;
    assert_eq!(second.target_selected_by, TargetSelectedBy::Pin);
    assert_eq!(second.target_session_id.as_deref(), Some(created.as_str()));
    // The id on the receipt can be named at once, before the session exists on disk.
    let mut third = bridge.send_params(
        Agent::Claude,
        "follow up by id",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000ee"),
    );
    third.session_id = Some(created.clone());
    let third = bridge.accepted(third).await;
    assert_eq!(third.target_selected_by, TargetSelectedBy::Caller);
    assert_eq!(third.target_session_id.as_deref(), Some(created.as_str()));
    std::fs::write(&release, "").unwrap();
    for id in [&first.delivery_id, &second.delivery_id, &third.delivery_id] {
        let record = bridge.wait_finished(id).await;
        assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    }
    let text = std::fs::read_to_string(bridge.claude_transcript(&created)).unwrap();
    assert!(text.contains(&first.request_id) && text.contains(&second.request_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_turn_stopped_for_want_of_an_approval_fails_saying_so() {
    let bridge = Bridge::start().await;
    let target = bridge.claude_session("seed approval");
    let marker = bridge.project.join("written-by-peer");
    bridge.endpoint.push(
        Rule::on_user_text("please write").tool_call(cross_agent_testkit::endpoint::ToolCall::new(
            "Bash",
            serde_json::json!({"command": format!("touch {}", marker.display()), "description": "write"}),
        )),
    );
    bridge
        .endpoint
        .push(Rule::on_any_tool_result().reply_text("let me run that another way"));
    let mut params = bridge.send_params(
        Agent::Claude,
        "please write",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000ff"),
    );
    params.session_id = Some(target);
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Failed, "{record:#?}");
    let error = record.error.unwrap();
    assert!(
        error.contains("cancelled for want of an approval (Bash)"),
        "{error}"
    );
    assert!(error.contains("CROSS_AGENT_CLAUDE_PERMISSION_MODE"));
    assert!(!marker.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_turn_whose_tool_call_needs_an_approval_fails_saying_so() {
    let bridge = Bridge::start().await;
    let target = bridge.codex_session("seed codex approval");
    // A registration without `default_tools_approval_mode` and a tool not marked read-only:
    // under `codex exec` nobody can approve the call, and Codex 0.171.0 fails it ("requires
    // approval") and goes on with the turn.
    let log = bridge.agents.path().join("probe-calls.jsonl");
    let probe = cross_agent_testkit::agents::McpServer::new(
        "probe",
        cross_agent_testkit::binaries::mcp_probe_bin().unwrap(),
    )
    .env("MCP_PROBE_LOG", log.to_string_lossy())
    .requiring_approval();
    bridge.codex().with_mcp_server(probe).unwrap();
    bridge
        .endpoint
        .push(Rule::on_user_text("please probe").tool_call(
            cross_agent_testkit::endpoint::ToolCall::mcp(
                "probe",
                "record",
                serde_json::json!({"text": "needs approval"}),
            ),
        ));
    bridge
        .endpoint
        .push(Rule::on_any_tool_result().reply_text("let me run that another way"));
    let mut params = bridge.send_params(
        Agent::Codex,
        "please probe",
        bridge.claude_caller("cccccccc-0000-4000-8000-0000000000aa"),
    );
    params.session_id = Some(target);
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Failed, "{record:#?}");
    let error = record.error.unwrap();
    assert!(
        error.contains("cancelled for want of an approval"),
        "{error}"
    );
    assert!(
        !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("\"call\""),
        "the tool never ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_from_inside_a_bridge_started_turn_continues_its_conversation() {
    let bridge = Bridge::start().await;
    let target = bridge.claude_session("seed inner");
    // The outer turn is held until the inner call is in: a gate, not a guessed delay.
    let release = bridge.agents.path().join("release-outer");
    bridge.endpoint.push(
        Rule::on_user_text("outer request")
            .reply(Reply::echo_token("outer done").after_file(&release)),
    );
    let mut params = bridge.send_params(
        Agent::Claude,
        "outer request",
        bridge.codex_caller("019a0000-0000-7000-8000-000000000111"),
    );
    params.session_id = Some(target.clone());
    let outer = bridge.accepted(params).await;
    let running = bridge
        .wait_record(&outer.delivery_id, Duration::from_secs(120), |r| {
            r.state == DeliveryState::AwaitingPeer
        })
        .await;
    // What the MCP server of that turn would send: its ancestry holds the turn's CLI, and no
    // environment tells it the conversation (as with Codex, which passes none).
    let inner_caller = cross_agent_protocol::bridge::CallerContext {
        pid: 999_999,
        ancestry: vec![cross_agent_protocol::bridge::AncestorProcess {
            pid: running.peer_pid.unwrap(),
            name: "claude".into(),
            cmdline: "claude -p".into(),
        }],
        client_name: None,
        claude_code_session_id: None,
        ..bridge.codex_caller("unused")
    };
    let mut inner_caller = inner_caller;
    inner_caller.codex_turn_metadata = None;
    let mut params = bridge.send_params(Agent::Codex, "inner request", inner_caller);
    params.new_session = true;
    let inner = bridge.accepted(params).await;
    std::fs::write(&release, "").unwrap();
    assert_eq!(inner.conversation_id, outer.conversation_id);
    assert_eq!(inner.hop, 2);
    assert_eq!(
        inner.reply_lands_in_session.as_deref(),
        Some(target.as_str())
    );
    let status = bridge.status(Some(&inner.delivery_id)).await;
    assert_eq!(status.delivery.unwrap().from_agent, Some(Agent::Claude));
    bridge.wait_finished(&outer.delivery_id).await;
    bridge.wait_finished(&inner.delivery_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_outright_leaves_an_orphan_that_the_next_one_closes_and_stops() {
    let mut bridge = Bridge::start().await;
    let target = bridge.claude_session("seed crash");
    bridge
        .endpoint
        .push(Rule::on_user_text("crash job").reply(Reply::hang()));
    let mut params = bridge.send_params(
        Agent::Claude,
        "crash job",
        bridge.codex_caller("019a0000-0000-7000-8000-000000000222"),
    );
    params.session_id = Some(target);
    let record = crash_mid_turn(&mut bridge, params, "crash job").await;
    assert_eq!(record.state, DeliveryState::Failed);
    assert_eq!(prompts_with(&bridge, "crash job").len(), 1, "never re-sent");

    // The orphaned turn left an open turn in the transcript, but its process group is gone:
    // it is nobody's work, and the next delivery to the session runs at once (docs/spec/cross-agent-mcp.md §9).
    bridge.endpoint.push(
        Rule::on_user_text("after the crash").reply(Reply::echo_token("the session answered")),
    );
    let mut next = bridge.send_params(
        Agent::Claude,
        "after the crash",
        bridge.codex_caller("019a0000-0000-7000-8000-000000000222"),
    );
    next.session_id = record.target_session_id.clone();
    let next = bridge.accepted(next).await;
    runs_at_once(&bridge, &next.delivery_id).await;
}

/// docs/spec/cross-agent-mcp.md §9 for a daemon killed outright (`kill -9`) while a real Codex turn hangs: the next
/// daemon orphans the delivery and stops its process group, but the turn stays open in the
/// rollout and the dead daemon's busy lock stays in `hub.db`. Neither is anyone's work: the
/// next delivery to the thread runs at once, and its receipt and the listing say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_turn_orphaned_by_a_killed_daemon_does_not_hold_the_next_delivery() {
    let mut bridge = Bridge::start().await;
    let thread = bridge.codex_session("seed crash codex");
    bridge
        .endpoint
        .push(Rule::on_user_text("crash job codex").reply(Reply::hang()));
    let caller = bridge.claude_caller("aaaaaaaa-0000-4000-8000-0000000000c9");
    let mut params = bridge.send_params(Agent::Codex, "crash job codex", caller.clone());
    params.session_id = Some(thread.clone());
    crash_mid_turn(&mut bridge, params, "crash job codex").await;
    assert!(!listed_as_working(&bridge, &thread).await);

    bridge.endpoint.push(
        Rule::on_user_text("after the codex crash").reply(Reply::echo_token("the thread is back")),
    );
    let mut next = bridge.send_params(Agent::Codex, "after the codex crash", caller);
    next.session_id = Some(thread);
    let next = bridge.accepted(next).await;
    assert_receipt_says_idle(&next);
    runs_at_once(&bridge, &next.delivery_id).await;
    assert_eq!(
        prompts_with(&bridge, "crash job codex").len(),
        1,
        "never re-sent"
    );
}

/// A message past Linux's 128 KiB limit on one argument reaches real Claude Code and real Codex
/// whole, on standard input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_too_long_for_an_argument_reaches_both_agents_whole() {
    let bridge = Bridge::start().await;
    let claude_id = bridge.claude_session("seed claude long");
    let thread = bridge.codex_session("seed codex long");
    let filler = "0123456789abcdef ".repeat(9_000); // about 150 KB
    for (agent, session, caller, tag) in [
        (
            Agent::Claude,
            claude_id.clone(),
            bridge.codex_caller(&thread),
            "long-to-claude",
        ),
        (
            Agent::Codex,
            thread.clone(),
            bridge.claude_caller(&claude_id),
            "long-to-codex",
        ),
    ] {
        bridge.endpoint.push(
            Rule::on_user_text(format!("{tag} begins")).reply(Reply::echo_token("read it all")),
        );
        let message = format!("{tag} begins\n{filler}\n{tag} ends here");
        let mut params = bridge.send_params(agent, &message, caller);
        params.session_id = Some(session);
        let receipt = bridge.accepted(params).await;
        let record = bridge.wait_finished(&receipt.delivery_id).await;
        assert_eq!(
            record.state,
            DeliveryState::Delivered,
            "{agent}: {record:#?}"
        );
        let prompt = prompts_with(&bridge, &format!("{tag} begins"))
            .pop()
            .unwrap();
        assert!(
            prompt.contains(&format!("{filler}\n{tag} ends here")),
            "{agent}: the model saw {} of {} bytes",
            prompt.len(),
            message.len()
        );
    }
}

/// Runs `params` on a daemon process of its own, kills that daemon outright (`kill -9`) once
/// the peer's turn has its prompt, starts the next one, and returns the delivery as the next
/// one closed it: orphaned, its turn's process group stopped.
async fn crash_mid_turn(bridge: &mut Bridge, params: SendParams, prompt: &str) -> DeliveryRecord {
    bridge.stop_daemon().await;
    let root = bridge.state.root().to_owned();
    let (mut process, conn) = super::bridge_support::spawn_daemon_process(
        &root,
        &bridge.state.dir.path().join("user"),
        &[],
    )
    .await;
    let receipt = match conn.client.call(params).await.unwrap() {
        SendResponse::Accepted(receipt) => receipt,
        other => panic!("{other:?}"),
    };
    while prompts_with(bridge, prompt).is_empty() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(conn);
    process.child.kill().unwrap();
    process.child.wait().unwrap();

    bridge.restart_daemon().await;
    let record = bridge
        .status(Some(&receipt.delivery_id))
        .await
        .delivery
        .unwrap();
    assert!(record.is_orphaned, "{record:#?}");
    let pid = record.peer_pid.unwrap();
    // A ceiling: the orphan's group goes as soon as the loaded machine runs the kill.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while cross_agent_transports::process::group_alive(pid) && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !cross_agent_transports::process::group_alive(pid),
        "the orphaned turn was stopped"
    );
    record
}

/// The delivery leaves the queue at once (held as busy, it would stay queued for up to the wait
/// bound, an hour by default) and is delivered.
async fn runs_at_once(bridge: &Bridge, delivery_id: &str) -> DeliveryRecord {
    let started = bridge
        .wait_record(delivery_id, Duration::from_secs(30), |r| {
            r.state != DeliveryState::Queued
        })
        .await;
    assert!(started.error.is_none(), "{started:#?}");
    let done = bridge.wait_finished(delivery_id).await;
    assert_eq!(done.state, DeliveryState::Delivered, "{done:#?}");
    done
}
