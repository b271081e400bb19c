//! Answers that are never lost or misattributed (docs/spec/cross-agent-mcp.md §6 "Interim answers and late answers"), against real Claude Code sessions and
//! the scripted model: text from before a delivery is never its answer, an answer without its
//! request id is marked and watched for a late one, a daemon killed mid-turn leaves an orphan
//! that is never re-sent and whose answer is read back, a silent turn is killed by inactivity
//! while a slow one that keeps writing is not, and a session busy with someone else's turn is
//! waited out — or, past the bound, the request fails as not delivered. The endpoint's request
//! log shows what the peer's model actually received, so "never sent twice" is asserted there.

use std::path::Path;
use std::time::{Duration, Instant};

use cross_agent_protocol::bridge::{Agent, DeliveryState};
use cross_agent_testkit::endpoint::{Reply, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::bridge_support::{Bridge, DaemonProcess, append_line, spawn_daemon_process};

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

/// A real Claude session whose only answer is `answer`.
fn claude_session_answering(bridge: &Bridge, prompt: &str, answer: &str) -> String {
    bridge
        .endpoint
        .push(Rule::on_user_text(prompt).reply_text(answer).once());
    let run = bridge
        .claude()
        .turn(&bridge.project, prompt)
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    run.session_id().unwrap().to_owned()
}

/// Replaces the bridge's in-process daemon with a daemon process of its own (so it can be
/// killed outright, and so daemon-wide knobs reach only it).
async fn daemon_process(bridge: &mut Bridge, env: &[(&str, &str)]) -> DaemonProcess {
    bridge.stop_daemon().await;
    let (process, conn) = spawn_daemon_process(
        bridge.state.root(),
        &bridge.state.dir.path().join("user"),
        env,
    )
    .await;
    bridge.conn = conn;
    process
}

/// Whether a killed turn's process group is gone (SIGKILLed members may take a moment to exit
/// on a loaded machine).
fn group_gone(pgid: u32) -> bool {
    // A ceiling, not a measure: SIGKILLed members exit as soon as the loaded machine runs them.
    let deadline = Instant::now() + Duration::from_secs(60);
    while cross_agent_transports::process::group_alive(pgid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// Waits until `done` holds for the file's text.
fn wait_file(path: &Path, limit: Duration, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if done(&text) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out; file:\n{text}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Leaves a real Claude transcript mid-turn, as a person typing in a panel would: a prompt and
/// an assistant tool call still waiting for its result. Built from the session's own last
/// lines so the format is the one Claude Code writes.
fn open_a_turn(transcript: &Path, marker: &str) -> (Value, Value) {
    let text = std::fs::read_to_string(transcript).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let user = lines
        .iter()
        .rev()
        .find(|l| l["type"] == "user")
        .unwrap()
        .clone();
    let assistant = lines
        .iter()
        .rev()
        .find(|l| l["type"] == "assistant")
        .unwrap()
        .clone();
    let now = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let user_uuid = uuid::Uuid::new_v4().to_string();
    let mut prompt = user.clone();
    prompt["uuid"] = json!(user_uuid);
    prompt["parentUuid"] = assistant["uuid"].clone();
    prompt["timestamp"] = json!(now);
    prompt["message"] = json!({"role": "user", "content": format!("person typing {marker}")});
    let mut call = assistant.clone();
    call["uuid"] = json!(uuid::Uuid::new_v4().to_string());
    call["parentUuid"] = json!(user_uuid);
    call["timestamp"] = json!(now);
    call["message"]["id"] = json!(format!("msg_{}", uuid::Uuid::new_v4().simple()));
    call["message"]["stop_reason"] = json!("tool_use");
    call["message"]["content"] = json!([{
        "type": "tool_use",
        "id": format!("toolu_{marker}"),
        "name": "Bash",
        "input": {"command": "sleep 600"}
    }]);
    append_line(transcript, &prompt.to_string());
    append_line(transcript, &call.to_string());
    (call, user)
}

/// Finishes the turn [`open_a_turn`] left open: the tool's result and a final answer.
fn close_the_turn(transcript: &Path, marker: &str, call: &Value, user: &Value) {
    let now = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let result_uuid = uuid::Uuid::new_v4().to_string();
    let mut result = user.clone();
    result["uuid"] = json!(result_uuid);
    result["parentUuid"] = call["uuid"].clone();
    result["timestamp"] = json!(now);
    result["message"] = json!({"role": "user", "content": [{
        "type": "tool_result", "tool_use_id": format!("toolu_{marker}"), "content": "done"
    }]});
    let mut answer = call.clone();
    answer["uuid"] = json!(uuid::Uuid::new_v4().to_string());
    answer["parentUuid"] = json!(result_uuid);
    answer["timestamp"] = json!(now);
    answer["message"]["id"] = json!(format!("msg_{}", uuid::Uuid::new_v4().simple()));
    answer["message"]["stop_reason"] = json!("end_turn");
    answer["message"]["content"] = json!([{"type": "text", "text": "the person's turn is done"}]);
    append_line(transcript, &result.to_string());
    append_line(transcript, &answer.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paragraph_written_before_the_delivery_is_never_taken_as_its_answer() {
    let bridge = Bridge::start().await;
    // The session's last words predate the delivery: the paragraph that was once delivered as
    // the answer to two different questions.
    let target = claude_session_answering(
        &bridge,
        "seed earlier",
        "EARLIER PARAGRAPH: I am about to refactor the parser",
    );
    bridge.endpoint.push(
        Rule::on_user_text("question after the paragraph")
            .reply(Reply::http_error(400, "scripted refusal").no_retry()),
    );
    let mut params = bridge.send_params(
        Agent::Claude,
        "question after the paragraph",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000005a1"),
    );
    params.session_id = Some(target.clone());
    params
        .caller
        .child_env
        .insert("CLAUDE_CODE_MAX_RETRIES".into(), "0".into());
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;

    assert_eq!(record.state, DeliveryState::Failed, "{record:#?}");
    assert!(!record.is_reply_recovered, "{record:#?}");
    assert_eq!(record.reply_preview, None);
    let transcript = bridge
        .status(Some(&receipt.delivery_id))
        .await
        .peer_transcript
        .unwrap();
    assert!(
        !transcript
            .answer
            .as_deref()
            .unwrap_or_default()
            .contains("EARLIER PARAGRAPH"),
        "{transcript:?}"
    );
    // Handed over once (Claude Code retries the failed API call itself within that one turn;
    // the bridge never starts another).
    let text = std::fs::read_to_string(bridge.claude_transcript(&target)).unwrap();
    let prompts = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["type"] == "user" && l.to_string().contains(&receipt.request_id))
        .count();
    assert_eq!(prompts, 1, "sent once, never re-sent to find an answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_the_request_id_is_marked_possibly_interim_and_watched() {
    let bridge = Bridge::start().await;
    let target = claude_session_answering(&bridge, "seed interim", "ready");
    bridge.endpoint.push(
        Rule::on_user_text("delegate the audit")
            .reply_text("My subagents are on it; I will report when they are done.")
            .once(),
    );
    let mut params = bridge.send_params(
        Agent::Claude,
        "delegate the audit",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000005a2"),
    );
    params.session_id = Some(target);
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;

    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(record.answer.is_reply_possibly_interim);
    assert!(!record.answer.reply_carries_request_id);
    let header = record.answer.reply_header.clone().unwrap();
    assert_eq!(
        header.lines().next().unwrap(),
        format!(
            "=== BRIDGE REPLY === from: claude session {} | request: {}",
            record.target_session_id.as_deref().unwrap(),
            receipt.request_id
        )
    );
    assert!(
        header.contains(&format!(
            "NO REQUEST ID: the answer did not end with {}",
            receipt.request_id
        )) && header.contains("possibly interim"),
        "{header}"
    );
    assert!(record.answer.late_answer_watch_until.is_some());
    // What remains if the transcript is gone: the record's preview, and a fresh read that
    // says so.
    let transcript = bridge.claude_transcript(record.target_session_id.as_deref().unwrap());
    std::fs::remove_file(&transcript).unwrap();
    let gone = bridge.status(Some(&receipt.delivery_id)).await;
    assert!(
        gone.delivery
            .unwrap()
            .reply_preview
            .unwrap()
            .starts_with("My subagents are on it")
    );
    let fresh = gone.peer_transcript.unwrap();
    assert_eq!(fresh.answer, None);
    assert!(
        fresh
            .error
            .unwrap()
            .contains("reply_preview holds what remains")
    );
    let status = bridge.status(None).await;
    let watching = &status.deliveries.watching_for_late_answers;
    assert!(
        watching.iter().any(|w| w.delivery_id == receipt.delivery_id
            && w.request_id.as_deref() == Some(receipt.request_id.as_str())),
        "{watching:#?}"
    );
}

/// The session index hears of new and deleted transcripts through file-system notifications,
/// which a loaded machine delivers late (or a filesystem never): with them off and no re-walk
/// due, a session another process wrote a moment ago is still found by its id, a name two new
/// sessions share is still ambiguous, and a transcript deleted since is reported gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_that_heard_nothing_still_finds_new_sessions_and_sees_deleted_ones_gone() {
    use cross_agent_protocol::bridge::RefusalReason;
    use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};

    let mut bridge = Bridge::start().await;
    let _daemon = daemon_process(
        &mut bridge,
        &[
            ("CROSS_AGENT_INDEX_NOTIFY", "off"),
            ("CROSS_AGENT_INDEX_REWALK_MS", "3600000"),
        ],
    )
    .await;
    let caller = bridge.codex_caller("019a0000-0000-7000-8000-0000000005a9");
    // The index is walked once, before any of the sessions below exists.
    let mut params = bridge.send_params(Agent::Claude, "prime the index", caller.clone());
    params.session_id = Some("ffffffff-0000-4000-8000-0000000000f1".into());
    assert_eq!(
        bridge.refused(params).await.reason,
        RefusalReason::NoSuchSession
    );

    let target = claude_session_answering(&bridge, "seed deaf index", "ready");
    bridge.endpoint.push(
        Rule::on_user_text("found without a notification")
            .reply(Reply::echo_token("found"))
            .once(),
    );
    let mut params = bridge.send_params(
        Agent::Claude,
        "found without a notification",
        caller.clone(),
    );
    params.session_id = Some(target.clone());
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");

    let cwd = bridge.project.to_string_lossy().into_owned();
    for id in [
        "aaaaaaaa-0000-4000-8000-0000000000e1",
        "bbbbbbbb-0000-4000-8000-0000000000e2",
    ] {
        let mut transcript = ClaudeTranscript::new(bridge.agents.path(), &cwd, id);
        transcript
            .user("hello", now_millis() - 60_000)
            .assistant_text("hi", now_millis() - 59_000)
            .custom_title("deaf twin");
        transcript.write().unwrap();
    }
    let mut params = bridge.send_params(Agent::Claude, "which twin", caller);
    params.session_id = Some("deaf twin".into());
    assert_eq!(
        bridge.refused(params).await.reason,
        RefusalReason::AmbiguousName
    );

    std::fs::remove_file(bridge.claude_transcript(&target)).unwrap();
    let fresh = bridge
        .status(Some(&receipt.delivery_id))
        .await
        .peer_transcript
        .unwrap();
    assert!(
        fresh
            .error
            .as_deref()
            .is_some_and(|e| e.contains("reply_preview holds what remains")),
        "{fresh:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_turn_carrying_the_request_id_becomes_a_late_answer() {
    let mut bridge = Bridge::start().await;
    let _daemon = daemon_process(&mut bridge, &[("CROSS_AGENT_LATE_ANSWER_POLL_MS", "300")]).await;
    let target = claude_session_answering(&bridge, "seed late", "ready");
    bridge.endpoint.push(
        Rule::on_user_text("run the long review")
            .reply_text("Started the reviewers; I will report back.")
            .once(),
    );
    let mut params = bridge.send_params(
        Agent::Claude,
        "run the long review",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000005a3"),
    );
    params.session_id = Some(target.clone());
    let receipt = bridge.accepted(params).await;
    let first = bridge.wait_finished(&receipt.delivery_id).await;
    assert!(first.answer.is_reply_possibly_interim, "{first:#?}");

    // The subagents report back: a later turn of the same session, which ends with the id
    // (echo_token finds it in the conversation the request is part of).
    let request = bridge
        .late_turn_answering(
            &target,
            "the reviewers reported",
            "FINAL REVIEW: two bugs found",
            &receipt.delivery_id,
        )
        .await;
    let late_id = request.late_reply_delivery_id.clone().unwrap();
    let late = bridge.status(Some(&late_id)).await.delivery.unwrap();
    assert_eq!(late.state, DeliveryState::Delivered);
    assert_eq!(
        late.answer.answers_delivery_id.as_deref(),
        Some(receipt.delivery_id.as_str())
    );
    assert!(late.answer.reply_carries_request_id);
    let preview = late.reply_preview.clone().unwrap();
    assert!(
        preview.starts_with("FINAL REVIEW: two bugs found"),
        "{preview}"
    );
    assert!(preview.ends_with(&receipt.request_id), "{preview}");
    let header = late.answer.reply_header.clone().unwrap();
    assert!(
        header.contains(&format!(
            "LATE ANSWER to request {} (delivery {})",
            receipt.request_id, receipt.delivery_id
        )),
        "{header}"
    );
    // The watch ended with the find.
    let status = bridge.status(None).await;
    assert_eq!(
        status.deliveries.watching_for_late_answers,
        [],
        "{:#?}",
        status.deliveries
    );
    assert_eq!(prompts_with(&bridge, "run the long review").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_mid_turn_leaves_an_orphan_never_resent_whose_answer_is_recovered() {
    let mut bridge = Bridge::start().await;
    let mut daemon = daemon_process(&mut bridge, &[]).await;
    let target = claude_session_answering(&bridge, "seed orphan", "ready");
    // The answer comes only after the daemon is gone: held until the test has killed it.
    let release = bridge.agents.path().join("release-orphan-answer");
    bridge.endpoint.push(
        Rule::on_user_text("orphaned job")
            .reply(Reply::echo_token("ORPHAN ANSWER").after_file(&release))
            .once(),
    );
    let mut params = bridge.send_params(
        Agent::Claude,
        "orphaned job",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000005a4"),
    );
    params.session_id = Some(target.clone());
    let receipt = bridge.accepted(params).await;
    let running = bridge
        .wait_record(&receipt.delivery_id, Duration::from_secs(60), |r| {
            r.state == DeliveryState::AwaitingPeer
        })
        .await;
    assert!(
        running.expires_at.is_some(),
        "an in-flight record has a lease"
    );
    bridge
        .endpoint
        .wait_until(Duration::from_secs(60), |requests| {
            requests.iter().any(|r| {
                r.last_user_prompt
                    .as_deref()
                    .is_some_and(|p| p.contains("orphaned job"))
            })
        })
        .unwrap();

    // Killed outright: nothing closes the record, the turn runs on in its own group.
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    std::fs::write(&release, "").unwrap();
    let transcript = bridge.claude_transcript(&target);
    wait_file(&transcript, Duration::from_secs(60), |t| {
        t.contains("ORPHAN ANSWER")
    });

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
    assert!(record.answer.reply_carries_request_id);
    let preview = record.reply_preview.clone().unwrap();
    assert!(preview.starts_with("ORPHAN ANSWER"), "{preview}");
    let header = record.answer.reply_header.clone().unwrap();
    let mut lines = header.lines();
    assert!(
        lines.next().unwrap().ends_with(&format!(
            "request: {} | recovered from transcript",
            receipt.request_id
        )),
        "{header}"
    );
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("WARNING: RECOVERED, NOT RECEIVED")
    );
    assert_eq!(
        lines.next().unwrap(),
        "transport failure: the daemon carrying it disappeared"
    );

    // Never re-sent: the new daemon runs a while and the model saw the request once.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(prompts_with(&bridge, "orphaned job").len(), 1);
    let fresh = bridge
        .status(Some(&receipt.delivery_id))
        .await
        .peer_transcript
        .unwrap();
    assert!(fresh.answer_carries_request_id, "{fresh:?}");
    assert!(fresh.answer.unwrap().starts_with("ORPHAN ANSWER"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_model_is_killed_by_inactivity_while_a_slow_but_talking_one_is_not() {
    let bridge = Bridge::start().await;
    let silent = claude_session_answering(&bridge, "seed silent one", "ready");
    let talking = claude_session_answering(&bridge, "seed talking one", "ready");
    std::fs::write(bridge.project.join("notes.txt"), "NOTES step\n").unwrap();
    let notes = bridge
        .project
        .join("notes.txt")
        .to_string_lossy()
        .into_owned();
    let read = || ToolCall::new("Read", json!({"file_path": notes}));
    // Each gap between transcript writes is one step plus Claude Code's own work between two
    // model calls, which on a loaded 2-core machine has taken seconds: the limit leaves 9 s of
    // room for that in every gap, and the six steps still add up past it.
    let step = Duration::from_secs(3);
    let limit: u64 = 12;
    bridge
        .endpoint
        .push(Rule::on_user_text("hang forever").reply(Reply::hang()));
    // Six model answers 3 s apart: 18 s in all against a 12 s limit, but every answer
    // writes to the transcript well within it.
    bridge.endpoint.push(
        Rule::on_user_text("talk slowly")
            .reply(Reply::tool_call(read()).delay(step))
            .once(),
    );
    bridge.endpoint.push(
        Rule::on_tool_result("NOTES step")
            .reply(Reply::tool_call(read()).delay(step))
            .times(4),
    );
    bridge.endpoint.push(
        Rule::on_tool_result("NOTES step")
            .reply(Reply::echo_token("slow but finished").delay(step))
            .once(),
    );
    let caller = bridge.codex_caller("019a0000-0000-7000-8000-0000000005a5");
    let mut hang = bridge.send_params(Agent::Claude, "hang forever", caller.clone());
    hang.session_id = Some(silent);
    hang.timeout = Some(limit);
    let mut slow = bridge.send_params(Agent::Claude, "talk slowly", caller);
    slow.session_id = Some(talking);
    slow.timeout = Some(limit);
    let hang = bridge.accepted(hang).await;
    let slow = bridge.accepted(slow).await;
    assert!(
        hang.idle_policy
            .starts_with(&format!("inactivity timeout {limit} s")),
        "{}",
        hang.idle_policy
    );

    let killed = bridge.wait_finished(&hang.delivery_id).await;
    assert_eq!(killed.state, DeliveryState::Failed);
    assert!(killed.is_killed_by_timeout, "{killed:#?}");
    assert!(
        killed
            .error
            .as_deref()
            .unwrap()
            .starts_with("killed by bridge timeout")
    );
    assert!(group_gone(killed.peer_pid.unwrap()));
    let status = bridge.status(Some(&hang.delivery_id)).await;
    assert!(!status.peer_transcript.unwrap().is_working);

    let done = bridge.wait_finished(&slow.delivery_id).await;
    assert_eq!(done.state, DeliveryState::Delivered, "{done:#?}");
    assert!(!done.is_killed_by_timeout);
    assert!(done.answer.reply_carries_request_id);
    let started = time::OffsetDateTime::parse(
        done.started_at.as_deref().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let finished = time::OffsetDateTime::parse(
        done.finished_at.as_deref().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert!(
        finished - started > time::Duration::seconds(limit.try_into().unwrap()),
        "the turn ran past the limit: {started} → {finished}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_busy_with_someone_elses_turn_is_waited_out() {
    let bridge = Bridge::start().await;
    let target = claude_session_answering(&bridge, "seed busy", "ready");
    let transcript = bridge.claude_transcript(&target);
    let (call, user) = open_a_turn(&transcript, "wait1");
    bridge.endpoint.push(
        Rule::on_user_text("after the person")
            .reply(Reply::echo_token("answered after the person"))
            .once(),
    );
    let mut params = bridge.send_params(
        Agent::Claude,
        "after the person",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000005a6"),
    );
    params.session_id = Some(target);
    params.timeout = Some(60);
    let receipt = bridge.accepted(params).await;
    assert_eq!(receipt.peer_queue.peer_turn.as_deref(), Some("running"));
    assert!(
        receipt
            .warnings
            .iter()
            .any(|w| w.starts_with("the peer session is busy")),
        "{:#?}",
        receipt.warnings
    );

    tokio::time::sleep(Duration::from_secs(4)).await;
    let waiting = bridge
        .status(Some(&receipt.delivery_id))
        .await
        .delivery
        .unwrap();
    assert_eq!(waiting.state, DeliveryState::Queued, "it waits in line");
    assert!(prompts_with(&bridge, "after the person").is_empty());

    close_the_turn(&transcript, "wait1", &call, &user);
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(
        record
            .reply_preview
            .unwrap()
            .starts_with("answered after the person")
    );
    assert_eq!(prompts_with(&bridge, "after the person").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_busy_past_the_bound_fails_as_not_delivered() {
    let bridge = Bridge::start().await;
    let target = claude_session_answering(&bridge, "seed busy long", "ready");
    let transcript = bridge.claude_transcript(&target);
    open_a_turn(&transcript, "wait2");
    let mut params = bridge.send_params(
        Agent::Claude,
        "never gets in",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000005a7"),
    );
    params.session_id = Some(target);
    params.timeout = Some(2);
    params
        .caller
        .settings
        .insert("CROSS_AGENT_PANEL_PATIENCE".into(), "1".into());
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;

    assert_eq!(record.state, DeliveryState::Failed, "{record:#?}");
    assert!(record.is_undelivered, "{record:#?}");
    assert_eq!(record.started_at, None, "never handed over");
    let error = record.error.clone().unwrap();
    assert!(
        error.starts_with("not delivered: claude session"),
        "{error}"
    );
    assert!(error.contains("the larger of the timeout, 2 s"), "{error}");
    assert!(prompts_with(&bridge, "never gets in").is_empty());
    let status = bridge.status(Some(&receipt.delivery_id)).await;
    assert_eq!(status.deliveries.watching_for_late_answers, []);
    assert_eq!(status.peer_transcript.unwrap().answer, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_closing_with_another_requests_id_is_rejected_and_one_quoted_higher_up_does_not_count()
 {
    let bridge = Bridge::start().await;
    let other = "req_1795992430029_zz9zz9";
    let first = claude_session_answering(&bridge, "seed pairing one", "ready");
    let second = claude_session_answering(&bridge, "seed pairing two", "ready");
    // Closing line names another sender's request: that request's answer, not this one's.
    bridge.endpoint.push(
        Rule::on_user_text("pairing closes with another id")
            .reply_text(format!("Here is the schema you asked for.\n{other}"))
            .once(),
    );
    // Another request quoted in passing, higher up; the closing line names this one.
    bridge.endpoint.push(
        Rule::on_user_text("pairing quotes another id")
            .reply(Reply::echo_token(format!(
                "As I told the sender of {other}, the cache is cold.\nThe fix is in parser.rs."
            )))
            .once(),
    );
    let caller = bridge.codex_caller("019a0000-0000-7000-8000-0000000005a8");
    let mut closes = bridge.send_params(
        Agent::Claude,
        "pairing closes with another id",
        caller.clone(),
    );
    closes.session_id = Some(first);
    let mut quotes = bridge.send_params(Agent::Claude, "pairing quotes another id", caller);
    quotes.session_id = Some(second);
    let closes = bridge.accepted(closes).await;
    let quotes = bridge.accepted(quotes).await;

    let rejected = bridge.wait_finished(&closes.delivery_id).await;
    assert_eq!(rejected.state, DeliveryState::Failed, "{rejected:#?}");
    assert_eq!(rejected.reply_preview, None);
    let error = rejected.error.unwrap();
    assert!(
        error.starts_with(&format!(
            "the peer's answer ends with another request's id ({other}), so it answers that \
             request, not {}",
            closes.request_id
        )),
        "{error}"
    );

    let taken = bridge.wait_finished(&quotes.delivery_id).await;
    assert_eq!(taken.state, DeliveryState::Delivered, "{taken:#?}");
    assert!(taken.answer.reply_carries_request_id, "{taken:#?}");
    assert!(!taken.answer.is_reply_possibly_interim);
    assert!(
        taken
            .reply_preview
            .unwrap()
            .ends_with(&format!("The fix is in parser.rs.\n{}", quotes.request_id))
    );
}

/// A stand-in `claude` that writes the finished answer — ending with the request id found in
/// its prompt — into the session's transcript, then never exits: the case of a transport that
/// keeps waiting although the answer is complete on disk.
fn write_answer_then_hang(dir: &Path, transcript: &Path) -> std::path::PathBuf {
    let script = dir.join("claude-answers-then-hangs");
    let body = format!(
        r#"#!/bin/sh
prompt=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then prompt="$2"; break; fi
  shift
done
id=$(printf '%s' "$prompt" | grep -o 'req_[0-9]*_[a-z0-9]\{{6\}}' | head -n 1)
now=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
printf '{{"type":"user","uuid":"u-confirm","parentUuid":null,"timestamp":"%s","message":{{"role":"user","content":"request: %s"}}}}\n' "$now" "$id" >> '{t}'
sleep 1
now=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
printf '{{"type":"assistant","uuid":"a-confirm","parentUuid":"u-confirm","timestamp":"%s","message":{{"id":"msg_confirm","role":"assistant","model":"scripted","stop_reason":"end_turn","content":[{{"type":"text","text":"CONFIRMED ON DISK\\n%s"}}]}}}}\n' "$now" "$id" >> '{t}'
exec sleep 600
"#,
        t = transcript.display()
    );
    std::fs::write(&script, body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_turn_that_echoed_the_token_settles_the_wait_from_the_transcript() {
    let mut bridge = Bridge::start().await;
    let _daemon = daemon_process(&mut bridge, &[("CROSS_AGENT_TRANSCRIPT_CHECK_MS", "300")]).await;
    let target = claude_session_answering(&bridge, "seed confirm", "ready");
    let transcript = bridge.claude_transcript(&target);
    let fake = write_answer_then_hang(bridge.agents.path(), &transcript);
    let mut params = bridge.send_params(
        Agent::Claude,
        "confirm from disk",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000005a9"),
    );
    params.session_id = Some(target);
    params.timeout = Some(120);
    params.caller.settings.insert(
        "CROSS_AGENT_CLAUDE_BIN".into(),
        fake.to_string_lossy().into_owned(),
    );
    let receipt = bridge.accepted(params).await;
    let record = bridge
        .wait_record(&receipt.delivery_id, Duration::from_secs(30), |r| {
            r.state.is_finished()
        })
        .await;

    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(
        record.answer.is_reply_confirmed_by_transcript,
        "{record:#?}"
    );
    assert!(record.answer.reply_carries_request_id);
    assert!(!record.is_stopped_with_carrier && !record.is_killed_by_timeout);
    assert_eq!(
        record.reply_preview.as_deref(),
        Some(format!("CONFIRMED ON DISK\n{}", receipt.request_id).as_str())
    );
    assert!(
        group_gone(record.peer_pid.unwrap()),
        "the CLI that never exited was stopped once its answer was settled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_watch_outlives_the_daemon_that_started_it() {
    let mut bridge = Bridge::start().await;
    let knob = [("CROSS_AGENT_LATE_ANSWER_POLL_MS", "300")];
    let first = daemon_process(&mut bridge, &knob).await;
    let target = claude_session_answering(&bridge, "seed survive", "ready");
    bridge.endpoint.push(
        Rule::on_user_text("survive the restart")
            .reply_text("On it; I will report.")
            .once(),
    );
    let mut params = bridge.send_params(
        Agent::Claude,
        "survive the restart",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000005aa"),
    );
    params.session_id = Some(target.clone());
    let receipt = bridge.accepted(params).await;
    let interim = bridge.wait_finished(&receipt.delivery_id).await;
    assert!(interim.answer.is_reply_possibly_interim, "{interim:#?}");

    // The daemon holding the watch dies outright; another starts on the same hub.db.
    drop(first);
    let (_second, conn) = spawn_daemon_process(
        bridge.state.root(),
        &bridge.state.dir.path().join("user"),
        &knob,
    )
    .await;
    bridge.conn = conn;
    let request = bridge
        .late_turn_answering(
            &target,
            "report after the restart",
            "REPORT: done",
            &receipt.delivery_id,
        )
        .await;
    let late = bridge
        .status(request.late_reply_delivery_id.as_deref())
        .await
        .delivery
        .unwrap();
    assert!(late.reply_preview.unwrap().starts_with("REPORT: done"));
    assert_eq!(prompts_with(&bridge, "survive the restart").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_codex_turn_is_killed_by_inactivity() {
    let bridge = Bridge::start().await;
    let thread = bridge.codex_session("seed codex silent");
    // Codex waits forever on a hang before headers; one event, then silence.
    bridge.endpoint.push(
        Rule::on_user_text("codex goes quiet").reply(Reply::text("partial").hang_after_events(1)),
    );
    let mut params = bridge.send_params(
        Agent::Codex,
        "codex goes quiet",
        bridge.claude_caller("11111111-2222-3333-4444-5555555555aa"),
    );
    params.session_id = Some(thread);
    params.timeout = Some(4);
    let receipt = bridge.accepted(params).await;
    assert_eq!(
        receipt.idle_policy,
        "inactivity timeout 4 s, reset by CLI output or transcript writes; no wall-clock limit"
    );
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Failed, "{record:#?}");
    assert!(record.is_killed_by_timeout, "{record:#?}");
    assert_eq!(
        record.error.as_deref(),
        Some("killed by bridge timeout: no CLI output or transcript write for 4 s")
    );
    assert!(group_gone(record.peer_pid.unwrap()));
    let status = bridge.status(Some(&receipt.delivery_id)).await;
    assert!(!status.peer_transcript.unwrap().is_working);
    assert_eq!(prompts_with(&bridge, "codex goes quiet").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_codex_threads_interim_answer_is_watched_in_its_rollout() {
    let bridge = Bridge::start().await;
    bridge.endpoint.push(
        Rule::on_user_text("new thread interim")
            .reply_text("Looking into it; more soon.")
            .once(),
    );
    let mut params = bridge.send_params(
        Agent::Codex,
        "new thread interim",
        bridge.claude_caller("11111111-2222-3333-4444-5555555555ab"),
    );
    params.new_session = true;
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    let thread = record.target_session_id.clone().unwrap();
    let rollout = record.target_transcript.clone().unwrap();
    assert!(rollout.ends_with(&format!("{thread}.jsonl")), "{rollout}");
    assert!(record.answer.is_reply_possibly_interim);
    assert!(
        record.answer.late_answer_watch_until.is_some(),
        "{record:#?}"
    );
}
