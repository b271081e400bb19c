//! The shell every reader shares (`lines::Reader`): a damaged line is counted and skipped, a
//! blank one is not a line, and `started` is the earliest timestamp even when lines are out of
//! order — checked through each of the three readers, whose timestamps differ in form.

use std::path::Path;

use cross_agent_protocol::timestamp::UnixMillis;
use cross_agent_usage::{Tokens, claude, codex, grok};
use pretty_assertions::assert_eq;
use serde_json::json;

/// `later`, a blank line, a damaged line, `earlier`, with the last line left without `\n`.
fn out_of_order(later: serde_json::Value, earlier: serde_json::Value) -> Vec<u8> {
    format!("{later}\n   \n{{\"type\": \"assis\n{earlier}").into_bytes()
}

#[test]
fn claude_counts_a_damaged_line_and_starts_at_the_earliest_timestamp() {
    let bytes = out_of_order(
        json!({"type": "user", "timestamp": "2026-01-02T00:00:10Z", "sessionId": "s"}),
        json!({"type": "user", "timestamp": "2026-01-02T00:00:05Z"}),
    );
    let file = claude::read(Path::new("/nowhere/p/s.jsonl"), &bytes);
    assert_eq!(file.bad_lines, 1);
    assert_eq!(
        file.started,
        UnixMillis::parse_rfc3339("2026-01-02T00:00:05Z")
    );
    assert_eq!(file.session_id.as_deref(), Some("s"));
}

#[test]
fn codex_counts_a_damaged_line_and_starts_at_the_earliest_timestamp() {
    let bytes = out_of_order(
        json!({"type": "session_meta", "timestamp": "2026-01-02T00:00:10Z",
            "payload": {"id": "t", "cwd": "/w"}}),
        json!({"type": "turn_context", "timestamp": "2026-01-02T00:00:05Z",
            "payload": {"model": "gpt-5"}}),
    );
    let file = codex::read(Path::new("/nowhere/rollout-t.jsonl"), &bytes);
    assert_eq!(file.bad_lines, 1);
    assert_eq!(
        file.started,
        UnixMillis::parse_rfc3339("2026-01-02T00:00:05Z")
    );
    assert_eq!(file.thread_id.as_deref(), Some("t"));
}

#[test]
fn grok_counts_a_damaged_line_and_starts_at_the_earliest_timestamp() {
    let turn = |at: f64, input: u64| {
        json!({"timestamp": at, "params": {"update": {"sessionUpdate": "turn_completed",
            "usage": {"inputTokens": input, "outputTokens": 2}}}})
    };
    let bytes = out_of_order(turn(1_700_000_010.25, 3), turn(1_700_000_005.5, 7));
    let file = grok::read(Path::new("/nowhere/sess/updates.jsonl"), &bytes);
    assert_eq!(file.bad_lines, 1);
    assert_eq!(file.started, Some(UnixMillis(1_700_000_005_500)));
    assert_eq!(file.session_id.as_deref(), Some("sess"));
    let inputs: Vec<Tokens> = file.turns.iter().map(|t| t.tokens).collect();
    let tokens = |input| Tokens {
        input,
        output: 2,
        ..Tokens::default()
    };
    assert_eq!(inputs, vec![tokens(3), tokens(7)]);
}
