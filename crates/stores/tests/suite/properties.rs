//! Property tests for every line parser: arbitrary bytes never panic, and reading a file in
//! pieces — stopping at any byte, persisting the fold with serde, resuming from the returned
//! position — gives the same session as reading it whole.

use std::path::{Path, PathBuf};

use cross_agent_stores::claude::ClaudeFold;
use cross_agent_stores::codex::{CodexFold, ThreadNames};
use cross_agent_stores::grok::GrokFold;
use cross_agent_stores::lines::{LineSink, Position, read_lines_from};
use cross_agent_stores::turns::TurnReader;
use cross_agent_stores::{Agent, TranscriptFold, Warnings};
use proptest::prelude::*;

use super::reader_support::fixture;
use cross_agent_stores::skim;

/// Every fixture transcript of one agent, with the path a fold is asked about.
fn transcripts(agent: Agent) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![fixture(agent.as_str())];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl")
                && !path.ends_with("session_index.jsonl")
            {
                out.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Feeds `bytes` to a sink as complete lines only, from `from`.
fn feed<S: LineSink>(
    bytes: &[u8],
    from: Position,
    sink: &mut S,
    warnings: &mut Warnings,
) -> Position {
    let start = usize::try_from(from.offset).unwrap().min(bytes.len());
    let mut reader = &bytes[start..];
    read_lines_from(
        &mut reader,
        Path::new("mem.jsonl"),
        from,
        false,
        sink,
        warnings,
    )
    .unwrap()
}

/// Reads `bytes` whole, and again in pieces cut at `cuts`, persisting the fold between pieces.
fn whole_and_pieces<F: TranscriptFold>(bytes: &[u8], cuts: &[usize]) -> (F, F) {
    let mut warnings = Warnings::default();
    let mut whole = F::default();
    feed(bytes, Position::default(), &mut whole, &mut warnings);

    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.push(bytes.len());
    let mut fold = F::default();
    let mut pos = Position::default();
    for cut in cuts {
        pos = feed(&bytes[..cut], pos, &mut fold, &mut warnings);
        let saved = serde_json::to_vec(&fold).unwrap();
        fold = serde_json::from_slice(&saved).unwrap();
    }
    assert_eq!(
        pos.offset,
        bytes.len() as u64,
        "every fixture ends in a newline"
    );
    (whole, fold)
}

fn sidecar_of(transcript: &Path) -> Option<Vec<u8>> {
    std::fs::read(transcript.with_file_name("summary.json")).ok()
}

/// Bytes that are mostly JSON-lines-like: pieces of real records, braces, quotes, newlines and
/// arbitrary bytes.
fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}".to_vec()),
        Just(b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\"}],\"stop_reason\":\"tool_use\"}}".to_vec()),
        Just(b"{\"type\":\"custom-title\",\"customTitle\":\"n\"}".to_vec()),
        Just(b"{\"timestamp\":\"2026-11-01T00:00:00Z\",\"type\":\"session_meta\",\"payload\":{\"id\":\"t\",\"source\":{\"subagent\":1}}}".to_vec()),
        Just(b"{\"type\":\"event_msg\",\"payload\":{\"type\":\"task_started\"}}".to_vec()),
        Just(b"{\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"output\":{\"x\":[]}}}".to_vec()),
        Just(b"{\"timestamp\":1e308,\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"user_message_chunk\",\"content\":[]}}}".to_vec()),
        Just(b"{\"id\":\"a\",\"thread_name\":\"b\",\"updated_at\":\"9999-99-99T99:99:99Z\"}".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"{\"".to_vec()),
        Just(b"\"}".to_vec()),
        Just(b"[".to_vec()),
        Just(b"\\u0000".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..16),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

fn no_panic<S: LineSink>(mut sink: S, bytes: &[u8]) {
    let mut warnings = Warnings::default();
    let mut reader = bytes;
    read_lines_from(
        &mut reader,
        Path::new("p.jsonl"),
        Position::default(),
        true,
        &mut sink,
        &mut warnings,
    )
    .unwrap();
}

fn every_parser(bytes: &[u8]) {
    let path = Path::new("/x/y/updates.jsonl");
    let mut claude = ClaudeFold::default();
    let mut codex = CodexFold::default();
    let mut grok = GrokFold::default();
    let mut warnings = Warnings::default();
    for fold in [&mut claude as &mut dyn LineSinkDyn, &mut codex, &mut grok] {
        let mut reader = bytes;
        fold.read(&mut reader, &mut warnings);
    }
    let _ = (
        claude.session(path),
        codex.session(path),
        grok.session(path),
    );
    grok.feed_sidecar(bytes, path, &mut warnings);
    let _ = grok.session(path);
    no_panic(ThreadNames::default(), bytes);
    for agent in Agent::ALL {
        no_panic(TurnReader::new(agent, path), bytes);
        let mut reader = TurnReader::new(agent, path);
        let mut r = bytes;
        read_lines_from(
            &mut r,
            path,
            Position::default(),
            true,
            &mut reader,
            &mut warnings,
        )
        .unwrap();
        let t = reader.into_transcript();
        let _ = (
            t.is_idle(),
            t.finished_turn_answering("req_1795990000000_abcdef", None),
        );
        for turn in &t.turns {
            let _ = (turn.closing_line(), turn.closing_request_ids());
        }
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = cross_agent_stores::UnixMillis::parse_rfc3339(text);
        let _ = cross_agent_stores::turns::request_ids(text);
        let _ = cross_agent_stores::grok::decode_folder_name(text);
    }
}

/// Object-safe reading for the loop above.
trait LineSinkDyn {
    fn read(&mut self, reader: &mut &[u8], warnings: &mut Warnings);
}

impl<S: LineSink> LineSinkDyn for S {
    fn read(&mut self, reader: &mut &[u8], warnings: &mut Warnings) {
        read_lines_from(
            reader,
            Path::new("p.jsonl"),
            Position::default(),
            true,
            self,
            warnings,
        )
        .unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        every_parser(&bytes);
    }

    #[test]
    fn json_like_bytes_never_panic(bytes in jsonish()) {
        every_parser(&bytes);
    }

    #[test]
    fn claude_split_anywhere_and_resumed_equals_whole(cuts in proptest::collection::vec(any::<usize>(), 1..4)) {
        for (path, bytes) in transcripts(Agent::Claude) {
            let (whole, pieces) = whole_and_pieces::<ClaudeFold>(&bytes, &cuts);
            prop_assert_eq!(whole.session(&path), pieces.session(&path));
            prop_assert_eq!(whole, pieces);
        }
    }

    #[test]
    fn codex_split_anywhere_and_resumed_equals_whole(cuts in proptest::collection::vec(any::<usize>(), 1..4)) {
        for (path, bytes) in transcripts(Agent::Codex) {
            let (whole, pieces) = whole_and_pieces::<CodexFold>(&bytes, &cuts);
            prop_assert_eq!(whole.session(&path), pieces.session(&path));
            prop_assert_eq!(whole, pieces);
        }
    }

    #[test]
    fn grok_split_anywhere_and_resumed_equals_whole(cuts in proptest::collection::vec(any::<usize>(), 1..4)) {
        for (path, bytes) in transcripts(Agent::Grok) {
            let (mut whole, mut pieces) = whole_and_pieces::<GrokFold>(&bytes, &cuts);
            if let Some(summary) = sidecar_of(&path) {
                let mut w = Warnings::default();
                whole.feed_sidecar(&summary, &path, &mut w);
                pieces.feed_sidecar(&summary, &path, &mut w);
            }
            prop_assert_eq!(whole.session(&path), pieces.session(&path));
            prop_assert_eq!(whole, pieces);
        }
    }

    #[test]
    fn thread_names_split_anywhere_and_resumed_equals_whole(cuts in proptest::collection::vec(any::<usize>(), 1..4)) {
        let bytes = std::fs::read(fixture("codex").join("session_index.jsonl")).unwrap();
        let mut warnings = Warnings::default();
        let mut whole = ThreadNames::default();
        feed(&bytes, Position::default(), &mut whole, &mut warnings);
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(bytes.len());
        let mut names = ThreadNames::default();
        let mut pos = Position::default();
        for cut in cuts {
            pos = feed(&bytes[..cut], pos, &mut names, &mut warnings);
            names = serde_json::from_slice(&serde_json::to_vec(&names).unwrap()).unwrap();
        }
        prop_assert_eq!(whole, names);
    }

    #[test]
    fn skimmer_never_panics(bytes in jsonish()) {
        let _ = skim::for_each_field(&bytes, |_, v| {
            let _ = (skim::items(v), skim::string(v), skim::field(v, b"type"));
            true
        });
        let _ = skim::items(&bytes);
    }

    #[test]
    fn timestamps_round_trip(ms in -62_135_596_800_000i64..253_402_300_799_999i64) {
        let t = cross_agent_stores::UnixMillis(ms);
        let text = t.to_rfc3339();
        prop_assert_eq!(cross_agent_stores::UnixMillis::parse_rfc3339(&text), Some(t));
    }
}

/// The skimmer agrees with serde on every line of every fixture: the same keys, and each raw
/// value parses to the same JSON.
#[test]
fn skimmer_agrees_with_serde_on_fixtures() {
    // The agents with JSON-lines transcripts (Copilot's catalog is SQLite).
    for agent in [Agent::Claude, Agent::Codex, Agent::Grok] {
        for (path, bytes) in transcripts(agent) {
            for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let value: serde_json::Value = serde_json::from_slice(line).unwrap();
                let mut seen = Vec::new();
                skim::for_each_field(line, |k, v| {
                    let key = std::str::from_utf8(k).unwrap().to_owned();
                    let parsed: serde_json::Value = serde_json::from_slice(v).unwrap();
                    assert_eq!(Some(&parsed), value.get(&key), "{}: {key}", path.display());
                    seen.push(key);
                    true
                })
                .unwrap();
                assert_eq!(seen.len(), value.as_object().unwrap().len());
            }
        }
    }
    assert!(skim::for_each_field(b"{\"a\":1} x", |_, _| true).is_err());
    assert!(skim::for_each_field(b"{\"a\":1,}", |_, _| true).is_err());
    assert!(skim::for_each_field(b"not json", |_, _| true).is_err());
    assert_eq!(skim::string(br#""a\"b""#).as_deref(), Some("a\"b"));
}
