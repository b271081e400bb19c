//! The listing `cross-agent sessions --json` prints, as bytes: one function for the CLI's own
//! scan and for the daemon, which keeps each agent's sessions rendered ([`RenderedAgent`]) so a
//! listing is a copy of ready bytes instead of 22,000 objects serialised again.
//!
//! The bytes are exactly what `serde_json::to_writer_pretty` writes for the map `{agent:
//! [SessionView, …]}` in the order asked, followed by a newline (held to that by the tests
//! below). Each session is serialised alone by serde_json's pretty printer and indented two
//! levels; this is sound because serde_json never writes a raw newline inside a string, so
//! every newline in an element is one of the printer's. `is_active` depends on the caller's
//! clock and window: the kept bytes say `false`, and a session active for the caller is
//! serialised afresh (few are: those of the last hours). So is a Claude session a running
//! process holds, with its registry name and status, read at each listing.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::claude_registry::{Registry, RegistryEntry};
use crate::held::{AsSession, HeldSessions, SessionList, SessionRef};
use crate::model::{Agent, CopilotDetails, Session, UnixMillis};
use crate::resolve::ActiveWindow;

mod chunks;
mod kept_file;
mod sink;
mod spent;

use kept_file::KeptFile;
use spent::{push_spent, spent_fields};

pub use chunks::{CHUNK, Chunks, Piece};
pub use kept_file::TextDir;
pub use sink::{ListingParts, ListingSink, WriteSink};
pub use spent::{BarePiece, BareRun};

/// One session as `--json` shows it: the fields of the protocol's `SessionEntry` but
/// `is_caller` and `is_pinned` (which only the daemon knows), borrowed from the listing.
#[derive(Debug, Serialize)]
pub struct SessionView<'a> {
    pub session_id: &'a str,
    pub title: Option<&'a str>,
    pub title_is_assigned: bool,
    pub cwd: Option<Cow<'a, str>>,
    /// RFC 3339, UTC.
    pub last_activity: Option<String>,
    pub is_active: bool,
    pub is_working: bool,
    pub path: Cow<'a, str>,
    /// A Claude session a running Claude Code process holds: its registry name and busy/idle
    /// status (absent otherwise, and from the kept bytes: such a session is serialised afresh).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_status: Option<&'a str>,
    /// A Copilot session's own facts (absent for the other agents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copilot: Option<&'a CopilotDetails>,
}

impl<'a> SessionView<'a> {
    pub fn new(s: impl AsSession<'a>, window: ActiveWindow, now: UnixMillis) -> Self {
        let s = s.fields();
        Self::with_active(s, window.is_active(s.last_activity(), now))
    }

    fn with_active(s: SessionRef<'a>, is_active: bool) -> Self {
        SessionView {
            session_id: s.session_id(),
            title: s.title(),
            title_is_assigned: s.title_is_assigned(),
            cwd: s.cwd().map(Path::to_string_lossy),
            last_activity: s.last_activity().map(UnixMillis::to_rfc3339),
            is_active,
            is_working: s.is_working(),
            path: match s.path() {
                Cow::Borrowed(path) => path.to_string_lossy(),
                Cow::Owned(path) => Cow::Owned(path.to_string_lossy().into_owned()),
            },
            registry_name: None,
            registry_status: None,
            copilot: s.copilot(),
        }
    }

    /// With the registry name and status of the live Claude Code process holding `s`, if one
    /// does.
    pub fn live(mut self, s: impl AsSession<'a>, registry: Option<&'a Registry>) -> Self {
        if let Some(entry) = live_entry(s, registry) {
            self.registry_name = entry.name.as_deref();
            self.registry_status = entry.status.as_deref();
        }
        self
    }
}

/// The live registry entry of a Claude session, if a running process holds it.
fn live_entry<'a, 'r>(
    s: impl AsSession<'a>,
    registry: Option<&'r Registry>,
) -> Option<&'r RegistryEntry> {
    let s = s.fields();
    (s.agent() == Agent::Claude)
        .then(|| registry?.live_session(s.session_id()))
        .flatten()
}

/// One agent's sessions rendered as listing elements with `is_active: false`, kept by a
/// long-lived process until the agent's sessions change; with each session's cost fields
/// spliced in once an accounting is known ([`RenderedAgent::recost`]).
///
/// The elements are kept joined as the listing joins them (`,\n` between two), so a run of
/// sessions listed one after another — every one of them, in a full listing — is one slice of
/// the text, written out as it is rather than copied element by element; with costs too, when
/// the text has the listing's. A listing without costs from a text with them is two slices per
/// element ([`BareRun`]).
///
/// A long-lived process keeps the text in an unnamed file instead of its heap
/// ([`RenderedAgent::keep_in`], [`TextDir`]): then only the places of the elements are in
/// memory (12 bytes a session), and a listing reads its runs back as it is written ([`Chunks`]).
#[derive(Debug, Default, Clone)]
pub struct RenderedAgent {
    /// The text, while it is on the heap: empty once kept in `file`.
    text: Vec<u8>,
    /// The text, once kept in a file ([`RenderedAgent::keep_in`]); shared by the listings
    /// made from it, which read it as they are written.
    file: Option<Arc<KeptFile>>,
    /// Session `i` is `text[ends[i - 1] + SEPARATOR.len()..ends[i]]` (from 0 for the first).
    ends: Vec<usize>,
    /// The length of session `i`'s cost fields, just before its closing brace (0: none), with
    /// [`OPEN`] set when the element does not end as the printer ends one (it has no fields).
    fields: Vec<u32>,
    /// Whether any element has cost fields (without, the costless listing is one slice a run).
    costed: bool,
}

/// Between two elements of a listing's array.
const SEPARATOR: &[u8] = b",\n";

/// Set in an element's [`RenderedAgent::fields`] when it does not end as the printer ends one:
/// kept beside the text so an element's parts are known without reading it.
const OPEN: u32 = 1 << 31;

impl RenderedAgent {
    /// Renders `sessions` (the order kept).
    pub fn new<'a>(sessions: impl SessionList<'a>) -> RenderedAgent {
        let mut rendered = RenderedAgent {
            text: Vec::with_capacity(sessions.count() * 480),
            ends: Vec::with_capacity(sessions.count()),
            fields: Vec::with_capacity(sessions.count()),
            ..RenderedAgent::default()
        };
        for s in sessions.all() {
            let closed = rendered.open_element(s.fields());
            rendered.end_element(closed, |_| {});
        }
        rendered
    }

    /// Before an element but the first.
    fn separate(&mut self) {
        if !self.ends.is_empty() {
            self.text.extend_from_slice(SEPARATOR);
        }
    }

    /// Writes session `s`'s element (with the separator before it, but the first's) up to its
    /// closing brace, and says whether it ends as the printer ends one — then its cost fields
    /// go before the brace ([`RenderedAgent::end_element`]); else it is written whole.
    fn open_element(&mut self, s: SessionRef<'_>) -> bool {
        self.separate();
        let start = self.text.len();
        write_element(&mut self.text, &SessionView::with_active(s, false));
        let closed = self.text[start..].ends_with(ELEMENT_END);
        if closed {
            self.text.truncate(self.text.len() - ELEMENT_END.len());
        }
        closed
    }

    /// Ends the element just opened: when it is `closed`, the cost fields `fields` writes
    /// (none at all is fine) and its closing brace; then its end, with the fields' length.
    fn end_element(&mut self, closed: bool, fields: impl FnOnce(&mut Vec<u8>)) {
        let length = if closed {
            let start = self.text.len();
            fields(&mut self.text);
            let length = self.text.len() - start;
            self.text.extend_from_slice(ELEMENT_END);
            length
        } else {
            0
        };
        self.costed |= length > 0;
        self.push_end(length, closed);
    }

    /// The rendering of `sessions` made from an earlier one of `before`: a session unchanged
    /// since (the same path, equal in every field) is copied, only the others are serialised —
    /// a store where one session is being written renders one element, not 10,000. A copied
    /// element keeps the cost fields it had; a serialised one takes the fields its earlier
    /// element had, stale until the text is [recosted](RenderedAgent::recost) — a session being
    /// written moves to the front of the listing, and with fields of the length its new ones
    /// most likely have, the recost patches them where they lie instead of copying the whole
    /// text again after it (none for a session new to the listing).
    ///
    /// A kept text that cannot be read back (its file, [`RenderedAgent::keep_in`]) is not
    /// copied from: every session is rendered again, and the log says why.
    pub fn update<'a, 'b>(
        before: impl SessionList<'a>,
        kept: &RenderedAgent,
        sessions: impl SessionList<'b>,
    ) -> RenderedAgent {
        match kept.loaded() {
            Ok(text) => RenderedAgent::update_from(before, kept, &text, sessions),
            Err(error) => {
                tracing::warn!(%error, "rendering the listing again");
                RenderedAgent::new(sessions)
            }
        }
    }

    /// [`RenderedAgent::update`] from `kept` whose text is `text`.
    fn update_from<'a, 'b>(
        before: impl SessionList<'a>,
        kept: &RenderedAgent,
        text: &[u8],
        sessions: impl SessionList<'b>,
    ) -> RenderedAgent {
        // By a hash of the path (no path made for each of 100,000 sessions), the path itself
        // compared for the one found.
        let by_path: std::collections::HashMap<u64, usize> = before
            .all()
            .enumerate()
            .filter(|(i, _)| *i < kept.len())
            .map(|(i, s)| (s.fields().path_hash(), i))
            .collect();
        let mut rendered = RenderedAgent {
            text: Vec::with_capacity(text.len() + 4096),
            ends: Vec::with_capacity(sessions.count()),
            fields: Vec::with_capacity(sessions.count()),
            ..RenderedAgent::default()
        };
        for s in sessions.all() {
            let s = s.fields();
            let earlier = by_path
                .get(&s.path_hash())
                .copied()
                .filter(|&i| before.at(i).is_some_and(|b| b.fields().same_path(s)));
            match earlier {
                Some(i) if before.at(i).is_some_and(|b| b.fields() == s) => {
                    rendered.separate();
                    rendered.text.extend_from_slice(&text[kept.run(i, i)]);
                    rendered.costed |= kept.fields_len(i) > 0;
                    rendered.ends.push(rendered.text.len());
                    rendered.fields.push(kept.fields[i]);
                }
                earlier => {
                    let closed = rendered.open_element(s);
                    // Its earlier element's fields (none when it had none or is new).
                    let carried = earlier.map_or(&[][..], |i| &text[kept.split(i).1]);
                    rendered.end_element(closed, |out| out.extend_from_slice(carried));
                }
            }
        }
        rendered
    }

    /// The bytes it holds on the heap (capacities): the places of its elements, and its text
    /// unless it is kept in a file.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()
            + self.fields.capacity() * std::mem::size_of::<u32>()
    }

    /// The bytes of its text kept in a file rather than on the heap.
    pub fn file_bytes(&self) -> usize {
        self.file.as_deref().map_or(0, KeptFile::len)
    }

    /// The length of its text.
    pub fn text_len(&self) -> usize {
        self.file.as_deref().map_or(self.text.len(), KeptFile::len)
    }

    /// Moves its text from the heap to a new unnamed file in `dir`, unless it is there already;
    /// when the file cannot be made or written the text stays on the heap (the log told once).
    pub fn keep_in(&mut self, dir: &TextDir) {
        if self.file.is_some() || self.text.is_empty() {
            return;
        }
        if let Some(file) = dir.keep(&self.text) {
            self.file = Some(Arc::new(file));
            self.text = Vec::new();
        }
    }

    /// Its whole text: borrowed from the heap, or read back from its file.
    fn loaded(&self) -> std::io::Result<Cow<'_, [u8]>> {
        match self.file.as_deref() {
            Some(file) => file.read_all().map(Cow::Owned),
            None => Ok(Cow::Borrowed(&self.text)),
        }
    }

    /// Reads its text from `at` into the whole of `out`.
    pub(crate) fn read_at(&self, at: usize, out: &mut [u8]) -> std::io::Result<()> {
        match self.file.as_deref() {
            Some(file) => file.read_at(at, out),
            None => match self.text.get(at..at.saturating_add(out.len())) {
                Some(bytes) => {
                    out.copy_from_slice(bytes);
                    Ok(())
                }
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("the kept listing text has no bytes from {at}"),
                )),
            },
        }
    }

    /// The file its text is kept in, if it is in one.
    pub(crate) fn kept_file(&self) -> Option<&KeptFile> {
        self.file.as_deref()
    }

    /// Its text when it is on the heap.
    pub fn heap_text(&self) -> Option<&[u8]> {
        self.file.is_none().then_some(self.text.as_slice())
    }

    /// The length of session `i`'s cost fields.
    fn fields_len(&self, i: usize) -> usize {
        self.fields.get(i).map_or(0, |&n| (n & !OPEN) as usize)
    }

    /// Whether session `i`'s element ends as the printer ends one (only such carries fields).
    fn closed(&self, i: usize) -> bool {
        self.fields.get(i).is_some_and(|&n| n & OPEN == 0)
    }

    /// Whether any element carries cost fields.
    pub fn is_costed(&self) -> bool {
        self.costed
    }

    /// How many sessions it holds.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Where sessions `first..=last` are in the text, with the separators between them.
    fn run(&self, first: usize, last: usize) -> std::ops::Range<usize> {
        let start = if first == 0 {
            0
        } else {
            self.ends[first - 1] + SEPARATOR.len()
        };
        start..self.ends[last]
    }
}

/// The sessions of one agent to print: from the scan (serialised now), or by index into the
/// agent's kept rendering (`sessions` and `rendered` of the same listing, in the same order).
#[derive(Debug)]
pub enum Chosen<'a> {
    Sessions(Vec<&'a Session>),
    Kept {
        sessions: &'a HeldSessions,
        rendered: &'a RenderedAgent,
        indices: Vec<usize>,
        /// `rendered` carries the cost fields of the listing's `spent` (spliced in from it by
        /// [`RenderedAgent::recost`]): the kept elements go out in runs with their costs,
        /// without looking each cost up. Only for a listing with costs.
        costs_kept: bool,
    },
}

impl Chosen<'_> {
    /// How many sessions are chosen.
    pub fn len(&self) -> usize {
        match self {
            Chosen::Sessions(sessions) => sessions.len(),
            Chosen::Kept { indices, .. } => indices.len(),
        }
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Writes the whole listing — `{"claude": [...], ...}` in the order given, pretty, and a final
/// newline — into `out`; a Claude session a live process holds (in `registry`) carries its
/// registry name and status. Sessions listed one after another from a kept rendering go out
/// as one run of it ([`ListingSink::put_kept`]).
pub fn write_listing(
    out: &mut impl ListingSink,
    agents: &[(Agent, Chosen<'_>)],
    window: ActiveWindow,
    now: UnixMillis,
    registry: Option<&Registry>,
) {
    write_listing_spent(out, agents, window, now, registry, None);
}

/// What a session has cost so far, as the listing shows it (`cost_usd`, `usage_tokens`): from
/// the usage index, which this crate does not know.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spent {
    /// Dollars with six decimals; `None` (JSON `null`) when any call has no price or nothing was
    /// recorded — an unknown cost is never shown as 0.
    pub cost_usd: Option<String>,
    /// Tokens of every kind; `None` when the session's files record no usage.
    pub tokens: Option<u64>,
}

/// A session's [`Spent`], looked up as the listing is written.
pub type SpentOf<'a> = &'a dyn Fn(SessionRef<'_>) -> Spent;

/// [`write_listing`], each session followed by what it has cost so far when `spent` is given:
/// `cost_usd` and `usage_tokens`, the element's last two fields. A kept element then goes out
/// as its kept bytes up to its closing brace and the two fields: kept beside the rendering when
/// the agent's [`Chosen::Kept`] has them (in runs, as without costs), else made for this listing.
pub fn write_listing_spent(
    out: &mut impl ListingSink,
    agents: &[(Agent, Chosen<'_>)],
    window: ActiveWindow,
    now: UnixMillis,
    registry: Option<&Registry>,
    spent: Option<SpentOf<'_>>,
) {
    if agents.is_empty() {
        out.put(b"{}\n");
        return;
    }
    out.put(b"{\n");
    let mut element = Vec::with_capacity(1024);
    for (n, (agent, chosen)) in agents.iter().enumerate() {
        out.put(b"  \"");
        out.put(agent.as_str().as_bytes());
        out.put(b"\": ");
        if chosen.is_empty() {
            out.put(b"[]");
        } else {
            out.put(b"[\n");
            match chosen {
                Chosen::Sessions(sessions) => {
                    for (i, s) in sessions.iter().enumerate() {
                        element.clear();
                        if i > 0 {
                            element.extend_from_slice(SEPARATOR);
                        }
                        write_element(
                            &mut element,
                            &SessionView::new(*s, window, now).live(*s, registry),
                        );
                        push_spent(&mut element, (*s).into(), spent);
                        out.put(&element);
                    }
                }
                Chosen::Kept {
                    sessions,
                    rendered,
                    indices,
                    costs_kept,
                } => {
                    // Kept elements go out in runs without costs (`Some(false)`), or with the
                    // costs their text carries (`Some(true)`); with costs to look up one by
                    // one, each on its own.
                    let runs = match (spent, costs_kept) {
                        (None, _) => Some(false),
                        (Some(_), true) if rendered.len() == sessions.len() => Some(true),
                        (Some(_), _) => None,
                    };
                    // The run of kept elements not written yet: `first..=last`.
                    let mut run: Option<(usize, usize)> = None;
                    for (k, &i) in indices.iter().enumerate() {
                        let Some(s) = sessions.get(i) else { continue };
                        let active = window.is_active(s.last_activity(), now);
                        let fresh = active || live_entry(s, registry).is_some();
                        match run {
                            Some((first, last)) if !fresh && runs.is_some() && i == last + 1 => {
                                run = Some((first, i));
                                continue;
                            }
                            _ => {}
                        }
                        flush_run(out, n, rendered, runs == Some(true), &mut run);
                        if k > 0 {
                            out.put(SEPARATOR);
                        }
                        if fresh {
                            element.clear();
                            write_element(
                                &mut element,
                                &SessionView::with_active(s, active).live(s, registry),
                            );
                            push_spent(&mut element, s, spent);
                            out.put(&element);
                        } else if runs.is_some() {
                            run = Some((i, i));
                        } else if let Some(spent) = spent {
                            let (body, _, closed) = rendered.split(i);
                            out.put_kept(n, rendered, body);
                            if closed {
                                element.clear();
                                spent_fields(&mut element, spent(s));
                                out.put(&element);
                            }
                        }
                    }
                    flush_run(out, n, rendered, runs == Some(true), &mut run);
                }
            }
            out.put(b"\n  ]");
        }
        out.put(if n + 1 < agents.len() { b",\n" } else { b"\n" });
    }
    out.put(b"}\n");
}

/// Writes the run of kept elements `first..=last` of agent number `agent`, if there is one:
/// as its text is when the listing has the costs it carries (`costed`), else without them.
fn flush_run(
    out: &mut impl ListingSink,
    agent: usize,
    rendered: &RenderedAgent,
    costed: bool,
    run: &mut Option<(usize, usize)>,
) {
    match (run.take(), costed) {
        (Some((first, last)), true) => {
            out.put_kept(agent, rendered, rendered.run(first, last));
        }
        (Some(run), false) => out.put_bare(agent, rendered, run),
        (None, _) => {}
    }
}

/// The end of an element as the pretty printer writes it at depth two.
const ELEMENT_END: &[u8] = b"\n    }";

/// One element as the pretty printer writes it at depth two: every line indented four spaces.
fn write_element(out: &mut Vec<u8>, view: &SessionView<'_>) {
    let mut alone = Vec::with_capacity(512);
    // Serialising borrowed strings and bools cannot fail.
    if serde_json::to_writer_pretty(&mut alone, view).is_err() {
        alone = b"null".to_vec();
    }
    out.extend_from_slice(b"    ");
    for part in alone.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(part);
        if part.last() == Some(&b'\n') {
            out.extend_from_slice(b"    ");
        }
    }
}

#[cfg(test)]
mod tests;
