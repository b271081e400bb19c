//! Several writers at once — threads sharing a handle, threads with their own handles, and
//! separate processes — with a size limit small enough to rotate every few dozen lines: every
//! line stays whole and none is lost or written twice.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use cross_agent_decisions::query::{self, Answer, Query};
use cross_agent_decisions::{Decision, DecisionLog, LogConfig};
use pretty_assertions::assert_eq;
use tempfile::TempDir;

use super::{all_lines, numbered};

/// Set in a child process: `dir|writer|count|max_bytes`.
const CHILD_VAR: &str = "CROSS_AGENT_DECISIONS_TEST_CHILD";

fn small(max_bytes: u64) -> LogConfig {
    LogConfig {
        max_bytes,
        keep_for: Duration::from_secs(30 * 86_400),
        // No file may be deleted while counting.
        max_files: 100_000,
    }
}

/// Every line parses, and the (writer, seq) pairs are exactly the expected ones.
fn check_complete(dir: &std::path::Path, writers: u64, per_writer: u64) {
    let lines = all_lines(dir);
    let mut seen = BTreeSet::new();
    for line in &lines {
        let d: Decision =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("torn line {line:?}: {e}"));
        let pair = (
            d.details["writer"].as_u64().unwrap(),
            d.details["seq"].as_u64().unwrap(),
        );
        assert!(seen.insert(pair), "written twice: {pair:?}");
    }
    let expected: BTreeSet<(u64, u64)> = (0..writers)
        .flat_map(|w| (0..per_writer).map(move |s| (w, s)))
        .collect();
    assert_eq!(lines.len() as u64, writers * per_writer);
    assert_eq!(seen, expected);

    // The query sees the same: nothing bad, everything matched, across the rotated files.
    let report = query::run(dir, &Query::default()).unwrap();
    assert_eq!(report.stats.bad_lines, 0);
    assert_eq!(report.stats.matched, writers * per_writer);
    assert!(
        report.stats.files > 3,
        "rotated {} files",
        report.stats.files
    );
    let Answer::Records(records) = report.answer else {
        panic!("records expected");
    };
    assert_eq!(records.len(), lines.len());
    // Stamped under the lock, so in file order (rotated files by number, then the current one)
    // stamps never go backwards.
    let stamps: Vec<String> = lines
        .iter()
        .map(|l| serde_json::from_str::<Decision>(l).unwrap().at)
        .collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn threads_sharing_one_handle() {
    let home = TempDir::new().unwrap();
    let log = DecisionLog::with_config(home.path(), small(4096));
    std::thread::scope(|s| {
        for w in 0..8 {
            let log = log.clone();
            s.spawn(move || {
                for seq in 0..300 {
                    log.try_record(numbered(w, seq)).unwrap();
                }
            });
        }
    });
    assert_eq!(log.stats().written, 2400);
    assert!(log.stats().rotations > 10);
    check_complete(home.path(), 8, 300);
}

#[test]
fn threads_with_their_own_handles() {
    // Separate handles share nothing in memory: only the file lock orders them, as between
    // processes.
    let home = TempDir::new().unwrap();
    std::thread::scope(|s| {
        for w in 0..6 {
            let dir = home.path().to_owned();
            s.spawn(move || {
                let log = DecisionLog::with_config(dir, small(4096));
                for seq in 0..300 {
                    log.try_record(numbered(w, seq)).unwrap();
                }
            });
        }
    });
    check_complete(home.path(), 6, 300);
}

#[test]
fn several_processes() {
    let home = TempDir::new().unwrap();
    let exe = std::env::current_exe().unwrap();
    let per_writer = 400;
    let children: Vec<_> = (0..4)
        .map(|w| {
            Command::new(&exe)
                .args([
                    "suite::concurrency::child_writer",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(
                    CHILD_VAR,
                    format!("{}|{w}|{per_writer}|4096", home.path().display()),
                )
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // And this process writes at the same time.
    let log = DecisionLog::with_config(home.path(), small(4096));
    for seq in 0..per_writer {
        log.try_record(numbered(4, seq)).unwrap();
    }
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    check_complete(home.path(), 5, per_writer);
}

/// The writer of [`several_processes`]; does nothing when run as an ordinary test.
#[test]
fn child_writer() {
    let Ok(spec) = std::env::var(CHILD_VAR) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let [dir, writer, count, max_bytes] = parts[..] else {
        panic!("bad {CHILD_VAR}: {spec}");
    };
    let log = DecisionLog::with_config(dir, small(max_bytes.parse().unwrap()));
    for seq in 0..count.parse::<u64>().unwrap() {
        log.try_record(numbered(writer.parse().unwrap(), seq))
            .unwrap();
    }
}
