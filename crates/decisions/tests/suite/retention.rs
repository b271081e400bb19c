//! Rotation and retention: numbered files, the age and count limits, and the current file never
//! deleted.

use std::fs;
use std::path::Path;
use std::time::Duration;

use cross_agent_decisions::rotate::{self, apply_retention, rotated_files};
use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, LogConfig, Outcome, clock};
use cross_agent_protocol::settings as var;
use pretty_assertions::assert_eq;
use tempfile::TempDir;

const DAY_MS: i64 = 86_400_000;

fn line_at(ms: i64) -> String {
    let d = Decision::new(DecisionKind::PIN_SET, Outcome::SET).at(clock::format_millis(ms));
    format!("{}\n", serde_json::to_string(&d).unwrap())
}

/// A file holding records `days_ago` (oldest first).
fn write_file(path: &Path, days_ago: &[i64]) {
    let now = clock::now_millis();
    let text: String = days_ago.iter().map(|d| line_at(now - d * DAY_MS)).collect();
    fs::write(path, text).unwrap();
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    names
}

#[test]
fn old_rotated_files_go_and_the_current_one_stays() {
    let home = TempDir::new().unwrap();
    let dir = home.path();
    write_file(&rotate::rotated_path(dir, 1), &[30, 20]);
    // Its oldest record is old but its newest is not: kept.
    write_file(&rotate::rotated_path(dir, 2), &[20, 13]);
    write_file(&rotate::rotated_path(dir, 3), &[2, 1]);
    // The current file is never deleted, however old.
    write_file(&dir.join("decisions.jsonl"), &[40]);
    // Not ours: left alone.
    fs::write(dir.join("decisions.old.jsonl"), "x").unwrap();

    let deleted = apply_retention(dir, &LogConfig::default(), clock::now_millis()).unwrap();
    assert_eq!(deleted, vec![rotate::rotated_path(dir, 1)]);
    assert_eq!(
        names(dir),
        vec![
            "decisions.2.jsonl",
            "decisions.3.jsonl",
            "decisions.jsonl",
            "decisions.old.jsonl"
        ]
    );
}

#[test]
fn the_count_cap_deletes_the_oldest() {
    let home = TempDir::new().unwrap();
    let dir = home.path();
    for n in 1..=5 {
        write_file(&rotate::rotated_path(dir, n), &[1]);
    }
    let config = LogConfig {
        max_files: 2,
        ..LogConfig::default()
    };
    apply_retention(dir, &config, clock::now_millis()).unwrap();
    let left: Vec<u64> = rotated_files(dir)
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(left, vec![4, 5]);
}

#[test]
fn rotation_numbers_only_grow() {
    let home = TempDir::new().unwrap();
    let dir = home.path();
    // A gap left by retention: the next file is 8, after the highest.
    write_file(&rotate::rotated_path(dir, 7), &[1]);
    let config = LogConfig {
        max_bytes: 600,
        ..LogConfig::default()
    };
    let log = DecisionLog::with_config(dir, config);
    for seq in 0..20 {
        log.try_record(super::numbered(0, seq)).unwrap();
    }
    let numbers: Vec<u64> = rotated_files(dir)
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(numbers.len() > 2, "{numbers:?}");
    assert_eq!(numbers[0], 7);
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
    // No file goes past the limit unless a single line is longer than it.
    for (_, path) in rotated_files(dir).unwrap().into_iter().skip(1) {
        let len = fs::metadata(&path).unwrap().len();
        let lines = fs::read_to_string(&path).unwrap().lines().count();
        assert!(
            len <= 600 || lines == 1,
            "{} is {len} bytes",
            path.display()
        );
    }
    assert_eq!(super::all_lines(dir).len(), 21);
}

#[test]
fn a_quiet_log_ages_out() {
    // The current file's oldest record is past `keep_for`: the first append of a process
    // rotates it, so retention can delete it once its newest record is old too.
    let home = TempDir::new().unwrap();
    let dir = home.path();
    write_file(&dir.join("decisions.jsonl"), &[20, 19]);
    write_file(&rotate::rotated_path(dir, 1), &[30, 25]);
    let log = DecisionLog::with_config(dir, LogConfig::default());
    log.try_record(super::numbered(0, 0)).unwrap();
    // decisions.1 (newest 25 days) deleted at once; the aged current file became decisions.2
    // (newest 19 days): deleted too by the same retention pass.
    assert_eq!(names(dir), vec!["decisions.jsonl"]);
    assert_eq!(super::all_lines(dir).len(), 1);
    assert_eq!(log.stats().rotations, 1);

    // Keeping 60 days, the same rotation keeps it.
    let home = TempDir::new().unwrap();
    let dir = home.path();
    write_file(&dir.join("decisions.jsonl"), &[20, 19]);
    let log = DecisionLog::with_config(
        dir,
        LogConfig {
            keep_for: Duration::from_secs(60 * 86_400),
            ..LogConfig::default()
        },
    );
    log.try_record(super::numbered(0, 0)).unwrap();
    assert_eq!(names(dir), vec!["decisions.jsonl"]);
    assert_eq!(super::all_lines(dir).len(), 3);
}

#[test]
fn the_size_limit_comes_from_the_environment() {
    let with = |value: &'static str| {
        LogConfig::from_vars(move |name| {
            (name == var::DECISIONS_MAX_BYTES).then(|| value.to_owned())
        })
    };
    assert_eq!(with("1048576").max_bytes, 1_048_576);
    assert_eq!(with(" 4096 ").max_bytes, 4096);
    for ignored in ["0", "-1", "16M", ""] {
        assert_eq!(
            with(ignored).max_bytes,
            rotate::DEFAULT_MAX_BYTES,
            "{ignored}"
        );
    }
    assert_eq!(LogConfig::from_vars(|_| None), LogConfig::default());
}
