//! `cross-agent decisions` over a temporary home: the table and JSON of `--by`, the readable and
//! JSON listings, filters, bad lines reported on stderr, and argument errors.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, LogConfig, Outcome, clock};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;

struct Home {
    dir: TempDir,
}

impl Home {
    fn root(&self) -> PathBuf {
        self.dir.path().join("xa")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::cargo_bin("cross-agent").unwrap();
        cmd.env_clear()
            .env("HOME", self.dir.path())
            .env("CROSS_AGENT_HOME", self.root())
            .arg("decisions")
            .args(args);
        cmd
    }

    fn run(&self, args: &[&str]) -> (String, String) {
        let out = self.cmd(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }
}

fn ago(minutes: i64) -> String {
    clock::format_millis(clock::now_millis() - minutes * 60_000)
}

/// Two days of decisions in small rotated files, plus two with fixed times long ago.
fn fixture() -> Home {
    let home = Home {
        dir: TempDir::new().unwrap(),
    };
    let log = DecisionLog::with_config(
        home.root(),
        LogConfig {
            max_bytes: 500,
            ..LogConfig::default()
        },
    );
    let fixed = [
        Decision::new(DecisionKind::SEND_REFUSED, Outcome::REFUSED)
            .at("2020-01-01T00:00:00.000Z")
            .agent("claude")
            .session("c-1")
            .guard("hop_budget")
            .reason("conversation conv_1 has used all 8 of its hops")
            .detail("hops_spent", 8)
            .detail("max_hops", 8),
        Decision::new(DecisionKind::new("approval"), Outcome::new("approved"))
            .at("2020-01-01T00:00:01.000Z")
            .detail("tool", "Bash"),
    ];
    for d in fixed {
        log.try_record(d).unwrap();
    }
    let mut recent = Vec::new();
    for (minutes, by) in [
        (2000, "pin"),
        (600, "discovery"),
        (300, "discovery"),
        (30, "pin"),
    ] {
        recent.push(
            Decision::new(DecisionKind::TARGET_CHOSEN, Outcome::CHOSEN)
                .at(ago(minutes))
                .agent("codex")
                .target_session("t-1")
                .detail("target_selected_by", by),
        );
    }
    for minutes in [500, 20, 10] {
        recent.push(
            Decision::new(DecisionKind::SEND_ACCEPTED, Outcome::ACCEPTED)
                .at(ago(minutes))
                .agent("codex")
                .delivery(format!("dlv_{minutes}")),
        );
    }
    recent.sort_by(|a, b| a.at.cmp(&b.at));
    for d in recent {
        log.try_record(d).unwrap();
    }
    home
}

fn log_files(root: &Path) -> usize {
    std::fs::read_dir(root)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.starts_with("decisions.") && name.ends_with(".jsonl")
        })
        .count()
}

#[test]
fn counts_by_kind_as_a_table() {
    let home = fixture();
    assert!(log_files(&home.root()) > 2);
    let (stdout, stderr) = home.run(&["--since", "24h", "--by", "kind"]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "COUNT   SHARE  KIND",
            "    3   50.0%  send_accepted",
            "    3   50.0%  target_chosen",
        ]
    );
    assert!(
        lines[3].starts_with("6 decision(s) in 2 group(s) since "),
        "{}",
        lines[3]
    );
    assert_eq!(lines.len(), 4);
    assert_eq!(stderr, "");
}

#[test]
fn counts_by_several_fields_as_json() {
    let home = fixture();
    let (stdout, _) = home.run(&[
        "--by",
        "kind,details.target_selected_by",
        "--where",
        "agent=codex",
        "--json",
    ]);
    let got: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        got,
        json!({
            "by": ["kind", "details.target_selected_by"],
            "since": null,
            "until": null,
            "total": 7,
            "bad_lines": 0,
            "groups": [
                {"key": {"kind": "send_accepted", "details.target_selected_by": null}, "count": 3},
                {"key": {"kind": "target_chosen", "details.target_selected_by": "discovery"}, "count": 2},
                {"key": {"kind": "target_chosen", "details.target_selected_by": "pin"}, "count": 2},
            ]
        })
    );
}

#[test]
fn lists_decisions_newest_last() {
    let home = fixture();
    let (stdout, _) = home.run(&["--until", "2020-01-02T00:00:00Z"]);
    assert_eq!(
        stdout,
        "2020-01-01T00:00:00.000Z  send_refused     refused    agent=claude session=c-1 \
         guard=hop_budget hops_spent=8 max_hops=8 \
         reason=\"conversation conv_1 has used all 8 of its hops\"\n\
         2020-01-01T00:00:01.000Z  approval         approved   tool=Bash\n"
    );

    // --json: the records as written, one per line.
    let (stdout, _) = home.run(&["--kind", "send_accepted", "--json"]);
    let records: Vec<Decision> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let deliveries: Vec<&str> = records
        .iter()
        .map(|d| d.delivery.as_deref().unwrap())
        .collect();
    assert_eq!(deliveries, vec!["dlv_500", "dlv_20", "dlv_10"]);

    let (stdout, _) = home.run(&[
        "--since",
        "90m",
        "--where",
        "details.target_selected_by=pin",
    ]);
    assert_eq!(stdout.lines().count(), 1);
    assert!(stdout.contains("target_chosen"), "{stdout}");
}

#[test]
fn bad_lines_are_reported_on_stderr_not_fatal() {
    let home = fixture();
    let current = home.root().join("decisions.jsonl");
    let mut text = std::fs::read_to_string(&current).unwrap();
    text.push_str(&format!(r#"{{"at":"{}","kind":"send_acc"#, ago(1)));
    std::fs::write(&current, text).unwrap();
    let (stdout, stderr) = home.run(&["--since", "24h", "--by", "kind", "--json"]);
    let got: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(got["total"], 6);
    assert_eq!(got["bad_lines"], 1);
    assert_eq!(
        stderr,
        "cross-agent decisions: skipped 1 unreadable line(s) (torn by a crash or not a decision \
         record)\n"
    );
}

#[test]
fn an_empty_home_says_so() {
    let home = Home {
        dir: TempDir::new().unwrap(),
    };
    let (stdout, stderr) = home.run(&["--by", "kind"]);
    assert_eq!(stdout, "COUNT   SHARE  KIND\n0 decision(s) in 0 group(s)\n");
    assert!(stderr.contains("nothing logged yet"), "{stderr}");
}

#[test]
fn bad_arguments_name_what_is_wrong() {
    let home = fixture();
    for (args, says) in [
        (&["--since", "yesterday"][..], "\"yesterday\" is not a time"),
        (&["--where", "guard"][..], "\"guard\" is not a condition"),
        (&["--by", "details..guard"][..], "is not a field"),
    ] {
        let out = home.cmd(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // A withheld field is allowed, with a warning.
    let (_, stderr) = home.run(&["--by", "details.message"]);
    assert!(stderr.contains("details.message is withheld"), "{stderr}");
}

#[test]
fn every_time_form_selects_its_window() {
    let home = fixture();
    let count = |args: &[&str]| {
        let mut args = args.to_vec();
        args.push("--json");
        home.run(&args).0.lines().count()
    };
    // Recent decisions were logged 2000, 600, 500, 300, 30, 20 and 10 minutes ago; two more in
    // 2020.
    for (since, matched) in [
        ("45s", 0),
        ("15m", 1),
        ("90m", 3),
        ("1h30m", 3),
        ("2h 15min", 3),
        ("8h", 4),
        ("24h", 6),
        ("1d", 6),
        ("2d", 7),
        ("1w", 7),
        ("2019-12-31T23:00:00-02:00", 7),
    ] {
        assert_eq!(count(&["--since", since]), matched, "--since {since}");
    }
    assert_eq!(count(&["--until", "25m"]), 7);
    assert_eq!(count(&["--since", "1d", "--until", "15m"]), 5);
    assert_eq!(count(&["--until", "2020-01-01T00:00:00.500Z"]), 1);
}
