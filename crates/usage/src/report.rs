//! Totals grouped by session, agent, model, day (UTC) or cwd, over a window, priced. A group
//! with any call whose cost is unknown shows the known part and says how many calls were not
//! priced — never a cost that quietly counts them as 0.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use cross_agent_protocol::Agent;
use cross_agent_protocol::timestamp::UnixMillis;
use serde::Serialize;
use serde_json::{Value, json};

use crate::account::{Accounting, RateLimits};
use crate::error::{Error, Result};
use crate::keys::ModelId;
use crate::money::Money;
use crate::prices::{Price, PriceTable};
use crate::tokens::Tokens;

/// What the rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    Session,
    Agent,
    Model,
    /// The UTC calendar day of the call.
    Day,
    Cwd,
}

impl FromStr for GroupBy {
    type Err = Error;
    fn from_str(text: &str) -> Result<GroupBy> {
        Ok(match text.trim() {
            "session" => GroupBy::Session,
            "agent" => GroupBy::Agent,
            "model" => GroupBy::Model,
            "day" => GroupBy::Day,
            "cwd" => GroupBy::Cwd,
            _ => {
                return Err(Error::BadGroupBy {
                    text: text.to_owned(),
                });
            }
        })
    }
}

/// The start of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Since(pub UnixMillis);

impl Since {
    /// A duration back from `now` (`24h`, `7d`, `90m`), a UTC date (`2026-12-01`) or an RFC 3339
    /// time.
    pub fn parse(text: &str, now: UnixMillis) -> Result<Since> {
        let text = text.trim();
        let bad = || Error::BadSince {
            text: text.to_owned(),
        };
        if let Ok(d) = humantime::parse_duration(text) {
            let back = i64::try_from(d.as_millis()).map_err(|_| bad())?;
            return Ok(Since(UnixMillis(now.0.saturating_sub(back))));
        }
        if let Some(at) = UnixMillis::parse_rfc3339(text) {
            return Ok(Since(at));
        }
        let format = time::macros::format_description!("[year]-[month]-[day]");
        let date = time::Date::parse(text, &format).map_err(|_| bad())?;
        let secs = date.midnight().assume_utc().unix_timestamp();
        Ok(Since(UnixMillis(secs.saturating_mul(1000))))
    }
}

/// One group's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub key: String,
    /// The agent, when every call of the group is one agent's.
    pub agent: Option<Agent>,
    pub calls: u64,
    pub tokens: Tokens,
    /// The cost of the calls that have a price.
    pub priced_cost: Money,
    /// Calls whose cost is unknown (no price for the model, or none recorded).
    pub unpriced_calls: u64,
    /// The models of those calls (`(none)` when the file names none).
    pub unpriced_models: BTreeSet<String>,
}

impl Row {
    /// The cost, when every call in the row has one.
    pub fn cost(&self) -> Option<Money> {
        (self.unpriced_calls == 0).then_some(self.priced_cost)
    }

    fn add(&mut self, agent: Agent, tokens: &Tokens, cost: Option<Money>, model: Option<&str>) {
        self.agent = match (self.calls, self.agent) {
            (0, _) => Some(agent),
            (_, Some(a)) if a == agent => Some(a),
            _ => None,
        };
        self.calls += 1;
        self.tokens.add(tokens);
        match cost {
            Some(c) => self.priced_cost = self.priced_cost.saturating_add(c),
            None => {
                self.unpriced_calls += 1;
                self.unpriced_models
                    .insert(model.unwrap_or("(none)").to_owned());
            }
        }
    }

    /// The row as `usage --json` prints it: money as exact micro-dollar decimals.
    pub fn to_json(&self) -> Value {
        json!({
            "key": self.key,
            "agent": self.agent,
            "calls": self.calls,
            "tokens": self.tokens,
            "cost_usd": self.cost().map(Money::dollars_exact),
            "priced_cost_usd": self.priced_cost.dollars_exact(),
            "unpriced_calls": self.unpriced_calls,
            "unpriced_models": self.unpriced_models,
        })
    }
}

/// The answer of `usage`.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub by: GroupBy,
    pub since: Option<UnixMillis>,
    /// Largest cost first, then most tokens.
    pub rows: Vec<Row>,
    pub total: Row,
    pub no_usage_recorded: Vec<(Agent, String)>,
    pub rate_limits: Option<RateLimits>,
    pub prices_date: String,
}

/// The row named `key`, made when there is none (looked up by the name first: a row's key is
/// made once, not once per call).
fn row_named<'a>(groups: &'a mut BTreeMap<String, Row>, key: &str) -> Option<&'a mut Row> {
    if !groups.contains_key(key) {
        groups.insert(
            key.to_owned(),
            Row {
                key: key.to_owned(),
                ..Row::default()
            },
        );
    }
    groups.get_mut(key)
}

impl Report {
    pub fn build(
        accounting: &Accounting,
        prices: &PriceTable,
        by: GroupBy,
        since: Option<UnixMillis>,
    ) -> Report {
        let mut groups: BTreeMap<String, Row> = BTreeMap::new();
        let mut total = Row {
            key: "total".to_owned(),
            ..Row::default()
        };
        let in_window =
            |at: Option<UnixMillis>| since.is_none_or(|since| at.is_some_and(|t| t >= since));
        // Each model's price looked up once, by its id, not by its name for every call.
        let mut price_of: Vec<Option<Option<&Price>>> = vec![None; accounting.models.len()];
        let mut cost = |model: Option<ModelId>, name: Option<&str>, tokens: &Tokens| {
            let price = match (model, name) {
                (Some(id), Some(name)) => match price_of.get_mut(id.index()) {
                    Some(slot) => *slot.get_or_insert_with(|| prices.price(name)),
                    None => prices.price(name),
                },
                _ => None,
            };
            price?.cost(tokens)
        };
        // Records on disk are read back in their order there, a window at a time; a share whose
        // latest call is before the window is not read at all.
        let (shares, mut window) = crate::account::in_disk_order(
            accounting
                .chunks
                .iter()
                .filter(|share| since.is_none_or(|since| share.may_count_since(since))),
        );
        for share in shares {
            let agent = share.agent;
            // By session, agent or cwd every call of a share has its row: looked up once, at
            // the share's first call in the window (a share with none makes no row).
            let share_key: Option<&str> = match by {
                GroupBy::Session => Some(&share.session_id),
                GroupBy::Agent => Some(agent.as_str()),
                GroupBy::Cwd => Some(share.cwd.as_deref().unwrap_or("(unknown)")),
                GroupBy::Model | GroupBy::Day => None,
            };
            if let Some(key) = share_key {
                let mut calls = share
                    .calls_in(&mut window)
                    .filter(|call| in_window(call.timestamp));
                let Some(first) = calls.next() else {
                    continue;
                };
                let Some(row) = row_named(&mut groups, key) else {
                    continue;
                };
                for call in std::iter::once(first).chain(calls) {
                    let model = call.model.and_then(|id| accounting.models.str(id));
                    let cost = cost(call.model, model, &call.tokens);
                    row.add(agent, &call.tokens, cost, model);
                    total.add(agent, &call.tokens, cost, model);
                }
                continue;
            }
            for call in share.calls_in(&mut window) {
                if !in_window(call.timestamp) {
                    continue;
                }
                let model = call.model.and_then(|id| accounting.models.str(id));
                let day_key;
                let key: &str = match by {
                    GroupBy::Day => {
                        day_key = call.timestamp.map_or_else(|| "(no time)".to_owned(), day);
                        &day_key
                    }
                    _ => model.unwrap_or("(none)"),
                };
                let cost = cost(call.model, model, &call.tokens);
                if let Some(row) = row_named(&mut groups, key) {
                    row.add(agent, &call.tokens, cost, model);
                }
                total.add(agent, &call.tokens, cost, model);
            }
        }
        let mut rows: Vec<Row> = groups.into_values().collect();
        rows.sort_by(|a, b| {
            b.priced_cost
                .cmp(&a.priced_cost)
                .then(b.tokens.total().cmp(&a.tokens.total()))
                .then(a.key.cmp(&b.key))
        });
        Report {
            by,
            since,
            rows,
            total,
            no_usage_recorded: accounting.no_usage_recorded.clone(),
            rate_limits: accounting.rate_limits.clone(),
            prices_date: prices.date.clone(),
        }
    }

    /// The whole report as one JSON object.
    pub fn to_json(&self) -> Value {
        json!({
            "by": self.by,
            "since": self.since.map(UnixMillis::to_rfc3339),
            "rows": self.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
            "total": self.total.to_json(),
            "no_usage_recorded": self.no_usage_recorded.iter()
                .map(|(agent, session)| json!({"agent": agent, "session_id": session}))
                .collect::<Vec<_>>(),
            "rate_limits": self.rate_limits,
            "prices_date": self.prices_date,
        })
    }
}

/// `YYYY-MM-DD` of a UTC instant.
fn day(at: UnixMillis) -> String {
    let text = at.to_rfc3339();
    text.get(..10).unwrap_or(&text).to_owned()
}
