//! The writer: whole records round trip, modes, withheld values, unknown kinds and fields, and
//! a torn last line.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use cross_agent_decisions::query::{self, Answer, Query};
use cross_agent_decisions::redact::WITHHELD;
use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, LogConfig, Outcome, clock};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::all_lines;

#[test]
fn records_round_trip_whole() {
    let home = TempDir::new().unwrap();
    let log = DecisionLog::with_config(home.path(), LogConfig::default());
    let refused = Decision::new(DecisionKind::SEND_REFUSED, Outcome::REFUSED)
        .agent("codex")
        .session("c-sender")
        .guard("hop_budget")
        .reason("conversation conv_1 has used all 8 of its hops")
        .conversation("conv_1")
        .detail("hops_spent", 8)
        .detail("max_hops", 8);
    let accepted = Decision::new(DecisionKind::SEND_ACCEPTED, Outcome::ACCEPTED)
        .at("2026-05-01T12:00:00.123Z")
        .delivery("dlv_1")
        .target_session("t-1")
        .detail("hop", 1);
    log.try_record(refused.clone()).unwrap();
    log.record(accepted.clone());
    assert_eq!(log.stats().written, 2);
    assert_eq!(log.stats().failed, 0);

    let lines = all_lines(home.path());
    assert_eq!(lines.len(), 2);
    // `at` leads every line, in the one 24-byte shape.
    assert!(lines[0].starts_with(r#"{"at":""#), "{}", lines[0]);
    let read: Vec<Decision> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(clock::is_canonical(read[0].at.as_bytes()), "{}", read[0].at);
    assert_eq!(read[0], refused.at(read[0].at.clone()));
    assert_eq!(read[1], accepted);
    assert_eq!(
        serde_json::from_str::<Value>(&lines[1]).unwrap(),
        json!({
            "at": "2026-05-01T12:00:00.123Z",
            "kind": "send_accepted",
            "outcome": "accepted",
            "delivery": "dlv_1",
            "target_session": "t-1",
            "details": {"hop": 1}
        })
    );

    for name in ["decisions.jsonl", "decisions.lock"] {
        let mode = std::fs::metadata(home.path().join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
}

#[test]
fn payloads_and_secrets_are_withheld() {
    let home = TempDir::new().unwrap();
    let log = DecisionLog::with_config(home.path(), LogConfig::default());
    let mut decision = Decision::new(DecisionKind::new("approval"), Outcome::new("approved"))
        .detail("message", "please deploy to prod")
        .detail("reply_text", "done")
        .detail("bot_token", "123456:ABC-secret")
        .detail("OPENAI_API_KEY", "sk-live-123")
        .detail("child_env", json!({"HOME": "/home/u"}))
        .detail("message_chars", 21)
        .detail("has_token", true)
        .detail("nested", json!({"prompt": "hi", "pattern": "rm -rf"}))
        .detail("long", "y".repeat(2000));
    decision
        .extra
        .insert("payload".into(), json!("top-level unknown payload"));
    log.try_record(decision).unwrap();
    assert_eq!(log.stats().withheld, 7);

    let line = &all_lines(home.path())[0];
    for secret in [
        "deploy",
        "done",
        "ABC-secret",
        "sk-live",
        "/home/u",
        "\"hi\"",
    ] {
        assert!(!line.contains(secret), "{secret} leaked: {line}");
    }
    let read: Value = serde_json::from_str(line).unwrap();
    assert_eq!(read["details"]["message"], WITHHELD);
    assert_eq!(read["details"]["child_env"], WITHHELD);
    assert_eq!(read["details"]["message_chars"], 21);
    assert_eq!(read["details"]["has_token"], true);
    assert_eq!(read["details"]["nested"]["pattern"], "rm -rf");
    assert_eq!(read["details"]["nested"]["prompt"], WITHHELD);
    assert_eq!(read["payload"], WITHHELD);
    assert_eq!(
        read["details"]["long"].as_str().unwrap().chars().count(),
        513
    );
}

#[test]
fn unknown_kinds_and_fields_survive() {
    // A line from a later version: a kind, an outcome and a top-level field this one does not
    // know.
    let future = json!({
        "at": "2026-05-01T12:00:00.000Z",
        "kind": "danger_match",
        "outcome": "blocked",
        "session": "s-1",
        "details": {"pattern": "rm -rf /", "pattern_id": "fs.rm_root"},
        "gate": {"name": "deploy", "verdict": "deny"},
        "schema": 2
    });
    let decision: Decision = serde_json::from_value(future.clone()).unwrap();
    assert_eq!(decision.kind, DecisionKind::new("danger_match"));
    assert_eq!(decision.extra["schema"], 2);
    assert_eq!(serde_json::to_value(&decision).unwrap(), future);

    // Written back through the writer, then read and counted by a query.
    let home = TempDir::new().unwrap();
    let log = DecisionLog::with_config(home.path(), LogConfig::default());
    log.try_record(decision.clone()).unwrap();
    let line = &all_lines(home.path())[0];
    assert_eq!(serde_json::from_str::<Value>(line).unwrap(), future);
    let report = query::run(
        home.path(),
        &Query {
            group_by: vec![query::FieldPath::parse("gate.verdict").unwrap()],
            ..Query::default()
        },
    )
    .unwrap();
    assert_eq!(
        report.answer,
        Answer::Groups(vec![query::Group {
            values: vec![Some("deny".into())],
            count: 1
        }])
    );
}

#[test]
fn a_torn_last_line_is_skipped_and_the_next_write_starts_clean() {
    let home = TempDir::new().unwrap();
    let log = DecisionLog::with_config(home.path(), LogConfig::default());
    for i in 0..3 {
        log.try_record(super::numbered(0, i)).unwrap();
    }
    // A writer that died mid-line.
    let path = home.path().join("decisions.jsonl");
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    write!(
        file,
        r#"{{"at":"{}","kind":"send_acc"#,
        super::minutes_ago(0)
    )
    .unwrap();
    drop(file);

    let report = query::run(home.path(), &Query::default()).unwrap();
    assert_eq!(report.stats.bad_lines, 1);
    let Answer::Records(records) = &report.answer else {
        panic!("records expected");
    };
    assert_eq!(records.len(), 3);

    // A new handle (a new process) appends: its line is whole, on a line of its own.
    let log = DecisionLog::with_config(home.path(), LogConfig::default());
    log.try_record(super::numbered(0, 3)).unwrap();
    let lines = all_lines(home.path());
    assert_eq!(lines.len(), 5);
    assert!(lines[3].ends_with("send_acc"), "{}", lines[3]);
    let last: Decision = serde_json::from_str(&lines[4]).unwrap();
    assert_eq!(last.details["seq"], 3);

    let report = query::run(home.path(), &Query::default()).unwrap();
    assert_eq!(report.stats.bad_lines, 1);
    assert_eq!(report.stats.matched, 4);
}

#[test]
fn a_write_error_is_counted_not_raised() {
    let home = TempDir::new().unwrap();
    // The log's directory is a file: nothing can be written there.
    let blocked = home.path().join("not-a-dir");
    std::fs::write(&blocked, "").unwrap();
    let log = DecisionLog::with_config(&blocked, LogConfig::default());
    log.record(super::numbered(0, 0));
    let clone = log.clone();
    clone.record(super::numbered(0, 1));
    assert_eq!(log.stats().failed, 2);
    assert_eq!(log.stats().written, 0);
    assert!(log.try_record(super::numbered(0, 2)).is_err());

    // A disabled log records nothing and never fails.
    let disabled = DecisionLog::disabled();
    disabled.record(super::numbered(0, 0));
    assert_eq!(disabled.stats(), Default::default());
    assert_eq!(disabled.path(), None);
}

/// A state directory of the bridge's own (docs/spec/cross-agent-mcp.md §7): a link planted at `decisions.jsonl` is never followed — not appended to, not
/// chmod-ed — and the failure is counted, not raised.
#[test]
fn a_link_at_the_log_is_refused_and_its_target_untouched() {
    let home = TempDir::new().unwrap();
    let outside = TempDir::new().unwrap();
    let target = outside.path().join("someone-elses");
    std::fs::write(&target, "theirs\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::symlink(&target, home.path().join("decisions.jsonl")).unwrap();

    let log = DecisionLog::with_config(home.path(), LogConfig::default());
    let decision = Decision::new(DecisionKind::SEND_REFUSED, Outcome::REFUSED);
    assert!(log.try_record(decision.clone()).is_err());
    log.record(decision);
    assert_eq!(log.stats().failed, 1);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs\n");
    let mode = std::fs::metadata(&target).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
}

/// The daemon's log: a decision written after its home was deleted fails instead of making the
/// home again (the daemon then notices the home is gone and stops).
#[test]
fn a_daemons_log_never_re_creates_a_deleted_home() {
    let tmp = TempDir::new().unwrap();
    let home = tmp.path().join("state");
    let log = DecisionLog::in_existing_home(&home);
    let decision = || Decision::new(DecisionKind::SEND_REFUSED, Outcome::REFUSED);
    assert!(log.try_record(decision()).is_err());
    assert!(!home.exists(), "the deleted home was re-created");
    std::fs::create_dir(&home).unwrap();
    log.try_record(decision()).unwrap();
    assert_eq!(all_lines(&home).len(), 1);
}
