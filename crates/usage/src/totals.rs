//! Each session's totals over all time, kept by file for the daemon's listing: the accounting
//! comes in per-file shares ([`crate::Accounting::chunks`]) that a new accounting shares with
//! the last one where the file's calls did not change, so each share's sum is kept by the share
//! and only a new share is priced and summed again; the table is the sum of the shares' sums —
//! what [`Report::build`] by session gives, without looking at every call after a change.
//!
//! What is kept is what the listing and the phone's cards show (calls, tokens of every kind
//! together, the priced cost and how many calls have none), 48 bytes a share by the share's
//! serial number, and the table by session keyed by the session id the share already holds (the
//! session is read from the share, not kept beside its sum): at 111,000 sessions the rows a report makes (a key
//! string, tokens by kind, the unpriced models' set, a `Vec` a share) held about 25 MB and the
//! table by session id string another 24 MB.

use std::collections::HashMap;

use crate::account::{Accounting, Share};
use crate::money::Money;
use crate::names::Name;
use crate::prices::PriceTable;
use crate::report::{GroupBy, Report, Row};

/// One session's totals, as the listing shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionSpent {
    pub calls: u64,
    /// Tokens of every kind together.
    pub tokens: u64,
    /// The cost of the calls that have a price.
    pub priced_cost: Money,
    /// Calls whose cost is unknown (no price for the model, or none recorded).
    pub unpriced_calls: u64,
}

impl SessionSpent {
    /// What a report's row counts.
    pub fn of(row: &Row) -> SessionSpent {
        SessionSpent {
            calls: row.calls,
            tokens: row.tokens.total(),
            priced_cost: row.priced_cost,
            unpriced_calls: row.unpriced_calls,
        }
    }

    /// The cost, when every call has one.
    pub fn cost(&self) -> Option<Money> {
        (self.unpriced_calls == 0).then_some(self.priced_cost)
    }

    fn add(&mut self, other: &SessionSpent) {
        self.calls += other.calls;
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.priced_cost = self.priced_cost.saturating_add(other.priced_cost);
        self.unpriced_calls += other.unpriced_calls;
    }
}

/// Each share's sum, kept between accountings (see the module's header).
#[derive(Debug, Default)]
pub struct SessionTotals {
    prices: Option<PriceTable>,
    /// What each share adds to its session, by the share's serial number ([`Share::serial`]).
    parts: HashMap<u64, SessionSpent>,
}

/// What the last [`SessionTotals::by_session`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TotalsStats {
    pub shares: usize,
    /// Shares priced and summed anew (the rest were kept).
    pub shares_grouped: usize,
}

impl SessionTotals {
    pub fn new() -> SessionTotals {
        SessionTotals::default()
    }

    /// Each session's totals, as [`Report::build`] by session over all time counts them, keyed
    /// by the session id its shares hold (no string copied).
    pub fn by_session(
        &mut self,
        accounting: &Accounting,
        prices: &PriceTable,
    ) -> (HashMap<Name, SessionSpent>, TotalsStats) {
        if self.prices.as_ref() != Some(prices) {
            self.parts.clear();
            self.prices = Some(prices.clone());
        }
        let mut stats = TotalsStats {
            shares: accounting.chunks.len(),
            ..TotalsStats::default()
        };
        // What each share adds to its session (nothing: it counts no call), by its serial
        // number: the session is the share's, read from it here, not kept beside the sum.
        let mut parts = HashMap::with_capacity(accounting.chunks.len());
        let mut out: HashMap<Name, SessionSpent> = HashMap::new();
        for chunk in accounting.chunks.iter() {
            let at = chunk.serial();
            let spent = match self.parts.remove(&at) {
                Some(spent) => spent,
                None => {
                    stats.shares_grouped += 1;
                    share_spent(chunk, accounting, prices)
                }
            };
            if spent.calls > 0 {
                out.entry(chunk.session_id.clone()).or_default().add(&spent);
            }
            parts.insert(at, spent);
        }
        self.parts = parts;
        (out, stats)
    }
}

/// What one share adds to its session: its report by session (one row: every call of a share
/// counts for the share's session).
fn share_spent(chunk: &Share, accounting: &Accounting, prices: &PriceTable) -> SessionSpent {
    let share = Accounting {
        chunks: [chunk.clone()].into_iter().collect(),
        models: accounting.models.clone(),
        ..Accounting::default()
    };
    let mut spent = SessionSpent::default();
    for row in &Report::build(&share, prices, GroupBy::Session, None).rows {
        spent.add(&SessionSpent::of(row));
    }
    spent
}
