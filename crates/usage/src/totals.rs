//! Each session's totals over all time, kept by file for the daemon's listing: the accounting
//! comes in per-file shares ([`crate::Accounting::chunks`]) that a new accounting shares with
//! the last one where the file's calls did not change, so each share's rows are kept by the
//! share and only a new share is priced and grouped again; the table is the sum of the shares'
//! rows — what [`Report::build`] by session gives, without looking at every call after a change.

use std::collections::HashMap;
use std::sync::Arc;

use crate::account::{Accounting, Share};
use crate::prices::PriceTable;
use crate::report::{GroupBy, Report, Row};

/// One share and its rows by session.
#[derive(Debug)]
struct Part {
    /// Held so the share's address is not reused while it is the key.
    chunk: Arc<Share>,
    rows: Vec<Row>,
}

/// Each share's rows, kept between accountings (see the module's header).
#[derive(Debug, Default)]
pub struct SessionTotals {
    prices: Option<PriceTable>,
    parts: HashMap<usize, Part>,
}

/// What the last [`SessionTotals::rows`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TotalsStats {
    pub shares: usize,
    /// Shares priced and grouped anew (the rest were kept).
    pub shares_grouped: usize,
}

impl SessionTotals {
    pub fn new() -> SessionTotals {
        SessionTotals::default()
    }

    /// Each session's row, as [`Report::build`] by session over all time makes it.
    pub fn rows(
        &mut self,
        accounting: &Accounting,
        prices: &PriceTable,
    ) -> (HashMap<String, Row>, TotalsStats) {
        if self.prices.as_ref() != Some(prices) {
            self.parts.clear();
            self.prices = Some(prices.clone());
        }
        let mut stats = TotalsStats {
            shares: accounting.chunks.len(),
            ..TotalsStats::default()
        };
        let mut parts = HashMap::with_capacity(accounting.chunks.len());
        for chunk in &accounting.chunks {
            let at = Arc::as_ptr(chunk) as usize;
            let part = match self.parts.remove(&at) {
                Some(part) if Arc::ptr_eq(&part.chunk, chunk) => part,
                _ => {
                    stats.shares_grouped += 1;
                    let share = Accounting {
                        chunks: vec![chunk.clone()],
                        models: accounting.models.clone(),
                        ..Accounting::default()
                    };
                    Part {
                        chunk: chunk.clone(),
                        rows: Report::build(&share, prices, GroupBy::Session, None).rows,
                    }
                }
            };
            parts.insert(at, part);
        }
        self.parts = parts;
        let mut out: HashMap<String, Row> = HashMap::new();
        for part in self.parts.values() {
            for row in &part.rows {
                match out.get_mut(&row.key) {
                    Some(sum) => sum.merge(row),
                    None => {
                        out.insert(row.key.clone(), row.clone());
                    }
                }
            }
        }
        (out, stats)
    }
}
