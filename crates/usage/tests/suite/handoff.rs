//! The usage index's first read taken from the session index's (`cross_agent_usage::handoff`):
//! a cold walk of the session index hands every transcript it reads over, parsed, so the usage
//! index reads only what the session index does not list (sub-agent transcripts) and what the
//! walk could not hand over whole (a half-written last line) — and its report equals a fresh
//! whole scan's, then and after every append, replacement and removal.

// The helpers below stand in for test bodies: a failed write ends the test.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;
use std::time::Duration;

use cross_agent_stores::Agent;
use cross_agent_stores::StoreRoots;
use cross_agent_stores::live::{LiveOptions, LiveScanner};
use cross_agent_stores::scan::ScanOptions;
use cross_agent_usage::handoff::Handoffs;
use cross_agent_usage::{GroupBy, PriceTable, Report, UsageIndex, account, scan};
use pretty_assertions::assert_eq;

use super::steps::claude_roots;
use serde_json::json;

use super::claude::assistant;
use super::codex::store_lines;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn append(path: &Path, text: &str) {
    use std::io::Write as _;
    let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// A fresh whole scan's reports and the index's, by session, model and day.
fn fresh_and_kept(index: &mut UsageIndex, roots: &StoreRoots) -> (Vec<Report>, Vec<Report>) {
    let prices = PriceTable::shipped().unwrap();
    let found = scan::scan(roots);
    assert_eq!(found.warnings, Vec::<String>::new());
    let fresh = account(&found.files);
    let live = index.accounting();
    let groups = [GroupBy::Session, GroupBy::Model, GroupBy::Day];
    (
        groups
            .iter()
            .map(|&by| Report::build(&fresh, &prices, by, None))
            .collect(),
        groups
            .iter()
            .map(|&by| Report::build(&live, &prices, by, None))
            .collect(),
    )
}

#[test]
fn a_cold_walk_hands_every_transcript_over_and_the_totals_stay_exact() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".claude");
    let codex_home = home.path().join(".codex");
    let project = config.join("projects/-work-shop");
    let roots = StoreRoots {
        claude_config: Some(config.clone()),
        codex_home: Some(codex_home.clone()),
        ..StoreRoots::default()
    };
    let sonnet = "claude-sonnet-4-5-20250929";
    let reply = |session: &str, n: u64, at: &str, sidechain: bool| {
        assistant(
            session,
            &format!("m{n}"),
            &format!("r{n}"),
            at,
            sonnet,
            json!({"input_tokens": 10 + n, "output_tokens": n}),
            sidechain,
        ) + "\n"
    };
    // A base, a resumed copy of its replies (later) with one of its own, a sub-agent, and a
    // transcript whose last line is still being written (whole JSON, no newline yet).
    let base: String = (0..4)
        .map(|n| reply("b1", n, &format!("2026-12-01T10:00:0{n}.000Z"), false))
        .collect();
    let mut resumed: String = (0..4)
        .map(|n| reply("r1", n, &format!("2026-12-01T11:00:0{n}.000Z"), false))
        .collect();
    resumed.push_str(&reply("r1", 9, "2026-12-01T11:00:09.000Z", false));
    let sub = reply("agent-1", 20, "2026-12-01T10:00:03.500Z", true);
    let tail = reply("w1", 30, "2026-12-01T12:00:00.000Z", false);
    let tail = tail.trim_end();
    let writing = reply("w1", 31, "2026-12-01T11:59:00.000Z", false) + tail;
    write(&project.join("b1.jsonl"), &base);
    write(&project.join("r1.jsonl"), &resumed);
    write(&project.join("b1/subagents/agent-1.jsonl"), &sub);
    write(&project.join("w1.jsonl"), &writing);
    // Codex: a base, its forks (replays) and a spawned sub-agent.
    let rollouts = store_lines();
    for (name, lines) in &rollouts {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        write(&codex_home.join("sessions/2026/12/01").join(name), &text);
    }

    // Notifications off: only what the test marks moves the session index.
    let scan = LiveScanner::new(
        ScanOptions::default(),
        LiveOptions {
            rewalk: Duration::from_secs(3600),
            notifications: false,
            serial_walks: false,
        },
    );
    let handoffs = Handoffs::new();
    scan.set_tap(handoffs.tap());
    let agents = [Agent::Claude, Agent::Codex];
    let _ = scan.snapshot(&roots, &agents);
    let transcripts = 4 - 1 + rollouts.len();
    assert_eq!(handoffs.len(), transcripts, "every listed transcript");

    let mut index = UsageIndex::with_handoffs(handoffs.clone());
    let mut warnings = Vec::new();
    let stats = index.refresh(&roots, &mut warnings);
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(stats.files_handed, transcripts, "{stats:?}");
    assert!(handoffs.is_empty());
    // Read by the usage index itself: the sub-agent transcript (not listed) and the last line
    // the session index leaves until it is finished.
    assert_eq!(
        stats.bytes_read,
        (sub.len() + tail.len()) as u64,
        "no transcript read twice: {stats:?}"
    );
    let (fresh, live) = fresh_and_kept(&mut index, &roots);
    assert_eq!(live, fresh);

    let look = |index: &mut UsageIndex| {
        scan.mark_stale(Agent::Claude);
        scan.mark_stale(Agent::Codex);
        let _ = scan.snapshot(&roots, &agents);
        let mut warnings = Vec::new();
        let stats = index.refresh(&roots, &mut warnings);
        assert_eq!(warnings, Vec::<String>::new());
        stats
    };

    // The last line finished and another appended: the session index resumes (nothing handed
    // over), the usage index reads the appended bytes.
    let more = format!("\n{}", reply("w1", 32, "2026-12-01T12:00:05.000Z", false));
    append(&project.join("w1.jsonl"), &more);
    let stats = look(&mut index);
    assert_eq!(stats.files_handed, 0, "{stats:?}");
    assert_eq!(stats.bytes_read, more.len() as u64);
    let (fresh, live) = fresh_and_kept(&mut index, &roots);
    assert_eq!(live, fresh);

    // The base replaced by a shorter file (another inode): the session index reads it from
    // the start and hands it over; nothing of the old one is left counted.
    let path = project.join("b1.jsonl");
    let replacement = project.join("b1.jsonl.new");
    write(
        &replacement,
        &reply("b1", 7, "2026-12-01T10:00:07.000Z", false),
    );
    fs::rename(&replacement, &path).unwrap();
    let stats = look(&mut index);
    assert_eq!(stats.files_handed, 1, "{stats:?}");
    assert_eq!(stats.bytes_read, 0, "{stats:?}");
    let (fresh, live) = fresh_and_kept(&mut index, &roots);
    assert_eq!(live, fresh);

    // A new session, and one gone.
    write(
        &project.join("n1.jsonl"),
        &reply("n1", 40, "2026-12-01T13:00:00.000Z", false),
    );
    fs::remove_file(project.join("r1.jsonl")).unwrap();
    let stats = look(&mut index);
    assert_eq!(
        (stats.files_handed, stats.files_dropped, stats.bytes_read),
        (1, 1, 0),
        "{stats:?}"
    );
    let (fresh, live) = fresh_and_kept(&mut index, &roots);
    assert_eq!(live, fresh);
}

/// A hand-over the usage index did not take in time (its refresh came first) is one more
/// earlier read: taken later, a file grown since is resumed from it, never counted twice.
#[test]
fn a_late_hand_over_of_a_file_grown_since_is_resumed_not_counted_again() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".claude");
    let project = config.join("projects/-work-shop");
    let roots = claude_roots(home.path());
    let reply = |n: u64| {
        assistant(
            "s1",
            &format!("m{n}"),
            &format!("r{n}"),
            &format!("2026-12-01T10:00:0{n}.000Z"),
            "claude-sonnet-4-5-20250929",
            json!({"input_tokens": 100, "output_tokens": n}),
            false,
        ) + "\n"
    };
    let path = project.join("s1.jsonl");
    write(&path, &reply(1));
    let scan = LiveScanner::new(
        ScanOptions::default(),
        LiveOptions {
            rewalk: Duration::from_secs(3600),
            notifications: false,
            serial_walks: false,
        },
    );
    let handoffs = Handoffs::new();
    let mut index = UsageIndex::with_handoffs(handoffs.clone());
    // The usage index reads first, on its own; the session index's read is handed over after.
    let mut warnings = Vec::new();
    index.refresh(&roots, &mut warnings);
    scan.set_tap(handoffs.tap());
    let _ = scan.snapshot(&roots, &[Agent::Claude]);
    assert_eq!(handoffs.len(), 1);
    let second = reply(2);
    append(&path, &second);
    let stats = index.refresh(&roots, &mut warnings);
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(
        (stats.files_handed, stats.files_appended, stats.bytes_read),
        (1, 1, second.len() as u64),
        "{stats:?}"
    );
    let (fresh, live) = fresh_and_kept(&mut index, &roots);
    assert_eq!(live, fresh);
    assert_eq!(live[0].total.calls, 2);
}
