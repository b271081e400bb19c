//! What the agents' sessions used and cost, from the daemon's live usage index
//! ([`cross_agent_usage::UsageIndex`]): `usage_report` for `cross-agent usage`, and each
//! session's cost so far for the listing (`sessions`) and the phone's session cards.
//!
//! The usage index reads the same files as the session index, so it is brought current on the
//! same signal: when the session index counted a change under a store (a notification, or the
//! daemon's own [`crate::Engine`] turns marking it stale) or its re-walk interval passed. A
//! query with nothing changed walks nothing and reads nothing: it prices the kept accounting.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use cross_agent_protocol::usage::{UsageReportParams, UsageReportResponse};
use cross_agent_stores::live::LiveScanner;
use cross_agent_stores::render::Spent;
use cross_agent_stores::{Agent, Session, StoreRoots, UnixMillis};
use cross_agent_usage::{Accounting, GroupBy, Money, PriceTable, Report, UsageIndex};
use parking_lot::Mutex;

use super::{Engine, roots_for};
use crate::error::Result;

/// The agents whose files record usage.
const READ: [Agent; 3] = [Agent::Claude, Agent::Codex, Agent::Grok];

/// Each session's cost so far, by session id.
pub(crate) type SpentTable = Arc<HashMap<String, Spent>>;

/// The usage index and what it was last brought current against.
#[derive(Debug, Default)]
pub(crate) struct LiveUsage {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    index: UsageIndex,
    roots: Option<StoreRoots>,
    /// The session index's change counts of [`READ`] at the last refresh.
    seen: [u64; 3],
    refreshed: Option<Instant>,
    warnings: Vec<String>,
    /// Each session's cost over all time, for the listing and the cards: made from the
    /// accounting it names, again when that changes.
    spent: Option<(Arc<Accounting>, SpentTable)>,
}

impl LiveUsage {
    /// The accounting over every usage file under `roots`, brought current first when the
    /// session index saw a change or the re-walk is due; and the files that could not be read.
    fn current(&self, scan: &LiveScanner, roots: &StoreRoots) -> (Arc<Accounting>, Vec<String>) {
        // Arms the watch on these roots (and keeps the listing current): its change counts are
        // what tell this index to look again.
        let _ = scan.snapshot(roots, &READ);
        let counts = READ.map(|agent| scan.change_count(agent));
        let mut state = self.state.lock();
        let due = state.roots.as_ref() != Some(roots)
            || state.seen != counts
            || state
                .refreshed
                .is_none_or(|at| at.elapsed() >= scan.rewalk());
        if due {
            let mut warnings = Vec::new();
            state.index.refresh(roots, &mut warnings);
            state.warnings = warnings;
            state.seen = counts;
            state.roots = Some(roots.clone());
            state.refreshed = Some(Instant::now());
        }
        let accounting = state.index.accounting();
        (accounting, state.warnings.clone())
    }

    /// Brings the index current for the roots last asked about, if any: for the daemon's index
    /// loop, so a change is read between requests rather than by the next one.
    pub(crate) fn catch_up(&self, scan: &LiveScanner) {
        let roots = self.state.lock().roots.clone();
        if let Some(roots) = roots {
            let _ = self.current(scan, &roots);
        }
    }

    /// Each session's cost so far (all time), keyed by session id.
    fn spent(&self, scan: &LiveScanner, roots: &StoreRoots, prices: &PriceTable) -> SpentTable {
        let (accounting, _) = self.current(scan, roots);
        let mut state = self.state.lock();
        if let Some((of, spent)) = &state.spent
            && Arc::ptr_eq(of, &accounting)
        {
            return spent.clone();
        }
        let report = Report::build(&accounting, prices, GroupBy::Session, None);
        let spent: HashMap<String, Spent> = report
            .rows
            .iter()
            .map(|row| {
                (
                    row.key.clone(),
                    Spent {
                        cost_usd: row.cost().map(|c| c.dollars_exact()),
                        tokens: Some(row.tokens.total()),
                    },
                )
            })
            .collect();
        let spent = Arc::new(spent);
        state.spent = Some((accounting, spent.clone()));
        spent
    }
}

/// `$1.23 · 45k tok`, or `cost unknown · 45k tok` when some call has no price.
pub fn card_line(spent: &Spent) -> Option<String> {
    let tokens = spent.tokens?;
    let cost = match &spent.cost_usd {
        Some(exact) => Money::parse_dollars_exact(exact)
            .map_or_else(|| "cost unknown".to_owned(), Money::dollars_cents),
        None => "cost unknown".to_owned(),
    };
    Some(format!("{cost} · {} tok", short_count(tokens)))
}

/// 950 → `950`, 45_200 → `45k`, 3_400_000 → `3.4M`.
fn short_count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{}k", n / 1_000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

impl Engine {
    /// `usage_report`: tokens and cost grouped as asked, priced with the table in effect
    /// (shipped, merged with `$CROSS_AGENT_HOME/prices.toml`).
    pub fn usage_report(&self, params: UsageReportParams) -> Result<UsageReportResponse> {
        let prices = PriceTable::load(Some(&self.inner.info.state_root))?;
        let roots = roots_for(&params.caller);
        let (accounting, warnings) = self.inner.usage.current(&self.inner.scan, &roots);
        let report = Report::build(
            &accounting,
            &prices,
            params.by.into(),
            params.since.map(UnixMillis),
        );
        let mut wire = report.to_wire();
        wire.warnings = warnings;
        Ok(wire)
    }

    /// What each session has cost so far, for a listing of `roots`' sessions; `None` when the
    /// price table cannot be read (the listing goes on without costs; `usage` names the file).
    pub(crate) fn spent(&self, roots: &StoreRoots) -> Option<SpentTable> {
        let prices = PriceTable::load(Some(&self.inner.info.state_root)).ok()?;
        Some(self.inner.usage.spent(&self.inner.scan, roots, &prices))
    }

    /// The phone cards' usage line of each session (`$1.23 · 45k tok`), for the sessions
    /// whose files record usage: looked up by session id.
    pub fn card_usage_lines(
        &self,
        context: &cross_agent_protocol::bridge::CallerContext,
    ) -> impl Fn(&str) -> Option<String> + use<> {
        let spent = self.spent(&roots_for(context));
        move |session_id| card_line(spent.as_ref()?.get(session_id)?)
    }
}

/// A session's [`Spent`] from the table; nothing recorded is `null`, never 0.
pub(crate) fn spent_of(table: &HashMap<String, Spent>, s: &Session) -> Spent {
    table.get(&s.session_id).cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_line_rounds_to_the_cent_and_never_shows_unknown_as_zero() {
        let line = |cost: Option<&str>, tokens| {
            card_line(&Spent {
                cost_usd: cost.map(str::to_owned),
                tokens,
            })
        };
        assert_eq!(
            line(Some("1.234999"), Some(45_200)).as_deref(),
            Some("$1.23 · 45k tok")
        );
        assert_eq!(
            line(Some("0.005000"), Some(950)).as_deref(),
            Some("$0.01 · 950 tok")
        );
        assert_eq!(
            line(None, Some(3_400_000)).as_deref(),
            Some("cost unknown · 3.4M tok")
        );
        assert_eq!(line(None, None), None);
    }
}
