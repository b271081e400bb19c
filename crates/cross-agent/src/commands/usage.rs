//! `cross-agent usage`: tokens and cost per session, agent, model, day or cwd, read from the
//! agents' own files (docs/usage.md) by `cross-agent-usage`; `usage --prices` prints the price
//! table in effect, `usage --limits` Codex's latest rate-limit windows. With budgets set in
//! `config.toml`'s `[usage.budget]`, the report ends with today's share of each.
//!
//! The report comes from the daemon's live usage index (`usage_report`), which keeps every
//! file's parse current from appended bytes; the daemon is started when none answers, as for
//! `sessions`. Only when it cannot serve does the command read the stores itself (saying why on
//! stderr) — the same readers and the same accounting, so both give the same report. Stdout
//! carries only the answer; files that could not be read are named on stderr.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use clap::Args;
use cross_agent_home::Home;
use cross_agent_protocol::timestamp::UnixMillis;
use cross_agent_protocol::usage::UsageReportParams;
use cross_agent_stores::StoreRoots;
use cross_agent_usage::budget::{self, Day, DaySpend};
use cross_agent_usage::{
    GroupBy, PriceTable, Report, Row, Since, account, budget_config, limits, scan,
};
use serde_json::json;

use crate::display::table::{Column, Plain};
use crate::display::{escape, escape_cell};

#[derive(Debug, Args)]
pub struct UsageArgs {
    /// Only calls at or after this: a duration back from now (24h, 7d), a UTC date
    /// (2026-12-01) or an RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// One row per session, agent, model, day (UTC) or cwd.
    #[arg(long, value_name = "GROUP", default_value = "session")]
    by: String,
    /// One JSON object instead of a table (money as exact micro-dollar decimals).
    #[arg(long)]
    json: bool,
    /// Print the price table in effect (shipped, merged with $CROSS_AGENT_HOME/prices.toml).
    #[arg(long, conflicts_with = "limits")]
    prices: bool,
    /// Print Codex's latest rate-limit windows: how much is used and when each resets.
    #[arg(long)]
    limits: bool,
}

impl UsageArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let home = Home::from_env()?;
        let prices = PriceTable::load(Some(home.root()))?;
        let stdout = std::io::stdout();
        let mut out = BufWriter::new(stdout.lock());
        if self.prices {
            write_prices(&mut out, &prices, self.json)?;
            out.flush()?;
            return Ok(ExitCode::SUCCESS);
        }
        if self.limits {
            write_limits(&mut out, self.json)?;
            out.flush()?;
            return Ok(ExitCode::SUCCESS);
        }
        let by: GroupBy = self.by.parse()?;
        let since = self
            .since
            .as_deref()
            .map(|t| Since::parse(t, UnixMillis::now()))
            .transpose()?;
        // A malformed budget is refused before anything is read (the error names the key).
        let budgets = budget_config::load(home.root())?;
        let since = since.map(|s| s.0);
        let report = usage_report(&prices, by, since);
        // Today's share of each budget, when any is set (budgets are per UTC day, whatever
        // `--since` says): today's calls grouped by agent, asked the same way.
        let today = Day::of(UnixMillis::now());
        let shares = (!budgets.is_empty()).then(|| {
            let by_agent = usage_report(&prices, GroupBy::Agent, Some(today.start()));
            budget::shares(&budgets, &DaySpend::of_report(&by_agent, today))
        });
        if self.json {
            let mut json = report.to_json();
            if let Some(shares) = &shares {
                json["budgets"] = json!({
                    "day": today.text(),
                    "budgets": shares.iter().map(|(share, _)| share).collect::<Vec<_>>(),
                });
            }
            serde_json::to_writer_pretty(&mut out, &json)?;
            writeln!(out)?;
        } else {
            write_report(&mut out, &report)?;
            if let Some(shares) = &shares {
                writeln!(out, "budgets today ({} UTC):", today.text())?;
                for (_, line) in shares {
                    writeln!(out, "  {line}")?;
                }
            }
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }
}

/// The report from the daemon, or read from the stores when it cannot serve it (saying why).
fn usage_report(prices: &PriceTable, by: GroupBy, since: Option<UnixMillis>) -> Report {
    from_daemon(by, since).unwrap_or_else(|why| {
        eprintln!("note: {why}; reading the stores directly");
        scan_report(prices, by, since)
    })
}

/// The report from the daemon's live index, starting the daemon when none answers; the error
/// says why it did not serve it. Files it could not read are named on stderr.
fn from_daemon(by: GroupBy, since: Option<UnixMillis>) -> Result<Report, String> {
    use super::sessions::{answers_nothing, daemon_client, index_caller, not_served, start_daemon};
    let home = super::sessions::state_home()?;
    let params = UsageReportParams {
        by: by.into(),
        since: since.map(|s| s.0),
        caller: index_caller(),
    };
    let ask = |params: UsageReportParams| daemon_client(&home)?.call(params);
    let wire = match ask(params.clone()) {
        Err(error) if answers_nothing(&error) => {
            start_daemon(&home)?;
            ask(params)
        }
        other => other,
    }
    .map_err(|e| not_served(e, "report usage"))?;
    for warning in &wire.warnings {
        eprintln!("cross-agent usage: {}", escape(warning));
    }
    Report::from_wire(&wire).ok_or_else(|| {
        "the cross-agent daemon sent a usage report this command cannot read".to_owned()
    })
}

/// The report read from the stores directly: every file, whole.
fn scan_report(prices: &PriceTable, by: GroupBy, since: Option<UnixMillis>) -> Report {
    let found = scan::scan(&StoreRoots::from_env());
    for warning in &found.warnings {
        eprintln!("cross-agent usage: {}", escape(warning));
    }
    Report::build(&account(&found.files), prices, by, since)
}

/// What each session has cost so far, keyed by session id, for `sessions`: from the daemon
/// when it answers, else from the stores (no note: the listing already said why).
pub(super) fn session_spent(
    ask_daemon: bool,
) -> std::collections::HashMap<String, cross_agent_stores::render::Spent> {
    let prices = Home::from_env()
        .ok()
        .and_then(|home| PriceTable::load(Some(home.root())).ok())
        .or_else(|| PriceTable::shipped().ok());
    let report = match ask_daemon.then(|| from_daemon(GroupBy::Session, None)) {
        Some(Ok(report)) => Some(report),
        _ => prices.map(|prices| scan_report(&prices, GroupBy::Session, None)),
    };
    report
        .map(|report| {
            report
                .rows
                .iter()
                .map(|row| {
                    (
                        row.key.clone(),
                        cross_agent_stores::render::Spent {
                            cost_usd: row.cost().map(|c| c.dollars_exact()),
                            tokens: Some(row.tokens.total()),
                        },
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn cost_cell(row: &Row) -> String {
    match (row.cost(), row.unpriced_calls) {
        (Some(cost), _) => cost.dollars_cents(),
        (None, _) if row.priced_cost.0 == 0 => "unknown".to_owned(),
        (None, n) => format!("{} + unknown ({n})", row.priced_cost.dollars_cents()),
    }
}

fn write_report(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    let group = match report.by {
        GroupBy::Session => "SESSION",
        GroupBy::Agent => "AGENT",
        GroupBy::Model => "MODEL",
        GroupBy::Day => "DAY",
        GroupBy::Cwd => "CWD",
    };
    let mut table = Plain::new(&[
        Column::left(group),
        Column::left("AGENT"),
        Column::right("CALLS"),
        Column::right("INPUT"),
        Column::right("OUTPUT"),
        Column::right("CACHE W"),
        Column::right("CACHE R"),
        Column::right("COST"),
    ]);
    for row in report.rows.iter().chain(std::iter::once(&report.total)) {
        table.row([
            escape_cell(&row.key).into_owned(),
            row.agent.map_or("-", |a| a.as_str()).to_owned(),
            row.calls.to_string(),
            row.tokens.input.to_string(),
            row.tokens.output.to_string(),
            (row.tokens.cache_write_5m + row.tokens.cache_write_1h).to_string(),
            row.tokens.cache_read.to_string(),
            cost_cell(row),
        ]);
    }
    table.write(out)?;
    if !report.total.unpriced_models.is_empty() {
        let models: Vec<&str> = report
            .total
            .unpriced_models
            .iter()
            .map(String::as_str)
            .collect();
        writeln!(
            out,
            "no price for: {} (add them to $CROSS_AGENT_HOME/prices.toml)",
            models.join(", ")
        )?;
    }
    for (agent, session) in &report.no_usage_recorded {
        writeln!(
            out,
            "{} {}: no usage recorded",
            agent.as_str(),
            escape_cell(session)
        )?;
    }
    writeln!(out, "prices of {}", report.prices_date)
}

/// Codex's latest rate-limit windows, from every rollout's `token_count` events.
fn write_limits(out: &mut impl Write, as_json: bool) -> anyhow::Result<()> {
    let found = scan::scan(&StoreRoots::from_env());
    for warning in &found.warnings {
        eprintln!("cross-agent usage: {warning}");
    }
    let view = account(&found.files)
        .rate_limits
        .map(|l| limits::view(&l, UnixMillis::now()));
    if as_json {
        serde_json::to_writer_pretty(&mut *out, &json!({ "codex": view }))?;
        writeln!(out)?;
        return Ok(());
    }
    let Some(view) = view else {
        writeln!(out, "codex: no rate limits recorded yet")?;
        return Ok(());
    };
    let mut table = Plain::new(&[
        Column::left("CODEX"),
        Column::right("USED"),
        Column::right("WINDOW"),
        Column::left("RESETS"),
    ]);
    for w in &view.windows {
        table.row([
            w.name.to_owned(),
            format!("{:.1}%", w.used_percent),
            w.window_text(),
            w.resets_text(),
        ]);
    }
    table.write(out)?;
    if let Some(at) = &view.observed_at {
        writeln!(out, "as Codex reported at {at}")?;
    }
    Ok(())
}

fn write_prices(out: &mut impl Write, prices: &PriceTable, as_json: bool) -> anyhow::Result<()> {
    if as_json {
        serde_json::to_writer_pretty(&mut *out, &json!(prices))?;
        writeln!(out)?;
        return Ok(());
    }
    let mut table = Plain::new(&[
        Column::left("MODEL"),
        Column::right("INPUT"),
        Column::right("OUTPUT"),
        Column::right("CACHE W 5M"),
        Column::right("CACHE W 1H"),
        Column::right("CACHE R"),
        Column::left("TIER"),
        Column::left("CHECKED"),
        Column::right("SRC"),
    ]);
    let rate = |r: Option<cross_agent_usage::Rate>| r.map_or("-".to_owned(), |r| r.dollars());
    // Sources are long URLs: the row names one by its number in the list under the table.
    let source_number = |source: &Option<String>| {
        source
            .as_ref()
            .and_then(|s| prices.sources.iter().position(|known| known == s))
            .map_or("-".to_owned(), |i| format!("[{}]", i + 1))
    };
    for (name, price) in &prices.models {
        let r = &price.rates;
        let tier = price.tier.map_or(String::new(), |t| {
            format!(
                "above {}: {} / {}",
                t.above,
                rate(t.rates.input),
                rate(t.rates.output)
            )
        });
        table.row([
            escape_cell(name).into_owned(),
            rate(r.input),
            rate(r.output),
            rate(r.cache_write_5m),
            rate(r.cache_write_1h),
            rate(r.cache_read),
            tier,
            price.checked.clone().unwrap_or_else(|| "-".to_owned()),
            source_number(&price.source),
        ]);
    }
    table.write(out)?;
    writeln!(out, "dollars per million tokens, as of {}", prices.date)?;
    for (i, source) in prices.sources.iter().enumerate() {
        writeln!(out, "[{}] {}", i + 1, escape_cell(source))?;
    }
    if let Some(file) = &prices.override_file {
        writeln!(
            out,
            "overridden by {}: {}",
            file.display(),
            prices.overridden.join(", ")
        )?;
    }
    Ok(())
}
