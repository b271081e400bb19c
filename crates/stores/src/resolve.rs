//! Resolution primitives: which sessions a scope admits and how they rank, whether a session is
//! active, the best-fit pick among active sessions, and lookup by id or exact name.
//!
//! These are pure functions over the sessions the index lists — a scan's whole [`Session`]s or
//! the daemon's held ones ([`crate::held`]), read through the same view — so the hub, the CLI
//! and the tests all decide the same way from the same data. The rules are the spec's §5 and
//! "A new conversation is the last resort":
//!
//! - **Scopes.** `cwd` admits sessions working in the given directory or any of its
//!   subdirectories; `tree` also admits its parents; both rank exact > subdirectory > parent
//!   (§4's scope parameter and §5's sort). `any` admits every session and ranks by recency alone.
//!   Parents are admitted only under `tree` because the home directory is a parent of every
//!   project: a session opened at `~` must not hijack a project. Directories are compared by
//!   whole components, so `proj2` is not inside `proj`.
//! - **Active.** A session is active while its last record is within the active window
//!   (`CROSS_AGENT_ACTIVE_WINDOW_MIN`, 240 minutes by default).
//! - **Names are exact.** A query matches a session whose id equals it, or whose title equals it
//!   as a whole string (surrounding whitespace ignored, nothing else): no substring, no case
//!   folding, no regex or glob, so `foo*` matches only a session titled `foo*`. A generated title
//!   (from the first message) is a description, not a name: a word inside it never matches, but
//!   the whole title, typed exactly, does — the spec lists generated titles among the candidates
//!   of an ambiguous name, which only makes sense if they can answer to it. Because the same
//!   opening prompt yields the same generated title, such a match is usually refused as
//!   ambiguous, which is the point: the refusal lists every candidate so the caller can use an id.
//! - **Never a guess.** A name two sessions answer to — assigned or generated, in any mix — is
//!   refused with every candidate. No match fails and lists similar titles; they are only shown,
//!   never chosen.
//! - **No cap by default.** Lookup runs over every session on disk. A bound
//!   (`CROSS_AGENT_NAME_SCAN_LIMIT`, and for Codex also `CROSS_AGENT_CODEX_SCAN_LIMIT`) restricts
//!   it to the most recently active sessions; when the bound is reached, a name matched within it
//!   cannot be shown to be unique and is refused, saying how many sessions were reached.

use std::cmp::Reverse;
use std::path::Path;

use cross_agent_protocol::settings as var;
use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::held::{AsSession, SessionList, SessionRef};
use crate::model::{Agent, UnixMillis};

/// The spec's default active window, in minutes.
pub const DEFAULT_ACTIVE_WINDOW_MIN: u64 = 240;

/// How many similar titles a "not found" error lists at most.
const MAX_SIMILAR: usize = 10;

/// Which sessions discovery and lookup consider, relative to a working directory: `cwd`
/// (this directory, then its subdirectories), `tree` (also its parents, ranked last) or `any`
/// (every session, ranked by recency). The protocol's word, so a scope is named once.
pub use cross_agent_protocol::bridge::Scope;

/// How a session's directory relates to the directory asked about. The order is the rank:
/// an exact match beats a subdirectory, which beats a parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DirRelation {
    Exact,
    Subdirectory,
    Parent,
}

/// Compares whole path components, so `/a/bc` is neither inside nor above `/a/b`, and a trailing
/// slash or a `.` component makes no difference. Paths are not canonicalised: a session's
/// directory may no longer exist, and the agents record the path they were started in.
pub fn dir_relation(session_cwd: &Path, cwd: &Path) -> Option<DirRelation> {
    if session_cwd.components().eq(cwd.components()) {
        Some(DirRelation::Exact)
    } else if session_cwd.starts_with(cwd) {
        Some(DirRelation::Subdirectory)
    } else if cwd.starts_with(session_cwd) {
        Some(DirRelation::Parent)
    } else {
        None
    }
}

/// The rank of `session` under `scope` (lower is better), or `None` when the scope does not
/// admit it. Under `any` every session ranks the same, so recency alone orders them.
pub fn scope_rank<'s>(scope: Scope, session: impl AsSession<'s>, cwd: &Path) -> Option<u8> {
    let rank = |dir: &Path| match scope {
        Scope::Any => Some(0),
        Scope::Cwd => match dir_relation(dir, cwd)? {
            DirRelation::Exact => Some(0),
            DirRelation::Subdirectory => Some(1),
            DirRelation::Parent => None,
        },
        Scope::Tree => match dir_relation(dir, cwd)? {
            DirRelation::Exact => Some(0),
            DirRelation::Subdirectory => Some(1),
            DirRelation::Parent => Some(2),
        },
    };
    if scope == Scope::Any {
        return Some(0);
    }
    let session = session.fields();
    let own = session.cwd().and_then(rank);
    // A Copilot session may work in several folders: the best of them counts.
    let others = session.copilot().into_iter().flat_map(|details| {
        details
            .working_directories
            .iter()
            .filter_map(|dir| rank(Path::new(dir)))
    });
    own.into_iter().chain(others).min()
}

/// The sessions of `agent` that `scope` admits, best first: directory rank, then most recent
/// last activity (sessions with no recorded activity last), then id so the order is stable.
pub fn ranked<'a, L: SessionList<'a>>(
    sessions: L,
    agent: Agent,
    scope: Scope,
    cwd: &Path,
) -> Vec<L::Item> {
    ranked_among(sessions.all(), agent, scope, cwd)
}

/// [`ranked`] over any sessions given in the listing's order: the sort is stable, so a subset
/// of a listing ranks in the order the whole listing would give it.
fn ranked_among<'a, S: AsSession<'a>>(
    sessions: impl IntoIterator<Item = S>,
    agent: Agent,
    scope: Scope,
    cwd: &Path,
) -> Vec<S> {
    let mut admitted: Vec<(u8, S)> = sessions
        .into_iter()
        .filter(|session| session.fields().agent() == agent)
        .filter_map(|session| scope_rank(scope, session, cwd).map(|rank| (rank, session)))
        .collect();
    admitted.sort_by(|(rank_a, a), (rank_b, b)| {
        let (a, b) = (a.fields(), b.fields());
        rank_a
            .cmp(rank_b)
            .then_with(|| Reverse(a.last_activity()).cmp(&Reverse(b.last_activity())))
            .then_with(|| a.session_id().cmp(b.session_id()))
    });
    admitted.into_iter().map(|(_, session)| session).collect()
}

/// How recent a session's last record must be for it to count as active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveWindow {
    minutes: u64,
}

impl Default for ActiveWindow {
    fn default() -> Self {
        ActiveWindow::from_minutes(DEFAULT_ACTIVE_WINDOW_MIN)
    }
}

impl ActiveWindow {
    pub fn from_minutes(minutes: u64) -> ActiveWindow {
        ActiveWindow { minutes }
    }

    pub fn minutes(self) -> u64 {
        self.minutes
    }

    /// `CROSS_AGENT_ACTIVE_WINDOW_MIN`, or 240 when unset. A value that is not a whole number of
    /// minutes is an error rather than silently the default: a person set it on purpose.
    pub fn from_env() -> Result<ActiveWindow> {
        match std::env::var(var::ACTIVE_WINDOW_MIN) {
            Ok(value) if !value.trim().is_empty() => value
                .trim()
                .parse::<u64>()
                .map(ActiveWindow::from_minutes)
                .map_err(|_| StoreError::InvalidSetting {
                    name: var::ACTIVE_WINDOW_MIN,
                    value,
                    expected: "a whole number of minutes",
                }),
            _ => Ok(ActiveWindow::default()),
        }
    }

    /// Whether a session last active at `last_activity` still counts as active at `now`. A
    /// session with no recorded activity never does.
    pub fn is_active(self, last_activity: Option<UnixMillis>, now: UnixMillis) -> bool {
        let window_ms = i64::try_from(self.minutes.saturating_mul(60_000)).unwrap_or(i64::MAX);
        match last_activity {
            Some(UnixMillis(last)) => now.0.saturating_sub(last) <= window_ms,
            None => false,
        }
    }
}

/// Spec §5 rule 3: the best-fit active session of `agent` — directory rank first, then most
/// recent (then id, as [`ranked`] orders them). `exclude` names a session never to pick (the
/// caller's own: auto-discovery must not route a message back into its sender). One pass that
/// keeps the best so far: a send at 50,000 sessions sorts none of them.
pub fn best_active<'a, S: AsSession<'a>>(
    sessions: impl IntoIterator<Item = S>,
    agent: Agent,
    scope: Scope,
    cwd: &Path,
    window: ActiveWindow,
    now: UnixMillis,
    exclude: Option<&str>,
) -> Option<S> {
    let order = |session: S, rank: u8| {
        let session = session.fields();
        (rank, Reverse(session.last_activity()), session.session_id())
    };
    let mut best: Option<(u8, S)> = None;
    for session in sessions {
        let fields = session.fields();
        if fields.agent() != agent
            || !window.is_active(fields.last_activity(), now)
            || exclude.is_some_and(|own| own == fields.session_id())
        {
            continue;
        }
        let Some(rank) = scope_rank(scope, session, cwd) else {
            continue;
        };
        // Strictly better only: of two that tie, the first in the listing's order stays, as
        // the stable sort of [`ranked`] keeps it.
        if best.is_none_or(|(best_rank, kept)| order(session, rank) < order(kept, best_rank)) {
            best = Some((rank, session));
        }
    }
    best.map(|(_, session)| session)
}

/// A bound on name lookups: consider only the `limit` most recently active sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanBound {
    pub limit: usize,
    /// The setting the bound came from, so a refusal can name it.
    pub source: &'static str,
}

impl ScanBound {
    /// The bound configured for `agent`'s name lookups in `scope`: the smaller of
    /// `CROSS_AGENT_NAME_SCAN_LIMIT` and, for Codex under scope `any` (the only scope the spec
    /// applies it to), `CROSS_AGENT_CODEX_SCAN_LIMIT`. `None` — the default — means every session.
    pub fn from_env(agent: Agent, scope: Scope) -> Result<Option<ScanBound>> {
        let mut bound = read_limit(var::NAME_SCAN_LIMIT)?;
        if agent == Agent::Codex
            && scope == Scope::Any
            && let Some(codex) = read_limit(var::CODEX_SCAN_LIMIT)?
            && bound.is_none_or(|general| codex.limit < general.limit)
        {
            bound = Some(codex);
        }
        Ok(bound)
    }
}

fn read_limit(name: &'static str) -> Result<Option<ScanBound>> {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => match value.trim().parse::<usize>() {
            Ok(limit) if limit > 0 => Ok(Some(ScanBound {
                limit,
                source: name,
            })),
            _ => Err(StoreError::InvalidSetting {
                name,
                value,
                expected: "a positive whole number of sessions",
            }),
        },
        _ => Ok(None),
    }
}

/// What a lookup by id or name considers.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub agent: Agent,
    /// Restricts candidates to a scope; `Scope::Any` (no restriction) is the usual choice for an
    /// explicit id or name.
    pub scope: Scope,
    pub cwd: &'a Path,
    pub bound: Option<ScanBound>,
}

/// How a lookup found its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    SessionId,
    AssignedName,
    GeneratedTitle,
}

/// The one session a query resolved to: a `&Session` of a whole listing, a [`SessionRef`] of
/// held sessions.
#[derive(Debug, Clone, Copy)]
pub struct Resolved<S> {
    pub session: S,
    pub matched_by: MatchedBy,
}

/// Finds the one session of `lookup.agent` that `query` names: by session id, else by exact
/// title. Refuses rather than guesses — see the module docs for every rule.
pub fn lookup<'a, L: SessionList<'a>>(
    sessions: L,
    query: &str,
    lookup: Lookup<'_>,
) -> Result<Resolved<L::Item>> {
    lookup_among(sessions.all(), query, lookup)
}

/// [`lookup`] over any sessions given in the listing's order.
fn lookup_among<'a, S: AsSession<'a>>(
    sessions: impl IntoIterator<Item = S>,
    query: &str,
    lookup: Lookup<'_>,
) -> Result<Resolved<S>> {
    let query = query.trim();
    let admitted = ranked_among(sessions, lookup.agent, lookup.scope, lookup.cwd);

    // An id is unique by construction, so it is looked up across every admitted session whatever
    // the bound: the bound exists to make names refusable, and the spec's advice when a name
    // cannot be resolved is to use the id.
    if let Some(&session) = admitted
        .iter()
        .find(|session| session.fields().session_id() == query)
    {
        return Ok(Resolved {
            session,
            matched_by: MatchedBy::SessionId,
        });
    }

    let mut by_recency = admitted;
    by_recency.sort_by_key(|session| {
        let session = session.fields();
        (Reverse(session.last_activity()), session.session_id())
    });
    let total = by_recency.len();
    // The bound counts as reached only when there are more sessions than it admits.
    let reached = lookup.bound.filter(|bound| total > bound.limit);
    let considered = match reached {
        Some(bound) => &by_recency[..bound.limit],
        None => &by_recency[..],
    };

    let matches: Vec<S> = considered
        .iter()
        .copied()
        .filter(|session| session.fields().title().map(str::trim) == Some(query))
        .collect();

    match (matches.as_slice(), reached) {
        (&[only], None) => Ok(Resolved {
            session: only,
            matched_by: if only.fields().title_is_assigned() {
                MatchedBy::AssignedName
            } else {
                MatchedBy::GeneratedTitle
            },
        }),
        (&[only], Some(bound)) => Err(StoreError::ScanBoundReached {
            agent: lookup.agent,
            name: query.to_owned(),
            candidate: Box::new(Candidate::of(only)),
            reached: bound.limit,
            total,
            bound_setting: bound.source,
        }),
        ([], reached) => Err(StoreError::NoSuchSession {
            agent: lookup.agent,
            query: query.to_owned(),
            scope: lookup.scope,
            similar: similar_titles(query, considered),
            reached: reached.map(|bound| (bound.limit, total, bound.source)),
        }),
        (many, _) => Err(StoreError::AmbiguousName {
            agent: lookup.agent,
            name: query.to_owned(),
            candidates: many.iter().map(|&session| Candidate::of(session)).collect(),
        }),
    }
}

/// Where each session id and trimmed title is among one agent's listed sessions, so a lookup
/// by id or exact name ([`NameIndex::lookup`]) reads the few sessions that could answer rather
/// than every one. Kept with the listing it was made from (the daemon's live index makes one
/// per generation). Keys are hashes: a session found by one is a candidate only, and
/// [`lookup`]'s rules decide among the candidates exactly as among all the sessions.
#[derive(Debug, Default, Clone)]
pub struct NameIndex {
    /// The hash of each id and trimmed title, sorted.
    keys: Vec<u64>,
    /// The index of the session bearing each key, beside it: apart, the two take 12 bytes a
    /// key where a `(u64, usize)` pair took 16 (a daemon keeps one a generation).
    at: Vec<u32>,
    /// How many sessions it was made for: any other listing is looked up the long way.
    sessions: usize,
}

/// The hash a [`NameIndex`] files an id or a trimmed title under.
fn name_key(name: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(name.as_bytes())
}

impl NameIndex {
    /// The index of `sessions` (in their order). A listing of more sessions than a `u32`
    /// counts gets an empty one, and is looked up the long way.
    pub fn new<'a>(sessions: impl SessionList<'a>) -> NameIndex {
        if u32::try_from(sessions.count()).is_err() {
            return NameIndex::default();
        }
        let mut pairs: Vec<(u64, u32)> = Vec::with_capacity(sessions.count() * 2);
        for (i, s) in (0u32..).zip(sessions.all()) {
            let s = s.fields();
            pairs.push((name_key(s.session_id()), i));
            if let Some(title) = s.title() {
                pairs.push((name_key(title.trim()), i));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        NameIndex {
            keys: pairs.iter().map(|(key, _)| *key).collect(),
            at: pairs.iter().map(|(_, i)| *i).collect(),
            sessions: sessions.count(),
        }
    }

    /// The bytes it holds (capacity).
    pub fn heap_bytes(&self) -> usize {
        self.keys.capacity() * std::mem::size_of::<u64>()
            + self.at.capacity() * std::mem::size_of::<u32>()
    }

    /// The sessions whose id or trimmed title may be `name`, in the listing's order.
    fn candidates<'a, L: SessionList<'a>>(
        &self,
        sessions: L,
        name: &str,
    ) -> impl Iterator<Item = L::Item> {
        let key = name_key(name);
        let start = self.keys.partition_point(|k| *k < key);
        let end = start + self.keys[start..].partition_point(|k| *k == key);
        self.at
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .filter_map(move |i| sessions.at(*i as usize))
    }

    /// [`lookup`] in `sessions`, the listing this index was made from: the same session, the
    /// same `matched_by`, the same refusals. A name found among its candidates (or refused as
    /// ambiguous among them) is found without walking the listing; a bound (which counts and
    /// cuts every admitted session), a name nothing answers to (whose refusal lists similar
    /// titles from all of them) and a listing it was not made for take the long way.
    pub fn lookup<'a, L: SessionList<'a>>(
        &self,
        sessions: L,
        query: &str,
        asked: Lookup<'_>,
    ) -> Result<Resolved<L::Item>> {
        if asked.bound.is_none() && self.sessions == sessions.count() {
            let found = lookup_among(self.candidates(sessions, query.trim()), query, asked);
            if !matches!(found, Err(StoreError::NoSuchSession { .. })) {
                return found;
            }
        }
        lookup(sessions, query, asked)
    }
}

/// Titles close to `query`, best first, to show (never to choose) when nothing matched: the same
/// text in another case, a title containing the query or contained in it, or a title a few edits
/// away. One entry per distinct title, the most recently active session standing for it.
pub fn similar_titles<'a, S: AsSession<'a>>(query: &str, sessions: &[S]) -> Vec<SimilarTitle> {
    let query_lower = query.to_lowercase();
    let query_chars: Vec<char> = query_lower.chars().collect();
    let mut scored: Vec<(usize, SessionRef<'a>, &str)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // `sessions` is newest first, so the first session seen for a title is its most recent.
    for session in sessions {
        let session = session.fields();
        let Some(title) = session.title().map(str::trim) else {
            continue;
        };
        if title.is_empty() || !seen.insert(title) {
            continue;
        }
        if let Some(score) = similarity(&query_lower, &query_chars, title) {
            scored.push((score, session, title));
        }
    }
    scored.sort_by_key(|(score, session, _)| (*score, Reverse(session.last_activity())));
    scored
        .into_iter()
        .take(MAX_SIMILAR)
        .map(|(_, session, title)| SimilarTitle {
            title: title.to_owned(),
            title_is_assigned: session.title_is_assigned(),
            session_id: session.session_id().to_owned(),
            last_activity: session.last_activity(),
        })
        .collect()
}

/// Lower is closer; `None` is not similar at all.
fn similarity(query_lower: &str, query_chars: &[char], title: &str) -> Option<usize> {
    // Containment of a one- or two-letter query would list nearly every title.
    const MIN_CONTAINED: usize = 3;
    // Edit distance is quadratic; a title this long is a first prompt, not a name to mistype.
    const MAX_EDIT_LEN: usize = 120;

    let title_lower = title.to_lowercase();
    if title_lower == query_lower {
        return Some(0);
    }
    let title_len = title_lower.chars().count();
    if query_chars.len() >= MIN_CONTAINED && title_lower.contains(query_lower) {
        return Some(1);
    }
    if title_len >= MIN_CONTAINED && query_lower.contains(&title_lower) {
        return Some(1);
    }
    let allowed = (query_chars.len().max(title_len) / 4).max(1);
    if title_len > MAX_EDIT_LEN || title_len.abs_diff(query_chars.len()) > allowed {
        return None;
    }
    let title_chars: Vec<char> = title_lower.chars().collect();
    let distance = levenshtein(query_chars, &title_chars);
    (distance <= allowed).then_some(1 + distance)
}

fn levenshtein(a: &[char], b: &[char]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// One session a refused name could mean: what a person needs to pick it by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub session_id: String,
    pub title: Option<String>,
    /// Assigned by a person, or generated from the first message.
    pub title_is_assigned: bool,
    pub last_activity: Option<UnixMillis>,
    pub cwd: Option<std::path::PathBuf>,
    pub path: std::path::PathBuf,
}

impl Candidate {
    pub fn of<'a>(session: impl AsSession<'a>) -> Candidate {
        let session = session.fields();
        Candidate {
            session_id: session.session_id().to_owned(),
            title: session.title().map(str::to_owned),
            title_is_assigned: session.title_is_assigned(),
            last_activity: session.last_activity(),
            cwd: session.cwd().map(Path::to_path_buf),
            path: session.path().into_owned(),
        }
    }
}

/// A title close to a query that matched nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimilarTitle {
    pub title: String,
    pub title_is_assigned: bool,
    /// The most recently active session with this title.
    pub session_id: String,
    pub last_activity: Option<UnixMillis>,
}

fn kind_of(title_is_assigned: bool) -> &'static str {
    if title_is_assigned {
        "name assigned"
    } else {
        "title generated from its first message"
    }
}

fn when(last_activity: Option<UnixMillis>) -> String {
    last_activity.map_or_else(|| "never".to_owned(), UnixMillis::to_rfc3339)
}

/// The candidates of a refusal, one line each.
pub(crate) fn candidate_lines(candidates: &[Candidate]) -> String {
    candidates
        .iter()
        .map(|c| {
            format!(
                "  - {}  last active {}  {}  cwd {}",
                c.session_id,
                when(c.last_activity),
                kind_of(c.title_is_assigned),
                c.cwd
                    .as_deref()
                    .map_or_else(|| "unknown".to_owned(), |p| p.display().to_string()),
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The similar titles of a failed lookup, or a note that there are none.
pub(crate) fn similar_lines(similar: &[SimilarTitle]) -> String {
    if similar.is_empty() {
        return "; no similar titles either".to_owned();
    }
    let lines: Vec<String> = similar
        .iter()
        .map(|s| {
            format!(
                "  - {:?}  ({}; {} last active {})",
                s.title,
                kind_of(s.title_is_assigned),
                s.session_id,
                when(s.last_activity)
            )
        })
        .collect();
    format!(
        "; similar titles (not chosen — use the exact name or the id):\n{}",
        lines.join("\n")
    )
}

/// How far a bounded lookup got, when a bound stopped it.
pub(crate) fn reached_note(reached: &Option<(usize, usize, &'static str)>) -> String {
    match reached {
        Some((reached, total, setting)) => format!(
            " among the {reached} most recently active of {total} sessions (stopped by {setting})"
        ),
        None => String::new(),
    }
}
