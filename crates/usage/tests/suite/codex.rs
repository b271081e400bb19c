//! Codex rollouts written the way Codex writes them: per-call `token_count` events with running
//! totals, repeated events, forks whose rollouts start with a copy of the base's history, and a
//! spawned sub-agent — each total checked against a hand-computed one.

use std::path::Path;

use cross_agent_protocol::timestamp::UnixMillis;
use cross_agent_usage::{
    FileUsage, GroupBy, Money, PriceTable, Report, Tokens, account, codex, limits,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn line(at: &str, kind: &str, payload: Value) -> String {
    json!({"timestamp": at, "type": kind, "payload": payload}).to_string()
}

pub fn meta(at: &str, id: &str, extra: Value) -> String {
    let mut payload = json!({"id": id, "timestamp": at, "cwd": "/work/shop", "source": "exec",
        "originator": "codex_exec", "cli_version": "0.171.0"});
    if let (Some(p), Some(e)) = (payload.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    line(at, "session_meta", payload)
}

pub fn model(at: &str, model: &str) -> String {
    line(
        at,
        "turn_context",
        json!({"model": model, "cwd": "/work/shop"}),
    )
}

/// A `token_count` event: (input, cached, output) for this call and the running total.
pub fn count(at: &str, last: (u64, u64, u64), total: (u64, u64, u64), used_percent: f64) -> String {
    let usage = |(i, c, o): (u64, u64, u64)| {
        json!({"input_tokens": i, "cached_input_tokens": c, "output_tokens": o,
            "reasoning_output_tokens": 0, "total_tokens": i + o})
    };
    line(
        at,
        "event_msg",
        json!({"type": "token_count",
        "info": {"total_token_usage": usage(total), "last_token_usage": usage(last), "model_context_window": 272000},
        "rate_limits": {"primary": {"used_percent": used_percent, "window_minutes": 300, "resets_at": 1796000000},
            "secondary": null}}),
    )
}

fn file(path: &str, lines: &[String]) -> FileUsage {
    FileUsage::Codex(codex::read(
        Path::new(path),
        (lines.join("\n") + "\n").as_bytes(),
    ))
}

pub const T0: &str = "01a30000-0000-7000-8000-000000000000";
pub const F1: &str = "01a30000-0000-7000-8000-0000000000f1";
pub const F2: &str = "01a30000-0000-7000-8000-0000000000f2";
pub const S1: &str = "01a30000-0000-7000-8000-0000000000a1";

fn base_history(at: &str) -> Vec<String> {
    vec![
        model(at, "gpt-5"),
        count(at, (1000, 400, 100), (1000, 400, 100), 10.0),
        count(at, (2000, 1500, 50), (3000, 1900, 150), 12.0),
    ]
}

/// The rollouts of [`store`] as (file name, lines): the base T0, a fork F1 naming its base, a
/// fork F2 told only by the copied base `session_meta`, and T0's spawned sub-agent S1.
pub fn store_lines() -> Vec<(String, Vec<String>)> {
    let mut base = vec![meta("2026-12-01T10:00:00.000Z", T0, json!({}))];
    base.push(model("2026-12-01T10:00:00.500Z", "gpt-5"));
    base.push(count(
        "2026-12-01T10:00:01.000Z",
        (1000, 400, 100),
        (1000, 400, 100),
        10.0,
    ));
    // The same running total again: a rate-limit-only repeat, not a call.
    base.push(count(
        "2026-12-01T10:00:01.100Z",
        (1000, 400, 100),
        (1000, 400, 100),
        11.0,
    ));
    base.push(count(
        "2026-12-01T10:00:02.000Z",
        (2000, 1500, 50),
        (3000, 1900, 150),
        12.0,
    ));

    // A fork names its base and starts with a copy of the base's history.
    let mut fork1 = vec![meta(
        "2026-12-01T12:00:00.000Z",
        F1,
        json!({"forked_from_id": T0}),
    )];
    fork1.push(meta("2026-12-01T12:00:00.000Z", T0, json!({})));
    fork1.extend(base_history("2026-12-01T12:00:00.000Z"));
    fork1.push(count(
        "2026-12-01T12:00:05.000Z",
        (2500, 2000, 70),
        (5500, 3900, 220),
        55.0,
    ));

    // A fork told only by the copied base `session_meta` (no forked_from_id).
    let mut fork2 = vec![meta("2026-12-01T13:00:00.000Z", F2, json!({}))];
    fork2.push(meta("2026-12-01T13:00:00.000Z", T0, json!({})));
    fork2.extend(base_history("2026-12-01T13:00:00.000Z"));
    fork2.push(count(
        "2026-12-01T13:00:05.000Z",
        (10, 0, 1),
        (3010, 1900, 151),
        50.0,
    ));

    // A spawned sub-agent: its calls count for the thread that spawned it.
    let sub = vec![
        meta(
            "2026-12-01T10:00:03.000Z",
            S1,
            json!({"source": {"subagent": {"thread_spawn": {"parent_thread_id": T0, "depth": 1}}}}),
        ),
        model("2026-12-01T10:00:03.000Z", "gpt-5-mini"),
        count("2026-12-01T10:00:04.000Z", (300, 0, 40), (300, 0, 40), 13.0),
    ];
    [
        ("00", T0, base),
        ("01", F1, fork1),
        ("02", F2, fork2),
        ("03", S1, sub),
    ]
    .into_iter()
    .map(|(second, id, lines)| {
        (
            format!("rollout-2026-12-01T10-00-{second}-{id}.jsonl"),
            lines,
        )
    })
    .collect()
}

fn store() -> Vec<FileUsage> {
    store_lines()
        .iter()
        .map(|(name, lines)| file(&format!("/c/sessions/2026/12/01/{name}"), lines))
        .collect()
}

/// Replays in forks count once (for the base), repeats count once, a sub-agent counts for its
/// parent, input is net of cached input, and the rate limits are the latest seen.
#[test]
fn forks_replays_repeats_and_subagents_count_once_for_the_right_thread() {
    let files = store();
    let acc = account(&files);
    let report = Report::build(
        &acc,
        &PriceTable::shipped().unwrap(),
        GroupBy::Session,
        None,
    );
    let rows: Vec<(String, u64, Tokens, Option<Money>)> = report
        .rows
        .iter()
        .map(|r| (r.key.clone(), r.calls, r.tokens, r.cost()))
        .collect();
    // T0: call 1 (in 600, cached 400, out 100) + call 2 (in 500, cached 1500, out 50), both
    // gpt-5 ($1.25 / $0.125 / $10): 750+50+1000 + 625+187.5+500 = 3112.5 µ$; its sub-agent
    // (gpt-5-mini, $0.25 / $2): 300×0.25 + 40×2 = 155 µ$ → 3267.5 µ$.
    // F1: its own call (in 500, cached 2000, out 70): 625 + 250 + 700 = 1575 µ$.
    // F2: its own call (in 10, out 1): 12.5 + 10 = 22.5 µ$.
    let pico = |micro_tenths: u128| Some(Money(micro_tenths * 100_000));
    assert_eq!(
        rows,
        vec![
            (
                T0.to_owned(),
                3,
                Tokens {
                    input: 1400,
                    output: 190,
                    cache_read: 1900,
                    ..Tokens::default()
                },
                pico(32675)
            ),
            (
                F1.to_owned(),
                1,
                Tokens {
                    input: 500,
                    output: 70,
                    cache_read: 2000,
                    ..Tokens::default()
                },
                pico(15750)
            ),
            (
                F2.to_owned(),
                1,
                Tokens {
                    input: 10,
                    output: 1,
                    ..Tokens::default()
                },
                pico(225)
            ),
        ]
    );
    let sub = acc
        .charges()
        .find(|c| c.model == Some("gpt-5-mini"))
        .unwrap();
    assert_eq!(sub.subagent, Some(S1));
    // 2 calls copied into each fork.
    assert_eq!(acc.duplicates_skipped, 4);
    let limits = acc.rate_limits.unwrap();
    assert_eq!(
        limits.primary.map(|w| (w.used_percent, w.window_minutes)),
        Some((50.0, Some(300)))
    );
}

/// The base rollout alone: running totals are never added up (that would give 1000+3000 input).
#[test]
fn calls_come_from_last_usage_not_running_totals() {
    let files = store();
    let acc = account(&files[..1]);
    let input: u64 = acc
        .charges()
        .map(|c| c.tokens.input + c.tokens.cache_read)
        .sum();
    assert_eq!(input, 3000);
    assert_eq!(acc.charges().count(), 2);
}

/// A fork whose base is not on disk: the two forks still share the replayed calls once.
#[test]
fn forks_of_a_missing_base_share_the_replays_once() {
    let files = store();
    let acc = account(&files[1..3]);
    // The 2 replayed calls once + F1's own + F2's own.
    assert_eq!(acc.charges().count(), 4);
}

/// `--limits` shows the latest windows: used, the window's length, the reset as a time and as a
/// span from now (fixed here), and an older Codex's `resets_in_seconds` counted from its event.
#[test]
fn the_latest_rate_limits_read_as_used_window_and_reset() {
    let acc = account(&store());
    let limits = acc.rate_limits.unwrap();
    let now = UnixMillis((1_796_000_000 - 7_830) * 1000);
    let view = limits::view(&limits, now);
    let shown: Vec<(&str, String, String, Option<u64>)> = view
        .windows
        .iter()
        .map(|w| {
            (
                w.name,
                w.window_text(),
                w.resets_text(),
                w.resets_in_seconds,
            )
        })
        .collect();
    // F2's last event (13:00:05) is the latest; it says 50 % of the 5 h window.
    assert_eq!(view.windows[0].used_percent, 50.0);
    assert_eq!(
        shown,
        vec![(
            "primary",
            "5h".to_owned(),
            "2026-11-30T00:53:20.000Z (in 2h 10m)".to_owned(),
            Some(7_830)
        )]
    );
    assert_eq!(
        view.observed_at.as_deref(),
        Some("2026-12-01T13:00:05.000Z")
    );
    assert_eq!(limits::in_words(3 * 86_400 + 4 * 3600 + 59), "3d 4h");
    assert_eq!(limits::in_words(30), "under a minute");

    let older = line(
        "2026-12-01T10:00:00.000Z",
        "event_msg",
        json!({"type": "token_count", "info": null, "rate_limits": {
            "primary": {"used_percent": 7.0, "window_minutes": 10080, "resets_in_seconds": 3600}}}),
    );
    let acc = account(&[file("/c/sessions/2026/12/01/rollout-x.jsonl", &[older])]);
    let w = acc.rate_limits.unwrap().primary.unwrap();
    assert_eq!(w.resets_at, Some(1_796_122_800));
    assert_eq!(
        limits::view(&acc_limits(w), UnixMillis(0)).windows[0].window_text(),
        "7d"
    );
}

fn acc_limits(primary: cross_agent_usage::RateLimitWindow) -> cross_agent_usage::RateLimits {
    cross_agent_usage::RateLimits {
        observed_at: None,
        primary: Some(primary),
        secondary: None,
    }
}
