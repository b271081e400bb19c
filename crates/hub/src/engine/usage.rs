//! What the agents' sessions used and cost, from the daemon's live usage index
//! ([`cross_agent_usage::UsageIndex`]): `usage_report` for `cross-agent usage`, and each
//! session's cost so far for the listing (`sessions`) and the phone's session cards.
//!
//! The usage index reads the same files as the session index, so it is brought current on the
//! same signal: when the session index counted a change under a store (a notification, or the
//! daemon's own [`crate::Engine`] turns marking it stale), it reads the files the session
//! index's walks found changed since ([`LiveScanner::changes_since`]) — no walk of its own. The
//! stores are walked whole only for the first read, other roots, a change the session index no
//! longer remembers, and once per re-walk interval by the index loop (what no change pointed
//! at: a sub-agent transcript of a session quiet for long). A query with nothing changed walks
//! nothing and reads nothing: it prices the kept accounting.
//!
//! The first read rides on the session index's: every transcript its walk reads from the start
//! (all of them on a cold walk) is parsed for usage on that same read and handed over
//! ([`cross_agent_usage::handoff`]), so the first listing with costs reads each byte once; the
//! usage index then reads only what the session index does not list (Claude sub-agents), a
//! file that grew since, or one the hand-over could not follow.
//!
//! The price table is kept parsed and read again only when `prices.toml` in the state home
//! changed (its stamp: a stat), and each session's cost for the listing is kept per
//! accounting and price table: a warm listing with costs parses nothing and prices nothing,
//! and an edited `prices.toml` is priced by the next listing.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use cross_agent_protocol::usage::{UsageReportParams, UsageReportResponse};
use cross_agent_stores::held::SessionRef;
use cross_agent_stores::live::{ChangesSince, LiveScanner, LogMark};
use cross_agent_stores::render::Spent;
use cross_agent_stores::{Agent, StoreRoots, UnixMillis};
use cross_agent_usage::handoff::Handoffs;
use cross_agent_usage::{
    Accounting, Money, Name, PriceTable, RateLimits, Report, SessionSpent, SessionTotals, Share,
    UsageIndex,
};
use parking_lot::Mutex;

use super::{Engine, roots_for};
use crate::error::Result;

/// The agents whose files record usage.
const READ: [Agent; 3] = [Agent::Claude, Agent::Codex, Agent::Grok];

/// Each session's cost so far, by session id (the id its usage shares hold: no copy).
pub(crate) type SpentTable = Arc<HashMap<Name, SessionSpent>>;

/// The usage index and what it was last brought current against.
#[derive(Debug, Default)]
pub(crate) struct LiveUsage {
    state: Mutex<State>,
    /// The price table last read, with the stamp of the override file it merged.
    prices: Mutex<Option<KeptPrices>>,
}

/// Each session's cost as made from an accounting and a price table.
#[derive(Debug)]
struct KeptSpent {
    accounting: Arc<Accounting>,
    prices: Arc<PriceTable>,
    table: SpentTable,
    /// What it shares with the table made before it, if it was made from the same prices.
    since: Option<Since>,
}

/// The table made before a [`SpentTable`] (held weakly: told apart by address), and the
/// sessions whose cost may differ between the two: every one with a file's share of the
/// accounting that is in one accounting and not the other (the usage index keeps a file's
/// share, with its serial number, while the file is unchanged). Each other session's cost is the same
/// in both: it is the sum of the same shares, priced alike.
#[derive(Debug, Clone)]
pub(crate) struct Since {
    pub(crate) table: cross_agent_stores::live::WeakTable,
    pub(crate) moved: Arc<HashSet<Name>>,
}

/// A price table as read, and the stamp of `prices.toml` it was read at.
#[derive(Debug)]
struct KeptPrices {
    stamp: Option<OverrideStamp>,
    table: Arc<PriceTable>,
}

/// What tells that `prices.toml` changed: which file it is (a replacement is another inode),
/// its length, and when its bytes and its mode last changed (`chmod` moves `ctime`: a file
/// made writable by others is refused again). `None` when there is no such file.
type OverrideStamp = (u64, u64, u64, i64, i64, i64, i64);

#[derive(Debug, Default)]
struct State {
    index: UsageIndex,
    roots: Option<StoreRoots>,
    /// The session index's change counts of [`READ`] at the last refresh.
    seen: [u64; 3],
    /// Where the session index's change logs of [`READ`] stood at the last refresh.
    marks: Option<[LogMark; 3]>,
    /// When the stores were last walked whole.
    walked: Option<Instant>,
    warnings: Vec<String>,
    /// Each session's cost over all time, for the listing and the cards: made from the
    /// accounting and the price table it names, again when either changes.
    spent: Option<KeptSpent>,
    /// Each file's share of the accounting grouped by session, kept while the share is: a
    /// change prices and groups the changed files' shares only.
    totals: SessionTotals,
}

impl LiveUsage {
    /// A usage index that takes its reads from `scan`'s walks where it can: every transcript the
    /// session index reads from its start is parsed for usage on that same read
    /// ([`cross_agent_usage::handoff`]), so a cold daemon reads each byte once.
    ///
    /// Each file's call records are written to unnamed files in `records` once read (the
    /// daemon's cache directory, made here if missing) instead of being kept on the heap
    /// ([`cross_agent_usage::spill`]).
    pub(crate) fn new(scan: &LiveScanner, records: &std::path::Path) -> LiveUsage {
        let handoffs = Handoffs::new();
        scan.set_tap(handoffs.tap());
        // A directory that cannot be made is said by the index's first write (records are
        // then kept on the heap).
        let _ = std::fs::create_dir_all(records);
        LiveUsage {
            state: Mutex::new(State {
                index: UsageIndex::with_handoffs(handoffs).with_records_in(records),
                ..State::default()
            }),
            prices: Mutex::default(),
        }
    }

    /// The accounting over every usage file under `roots`, brought current first (see the
    /// module's header; with `walk_if_due`, the stores are walked whole when the re-walk is
    /// due); and the files that could not be read. With `look` the session index is brought
    /// current first, so its walks' changes are read here too.
    fn current(
        &self,
        scan: &LiveScanner,
        roots: &StoreRoots,
        walk_if_due: bool,
        look: bool,
    ) -> (Arc<Accounting>, Vec<String>) {
        if look {
            // Arms the watch on these roots and walks the stores that changed: its change logs
            // are what this index reads.
            let _ = scan.snapshot(roots, &READ);
        }
        let counts = READ.map(|agent| scan.change_count(agent));
        let mut state = self.state.lock();
        let walk_due = walk_if_due && state.walked.is_none_or(|at| at.elapsed() >= scan.rewalk());
        let marks = match state.marks {
            Some(marks) if state.roots.as_ref() == Some(roots) && !walk_due => Some(marks),
            _ => None,
        };
        let mut changes = Vec::new();
        let mut next = marks;
        if let (Some(marks), Some(next)) = (marks, next.as_mut()) {
            for (i, agent) in READ.into_iter().enumerate() {
                let (since, mark) = scan.changes_since(agent, marks[i]);
                next[i] = mark;
                match since {
                    ChangesSince::Walks(walks) => changes.extend(walks.into_iter().map(Some)),
                    ChangesSince::Unknown => next_unknown(&mut changes),
                }
            }
        }
        let unknown = changes.iter().any(Option::is_none);
        match next {
            Some(next) if !unknown => {
                if !changes.is_empty() || state.seen != counts {
                    let changes: Vec<_> = changes.into_iter().flatten().collect();
                    let mut warnings = Vec::new();
                    state.index.refresh_changed(roots, &changes, &mut warnings);
                    // Kept until the next whole walk, which says again what cannot be read.
                    for warning in warnings {
                        if !state.warnings.contains(&warning) {
                            state.warnings.push(warning);
                        }
                    }
                }
                state.marks = Some(next);
            }
            _ => {
                // The marks first: whatever the session index's walks find changed meanwhile
                // is looked at again next time (files with the stamp read are kept).
                let marks = READ.map(|agent| scan.log_mark(agent));
                let mut warnings = Vec::new();
                state.index.refresh(roots, &mut warnings);
                state.warnings = warnings;
                state.marks = Some(marks);
                state.walked = Some(Instant::now());
            }
        }
        state.seen = counts;
        state.roots = Some(roots.clone());
        let accounting = state.index.accounting();
        (accounting, state.warnings.clone())
    }

    /// Brings the index current for the roots last asked about, if any, walking the stores when
    /// the re-walk is due: for the daemon's index loop, so a change is read between requests
    /// rather than by the next one.
    pub(crate) fn catch_up(&self, scan: &LiveScanner) {
        let roots = self.state.lock().roots.clone();
        if let Some(roots) = roots {
            let _ = self.current(scan, &roots, /*walk_if_due*/ true, /*look*/ true);
        }
    }

    /// The first read back of call records that failed since the index last started afresh:
    /// a report made meanwhile is not whole.
    fn records_failure(&self) -> Option<String> {
        self.state.lock().index.records_failure()
    }

    /// The roots last brought current, if any.
    pub(crate) fn roots(&self) -> Option<StoreRoots> {
        self.state.lock().roots.clone()
    }

    /// Each session's cost so far (all time), keyed by session id: the same table (the same
    /// `Arc`) while neither the accounting nor the price table changed; and what it shares
    /// with the table before it.
    fn spent(
        &self,
        scan: &LiveScanner,
        roots: &StoreRoots,
        prices: &Arc<PriceTable>,
    ) -> (SpentTable, Option<Since>) {
        let (accounting, _) =
            self.current(scan, roots, /*walk_if_due*/ false, /*look*/ true);
        let mut state = self.state.lock();
        if let Some(kept) = &state.spent
            && Arc::ptr_eq(&kept.accounting, &accounting)
            && Arc::ptr_eq(&kept.prices, prices)
        {
            return (kept.table.clone(), kept.since.clone());
        }
        let (by_session, _) = state.totals.by_session(&accounting, prices);
        let table = Arc::new(by_session);
        let since = match state.spent.take() {
            Some(before) if Arc::ptr_eq(&before.prices, prices) => {
                let before_table: cross_agent_stores::live::SpentTable = before.table;
                Some(Since {
                    table: Arc::downgrade(&before_table),
                    moved: Arc::new(moved_sessions(&before.accounting, &accounting)),
                })
            }
            _ => None,
        };
        state.spent = Some(KeptSpent {
            accounting,
            prices: prices.clone(),
            table: table.clone(),
            since: since.clone(),
        });
        (table, since)
    }

    /// The price table in effect (shipped, merged with `<state_root>/prices.toml`): the one
    /// kept while the override file's stamp is the one it was read at, else read again. A file
    /// that cannot be stat'ed is not kept by: read each time, so its error is said each time.
    fn prices(&self, state_root: &Path) -> cross_agent_usage::Result<Arc<PriceTable>> {
        let Ok(stamp) = override_stamp(&state_root.join(cross_agent_usage::prices::OVERRIDE_FILE))
        else {
            return PriceTable::load(Some(state_root)).map(Arc::new);
        };
        let mut kept = self.prices.lock();
        if let Some(kept) = kept.as_ref()
            && kept.stamp == stamp
        {
            return Ok(kept.table.clone());
        }
        // The stamp is taken before the read: a change meanwhile is read again next time.
        let table = Arc::new(PriceTable::load(Some(state_root))?);
        *kept = Some(KeptPrices {
            stamp,
            table: table.clone(),
        });
        Ok(table)
    }
}

/// The sessions of every file's share that is in one accounting and not the other (by serial
/// number: an unchanged file's share keeps its serial in the next accounting, [`Share::serial`]).
fn moved_sessions(before: &Accounting, now: &Accounting) -> HashSet<Name> {
    let serials = |accounting: &Accounting| -> HashSet<u64> {
        accounting.chunks.iter().map(Share::serial).collect()
    };
    let (was, is) = (serials(before), serials(now));
    let mut moved = HashSet::new();
    for (accounting, other) in [(before, &is), (now, &was)] {
        for share in accounting.chunks.iter() {
            if !other.contains(&share.serial()) {
                moved.insert(share.session_id.clone());
            }
        }
    }
    moved
}

/// The stamp of the price override at `path` (not followed if a link: the table refuses one),
/// `None` when there is none.
fn override_stamp(path: &Path) -> std::io::Result<Option<OverrideStamp>> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some((
            meta.dev(),
            meta.ino(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec(),
        ))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// A walk the session index no longer remembers: the stores are walked whole.
fn next_unknown(changes: &mut Vec<Option<Arc<cross_agent_stores::index::ChangedFiles>>>) {
    changes.push(None);
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
        let prices = self.inner.usage.prices(&self.inner.info.state_root)?;
        let roots = roots_for(&params.caller);
        let (accounting, warnings) = self.inner.usage.current(
            &self.inner.scan,
            &roots,
            /*walk_if_due*/ false,
            /*look*/ true,
        );
        let report = Report::build(
            &accounting,
            &prices,
            params.by.into(),
            params.since.map(UnixMillis),
        );
        if let Some(message) = self.inner.usage.records_failure() {
            return Err(cross_agent_usage::Error::RecordsUnreadable { message }.into());
        }
        let mut wire = report.to_wire();
        wire.warnings = warnings;
        Ok(wire)
    }

    /// Codex's latest rate-limit windows in `context`'s stores (`/limits`), from the live
    /// index: read like a `usage_report`, nothing priced; `None` when no rollout recorded any.
    pub fn usage_rate_limits(
        &self,
        context: &cross_agent_protocol::bridge::CallerContext,
    ) -> Option<RateLimits> {
        let roots = roots_for(context);
        let (accounting, _) = self.inner.usage.current(
            &self.inner.scan,
            &roots,
            /*walk_if_due*/ false,
            /*look*/ true,
        );
        accounting.rate_limits.clone()
    }

    /// What each session has cost so far, for a listing of `roots`' sessions, and what that
    /// shares with the table before it; `None` when the price table cannot be read (the
    /// listing goes on without costs; `usage` names the file).
    pub(crate) fn spent(&self, roots: &StoreRoots) -> Option<(SpentTable, Option<Since>)> {
        let prices = self.inner.usage.prices(&self.inner.info.state_root).ok()?;
        let spent = self.inner.usage.spent(&self.inner.scan, roots, &prices);
        // Costs from records that could not all be read back would be too small: none shown.
        if self.inner.usage.records_failure().is_some() {
            return None;
        }
        Some(spent)
    }

    /// The phone cards' usage line of each session (`$1.23 · 45k tok`), for the sessions
    /// whose files record usage: looked up by session id.
    pub fn card_usage_lines(
        &self,
        context: &cross_agent_protocol::bridge::CallerContext,
    ) -> impl Fn(&str) -> Option<String> + use<> {
        let spent = self.spent(&roots_for(context)).map(|(table, _)| table);
        move |session_id| card_line(&listed(spent.as_ref()?.get(session_id)?))
    }
}

/// A session's [`Spent`] from the table; nothing recorded is `null`, never 0.
pub(crate) fn spent_of(table: &HashMap<Name, SessionSpent>, s: SessionRef<'_>) -> Spent {
    table.get(s.session_id()).map(listed).unwrap_or_default()
}

/// A session's totals as the listing shows them: the cost in micro-dollars (`null` when any
/// call has no price), tokens of every kind together.
fn listed(spent: &SessionSpent) -> Spent {
    Spent {
        cost_usd: spent.cost().map(Money::dollars_exact),
        tokens: Some(spent.tokens),
    }
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
