//! What the Claude, Codex and Grok adapters cost per line, beside what reading a line costs at
//! all. A synthetic panel session (shapes from docs/observed/claude.md, docs/observed/codex.md and the ACP
//! prompt-turn docs, text deltas dominating as they do in a real turn) is fed through each
//! adapter; the floors are
//! splitting the same bytes into lines (a plain pipe's work) and validating each line as JSON
//! with `serde_json` (`IgnoredAny`, the least any reader of JSON must do). Prints figures;
//! asserts none. `cargo bench -p cross-agent-shim --bench wire_lines`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::ffi::OsString;
use std::hint::black_box;
use std::time::Instant;

use cross_agent_shim::adapter::{Action, PanelAdapter, Side};
use cross_agent_shim::claude::ClaudeAdapter;
use cross_agent_shim::codex::CodexAdapter;
use cross_agent_shim::grok::GrokAdapter;
use serde_json::json;

const TURNS: usize = 400;
const DELTAS_PER_TURN: usize = 250;

/// A line with its keys in the order the agents write them (`type`, `jsonrpc`, `method`, `id`
/// first, as the real Claude Code 2.1.332 and Codex 0.171.0 do), not serde_json's sorted order.
fn ordered(value: &serde_json::Value) -> Vec<u8> {
    let object = value.as_object().unwrap();
    let mut keys: Vec<&String> = ["type", "jsonrpc", "method", "id"]
        .iter()
        .filter_map(|key| object.get_key_value(*key).map(|(k, _)| k))
        .collect();
    keys.extend(
        object
            .keys()
            .filter(|key| !["type", "jsonrpc", "method", "id"].contains(&key.as_str())),
    );
    let fields: Vec<String> = keys
        .iter()
        .map(|key| format!("{}:{}", json!(key), object[key.as_str()]))
        .collect();
    format!("{{{}}}", fields.join(",")).into_bytes()
}

fn line(value: serde_json::Value) -> (Side, Vec<u8>) {
    (Side::Agent, ordered(&value))
}

fn from_extension(value: serde_json::Value) -> (Side, Vec<u8>) {
    (Side::Extension, ordered(&value))
}

fn claude_session() -> Vec<(Side, Vec<u8>)> {
    let session = "5ff355ef-b2f2-4ab0-bb7b-c6ff4230de7d";
    let mut lines = vec![from_extension(
        json!({"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}}),
    )];
    for turn in 0..TURNS {
        lines.push(from_extension(json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "next step please"}]}})));
        lines.push(line(json!({"type": "system", "subtype": "init", "cwd": "/work", "session_id": session, "tools": ["Bash", "Read", "Write"], "model": "claude-sonnet-4-5"})));
        for _ in 0..DELTAS_PER_TURN {
            lines.push(line(json!({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a few words of the answer "}}, "session_id": session, "parent_tool_use_id": null})));
        }
        lines.push(line(json!({"type": "assistant", "message": {"id": format!("msg_{turn}"), "role": "assistant", "content": [{"type": "text", "text": "the whole answer ".repeat(40)}]}, "parent_tool_use_id": null, "session_id": session})));
        lines.push(line(json!({"type": "result", "subtype": "success", "is_error": false, "duration_ms": 2100, "result": "the whole answer ".repeat(40), "session_id": session})));
    }
    lines
}

fn codex_session() -> Vec<(Side, Vec<u8>)> {
    let thread = "01a2297d-a5af-78f1-ae84-b85f642c0aee";
    let mut lines = vec![
        from_extension(
            json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "codex_vscode"}}}),
        ),
        line(json!({"id": 1, "result": {"userAgent": "codex_vscode/0.171.0"}})),
        from_extension(json!({"method": "initialized"})),
        from_extension(json!({"id": 2, "method": "thread/start", "params": {"cwd": "/work"}})),
        line(
            json!({"id": 2, "result": {"thread": {"id": thread, "status": {"type": "idle"}, "turns": []}}}),
        ),
    ];
    for turn in 0..TURNS {
        let turn_id = format!("turn-{turn}");
        let request = 10 + turn;
        lines.push(from_extension(json!({"id": request, "method": "turn/start", "params": {"threadId": thread, "input": [{"type": "text", "text": "next step please"}]}})));
        lines.push(line(
            json!({"id": request, "result": {"turn": {"id": turn_id, "status": "inProgress"}}}),
        ));
        lines.push(line(json!({"method": "thread/status/changed", "params": {"threadId": thread, "status": {"type": "active", "activeFlags": []}}, "emittedAtMs": 1})));
        lines.push(line(json!({"method": "turn/started", "params": {"threadId": thread, "turn": {"id": turn_id}}, "emittedAtMs": 1})));
        for _ in 0..DELTAS_PER_TURN {
            lines.push(line(json!({"method": "item/agentMessage/delta", "params": {"threadId": thread, "turnId": turn_id, "itemId": "msg_acc", "delta": "a few words of the answer "}, "emittedAtMs": 1_795_992_431_115_u64})));
        }
        lines.push(line(json!({"method": "item/completed", "params": {"item": {"type": "agentMessage", "id": "msg_acc", "text": "the whole answer ".repeat(40)}, "threadId": thread, "turnId": turn_id}, "emittedAtMs": 1})));
        lines.push(line(json!({"method": "thread/tokenUsage/updated", "params": {"threadId": thread, "turnId": turn_id, "tokenUsage": {"total": {"totalTokens": 10}}}})));
        lines.push(line(json!({"method": "thread/status/changed", "params": {"threadId": thread, "status": {"type": "idle"}}, "emittedAtMs": 1})));
        lines.push(line(json!({"method": "turn/completed", "params": {"threadId": thread, "turn": {"id": turn_id, "items": [], "status": "completed"}}, "emittedAtMs": 1})));
    }
    lines
}

fn grok_session() -> Vec<(Side, Vec<u8>)> {
    let session = "sess_abc";
    let mut lines = vec![
        from_extension(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        ),
        line(json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})),
        from_extension(
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/work", "mcpServers": []}}),
        ),
        line(json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": session}})),
    ];
    for turn in 0..TURNS {
        let request = 10 + turn;
        lines.push(from_extension(json!({"jsonrpc": "2.0", "id": request, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "next step please"}]}})));
        for chunk in 0..DELTAS_PER_TURN {
            let kind = if chunk % 5 == 0 {
                "agent_thought_chunk"
            } else {
                "agent_message_chunk"
            };
            lines.push(line(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": {"sessionUpdate": kind, "content": {"type": "text", "text": "a few words of the answer "}}}})));
        }
        lines.push(line(
            json!({"jsonrpc": "2.0", "id": request, "result": {"stopReason": "end_turn"}}),
        ));
    }
    lines
}

struct Figure {
    nanos_per_line: f64,
    megabytes_per_second: f64,
    p99_micros: f64,
}

fn measure(lines: &[(Side, Vec<u8>)], mut per_line: impl FnMut(Side, &[u8])) -> Figure {
    let bytes: usize = lines.iter().map(|(_, l)| l.len() + 1).sum();
    let mut each = Vec::with_capacity(lines.len());
    let started = Instant::now();
    for (side, line) in lines {
        let at = Instant::now();
        per_line(*side, line);
        each.push(at.elapsed().as_nanos());
    }
    let elapsed = started.elapsed().as_secs_f64();
    each.sort_unstable();
    let p99 = each[each.len() * 99 / 100] as f64 / 1_000.0;
    Figure {
        nanos_per_line: elapsed * 1e9 / lines.len() as f64,
        megabytes_per_second: bytes as f64 / elapsed / 1e6,
        p99_micros: p99,
    }
}

fn report(wire: &str, lines: &[(Side, Vec<u8>)], adapter: &mut dyn PanelAdapter) {
    // The plain pipe's own work on the same bytes: find each line's end.
    let mut joined = Vec::new();
    for (_, line) in lines {
        joined.extend_from_slice(line);
        joined.push(b'\n');
    }
    let started = Instant::now();
    let count = memchr::memchr_iter(b'\n', &joined).count();
    let split = started.elapsed().as_secs_f64();
    black_box(count);
    let validate = measure(lines, |_, line| {
        black_box(serde_json::from_slice::<serde::de::IgnoredAny>(line).ok());
    });
    let mut out: Vec<Action> = Vec::new();
    let mut now = 1_795_992_430_000_u64;
    let adapted = measure(lines, |side, line| {
        now += 1;
        out.clear();
        adapter.on_line(side, line, now, &mut out);
        black_box(&out);
    });
    println!(
        "{wire}: {} lines, {:.1} MB",
        lines.len(),
        joined.len() as f64 / 1e6
    );
    println!(
        "  split into lines (floor)      {:>8.0} ns/line {:>9.0} MB/s",
        split * 1e9 / lines.len() as f64,
        joined.len() as f64 / split / 1e6
    );
    println!(
        "  serde_json validate (peer)    {:>8.0} ns/line {:>9.0} MB/s  p99 {:>6.1} µs",
        validate.nanos_per_line, validate.megabytes_per_second, validate.p99_micros
    );
    println!(
        "  adapter on_line               {:>8.0} ns/line {:>9.0} MB/s  p99 {:>6.1} µs  ({:.2}× the peer's time)",
        adapted.nanos_per_line,
        adapted.megabytes_per_second,
        adapted.p99_micros,
        adapted.nanos_per_line / validate.nanos_per_line
    );
}

/// The 1 MB pasted image from the extension, as the runtime hands it to the Claude adapter: its
/// head (the first read's 64 KB) asked whether it may stream, then the 16 KB head it keeps,
/// then the turn's `result`. Beside it, the floor: finding the line's end in its MB.
fn report_image() {
    const IMAGES: usize = 200;
    let image = format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{}"}}}}]}},"parent_tool_use_id":null,"session_id":""}}"#,
        "QUJD".repeat(256 * 1024)
    );
    let result = ordered(
        &json!({"type": "result", "subtype": "success", "is_error": false, "result": "seen", "session_id": "s"}),
    );
    let started = Instant::now();
    for _ in 0..IMAGES {
        black_box(memchr::memchr(b'\n', black_box(image.as_bytes())));
    }
    let floor = started.elapsed().as_secs_f64() / IMAGES as f64;
    let mut claude = ClaudeAdapter::new(&[], Some("/work".to_owned()), 0);
    let mut out: Vec<Action> = Vec::new();
    claude.on_line(
        Side::Extension,
        br#"{"type":"control_request","request_id":"i","request":{"subtype":"initialize"}}"#,
        1,
        &mut out,
    );
    let mut held = 0;
    let started = Instant::now();
    for at in 0..IMAGES as u64 {
        out.clear();
        if !claude.streams_from_head(
            Side::Extension,
            &image.as_bytes()[..64 * 1024],
            at,
            &mut out,
        ) {
            held += 1;
        }
        claude.on_line(
            Side::Extension,
            &image.as_bytes()[..16 * 1024],
            at,
            &mut out,
        );
        claude.on_line(Side::Agent, &result, at, &mut out);
        black_box(&out);
    }
    let adapted = started.elapsed().as_secs_f64() / IMAGES as f64;
    println!("claude 1 MB pasted image: {IMAGES} lines, {held} held back from streaming");
    println!(
        "  find its end (floor)          {:>8.0} ns/line",
        floor * 1e9
    );
    println!(
        "  adapter head + on_line        {:>8.0} ns/line  ({:.3}× the floor)",
        adapted * 1e9,
        adapted / floor
    );
}

fn main() {
    let mut claude = ClaudeAdapter::new(&[], Some("/work".to_owned()), 0);
    report("claude stream-json", &claude_session(), &mut claude);
    report_image();
    let mut codex = CodexAdapter::new(&[OsString::from("app-server")]);
    report("codex app-server", &codex_session(), &mut codex);
    let mut grok = GrokAdapter::new(&[OsString::from("agent"), OsString::from("stdio")]);
    report("grok acp", &grok_session(), &mut grok);
}
