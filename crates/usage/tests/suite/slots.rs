//! Files coming and going under a live index whose entries and ledger files sit in lists found by
//! path, each gone file's slot reused by the next new one (issue 30: no map ordered by path, no
//! box per file): every report — rate limits and thread ties included, where two files say
//! different things and the first or last in path order decides — stays what a fresh whole scan
//! says, whatever order the slots are in.

// The helpers below stand in for test bodies: a failed write ends the test.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use cross_agent_stores::StoreRoots;
use cross_agent_usage::UsageIndex;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::codex::{count, meta, model, store_lines};
use super::steps::{SONNET, add_lines, reply};

/// A rollout of thread `id` (spawned by `parent` when given) with one call, its rate limits
/// seen at `at` at `used_percent`.
fn rollout(id: &str, parent: Option<&str>, at: &str, used_percent: f64, input: u64) -> String {
    let source = match parent {
        Some(parent) => json!({"source": {"subagent": {"thread_spawn":
            {"parent_thread_id": parent, "depth": 1}}}}),
        None => json!({}),
    };
    [
        meta(at, id, source),
        model(at, "gpt-5"),
        count(at, (input, 0, 10), (input, 0, 10), used_percent),
    ]
    .join("\n")
        + "\n"
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

#[test]
fn files_that_come_and_go_in_any_slot_order_answer_as_a_fresh_scan() {
    let home = tempfile::tempdir().unwrap();
    let records = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/-work-shop");
    let day = home.path().join(".codex/sessions/2026/12/01");
    let roots = StoreRoots {
        claude_config: Some(home.path().join(".claude")),
        codex_home: Some(home.path().join(".codex")),
        ..StoreRoots::default()
    };
    // Claude: sessions and resumed copies of their first reply, made later.
    let transcript = |dir: &Path, name: &str, s: u32| {
        add_lines(
            &dir.join(format!("{name}.jsonl")),
            &[
                reply(name, &format!("m{s}-0"), s % 60, SONNET, 10 + u64::from(s)),
                reply(name, &format!("m{name}-1"), s % 60, SONNET, 7),
            ],
        );
    };
    for s in 0..40 {
        transcript(&project, &format!("b{s}"), s);
        transcript(&project, &format!("c{s}"), s);
    }
    for (name, lines) in store_lines() {
        write(&day.join(name), &(lines.join("\n") + "\n"));
    }
    // The later rollouts in path order ("z-") are there first, so they take the lower slots.
    let tie = "2026-12-01T15:00:00.000Z";
    let dup = "01a30000-0000-7000-8000-0000000000d1";
    write(
        &day.join("rollout-z-tie.jsonl"),
        &rollout("01a30000-0000-7000-8000-0000000000e1", None, tie, 20.0, 5),
    );
    write(
        &day.join("rollout-z-dup.jsonl"),
        &rollout(dup, Some("parent-z"), "2026-12-01T09:00:00.000Z", 1.0, 7),
    );
    let mut index = UsageIndex::new().with_records_in(records.path());
    super::idle::refresh_exact(&mut index, &roots, "cold");

    // Earlier in path order, later in slots: the rate limits seen at the same time as the
    // "z-" rollout's (the later file in path order keeps its own), and a second rollout of the
    // same thread spawned by another parent (the first file in path order says which).
    write(
        &day.join("rollout-a-tie.jsonl"),
        &rollout("01a30000-0000-7000-8000-0000000000e2", None, tie, 70.0, 6),
    );
    write(
        &day.join("rollout-a-dup.jsonl"),
        &rollout(dup, Some("parent-a"), "2026-12-01T09:00:00.000Z", 2.0, 8),
    );
    super::idle::refresh_exact(&mut index, &roots, "rollouts earlier in path order added");

    // Gone files' slots taken by new ones, some of which copy a reply of a gone file.
    for s in 0..10 {
        fs::remove_file(project.join(format!("b{s}.jsonl"))).unwrap();
        transcript(&project, &format!("a{s}"), s);
    }
    fs::remove_file(day.join("rollout-z-dup.jsonl")).unwrap();
    super::idle::refresh_exact(&mut index, &roots, "files removed and others added");

    // Appends, a rollout written anew, and a removed file back.
    for s in 10..20 {
        transcript(&project, &format!("b{s}"), s + 1);
    }
    // Shorter: read again from its start (a rewrite that grows reads as an append).
    write(
        &day.join("rollout-a-tie.jsonl"),
        &rollout("01a30000-0000-7000-8000-0000000000e2", None, tie, 9.0, 5),
    );
    write(
        &day.join("rollout-z-dup.jsonl"),
        &rollout(dup, Some("parent-z"), "2026-12-01T09:00:00.000Z", 1.0, 7),
    );
    super::idle::refresh_exact(&mut index, &roots, "appended, rewritten, back");
    assert_eq!(index.records_failure(), None);
}
