//! Claude Code transcripts written line by line the way Claude writes them (one reply over
//! several lines, sub-agents under `<session>/subagents/`, replies copied into a resumed
//! session), each total checked against a hand-computed one.

use std::path::Path;

use cross_agent_protocol::Agent;
use cross_agent_usage::claude::{self, ClaudeReader};
use cross_agent_usage::{FileUsage, GroupBy, PriceTable, Report, Tokens, account};
use pretty_assertions::assert_eq;
use serde_json::json;

#[allow(clippy::too_many_arguments)]
pub fn assistant(
    session: &str,
    msg: &str,
    req: &str,
    at: &str,
    model: &str,
    usage: serde_json::Value,
    sidechain: bool,
) -> String {
    json!({
        "type": "assistant", "sessionId": session, "requestId": req, "timestamp": at,
        "isSidechain": sidechain, "cwd": "/work/shop", "uuid": format!("u-{msg}-{at}"),
        "message": {"id": msg, "model": model, "role": "assistant",
            "content": [{"type": "text", "text": "x"}], "usage": usage},
    })
    .to_string()
}

fn usage(input: u64, output: u64, w5: u64, w1h: u64, read: u64) -> serde_json::Value {
    json!({"input_tokens": input, "output_tokens": output,
        "cache_creation_input_tokens": w5 + w1h, "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h}})
}

fn file(path: &str, lines: &[String]) -> FileUsage {
    let text = lines.join("\n") + "\n";
    FileUsage::Claude(claude::read(Path::new(path), text.as_bytes()))
}

const SONNET: &str = "claude-sonnet-4-5-20250929";

/// One reply on three lines — the first two with a partial output count, as older Claude Code
/// wrote — counts once with the last line's usage; a `<synthetic>` line counts nothing; a reply
/// without the 5 m / 1 h split counts its cache writes as 5 m.
#[test]
fn one_reply_on_several_lines_counts_once_with_its_last_usage() {
    let s = "s1";
    let lines = [
        assistant(
            s,
            "m1",
            "r1",
            "2026-12-01T10:00:00.000Z",
            SONNET,
            usage(10, 1, 100, 50, 1000),
            false,
        ),
        assistant(
            s,
            "m1",
            "r1",
            "2026-12-01T10:00:00.100Z",
            SONNET,
            usage(10, 1, 100, 50, 1000),
            false,
        ),
        assistant(
            s,
            "m1",
            "r1",
            "2026-12-01T10:00:00.200Z",
            SONNET,
            usage(10, 120, 100, 50, 1000),
            false,
        ),
        assistant(
            s,
            "m2",
            "r2",
            "2026-12-01T10:01:00.000Z",
            SONNET,
            json!({"input_tokens": 7, "output_tokens": 30, "cache_creation_input_tokens": 40, "cache_read_input_tokens": 0}),
            false,
        ),
        assistant(
            s,
            "m3",
            "r3",
            "2026-12-01T10:02:00.000Z",
            "<synthetic>",
            usage(0, 0, 0, 0, 0),
            false,
        ),
    ];
    let files = [file("/p/-work-shop/s1.jsonl", &lines)];
    let acc = account(&files);
    assert_eq!(acc.charges().count(), 2);
    let report = Report::build(
        &acc,
        &PriceTable::shipped().unwrap(),
        GroupBy::Session,
        None,
    );
    // m1: in 10, out 120, 5m 100, 1h 50, read 1000. m2: in 7, out 30, 5m 40.
    assert_eq!(
        report.total.tokens,
        Tokens {
            input: 17,
            output: 150,
            cache_write_5m: 140,
            cache_write_1h: 50,
            cache_read: 1000
        }
    );
    // Sonnet 4.5 ($/MTok): in 3, out 15, 5m 3.75, 1h 6, read 0.3 →
    // 17×3 + 150×15 + 140×3.75 + 50×6 + 1000×0.3 = 51 + 2250 + 525 + 300 + 300 = 3426 µ$.
    assert_eq!(report.total.cost().map(|m| m.micro_dollars()), Some(3426));
}

/// Fed in pieces that cut a line in half, the reader gives what it gives on the whole file.
#[test]
fn appended_bytes_read_in_pieces_match_the_whole_file() {
    let lines = [
        assistant(
            "s1",
            "m1",
            "r1",
            "2026-12-01T10:00:00.000Z",
            SONNET,
            usage(10, 1, 0, 0, 0),
            false,
        ),
        assistant(
            "s1",
            "m1",
            "r1",
            "2026-12-01T10:00:00.200Z",
            SONNET,
            usage(10, 99, 0, 0, 0),
            false,
        ),
    ];
    let text = lines.join("\n") + "\n";
    let path = Path::new("/p/x/s1.jsonl");
    let whole = claude::read(path, text.as_bytes());
    let mut reader = ClaudeReader::new(path);
    let cut = text.len() / 3;
    reader.feed(&text.as_bytes()[..cut]);
    reader.feed(&text.as_bytes()[cut..]);
    assert_eq!(reader.finish(), whole);
    assert_eq!(whole.messages.get(0).map(|m| m.tokens.output), Some(99));
}

/// A reader given back its spare room between reads (as the live index does after each) still
/// finds an earlier reply by its key when the file goes on with it: the reply is one, with its
/// last usage, and a new reply after it is its own.
#[test]
fn a_shrunk_reader_still_finds_earlier_replies_when_the_file_grows() {
    let line = |msg: &str, at: &str, output: u64| {
        assistant(
            "s1",
            msg,
            &format!("r-{msg}"),
            at,
            SONNET,
            usage(10, output, 0, 0, 0),
            false,
        )
    };
    let lines = [
        line("m1", "2026-12-01T10:00:00.000Z", 1),
        line("m2", "2026-12-01T10:00:01.000Z", 2),
        line("m3", "2026-12-01T10:00:02.000Z", 3),
        line("m1", "2026-12-01T10:00:03.000Z", 50),
        line("m4", "2026-12-01T10:00:04.000Z", 4),
        line("m2", "2026-12-01T10:00:05.000Z", 60),
    ];
    let text = lines.join("\n") + "\n";
    let path = Path::new("/p/x/s1.jsonl");
    let whole = claude::read(path, text.as_bytes());
    assert_eq!(whole.messages.len(), 4);
    let mut reader = ClaudeReader::new(path);
    for line in &lines {
        reader.feed(format!("{line}\n").as_bytes());
        reader.shrink();
    }
    assert_eq!(reader.finish(), whole);
}

/// A sub-agent's transcript under `<session>/subagents/` counts for the parent session; a reply
/// copied into a resumed session (same message and request id, later) counts once, for the
/// session that made it.
#[test]
fn subagents_count_for_their_parent_and_a_copied_reply_for_its_maker() {
    let parent = [assistant(
        "p1",
        "m1",
        "r1",
        "2026-12-01T10:00:00.000Z",
        SONNET,
        usage(100, 10, 0, 0, 0),
        false,
    )];
    // The folder names the parent even where the lines carry another id.
    let sub = [assistant(
        "agent-a1",
        "m2",
        "r2",
        "2026-12-01T10:00:05.000Z",
        "claude-haiku-4-5-20251001",
        usage(200, 20, 0, 0, 0),
        true,
    )];
    let resumed = [
        assistant(
            "r9",
            "m1",
            "r1",
            "2026-12-01T11:00:00.000Z",
            SONNET,
            usage(100, 10, 0, 0, 0),
            false,
        ),
        assistant(
            "r9",
            "m3",
            "r3",
            "2026-12-01T11:00:01.000Z",
            SONNET,
            usage(1, 2, 0, 0, 0),
            false,
        ),
    ];
    let files = [
        file("/p/-work-shop/p1.jsonl", &parent),
        file("/p/-work-shop/p1/subagents/agent-a1.jsonl", &sub),
        file("/p/-work-shop/r9.jsonl", &resumed),
    ];
    let acc = account(&files);
    assert_eq!(acc.duplicates_skipped, 1);
    let report = Report::build(
        &acc,
        &PriceTable::shipped().unwrap(),
        GroupBy::Session,
        None,
    );
    let rows: Vec<(String, u64, u64, Option<u128>)> = report
        .rows
        .iter()
        .map(|r| {
            (
                r.key.clone(),
                r.calls,
                r.tokens.total(),
                r.cost().map(|m| m.micro_dollars()),
            )
        })
        .collect();
    // p1: m1 (Sonnet: 100×3 + 10×15 = 450) + the sub-agent's m2 (Haiku 4.5: 200×1 + 20×5 = 300).
    // r9: only its own m3 (1×3 + 2×15 = 33).
    assert_eq!(
        rows,
        vec![
            ("p1".to_owned(), 2, 330, Some(750)),
            ("r9".to_owned(), 1, 3, Some(33))
        ]
    );
    assert_eq!(report.rows[0].agent, Some(Agent::Claude));
}

/// A model with no price: its tokens are counted and its cost is unknown, never 0.
#[test]
fn an_unknown_model_is_an_unknown_cost_not_zero() {
    let lines = [
        assistant(
            "s1",
            "m1",
            "r1",
            "2026-12-01T10:00:00.000Z",
            "claude-opus-9-9",
            usage(5, 5, 0, 0, 0),
            false,
        ),
        assistant(
            "s1",
            "m2",
            "r2",
            "2026-12-01T10:00:01.000Z",
            SONNET,
            usage(1, 0, 0, 0, 0),
            false,
        ),
    ];
    let acc = account(&[file("/p/x/s1.jsonl", &lines)]);
    let report = Report::build(&acc, &PriceTable::shipped().unwrap(), GroupBy::Model, None);
    assert_eq!(report.total.cost(), None);
    assert_eq!(report.total.priced_cost.micro_dollars(), 3);
    assert_eq!(report.total.unpriced_calls, 1);
    let unknown = report
        .rows
        .iter()
        .find(|r| r.key == "claude-opus-9-9")
        .unwrap();
    assert_eq!((unknown.tokens.total(), unknown.cost()), (10, None));
    assert_eq!(
        report.to_json()["total"]["cost_usd"],
        serde_json::Value::Null
    );
}
