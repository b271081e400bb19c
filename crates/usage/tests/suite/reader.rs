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
        file.started.get(),
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
        file.started.get(),
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
    assert_eq!(file.started.get(), Some(UnixMillis(1_700_000_005_500)));
    assert_eq!(file.session_id.as_deref(), Some("sess"));
    let inputs: Vec<Tokens> = file.turns.iter().map(|t| t.tokens).collect();
    let tokens = |input| Tokens {
        input,
        output: 2,
        ..Tokens::default()
    };
    assert_eq!(inputs, vec![tokens(3), tokens(7)]);
}

/// A file read from disk goes through the reader in pieces (a line split across two pieces is
/// one line), and a transcript that is a symbolic link is refused by name, not followed.
#[test]
fn a_file_is_read_in_pieces_and_a_linked_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let line = |i: usize| {
        json!({"type": "assistant", "timestamp": "2026-01-02T00:00:05Z", "sessionId": "s",
               "requestId": format!("req_{i}"),
               "message": {"id": format!("msg_{i}"), "model": "claude-sonnet-4-5",
                           "content": [{"type": "text", "text": "x".repeat(3000)}],
                           "usage": {"input_tokens": 10, "output_tokens": 1}}})
        .to_string()
    };
    // More than one 1 MiB piece, so lines straddle the pieces' edges.
    let text: String = (0..600).map(|i| line(i) + "\n").collect();
    assert!(text.len() > 1 << 20);
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, &text).unwrap();
    let Some(cross_agent_usage::FileUsage::Claude(file)) =
        cross_agent_usage::scan::read_one(cross_agent_protocol::Agent::Claude, &path, false)
            .unwrap()
    else {
        panic!("a Claude file");
    };
    assert_eq!(file.bad_lines, 0);
    assert_eq!(file.messages.len(), 600);

    let link = dir.path().join("linked.jsonl");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let refused =
        cross_agent_usage::scan::read_one(cross_agent_protocol::Agent::Claude, &link, false)
            .unwrap_err();
    assert!(
        refused.contains("linked.jsonl") && refused.contains("symbolic link"),
        "{refused}"
    );
}
