//! The turns reader: messages, tool calls and results with exit codes, finished turns, and the
//! closing-line rule for request ids — on the hand-written fixtures of all three agents and on
//! transcripts the real Claude Code and Codex write in a temp HOME during the test.

use std::path::PathBuf;

use cross_agent_stores::claude::{self, ClaudeFold};
use cross_agent_stores::codex::{self, CodexFold};
use cross_agent_stores::turns::{
    Role, ToolResult, Turn, TurnItem, closing_line, read_turns, request_ids,
};
use cross_agent_stores::{Agent, TranscriptFold, Warnings};
use cross_agent_testkit::agents::{AgentHome, Claude, Codex};
use cross_agent_testkit::{Api, ModelEndpoint, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::reader_support::{FixtureHome, fold_file, ms};

const REQ: &str = "req_1795990000000_k3Xz9Q";

fn results(turn: &Turn) -> Vec<&ToolResult> {
    turn.items
        .iter()
        .filter_map(|i| match i {
            TurnItem::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect()
}

#[test]
fn request_ids_are_whole_tokens() {
    assert_eq!(
        request_ids("done req_1795990000000_k3Xz9Q, see req_1795990000001_AAAAAA."),
        vec!["req_1795990000000_k3Xz9Q", "req_1795990000001_AAAAAA"]
    );
    // Too short, too long, glued to a word: not ids.
    assert!(request_ids("req_123_abcdef xreq_1795990000000_k3Xz9Q").is_empty());
    assert!(request_ids("req_1795990000000_k3Xz9Qz req_1795990000000_k3X").is_empty());
}

#[test]
fn the_closing_line_is_the_last_line_naming_any_request_id() {
    let text =
        "Answering req_1795990000000_AAAAAA as asked.\nAlso saw req_1795990000000_BBBBBB.\nDone.";
    assert_eq!(
        closing_line(text),
        Some("Also saw req_1795990000000_BBBBBB.")
    );
    assert_eq!(closing_line("no ids here"), None);
}

#[test]
fn codex_turns_with_exit_codes_and_a_closing_request_id() {
    let home = FixtureHome::new();
    let path = home.path().join(
        ".codex/sessions/2026/11/20/rollout-2026-11-20T10-00-00-019a0000-0000-7000-8000-000000000001.jsonl",
    );
    let mut warnings = Warnings::default();
    let t = read_turns(Agent::Codex, &path, &mut warnings).unwrap();
    assert!(warnings.items.is_empty(), "{:#?}", warnings.items);
    assert_eq!(t.turns.len(), 1);
    let turn = &t.turns[0];
    assert!(turn.finished);
    assert_eq!(results(turn)[0].exit_code, Some(101));
    assert_eq!(
        turn.final_text(),
        Some("The test fails on rounding. Fixed it.\nreq_1795990000000_k3Xz9Q")
    );
    assert!(turn.answers(REQ));
    assert!(!turn.answers("req_1795990000000_zzzzzz"));
    assert_eq!(
        t.finished_turn_answering(REQ, ms("2026-11-20T09:00:00.000Z")),
        Some(turn)
    );
    assert_eq!(
        t.finished_turn_answering(REQ, ms("2026-11-20T11:00:00.000Z")),
        None
    );
    let last = t
        .last_assistant_message_after(ms("2026-11-20T10:00:05.000Z").unwrap())
        .unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert!(t.is_idle());

    // The older JSON output shape carries the exit code in metadata.
    let old = home.path().join(
        ".codex/archived_sessions/rollout-2026-10-01T08-00-00-019a0000-0000-7000-8000-000000000005.jsonl",
    );
    let t = read_turns(Agent::Codex, &old, &mut warnings).unwrap();
    let r = results(&t.turns[0])[0];
    assert_eq!((r.output.as_str(), r.exit_code), ("syslog\n", Some(0)));
}

#[test]
fn a_codex_turn_without_task_complete_is_running() {
    let home = FixtureHome::new();
    let path = home.path().join(
        ".codex/sessions/2026/11/21/rollout-2026-11-21T11-00-00-019a0000-0000-7000-8000-000000000002.jsonl",
    );
    let t = read_turns(Agent::Codex, &path, &mut Warnings::default()).unwrap();
    assert!(t.running_turn().is_some());
    assert!(!t.is_idle());
}

#[test]
fn claude_turns_join_blocks_and_follow_tool_use() {
    let home = FixtureHome::new();
    let dir = home.path().join(".claude/projects/-home-u-billing");
    let working = dir.join("66666666-6666-4666-8666-666666666666.jsonl");
    let t = read_turns(Agent::Claude, &working, &mut Warnings::default()).unwrap();
    assert_eq!(t.turns.len(), 1);
    let turn = &t.turns[0];
    assert!(!turn.finished, "stopped on tool_use");
    assert_eq!(
        turn.items[0],
        TurnItem::Message(cross_agent_stores::turns::Message {
            role: Role::User,
            text: "Run the tests".to_owned(),
            timestamp: ms("2026-11-23T12:00:00.000Z"),
        })
    );
    let r = results(turn)[0];
    assert_eq!((r.is_error, r.exit_code), (Some(false), Some(0)));

    let renamed = dir.join("11111111-1111-4111-8111-111111111111.jsonl");
    let t = read_turns(Agent::Claude, &renamed, &mut Warnings::default()).unwrap();
    assert_eq!(t.turns.len(), 2);
    assert!(t.turns.iter().all(|t| t.finished));
    assert_eq!(t.turns[1].final_text(), Some("Added."));
}

#[test]
fn grok_turns_join_chunks_and_record_failures() {
    let home = FixtureHome::new();
    let dir = home
        .path()
        .join(".grok/sessions/%2Fhome%2Fu%2Fbilling/01a0630c-9370-72e0-87ad-000000000001");
    let t = read_turns(Agent::Grok, &dir, &mut Warnings::default()).unwrap();
    assert_eq!(t.turns.len(), 1);
    let turn = &t.turns[0];
    assert!(turn.finished);
    match &turn.items[0] {
        TurnItem::Message(m) => assert_eq!(m.text, "Fix invoice totals in the PDF export"),
        other => panic!("{other:?}"),
    }
    let r = results(turn)[0];
    assert_eq!((r.is_error, r.exit_code), (Some(true), Some(101)));
    assert_eq!(
        turn.final_text(),
        Some("Fixed the rounding.\nreq_1795990000000_Gr0k01")
    );
    assert!(turn.answers("req_1795990000000_Gr0k01"));
}

/// A real Claude Code run: a Bash call that exits 3, then an answer carrying a request id.
#[test]
fn real_claude_transcript_lists_and_reads_back() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("run the check")
            .tool_call(ToolCall::new(
                "Bash",
                json!({"command": "echo checked; exit 3", "description": "check"}),
            ))
            .for_api(Api::Anthropic)
            .once(),
        Rule::on_any_tool_result().reply_text(format!("The check failed.\n{REQ}")),
    ]);
    let home = AgentHome::new().unwrap();
    let project = home.project("checks").unwrap();
    let claude_cli = Claude::new(&home, &endpoint.anthropic_base_url()).unwrap();
    let run = claude_cli
        .turn(&project, "please run the check")
        .allow_tool("Bash")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    let id = run.session_id().unwrap().to_owned();

    let roots = cross_agent_stores::StoreRoots::under_home(home.path());
    let mut warnings = Warnings::default();
    let files = claude::discover(&roots, &mut warnings);
    assert_eq!(files.len(), 1, "{files:#?}");
    let (fold, _, _) = fold_file::<ClaudeFold>(&files[0].path);
    let session = fold.session(&files[0].path).unwrap();
    assert_eq!(session.session_id, id);
    assert_eq!(session.cwd, Some(project.canonicalize().unwrap()));
    assert_eq!(session.title.as_deref(), Some("please run the check"));
    assert!(!session.is_working);

    let t = read_turns(Agent::Claude, &files[0].path, &mut warnings).unwrap();
    let turn = t.turns.last().unwrap();
    assert!(turn.finished);
    let r = results(turn)[0];
    assert_eq!((r.is_error, r.exit_code), (Some(true), Some(3)));
    assert!(turn.answers(REQ), "{turn:#?}");
}

/// A real Codex run: `exec_command` exits 3, then an answer carrying a request id.
#[test]
fn real_codex_rollout_lists_and_reads_back() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("run the check")
            .tool_call(ToolCall::new(
                "exec_command",
                json!({"cmd": "echo checked; exit 3"}),
            ))
            .for_api(Api::Responses)
            .once(),
        Rule::on_any_tool_result().reply_text(format!("The check failed.\n{REQ}")),
    ]);
    let home = AgentHome::new().unwrap();
    let project = home.project("checks").unwrap();
    let codex_cli = Codex::new(&home, &endpoint.openai_base_url()).unwrap();
    let run = codex_cli
        .turn(&project, "please run the check")
        .arg("--dangerously-bypass-approvals-and-sandbox")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    let thread = run.thread_id().unwrap().to_owned();

    let roots = cross_agent_stores::StoreRoots::under_home(home.path());
    let mut warnings = Warnings::default();
    let files = codex::discover(&roots, &mut warnings);
    assert_eq!(files.len(), 1, "{files:#?}");
    let path: PathBuf = files[0].path.clone();
    let session = fold_file::<CodexFold>(&path).0.session(&path).unwrap();
    assert_eq!(session.session_id, thread);
    assert_eq!(session.title.as_deref(), Some("please run the check"));
    assert!(!session.is_working);

    let t = read_turns(Agent::Codex, &path, &mut warnings).unwrap();
    let turn = t.turns.last().unwrap();
    assert!(turn.finished);
    assert_eq!(results(turn)[0].exit_code, Some(3));
    assert!(turn.answers(REQ), "{turn:#?}");
}

/// A long session's transcript is read from its last window only, for every agent: the answer
/// at the end is found, the turns before the window are not read, and a window larger than the
/// file reads it all.
#[test]
fn recent_turns_come_from_the_end_of_a_long_transcript() {
    use cross_agent_stores::turns::read_recent_turns;
    use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, CodexRollout, GrokSession};
    const FILLER_TURNS: i64 = 300;
    let home = tempfile::tempdir().unwrap();
    let filler = "x".repeat(10_000);
    let closing = "the last answer\nreq_1796008397548_abc123";
    let step = |n: i64| 3_000 + n * 10;

    let mut claude = ClaudeTranscript::new(home.path(), "/work/proj", "long-1");
    claude
        .user("the first question", 1_000)
        .assistant_text("the first answer", 2_000);
    for n in 0..FILLER_TURNS {
        claude
            .user(&format!("filler {n} {filler}"), step(n))
            .assistant_text("ok", step(n) + 5);
    }
    claude
        .user("the last question", 9_000)
        .assistant_text(closing, 9_500);

    let mut codex = CodexRollout::new(
        home.path(),
        "/work/proj",
        "019a0000-0000-7000-8000-00000000a001",
        500,
    );
    codex
        .user("the first question", 1_000)
        .answer("the first answer", 2_000);
    for n in 0..FILLER_TURNS {
        codex
            .user(&format!("filler {n} {filler}"), step(n))
            .answer("ok", step(n) + 5);
    }
    codex
        .user("the last question", 9_000)
        .answer(closing, 9_500);

    let mut grok = GrokSession::new(home.path(), "/work/proj", "grok-long", 500);
    grok.user("the first question", 1_000)
        .agent_chunk("the first answer", 2_000)
        .turn_completed(2_000);
    for n in 0..FILLER_TURNS {
        grok.user(&format!("filler {n} {filler}"), step(n))
            .agent_chunk("ok", step(n) + 5)
            .turn_completed(step(n) + 5);
    }
    grok.user("the last question", 9_000)
        .agent_chunk(closing, 9_500)
        .turn_completed(9_500);

    for (agent, path) in [
        (Agent::Claude, claude.write().unwrap()),
        (Agent::Codex, codex.write().unwrap()),
        (Agent::Grok, grok.write().unwrap()),
    ] {
        let file = if path.is_dir() {
            path.join("updates.jsonl")
        } else {
            path.clone()
        };
        let size = std::fs::metadata(&file).unwrap().len();
        assert!(size > 3_000_000, "{agent}: {size}");
        let mut warnings = Warnings::default();
        let recent = read_recent_turns(agent, &path, 1 << 20, &mut warnings).unwrap();
        let last = recent.turns.last().unwrap();
        assert!(
            last.answers("req_1796008397548_abc123"),
            "{agent}: {last:?}"
        );
        let texts: Vec<&str> = recent
            .turns
            .iter()
            .flat_map(|turn| turn.items.iter())
            .filter_map(|item| match item {
                TurnItem::Message(m) => Some(m.text.as_str()),
                _ => None,
            })
            .collect();
        assert!(
            !texts.contains(&"the first answer"),
            "{agent}: read before the window"
        );
        assert!(
            recent.turns.len() < 150,
            "{agent}: about 1 MB of 3 MB, yet {} turns",
            recent.turns.len()
        );
        assert!(warnings.items.is_empty(), "{agent}: {:?}", warnings.items);

        let whole = read_recent_turns(agent, &path, size + 1, &mut warnings).unwrap();
        assert_eq!(whole.turns.len(), 302, "{agent}");
    }
}

/// A window that begins exactly where a line begins keeps that line.
#[test]
fn a_window_starting_on_a_line_keeps_it() {
    use cross_agent_stores::turns::read_recent_turns;
    use cross_agent_testkit::synthetic_stores::ClaudeTranscript;
    let home = tempfile::tempdir().unwrap();
    let mut t = ClaudeTranscript::new(home.path(), "/work/proj", "edge-1");
    t.user("q1", 1_000)
        .assistant_text("a1", 2_000)
        .user("q2", 3_000)
        .assistant_text("the final answer", 4_000);
    let path = t.write().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let body = &bytes[..bytes.len() - 1];
    let last_line_start = body.iter().rposition(|b| *b == b'\n').unwrap() + 1;
    let window = (bytes.len() - last_line_start) as u64;
    let recent = read_recent_turns(Agent::Claude, &path, window, &mut Warnings::default()).unwrap();
    let texts: Vec<&str> = recent
        .turns
        .iter()
        .flat_map(|turn| turn.items.iter())
        .filter_map(|item| match item {
            TurnItem::Message(m) => Some(m.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec!["the final answer"]);
}

/// A turn stopped while it waited (its agent killed at an approval) never finishes; the answer
/// it wrote before is the message carrying the request id, not whatever the agent wrote after.
#[test]
fn an_unfinished_turns_answer_is_the_message_carrying_the_request_id() {
    use cross_agent_stores::UnixMillis;
    use cross_agent_stores::turns::{Message, Transcript};

    let message = |role, text: &str, at| {
        TurnItem::Message(Message {
            role,
            text: text.to_owned(),
            timestamp: Some(UnixMillis(at)),
        })
    };
    let transcript = Transcript {
        agent: Agent::Claude,
        path: PathBuf::from("/nowhere.jsonl"),
        turns: vec![Turn {
            started_at: Some(UnixMillis(1_000)),
            ended_at: None,
            finished: false,
            items: vec![
                message(Role::User, "question", 1_000),
                message(Role::Assistant, &format!("the answer\n{REQ}"), 2_000),
                message(Role::Assistant, "written after, without the id", 3_000),
            ],
        }],
    };
    let after = UnixMillis(500);
    assert_eq!(
        transcript
            .last_assistant_message_answering(REQ, after)
            .map(|m| m.text.as_str()),
        Some(format!("the answer\n{REQ}").as_str())
    );
    assert_eq!(
        transcript
            .last_assistant_message_answering("req_1795990000000_zzzzzz", after)
            .map(|m| m.text.as_str()),
        None
    );
    assert_eq!(
        transcript
            .last_assistant_message_answering(REQ, UnixMillis(2_000))
            .map(|m| m.text.as_str()),
        None,
        "only messages written after the hand-over count"
    );
    assert_eq!(
        transcript
            .last_assistant_message_after(after)
            .map(|m| m.text.as_str()),
        Some("written after, without the id")
    );
}
