//! Daily budgets and when to announce them (docs/usage.md, "Budgets"; issue 29 §2). Pure: the
//! spend of one UTC day per agent and what was already announced go in, the crossings to
//! announce come out — the daemon's budget watcher does the reading, sending and keeping.
//!
//! A budget is one of `[usage.budget]` in `config.toml` ([`crate::budget_config`]): `daily`
//! for all agents together, or one agent's (`claude`, `codex`, …). Each is announced when its
//! spend reaches 80 % and 100 %, once each per budget per day. Only the priced part of the spend
//! counts against a budget; calls with no price are named beside it, never counted as 0 or
//! guessed. A spend that jumps past both thresholds between two looks is announced once, at
//! 100 % (an 80 % notice after the 100 % one would be noise). A budget changed during the day is
//! a new budget: its thresholds are announced again.

use std::collections::BTreeMap;

use cross_agent_protocol::Agent;
use cross_agent_protocol::timestamp::UnixMillis;
use serde::{Deserialize, Serialize};

use crate::account::Accounting;
use crate::money::Money;
use crate::prices::PriceTable;
use crate::report::Report;

const DAY_MS: i64 = 86_400_000;

/// A UTC calendar day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Day(i64);

impl Day {
    /// The UTC day `at` falls in.
    pub fn of(at: UnixMillis) -> Day {
        Day(at.0.div_euclid(DAY_MS))
    }

    /// Its first millisecond.
    pub fn start(self) -> UnixMillis {
        UnixMillis(self.0.saturating_mul(DAY_MS))
    }

    /// The first millisecond of the next day.
    pub fn end(self) -> UnixMillis {
        UnixMillis(self.0.saturating_add(1).saturating_mul(DAY_MS))
    }

    /// Whether `at` falls in it.
    pub fn contains(self, at: UnixMillis) -> bool {
        at >= self.start() && at < self.end()
    }

    /// `2026-12-06`.
    pub fn text(self) -> String {
        let text = self.start().to_rfc3339();
        text.get(..10).unwrap_or(&text).to_owned()
    }
}

/// What one budget covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// `usage.budget.daily`: every agent together.
    All,
    /// `usage.budget.<agent>`.
    Agent(Agent),
}

impl Scope {
    /// The key under `[usage.budget]`: `daily`, `claude`, `codex`, …
    pub fn key(self) -> &'static str {
        match self {
            Scope::All => "daily",
            Scope::Agent(agent) => agent.as_str(),
        }
    }

    /// How a person reads it: `the daily budget (all agents)`, `Codex's daily budget`.
    pub fn label(self) -> String {
        match self {
            Scope::All => "the daily budget (all agents)".to_owned(),
            Scope::Agent(agent) => format!("{}'s daily budget", agent.product_name()),
        }
    }
}

/// The budgets set, per UTC day. Empty when none is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Budgets {
    pub daily: Option<Money>,
    pub agents: BTreeMap<Agent, Money>,
}

impl Budgets {
    pub fn is_empty(&self) -> bool {
        self.daily.is_none() && self.agents.is_empty()
    }

    /// Every budget set, the all-agents one first.
    pub fn iter(&self) -> impl Iterator<Item = (Scope, Money)> + '_ {
        self.daily
            .map(|limit| (Scope::All, limit))
            .into_iter()
            .chain(self.agents.iter().map(|(a, l)| (Scope::Agent(*a), *l)))
    }
}

/// Money spent: the priced part, and how many calls could not be priced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spend {
    pub priced: Money,
    pub unpriced_calls: u64,
}

impl Spend {
    fn add(&mut self, other: Spend) {
        self.priced = self.priced.saturating_add(other.priced);
        self.unpriced_calls += other.unpriced_calls;
    }

    /// `$16.20`, or `$16.20 + unknown for 2 calls` when some could not be priced.
    pub fn text(&self) -> String {
        match self.unpriced_calls {
            0 => self.priced.dollars_cents(),
            1 => format!("{} + unknown for 1 call", self.priced.dollars_cents()),
            n => format!("{} + unknown for {n} calls", self.priced.dollars_cents()),
        }
    }

    /// The priced part's share of `limit`, in whole percent (rounded down).
    pub fn percent_of(&self, limit: Money) -> u128 {
        if limit.0 == 0 {
            return 0;
        }
        self.priced.0.saturating_mul(100) / limit.0
    }
}

/// One UTC day's spend per agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaySpend {
    pub day: Option<Day>,
    pub agents: BTreeMap<Agent, Spend>,
}

impl DaySpend {
    /// The calls of `accounting` made on `day`, priced with `prices`. A call without a time
    /// belongs to no day and is left out.
    pub fn of(accounting: &Accounting, prices: &PriceTable, day: Day) -> DaySpend {
        let mut agents: BTreeMap<Agent, Spend> = BTreeMap::new();
        for charge in accounting.charges() {
            if !charge.timestamp.is_some_and(|at| day.contains(at)) {
                continue;
            }
            let spend = match prices.cost(charge.model, &charge.tokens) {
                Some(cost) => Spend {
                    priced: cost,
                    unpriced_calls: 0,
                },
                None => Spend {
                    priced: Money::ZERO,
                    unpriced_calls: 1,
                },
            };
            agents.entry(charge.agent).or_default().add(spend);
        }
        DaySpend {
            day: Some(day),
            agents,
        }
    }

    /// The same from a report grouped by agent over `day` (`Report::build` with `GroupBy::Agent`
    /// since the day's start): how the daemon's live index answers it.
    pub fn of_report(report: &Report, day: Day) -> DaySpend {
        let mut agents: BTreeMap<Agent, Spend> = BTreeMap::new();
        for row in &report.rows {
            if let Some(agent) = row.agent {
                agents.entry(agent).or_default().add(Spend {
                    priced: row.priced_cost,
                    unpriced_calls: row.unpriced_calls,
                });
            }
        }
        DaySpend {
            day: Some(day),
            agents,
        }
    }

    /// What `scope` covers of it.
    pub fn of_scope(&self, scope: Scope) -> Spend {
        match scope {
            Scope::Agent(agent) => self.agents.get(&agent).copied().unwrap_or_default(),
            Scope::All => {
                let mut total = Spend::default();
                for spend in self.agents.values() {
                    total.add(*spend);
                }
                total
            }
        }
    }
}

/// One budget and how much of it `spend`'s day used: what `cross-agent usage` shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Share {
    /// [`Scope::key`].
    pub budget: &'static str,
    pub limit_usd: String,
    /// The priced part, which is what counts against the budget.
    pub spent_usd: String,
    /// Calls of the day with no price: shown beside, not counted.
    pub unpriced_calls: u64,
    /// Whole percent of the limit, rounded down.
    pub percent: u128,
}

/// Every budget set, with its share of `spend`, and the text line of each.
pub fn shares(budgets: &Budgets, spend: &DaySpend) -> Vec<(Share, String)> {
    budgets
        .iter()
        .map(|(scope, limit)| {
            let spent = spend.of_scope(scope);
            let share = Share {
                budget: scope.key(),
                limit_usd: limit.dollars_exact(),
                spent_usd: spent.priced.dollars_exact(),
                unpriced_calls: spent.unpriced_calls,
                percent: spent.percent_of(limit),
            };
            // `daily: $16.20 + unknown for 2 calls of $20.00 (81%)`.
            let text = format!(
                "{}: {} of {} ({}%)",
                share.budget,
                spent.text(),
                limit.dollars_cents(),
                share.percent
            );
            (share, text)
        })
        .collect()
}

/// The two points at which a budget is announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Threshold {
    #[serde(rename = "80")]
    Most,
    #[serde(rename = "100")]
    Spent,
}

impl Threshold {
    pub fn percent(self) -> u128 {
        match self {
            Threshold::Most => 80,
            Threshold::Spent => 100,
        }
    }

    /// The highest threshold `spend` has reached of `limit`.
    fn reached(spend: &Spend, limit: Money) -> Option<Threshold> {
        let hundredfold = spend.priced.0.saturating_mul(100);
        if hundredfold >= limit.0.saturating_mul(100) {
            Some(Threshold::Spent)
        } else if hundredfold >= limit.0.saturating_mul(80) {
            Some(Threshold::Most)
        } else {
            None
        }
    }
}

/// A budget that reached a threshold, to announce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crossing {
    pub scope: Scope,
    pub threshold: Threshold,
    pub spend: Spend,
    pub limit: Money,
    pub day: Day,
}

impl Crossing {
    /// The notice a person reads: what budget, how much of it, which day.
    pub fn notice(&self) -> String {
        let label = self.scope.label();
        let head = match self.threshold {
            Threshold::Most => format!("⚠️ 80% of {label} is spent"),
            Threshold::Spent => {
                let mut label = label;
                // "The daily budget …", "Codex's daily budget …" at the start of a sentence.
                if let Some(first) = label.get(..1) {
                    label = first.to_uppercase() + label.get(1..).unwrap_or("");
                }
                format!("🛑 {label} is used up")
            }
        };
        format!(
            "{head}: {} of {} on {} (UTC, {}%; only priced calls count).",
            self.spend.text(),
            self.limit.dollars_cents(),
            self.day.text(),
            self.spend.percent_of(self.limit),
        )
    }
}

/// One budget announced today.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnnouncedBudget {
    /// [`Scope::key`].
    pub budget: String,
    /// The limit it was announced for, in exact dollars: a budget changed during the day is a
    /// new one.
    pub limit_usd: String,
    /// The highest threshold announced.
    pub threshold: Threshold,
    /// The notice, kept until it reached the phone (no bot may be polling when it is decided).
    pub notice: String,
    /// Whether the notice was handed to the bot's queue.
    pub notified: bool,
}

/// What was announced on one day: the state the watcher keeps across restarts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announced {
    /// `YYYY-MM-DD`; the state of another day counts for nothing.
    pub day: String,
    pub budgets: Vec<AnnouncedBudget>,
}

impl Announced {
    fn find(&self, scope: Scope, limit: Money) -> Option<&AnnouncedBudget> {
        let limit = limit.dollars_exact();
        self.budgets
            .iter()
            .find(|b| b.budget == scope.key() && b.limit_usd == limit)
    }

    /// The notices decided but not yet handed to the bot.
    pub fn unsent(&mut self) -> impl Iterator<Item = &mut AnnouncedBudget> {
        self.budgets.iter_mut().filter(|b| !b.notified)
    }
}

/// The crossings to announce now, given `spend` of its day and what `announced` says was done;
/// `announced` is brought up to date (a new day starts it afresh). Each crossing's notice is
/// kept in it, unsent, until the caller marks it sent.
pub fn step(budgets: &Budgets, spend: &DaySpend, announced: &mut Announced) -> Vec<Crossing> {
    let Some(day) = spend.day else {
        return Vec::new();
    };
    if announced.day != day.text() {
        *announced = Announced {
            day: day.text(),
            budgets: Vec::new(),
        };
    }
    let mut crossings = Vec::new();
    for (scope, limit) in budgets.iter() {
        let spent = spend.of_scope(scope);
        let Some(threshold) = Threshold::reached(&spent, limit) else {
            continue;
        };
        if announced
            .find(scope, limit)
            .is_some_and(|b| b.threshold >= threshold)
        {
            continue;
        }
        let crossing = Crossing {
            scope,
            threshold,
            spend: spent,
            limit,
            day,
        };
        let limit_usd = limit.dollars_exact();
        // The 80 % notice not sent yet is replaced by the 100 % one.
        announced
            .budgets
            .retain(|b| !(b.budget == scope.key() && b.limit_usd == limit_usd));
        announced.budgets.push(AnnouncedBudget {
            budget: scope.key().to_owned(),
            limit_usd,
            threshold,
            notice: crossing.notice(),
            notified: false,
        });
        crossings.push(crossing);
    }
    crossings
}

#[cfg(test)]
// Amounts are written dollars_cents (`8_10` is $8.10).
#[allow(clippy::inconsistent_digit_grouping)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn dollars(cents: u128) -> Money {
        Money(cents * 10_000_000_000)
    }

    fn at(day: &str) -> Day {
        Day::of(UnixMillis::parse_rfc3339(&format!("{day}T12:00:00Z")).unwrap())
    }

    fn spend(day: &str, claude_cents: u128, codex_cents: u128, unpriced: u64) -> DaySpend {
        let mut agents = BTreeMap::new();
        agents.insert(
            Agent::Claude,
            Spend {
                priced: dollars(claude_cents),
                unpriced_calls: unpriced,
            },
        );
        agents.insert(
            Agent::Codex,
            Spend {
                priced: dollars(codex_cents),
                unpriced_calls: 0,
            },
        );
        DaySpend {
            day: Some(at(day)),
            agents,
        }
    }

    fn daily(cents: u128) -> Budgets {
        Budgets {
            daily: Some(dollars(cents)),
            agents: BTreeMap::new(),
        }
    }

    fn thresholds(crossings: &[Crossing]) -> Vec<(Scope, Threshold)> {
        crossings.iter().map(|c| (c.scope, c.threshold)).collect()
    }

    #[test]
    fn each_threshold_is_announced_once_as_spend_rises() {
        let budgets = daily(10_00);
        let mut state = Announced::default();
        // 79 %: nothing.
        assert_eq!(
            step(&budgets, &spend("2026-12-06", 7_90, 0, 0), &mut state),
            []
        );
        // 81 %: one, at 80.
        let crossed = step(&budgets, &spend("2026-12-06", 8_10, 0, 0), &mut state);
        assert_eq!(thresholds(&crossed), [(Scope::All, Threshold::Most)]);
        // 85 %: none more.
        assert_eq!(
            step(&budgets, &spend("2026-12-06", 8_50, 0, 0), &mut state),
            []
        );
        // 99 %: none; 101 %: one, at 100.
        assert_eq!(
            step(&budgets, &spend("2026-12-06", 9_90, 0, 0), &mut state),
            []
        );
        let crossed = step(&budgets, &spend("2026-12-06", 10_10, 0, 0), &mut state);
        assert_eq!(thresholds(&crossed), [(Scope::All, Threshold::Spent)]);
        assert_eq!(
            step(&budgets, &spend("2026-12-06", 30_00, 0, 0), &mut state),
            []
        );
        // The next day starts afresh.
        let crossed = step(&budgets, &spend("2026-12-07", 8_00, 0, 0), &mut state);
        assert_eq!(thresholds(&crossed), [(Scope::All, Threshold::Most)]);
        assert_eq!(state.day, "2026-12-07");
    }

    #[test]
    fn a_jump_past_both_is_announced_once_at_100() {
        let budgets = daily(10_00);
        let mut state = Announced::default();
        let crossed = step(&budgets, &spend("2026-12-06", 7_90, 3_00, 0), &mut state);
        assert_eq!(thresholds(&crossed), [(Scope::All, Threshold::Spent)]);
        assert_eq!(state.budgets.len(), 1);
        assert_eq!(
            step(&budgets, &spend("2026-12-06", 12_00, 0, 0), &mut state),
            []
        );
    }

    #[test]
    fn the_state_read_back_after_a_restart_announces_nothing_again() {
        let budgets = daily(10_00);
        let mut state = Announced::default();
        step(&budgets, &spend("2026-12-06", 8_10, 0, 0), &mut state);
        let kept = serde_json::to_string(&state).unwrap();
        let mut restarted: Announced = serde_json::from_str(&kept).unwrap();
        assert_eq!(restarted, state);
        assert_eq!(
            step(&budgets, &spend("2026-12-06", 8_50, 0, 0), &mut restarted),
            []
        );
        let crossed = step(&budgets, &spend("2026-12-06", 10_00, 0, 0), &mut restarted);
        assert_eq!(thresholds(&crossed), [(Scope::All, Threshold::Spent)]);
    }

    #[test]
    fn per_agent_budgets_count_only_their_agent_and_only_the_priced_part() {
        let budgets = Budgets {
            daily: Some(dollars(100_00)),
            agents: [
                (Agent::Codex, dollars(5_00)),
                (Agent::Claude, dollars(20_00)),
            ]
            .into(),
        };
        let mut state = Announced::default();
        // Claude $15.00 + 2 unpriced calls (75 %: not counted as more), Codex $5.00 (100 %).
        let crossed = step(&budgets, &spend("2026-12-06", 15_00, 5_00, 2), &mut state);
        assert_eq!(
            thresholds(&crossed),
            [(Scope::Agent(Agent::Codex), Threshold::Spent)]
        );
        let crossed = step(&budgets, &spend("2026-12-06", 16_20, 5_00, 2), &mut state);
        assert_eq!(
            thresholds(&crossed),
            [(Scope::Agent(Agent::Claude), Threshold::Most)]
        );
        assert_eq!(
            crossed[0].notice(),
            "⚠️ 80% of Claude Code's daily budget is spent: $16.20 + unknown for 2 calls of \
             $20.00 on 2026-12-06 (UTC, 81%; only priced calls count)."
        );
    }

    #[test]
    fn a_budget_changed_during_the_day_is_announced_again() {
        let mut state = Announced::default();
        let crossed = step(&daily(10_00), &spend("2026-12-06", 10_00, 0, 0), &mut state);
        assert_eq!(thresholds(&crossed), [(Scope::All, Threshold::Spent)]);
        assert_eq!(
            crossed[0].notice(),
            "🛑 The daily budget (all agents) is used up: $10.00 of $10.00 on 2026-12-06 \
             (UTC, 100%; only priced calls count)."
        );
        let crossed = step(&daily(12_00), &spend("2026-12-06", 10_00, 0, 0), &mut state);
        assert_eq!(thresholds(&crossed), [(Scope::All, Threshold::Most)]);
    }

    #[test]
    fn a_notice_stays_unsent_until_marked() {
        let mut state = Announced::default();
        step(&daily(10_00), &spend("2026-12-06", 8_00, 0, 0), &mut state);
        assert_eq!(state.unsent().count(), 1);
        for notice in state.unsent() {
            notice.notified = true;
        }
        assert_eq!(state.unsent().count(), 0);
    }

    #[test]
    fn days_are_utc() {
        let day = Day::of(UnixMillis::parse_rfc3339("2026-12-06T23:59:59.999Z").unwrap());
        assert_eq!(day.text(), "2026-12-06");
        assert!(!day.contains(UnixMillis::parse_rfc3339("2026-12-07T00:00:00Z").unwrap()));
        assert!(day.contains(UnixMillis::parse_rfc3339("2026-12-06T00:00:00Z").unwrap()));
    }
}
