//! The decisions the messaging engine makes, built from the values it already has in hand — so
//! hooking the log in is one line per decision point, and what goes into `details` is chosen
//! here, once: ids, counts, flags and enum names, never the message, the answer, a title, the
//! child's environment or a CLI's raw output.
//!
//! | decision point (in `hub::engine`)         | call                                         |
//! |-------------------------------------------|----------------------------------------------|
//! | `send` answered (accepted or refused)     | `log.record_all(events::send(agent, &resp))`  |
//! | a queued delivery waits on a busy session | `log.record(events::busy_held(&record, why, bound))` |
//! | a delivery settled                        | `log.record_all(events::delivery_finished(&record))` |
//! | the transcript searched for an answer     | `log.record(events::recovery(&record, found))` |
//! | orphans marked at start                   | `log.record(events::orphans_marked(n, generation))` |
//! | one orphaned delivery                     | `log.record(events::orphan(&record))`         |
//! | a late answer seen                        | `log.record(events::late_answer(&record, &late_id))` |
//! | `pin` answered                            | `log.record(events::pin(agent, &resp))`       |
//! | an automatic pin dropped                  | `log.record(events::pin_dropped(agent, &id, why))` |
//! | a damaged `hub.db` moved aside at start   | `log.record(events::store_quarantined(…))`    |
//! | a dead panel shim's registration removed  | `log.record(events::panel_removed(pid, why))` |
//!
//! `send` yields `target_chosen` (and `busy_wait` when the delivery queues behind others) with
//! `send_accepted`, and `name_ambiguous` instead of `send_refused` for an ambiguous name.

use cross_agent_protocol::Agent;
use cross_agent_protocol::bridge::{
    DeliveryRecord, PinResponse, Refusal, RefusalReason, SendReceipt, SendResponse,
};
use cross_agent_protocol::decisions::{Decision, DecisionKind, Outcome};
use serde::Serialize;
use serde_json::Value;

/// How much of an engine-written error goes into `reason`: its first line, this long at most.
const REASON_CHARS: usize = 240;

/// A serde enum's wire name (`hop_budget`, `new_session`, `awaiting-peer`).
fn wire_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A record's error as a decision's `reason` holds it: its first line, at most 240 characters.
/// Whoever shows a delivery's failure beside the log (the Telegram bot) says it the same way.
pub fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(REASON_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// The decisions of one `send`: `send_accepted` + `target_chosen` (+ `busy_wait`), or
/// `send_refused` / `name_ambiguous`.
pub fn send(agent: Agent, response: &SendResponse) -> Vec<Decision> {
    match response {
        SendResponse::Accepted(receipt) => send_accepted(receipt),
        SendResponse::Refused(refusal) => vec![send_refused(agent, refusal)],
    }
}

/// `send_accepted`, `target_chosen`, and `busy_wait` when the delivery waits behind others.
pub fn send_accepted(receipt: &SendReceipt) -> Vec<Decision> {
    let base = |kind: DecisionKind, outcome: Outcome| {
        let mut d = Decision::new(kind, outcome)
            .agent(receipt.target_agent.as_str())
            .delivery(receipt.delivery_id.clone())
            .conversation(receipt.conversation_id.clone());
        d.session = receipt.reply_lands_in_session.clone();
        d.target_session = receipt.target_session_id.clone();
        d
    };
    let mut out = vec![
        base(DecisionKind::SEND_ACCEPTED, Outcome::ACCEPTED)
            .detail("hop", receipt.hop)
            .detail("max_hops", receipt.max_hops)
            .detail("queue_depth", receipt.queue_depth)
            .detail("will_create_session", receipt.will_create_session)
            .detail("request_id", receipt.request_id.clone())
            .detail("transport", receipt.transport.as_str())
            .detail("warnings", receipt.warnings.len()),
        base(DecisionKind::TARGET_CHOSEN, Outcome::CHOSEN)
            .guard(wire_name(&receipt.target_selected_by))
            .detail("target_selected_by", wire_name(&receipt.target_selected_by))
            .detail(
                "caller_supplied_session_id",
                receipt.caller_supplied_session_id.clone(),
            )
            .detail("will_create_session", receipt.will_create_session)
            .detail(
                "target_last_activity_seconds_ago",
                receipt.target_last_activity_seconds_ago,
            ),
    ];
    let peer_running = receipt.peer_queue.peer_turn.as_deref() == Some("running");
    if receipt.queue_depth > 0 || peer_running {
        out.push(
            base(DecisionKind::BUSY_WAIT, Outcome::WAITING)
                .detail("queue_depth", receipt.queue_depth)
                .detail("queued_ahead", receipt.peer_queue.queued_ahead)
                .detail(
                    "oldest_waiting_seconds",
                    receipt.peer_queue.oldest_waiting_seconds,
                )
                .detail("peer_turn", receipt.peer_queue.peer_turn.clone()),
        );
    }
    out
}

/// `send_refused` (or `name_ambiguous`): the guard, the engine's sentence, the values it
/// compared, and the candidates' ids.
pub fn send_refused(agent: Agent, refusal: &Refusal) -> Decision {
    let kind = match refusal.reason {
        RefusalReason::AmbiguousName => DecisionKind::NAME_AMBIGUOUS,
        RefusalReason::InvalidArguments
        | RefusalReason::HopBudget
        | RefusalReason::SelfCall
        | RefusalReason::RequireExplicitTarget
        | RefusalReason::DisableHeadless
        | RefusalReason::NoSuchSession
        | RefusalReason::ScanBoundReached
        | RefusalReason::InvalidSetting
        | RefusalReason::UiHookRequire
        | RefusalReason::NotAvailable
        | RefusalReason::CallerUnresolved => DecisionKind::SEND_REFUSED,
    };
    // An ambiguous name's sentence quotes the name, which is the candidates' title: the count
    // and their ids say the same without it.
    // A name on several machines (`host = "all"`) names the machines, not sessions.
    let hosts = refusal.details.get("hosts").and_then(Value::as_array);
    let reason = match (refusal.reason, hosts) {
        (RefusalReason::AmbiguousName, Some(hosts)) => format!(
            "{} machines have a {agent} session answering to the name given, so it was refused \
             rather than guessed",
            hosts.len()
        ),
        (RefusalReason::AmbiguousName, None) => format!(
            "{} {agent} sessions answer to the name given, so it was refused rather than guessed",
            refusal.candidates.len()
        ),
        (_, _) => first_line(&refusal.message),
    };
    let mut decision = Decision::new(kind, Outcome::REFUSED)
        .agent(agent.as_str())
        .guard(wire_name(&refusal.reason))
        .reason(reason);
    decision = match &refusal.details {
        Value::Object(_) => decision.details_from(refusal.details.clone()),
        Value::Null => decision,
        other => decision.detail("values", other.clone()),
    };
    if let Some(Value::String(id)) = decision.details.get("conversation_id") {
        decision.conversation_id = Some(id.clone());
    }
    if !refusal.candidates.is_empty() {
        let ids: Vec<Value> = refusal
            .candidates
            .iter()
            .map(|c| Value::String(c.session_id.clone()))
            .collect();
        decision = decision
            .detail("candidates", refusal.candidates.len())
            .detail("candidate_session_ids", ids);
    }
    decision
}

/// Shared fields of the decisions about one delivery.
fn about(record: &DeliveryRecord, kind: DecisionKind, outcome: Outcome) -> Decision {
    let mut d = Decision::new(kind, outcome)
        .agent(record.target_agent.as_str())
        .delivery(record.delivery_id.clone())
        .conversation(record.conversation_id.clone());
    d.session = record.from_session.clone();
    d.target_session = record.target_session_id.clone();
    d
}

/// A delivery settled: `delivery_outcome` (`delivered` / `failed`), with `timeout_kill` first
/// when the peer's turn was killed for inactivity.
pub fn delivery_finished(record: &DeliveryRecord) -> Vec<Decision> {
    let mut out = Vec::new();
    if record.is_killed_by_timeout {
        let mut kill = about(record, DecisionKind::TIMEOUT_KILL, Outcome::KILLED)
            .guard("inactivity_timeout")
            .detail("peer_pid", record.peer_pid);
        if let Some(error) = &record.error {
            kill = kill.reason(first_line(error));
        }
        out.push(kill);
    }
    let duration_ms = match (&record.started_at, &record.finished_at) {
        (Some(start), Some(end)) => crate::clock::to_millis(end)
            .zip(crate::clock::to_millis(start))
            .map(|(e, s)| e - s),
        _ => None,
    };
    let mut outcome = about(
        record,
        DecisionKind::DELIVERY_OUTCOME,
        Outcome::new(wire_name(&record.state)),
    )
    .detail("transport", record.transport.as_str())
    .detail("outcome", record.outcome.as_ref().map(wire_name))
    .detail("hop", record.hop)
    .detail("max_hops", record.max_hops)
    .detail("target_selected_by", wire_name(&record.target_selected_by))
    .detail("will_create_session", record.will_create_session)
    .detail("duration_ms", duration_ms)
    .detail("message_chars", record.message_chars)
    .detail("carrier_generation", record.carrier_generation)
    .detail("is_killed_by_timeout", record.is_killed_by_timeout)
    .detail("is_stopped_with_carrier", record.is_stopped_with_carrier)
    .detail("is_reply_recovered", record.is_reply_recovered)
    .detail("is_undelivered", record.is_undelivered)
    .detail("is_return_status_only", record.is_return_status_only)
    .detail(
        "reply_carries_request_id",
        record.answer.reply_carries_request_id,
    )
    .detail(
        "is_reply_possibly_interim",
        record.answer.is_reply_possibly_interim,
    )
    .detail(
        "is_reply_confirmed_by_transcript",
        record.answer.is_reply_confirmed_by_transcript,
    )
    .detail(
        "late_answer_watch",
        record.answer.late_answer_watch_until.is_some(),
    );
    if let Some(error) = &record.error {
        outcome = outcome.reason(first_line(error));
    }
    out.push(outcome);
    out
}

/// A queued delivery found its target session busy with someone else's turn (another daemon's,
/// or a person's open in the transcript) and waits — at most `bound_secs`, then it fails as
/// not delivered. `why` is the engine's own sentence naming the holder.
pub fn busy_held(record: &DeliveryRecord, why: &str, bound_secs: u64) -> Decision {
    about(record, DecisionKind::BUSY_WAIT, Outcome::WAITING)
        .guard("session_busy")
        .reason(first_line(why))
        .detail("wait_bound_seconds", bound_secs)
}

/// The peer's transcript was searched for an answer the CLI did not print.
pub fn recovery(record: &DeliveryRecord, found: bool) -> Decision {
    let outcome = if found {
        Outcome::RECOVERED
    } else {
        Outcome::NOT_RECOVERED
    };
    about(record, DecisionKind::RECOVERY, outcome)
        .detail("request_id", record.request_id.clone())
        .detail("has_transcript", record.target_transcript.is_some())
}

/// At start, deliveries an earlier daemon handed over but never closed were marked orphaned.
pub fn orphans_marked(count: u64, generation: u64) -> Decision {
    Decision::new(DecisionKind::ORPHAN, Outcome::ORPHANED)
        .reason("handed over by an earlier daemon and never closed; never re-sent")
        .detail("count", count)
        .detail("generation", generation)
}

/// One delivery marked orphaned.
pub fn orphan(record: &DeliveryRecord) -> Decision {
    about(record, DecisionKind::ORPHAN, Outcome::ORPHANED)
        .reason("handed over by an earlier daemon and never closed; never re-sent")
        .detail("carrier_generation", record.carrier_generation)
        .detail("peer_pid", record.peer_pid)
}

/// An answer to `record` arrived after it was closed, and was delivered as `late_delivery_id`.
pub fn late_answer(record: &DeliveryRecord, late_delivery_id: &str) -> Decision {
    about(record, DecisionKind::LATE_ANSWER, Outcome::ANSWERED)
        // Not `late_reply_…`: a key naming a reply is withheld as a payload would be.
        .detail("late_delivery_id", late_delivery_id.to_owned())
        .detail("state", wire_name(&record.state))
}

/// `pin`'s answer: `pin_set`, `pin_cleared`, or a refused `pin_set`.
pub fn pin(agent: Agent, response: &PinResponse) -> Decision {
    match response {
        PinResponse::Pinned { pin, previous } => {
            let mut d = Decision::new(DecisionKind::PIN_SET, Outcome::SET)
                .agent(agent.as_str())
                .target_session(pin.session_id.clone())
                .detail("sticky", pin.sticky)
                .detail("cwd", pin.cwd.clone());
            if let Some(previous) = previous {
                d = d.detail("previous_session", previous.session_id.clone());
            }
            d
        }
        PinResponse::Unpinned { previous } => {
            let mut d = Decision::new(DecisionKind::PIN_CLEARED, Outcome::CLEARED)
                .agent(agent.as_str())
                .reason("unpinned by the caller");
            if let Some(previous) = previous {
                d = d
                    .target_session(previous.session_id.clone())
                    .detail("cwd", previous.cwd.clone());
            }
            d
        }
        PinResponse::Refused(refusal) => Decision::new(DecisionKind::PIN_SET, Outcome::REFUSED)
            .agent(agent.as_str())
            .guard(wire_name(&refusal.reason))
            .reason(first_line(&refusal.message))
            .details_from(refusal.details.clone()),
    }
}

/// The engine dropped an automatic pin (its session failed to start, say). `why` is the
/// engine's own short phrase.
pub fn pin_dropped(agent: Agent, session_id: &str, why: &str) -> Decision {
    Decision::new(DecisionKind::PIN_CLEARED, Outcome::CLEARED)
        .agent(agent.as_str())
        .target_session(session_id.to_owned())
        .reason(first_line(why))
}

/// `panel_removed`: a kind of its own, written when the daemon finds a panel shim's
/// registration whose process is gone (or whose pid now runs another process) and removes it
/// with its socket.
pub const PANEL_REMOVED: &str = "panel_removed";

/// A dead panel shim's registration was removed; `why` is the engine's own words.
pub fn panel_removed(pid: u32, why: &str) -> Decision {
    Decision::new(DecisionKind::new(PANEL_REMOVED), Outcome::new("removed"))
        .guard("panel_registration")
        .reason(first_line(why))
        .detail("shim_pid", pid)
}

/// `store_quarantined`: a kind of its own (readers built before it still read it, the set being
/// open). Not a constant of the protocol crate: only the daemon's start writes it.
pub const STORE_QUARANTINED: &str = "store_quarantined";

/// At start, `hub.db` failed its integrity check (`why`: SQLite's words) and was moved aside to
/// `moved_to`; a fresh store was created. `deliveries_known` ids could still be read from it
/// (each reported as unknown, never re-sent).
pub fn store_quarantined(
    moved_to: &std::path::Path,
    why: &str,
    deliveries_known: usize,
    check_ms: u64,
) -> Decision {
    Decision::new(
        DecisionKind::new(STORE_QUARANTINED),
        Outcome::new("quarantined"),
    )
    .guard("integrity_check")
    .reason(first_line(why))
    .detail("moved_to", moved_to.to_string_lossy().into_owned())
    .detail("deliveries_known", deliveries_known)
    .detail("check_ms", check_ms)
}

/// `native_route`: a kind of its own. A native delivery (Claude's peer door) found its target's
/// process gone when it went out, and resumes the session over the CLI instead (nothing had
/// been sent). `why` is the engine's own sentence.
pub const NATIVE_ROUTE: &str = "native_route";
/// `native_receipt`: Claude's own receipt for one native send, as the relay's hooks filed it.
pub const NATIVE_RECEIPT: &str = "native_receipt";
/// `native_inbound`: one piece of inbound mail a relay's hook filed (a peer's message, an idle
/// or a delivery notice), and what it was paired with.
pub const NATIVE_INBOUND: &str = "native_inbound";
/// `native_gate_denied`: a relay's gate denied a tool call it had not queued.
pub const NATIVE_GATE_DENIED: &str = "native_gate_denied";

/// A native delivery went over the CLI after all: its process was gone when it went out.
pub fn native_route_changed(record: &DeliveryRecord, why: &str) -> Decision {
    about(
        record,
        DecisionKind::new(NATIVE_ROUTE),
        Outcome::new("headless-cli"),
    )
    .guard("native_target_gone")
    .reason(first_line(why))
}

/// Claude's receipt for a native send: `outcome` is `sent`, `refused`, `dead`, `denied`,
/// `no_send` or `relay_died`; `msg_id` is Claude's id of the sent message; `reason` is the
/// engine's own sentence (Claude's words for a refusal), never the message.
pub fn native_receipt(
    record: &DeliveryRecord,
    outcome: &str,
    msg_id: Option<&str>,
    relay: &str,
    reason: Option<&str>,
) -> Decision {
    let mut d = about(
        record,
        DecisionKind::new(NATIVE_RECEIPT),
        Outcome::new(outcome.to_owned()),
    )
    .detail("relay", relay.to_owned())
    .detail("msg_id", msg_id.map(str::to_owned));
    if let Some(reason) = reason {
        d = d.reason(first_line(reason));
    }
    d
}

/// A relay filed inbound mail: `kind` is `message`, `idle_notice` or `delivery_notice`;
/// `paired_with` the delivery it answers or concerns, when one was found. `status` is a
/// delivery notice's status (`held`, `released`, `expired`, …). Never the text.
pub fn native_inbound(
    relay: &str,
    kind: &str,
    paired_with: Option<&str>,
    status: Option<&str>,
) -> Decision {
    let mut d = Decision::new(
        DecisionKind::new(NATIVE_INBOUND),
        Outcome::new(kind.to_owned()),
    )
    .detail("relay", relay.to_owned())
    .detail("status", status.map(str::to_owned));
    if let Some(id) = paired_with {
        d = d.delivery(id.to_owned());
    }
    d
}

/// A relay's gate denied a call (`reason`: the gate's own words).
pub fn native_gate_denied(record: &DeliveryRecord, relay: &str, reason: &str) -> Decision {
    about(
        record,
        DecisionKind::new(NATIVE_GATE_DENIED),
        Outcome::new("denied"),
    )
    .guard("relay_gate")
    .reason(first_line(reason))
    .detail("relay", relay.to_owned())
}
