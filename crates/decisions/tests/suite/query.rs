//! Queries over rotated files: the window, kinds, conditions, grouped counts by top-level and
//! dotted fields, largest first, and skipping files outside the window.

use cross_agent_decisions::query::{self, Answer, Condition, FieldPath, Group, Query, parse_time};
use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, LogConfig, Outcome, clock};
use pretty_assertions::assert_eq;
use tempfile::TempDir;

use super::minutes_ago;

const HOUR: i64 = 60;
const DAY: i64 = 24 * HOUR;

/// A log spread over three days in small rotated files, written oldest first.
fn fixture() -> TempDir {
    let home = TempDir::new().unwrap();
    let log = DecisionLog::with_config(
        home.path(),
        LogConfig {
            max_bytes: 400,
            ..LogConfig::default()
        },
    );
    let accepted = |ago: i64, by: &str, target: &str| {
        Decision::new(DecisionKind::SEND_ACCEPTED, Outcome::ACCEPTED)
            .at(minutes_ago(ago))
            .agent("codex")
            .target_session(target)
            .detail("target_selected_by", by)
    };
    let refused = |ago: i64, guard: &str| {
        Decision::new(DecisionKind::SEND_REFUSED, Outcome::REFUSED)
            .at(minutes_ago(ago))
            .agent("claude")
            .guard(guard)
    };
    let mut all = vec![
        accepted(3 * DAY, "caller", "t-old"),
        accepted(3 * DAY - 1, "caller", "t-old"),
        refused(30 * HOUR, "hop_budget"),
        refused(10 * HOUR, "hop_budget"),
        refused(10 * HOUR - 1, "hop_budget"),
        refused(10 * HOUR - 2, "self_call"),
        refused(10 * HOUR - 3, "hop_budget"),
        Decision::new(DecisionKind::new("approval"), Outcome::new("approved"))
            .at(minutes_ago(150))
            .detail("tool", "Bash"),
        accepted(HOUR, "discovery", "t-1"),
        accepted(HOUR - 1, "discovery", "t-1"),
        accepted(HOUR - 2, "pin", "t-2"),
        accepted(HOUR - 3, "discovery", "t-1"),
    ];
    for (i, outcome) in ["delivered", "failed", "delivered"].into_iter().enumerate() {
        all.push(
            Decision::new(DecisionKind::DELIVERY_OUTCOME, Outcome::new(outcome))
                .at(minutes_ago(5 - i as i64))
                .detail("hop", i as u64 + 1),
        );
    }
    for d in all {
        log.try_record(d).unwrap();
    }
    home
}

fn since(text: &str) -> Option<String> {
    Some(parse_time(text, clock::now_millis()).unwrap())
}

fn fields(text: &str) -> Vec<FieldPath> {
    text.split(',')
        .map(|f| FieldPath::parse(f).unwrap())
        .collect()
}

fn groups(report: &query::Report) -> Vec<(Vec<Option<&str>>, u64)> {
    let Answer::Groups(groups) = &report.answer else {
        panic!("groups expected");
    };
    groups
        .iter()
        .map(|Group { values, count }| (values.iter().map(Option::as_deref).collect(), *count))
        .collect()
}

fn records(report: &query::Report) -> Vec<Decision> {
    let Answer::Records(lines) = &report.answer else {
        panic!("records expected");
    };
    lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn counts_by_kind_in_the_last_day_largest_first() {
    let home = fixture();
    assert!(
        cross_agent_decisions::rotate::rotated_files(home.path())
            .unwrap()
            .len()
            > 4
    );
    let report = query::run(
        home.path(),
        &Query {
            since: since("24h"),
            group_by: fields("kind"),
            ..Query::default()
        },
    )
    .unwrap();
    assert_eq!(
        groups(&report),
        vec![
            (vec![Some("send_accepted")], 4),
            (vec![Some("send_refused")], 4),
            (vec![Some("delivery_outcome")], 3),
            (vec![Some("approval")], 1),
        ]
    );
    assert_eq!(report.stats.matched, 12);
    assert_eq!(report.stats.bad_lines, 0);
    // The files of three days and thirty hours ago were not read.
    assert!(report.stats.files_skipped >= 1, "{:?}", report.stats);
}

#[test]
fn counts_by_several_and_dotted_fields() {
    let home = fixture();
    let run = |q: Query| query::run(home.path(), &q).unwrap();

    let by_guard = run(Query {
        since: since("1d"),
        group_by: fields("guard"),
        ..Query::default()
    });
    assert_eq!(
        groups(&by_guard),
        vec![
            (vec![None], 8),
            (vec![Some("hop_budget")], 3),
            (vec![Some("self_call")], 1),
        ]
    );

    let by_selection = run(Query {
        since: since("1d"),
        kinds: vec!["send_accepted".into()],
        group_by: fields("details.target_selected_by,target_session"),
        ..Query::default()
    });
    assert_eq!(
        groups(&by_selection),
        vec![
            (vec![Some("discovery"), Some("t-1")], 3),
            (vec![Some("pin"), Some("t-2")], 1),
        ]
    );

    // Numbers group by their JSON text.
    let by_hop = run(Query {
        kinds: vec!["delivery_outcome".into()],
        group_by: fields("outcome,details.hop"),
        ..Query::default()
    });
    assert_eq!(
        groups(&by_hop),
        vec![
            (vec![Some("delivered"), Some("1")], 1),
            (vec![Some("delivered"), Some("3")], 1),
            (vec![Some("failed"), Some("2")], 1),
        ]
    );
}

#[test]
fn lists_matching_records_newest_last() {
    let home = fixture();
    let run = |q: Query| records(&query::run(home.path(), &q).unwrap());

    let to_t1 = run(Query {
        conditions: vec![Condition::parse("target_session=t-1").unwrap()],
        ..Query::default()
    });
    assert_eq!(to_t1.len(), 3);
    assert!(to_t1.windows(2).all(|w| w[0].at < w[1].at));

    let older = run(Query {
        until: since("24h"),
        ..Query::default()
    });
    let kinds: Vec<&str> = older.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(
        kinds,
        vec!["send_accepted", "send_accepted", "send_refused"]
    );
    assert_eq!(older[0].target_session.as_deref(), Some("t-old"));

    let window = run(Query {
        since: since("3h"),
        until: since("30m"),
        ..Query::default()
    });
    let kinds: Vec<&str> = window.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(
        kinds,
        vec![
            "approval",
            "send_accepted",
            "send_accepted",
            "send_accepted",
            "send_accepted"
        ]
    );

    // Several conditions all hold; `FIELD=` matches a missing field.
    let hop_refusals = run(Query {
        kinds: vec!["send_refused".into(), "send_accepted".into()],
        conditions: vec![
            Condition::parse("guard=hop_budget").unwrap(),
            Condition::parse("agent=claude").unwrap(),
        ],
        ..Query::default()
    });
    assert_eq!(hop_refusals.len(), 4);
    let unguarded_refusals = run(Query {
        kinds: vec!["send_refused".into()],
        conditions: vec![Condition::parse("guard=").unwrap()],
        ..Query::default()
    });
    assert_eq!(unguarded_refusals, vec![]);
    let no_tool = run(Query {
        conditions: vec![Condition::parse("details.tool=").unwrap()],
        ..Query::default()
    });
    assert_eq!(no_tool.len(), 14);
}

#[test]
fn bad_lines_in_the_window_are_counted_not_fatal() {
    let home = fixture();
    let newest = cross_agent_decisions::rotate::rotated_files(home.path())
        .unwrap()
        .pop()
        .unwrap()
        .1;
    let mut text = std::fs::read_to_string(&newest).unwrap();
    text.push_str("not json at all\n{\"kind\":\"no_at\"}\n\n");
    std::fs::write(&newest, text).unwrap();
    let report = query::run(
        home.path(),
        &Query {
            since: since("24h"),
            group_by: fields("kind"),
            ..Query::default()
        },
    )
    .unwrap();
    assert_eq!(report.stats.bad_lines, 2);
    assert_eq!(report.stats.matched, 12);
}

#[test]
fn an_absent_log_is_an_empty_answer() {
    let home = TempDir::new().unwrap();
    let report = query::run(&home.path().join("nothing-here"), &Query::default()).unwrap();
    assert_eq!(report.answer, Answer::Records(vec![]));
    assert_eq!(report.stats.files, 0);
}

#[test]
fn times_and_fields_parse() {
    let now = clock::to_millis("2026-05-03T12:00:00Z").unwrap();
    let at = |t: &str| parse_time(t, now).unwrap();
    assert_eq!(at("24h"), "2026-05-02T12:00:00.000Z");
    assert_eq!(at("2d"), "2026-05-01T12:00:00.000Z");
    assert_eq!(at("90m"), "2026-05-03T10:30:00.000Z");
    assert_eq!(at("1h30m"), "2026-05-03T10:30:00.000Z");
    assert_eq!(at("1w"), "2026-04-26T12:00:00.000Z");
    assert_eq!(at("2026-05-01T14:00:00+02:00"), "2026-05-01T12:00:00.000Z");
    for bad in ["", "24", "h", "24x", "yesterday", "2026-05-01"] {
        assert!(parse_time(bad, now).is_err(), "{bad}");
    }
    assert!(FieldPath::parse("details..guard").is_err());
    assert!(FieldPath::parse("").is_err());
    assert!(Condition::parse("guard").is_err());
    assert_eq!(
        Condition::parse("details.pattern=a=b").unwrap().value,
        "a=b"
    );
}

/// One big current file (no rotation) of `n` records a minute apart, oldest first, each padded
/// to vary its length, so lines fall across the scanner's piece boundaries at every offset.
/// Records whose index is in `late` carry a stamp 30 s newer than their place (a writer whose
/// clock ran ahead).
fn big_log(n: i64, late: &[i64]) -> TempDir {
    let home = TempDir::new().unwrap();
    let now = clock::now_millis();
    let mut text = String::new();
    for i in 0..n {
        let mut at = now - (n - i) * 60_000;
        if late.contains(&i) {
            at += 30_000;
        }
        let padding = "x".repeat((i * 37 % 700) as usize);
        let line = Decision::new(DecisionKind::SEND_ACCEPTED, Outcome::ACCEPTED)
            .at(clock::format_millis(at))
            .detail("padding", padding.as_str());
        text.push_str(&serde_json::to_string(&line).unwrap());
        text.push('\n');
    }
    std::fs::write(home.path().join("decisions.jsonl"), text).unwrap();
    home
}

fn count_since(home: &TempDir, minutes: i64) -> query::Report {
    query::run(
        home.path(),
        &Query {
            since: Some(minutes_ago(minutes)),
            group_by: fields("kind"),
            ..Query::default()
        },
    )
    .unwrap()
}

#[test]
fn a_since_window_is_found_by_bisection_without_reading_the_older_records() {
    // 20,000 records, about 9 MB: the last 500 minutes are the window (the record written
    // 500 minutes ago is just older than the window, which starts a moment later).
    let home = big_log(20_000, &[]);
    let len = std::fs::metadata(home.path().join("decisions.jsonl"))
        .unwrap()
        .len();
    let report = count_since(&home, 500);
    assert_eq!(report.stats.matched, 499);
    assert!(
        report.stats.bytes_read < len / 4,
        "read {} of {len} bytes",
        report.stats.bytes_read
    );
}

#[test]
fn records_a_little_out_of_order_at_the_window_edge_are_still_counted() {
    // Written 500 and 501 minutes ago but stamped 30 s later (their writer's clock ran ahead):
    // the first falls in the window, out of order with the record after it.
    let home = big_log(20_000, &[19_500, 19_499]);
    assert_eq!(count_since(&home, 500).stats.matched, 500);
}

#[test]
fn every_line_of_a_file_cut_into_pieces_is_read_once() {
    // About 9 MB in one file: several pieces, every line counted once whatever its length.
    let home = big_log(20_000, &[]);
    let report = query::run(
        home.path(),
        &Query {
            group_by: fields("kind"),
            ..Query::default()
        },
    )
    .unwrap();
    assert_eq!(report.stats.lines, 20_000);
    assert_eq!(report.stats.matched, 20_000);
    assert_eq!(report.stats.bad_lines, 0);
}
