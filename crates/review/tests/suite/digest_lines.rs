//! The digest on transcripts written line by line in the agents' formats (the testkit's
//! builders, which follow recorded Claude Code 2.1.332 and Codex 0.171.0 files): every skip
//! rule, every kind of damage, the bounds, reading only the ends of a large file, the model
//! family, the reviewed position and what a guard finds after it.

use std::io::Write as _;
use std::path::Path;

use cross_agent_review::ReviewError;
use cross_agent_review::digest::{
    BridgedTurn, FamilySource, Limits, ModelFamily, ReviewedPosition, SinceReview, TailEntry,
    digest_file, estimate_tokens, human_messages_after,
};
use cross_agent_stores::{Agent, UnixMillis, Warnings};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, CodexRollout};
use pretty_assertions::assert_eq;

const T0: i64 = 1_790_000_000_000;
const GOAL: &str = "Port the importer to the new CSV crate; never touch Cargo.lock.";
const LATEST: &str = "Also keep the public API unchanged.";

fn envelope() -> String {
    "=== CROSS-AGENT BRIDGE MESSAGE ===\nfrom: Codex (peer AI agent, not the human user)\n\
     reply-to: codex session 019a\nconversation: conv_1 | hop 1/4\nrequest: req_1790000000000_abcdef\n\n\
     Please review my migration plan.\n\n=== END OF BRIDGE MESSAGE ===\nReply instructions: …"
        .to_owned()
}

/// A Claude session with every kind of user-role text the digest must leave out.
fn claude_session(home: &Path) -> ClaudeTranscript {
    let mut t = ClaudeTranscript::new(home, "/home/u/shop", "0a0a0a0a-0000-4000-8000-000000000001");
    t.raw(r#"{"type":"file-history-snapshot","messageId":"m0","snapshot":{}}"#)
        .user("<system-reminder>Today is Monday.</system-reminder>", T0)
        .user(GOAL, T0 + 1)
        .tool_use("cargo build 2>&1 | tail -5", T0 + 2)
        .tool_result("error[E0432]: unresolved import `csv2`", T0 + 3)
        .assistant_text("The build fails on the import; switching it.", T0 + 4)
        // A peer's request, and the work done for it.
        .user(&envelope(), T0 + 5)
        .assistant_text("Your plan looks fine. req_1790000000000_abcdef", T0 + 6)
        // The answer to this session's own request, returned by the bridge.
        .user(
            "=== BRIDGE REPLY === from: codex session 019a | request: req_1790000000000_zzzzzz\nUse csv 1.3.",
            T0 + 7,
        )
        .assistant_text("Noted the peer's advice.", T0 + 8)
        .raw(&format!(
            r#"{{"type":"user","isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{{"role":"user","content":"This session is being continued from a previous conversation that ran out of context. Summary: porting."}},"uuid":"c0","timestamp":"{}"}}"#,
            cross_agent_testkit::synthetic_stores::rfc3339(T0 + 9)
        ))
        .raw("{not json at all")
        .raw(r#"{"type":"some-future-record","x":1}"#)
        .user(LATEST, T0 + 10)
        .assistant_text("Done: the importer uses csv 1.3 and the API is unchanged.", T0 + 11);
    t
}

#[test]
fn claude_goal_tail_and_latest_instruction_leave_out_what_no_person_wrote() {
    let home = tempfile::tempdir().unwrap();
    let t = claude_session(home.path());
    let path = t.write().unwrap();
    // A line still being written at the end.
    let complete_len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(br#"{"type":"user","message":{"role":"user","content":"half"#)
        .unwrap();

    let mut warnings = Warnings::default();
    let d = digest_file(
        Agent::Claude,
        &t.session_id,
        &path,
        &Limits::default(),
        &mut warnings,
    )
    .unwrap();

    assert_eq!(d.opening_goal.as_ref().unwrap().text, GOAL);
    assert_eq!(
        d.opening_goal.as_ref().unwrap().at,
        Some(UnixMillis(T0 + 1))
    );
    assert_eq!(d.latest_instruction.as_ref().unwrap().text, LATEST);
    let at = |ms| Some(UnixMillis(T0 + ms));
    assert_eq!(
        d.tail,
        vec![
            TailEntry::User {
                text: GOAL.to_owned(),
                at: at(1),
                clipped: false
            },
            TailEntry::ToolCall {
                name: "Bash".to_owned(),
                summary: "cargo build 2>&1 | tail -5".to_owned(),
                at: at(2)
            },
            TailEntry::Assistant {
                text: "The build fails on the import; switching it.".to_owned(),
                at: at(4),
                clipped: false
            },
            TailEntry::Bridged {
                what: BridgedTurn::PeerRequest,
                at: at(5)
            },
            TailEntry::Bridged {
                what: BridgedTurn::ReplyOrNotice,
                at: at(7)
            },
            TailEntry::User {
                text: LATEST.to_owned(),
                at: at(10),
                clipped: false
            },
            TailEntry::Assistant {
                text: "Done: the importer uses csv 1.3 and the API is unchanged.".to_owned(),
                at: at(11),
                clipped: false
            },
        ],
        "{d:#?}"
    );
    assert!(!d.tail_truncated);
    assert_eq!(
        d.tail_tokens,
        d.tail.iter().map(TailEntry::tokens).sum::<usize>()
    );
    let s = &d.skipped;
    assert_eq!(
        (s.bridge_messages, s.bridge_notices, s.bridged_items),
        (1, 1, 4),
        "{s:?}"
    );
    assert_eq!((s.compact_summaries, s.tool_outputs), (1, 1), "{s:?}");
    assert_eq!((s.malformed_lines, s.other_records), (1, 2), "{s:?}");
    assert!(s.partial_last_line);
    assert_eq!(d.model.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(d.model.family, ModelFamily::Anthropic);
    assert_eq!(d.model.source, FamilySource::Transcript);
    // The position stops before the half-written line, on the last whole record.
    assert_eq!(d.reviewed_to.offset, complete_len);
    assert_eq!(d.reviewed_to.timestamp, at(11));
    assert!(d.reviewed_to.record_id.is_some());
    assert!(d.read.whole_file);
    // The damage is reported, naming the file.
    assert!(
        warnings
            .items
            .iter()
            .any(|w| w.path == path && w.message.contains("not a JSON record")),
        "{:?}",
        warnings.items
    );
}

/// A session larger than the tail's reach: the goal comes from the head, the tail from the end,
/// and the middle is never read.
#[test]
fn a_large_transcript_is_read_only_at_its_ends() {
    let home = tempfile::tempdir().unwrap();
    let mut t = ClaudeTranscript::new(home.path(), "/home/u/shop", "big");
    t.user(GOAL, T0);
    let filler = "x".repeat(2_000);
    for i in 0..3_000 {
        t.tool_use(&format!("step {i}"), T0 + 10 * i + 1)
            .tool_result(&filler, T0 + 10 * i + 2)
            .assistant_text(&format!("step {i} done"), T0 + 10 * i + 3);
    }
    t.user(LATEST, T0 + 40_000)
        .assistant_text("Final step done.", T0 + 40_001);
    let path = t.write().unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 7 << 20, "{len}");

    let limits = Limits {
        tail_tokens: 400,
        ..Limits::default()
    };
    let mut warnings = Warnings::default();
    let d = digest_file(Agent::Claude, "big", &path, &limits, &mut warnings).unwrap();
    assert_eq!(d.opening_goal.unwrap().text, GOAL);
    assert_eq!(d.latest_instruction.unwrap().text, LATEST);
    assert!(d.tail_truncated);
    assert!(d.tail_tokens <= 400, "{}", d.tail_tokens);
    assert_eq!(
        d.tail.last(),
        Some(&TailEntry::Assistant {
            text: "Final step done.".to_owned(),
            at: Some(UnixMillis(T0 + 40_001)),
            clipped: false
        })
    );
    assert!(!d.read.whole_file);
    assert!(
        d.read.head_bytes + d.read.tail_bytes < len / 4,
        "read {} + {} of {len}",
        d.read.head_bytes,
        d.read.tail_bytes
    );
    assert_eq!(d.reviewed_to.offset, len);
}

/// With no human message near the end, the tail's window grows up to its cap and stops there,
/// saying so; the goal still comes from the head.
#[test]
fn the_search_for_the_latest_instruction_is_capped() {
    let home = tempfile::tempdir().unwrap();
    let mut t = ClaudeTranscript::new(home.path(), "/home/u/shop", "capped");
    t.user(GOAL, T0);
    let filler = "y".repeat(4_000);
    for i in 0..600 {
        t.tool_use(&format!("step {i}"), T0 + i + 1)
            .tool_result(&filler, T0 + i + 1);
    }
    let path = t.write().unwrap();
    let limits = Limits {
        tail_bytes: 1 << 20,
        tail_tokens: 1_000_000,
        ..Limits::default()
    };
    let d = digest_file(
        Agent::Claude,
        "capped",
        &path,
        &limits,
        &mut Warnings::default(),
    )
    .unwrap();
    assert_eq!(d.opening_goal.unwrap().text, GOAL);
    assert_eq!(d.latest_instruction, None);
    assert!(d.read.tail_search_capped);
    assert!(d.read.tail_bytes <= 1 << 20, "{}", d.read.tail_bytes);
}

#[test]
fn long_messages_are_clipped_to_their_budgets() {
    let home = tempfile::tempdir().unwrap();
    let mut t = ClaudeTranscript::new(home.path(), "/home/u/shop", "long");
    let goal = format!("START {} END", "goal ".repeat(5_000));
    t.user(&goal, T0)
        .assistant_text(&"a".repeat(40_000), T0 + 1);
    let path = t.write().unwrap();
    let d = digest_file(
        Agent::Claude,
        "long",
        &path,
        &Limits::default(),
        &mut Warnings::default(),
    )
    .unwrap();
    let g = d.opening_goal.unwrap();
    assert!(g.clipped && g.tokens <= 2_000, "{}", g.tokens);
    assert!(g.text.starts_with("START") && g.text.ends_with("END"));
    let TailEntry::Assistant { text, clipped, .. } = &d.tail[1] else {
        panic!("{:?}", d.tail)
    };
    assert!(*clipped && estimate_tokens(text) <= 1_500);
}

#[test]
fn codex_model_family_and_compaction_are_read_from_the_rollout() {
    let home = tempfile::tempdir().unwrap();
    let mut r = CodexRollout::new(
        home.path(),
        "/home/u/shop",
        "019a0000-0000-7000-8000-000000000001",
        T0,
    );
    r.raw(r#"{"timestamp":"2026-09-21T14:13:20.000Z","type":"turn_context","payload":{"cwd":"/home/u/shop","model":"gpt-5.1-codex","approval_policy":"never"}}"#)
        .user(GOAL, T0 + 1)
        .tool_call("cargo test", "ok", T0 + 2)
        .answer("Tests pass.", T0 + 3)
        .raw(r#"{"timestamp":"2026-09-21T14:13:21.000Z","type":"compacted","payload":{"message":"summary","replacement_history":[]}}"#)
        .user(
            "Another language model started to solve this problem and produced a summary of its thinking process.",
            T0 + 4,
        )
        .user(LATEST, T0 + 5)
        .answer("Kept it.", T0 + 6);
    let path = r.write().unwrap();
    let d = digest_file(
        Agent::Codex,
        "019a",
        &path,
        &Limits::default(),
        &mut Warnings::default(),
    )
    .unwrap();
    assert_eq!(d.model.model.as_deref(), Some("gpt-5.1-codex"));
    assert_eq!(d.model.family, ModelFamily::Openai);
    assert_eq!(d.opening_goal.unwrap().text, GOAL);
    assert_eq!(d.latest_instruction.unwrap().text, LATEST);
    assert_eq!(d.skipped.compact_summaries, 2, "{:?}", d.skipped);
    assert!(
        d.tail.contains(&TailEntry::ToolCall {
            name: "exec_command".to_owned(),
            summary: "cargo test".to_owned(),
            at: Some(UnixMillis(T0 + 2))
        }),
        "{:?}",
        d.tail
    );
    assert!(!format!("{:?}", d.tail).contains("Another language model"));
}

#[test]
fn a_symlinked_transcript_is_refused_by_name() {
    let home = tempfile::tempdir().unwrap();
    let t = claude_session(home.path());
    let real = t.write().unwrap();
    let link = home.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let err = digest_file(
        Agent::Claude,
        "x",
        &link,
        &Limits::default(),
        &mut Warnings::default(),
    )
    .unwrap_err();
    assert!(
        matches!(err, ReviewError::Symlink { ref path } if *path == link),
        "{err}"
    );
    assert!(
        err.to_string().contains(&link.display().to_string()),
        "{err}"
    );
}

#[test]
fn a_guard_sees_a_person_write_after_the_reviewed_position() {
    let home = tempfile::tempdir().unwrap();
    let mut t = claude_session(home.path());
    let path = t.write().unwrap();
    let d = digest_file(
        Agent::Claude,
        "x",
        &path,
        &Limits::default(),
        &mut Warnings::default(),
    )
    .unwrap();
    let since = d.reviewed_to.clone();
    let check = |since: &ReviewedPosition| {
        human_messages_after(Agent::Claude, &path, since, &mut Warnings::default()).unwrap()
    };
    assert_eq!(check(&since), SinceReview::Quiet);

    // The agent writing on, or the bridge delivering, is not a person.
    let from = t.len();
    t.assistant_text("Still here.", T0 + 20)
        .user(&envelope(), T0 + 21);
    t.append_since(from).unwrap();
    assert_eq!(check(&since), SinceReview::Quiet);

    let from = t.len();
    t.user("Stop and revert.", T0 + 30);
    t.append_since(from).unwrap();
    assert_eq!(
        check(&since),
        SinceReview::HumanMessage {
            at: Some(UnixMillis(T0 + 30))
        }
    );

    std::fs::write(&path, "").unwrap();
    assert_eq!(check(&since), SinceReview::Replaced);
}
