//! `cross-agent decisions`: ask the decisions log a question — "why did so many messages go to
//! that session today?" is `decisions --since 24h --where target_session=ID --by
//! details.target_selected_by`.
//!
//! Reads `$CROSS_AGENT_HOME/decisions.jsonl` and its rotated files directly (no daemon). Without
//! `--by` it prints the matching decisions, newest last (one readable line each, or the records
//! as written with `--json`); with `--by` it counts them by any fields, largest first (a table,
//! or one JSON object). Stdout carries only that; lines skipped as unreadable and files that
//! could not be read are reported on stderr, never fatal.

use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use cross_agent_decisions::query::{self, Answer, Condition, FieldPath, Group, Query, Report};
use cross_agent_decisions::{Decision, clock};
use cross_agent_home::Home;
use cross_agent_protocol::hosts::DecisionsQueryParams;
use serde_json::{Map, Value, json};

use crate::display::escape_cell;
use crate::display::table::{Column, Plain};

#[derive(Debug, Args)]
pub struct DecisionsArgs {
    /// Only decisions at or after this: a duration back from now (90m, 24h, 2d, 1w, 1h30m,
    /// "2h 15min") or an RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Only decisions before this (same forms as --since).
    #[arg(long, value_name = "WHEN")]
    until: Option<String>,
    /// Count by these fields instead of listing, largest first: kind, outcome, guard, agent,
    /// session, target_session, … or a dotted path into details (details.target_selected_by).
    /// Comma-separated for several.
    #[arg(long, value_name = "FIELD[,FIELD]", value_delimiter = ',')]
    by: Vec<String>,
    /// Only decisions whose FIELD equals VALUE (repeatable; all must hold). `FIELD=` matches a
    /// field that is missing or empty.
    #[arg(long = "where", value_name = "FIELD=VALUE")]
    conditions: Vec<String>,
    /// Only decisions of this kind (repeatable or comma-separated).
    #[arg(long, value_name = "KIND", value_delimiter = ',')]
    kind: Vec<String>,
    /// JSON: the records as written (one per line), or the counts as one object.
    #[arg(long)]
    json: bool,
    /// Ask that machine's log instead (a host of `cross-agent hosts list`), where it lies.
    #[arg(long, value_name = "NAME", conflicts_with = "hosts")]
    host: Option<String>,
    /// `all`: this machine's log and every host's, each asked where it lies, merged; each row
    /// names its host. A host that cannot be asked is named on stderr and the exit status is 3.
    #[arg(long, value_name = "all", value_parser = ["all"])]
    hosts: Option<String>,
}

impl DecisionsArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let now = clock::now_millis();
        let query = Query {
            since: self
                .since
                .as_deref()
                .map(|t| query::parse_time(t, now))
                .transpose()?,
            until: self
                .until
                .as_deref()
                .map(|t| query::parse_time(t, now))
                .transpose()?,
            kinds: self
                .kind
                .iter()
                .map(|k| k.trim().to_owned())
                .filter(|k| !k.is_empty())
                .collect(),
            conditions: self
                .conditions
                .iter()
                .map(|c| Condition::parse(c))
                .collect::<Result<_, _>>()?,
            group_by: self
                .by
                .iter()
                .map(|f| FieldPath::parse(f))
                .collect::<Result<_, _>>()?,
        };
        for field in query
            .group_by
            .iter()
            .chain(query.conditions.iter().map(|c| &c.field))
        {
            if query::names_withheld_field(field) {
                eprintln!(
                    "cross-agent decisions: {} is withheld from the log (payloads and secrets \
                     are never written), so every value of it reads [withheld]",
                    field.as_str()
                );
            }
        }

        if let Some(host) = self.host.as_deref().or(self.hosts.as_deref()) {
            let asked = DecisionsQueryParams {
                since: self.since,
                until: self.until,
                kinds: query.kinds.clone(),
                conditions: self.conditions,
                by: self.by,
            };
            return super::decisions_hosts::run(host, asked, &query, self.json);
        }

        let home = Home::from_env()?;
        // Nothing is read through a link someone else planted in the home (docs/spec/cross-agent-mcp.md §7).
        home.verify()?;
        let report = query::run(home.root(), &query)
            .with_context(|| format!("reading the decisions log in {}", home.root().display()))?;

        let stdout = std::io::stdout();
        let mut out = BufWriter::new(stdout.lock());
        match &report.answer {
            Answer::Records(lines) if self.json => {
                for line in lines {
                    writeln!(out, "{line}")?;
                }
            }
            Answer::Records(lines) => {
                for line in lines {
                    writeln!(out, "{}", escape_cell(&readable(line)))?;
                }
            }
            Answer::Groups(groups) if self.json => {
                serde_json::to_writer_pretty(&mut out, &groups_json(&query, &report, groups))?;
                writeln!(out)?;
            }
            Answer::Groups(groups) => write_table(&mut out, &query, groups)?,
        }
        out.flush()?;

        let stats = &report.stats;
        if stats.files == 0 {
            eprintln!(
                "cross-agent decisions: nothing logged yet in {}",
                home.root()
                    .join(cross_agent_decisions::CURRENT_FILE)
                    .display()
            );
        }
        if stats.bad_lines > 0 {
            eprintln!(
                "cross-agent decisions: skipped {} unreadable line(s) (torn by a crash or not a \
                 decision record)",
                stats.bad_lines
            );
        }
        for (path, error) in &stats.unreadable {
            eprintln!(
                "cross-agent decisions: could not read {}: {error}",
                path.display()
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// One decision on one line: time, kind, outcome, then the fields that are set. The caller
/// escapes it: details quote titles and peers' errors.
pub(super) fn readable(line: &str) -> String {
    let Ok(decision) = serde_json::from_str::<Decision>(line) else {
        return line.to_owned();
    };
    let mut text = format!(
        "{}  {:<16} {:<10}",
        decision.at, decision.kind, decision.outcome
    );
    let common = [
        ("agent", &decision.agent),
        ("session", &decision.session),
        ("target_session", &decision.target_session),
        ("delivery", &decision.delivery),
        ("conversation", &decision.conversation_id),
        ("guard", &decision.guard),
    ];
    for (name, value) in common {
        if let Some(value) = value {
            let _ = write!(text, " {name}={value}");
        }
    }
    for (name, value) in decision.details.iter().chain(decision.extra.iter()) {
        if value.is_null() {
            continue;
        }
        let _ = write!(text, " {name}={}", scalar(value));
    }
    if let Some(reason) = &decision.reason {
        let _ = write!(text, " reason={reason:?}");
    }
    text.trim_end().to_owned()
}

/// A string as itself, anything else as compact JSON.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn write_table(out: &mut impl Write, query: &Query, groups: &[Group]) -> std::io::Result<()> {
    let total: u64 = groups.iter().map(|g| g.count).sum();
    let headers: Vec<String> = query
        .group_by
        .iter()
        .map(|f| f.as_str().to_uppercase())
        .collect();
    let mut columns = vec![
        Column::right("COUNT"),
        // Wide enough for "100.0%" even before a row says so.
        Column::right("SHARE").at_least(6),
    ];
    columns.extend(headers.iter().map(|h| Column::left(h)));
    let mut table = Plain::new(&columns);
    for group in groups {
        let share = if total == 0 {
            0.0
        } else {
            group.count as f64 * 100.0 / total as f64
        };
        let mut cells = vec![group.count.to_string(), format!("{share:.1}%")];
        cells.extend(
            group
                .values
                .iter()
                .map(|v| v.as_deref().unwrap_or("-").to_owned()),
        );
        table.row(cells);
    }
    table.write(out)?;
    writeln!(
        out,
        "{total} decision(s) in {} group(s){}",
        groups.len(),
        window_text(query)
    )
}

pub(super) fn window_text(query: &Query) -> String {
    match (&query.since, &query.until) {
        (Some(since), Some(until)) => format!(" from {since} to {until}"),
        (Some(since), None) => format!(" since {since}"),
        (None, Some(until)) => format!(" before {until}"),
        (None, None) => String::new(),
    }
}

/// `{"by": [...], "since": …, "until": …, "total": N, "bad_lines": N, "groups": [{"key": {field:
/// value}, "count": N}]}` — values as text, `null` when the field is missing.
fn groups_json(query: &Query, report: &Report, groups: &[Group]) -> Value {
    let by: Vec<&str> = query.group_by.iter().map(FieldPath::as_str).collect();
    let groups: Vec<Value> = groups
        .iter()
        .map(|group| {
            let key: Map<String, Value> = by
                .iter()
                .zip(&group.values)
                .map(|(field, value)| {
                    (
                        (*field).to_owned(),
                        value.clone().map_or(Value::Null, Value::String),
                    )
                })
                .collect();
            json!({"key": key, "count": group.count})
        })
        .collect();
    json!({
        "by": by,
        "since": query.since,
        "until": query.until,
        "total": report.stats.matched,
        "bad_lines": report.stats.bad_lines,
        "groups": groups,
    })
}
