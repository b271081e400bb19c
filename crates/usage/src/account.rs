//! The accounting core: from every file's parsed usage, what counts, once, and for which
//! session. Pure — no I/O — so the CLI, the daemon's index and the tests all run the same rules.
//!
//! - Claude: a reply (`message.id` + `requestId`) seen in several files — a resumed or forked
//!   session copies its base's lines — counts once, for the file where it is earliest (its
//!   timestamp, then the file's own start), with the largest usage any copy recorded.
//!   Sub-agent files count for their parent session.
//! - Codex: a call is identified by its thread family (the thread it was forked from or spawned
//!   by, up to the root) and its running total + last usage, so the `token_count` events a fork,
//!   a resume or a sub-agent copied from the base are replays, counted once, for the earliest
//!   (then the least-forked) rollout. A spawned sub-agent's calls count for its parent.
//! - Grok: each `turn_completed` with usage, once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cross_agent_protocol::Agent;
use cross_agent_protocol::timestamp::UnixMillis;
use serde::{Deserialize, Serialize};

use crate::FileUsage;
use crate::calls::{Call, Calls};
use crate::codex::{CodexFile, family_hash, key_in};
use crate::grok::GrokFile;
use crate::keys::{CallKey, Cwd, ModelId, ModelNames};
use crate::names::Name;
use crate::shares::Shares;
use crate::spill::Window;
use crate::tokens::Tokens;

/// One model call, counted once, for one session, as a report reads it: made on the fly from
/// a [`Share`]'s compact call and the names the share holds once (the live index keeps no
/// charge per call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge<'a> {
    pub agent: Agent,
    /// The session the call counts for: a sub-agent's parent session.
    pub session_id: &'a str,
    /// The sub-agent's own session or thread, when a sub-agent made the call.
    pub subagent: Option<&'a str>,
    pub timestamp: Option<UnixMillis>,
    /// `None` when the file does not say (Grok); such a call's cost is unknown.
    pub model: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub tokens: Tokens,
}

/// The calls one file wins, with the names they all share (held once here, not per call):
/// the file's own list of calls ([`Calls`], shared with its reader, not copied) and which of
/// them it wins. Kept in the ledger's one table of shares ([`Shares`]), not boxed apart.
#[derive(Debug, Clone)]
pub struct Share {
    pub agent: Agent,
    pub session_id: Name,
    pub cwd: Option<Cwd>,
    calls: Calls,
    /// What only a sub-agent's file, or a file that shares its calls with another, has
    /// (`None`: a session's own file that wins all its calls with their own usage, nearly
    /// always): boxed apart so a share, kept for every file, is 72 bytes.
    rare: Option<Box<Rare>>,
    /// Given when the share is made, never again ([`Share::serial`]).
    serial: u64,
    /// The latest time of a call the file wins, in whole seconds rounded up (0: none known;
    /// `u32::MAX`: that or later; 32 bits, so the share stays in its allocator size class): a
    /// report since a later time reads none of the share's records.
    latest_s: u32,
}

/// The same calls won for the same session, whatever the serial numbers.
impl PartialEq for Share {
    fn eq(&self, other: &Share) -> bool {
        let Share {
            agent,
            session_id,
            cwd,
            calls,
            rare,
            latest_s,
            serial: _,
        } = self;
        *agent == other.agent
            && *session_id == other.session_id
            && *cwd == other.cwd
            && *calls == other.calls
            && *rare == other.rare
            && *latest_s == other.latest_s
    }
}

impl Eq for Share {}

/// The serial number of the next share made.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(0);

/// The part of a share only a sub-agent's file, or a file that shares its calls with another,
/// has.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rare {
    /// The sub-agent's own session or thread, when a sub-agent's file.
    subagent: Option<Name>,
    /// Which of the share's calls the file wins, one bit each; `None`: every one.
    won: Option<Box<[u64]>>,
    /// The usage a won call counts where it is not its own record's (a Claude reply another
    /// copy recorded more of), by the call's place, in order.
    counted: Box<[(u32, Tokens)]>,
}

/// One call a share counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    pub timestamp: Option<UnixMillis>,
    pub model: Option<ModelId>,
    pub tokens: Tokens,
}

impl Share {
    /// The share of a file whose calls are `calls`, of which it wins those `wins` says (by
    /// place), each with `counted`'s usage where it has one (by place, in order); `None` when
    /// it wins none.
    pub(crate) fn new(
        names: ShareNames,
        calls: Calls,
        wins: impl Fn(usize) -> bool,
        counted: Vec<(u32, Tokens)>,
    ) -> Option<Share> {
        let mut won: Vec<u64> = vec![0; calls.len().div_ceil(64)];
        let mut all = true;
        let mut any = false;
        let mut latest: Option<UnixMillis> = None;
        for (at, call) in calls.iter().enumerate() {
            if wins(at) {
                won[at / 64] |= 1 << (at % 64);
                any = true;
                latest = latest.max(call.timestamp);
            } else {
                all = false;
            }
        }
        // Rounded up, and past 2106 the most: never earlier than the latest call.
        let latest_s = latest.map_or(0, |t| {
            u32::try_from(t.0.div_euclid(1000) + i64::from(t.0.rem_euclid(1000) != 0))
                .unwrap_or(if t.0 < 0 { 0 } else { u32::MAX })
        });
        any.then(|| Share {
            agent: names.agent,
            session_id: names.session_id,
            cwd: names.cwd,
            calls,
            rare: (!all || !counted.is_empty() || names.subagent.is_some()).then(|| {
                Box::new(Rare {
                    subagent: names.subagent,
                    won: (!all).then(|| won.into_boxed_slice()),
                    counted: counted.into_boxed_slice(),
                })
            }),
            latest_s,
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// The share's identity while it is kept: a share made again (its file changed, or what
    /// it wins) has another; a copy of it the same. [`crate::totals`] keeps each share's sum by it.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// The sub-agent's own session or thread, when a sub-agent's file made the calls.
    pub fn subagent(&self) -> Option<&Name> {
        self.rare.as_ref()?.subagent.as_ref()
    }

    /// The bytes the share holds on the heap beside its calls (which its reader holds too), and
    /// beside the names it shares with its file's parse (counted there).
    pub(crate) fn heap_bytes(&self) -> usize {
        let own = Name::own_heap_bytes;
        self.rare.as_ref().map_or(0, |rare| {
            std::mem::size_of::<Rare>()
                + rare.won.as_ref().map_or(0, |w| w.len() * 8)
                + rare.counted.len() * std::mem::size_of::<(u32, Tokens)>()
                + rare.subagent.as_ref().map_or(0, own)
        }) + own(&self.session_id)
    }

    /// The calls the file wins, each with the usage it counts.
    pub fn calls(&self) -> ShareCalls<'_> {
        ShareCalls {
            share: self,
            records: self.calls.iter(),
            at: 0,
            counted: 0,
        }
    }

    /// Whether a call the file wins may be at or after `since` (false: none is, and a report
    /// since then need not read the share's records).
    pub fn may_count_since(&self, since: UnixMillis) -> bool {
        // `u32::MAX`: a call past what 32 bits of seconds hold, so any time may be before it.
        self.latest_s == u32::MAX || i64::from(self.latest_s) * 1000 >= since.0
    }

    /// [`Share::calls`], the records read back through `window` ([`in_disk_order`]).
    pub(crate) fn calls_in<'a>(&'a self, window: &'a mut Window) -> ShareCalls<'a> {
        ShareCalls {
            records: self.calls.iter_in(window),
            ..self.calls()
        }
    }
}

/// How much a report reads back at once when its shares' records are on disk: few reads, and
/// a bounded buffer.
const WINDOW: u64 = 1 << 20;

/// The shares in the order their records are on disk (those on the heap first), and a window
/// to read them through: a report then reads its records in a few large reads, not one per
/// file. The order of the shares changes no report (rows are sums, sorted after).
pub(crate) fn in_disk_order<'a>(
    chunks: impl Iterator<Item = &'a Share>,
) -> (Vec<&'a Share>, Window) {
    let mut order: Vec<&Share> = chunks.collect();
    order.sort_by_key(|share| share.calls.place());
    let on_disk: u64 = order.iter().map(|share| share.calls.disk_bytes()).sum();
    (order, Window::new(on_disk.min(WINDOW)))
}

/// The calls a share wins, in the file's order ([`Share::calls`]): one loop, no adaptors, since a
/// report walks every call of every share.
pub struct ShareCalls<'a> {
    share: &'a Share,
    /// The file's records in order (read back from disk a block at a time, if they are there).
    records: crate::calls::CallIter<'a>,
    at: usize,
    /// The next of the share's `counted` not yet passed.
    counted: usize,
}

impl Iterator for ShareCalls<'_> {
    type Item = Counted;

    fn next(&mut self) -> Option<Counted> {
        let share = self.share;
        loop {
            let at = self.at;
            let call = self.records.next()?;
            self.at += 1;
            let Some(rare) = &share.rare else {
                return Some(Counted {
                    timestamp: call.timestamp,
                    model: call.model,
                    tokens: call.tokens,
                });
            };
            if let Some(won) = &rare.won
                && won[at / 64] & (1 << (at % 64)) == 0
            {
                continue;
            }
            let mut tokens = call.tokens;
            while let Some(&(place, own)) = rare.counted.get(self.counted) {
                if place as usize > at {
                    break;
                }
                if place as usize == at {
                    tokens = own;
                }
                self.counted += 1;
            }
            return Some(Counted {
                timestamp: call.timestamp,
                model: call.model,
                tokens,
            });
        }
    }
}

/// What a share's calls all share.
pub(crate) struct ShareNames {
    pub(crate) agent: Agent,
    pub(crate) session_id: Name,
    pub(crate) subagent: Option<Name>,
    pub(crate) cwd: Option<Cwd>,
}

/// One rate-limit window as Codex last reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateLimitWindow {
    pub used_percent: f64,
    pub window_minutes: Option<u64>,
    /// Unix seconds.
    pub resets_at: Option<i64>,
}

/// Codex's rate limits from its latest `token_count` event that had them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateLimits {
    pub observed_at: Option<UnixMillis>,
    pub primary: Option<RateLimitWindow>,
    pub secondary: Option<RateLimitWindow>,
}

/// Everything [`account`] decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Accounting {
    /// The calls counted, by the file that wins them: the live index keeps each file's share
    /// and shares the ones that did not change with the next accounting ([`crate::ledger`],
    /// [`Shares`]). Their order means nothing.
    pub chunks: Shares,
    /// The models' names, for the calls' ids.
    pub models: ModelNames,
    /// Codex's latest rate limits across all rollouts.
    pub rate_limits: Option<RateLimits>,
    /// Sessions whose files record no usage at all (Grok's may not).
    pub no_usage_recorded: Vec<(Agent, String)>,
    /// Copies of a call found in another file (or repeated), not counted again.
    pub duplicates_skipped: u64,
}

impl Accounting {
    /// Every charge.
    pub fn charges(&self) -> impl Iterator<Item = Charge<'_>> {
        self.chunks
            .iter()
            .flat_map(move |share| share.calls().map(move |call| charge(self, share, call)))
    }
}

fn charge<'a>(accounting: &'a Accounting, share: &'a Share, call: Counted) -> Charge<'a> {
    Charge {
        agent: share.agent,
        session_id: share.session_id.as_str(),
        subagent: share.subagent().map(Name::as_str),
        timestamp: call.timestamp,
        model: call.model.and_then(|id| accounting.models.str(id)),
        cwd: share.cwd.as_deref(),
        tokens: call.tokens,
    }
}

/// Where a copy of a call sits: the earliest wins the call.
pub(crate) type Precedence = (i64, u32, i64, String);

pub(crate) fn precedence(
    at: Option<UnixMillis>,
    depth: u32,
    started: Option<UnixMillis>,
    id: &str,
) -> Precedence {
    (
        at.map_or(i64::MAX, |t| t.0),
        depth,
        started.map_or(i64::MAX, |t| t.0),
        id.to_owned(),
    )
}

/// Decides what every file's usage counts for.
pub fn account(files: &[FileUsage]) -> Accounting {
    let files: Vec<&FileUsage> = files.iter().collect();
    account_refs(&files)
}

/// [`account`] over borrowed parses (the live index keeps its own and lends them).
pub fn account_refs(files: &[&FileUsage]) -> Accounting {
    let mut out = Accounting::default();
    // Each call kept: its rank, the file that wins it (its place in `shares`), its place there
    // and the usage it counts.
    let mut kept: Vec<(Precedence, usize, u32, Tokens)> = Vec::new();
    let mut shares: Vec<(ShareNames, Calls)> = Vec::new();
    let mut claude_keys: HashMap<CallKey, usize> = HashMap::new();
    let mut codex_keys: HashMap<CallKey, usize> = HashMap::new();

    for file in files {
        let FileUsage::Claude(f) = file else { continue };
        let own = f
            .session_id
            .as_deref()
            .map_or_else(|| stem(&f.path), str::to_owned);
        let (session, subagent): (Name, _) = match &f.parent_session {
            Some(parent) => ((&**parent).into(), Some(Name::from(own.as_str()))),
            None => (own.as_str().into(), None),
        };
        let share = shares.len();
        shares.push((
            ShareNames {
                agent: Agent::Claude,
                session_id: session,
                subagent,
                cwd: f.cwd,
            },
            f.messages.clone(),
        ));
        for (at, m) in f.messages.iter().enumerate() {
            let rank = precedence(
                m.timestamp,
                u32::from(f.parent_session.is_some()),
                f.started.get(),
                &own,
            );
            match claude_keys.get(&m.key) {
                Some(&k) => {
                    out.duplicates_skipped += 1;
                    let (kept_rank, kept_share, kept_at, kept_tokens) = &mut kept[k];
                    if m.tokens.total() > kept_tokens.total() {
                        *kept_tokens = m.tokens;
                    }
                    if rank < *kept_rank {
                        *kept_rank = rank;
                        *kept_share = share;
                        *kept_at = at as u32;
                    }
                }
                None => {
                    claude_keys.insert(m.key, kept.len());
                    kept.push((rank, share, at as u32, m.tokens));
                }
            }
        }
    }

    let codex: Vec<&CodexFile> = files
        .iter()
        .filter_map(|f| match f {
            FileUsage::Codex(c) => Some(c),
            _ => None,
        })
        .collect();
    let threads = Threads::new(&codex);
    for f in &codex {
        let own = f
            .thread_id
            .as_deref()
            .map_or_else(|| stem(&f.path), str::to_owned);
        let family = family_hash(&threads.family(&own));
        let (session, depth) = threads.session(&own);
        let subagent: Option<Name> = (session != own).then(|| own.as_str().into());
        let share = shares.len();
        shares.push((
            ShareNames {
                agent: Agent::Codex,
                session_id: session.as_str().into(),
                subagent,
                cwd: f.cwd,
            },
            f.calls.clone(),
        ));
        let fork_depth = threads.fork_depth(&own);
        for (at, c) in f.calls.iter().enumerate() {
            let rank = precedence(c.timestamp, fork_depth + depth, f.started.get(), &own);
            let key = key_in(c.key, family);
            match codex_keys.get(&key) {
                Some(&k) => {
                    out.duplicates_skipped += 1;
                    if rank < kept[k].0 {
                        kept[k] = (rank, share, at as u32, c.tokens);
                    }
                }
                None => {
                    codex_keys.insert(key, kept.len());
                    kept.push((rank, share, at as u32, c.tokens));
                }
            }
        }
        if let Some(limits) = &f.rate_limits
            && out
                .rate_limits
                .as_ref()
                .is_none_or(|l| l.observed_at <= limits.observed_at)
        {
            out.rate_limits = Some((**limits).clone());
        }
    }

    for file in files {
        let FileUsage::Grok(f) = file else { continue };
        let session = f
            .session_id
            .as_deref()
            .map_or_else(|| stem(&f.path), str::to_owned);
        if f.turns.is_empty() {
            out.no_usage_recorded.push((Agent::Grok, session));
            continue;
        }
        let share = shares.len();
        shares.push((
            ShareNames {
                agent: Agent::Grok,
                session_id: session.as_str().into(),
                subagent: None,
                cwd: f.cwd,
            },
            grok_calls(f),
        ));
        for (at, turn) in f.turns.iter().enumerate() {
            kept.push((
                precedence(turn.timestamp, 0, f.started.get(), &session),
                share,
                at as u32,
                turn.tokens,
            ));
        }
    }

    // Each file's won places, and the usage of those that count another copy's.
    let mut won: Vec<Vec<(u32, Tokens)>> = vec![Vec::new(); shares.len()];
    for (_, share, at, tokens) in kept {
        won[share].push((at, tokens));
    }
    out.chunks = shares
        .into_iter()
        .zip(won)
        .filter_map(|((names, calls), mut won)| {
            won.sort_by_key(|&(at, _)| at);
            let wins = |at: usize| won.binary_search_by_key(&(at as u32), |&(a, _)| a).is_ok();
            let counted: Vec<(u32, Tokens)> = won
                .iter()
                .filter(|&&(at, tokens)| calls.get(at as usize).is_some_and(|c| c.tokens != tokens))
                .copied()
                .collect();
            Share::new(names, calls.clone(), wins, counted)
        })
        .collect();
    out.models = ModelNames::now();
    out
}

/// A Grok session's turns as calls (Grok's readers keep turns; few files have any).
pub(crate) fn grok_calls(f: &GrokFile) -> Calls {
    Arc::new(
        f.turns
            .iter()
            .map(|t| Call {
                key: CallKey::default(),
                timestamp: t.timestamp,
                model: None,
                tokens: t.tokens,
            })
            .collect(),
    )
}

/// How Codex threads relate: forks and spawns, from each rollout's `session_meta`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Threads {
    forked_from: HashMap<String, String>,
    parent: HashMap<String, String>,
}

/// Deeper chains than this are a loop in damaged metadata.
const MAX_CHAIN: usize = 64;

impl Threads {
    /// The ties `files` record, in any order: of two rollouts naming the same thread, the first
    /// in path order says what it is tied to (as a whole scan, reading in path order, decides).
    pub(crate) fn new(files: &[&CodexFile]) -> Self {
        /// A tie kept with the path that said it; the first path in order says it.
        fn tie<'p>(
            ties: &mut HashMap<String, (String, &'p std::path::Path)>,
            id: &str,
            to: &str,
            path: &'p std::path::Path,
        ) {
            match ties.get_mut(id) {
                Some(kept) if kept.1 <= path => {}
                Some(kept) => *kept = (to.to_owned(), path),
                None => {
                    ties.insert(id.to_owned(), (to.to_owned(), path));
                }
            }
        }
        let mut forked_from = HashMap::new();
        let mut parent = HashMap::new();
        for f in files {
            let Some(id) = &f.thread_id else { continue };
            if let Some(base) = f.forked_from() {
                tie(&mut forked_from, id, base, &f.path);
            }
            if let Some(p) = f.parent_thread() {
                tie(&mut parent, id, p, &f.path);
            }
        }
        let named = |ties: HashMap<String, (String, &std::path::Path)>| {
            ties.into_iter().map(|(id, (to, _))| (id, to)).collect()
        };
        Self {
            forked_from: named(forked_from),
            parent: named(parent),
        }
    }

    /// The root of every fork and spawn above `id` (a base that is not on disk still names the
    /// family, so two forks of a deleted base share one).
    pub(crate) fn family(&self, id: &str) -> String {
        let mut at = id;
        for _ in 0..MAX_CHAIN {
            match self.forked_from.get(at).or_else(|| self.parent.get(at)) {
                Some(up) if up != at => at = up,
                _ => break,
            }
        }
        at.to_owned()
    }

    /// The session a thread's calls count for — the top of its spawn chain — and how far up.
    pub(crate) fn session(&self, id: &str) -> (String, u32) {
        let mut at = id;
        let mut depth = 0;
        for _ in 0..MAX_CHAIN {
            match self.parent.get(at) {
                Some(up) if up != at => {
                    at = up;
                    depth += 1;
                }
                _ => break,
            }
        }
        (at.to_owned(), depth)
    }

    pub(crate) fn fork_depth(&self, id: &str) -> u32 {
        let mut at = id;
        let mut depth = 0;
        for _ in 0..MAX_CHAIN {
            match self.forked_from.get(at) {
                Some(up) if up != at => {
                    at = up;
                    depth += 1;
                }
                _ => break,
            }
        }
        depth
    }
}

pub(crate) fn stem(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A share is kept for every file that wins a call (100,000 at the largest stores), in one
    /// table ([`Shares`]): 64 bytes, what only a sub-agent's file or a file sharing its calls
    /// has boxed apart.
    #[test]
    fn a_share_fits_64_bytes() {
        assert!(std::mem::size_of::<Share>() <= 64);
    }

    /// A share is passed over by a report since a time only when no call it wins is at or after
    /// that time: checked against every call's own time, around whole seconds, before 1970 and
    /// past what 32 bits of seconds hold, with calls it does not win left out.
    #[test]
    fn a_share_is_passed_over_only_when_no_call_it_wins_is_in_the_window() {
        let names = || ShareNames {
            agent: Agent::Claude,
            session_id: "s".into(),
            subagent: None,
            cwd: None,
        };
        let call = |n: u64, at: Option<i64>| Call {
            key: CallKey::of(|w| {
                w.u64(n);
            }),
            timestamp: at.map(UnixMillis),
            model: None,
            tokens: Tokens::default(),
        };
        let times = [
            vec![Some(1_796_000_000_000)],
            vec![Some(1_796_000_000_001), None],
            vec![Some(1_796_000_000_999), Some(5)],
            vec![None],
            vec![Some(0)],
            vec![Some(-1_500)],
            vec![Some(-1)],
            vec![Some(i64::from(u32::MAX) * 1000 + 1)],
            // The latest is not won: it counts for another file.
            vec![Some(1_796_000_000_000), Some(1_796_000_500_000)],
        ];
        for (n, times) in times.iter().enumerate() {
            let calls: Calls = Arc::new(
                times
                    .iter()
                    .enumerate()
                    .map(|(i, &at)| call(i as u64, at))
                    .collect(),
            );
            let wins = |at: usize| n != 8 || at == 0;
            let share = Share::new(names(), calls.clone(), wins, Vec::new()).unwrap();
            let won: Vec<i64> = (0..calls.len())
                .filter(|&at| wins(at))
                .filter_map(|at| calls.get(at)?.timestamp.map(|t| t.0))
                .collect();
            for &at in &won {
                for since in [at - 1_000, at - 1, at, at + 1, at + 999] {
                    // Never passed over with a won call in the window.
                    if won.iter().any(|&t| t >= since) {
                        assert!(
                            share.may_count_since(UnixMillis(since)),
                            "{times:?} since {since}"
                        );
                    }
                }
            }
            // A second after the latest won call, the share is passed over.
            if let Some(&latest) = won.iter().max()
                && latest < i64::from(u32::MAX) * 1000
            {
                assert!(!share.may_count_since(UnixMillis(latest.max(0) + 1_000)));
            }
        }
    }
}
