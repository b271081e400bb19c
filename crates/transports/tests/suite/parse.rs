//! Output parsing, on lines shaped as the real CLIs print them (docs/observed/claude.md,
//! docs/observed/codex.md, Claude Code 2.1.332, Codex 0.171.0).

use cross_agent_protocol::bridge::Agent;
use cross_agent_transports::parse::{OutputParser, Parsed};
use pretty_assertions::assert_eq;

fn parse(agent: Agent, lines: &[&str]) -> Parsed {
    let mut parser = OutputParser::new(agent);
    for line in lines {
        parser.feed_line(line);
    }
    parser.finish()
}

#[test]
fn claude_result_and_denials() {
    let ok = parse(
        Agent::Claude,
        &[
            r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s-1","result":"Hello there","permission_denials":[]}"#,
        ],
    );
    assert_eq!(
        ok,
        Parsed {
            session_id: Some("s-1".into()),
            answer: Some("Hello there".into()),
            failure: None,
            approval_blocked: None,
        }
    );
    let denied = parse(
        Agent::Claude,
        &[
            r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s-1","result":"let me run that","permission_denials":[{"tool_name":"Bash","tool_use_id":"t"}]}"#,
        ],
    );
    assert_eq!(denied.approval_blocked.as_deref(), Some("Bash"));
    let failed = parse(
        Agent::Claude,
        &[
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s","errors":["boom"]}"#,
        ],
    );
    assert_eq!(
        failed.failure.as_deref(),
        Some("error_during_execution (boom)")
    );
}

#[test]
fn codex_thread_last_message_and_failures() {
    let ok = parse(
        Agent::Codex,
        &[
            r#"{"type":"thread.started","thread_id":"01a2"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"first"}}"#,
            r#"{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"last"}}"#,
            r#"{"type":"turn.completed","usage":{}}"#,
        ],
    );
    assert_eq!(ok.session_id.as_deref(), Some("01a2"));
    assert_eq!(ok.answer.as_deref(), Some("last"));
    let blocked = parse(
        Agent::Codex,
        &[
            r#"{"type":"item.completed","item":{"id":"i0","type":"mcp_tool_call","tool":"echo","status":"failed","error":{"message":"MCP tool call requires approval, but approval policy is never"}}}"#,
        ],
    );
    assert_eq!(blocked.approval_blocked.as_deref(), Some("echo"));
    let failed = parse(
        Agent::Codex,
        &[r#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#],
    );
    assert_eq!(failed.failure.as_deref(), Some("stream disconnected"));
}

/// Grok Build 0.2.101's streaming-json lines as publicly recorded in Anantys-oss/koan
/// (`koan/tests/grok_samples.py`, captured 2026-07-15; ids replaced there by placeholders).
#[test]
fn grok_text_deltas_join_and_thoughts_and_the_end_line_are_not_the_answer() {
    let parsed = parse(
        Agent::Grok,
        &[
            r#"{"type":"thought","data":"Run"}"#,
            r#"{"type":"thought","data":" the command."}"#,
            r#"{"type":"text","data":"hello"}"#,
            r#"{"type":"text","data":"-"}"#,
            r#"{"type":"text","data":"from"}"#,
            r#"{"type":"text","data":"-tool"}"#,
            r#"{"type":"end","stopReason":"EndTurn","sessionId":"sess-fixture-002","requestId":"req-fixture-002","usage":{"input_tokens":21550,"output_tokens":71},"num_turns":2,"modelUsage":{"grok-4.5":{"inputTokens":21550}}}"#,
        ],
    );
    assert_eq!(parsed.answer.as_deref(), Some("hello-from-tool"));
    assert_eq!(parsed.session_id.as_deref(), Some("sess-fixture-002"));
    assert_eq!(parsed.failure, None);
    assert_eq!(parsed.approval_blocked, None);
}

/// The same recording's truncated stream (no `end`) keeps what was said; `Cancelled` (as the
/// koan provider docs describe a permission cancel) marks the turn approval-blocked whatever
/// its case.
#[test]
fn a_grok_stream_cut_short_keeps_its_text_and_cancelled_is_an_approval_stop() {
    let cut = parse(
        Agent::Grok,
        &[
            r#"{"type":"thought","data":"Working"}"#,
            r#"{"type":"text","data":"Partial"}"#,
            r#"{"type":"text","data":" progress"}"#,
        ],
    );
    assert_eq!(cut.answer.as_deref(), Some("Partial progress"));
    for reason in ["Cancelled", "cancelled"] {
        let end = format!(r#"{{"type":"end","stopReason":"{reason}","sessionId":"s"}}"#);
        let stopped = parse(
            Agent::Grok,
            &[r#"{"type":"text","data":"let me run that"}"#, end.as_str()],
        );
        assert_eq!(
            stopped.approval_blocked.as_deref(),
            Some("a tool call"),
            "{reason}"
        );
    }
}
