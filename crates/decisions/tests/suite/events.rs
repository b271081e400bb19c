//! The engine's decisions as `events` builds them from its own values: the right kinds, ids
//! and guard, and nothing of the message, the answer or a title.

use cross_agent_decisions::events;
use cross_agent_decisions::{DecisionKind, Outcome};
use cross_agent_protocol::Agent;
use cross_agent_protocol::bridge::{
    DeliveryRecord, Pin, PinResponse, Refusal, RefusalReason, SendReceipt, SendResponse,
    SessionCandidate,
};
use pretty_assertions::assert_eq;
use serde_json::json;

// Built from JSON, as the daemon sends them, so fields added later with defaults do not break
// these tests.
fn receipt(queue_depth: u32) -> SendReceipt {
    serde_json::from_value(json!({
        "delivery_id": "dlv_1",
        "accepted": true,
        "note": "Accepted; no answer yet.",
        "target_agent": "codex",
        "target_session_id": "t-1",
        "target_title": "secret project title",
        "target_selected_by": "discovery",
        "caller_supplied_session_id": null,
        "will_create_session": false,
        "target_last_activity_seconds_ago": 42,
        "queue_depth": queue_depth,
        "peer_queue": {
            "queued_ahead": queue_depth,
            "oldest_waiting_seconds": 3,
            "peer_turn": "running"
        },
        "reply_lands_in_session": "c-sender",
        "return_panel_available_now": false,
        "conversation_id": "conv_1",
        "hop": 1,
        "max_hops": 8,
        "request_id": "req_1_abcdef",
        "idle_policy": "inactivity timeout 600 s",
        "warnings": ["unaddressed relay"]
    }))
    .unwrap()
}

fn record() -> DeliveryRecord {
    serde_json::from_value(json!({
        "delivery_id": "dlv_1",
        "request_id": "req_1_abcdef",
        "state": "failed",
        "from_agent": "claude",
        "from_session": "c-sender",
        "target_agent": "codex",
        "target_session_id": "t-1",
        "target_cwd": "/work/api",
        "target_selected_by": "pin",
        "will_create_session": false,
        "conversation_id": "conv_1",
        "hop": 2,
        "max_hops": 8,
        "transport": "headless-cli",
        "created_at": "2026-05-01T12:00:00.000Z",
        "started_at": "2026-05-01T12:00:01.000Z",
        "finished_at": "2026-05-01T12:10:01.000Z",
        "expires_at": null,
        "carrier_generation": 3,
        "peer_pid": 4242,
        "error": "killed by bridge timeout: no CLI output or transcript write for 600 s\nstderr tail",
        "is_killed_by_timeout": true,
        "reply_preview": "THE PEER'S ANSWER",
        "late_reply_delivery_id": null,
        "return_delivery_id": null,
        "message_chars": 120,
        "is_return_status_only": true
    }))
    .unwrap()
}

#[test]
fn an_accepted_send_is_three_decisions_without_the_title() {
    let decisions = events::send(Agent::Codex, &SendResponse::Accepted(receipt(2)));
    let kinds: Vec<&str> = decisions.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(kinds, vec!["send_accepted", "target_chosen", "busy_wait"]);
    for d in &decisions {
        assert_eq!(d.delivery.as_deref(), Some("dlv_1"));
        assert_eq!(d.session.as_deref(), Some("c-sender"));
        assert_eq!(d.target_session.as_deref(), Some("t-1"));
        assert_eq!(d.agent.as_deref(), Some("codex"));
        let text = serde_json::to_string(d).unwrap();
        assert!(!text.contains("secret project title"), "{text}");
    }
    assert_eq!(decisions[1].guard.as_deref(), Some("discovery"));
    assert_eq!(decisions[1].details["target_selected_by"], "discovery");
    assert_eq!(decisions[2].details["queued_ahead"], 2);

    // Idle peer, nothing queued: no busy_wait.
    let mut idle = receipt(0);
    idle.peer_queue.peer_turn = Some("idle".into());
    assert_eq!(events::send_accepted(&idle).len(), 2);
}

#[test]
fn a_refusal_names_its_guard_and_values() {
    let refusal = Refusal {
        reason: RefusalReason::HopBudget,
        message: "conversation conv_9 has used all 8 of its hops".into(),
        candidates: vec![],
        details: json!({"conversation_id": "conv_9", "hops_spent": 8, "max_hops": 8}),
    };
    let [d] = &events::send(Agent::Claude, &SendResponse::Refused(refusal))[..] else {
        panic!("one decision");
    };
    assert_eq!(d.kind, DecisionKind::SEND_REFUSED);
    assert_eq!(d.outcome, Outcome::REFUSED);
    assert_eq!(d.guard.as_deref(), Some("hop_budget"));
    assert_eq!(d.conversation_id.as_deref(), Some("conv_9"));
    assert_eq!(d.details["hops_spent"], 8);

    let ambiguous = Refusal {
        reason: RefusalReason::AmbiguousName,
        message: "two claude sessions are named \"dup\"".into(),
        candidates: ["c-dup-1", "c-dup-2"]
            .iter()
            .map(|id| SessionCandidate {
                agent: Agent::Claude,
                session_id: (*id).into(),
                title: Some("dup".into()),
                title_is_assigned: true,
                cwd: None,
                last_activity: None,
            })
            .collect(),
        details: serde_json::Value::Null,
    };
    let d = events::send_refused(Agent::Claude, &ambiguous);
    assert_eq!(d.kind, DecisionKind::NAME_AMBIGUOUS);
    assert_eq!(d.details["candidates"], 2);
    assert_eq!(
        d.details["candidate_session_ids"],
        json!(["c-dup-1", "c-dup-2"])
    );
    // The name asked for is the candidates' title: the sentence leaves it out.
    assert!(
        !serde_json::to_string(&d).unwrap().contains("dup\""),
        "{d:?}"
    );
}

#[test]
fn a_timed_out_delivery_is_a_kill_and_an_outcome_without_the_answer() {
    let decisions = events::delivery_finished(&record());
    let kinds: Vec<&str> = decisions.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(kinds, vec!["timeout_kill", "delivery_outcome"]);
    assert_eq!(decisions[0].outcome, Outcome::KILLED);
    assert_eq!(decisions[1].outcome, Outcome::FAILED);
    assert_eq!(decisions[1].details["duration_ms"], 600_000);
    assert_eq!(decisions[1].details["target_selected_by"], "pin");
    // Only the error's first line.
    assert_eq!(
        decisions[1].reason.as_deref(),
        Some("killed by bridge timeout: no CLI output or transcript write for 600 s")
    );
    for d in &decisions {
        let text = serde_json::to_string(d).unwrap();
        assert!(!text.contains("THE PEER'S ANSWER") && !text.contains("stderr tail"));
    }

    assert_eq!(
        events::recovery(&record(), true).outcome,
        Outcome::RECOVERED
    );
    assert_eq!(events::orphan(&record()).kind, DecisionKind::ORPHAN);
    assert_eq!(events::orphans_marked(3, 7).details["count"], 3);
    assert_eq!(
        events::late_answer(&record(), "dlv_2").details["late_delivery_id"],
        "dlv_2"
    );
}

#[test]
fn pins_set_and_cleared() {
    let pin = Pin {
        agent: Agent::Codex,
        session_id: "t-1".into(),
        title: Some("a title".into()),
        cwd: Some("/work/api".into()),
        sticky: true,
        pinned_at: "2026-05-01T12:00:00Z".into(),
    };
    let set = events::pin(
        Agent::Codex,
        &PinResponse::Pinned {
            pin: pin.clone(),
            previous: None,
        },
    );
    assert_eq!(set.kind, DecisionKind::PIN_SET);
    assert_eq!(set.target_session.as_deref(), Some("t-1"));
    let cleared = events::pin(
        Agent::Codex,
        &PinResponse::Unpinned {
            previous: Some(pin),
        },
    );
    assert_eq!(cleared.kind, DecisionKind::PIN_CLEARED);
    assert_eq!(cleared.target_session.as_deref(), Some("t-1"));
    let dropped = events::pin_dropped(Agent::Claude, "c-new", "its session failed to start");
    assert_eq!(dropped.outcome, Outcome::CLEARED);
}
