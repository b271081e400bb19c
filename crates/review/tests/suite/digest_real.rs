//! The digest of sessions the real Claude Code (2.1.332) and Codex (0.171.0) wrote, offline,
//! against the scripted model endpoint, with bridged turns among the person's: a peer's request
//! in the bridge's envelope and a `BRIDGE REPLY`, each delivered as the bridge delivers into a
//! CLI session — as the prompt of a resumed turn — in the exact text `cross-agent-hub`'s
//! `envelope` module writes. The session is found by id through the stores' index, as the
//! `review` command will find it.

use std::path::Path;

use cross_agent_hub::envelope::{self, AnswerKind, EnvelopeFields};
use cross_agent_review::digest::{FamilySource, Limits, ModelFamily, TailEntry, digest_session};
use cross_agent_stores::{Agent, StoreRoots, Warnings};
use cross_agent_testkit::agents::{AgentHome, Claude, Codex};
use cross_agent_testkit::{Api, ModelEndpoint, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

const GOAL: &str = "Port the importer in src/import.rs to the csv crate; never touch Cargo.lock.";
const LATEST: &str = "Also keep the public API unchanged.";
const PEER_ASK: &str = "Please review my migration plan for the parser.";
const PEER_ANSWER: &str = "Use csv 1.3 with the serde feature.";
const REQUEST_IN: &str = "req_1790000000000_peerin";
const REQUEST_OUT: &str = "req_1790000000001_mineout";

/// The envelope a peer's request arrives in.
fn peer_envelope(from: Agent) -> String {
    let body = envelope::body(
        &EnvelopeFields {
            from_agent: Some(from),
            from_session: Some("019a0000-0000-7000-8000-00000000peer"),
            conversation_id: "conv_0123456789ab",
            hop: 1,
            max_hops: 4,
            request_id: REQUEST_IN,
            from_telegram: false,
            from_reviewer: None,
        },
        PEER_ASK,
    );
    envelope::assemble(&body, 0, 0)
}

/// The answer to this session's own request, as the bridge returns it.
fn bridge_reply(from: Agent) -> String {
    format!(
        "{}\n{PEER_ANSWER}\n{REQUEST_OUT}",
        envelope::reply_header(
            from,
            Some("019a0000-0000-7000-8000-00000000peer"),
            REQUEST_OUT,
            /*carries_request_id*/ true,
            AnswerKind::Confirmed,
        )
    )
}

/// The scripted model's side of the four turns, for one API.
fn script(endpoint: &ModelEndpoint, api: Api, shell: ToolCall) {
    endpoint.script([
        Rule::on_user_text("Port the importer")
            .tool_call(shell)
            .for_api(api)
            .once(),
        Rule::on_any_tool_result().reply_text("The build fails on the old import; switching it."),
        Rule::on_user_text(PEER_ASK).reply_text(format!("Your plan is sound.\n{REQUEST_IN}")),
        Rule::on_user_text("=== BRIDGE REPLY ===").reply_text("Noted the peer's advice."),
        Rule::on_user_text("Also keep").reply_text("Done: csv 1.3, public API unchanged."),
    ]);
}

/// What both agents' digests must show: the person's words and the agent's, the shell call by
/// name, and none of the bridge's texts, the reminders or the tool's output.
fn assert_digest_of_real_session(
    home: &Path,
    id: &str,
    shell_name: &str,
    family: ModelFamily,
) -> cross_agent_review::digest::Digest {
    let mut warnings = Warnings::default();
    let d = digest_session(
        &StoreRoots::under_home(home),
        None,
        id,
        &Limits::default(),
        &mut warnings,
    )
    .unwrap();
    assert_eq!(d.opening_goal.as_ref().map(|e| e.text.as_str()), Some(GOAL));
    assert_eq!(
        d.latest_instruction.as_ref().map(|e| e.text.as_str()),
        Some(LATEST)
    );
    assert_eq!(d.model.family, family, "{:?}", d.model);
    assert_eq!(d.model.source, FamilySource::Transcript);

    let shown = serde_json::to_string(&d.tail).unwrap();
    for absent in [
        "CROSS-AGENT BRIDGE MESSAGE",
        "BRIDGE REPLY",
        PEER_ASK,
        PEER_ANSWER,
        "Your plan is sound",
        "Noted the peer's advice",
        "system-reminder",
        "environment_context",
        // The shell call's output (its command line holds no "42").
        "MARK-42",
    ] {
        assert!(!shown.contains(absent), "{absent:?} in the tail: {shown}");
    }
    let people: Vec<&str> = d
        .tail
        .iter()
        .filter_map(|e| match e {
            TailEntry::User { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(people, vec![GOAL, LATEST]);
    let agent_said: Vec<&str> = d
        .tail
        .iter()
        .filter_map(|e| match e {
            TailEntry::Assistant { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        agent_said,
        vec![
            "The build fails on the old import; switching it.",
            "Done: csv 1.3, public API unchanged."
        ]
    );
    assert!(
        d.tail.iter().any(|e| matches!(e,
            TailEntry::ToolCall { name, summary, .. }
                if name == shell_name && summary.contains("cargo build"))),
        "{shown}"
    );
    assert_eq!(
        d.tail
            .iter()
            .filter(|e| matches!(e, TailEntry::Bridged { .. }))
            .count(),
        2,
        "{shown}"
    );
    assert_eq!(
        (d.skipped.bridge_messages, d.skipped.bridge_notices),
        (1, 1),
        "{:?}",
        d.skipped
    );
    assert!(d.skipped.tool_outputs >= 1, "{:?}", d.skipped);
    assert_eq!(d.skipped.malformed_lines, 0, "{warnings:?}");
    assert!(d.read.whole_file);
    // The output is in the transcript: it was left out, not missing.
    let raw = std::fs::read_to_string(&d.path).unwrap();
    assert!(
        raw.contains("MARK-42") && raw.contains("BRIDGE REPLY"),
        "{raw}"
    );
    assert_eq!(
        d.reviewed_to.offset,
        std::fs::metadata(&d.path).unwrap().len()
    );
    d
}

#[test]
fn real_claude_session_with_bridged_turns() {
    let home = AgentHome::new().unwrap();
    let endpoint = ModelEndpoint::start().unwrap();
    script(
        &endpoint,
        Api::Anthropic,
        ToolCall::new(
            "Bash",
            json!({"command": "cargo build 2>&1; echo MARK-$((6*7))", "description": "build"}),
        ),
    );
    let project = home.project("shop").unwrap();
    let claude = Claude::new(&home, &endpoint.anthropic_base_url()).unwrap();
    let prompts = [
        GOAL.to_owned(),
        peer_envelope(Agent::Codex),
        bridge_reply(Agent::Codex),
        LATEST.to_owned(),
    ];
    let id = claude.session(&project, &["Bash"], &prompts).unwrap();
    let d = assert_digest_of_real_session(home.path(), &id, "Bash", ModelFamily::Anthropic);
    assert!(
        d.model
            .model
            .as_deref()
            .is_some_and(|m| m.starts_with("claude")),
        "{:?}",
        d.model
    );
    assert!(d.reviewed_to.record_id.is_some());
}

#[test]
fn real_codex_session_with_bridged_turns() {
    let home = AgentHome::new().unwrap();
    let endpoint = ModelEndpoint::start().unwrap();
    script(
        &endpoint,
        Api::Responses,
        ToolCall::new(
            "exec_command",
            json!({"cmd": "cargo build 2>&1; echo MARK-$((6*7))"}),
        ),
    );
    let project = home.project("shop").unwrap();
    let codex = Codex::new(&home, &endpoint.openai_base_url()).unwrap();
    let prompts = [
        GOAL.to_owned(),
        peer_envelope(Agent::Claude),
        bridge_reply(Agent::Claude),
        LATEST.to_owned(),
    ];
    // A model name of the OpenAI family, as a user's config would carry (the testkit's default
    // `test-model` has none).
    let thread = codex
        .session(&project, Some("gpt-5.1-codex"), &prompts)
        .unwrap();
    let d =
        assert_digest_of_real_session(home.path(), &thread, "exec_command", ModelFamily::Openai);
    assert_eq!(d.model.model.as_deref(), Some("gpt-5.1-codex"));
}
