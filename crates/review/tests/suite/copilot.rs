//! A Copilot session reviewed: its transcript is the Copilot SDK's `events.jsonl` of the
//! session's default chat, found through VS Code's catalog and `session.db` (the testkit's
//! builders write all three in the shapes `docs/observed/copilot.md` §4 records). The digest —
//! goal, tail, latest instruction, the model the events name, the reviewed position — with a
//! bridged turn, a sub-agent's events and damage among them; the two-ended reading of a long
//! file; what a guard finds after the reviewed position; and a review by the scripted model
//! endpoint as a reviewer of another family than the one the events name.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cross_agent_providers::config::parse_shorthand;
use cross_agent_providers::{Env, Pool, Provider};
use cross_agent_review::ReviewError;
use cross_agent_review::digest::{
    BridgedTurn, FamilySource, Limits, ModelFamily, SessionModel, SinceReview, Skipped, TailEntry,
    digest_file, digest_session, human_messages_after,
};
use cross_agent_review::run::{ReviewOutcome, ReviewSettings, review};
use cross_agent_review::verdict::VerdictKind;
use cross_agent_stores::{Agent, StoreRoots, UnixMillis, Warnings};
use cross_agent_testkit::synthetic_stores::{CopilotEditor, SdkEvents};
use cross_agent_testkit::{Api, ModelEndpoint, Rule};
use pretty_assertions::assert_eq;
use serde_json::json;

const T0: i64 = 1_790_000_000_000;
const SESSION: &str = "5b0c6f5e-1d2a-4c3b-9e8f-0a1b2c3d4e5f";
const SDK: &str = "9f8e7d6c-5b4a-4321-8fed-cba987654321";
const GOAL: &str = "Port the importer to the new CSV crate; never touch Cargo.lock.";
const LATEST: &str = "Also keep the public API unchanged.";
const MODEL: &str = "claude-sonnet-4.5";
const KEY: &str = "sk-review-test-0123456789";

fn envelope() -> String {
    "=== CROSS-AGENT BRIDGE MESSAGE ===\nfrom: Codex (peer AI agent, not the human user)\n\
     reply-to: codex session 019a\nconversation: conv_1 | hop 1/4\nrequest: req_1790000000000_abcdef\n\n\
     Please review my migration plan.\n\n=== END OF BRIDGE MESSAGE ===\nReply instructions: …"
        .to_owned()
}

/// A root event with `data`; returns its id.
fn event(e: &mut SdkEvents, kind: &str, at: i64, data: serde_json::Value) -> String {
    e.event(kind, at, &data.to_string(), None)
}

fn said(e: &mut SdkEvents, text: &str, at: i64) -> String {
    event(
        e,
        "assistant.message",
        at,
        json!({"messageId": format!("m{at}"), "content": text, "model": MODEL}),
    )
}

/// The catalog row and `session.db` of one Copilot session under `home` (VS Code's default
/// user data and the SDK's default folder), and its SDK events builder.
fn copilot_session(home: &Path, with_default_chat: bool) -> SdkEvents {
    let editor = CopilotEditor::new(&home.join(".config/Code"));
    editor
        .register(&format!("copilotcli:/{SESSION}"), T0, T0 + 100)
        .unwrap();
    let db = editor.session(SESSION).unwrap();
    db.title("csv port").unwrap();
    if with_default_chat {
        // The editor's choice at creation; the events say what ran since.
        db.default_chat(SDK, "gpt-5.1").unwrap();
    }
    SdkEvents::new(&home.join(".copilot/session-state"), SDK)
}

/// The session's events: it started on a GPT model and was switched to Claude; a tool call, a
/// sub-agent's chatter, a peer's request and the bridge's reply, a damaged line, and a second
/// instruction. Returns the builder and the last event's id.
fn conversation(e: &mut SdkEvents) -> String {
    event(
        e,
        "session.start",
        T0,
        json!({"sessionId": SDK, "version": 1, "producer": "copilot-agent", "startTime": "2026-09-21T00:00:00Z", "selectedModel": "gpt-5.1"}),
    );
    event(
        e,
        "session.model_change",
        T0 + 1,
        json!({"previousModel": "gpt-5.1", "newModel": MODEL}),
    );
    e.user_message(GOAL, T0 + 2);
    event(
        e,
        "assistant.turn_start",
        T0 + 3,
        json!({"turnId": "0", "model": MODEL}),
    );
    event(
        e,
        "assistant.message",
        T0 + 4,
        json!({"messageId": "m1", "content": "Building first.", "model": MODEL,
               "toolRequests": [{"toolCallId": "call_1", "name": "bash",
                                 "arguments": {"command": "cargo build", "description": "build"}}]}),
    );
    event(
        e,
        "tool.execution_start",
        T0 + 5,
        json!({"toolCallId": "call_1", "toolName": "bash", "arguments": {"command": "cargo build"}}),
    );
    event(
        e,
        "tool.execution_complete",
        T0 + 6,
        json!({"toolCallId": "call_1", "success": false,
               "result": {"content": "error[E0432]: unresolved import `csv2`"}}),
    );
    e.event(
        "assistant.message",
        T0 + 7,
        &json!({"messageId": "s1", "content": "sub-agent chatter", "model": "gpt-5-mini"})
            .to_string(),
        Some("explore-1"),
    );
    said(e, "The build fails on the old import.", T0 + 8);
    event(e, "assistant.turn_end", T0 + 9, json!({"turnId": "0"}));
    // A peer's request, and the work done for it.
    e.user_message(&envelope(), T0 + 10);
    said(e, "Your plan looks fine. req_1790000000000_abcdef", T0 + 11);
    // The answer to this session's own request, returned by the bridge.
    e.user_message(
        "=== BRIDGE REPLY === from: codex session 019a | request: req_1790000000000_zzzzzz\nUse csv 1.3.",
        T0 + 12,
    );
    said(e, "Noted the peer's advice.", T0 + 13);
    e.raw("{not json at all");
    e.user_message(LATEST, T0 + 14);
    said(e, "Done: csv 1.3, API unchanged.", T0 + 15)
}

fn roots(home: &Path) -> StoreRoots {
    StoreRoots::under_home(home)
}

#[test]
fn a_copilot_digest_reads_the_sdk_events_of_its_default_chat() {
    let home = tempfile::tempdir().unwrap();
    let mut events = copilot_session(home.path(), true);
    let last_id = conversation(&mut events);
    events.write().unwrap();

    let mut warnings = Warnings::default();
    let d = digest_session(
        &roots(home.path()),
        None,
        SESSION,
        &Limits::default(),
        &mut warnings,
    )
    .unwrap();
    assert_eq!((d.agent, d.session_id.as_str()), (Agent::Copilot, SESSION));
    assert_eq!(d.path, events.path);
    // The model the events name last, not the editor's choice at creation.
    assert_eq!(
        d.model,
        SessionModel {
            model: Some(MODEL.to_owned()),
            family: ModelFamily::Anthropic,
            source: FamilySource::Transcript,
        }
    );
    assert_eq!(d.opening_goal.unwrap().text, GOAL);
    assert_eq!(d.latest_instruction.unwrap().text, LATEST);
    let at = |ms: i64| Some(UnixMillis(T0 + ms));
    let text = |t: &str| t.to_owned();
    assert_eq!(
        d.tail,
        vec![
            TailEntry::User {
                text: text(GOAL),
                at: at(2),
                clipped: false
            },
            TailEntry::Assistant {
                text: text("Building first."),
                at: at(4),
                clipped: false
            },
            TailEntry::ToolCall {
                name: text("bash"),
                summary: text("cargo build"),
                at: at(4)
            },
            TailEntry::Assistant {
                text: text("The build fails on the old import."),
                at: at(8),
                clipped: false
            },
            TailEntry::Bridged {
                what: BridgedTurn::PeerRequest,
                at: at(10)
            },
            TailEntry::Bridged {
                what: BridgedTurn::ReplyOrNotice,
                at: at(12)
            },
            TailEntry::User {
                text: text(LATEST),
                at: at(14),
                clipped: false
            },
            TailEntry::Assistant {
                text: text("Done: csv 1.3, API unchanged."),
                at: at(15),
                clipped: false
            },
        ]
    );
    assert_eq!(
        d.skipped,
        Skipped {
            bridge_messages: 1,
            bridge_notices: 1,
            bridged_items: 4,
            tool_outputs: 1,
            malformed_lines: 1,
            // session.start, model_change, turn_start, the sub-agent's message, turn_end.
            other_records: 5,
            ..Skipped::default()
        }
    );
    assert_eq!(
        d.reviewed_to.offset,
        std::fs::metadata(&events.path).unwrap().len()
    );
    assert_eq!(d.reviewed_to.timestamp, at(15));
    assert_eq!(d.reviewed_to.record_id, Some(last_id));
    assert!(d.read.whole_file);
    assert_eq!(warnings.items.len(), 1, "{warnings:?}");
}

#[test]
fn a_long_copilot_session_is_read_from_both_ends() {
    let home = tempfile::tempdir().unwrap();
    let mut events = copilot_session(home.path(), true);
    events.user_message(GOAL, T0);
    // ~600 KB of work between the goal and the end, more than the first window.
    let filler = "x".repeat(2_000);
    for i in 0..300 {
        said(&mut events, &format!("step {i}: {filler}"), T0 + 1 + i);
    }
    events.user_message(LATEST, T0 + 400);
    said(&mut events, "Done.", T0 + 401);
    events.write().unwrap();
    let limits = Limits {
        tail_tokens: 2_000,
        ..Limits::default()
    };
    let d = digest_file(
        Agent::Copilot,
        SESSION,
        events.path.parent().unwrap(),
        &limits,
        &mut Warnings::default(),
    )
    .unwrap();
    assert_eq!(d.path, events.path);
    assert_eq!(d.opening_goal.unwrap().text, GOAL);
    assert_eq!(d.latest_instruction.unwrap().text, LATEST);
    assert!(!d.read.whole_file, "{:?}", d.read);
    assert!(d.read.head_bytes > 0 && d.read.tail_bytes < d.read.file_bytes);
    assert!(d.tail_truncated);
    assert_eq!(d.model.family, ModelFamily::Anthropic);
}

#[test]
fn a_copilot_session_whose_events_name_no_model_is_of_an_unknown_family() {
    let home = tempfile::tempdir().unwrap();
    let mut events = copilot_session(home.path(), true);
    events
        .user_message(GOAL, T0)
        .assistant("On it.", None, T0 + 1);
    events.write().unwrap();
    let d = digest_file(
        Agent::Copilot,
        SESSION,
        &events.path,
        &Limits::default(),
        &mut Warnings::default(),
    )
    .unwrap();
    assert_eq!(
        d.model,
        SessionModel {
            model: None,
            family: ModelFamily::Unknown,
            source: FamilySource::None,
        }
    );
}

#[test]
fn a_copilot_session_without_a_default_chat_has_no_transcript_and_says_why() {
    let home = tempfile::tempdir().unwrap();
    copilot_session(home.path(), false);
    let err = digest_session(
        &roots(home.path()),
        None,
        SESSION,
        &Limits::default(),
        &mut Warnings::default(),
    )
    .unwrap_err();
    assert!(
        matches!(err, ReviewError::NoTranscript { ref id, agent: Agent::Copilot, .. } if id == SESSION),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("session.db") && text.contains("sdkSessionId"),
        "{text}"
    );
}

#[test]
fn a_guard_sees_a_person_write_into_a_copilot_session_after_the_review() {
    let home = tempfile::tempdir().unwrap();
    let mut events = copilot_session(home.path(), true);
    conversation(&mut events);
    events.write().unwrap();
    let d = digest_file(
        Agent::Copilot,
        SESSION,
        &events.path,
        &Limits::default(),
        &mut Warnings::default(),
    )
    .unwrap();
    let since = d.reviewed_to.clone();
    let path = events.path.clone();
    let check =
        || human_messages_after(Agent::Copilot, &path, &since, &mut Warnings::default()).unwrap();
    assert_eq!(check(), SinceReview::Quiet);

    // The agent writing on, a sub-agent's prompt, or the bridge delivering is not a person.
    said(&mut events, "Still here.", T0 + 20);
    events.event(
        "user.message",
        T0 + 21,
        &json!({"content": "explore the tests"}).to_string(),
        Some("explore-1"),
    );
    events.user_message(&envelope(), T0 + 22);
    events.write().unwrap();
    assert_eq!(check(), SinceReview::Quiet);

    events.user_message("Stop and revert.", T0 + 30);
    events.write().unwrap();
    assert_eq!(
        check(),
        SinceReview::HumanMessage {
            at: Some(UnixMillis(T0 + 30))
        }
    );

    std::fs::write(&path, "").unwrap();
    assert_eq!(check(), SinceReview::Replaced);
}

fn provider(line: &str) -> Provider {
    parse_shorthand("CROSS_AGENT_PROVIDERS", line, Duration::from_secs(20))
        .unwrap()
        .remove(0)
}

#[test]
fn a_copilot_session_on_claude_is_reviewed_by_the_first_provider_of_another_family() {
    let home = tempfile::tempdir().unwrap();
    let mut events = copilot_session(home.path(), true);
    conversation(&mut events);
    events.write().unwrap();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_any()
            .reply_text(
                json!({"verdict": "on_track", "task": "Port the importer to csv", "gaps": []})
                    .to_string(),
            )
            .include_side_requests(),
    );
    // The Anthropic provider comes first, and is passed over: the session runs on Claude.
    let pool = Pool::new(
        vec![
            provider(&format!(
                "anthropic {} TEST_KEY claude-reviewer",
                endpoint.anthropic_base_url()
            )),
            provider(&format!(
                "openai {} TEST_KEY gpt-reviewer openai",
                endpoint.openai_base_url()
            )),
        ],
        Env::fixed(BTreeMap::from([("TEST_KEY".to_owned(), KEY.to_owned())])),
    );
    let settings = ReviewSettings::new(roots(home.path()));
    let report = review(SESSION, &pool, &settings).unwrap();

    let requests = endpoint.model_requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(requests[0].api, Api::Responses);
    let prompt = requests[0].last_user_text.clone().unwrap_or_default();
    assert!(prompt.contains(GOAL) && prompt.contains(LATEST), "{prompt}");
    assert!(prompt.contains("cargo build"), "{prompt}");
    for left_out in [
        "Please review my migration plan",
        "Your plan looks fine",
        "Use csv 1.3.",
        "sub-agent chatter",
        "unresolved import",
    ] {
        assert!(!prompt.contains(left_out), "{left_out:?} in {prompt}");
    }
    assert_eq!(
        (report.outcome, report.verdict),
        (ReviewOutcome::Verdict, Some(VerdictKind::OnTrack))
    );
    assert_eq!(
        (
            report.session.agent,
            report.session.family,
            &report.session.path
        ),
        (Agent::Copilot, ModelFamily::Anthropic, &events.path)
    );
    let reviewer = report.reviewer.unwrap();
    assert_eq!(
        (reviewer.provider.as_str(), reviewer.family.as_str()),
        ("openai:gpt-reviewer", "openai")
    );
}
