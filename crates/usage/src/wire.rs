//! A [`Report`] over the daemon's protocol (`usage_report`) and back, unchanged: the daemon
//! builds the report from its live index, the CLI prints it exactly as it prints one it built
//! itself from the files.

use std::collections::BTreeSet;

use cross_agent_protocol::timestamp::UnixMillis;
use cross_agent_protocol::usage::{
    UsageGroupBy, UsageReportResponse, UsageRow, UsageSessionRef, UsageTokens,
};

use crate::account::RateLimits;
use crate::money::Money;
use crate::report::{GroupBy, Report, Row};
use crate::tokens::Tokens;

impl From<GroupBy> for UsageGroupBy {
    fn from(by: GroupBy) -> UsageGroupBy {
        match by {
            GroupBy::Session => UsageGroupBy::Session,
            GroupBy::Agent => UsageGroupBy::Agent,
            GroupBy::Model => UsageGroupBy::Model,
            GroupBy::Day => UsageGroupBy::Day,
            GroupBy::Cwd => UsageGroupBy::Cwd,
        }
    }
}

impl From<UsageGroupBy> for GroupBy {
    fn from(by: UsageGroupBy) -> GroupBy {
        match by {
            UsageGroupBy::Session => GroupBy::Session,
            UsageGroupBy::Agent => GroupBy::Agent,
            UsageGroupBy::Model => GroupBy::Model,
            UsageGroupBy::Day => GroupBy::Day,
            UsageGroupBy::Cwd => GroupBy::Cwd,
        }
    }
}

impl Row {
    pub fn to_wire(&self) -> UsageRow {
        let t = &self.tokens;
        UsageRow {
            key: self.key.clone(),
            agent: self.agent,
            calls: self.calls,
            tokens: UsageTokens {
                input: t.input,
                output: t.output,
                cache_write_5m: t.cache_write_5m,
                cache_write_1h: t.cache_write_1h,
                cache_read: t.cache_read,
            },
            priced_cost_picodollars: self.priced_cost.0.to_string(),
            unpriced_calls: self.unpriced_calls,
            unpriced_models: self.unpriced_models.iter().cloned().collect(),
        }
    }

    /// The row a daemon sent; `None` when its cost is not a whole number of picodollars.
    pub fn from_wire(row: &UsageRow) -> Option<Row> {
        let t = &row.tokens;
        Some(Row {
            key: row.key.clone(),
            agent: row.agent,
            calls: row.calls,
            tokens: Tokens {
                input: t.input,
                output: t.output,
                cache_write_5m: t.cache_write_5m,
                cache_write_1h: t.cache_write_1h,
                cache_read: t.cache_read,
            },
            priced_cost: Money(row.priced_cost_picodollars.parse().ok()?),
            unpriced_calls: row.unpriced_calls,
            unpriced_models: row.unpriced_models.iter().cloned().collect::<BTreeSet<_>>(),
        })
    }
}

impl Report {
    /// The report as `usage_report` answers it (`warnings` are the caller's to add).
    pub fn to_wire(&self) -> UsageReportResponse {
        UsageReportResponse {
            by: self.by.into(),
            since: self.since.map(|s| s.0),
            rows: self.rows.iter().map(Row::to_wire).collect(),
            total: self.total.to_wire(),
            no_usage_recorded: self
                .no_usage_recorded
                .iter()
                .map(|(agent, session_id)| UsageSessionRef {
                    agent: *agent,
                    session_id: session_id.clone(),
                })
                .collect(),
            rate_limits: self
                .rate_limits
                .as_ref()
                .and_then(|l| serde_json::to_value(l).ok()),
            prices_date: self.prices_date.clone(),
            warnings: Vec::new(),
        }
    }

    /// The report a daemon sent; `None` when a field is not what this version writes (a cost
    /// that is not a number, rate limits of another shape).
    pub fn from_wire(wire: &UsageReportResponse) -> Option<Report> {
        let rate_limits = match &wire.rate_limits {
            None => None,
            Some(value) => Some(serde_json::from_value::<RateLimits>(value.clone()).ok()?),
        };
        Some(Report {
            by: wire.by.into(),
            since: wire.since.map(UnixMillis),
            rows: wire
                .rows
                .iter()
                .map(Row::from_wire)
                .collect::<Option<Vec<_>>>()?,
            total: Row::from_wire(&wire.total)?,
            no_usage_recorded: wire
                .no_usage_recorded
                .iter()
                .map(|r| (r.agent, r.session_id.clone()))
                .collect(),
            rate_limits,
            prices_date: wire.prices_date.clone(),
        })
    }
}
