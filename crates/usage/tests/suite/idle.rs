//! Idle files in the live index (`cross_agent_usage::live`): a file still for
//! [`IDLE_AFTER`] keeps only its parse, no reader, and when it changes it is read again from its
//! start — appended to, rewritten in place, or a Codex rollout whose thread relations change —
//! with every report what a fresh whole scan of the same files says.

// The helpers below stand in for test bodies: a failed write ends the test.
#![allow(clippy::unwrap_used)]

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::Path;
use std::time::SystemTime;

use cross_agent_stores::StoreRoots;
use cross_agent_usage::{
    GroupBy, IDLE_AFTER, PriceTable, RefreshStats, Report, UsageIndex, account, scan,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::claude::assistant;
use super::codex::{F2, T0, count, meta, model};
use super::steps::claude_roots;

/// Sets the file's mtime to a minute past [`IDLE_AFTER`] ago: a file still for that long.
fn make_still(path: &Path) {
    let then = SystemTime::now() - IDLE_AFTER - std::time::Duration::from_secs(60);
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(then)
        .unwrap();
}

fn append(path: &Path, text: &str) {
    let mut file = OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

fn lines(lines: &[String]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// Refreshes the index, and checks its report equals a fresh scan's for each grouping (`when`
/// names the step in a failure).
pub(super) fn refresh_exact(
    index: &mut UsageIndex,
    roots: &StoreRoots,
    when: &str,
) -> RefreshStats {
    let mut warnings = Vec::new();
    let stats = index.refresh(roots, &mut warnings);
    assert_eq!(warnings, Vec::<String>::new(), "{when}");
    let prices = PriceTable::shipped().unwrap();
    let found = scan::scan(roots);
    assert_eq!(found.warnings, Vec::<String>::new(), "{when}");
    let fresh = account(&found.files);
    let live = index.accounting();
    for by in [GroupBy::Session, GroupBy::Model, GroupBy::Day, GroupBy::Cwd] {
        assert_eq!(
            Report::build(&live, &prices, by, None),
            Report::build(&fresh, &prices, by, None),
            "{when}, by {by:?}"
        );
    }
    stats
}

/// Claude reply `n` of session `s`.
fn reply(s: &str, n: usize, input: u64) -> String {
    assistant(
        s,
        &format!("m{s}-{n}"),
        &format!("r{s}-{n}"),
        &format!("2026-12-01T10:00:{n:02}.000Z"),
        "claude-sonnet-4-5-20250929",
        json!({"input_tokens": input, "output_tokens": 7}),
        false,
    )
}

/// Three Claude transcripts, still for a while: none keeps a reader. One appended to is read
/// again from its start (not resumed: there is no reader to resume) and keeps a reader after;
/// the reports stay exact, with the records on the heap and in a directory.
#[test]
fn an_idle_file_appended_to_is_read_from_its_start() {
    for records in [false, true] {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let roots = claude_roots(home.path());
        let project = home.path().join(".claude/projects/-work-shop");
        fs::create_dir_all(&project).unwrap();
        for s in ["a", "b", "c"] {
            let path = project.join(format!("{s}.jsonl"));
            fs::write(&path, lines(&[reply(s, 0, 10), reply(s, 1, 20)])).unwrap();
            make_still(&path);
        }
        let mut index = UsageIndex::new();
        if records {
            index = index.with_records_in(dir.path());
        }
        let stats = refresh_exact(&mut index, &roots, "a refresh");
        assert_eq!((stats.files_new, index.readers()), (3, 0));

        let path = project.join("b.jsonl");
        append(&path, &lines(&[reply("b", 2, 30), reply("a", 0, 10)]));
        let stats = refresh_exact(&mut index, &roots, "a refresh");
        assert_eq!(
            (stats.files_reread, stats.files_appended, stats.bytes_read),
            (1, 0, fs::metadata(&path).unwrap().len())
        );
        assert_eq!(index.readers(), 1);

        // Being written now: the next append is resumed.
        append(&path, &lines(&[reply("b", 3, 40)]));
        let stats = refresh_exact(&mut index, &roots, "a refresh");
        assert_eq!((stats.files_reread, stats.files_appended), (0, 1));
        assert_eq!(index.records_failure(), None);
    }
}

/// An idle transcript rewritten in place — the same inode, longer, its earlier replies not
/// what they were — is read from its start: a kept reader would have taken the new bytes past
/// its offset for an append.
#[test]
fn an_idle_file_rewritten_in_place_is_read_from_its_start() {
    let home = tempfile::tempdir().unwrap();
    let roots = claude_roots(home.path());
    let project = home.path().join(".claude/projects/-work-shop");
    fs::create_dir_all(&project).unwrap();
    let path = project.join("a.jsonl");
    fs::write(&path, lines(&[reply("a", 0, 10), reply("a", 1, 20)])).unwrap();
    make_still(&path);
    let mut index = UsageIndex::new();
    refresh_exact(&mut index, &roots, "a refresh");

    let rewritten = lines(&[reply("a", 5, 500), reply("a", 6, 600), reply("a", 7, 700)]);
    let mut file = OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all(rewritten.as_bytes()).unwrap();
    drop(file);
    let stats = refresh_exact(&mut index, &roots, "a refresh");
    assert_eq!((stats.files_reread, stats.files_appended), (1, 0));
}

/// Codex rollouts still for a while: a fork told only by its copied base `session_meta` is
/// first a thread of its own; the copied history appended makes it a fork of the base, so
/// its replayed calls count once, for the base — read from its start, every report exact.
#[test]
fn an_idle_rollout_whose_thread_relations_change_is_read_from_its_start() {
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join(".codex");
    let day = codex_home.join("sessions/2026/12/01");
    fs::create_dir_all(&day).unwrap();
    let roots = StoreRoots {
        codex_home: Some(codex_home),
        ..StoreRoots::default()
    };
    let at = "2026-12-01T10:00:00.000Z";
    let history = [
        model(at, "gpt-5"),
        count(at, (1000, 400, 100), (1000, 400, 100), 10.0),
        count(at, (2000, 1500, 50), (3000, 1900, 150), 12.0),
    ];
    let mut base = vec![meta(at, T0, json!({}))];
    base.extend(history.iter().cloned());
    let base_path = day.join(format!("rollout-2026-12-01T10-00-00-{T0}.jsonl"));
    fs::write(&base_path, lines(&base)).unwrap();
    let fork_path = day.join(format!("rollout-2026-12-01T10-00-02-{F2}.jsonl"));
    fs::write(&fork_path, lines(&[meta(at, F2, json!({}))])).unwrap();
    make_still(&base_path);
    make_still(&fork_path);
    let mut index = UsageIndex::new();
    refresh_exact(&mut index, &roots, "a refresh");
    assert_eq!(index.readers(), 0);

    let mut copied = vec![meta(at, T0, json!({}))];
    copied.extend(history.iter().cloned());
    copied.push(count(at, (10, 0, 1), (3010, 1900, 151), 50.0));
    append(&fork_path, &lines(&copied));
    let stats = refresh_exact(&mut index, &roots, "a refresh");
    assert_eq!(
        (stats.files_reread, stats.files_appended, stats.bytes_read),
        (1, 0, fs::metadata(&fork_path).unwrap().len())
    );
}
