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

use serde::Serialize;

use crate::claude_registry::{Registry, RegistryEntry};
use crate::model::{Agent, CopilotDetails, Session, UnixMillis};
use crate::resolve::ActiveWindow;

mod spent;

use spent::{push_spent, spent_fields};

pub use spent::BareRun;

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
    pub fn new(s: &'a Session, window: ActiveWindow, now: UnixMillis) -> Self {
        Self::with_active(s, window.is_active(s.last_activity, now))
    }

    fn with_active(s: &'a Session, is_active: bool) -> Self {
        SessionView {
            session_id: &s.session_id,
            title: s.title.as_deref(),
            title_is_assigned: s.title_is_assigned,
            cwd: s.cwd.as_deref().map(Path::to_string_lossy),
            last_activity: s.last_activity.map(UnixMillis::to_rfc3339),
            is_active,
            is_working: s.is_working,
            path: s.path.to_string_lossy(),
            registry_name: None,
            registry_status: None,
            copilot: s.copilot.as_deref(),
        }
    }

    /// With the registry name and status of the live Claude Code process holding `s`, if one
    /// does.
    pub fn live(mut self, s: &Session, registry: Option<&'a Registry>) -> Self {
        if let Some(entry) = live_entry(s, registry) {
            self.registry_name = entry.name.as_deref();
            self.registry_status = entry.status.as_deref();
        }
        self
    }
}

/// The live registry entry of a Claude session, if a running process holds it.
fn live_entry<'r>(s: &Session, registry: Option<&'r Registry>) -> Option<&'r RegistryEntry> {
    (s.agent == Agent::Claude)
        .then(|| registry?.live_session(&s.session_id))
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
#[derive(Debug, Default, Clone)]
pub struct RenderedAgent {
    text: Vec<u8>,
    /// Session `i` is `text[ends[i - 1] + SEPARATOR.len()..ends[i]]` (from 0 for the first).
    ends: Vec<usize>,
    /// The length of session `i`'s cost fields, just before its closing brace (0: none).
    fields: Vec<u32>,
    /// Whether any element has cost fields (without, the costless listing is one slice a run).
    costed: bool,
}

/// Between two elements of a listing's array.
const SEPARATOR: &[u8] = b",\n";

/// Where a listing is written: bytes made for it, and runs of an agent's kept rendering, which
/// a sink may keep a reference to instead of copying ([`ListingParts`]).
pub trait ListingSink {
    /// Bytes made for this listing.
    fn put(&mut self, bytes: &[u8]);

    /// `text[range]`, a run of the kept rendering of the listing's agent number `agent` (in the
    /// order the listing was asked in).
    fn put_kept(&mut self, agent: usize, text: &[u8], range: std::ops::Range<usize>) {
        let _ = agent;
        self.put(&text[range]);
    }

    /// Kept sessions `first..=last` of agent number `agent` without the cost fields its text
    /// may carry ([`BareRun`]).
    fn put_bare(&mut self, agent: usize, rendered: &RenderedAgent, (first, last): (usize, usize)) {
        if !rendered.costed {
            self.put_kept(agent, &rendered.text, rendered.run(first, last));
            return;
        }
        for piece in BareRun::new(rendered, first, last) {
            self.put(piece);
        }
    }
}

impl ListingSink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// A sink that writes on to `W` as the listing is made (the CLI's stdout): nothing of the
/// listing is held once written. The first error stops the writing and is kept.
#[derive(Debug)]
pub struct WriteSink<W: std::io::Write> {
    pub inner: W,
    pub error: Option<std::io::Error>,
}

impl<W: std::io::Write> WriteSink<W> {
    pub fn new(inner: W) -> Self {
        WriteSink { inner, error: None }
    }

    /// The writer, or the first error writing to it.
    pub fn finish(self) -> std::io::Result<W> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.inner),
        }
    }
}

impl<W: std::io::Write> ListingSink for WriteSink<W> {
    fn put(&mut self, bytes: &[u8]) {
        if self.error.is_none()
            && let Err(error) = self.inner.write_all(bytes)
        {
            self.error = Some(error);
        }
    }
}

/// A listing as parts: bytes made for it, and ranges of the kept renderings, which a daemon
/// writes to its socket one after another with nothing copied ([`ListingParts::pieces`]).
/// Everything made for it is one buffer, so a listing with a part made after every kept element
/// is not an allocation per session.
#[derive(Debug, Default)]
pub struct ListingParts {
    parts: Vec<Part>,
    /// Every byte made for the listing; [`Part::Made`] ranges are into it.
    made: Vec<u8>,
    len: usize,
}

#[derive(Debug, PartialEq, Eq)]
enum Part {
    Made(std::ops::Range<usize>),
    Kept {
        agent: usize,
        range: std::ops::Range<usize>,
    },
    /// Kept sessions `first..=last` without the cost fields their text carries.
    Bare {
        agent: usize,
        first: usize,
        last: usize,
    },
}

impl ListingSink for ListingParts {
    fn put(&mut self, bytes: &[u8]) {
        let start = self.made.len();
        self.made.extend_from_slice(bytes);
        let end = self.made.len();
        self.len += bytes.len();
        match self.parts.last_mut() {
            Some(Part::Made(last)) if last.end == start => last.end = end,
            _ => self.parts.push(Part::Made(start..end)),
        }
    }

    fn put_kept(&mut self, agent: usize, _text: &[u8], range: std::ops::Range<usize>) {
        self.len += range.len();
        self.parts.push(Part::Kept { agent, range });
    }

    fn put_bare(&mut self, agent: usize, rendered: &RenderedAgent, (first, last): (usize, usize)) {
        if !rendered.costed {
            self.put_kept(agent, &rendered.text, rendered.run(first, last));
            return;
        }
        // Counted once here (a pass over lengths) so `len` needs no pass at sending.
        self.len += BareRun::new(rendered, first, last)
            .map(<[u8]>::len)
            .sum::<usize>();
        self.parts.push(Part::Bare { agent, first, last });
    }
}

impl ListingParts {
    /// The listing's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes it holds itself (capacities): what a listing costs beyond the kept renderings.
    pub fn heap_bytes(&self) -> usize {
        self.made.capacity() + self.parts.capacity() * std::mem::size_of::<Part>()
    }

    /// The listing's bytes in order, given what it refers to by agent number (`kept(agent)`:
    /// the rendering the listing was made from; `None` when gone).
    pub fn pieces<'a>(
        &'a self,
        kept: impl Fn(usize) -> Option<&'a RenderedAgent> + 'a,
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.parts
            .iter()
            .flat_map(move |part| match part {
                Part::Made(range) => Pieces::One(self.made.get(range.clone())),
                Part::Kept { agent, range } => {
                    Pieces::One(kept(*agent).and_then(|kept| kept.text().get(range.clone())))
                }
                Part::Bare { agent, first, last } => match kept(*agent) {
                    Some(rendered) => Pieces::Run(BareRun::new(rendered, *first, *last)),
                    None => Pieces::One(None),
                },
            })
            .filter(|piece| !piece.is_empty())
    }
}

/// The pieces of one part of a listing.
enum Pieces<'a> {
    One(Option<&'a [u8]>),
    Run(BareRun<'a>),
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        match self {
            Pieces::One(piece) => piece.take(),
            Pieces::Run(run) => run.next(),
        }
    }
}

impl RenderedAgent {
    /// Renders `sessions` (the order kept).
    pub fn new(sessions: &[Session]) -> RenderedAgent {
        let mut rendered = RenderedAgent {
            text: Vec::with_capacity(sessions.len() * 480),
            ends: Vec::with_capacity(sessions.len()),
            fields: Vec::with_capacity(sessions.len()),
            costed: false,
        };
        for s in sessions {
            rendered.separate();
            write_element(&mut rendered.text, &SessionView::with_active(s, false));
            rendered.push_end(0);
        }
        rendered
    }

    /// Before an element but the first.
    fn separate(&mut self) {
        if !self.ends.is_empty() {
            self.text.extend_from_slice(SEPARATOR);
        }
    }

    /// The rendering of `sessions` made from an earlier one of `before`: a session unchanged
    /// since (the same path, equal in every field) is copied, only the others are serialised —
    /// a store where one session is being written renders one element, not 10,000. A copied
    /// element keeps the cost fields it had; a serialised one takes the fields its earlier
    /// element had, stale until the text is [recosted](RenderedAgent::recost) — a session being
    /// written moves to the front of the listing, and with fields of the length its new ones
    /// most likely have, the recost patches them where they lie instead of copying the whole
    /// text again after it (none for a session new to the listing).
    pub fn update(before: &[Session], kept: &RenderedAgent, sessions: &[Session]) -> RenderedAgent {
        let by_path: std::collections::HashMap<&Path, usize> = before
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < kept.len())
            .map(|(i, s)| (s.path.as_path(), i))
            .collect();
        let mut rendered = RenderedAgent {
            text: Vec::with_capacity(kept.text.len() + 4096),
            ends: Vec::with_capacity(sessions.len()),
            fields: Vec::with_capacity(sessions.len()),
            costed: false,
        };
        for s in sessions {
            rendered.separate();
            let fields = match by_path.get(s.path.as_path()) {
                Some(&i) if before[i] == *s => {
                    rendered.text.extend_from_slice(kept.element(i));
                    kept.fields.get(i).map_or(0, |&n| n as usize)
                }
                earlier => {
                    let start = rendered.text.len();
                    write_element(&mut rendered.text, &SessionView::with_active(s, false));
                    match earlier {
                        Some(&i) if rendered.text[start..].ends_with(ELEMENT_END) => {
                            rendered.carry_fields(kept, i)
                        }
                        _ => 0,
                    }
                }
            };
            rendered.costed |= fields > 0;
            rendered.push_end(fields);
        }
        rendered
    }

    /// Puts `kept`'s cost fields of session `i` before the closing brace of the element just
    /// written (which ends as the printer ends one); their length, 0 when it had none.
    fn carry_fields(&mut self, kept: &RenderedAgent, i: usize) -> usize {
        let (_, fields, closed) = kept.split(i);
        if !closed || fields.is_empty() {
            return 0;
        }
        let end = self.text.len() - ELEMENT_END.len();
        self.text.truncate(end);
        self.text.extend_from_slice(&kept.text[fields.clone()]);
        self.text.extend_from_slice(ELEMENT_END);
        fields.len()
    }

    /// The bytes it holds (capacities).
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()
            + self.fields.capacity() * std::mem::size_of::<u32>()
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

    /// Session `i`'s kept bytes.
    fn element(&self, i: usize) -> &[u8] {
        &self.text[self.run(i, i)]
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

    /// The kept text: every element, joined as the listing joins them.
    pub fn text(&self) -> &[u8] {
        &self.text
    }
}

/// The sessions of one agent to print: from the scan (serialised now), or by index into the
/// agent's kept rendering (`sessions` and `rendered` of the same listing, in the same order).
#[derive(Debug)]
pub enum Chosen<'a> {
    Sessions(Vec<&'a Session>),
    Kept {
        sessions: &'a [Session],
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
pub type SpentOf<'a> = &'a dyn Fn(&Session) -> Spent;

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
                            &SessionView::new(s, window, now).live(s, registry),
                        );
                        push_spent(&mut element, s, spent);
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
                        let s = &sessions[i];
                        let active = window.is_active(s.last_activity, now);
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
                            out.put_kept(n, &rendered.text, body);
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
            out.put_kept(agent, &rendered.text, rendered.run(first, last));
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
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// The listing as it was printed before it was kept rendered: serde_json's pretty printer
    /// over the whole map.
    fn printed_whole(
        agents: &[(Agent, Vec<&Session>)],
        window: ActiveWindow,
        now: UnixMillis,
    ) -> Vec<u8> {
        struct ByAgent<'a>(Vec<(Agent, Vec<SessionView<'a>>)>);
        impl Serialize for ByAgent<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some(self.0.len()))?;
                for (agent, entries) in &self.0 {
                    map.serialize_entry(agent.as_str(), entries)?;
                }
                map.end()
            }
        }
        let by_agent = ByAgent(
            agents
                .iter()
                .map(|(a, s)| {
                    (
                        *a,
                        s.iter().map(|s| SessionView::new(s, window, now)).collect(),
                    )
                })
                .collect(),
        );
        let mut out = Vec::new();
        serde_json::to_writer_pretty(&mut out, &by_agent).unwrap();
        out.push(b'\n');
        out
    }

    fn session(agent: Agent, n: i64, title: Option<&str>, cwd: Option<&str>) -> Session {
        Session {
            agent,
            session_id: format!("s-{n}"),
            cwd: cwd.map(PathBuf::from),
            title: title.map(str::to_owned),
            title_is_assigned: n % 2 == 0,
            first_activity: None,
            last_activity: (n % 5 != 0).then_some(UnixMillis(1_796_000_000_000 - n * 3_600_000)),
            is_working: n % 3 == 0,
            path: PathBuf::from(format!("/h/.claude/projects/p/s-{n}.jsonl")),
            copilot: None,
        }
    }

    #[test]
    fn the_kept_and_the_fresh_listing_are_the_pretty_printers_bytes() {
        let awkward = "quote \" backslash \\ newline \n tab \t nul \u{0} é 日本 \u{2028} 😀";
        let claude: Vec<Session> = (0..12)
            .map(|n| {
                let title = match n % 4 {
                    0 => None,
                    1 => Some(awkward),
                    _ => Some("fix the parser"),
                };
                session(
                    Agent::Claude,
                    n,
                    title,
                    (n % 3 != 1).then_some("/work/a \"b\"\nc"),
                )
            })
            .collect();
        let grok = vec![session(Agent::Grok, 7, Some("g"), None)];
        let now = UnixMillis(1_796_000_060_000);
        for window in [
            ActiveWindow::from_minutes(0),
            ActiveWindow::default(),
            ActiveWindow::from_minutes(100_000),
        ] {
            let chosen: Vec<(Agent, Vec<&Session>)> = vec![
                (Agent::Claude, claude.iter().collect()),
                (Agent::Codex, Vec::new()),
                (Agent::Grok, grok.iter().collect()),
            ];
            let want = printed_whole(&chosen, window, now);

            let mut fresh = Vec::new();
            let as_sessions: Vec<(Agent, Chosen<'_>)> = chosen
                .iter()
                .map(|(a, s)| (*a, Chosen::Sessions(s.clone())))
                .collect();
            write_listing(&mut fresh, &as_sessions, window, now, None);
            assert_eq!(
                String::from_utf8_lossy(&fresh),
                String::from_utf8_lossy(&want)
            );

            let kept = [
                RenderedAgent::new(&claude),
                RenderedAgent::default(),
                RenderedAgent::new(&grok),
            ];
            let lists: [&[Session]; 3] = [&claude, &[], &grok];
            let as_kept: Vec<(Agent, Chosen<'_>)> = chosen
                .iter()
                .zip(lists.iter().zip(&kept))
                .map(|((a, s), (sessions, rendered))| {
                    (
                        *a,
                        Chosen::Kept {
                            sessions,
                            rendered,
                            indices: (0..s.len()).collect(),
                            costs_kept: false,
                        },
                    )
                })
                .collect();
            let mut from_kept = Vec::new();
            write_listing(&mut from_kept, &as_kept, window, now, None);
            assert_eq!(
                String::from_utf8_lossy(&from_kept),
                String::from_utf8_lossy(&want)
            );
        }
    }

    /// With what each session cost, the kept and the fresh listing are still the printer's
    /// bytes: the two fields last, a known cost as a string, unknown ones `null`.
    #[test]
    fn the_listing_with_costs_is_the_pretty_printers_bytes() {
        #[derive(Serialize)]
        struct WithSpent<'a> {
            #[serde(flatten)]
            view: SessionView<'a>,
            cost_usd: Option<String>,
            usage_tokens: Option<u64>,
        }
        let spent_of = |s: &Session| match s.session_id.as_str() {
            "s-1" => Spent {
                cost_usd: Some("1.234567".into()),
                tokens: Some(45_000),
            },
            "s-2" => Spent {
                cost_usd: None,
                tokens: Some(7),
            },
            _ => Spent::default(),
        };
        let claude: Vec<Session> = (0..4)
            .map(|n| session(Agent::Claude, n, Some("t \"q\""), Some("/w")))
            .collect();
        let now = UnixMillis(1_796_000_060_000);
        // One window where some are active (serialised afresh), one where none are.
        for window in [
            ActiveWindow::from_minutes(100_000),
            ActiveWindow::from_minutes(0),
        ] {
            let elements: Vec<WithSpent<'_>> = claude
                .iter()
                .map(|s| {
                    let spent = spent_of(s);
                    WithSpent {
                        view: SessionView::new(s, window, now),
                        cost_usd: spent.cost_usd,
                        usage_tokens: spent.tokens,
                    }
                })
                .collect();
            let mut want = Vec::new();
            let mut map = std::collections::BTreeMap::new();
            map.insert("claude", elements);
            serde_json::to_writer_pretty(&mut want, &map).unwrap();
            want.push(b'\n');

            let bare = RenderedAgent::new(&claude);
            let costed = RenderedAgent::with_costs(&claude, &spent_of);
            // Other costs spliced in: the listing looks its own up, each session on its own.
            let stale = RenderedAgent::with_costs(&claude, &|_: &Session| Spent::default());
            for (chosen, rendered) in [
                (Chosen::Sessions(claude.iter().collect()), &bare),
                (
                    Chosen::Kept {
                        sessions: &claude,
                        rendered: &bare,
                        indices: (0..claude.len()).collect(),
                        costs_kept: false,
                    },
                    &bare,
                ),
                (
                    Chosen::Kept {
                        sessions: &claude,
                        rendered: &stale,
                        indices: (0..claude.len()).collect(),
                        costs_kept: false,
                    },
                    &stale,
                ),
                (
                    Chosen::Kept {
                        sessions: &claude,
                        rendered: &costed,
                        indices: (0..claude.len()).collect(),
                        costs_kept: true,
                    },
                    &costed,
                ),
            ] {
                let costs_kept = matches!(
                    chosen,
                    Chosen::Kept {
                        costs_kept: true,
                        ..
                    }
                );
                let chosen = [(Agent::Claude, chosen)];
                let mut got = Vec::new();
                write_listing_spent(&mut got, &chosen, window, now, None, Some(&spent_of));
                assert_eq!(
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want)
                );
                // As the daemon sends it: kept elements referred to up to their cost fields,
                // the costs made for the listing after each, or runs of the text with the
                // listing's costs spliced in.
                let mut parts = ListingParts::default();
                write_listing_spent(&mut parts, &chosen, window, now, None, Some(&spent_of));
                let joined: Vec<u8> = parts
                    .pieces(|_| Some(rendered))
                    .flatten()
                    .copied()
                    .collect();
                assert_eq!(
                    String::from_utf8_lossy(&joined),
                    String::from_utf8_lossy(&want)
                );
                assert_eq!(parts.len(), want.len());
                if costs_kept && window.minutes() == 0 {
                    let kept: Vec<&Part> = parts
                        .parts
                        .iter()
                        .filter(|part| !matches!(part, Part::Made(_)))
                        .collect();
                    assert_eq!(
                        kept,
                        [&Part::Kept {
                            agent: 0,
                            range: 0..costed.text.len()
                        }],
                        "with costs kept, the kept sessions go out as one slice"
                    );
                }
            }
            // Without costs from the text with them: the costless listing.
            let chosen = [(
                Agent::Claude,
                Chosen::Kept {
                    sessions: &claude,
                    rendered: &costed,
                    indices: (0..claude.len()).collect(),
                    costs_kept: true,
                },
            )];
            let mut parts = ListingParts::default();
            write_listing(&mut parts, &chosen, window, now, None);
            let joined: Vec<u8> = parts.pieces(|_| Some(&costed)).flatten().copied().collect();
            let want = printed_whole(&[(Agent::Claude, claude.iter().collect())], window, now);
            assert_eq!(
                String::from_utf8_lossy(&joined),
                String::from_utf8_lossy(&want)
            );
            assert_eq!(parts.len(), want.len());
        }
    }

    #[test]
    fn an_updated_rendering_equals_a_fresh_one() {
        let before: Vec<Session> = (1..8)
            .map(|n| session(Agent::Claude, n, Some("t"), Some("/w")))
            .collect();
        let kept = RenderedAgent::new(&before);
        let mut after = before.clone();
        after[2].title = Some("renamed".into());
        after.remove(4);
        after.insert(0, session(Agent::Claude, 99, Some("new"), None));
        let updated = RenderedAgent::update(&before, &kept, &after);
        let fresh = RenderedAgent::new(&after);
        assert_eq!(updated.ends, fresh.ends);
        assert_eq!(
            String::from_utf8_lossy(&updated.text),
            String::from_utf8_lossy(&fresh.text)
        );
        assert!(String::from_utf8_lossy(&updated.text).contains("\"renamed\""));
    }

    #[test]
    fn a_listing_in_parts_is_the_same_bytes_and_refers_to_the_kept_runs() {
        let now = UnixMillis(1_796_000_060_000);
        // Session 0 is active (serialised afresh), 3 is left out by the caller: the others go
        // out as two runs of the kept text.
        let mut claude: Vec<Session> = (1..8)
            .map(|n| session(Agent::Claude, n, Some("t"), Some("/w")))
            .collect();
        claude[0].last_activity = Some(UnixMillis(now.0 - 1_000));
        let rendered = RenderedAgent::new(&claude);
        let window = ActiveWindow::from_minutes(1);
        let picked = vec![0, 1, 2, 4, 5, 6];
        let chosen = || {
            vec![(
                Agent::Claude,
                Chosen::Kept {
                    sessions: &claude,
                    rendered: &rendered,
                    indices: picked.clone(),
                    costs_kept: false,
                },
            )]
        };
        let want = printed_whole(
            &[(Agent::Claude, picked.iter().map(|&i| &claude[i]).collect())],
            window,
            now,
        );
        let mut parts = ListingParts::default();
        write_listing(&mut parts, &chosen(), window, now, None);
        let joined: Vec<u8> = parts
            .pieces(|_| Some(&rendered))
            .flatten()
            .copied()
            .collect();
        assert_eq!(
            String::from_utf8_lossy(&joined),
            String::from_utf8_lossy(&want)
        );
        assert_eq!(parts.len(), want.len());
        let kept: Vec<_> = parts
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::Kept { range, .. } => Some(range.clone()),
                Part::Made(_) | Part::Bare { .. } => None,
            })
            .collect();
        assert_eq!(
            kept,
            [rendered.run(1, 2), rendered.run(4, 6)],
            "the runs of kept sessions are referred to, not copied"
        );
        let mut written = WriteSink::new(Vec::new());
        write_listing(&mut written, &chosen(), window, now, None);
        assert_eq!(written.finish().unwrap(), want);
    }

    #[test]
    fn a_subset_and_no_agents_print_as_the_printer_would() {
        let claude: Vec<Session> = (1..6)
            .map(|n| session(Agent::Claude, n, Some("t"), Some("/w")))
            .collect();
        let now = UnixMillis(1_796_000_060_000);
        let window = ActiveWindow::default();
        let picked = vec![1, 3];
        let want = printed_whole(
            &[(Agent::Claude, picked.iter().map(|&i| &claude[i]).collect())],
            window,
            now,
        );
        let rendered = RenderedAgent::new(&claude);
        let mut got = Vec::new();
        write_listing(
            &mut got,
            &[(
                Agent::Claude,
                Chosen::Kept {
                    sessions: &claude,
                    rendered: &rendered,
                    indices: picked,
                    costs_kept: false,
                },
            )],
            window,
            now,
            None,
        );
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        );
        let mut none = Vec::new();
        write_listing(&mut none, &[], window, now, None);
        assert_eq!(none, printed_whole(&[], window, now));
    }
}
