//! `cross-agent decisions --host NAME` and `--hosts all`: the same question asked of another
//! machine's decisions log, or of this machine's and every host's, where each log lies — the
//! local daemon sends `decisions_query` over each host's link (docs/remote.md) and merges the
//! answers. Only counts and records travel, never the logs.
//!
//! Every row says its machine: `host` in `--json` (`null` for this one), and a HOST column
//! (`(here)` for this one) in the table and the listing when more than one machine is shown. A
//! host that could not be asked is a line on stderr naming it and why, and the exit status is
//! [`EXIT_PARTIAL`]: a partial answer is never passed off as the whole.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use cross_agent_decisions::query::Query;
use cross_agent_protocol::hosts::{DecisionsQueryParams, DecisionsQueryResponse, HostCall};
use serde_json::{Value, json};

use super::bridge_client;
use super::decisions::{readable, window_text};
use crate::display::table::{Column, Plain};
use crate::display::{escape, escape_cell};

/// The exit status of an answer that leaves out a host that could not be asked.
pub const EXIT_PARTIAL: u8 = 3;

/// Asks `host` (a name, or `all`) through the local daemon and prints the answer.
pub fn run(
    host: &str,
    asked: DecisionsQueryParams,
    query: &Query,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let (_home, client) = bridge_client::connect()?;
    let answer: DecisionsQueryResponse =
        bridge_client::on_host(&client, host, HostCall::DecisionsQuery(asked))?;
    // A HOST column only when it tells rows apart.
    let several = answer.hosts.len() + answer.unreachable.len() > 1;

    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if !query.group_by.is_empty() {
        if json {
            serde_json::to_writer_pretty(&mut out, &groups_json(query, &answer))?;
            writeln!(out)?;
        } else {
            write_table(&mut out, query, &answer, several)?;
        }
    } else {
        for record in &answer.records {
            if json {
                writeln!(out, "{}", with_host(&record.line, record.host.as_deref()))?;
            } else if several {
                writeln!(
                    out,
                    "{:<8}  {}",
                    escape_cell(host_cell(record.host.as_deref())),
                    escape_cell(&readable(&record.line))
                )?;
            } else {
                writeln!(out, "{}", escape_cell(&readable(&record.line)))?;
            }
        }
    }
    out.flush()?;

    for warning in &answer.warnings {
        eprintln!("cross-agent decisions: {}", escape(warning));
    }
    for down in &answer.unreachable {
        eprintln!(
            "cross-agent decisions: host `{}` could not be asked, its decisions are not counted \
             here: {}",
            escape(&down.host),
            escape(&down.reason)
        );
    }
    Ok(if answer.unreachable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_PARTIAL)
    })
}

fn host_cell(host: Option<&str>) -> &str {
    host.unwrap_or("(here)")
}

/// The record as written with `"host"` put first: the rest of the line is kept byte for byte,
/// not re-encoded.
fn with_host(line: &str, host: Option<&str>) -> String {
    let host = Value::from(host);
    match line.trim_start().strip_prefix('{') {
        Some(rest) if rest.trim_start().starts_with('}') => format!("{{\"host\":{host}}}"),
        Some(rest) => format!("{{\"host\":{host},{rest}"),
        // Not an object (the log holds only objects; a reader never drops a line it was given).
        None => json!({"host": host, "line": line}).to_string(),
    }
}

fn write_table(
    out: &mut impl Write,
    query: &Query,
    answer: &DecisionsQueryResponse,
    several: bool,
) -> std::io::Result<()> {
    let total: u64 = answer.groups.iter().map(|g| g.count).sum();
    let headers: Vec<String> = query
        .group_by
        .iter()
        .map(|f| f.as_str().to_uppercase())
        .collect();
    let mut columns = Vec::new();
    if several {
        columns.push(Column::left("HOST"));
    }
    columns.push(Column::right("COUNT"));
    columns.push(Column::right("SHARE").at_least(6));
    columns.extend(headers.iter().map(|h| Column::left(h)));
    let mut table = Plain::new(&columns);
    for group in &answer.groups {
        let share = if total == 0 {
            0.0
        } else {
            group.count as f64 * 100.0 / total as f64
        };
        let mut cells = Vec::new();
        if several {
            cells.push(host_cell(group.host.as_deref()).to_owned());
        }
        cells.push(group.count.to_string());
        cells.push(format!("{share:.1}%"));
        cells.extend(
            group
                .key
                .iter()
                .map(|v| v.as_deref().unwrap_or("-").to_owned()),
        );
        table.row(cells);
    }
    table.write(out)?;
    let machines = answer.hosts.len();
    writeln!(
        out,
        "{total} decision(s) in {} group(s) on {machines} machine(s){}",
        answer.groups.len(),
        window_text(query)
    )
}

/// The local `--by --json` object, each group naming its `host`, with the machines counted
/// and those that could not be asked.
fn groups_json(query: &Query, answer: &DecisionsQueryResponse) -> Value {
    let by: Vec<&str> = query.group_by.iter().map(|f| f.as_str()).collect();
    let groups: Vec<Value> = answer
        .groups
        .iter()
        .map(|group| {
            let key: serde_json::Map<String, Value> = by
                .iter()
                .zip(&group.key)
                .map(|(field, value)| ((*field).to_owned(), Value::from(value.clone())))
                .collect();
            json!({"host": group.host, "key": key, "count": group.count})
        })
        .collect();
    json!({
        "by": by,
        "since": query.since,
        "until": query.until,
        "total": answer.groups.iter().map(|g| g.count).sum::<u64>(),
        "hosts": answer.hosts,
        "unreachable": answer.unreachable,
        "warnings": answer.warnings,
        "groups": groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_goes_first_and_the_rest_stays_as_written() {
        assert_eq!(
            with_host(r#"{"at":"x", "kind":"send"}"#, Some("box")),
            r#"{"host":"box","at":"x", "kind":"send"}"#
        );
        assert_eq!(
            with_host(r#"{"at":"x"}"#, None),
            r#"{"host":null,"at":"x"}"#
        );
        assert_eq!(with_host("{}", None), r#"{"host":null}"#);
        assert_eq!(
            with_host("torn", Some("box")),
            r#"{"host":"box","line":"torn"}"#
        );
    }
}
