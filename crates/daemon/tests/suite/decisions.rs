//! The decisions log (docs/spec/vsc-relay.txt) as the messaging paths write it: each path is driven the way its
//! own tests drive it — real Claude Code and Codex against the scripted model, refusals from
//! hand-built callers, a daemon process killed outright — and then `decisions.jsonl` is read
//! directly and through the real `cross-agent decisions --by kind,outcome --json`. Every kind
//! appears with its outcome; no line carries the message text, the answer, or a secret the
//! caller's environment held.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use cross_agent_protocol::bridge::{Agent, DeliveryState, PinParams, PinResponse, RefusalReason};
use cross_agent_testkit::endpoint::{Reply, Rule};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::bridge_support::{Bridge, spawn_daemon_process};

/// A value only the caller's environment holds: it must never reach the log.
const SECRET: &str = "sk-decisions-secret-5b1e";

/// Every line of `decisions.jsonl` in `root`, parsed.
fn log_lines(root: &Path) -> Vec<Value> {
    std::fs::read_to_string(root.join("decisions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Waits until the log holds a decision of `kind` (some are written just after the record
/// they describe is visible).
async fn wait_kind(root: &Path, kind: &str) -> Value {
    wait_line(root, kind, |_| true).await
}

/// The first decision of `kind` that `wanted` accepts, waiting for it to be written.
async fn wait_line(root: &Path, kind: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(line) = log_lines(root)
            .into_iter()
            .find(|l| l["kind"] == kind && wanted(l))
        {
            return line;
        }
        assert!(
            Instant::now() < deadline,
            "no {kind} decision; log: {:#?}",
            log_lines(root)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The (kind, outcome) pairs `cross-agent decisions --since 1h --by kind,outcome --json`
/// counts in `root`, through the real binary.
fn kinds_by_cli(root: &Path) -> BTreeSet<(String, String)> {
    let exe = cross_agent_testkit::binaries::cross_agent_bin().unwrap();
    let output = std::process::Command::new(exe)
        .args([
            "decisions",
            "--since",
            "1h",
            "--by",
            "kind,outcome",
            "--json",
        ])
        .env("CROSS_AGENT_HOME", root)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["bad_lines"], 0, "{report:#}");
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["key"]["kind"].as_str().unwrap().to_owned(),
                g["key"]["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Asserts the CLI counts each `(kind, outcome)` of `expected`.
fn assert_logged(root: &Path, expected: &[(&str, &str)]) {
    let found = kinds_by_cli(root);
    for (kind, outcome) in expected {
        assert!(
            found.contains(&((*kind).to_owned(), (*outcome).to_owned())),
            "{kind}/{outcome} missing from {found:?}"
        );
    }
}

/// Asserts no line of the log contains any of `needles`.
fn assert_absent(root: &Path, needles: &[&str]) {
    let text = std::fs::read_to_string(root.join("decisions.jsonl")).unwrap();
    for needle in needles {
        assert!(!text.contains(needle), "{needle:?} is in the log:\n{text}");
    }
}

fn find<'a>(lines: &'a [Value], kind: &str, guard: Option<&str>) -> &'a Value {
    lines
        .iter()
        .find(|l| l["kind"] == kind && guard.is_none_or(|g| l["guard"] == g))
        .unwrap_or_else(|| panic!("no {kind} ({guard:?}) in {lines:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_its_refusals_and_pins_are_logged_without_payload_or_secret() {
    let bridge = Bridge::start().await;
    let root = bridge.state.root().to_owned();
    let claude_id = bridge.claude_session("seed claude decisions");
    let thread = bridge.codex_session("seed codex decisions");
    bridge.endpoint.push(
        Rule::on_user_text("audit the ledger quietly").reply(Reply::echo_token("ledger clean")),
    );
    let mut caller = bridge.claude_caller(&claude_id);
    caller
        .child_env
        .insert("DECISIONS_TEST_TOKEN".into(), SECRET.into());

    // Accepted and delivered: Claude → Codex.
    let mut params = bridge.send_params(Agent::Codex, "audit the ledger quietly", caller.clone());
    params.session_id = Some(thread.clone());
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");

    // Refusals, one per guard: contradicting arguments, self-call, strict mode, hop budget.
    let mut params = bridge.send_params(Agent::Codex, "audit the ledger quietly", caller.clone());
    params.session_id = Some(thread.clone());
    params.new_session = true;
    assert_eq!(
        bridge.refused(params).await.reason,
        RefusalReason::InvalidArguments
    );
    let own = bridge.send_params(Agent::Claude, "audit the ledger quietly", caller.clone());
    assert_eq!(bridge.refused(own).await.reason, RefusalReason::SelfCall);
    let mut strict = caller.clone();
    strict
        .settings
        .insert("CROSS_AGENT_REQUIRE_EXPLICIT_TARGET".into(), "1".into());
    let params = bridge.send_params(Agent::Codex, "audit the ledger quietly", strict);
    assert_eq!(
        bridge.refused(params).await.reason,
        RefusalReason::RequireExplicitTarget
    );
    let mut budget = caller.clone();
    budget
        .settings
        .insert("CROSS_AGENT_MAX_HOPS".into(), "1".into());
    let mut params = bridge.send_params(Agent::Codex, "audit the ledger quietly", budget);
    params.session_id = Some(thread.clone());
    params.conversation_id = Some(receipt.conversation_id.clone());
    assert_eq!(
        bridge.refused(params).await.reason,
        RefusalReason::HopBudget
    );

    // An ambiguous name: two Claude sessions titled alike.
    let now = now_millis();
    let cwd = bridge.project.to_string_lossy().into_owned();
    let twins = [
        "aaaaaaaa-0000-4000-8000-0000000000d1",
        "bbbbbbbb-0000-4000-8000-0000000000d2",
    ];
    for id in twins {
        let mut transcript = ClaudeTranscript::new(bridge.agents.path(), &cwd, id);
        transcript
            .user("hello", now - 60_000)
            .assistant_text("hi", now - 59_000)
            .custom_title("ledger twin");
        transcript.write().unwrap();
    }
    let caller_codex = bridge.codex_caller("019a0000-0000-7000-8000-0000000000d3");
    let mut params = bridge.send_params(Agent::Claude, "audit the ledger quietly", caller_codex);
    params.session_id = Some("ledger twin".into());
    assert_eq!(
        bridge.refused(params).await.reason,
        RefusalReason::AmbiguousName
    );

    // A pin set, then cleared.
    let pin = |session: &str| PinParams {
        agent: Agent::Codex,
        session_id: Some(session.into()),
        cwd: None,
        caller: caller.clone(),
    };
    let pinned: PinResponse = bridge.conn.client.call(pin(&thread)).await.unwrap();
    assert!(matches!(pinned, PinResponse::Pinned { .. }), "{pinned:?}");
    let unpinned: PinResponse = bridge.conn.client.call(pin("")).await.unwrap();
    assert!(
        matches!(unpinned, PinResponse::Unpinned { .. }),
        "{unpinned:?}"
    );

    let lines = log_lines(&root);
    let accepted = find(&lines, "send_accepted", None);
    assert_eq!(accepted["outcome"], "accepted");
    assert_eq!(accepted["delivery"], receipt.delivery_id.as_str());
    assert_eq!(accepted["session"], claude_id.as_str());
    assert_eq!(accepted["target_session"], thread.as_str());
    assert_eq!(accepted["details"]["hop"], 1);
    let chosen = find(&lines, "target_chosen", None);
    assert_eq!(chosen["guard"], "caller");
    assert_eq!(chosen["details"]["target_selected_by"], "caller");
    let outcome = find(&lines, "delivery_outcome", None);
    assert_eq!(outcome["outcome"], "delivered");
    assert_eq!(outcome["delivery"], receipt.delivery_id.as_str());
    assert_eq!(outcome["details"]["reply_carries_request_id"], true);

    // Each refusal names its guard, says why, and carries the values it compared.
    let invalid = find(&lines, "send_refused", Some("invalid_arguments"));
    assert!(invalid["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert_eq!(invalid["details"]["new_session"], true);
    let self_call = find(&lines, "send_refused", Some("self_call"));
    assert_eq!(self_call["agent"], "claude");
    assert!(self_call["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert_eq!(self_call["details"]["caller"]["agent"], "claude");
    assert_eq!(self_call["details"]["target_agent"], "claude");
    let strict = find(&lines, "send_refused", Some("require_explicit_target"));
    assert!(strict["reason"].as_str().is_some_and(|r| !r.is_empty()));
    let hops = find(&lines, "send_refused", Some("hop_budget"));
    assert_eq!(hops["details"]["hops_spent"], 1, "{hops:#}");
    assert_eq!(hops["details"]["max_hops"], 1);
    assert_eq!(hops["conversation_id"], receipt.conversation_id.as_str());
    let ambiguous = find(&lines, "name_ambiguous", None);
    assert_eq!(ambiguous["outcome"], "refused");
    assert_eq!(ambiguous["details"]["candidates"], 2);
    let mut ids: Vec<&str> = ambiguous["details"]["candidate_session_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, twins);
    let set = find(&lines, "pin_set", None);
    assert_eq!(set["target_session"], thread.as_str());
    let cleared = find(&lines, "pin_cleared", None);
    assert_eq!(cleared["target_session"], thread.as_str());

    assert_logged(
        &root,
        &[
            ("send_accepted", "accepted"),
            ("target_chosen", "chosen"),
            ("delivery_outcome", "delivered"),
            ("send_refused", "refused"),
            ("name_ambiguous", "refused"),
            ("pin_set", "set"),
            ("pin_cleared", "cleared"),
        ],
    );
    // Never the message, the answer, a title's text, or the caller's secret.
    assert_absent(
        &root,
        &["audit the ledger", "ledger clean", "ledger twin", SECRET],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_kill_is_logged_before_the_failed_outcome() {
    let bridge = Bridge::start().await;
    let root = bridge.state.root().to_owned();
    let target = bridge.claude_session("seed silent decisions");
    bridge.endpoint.push(
        Rule::on_user_text("go silent decisions")
            .reply(Reply::text("partial").hang_after_events(1)),
    );
    let mut params = bridge.send_params(
        Agent::Claude,
        "go silent decisions",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000d4"),
    );
    params.session_id = Some(target);
    params.timeout = Some(3);
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert!(record.is_killed_by_timeout, "{record:#?}");

    let lines = log_lines(&root);
    let kill = find(&lines, "timeout_kill", None);
    assert_eq!(kill["outcome"], "killed");
    assert_eq!(kill["guard"], "inactivity_timeout");
    assert_eq!(kill["delivery"], receipt.delivery_id.as_str());
    let outcome = find(&lines, "delivery_outcome", None);
    assert_eq!(outcome["outcome"], "failed");
    assert_eq!(outcome["details"]["is_killed_by_timeout"], true);
    assert_logged(
        &root,
        &[("timeout_kill", "killed"), ("delivery_outcome", "failed")],
    );
    assert_absent(&root, &["go silent decisions", "partial"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphan_left_by_a_killed_daemon_and_its_recovery_are_logged() {
    let mut bridge = Bridge::start().await;
    let root = bridge.state.root().to_owned();
    let target = bridge.claude_session("seed crash decisions");
    bridge
        .endpoint
        .push(Rule::on_user_text("crash job decisions").reply(Reply::hang()));
    bridge.stop_daemon().await;
    let (mut process, conn) =
        spawn_daemon_process(&root, &bridge.state.dir.path().join("user"), &[]).await;
    let mut params = bridge.send_params(
        Agent::Claude,
        "crash job decisions",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000d5"),
    );
    params.session_id = Some(target);
    let receipt = match conn.client.call(params).await.unwrap() {
        cross_agent_protocol::bridge::SendResponse::Accepted(receipt) => receipt,
        other => panic!("{other:?}"),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !bridge.endpoint.model_requests().iter().any(|r| {
        r.last_user_prompt
            .as_deref()
            .is_some_and(|p| p.contains("crash job decisions"))
    }) {
        assert!(
            Instant::now() < deadline,
            "the turn never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(conn);
    process.child.kill().unwrap();
    process.child.wait().unwrap();

    bridge.restart_daemon().await;
    let orphan = wait_kind(&root, "orphan").await;
    assert_eq!(orphan["outcome"], "orphaned");
    assert_eq!(orphan["delivery"], receipt.delivery_id.as_str());
    let recovery = wait_kind(&root, "recovery").await;
    assert_eq!(recovery["delivery"], receipt.delivery_id.as_str());
    assert_eq!(recovery["details"]["has_transcript"], true);
    let outcome = recovery["outcome"].as_str().unwrap().to_owned();
    assert!(
        outcome == "recovered" || outcome == "not_recovered",
        "{recovery:#}"
    );
    assert_logged(
        &root,
        &[
            ("send_accepted", "accepted"),
            ("orphan", "orphaned"),
            ("recovery", &outcome),
        ],
    );
    assert_absent(&root, &["crash job decisions"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_is_logged_against_its_request() {
    let mut bridge = Bridge::start().await;
    let root = bridge.state.root().to_owned();
    bridge.stop_daemon().await;
    let (_daemon, conn) = spawn_daemon_process(
        &root,
        &bridge.state.dir.path().join("user"),
        &[("CROSS_AGENT_LATE_ANSWER_POLL_MS", "300")],
    )
    .await;
    bridge.conn = conn;
    let target = bridge.claude_session("seed late decisions");
    bridge.endpoint.push(
        Rule::on_user_text("run the slow audit")
            .reply_text("Started the auditors; I will report back.")
            .once(),
    );
    let mut params = bridge.send_params(
        Agent::Claude,
        "run the slow audit",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000d6"),
    );
    params.session_id = Some(target.clone());
    let receipt = bridge.accepted(params).await;
    let first = bridge.wait_finished(&receipt.delivery_id).await;
    assert!(first.answer.is_reply_possibly_interim, "{first:#?}");
    bridge.endpoint.push(
        Rule::on_user_text("the auditors reported")
            .reply(Reply::echo_token("AUDIT DONE: nothing found"))
            .once(),
    );
    bridge
        .claude()
        .turn(&bridge.project, "the auditors reported")
        .resume(&target)
        .run()
        .unwrap()
        .expect_success()
        .unwrap();

    let late = wait_kind(&root, "late_answer").await;
    assert_eq!(late["outcome"], "answered");
    assert_eq!(late["delivery"], receipt.delivery_id.as_str());
    let request = bridge
        .status(Some(&receipt.delivery_id))
        .await
        .delivery
        .unwrap();
    assert_eq!(
        late["details"]["late_delivery_id"].as_str(),
        request.late_reply_delivery_id.as_deref()
    );
    let lines = log_lines(&root);
    let outcome = find(&lines, "delivery_outcome", None);
    assert_eq!(outcome["details"]["is_reply_possibly_interim"], true);
    assert_eq!(outcome["details"]["late_answer_watch"], true);
    assert_logged(
        &root,
        &[
            ("delivery_outcome", "delivered"),
            ("late_answer", "answered"),
        ],
    );
    assert_absent(&root, &["slow audit", "Started the auditors", "AUDIT DONE"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_on_a_busy_session_and_its_undelivered_outcome_are_logged() {
    let bridge = Bridge::start().await;
    let root = bridge.state.root().to_owned();
    // A session someone is working in: its last turn is open (a tool call with no result yet).
    let busy = "cccccccc-0000-4000-8000-0000000000d7";
    let now = now_millis();
    let mut transcript = ClaudeTranscript::new(
        bridge.agents.path(),
        &bridge.project.to_string_lossy(),
        busy,
    );
    transcript
        .user("hello", now - 60_000)
        .assistant_text("hi", now - 59_000)
        .user("a person typing", now - 2_000)
        .tool_use("sleep 600", now - 1_000);
    transcript.write().unwrap();
    let mut params = bridge.send_params(
        Agent::Claude,
        "wait your turn decisions",
        bridge.codex_caller("019a0000-0000-7000-8000-0000000000d8"),
    );
    params.session_id = Some(busy.into());
    params.timeout = Some(2);
    params
        .caller
        .settings
        .insert("CROSS_AGENT_PANEL_PATIENCE".into(), "1".into());
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert!(record.is_undelivered, "{record:#?}");

    // The worker's wait (the receipt may also log one when it already saw the peer running).
    let wait = wait_line(&root, "busy_wait", |l| l["guard"] == "session_busy").await;
    assert_eq!(wait["outcome"], "waiting");
    assert_eq!(wait["delivery"], receipt.delivery_id.as_str());
    assert_eq!(wait["target_session"], busy);
    assert_eq!(wait["details"]["wait_bound_seconds"], 2);
    assert!(
        wait["reason"]
            .as_str()
            .is_some_and(|r| r.contains("turn is open")),
        "{wait:#}"
    );
    let outcome = wait_kind(&root, "delivery_outcome").await;
    assert_eq!(outcome["outcome"], "failed");
    assert_eq!(outcome["details"]["is_undelivered"], true);
    assert!(
        outcome["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("not delivered")),
        "{outcome:#}"
    );
    assert_logged(
        &root,
        &[
            ("send_accepted", "accepted"),
            ("busy_wait", "waiting"),
            ("delivery_outcome", "failed"),
        ],
    );
    assert_absent(&root, &["wait your turn", "a person typing"]);
}
