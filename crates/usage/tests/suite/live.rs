//! The live index (`cross_agent_usage::live`) against a fresh whole scan of the same files:
//! files grow a piece at a time — a base and its fork alternately, lines cut in half — and after
//! each piece the index's report equals the scan's, while it read only the appended bytes.

// The helpers below stand in for test bodies: a failed write ends the test.
#![allow(clippy::unwrap_used)]

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use cross_agent_stores::StoreRoots;
use cross_agent_usage::{GroupBy, PriceTable, Report, UsageIndex, account, scan};
use pretty_assertions::assert_eq;

use super::steps::claude_roots;
use serde_json::json;

use super::claude::assistant;
use super::codex::store_lines;

fn append(path: &Path, bytes: &[u8]) {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).unwrap();
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

/// The report of a fresh whole scan, and of the index after a refresh, for each grouping.
fn both(index: &mut UsageIndex, roots: &StoreRoots) -> (Vec<Report>, Vec<Report>) {
    let prices = PriceTable::shipped().unwrap();
    let mut warnings = Vec::new();
    index.refresh(roots, &mut warnings);
    assert_eq!(warnings, Vec::<String>::new());
    let found = scan::scan(roots);
    assert_eq!(found.warnings, Vec::<String>::new());
    let fresh = account(&found.files);
    let live = index.accounting();
    let report = |acc, by| Report::build(acc, &prices, by, None);
    let groups = [GroupBy::Session, GroupBy::Model, GroupBy::Day];
    (
        groups.iter().map(|&by| report(&fresh, by)).collect(),
        groups.iter().map(|&by| report(&live, by)).collect(),
    )
}

/// Pieces of `text` cut at the middle of every line, so half lines wait for their end.
fn pieces(lines: &[String]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for line in lines {
        let bytes = format!("{line}\n").into_bytes();
        let half = bytes.len() / 2;
        out.push(bytes[..half].to_vec());
        out.push(bytes[half..].to_vec());
    }
    out
}

/// Feeds every file's pieces in turn, one piece of each file per round, checking after each:
/// an index keeping its call records on the heap and one writing them to a directory
/// (`UsageIndex::with_records_in`), each against a fresh scan.
fn grow_alternately(roots: &StoreRoots, files: Vec<(PathBuf, Vec<Vec<u8>>)>) -> usize {
    let records = tempfile::tempdir().unwrap();
    let mut indexes = [
        UsageIndex::new(),
        UsageIndex::new().with_records_in(records.path()),
    ];
    let mut queues: Vec<(PathBuf, std::collections::VecDeque<Vec<u8>>)> = files
        .into_iter()
        .map(|(path, pieces)| (path, pieces.into()))
        .collect();
    let mut checks = 0;
    loop {
        let mut any = false;
        for (path, queue) in &mut queues {
            let Some(piece) = queue.pop_front() else {
                continue;
            };
            any = true;
            append(path, &piece);
            for index in &mut indexes {
                let mut warnings = Vec::new();
                let before = index.len();
                let stats = index.refresh(roots, &mut warnings);
                // Only the bytes appended were read (a new file: all it has).
                assert_eq!(stats.bytes_read, piece.len() as u64, "{}", path.display());
                assert_eq!(stats.files_reread, 0);
                assert!(index.len() >= before);
                let (fresh, live) = both(index, roots);
                assert_eq!(live, fresh, "after a piece of {}", path.display());
                assert_eq!(index.records_failure(), None);
            }
            checks += 1;
        }
        if !any {
            return checks;
        }
    }
}

/// Codex: a base, a fork naming it, a fork told only by the copied `session_meta`, and a
/// spawned sub-agent, grown alternately half a line at a time: the replays count once, for the
/// base, whichever file had the copy first.
#[test]
fn codex_base_and_forks_grown_alternately_equal_a_fresh_scan_each_time() {
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join(".codex");
    let roots = StoreRoots {
        codex_home: Some(codex_home.clone()),
        ..StoreRoots::default()
    };
    let files: Vec<(PathBuf, Vec<Vec<u8>>)> = store_lines()
        .into_iter()
        .map(|(name, lines)| {
            (
                codex_home.join("sessions/2026/12/01").join(name),
                pieces(&lines),
            )
        })
        .collect();
    // Fork first: the copy of the base's calls is on disk before the base's own.
    let mut files = files;
    files.swap(0, 1);
    let checks = grow_alternately(&roots, files);
    assert!(checks > 20);

    // And the end state is the hand-computed one of the codex suite: T0's two calls, its
    // sub-agent's, and each fork's own call once.
    let mut index = UsageIndex::new();
    let (_, live) = both(&mut index, &roots);
    let calls: Vec<(String, u64)> = live[0]
        .rows
        .iter()
        .map(|r| (r.key.clone(), r.calls))
        .collect();
    let mut calls = calls;
    calls.sort();
    assert_eq!(
        calls,
        vec![
            (super::codex::T0.to_owned(), 3),
            (super::codex::F1.to_owned(), 1),
            (super::codex::F2.to_owned(), 1),
        ]
    );
}

/// Claude: a session resumed into a new file (its replies copied, with later timestamps there)
/// and a sub-agent transcript, grown alternately: each reply counts once, for the base.
#[test]
fn claude_base_resume_and_subagent_grown_alternately_equal_a_fresh_scan_each_time() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".claude");
    let project = config.join("projects/-work-shop");
    let roots = claude_roots(home.path());
    let u = |i: u64, o: u64| json!({"input_tokens": i, "output_tokens": o});
    let sonnet = "claude-sonnet-4-5-20250929";
    let base: Vec<String> = (0..6)
        .map(|n| {
            assistant(
                "b1",
                &format!("m{n}"),
                &format!("r{n}"),
                &format!("2026-12-01T10:00:0{n}.000Z"),
                sonnet,
                u(10 + n, 5 * n),
                false,
            )
        })
        .collect();
    // The resumed session copies the base's replies (later), then makes its own.
    let mut resumed: Vec<String> = (0..6)
        .map(|n| {
            assistant(
                "r1",
                &format!("m{n}"),
                &format!("r{n}"),
                &format!("2026-12-01T11:00:0{n}.000Z"),
                sonnet,
                u(10 + n, 5 * n),
                false,
            )
        })
        .collect();
    resumed.push(assistant(
        "r1",
        "m9",
        "r9",
        "2026-12-01T11:00:09.000Z",
        "model-without-a-price",
        u(1, 2),
        false,
    ));
    let sub = vec![assistant(
        "agent-1",
        "s1",
        "rs1",
        "2026-12-01T10:00:03.500Z",
        sonnet,
        u(200, 20),
        true,
    )];
    let files = vec![
        (project.join("r1.jsonl"), pieces(&resumed)),
        (project.join("b1.jsonl"), pieces(&base)),
        (project.join("b1/subagents/agent-1.jsonl"), pieces(&sub)),
    ];
    let checks = grow_alternately(&roots, files);
    assert!(checks > 20);
}

/// A file that shrank, or was replaced by another (another inode), is read again from the
/// start: nothing of the old one is left counted.
#[test]
fn a_shrunk_or_replaced_file_is_read_again_from_the_start() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".claude");
    let path = config.join("projects/-work-shop/s1.jsonl");
    let roots = claude_roots(home.path());
    let line = |msg: &str, out: u64| {
        assistant(
            "s1",
            msg,
            "r",
            "2026-12-01T10:00:00.000Z",
            "claude-sonnet-4-5",
            json!({"input_tokens": 1, "output_tokens": out}),
            false,
        ) + "\n"
    };
    append(&path, (line("a", 1) + &line("b", 2)).as_bytes());
    let mut index = UsageIndex::new();
    let (fresh, live) = both(&mut index, &roots);
    assert_eq!(live, fresh);
    assert_eq!(live[0].total.calls, 2);

    // Shrunk: one reply left.
    fs::write(&path, line("c", 3)).unwrap();
    let mut warnings = Vec::new();
    let stats = index.refresh(&roots, &mut warnings);
    assert_eq!(stats.files_reread, 1);
    let (fresh, live) = both(&mut index, &roots);
    assert_eq!(live, fresh);
    assert_eq!(live[0].total.calls, 1);
    assert_eq!(live[0].total.tokens.output, 3);

    // Replaced by a longer file (another inode), which starts with other bytes.
    let other = path.with_extension("tmp");
    fs::write(&other, line("d", 40) + &line("e", 50) + &line("f", 60)).unwrap();
    fs::rename(&other, &path).unwrap();
    let stats = index.refresh(&roots, &mut warnings);
    assert_eq!(stats.files_reread, 1);
    assert_eq!(stats.files_appended, 0);
    let (fresh, live) = both(&mut index, &roots);
    assert_eq!(live, fresh);
    assert_eq!(live[0].total.tokens.output, 150);

    // Gone: it counts nothing any more.
    fs::remove_file(&path).unwrap();
    let stats = index.refresh(&roots, &mut warnings);
    assert_eq!(stats.files_dropped, 1);
    let (fresh, live) = both(&mut index, &roots);
    assert_eq!(live, fresh);
    assert_eq!(live[0].total.calls, 0);
}

/// A report over the wire is the report: every field survives `usage_report`.
#[test]
fn a_report_survives_the_wire() {
    let lines = store_lines();
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join(".codex");
    for (name, lines) in &lines {
        append(
            &codex_home.join("sessions/2026/12/01").join(name),
            (lines.join("\n") + "\n").as_bytes(),
        );
    }
    let roots = StoreRoots {
        codex_home: Some(codex_home),
        ..StoreRoots::default()
    };
    let mut index = UsageIndex::new();
    let (_, live) = both(&mut index, &roots);
    for report in live {
        assert!(report.rate_limits.is_some());
        let wire = report.to_wire();
        let text = serde_json::to_string(&wire).unwrap();
        let back = Report::from_wire(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, report);
    }
}

/// The reports of a fresh whole scan and of the index as it stands (no refresh).
fn fresh_and_kept(index: &mut UsageIndex, roots: &StoreRoots) -> (Report, Report) {
    let prices = PriceTable::shipped().unwrap();
    let found = scan::scan(roots);
    assert_eq!(found.warnings, Vec::<String>::new());
    let fresh = account(&found.files);
    let live = index.accounting();
    (
        Report::build(&fresh, &prices, GroupBy::Session, None),
        Report::build(&live, &prices, GroupBy::Session, None),
    )
}

/// After a change, the index reads what the session index's walk found changed — one appended
/// transcript is the only file looked at, no walk — and the sub-agent transcripts of that
/// session; a file gone drops out. Each time the report equals a fresh scan's.
#[test]
fn a_refresh_after_a_change_looks_only_at_the_changed_files() {
    use cross_agent_stores::Agent;
    use cross_agent_stores::live::{ChangesSince, LiveOptions, LiveScanner};
    use cross_agent_stores::scan::ScanOptions;

    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".claude");
    let project = config.join("projects/-work-shop");
    let roots = claude_roots(home.path());
    let reply = |session: &str, n: u64, subagent: bool| {
        assistant(
            session,
            &format!("m-{session}-{n}"),
            &format!("r-{session}-{n}"),
            "2026-12-01T10:00:00.000Z",
            "claude-sonnet-4-5-20250929",
            json!({"input_tokens": 10 + n, "output_tokens": n}),
            subagent,
        ) + "\n"
    };
    for s in 0..12 {
        let id = format!("s{s}");
        append(
            &project.join(format!("{id}.jsonl")),
            reply(&id, 1, false).as_bytes(),
        );
    }
    let sub = project.join("s3/subagents/agent-1.jsonl");
    append(&sub, reply("agent-1", 1, true).as_bytes());

    // Notifications off: only what the test counts moves the session index.
    let scan = LiveScanner::new(
        ScanOptions::default(),
        LiveOptions {
            rewalk: std::time::Duration::from_secs(3600),
            notifications: false,
            serial_walks: false,
        },
    );
    let _ = scan.snapshot(&roots, &[Agent::Claude]);
    let mut index = UsageIndex::new();
    let mut warnings = Vec::new();
    let stats = index.refresh(&roots, &mut warnings);
    assert!(stats.walked);
    assert_eq!(stats.files_seen, 13);
    let mut mark = scan.log_mark(Agent::Claude);
    let mut after_change = |index: &mut UsageIndex| {
        scan.mark_stale(Agent::Claude);
        let _ = scan.snapshot(&roots, &[Agent::Claude]);
        let (since, next) = scan.changes_since(Agent::Claude, mark);
        mark = next;
        let ChangesSince::Walks(walks) = since else {
            panic!("the session index forgot its walks");
        };
        let mut warnings = Vec::new();
        let stats = index.refresh_changed(&roots, &walks, &mut warnings);
        assert_eq!(warnings, Vec::<String>::new());
        stats
    };

    let appended = reply("s5", 2, false);
    append(&project.join("s5.jsonl"), appended.as_bytes());
    let stats = after_change(&mut index);
    assert_eq!(
        (stats.walked, stats.files_seen, stats.files_appended),
        (false, 1, 1),
        "only the appended transcript: {stats:?}"
    );
    assert_eq!(stats.files_unchanged, 0);
    assert_eq!(stats.bytes_read, appended.len() as u64);
    let (fresh, live) = fresh_and_kept(&mut index, &roots);
    assert_eq!(live, fresh);

    let appended = reply("s3", 2, false);
    append(&project.join("s3.jsonl"), appended.as_bytes());
    let stats = after_change(&mut index);
    assert_eq!(
        (stats.walked, stats.files_seen, stats.files_appended),
        (false, 2, 1),
        "the appended transcript and its session's one sub-agent file: {stats:?}"
    );
    assert_eq!(stats.files_unchanged, 1, "the sub-agent file, by its stamp");
    assert_eq!(stats.bytes_read, appended.len() as u64);
    let (fresh, live) = fresh_and_kept(&mut index, &roots);
    assert_eq!(live, fresh);

    // A sub-agent writes while its session's transcript stays still.
    let more = reply("agent-1", 2, true);
    append(&sub, more.as_bytes());
    let stats = after_change(&mut index);
    assert_eq!(
        (stats.files_seen, stats.files_appended),
        (1, 1),
        "{stats:?}"
    );
    assert_eq!(stats.bytes_read, more.len() as u64);
    let (fresh, live) = fresh_and_kept(&mut index, &roots);
    assert_eq!(live, fresh);

    // Another session's transcript gone.
    fs::remove_file(project.join("s7.jsonl")).unwrap();
    let stats = after_change(&mut index);
    assert_eq!(stats.files_dropped, 1, "{stats:?}");
    assert_eq!(stats.bytes_read, 0);
    let (fresh, live) = fresh_and_kept(&mut index, &roots);
    assert_eq!(live, fresh);
    assert_eq!(live.rows.len(), 11);
}
