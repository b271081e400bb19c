//! Each session's cost fields spliced into the kept rendering of its agent, so a listing with
//! costs goes out as a few long runs of one text, like one without: no lookup, no copy and no
//! piece per session.
//!
//! The fields of a session are exactly what the listing writes after a kept element's last
//! field ([`super::spent_fields`]): `,`, `cost_usd` and `usage_tokens`, before the element's
//! closing brace. They are spliced in from the usage accounting ([`RenderedAgent::recost`]) and
//! made again when it changes: in place when no listing holds the text and no field changed
//! length (the common case: a cost moves by a few cents), else into a new text copying every
//! element, as [`RenderedAgent::update`] does. There is one text either way: a listing without
//! costs is served from the same one, each element up to its fields and its closing brace
//! ([`BareRun`]), so no second copy of 50 MB is kept beside it.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use super::{ELEMENT_END, OPEN, RenderedAgent, SEPARATOR, Spent, SpentOf};
use crate::held::{AsSession, SessionList, SessionRef};

impl RenderedAgent {
    /// Renders `sessions` (the order kept) with their cost fields as `spent` has them.
    pub fn with_costs<'a>(sessions: impl SessionList<'a>, spent: SpentOf<'_>) -> RenderedAgent {
        let mut rendered = RenderedAgent {
            // About 480 bytes an element and 70 of costs.
            text: Vec::with_capacity(sessions.count() * 560),
            ends: Vec::with_capacity(sessions.count()),
            fields: Vec::with_capacity(sessions.count()),
            ..RenderedAgent::default()
        };
        for s in sessions.all() {
            let s = s.fields();
            let closed = rendered.open_element(s);
            rendered.end_element(closed, |out| cost_fields(out, spent(s)));
        }
        rendered.text.shrink_to_fit();
        rendered
    }

    /// Makes `rendered` (of `sessions`, in their order) carry the cost fields `spent` gives now.
    /// Patched in place while no listing holds it and each element's fields keep their length
    /// (in its file too, when it is kept in one); from the first element where that fails, made
    /// again into a new text on the heap (the elements before it copied as they are, every
    /// later one copied without its old fields and given its new), for the owner to keep in a
    /// file again ([`RenderedAgent::keep_in`]). A file that cannot be read back or patched is
    /// left for a text made afresh.
    pub fn recost<'a>(
        rendered: &mut Arc<RenderedAgent>,
        sessions: impl SessionList<'a>,
        spent: SpentOf<'_>,
    ) {
        if sessions.count() != rendered.len() {
            *rendered = Arc::new(RenderedAgent::with_costs(sessions, spent));
            return;
        }
        let (from, read) = match Arc::get_mut(rendered) {
            Some(kept) => kept.patch_costs(sessions, spent),
            None => (0, None),
        };
        if from == sessions.count() {
            return;
        }
        let kept = &**rendered;
        let text = match read {
            Some(text) => Ok(Cow::Owned(text)),
            None => kept.loaded(),
        };
        let made = match text {
            Ok(text) => kept.recosted_from(&text, from, sessions, spent),
            Err(error) => {
                tracing::warn!(%error, "rendering the listing again");
                RenderedAgent::with_costs(sessions, spent)
            }
        };
        *rendered = Arc::new(made);
    }

    /// Patches the cost fields of its elements in place while their length holds, and says
    /// from which element it could not (the length of `sessions` when it could for all), with
    /// its text as read back from its file when it is kept in one (patched likewise), for the
    /// text made again from there. Its file is patched only when nothing else holds it (no
    /// listing reads it meanwhile); from the first write that fails, it is not used again.
    fn patch_costs<'a>(
        &mut self,
        sessions: impl SessionList<'a>,
        spent: SpentOf<'_>,
    ) -> (usize, Option<Vec<u8>>) {
        let (mut text, file) = match self.file.as_mut() {
            None => (std::mem::take(&mut self.text), None),
            // A listing's clone of the rendering reads the same file.
            Some(file) if Arc::strong_count(file) > 1 => return (0, None),
            Some(file) => match file.read_all() {
                Ok(text) => (text, Some(Arc::clone(file))),
                Err(error) => {
                    tracing::warn!(%error, "rendering the listing's costs again");
                    return (0, None);
                }
            },
        };
        let mut fields = Vec::with_capacity(96);
        let mut from = 0;
        while let Some(s) = sessions.at(from) {
            let (_, old, closed) = self.split(from);
            if closed {
                fields.clear();
                cost_fields(&mut fields, spent(s.fields()));
                if fields.len() != old.len() {
                    break;
                }
                if text[old.clone()] != fields[..] {
                    text[old.clone()].copy_from_slice(&fields);
                    if let Some(file) = &file
                        && let Err(error) = file.patch(old.start, &fields)
                    {
                        tracing::warn!(%error, "rendering the listing's costs again");
                        return (0, Some(text));
                    }
                }
            }
            from += 1;
        }
        if from == sessions.count() {
            self.costed = (0..self.len()).any(|i| self.fields_len(i) > 0);
        }
        match file {
            Some(_) => (from, Some(text)),
            None => {
                self.text = text;
                (from, None)
            }
        }
    }

    /// A new text on the heap from this one's `text`: its elements before `from` as they are,
    /// every later one without its old fields and with the ones `spent` gives now.
    fn recosted_from<'a>(
        &self,
        text: &[u8],
        from: usize,
        sessions: impl SessionList<'a>,
        spent: SpentOf<'_>,
    ) -> RenderedAgent {
        let copied = if from == 0 { 0 } else { self.ends[from - 1] };
        let mut made = RenderedAgent {
            text: Vec::with_capacity(text.len() + (sessions.count() - from) * 80),
            ends: Vec::with_capacity(sessions.count()),
            fields: Vec::with_capacity(sessions.count()),
            ..RenderedAgent::default()
        };
        made.text.extend_from_slice(&text[..copied]);
        made.ends.extend_from_slice(&self.ends[..from]);
        made.fields.extend_from_slice(&self.fields[..from]);
        made.costed = (0..from).any(|i| made.fields_len(i) > 0);
        for (i, s) in sessions.all().enumerate().skip(from) {
            made.separate();
            let (body, _, closed) = self.split(i);
            made.text.extend_from_slice(&text[body]);
            made.end_element(closed, |out| cost_fields(out, spent(s.fields())));
        }
        made.text.shrink_to_fit();
        made
    }

    /// Session `i`'s element as three ranges of the text: what it holds before its cost fields
    /// (its closing brace excluded when it has one), its cost fields, and whether it ends as the
    /// printer ends an element (only such an element carries fields).
    pub(super) fn split(&self, i: usize) -> (Range<usize>, Range<usize>, bool) {
        let whole = self.run(i, i);
        if !self.closed(i) {
            return (whole.clone(), whole.end..whole.end, false);
        }
        let fields_end = whole.end - ELEMENT_END.len();
        let fields_start = fields_end - self.fields_len(i);
        (whole.start..fields_start, fields_start..fields_end, true)
    }

    /// Records the end of the element just written, with its fields' length and whether it
    /// ends as the printer ends one.
    pub(super) fn push_end(&mut self, fields: usize, closed: bool) {
        self.ends.push(self.text.len());
        // An element's cost fields are under 100 bytes.
        let fields = u32::try_from(fields).unwrap_or(OPEN - 1).min(OPEN - 1);
        self.fields
            .push(if closed { fields } else { fields | OPEN });
    }
}

/// The pieces of kept sessions `first..=last` without their cost fields, in order: for each,
/// the element up to its fields (with the separator before it, but the first's), then its
/// closing brace. For a listing without costs from a text that has them.
#[derive(Debug, Clone)]
pub struct BareRun<'a> {
    rendered: &'a RenderedAgent,
    next: usize,
    last: usize,
    first: usize,
    /// The closing brace of session `next - 1` is due before session `next`'s element.
    end_due: bool,
}

/// A piece of a [`BareRun`]: a range of the kept text, or an element's closing brace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BarePiece {
    Text(Range<usize>),
    End,
}

impl BarePiece {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        match self {
            BarePiece::Text(range) => range.len(),
            BarePiece::End => ELEMENT_END.len(),
        }
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> BareRun<'a> {
    pub fn new(rendered: &'a RenderedAgent, first: usize, last: usize) -> Self {
        BareRun {
            rendered,
            next: first,
            last,
            first,
            end_due: false,
        }
    }
}

impl Iterator for BareRun<'_> {
    type Item = BarePiece;

    fn next(&mut self) -> Option<BarePiece> {
        if self.end_due {
            self.end_due = false;
            return Some(BarePiece::End);
        }
        if self.next > self.last || self.next >= self.rendered.len() {
            return None;
        }
        let (body, _, closed) = self.rendered.split(self.next);
        let start = if self.next == self.first {
            body.start
        } else {
            body.start - SEPARATOR.len()
        };
        self.next += 1;
        self.end_due = closed;
        Some(BarePiece::Text(start..body.end))
    }
}

/// Adds `cost_usd` and `usage_tokens` as the last fields of the element just written, in the
/// printer's layout, so kept bytes need not be rendered again when a cost moves.
pub(super) fn push_spent(out: &mut Vec<u8>, s: SessionRef<'_>, spent: Option<SpentOf<'_>>) {
    let Some(spent) = spent else { return };
    if !out.ends_with(ELEMENT_END) {
        return;
    }
    out.truncate(out.len() - ELEMENT_END.len());
    spent_fields(out, spent(s));
}

/// `,` and the two fields, then the element's end: what follows an element's last field.
pub(super) fn spent_fields(out: &mut Vec<u8>, spent: Spent) {
    cost_fields(out, spent);
    out.extend_from_slice(ELEMENT_END);
}

/// `,` and the two fields: what a costed element has between its last field and its end.
pub(super) fn cost_fields(out: &mut Vec<u8>, Spent { cost_usd, tokens }: Spent) {
    out.extend_from_slice(b",\n      \"cost_usd\": ");
    match cost_usd {
        // Digits and a point: nothing to escape.
        Some(cost) => {
            out.push(b'"');
            out.extend_from_slice(cost.as_bytes());
            out.push(b'"');
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\n      \"usage_tokens\": ");
    match tokens {
        Some(n) => out.extend_from_slice(n.to_string().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::model::{Agent, Session, UnixMillis};

    fn sessions(n: i64) -> Vec<Session> {
        (0..n)
            .map(|n| Session {
                agent: Agent::Claude,
                session_id: format!("s-{n}"),
                cwd: Some(PathBuf::from("/w")),
                title: Some(format!("t \"{n}\"")),
                title_is_assigned: n % 2 == 0,
                first_activity: None,
                last_activity: Some(UnixMillis(1_796_000_000_000 - n * 3_600_000)),
                is_working: false,
                path: PathBuf::from(format!("/h/.claude/projects/p/s-{n}.jsonl")),
                copilot: None,
            })
            .collect()
    }

    fn costs(cents: u64) -> impl Fn(SessionRef<'_>) -> Spent {
        move |s: SessionRef<'_>| match s.session_id() {
            "s-0" => Spent::default(),
            "s-2" => Spent {
                cost_usd: Some(format!("{}.{:06}", cents / 100, cents % 100 * 10_000)),
                tokens: Some(cents * 1_000),
            },
            _ => Spent {
                cost_usd: Some("0.500000".into()),
                tokens: Some(9),
            },
        }
    }

    fn costless(rendered: &RenderedAgent) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in BareRun::new(rendered, 0, rendered.len() - 1) {
            match piece {
                BarePiece::Text(range) => out.extend_from_slice(&rendered.text[range]),
                BarePiece::End => out.extend_from_slice(ELEMENT_END),
            }
        }
        out
    }

    /// Made again in place (same lengths, nobody holding it), made again into a new text (a
    /// longer cost; a listing holding the old one) and made for other sessions: each time the
    /// text is the one made fresh with the new costs, and the costless view the costless text.
    #[test]
    fn recosting_equals_a_fresh_rendering_and_keeps_the_costless_view() {
        let listed = sessions(5);
        let bare = RenderedAgent::new(&listed);
        let mut kept = Arc::new(RenderedAgent::new(&listed));
        for (cents, held_by_a_listing) in [(123, false), (456, false), (99_999, false), (7, true)] {
            let listing = held_by_a_listing.then(|| Arc::clone(&kept));
            let before = kept.text.as_ptr();
            let spent = costs(cents);
            RenderedAgent::recost(&mut kept, &listed, &spent);
            let fresh = RenderedAgent::with_costs(&listed, &spent);
            assert_eq!(
                String::from_utf8_lossy(&kept.text),
                String::from_utf8_lossy(&fresh.text)
            );
            assert_eq!((&kept.ends, &kept.fields), (&fresh.ends, &fresh.fields));
            assert_eq!(costless(&kept), bare.text, "the costless view");
            // 1.23 → 4.56 keeps every length: patched where it lies.
            if cents == 456 {
                assert_eq!(kept.text.as_ptr(), before, "patched in place");
            }
            if let Some(listing) = listing {
                assert_ne!(listing.text, kept.text, "a listing's text is never changed");
            }
        }
        let more = sessions(7);
        RenderedAgent::recost(&mut kept, &more, &costs(1));
        assert_eq!(kept.text, RenderedAgent::with_costs(&more, &costs(1)).text);
    }

    /// A walk that finds a session written to (it moves to the front, its element serialised
    /// again) carries its earlier cost fields over, so the recost that follows with its new
    /// cost patches the text where it lies — and the bytes are the fresh rendering's, with
    /// costs and without. A session new to the listing has none to carry: made again from it.
    #[test]
    fn a_walk_carries_a_changed_sessions_fields_so_the_recost_patches_in_place() {
        let before = sessions(5);
        let kept = RenderedAgent::with_costs(&before, &costs(123));
        // s-2 was written to: newer than every other, its title changed.
        let mut after = before.clone();
        let mut written = after.remove(2);
        written.last_activity = Some(UnixMillis(1_797_000_000_000));
        written.title = Some("t \"2\" again".into());
        after.insert(0, written);
        let mut walked = Arc::new(RenderedAgent::update(&before, &kept, &after));
        assert_eq!(costless(&walked), RenderedAgent::new(&after).text);
        let at = walked.text.as_ptr();
        RenderedAgent::recost(&mut walked, &after, &costs(456));
        let fresh = RenderedAgent::with_costs(&after, &costs(456));
        assert_eq!(
            String::from_utf8_lossy(&walked.text),
            String::from_utf8_lossy(&fresh.text)
        );
        assert_eq!((&walked.ends, &walked.fields), (&fresh.ends, &fresh.fields));
        assert_eq!(
            walked.text.as_ptr(),
            at,
            "patched in place, not copied again"
        );

        // A session new to the listing, in front: no fields to carry, made again from it.
        let mut grown = after.clone();
        grown.insert(0, sessions(6).remove(5));
        let mut walked = Arc::new(RenderedAgent::update(&after, &fresh, &grown));
        RenderedAgent::recost(&mut walked, &grown, &costs(456));
        assert_eq!(
            walked.text,
            RenderedAgent::with_costs(&grown, &costs(456)).text
        );
    }
}
