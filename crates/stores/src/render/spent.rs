//! Each session's cost fields rendered once, beside the kept rendering of its agent, so a
//! listing with costs goes out in runs like one without: no lookup and no copy per session.
//!
//! The fields of session `i` are exactly what the listing writes after a kept element's last
//! field ([`super::spent_fields`]): `,`, `cost_usd`, `usage_tokens` and the element's closing
//! brace. They are made from the usage accounting once — again when it changes — and a run of
//! kept elements with costs is then two slices per session: the kept element up to its closing
//! brace and its fields from here ([`CostedRun`]), referred to by the listing, not copied.

use std::ops::Range;

use super::{ELEMENT_END, RenderedAgent, SEPARATOR, SpentOf, spent_fields};
use crate::model::Session;

/// The cost fields of one agent's sessions, aligned with the sessions (and so with their kept
/// rendering, [`RenderedAgent`]): session `i`'s are [`SpentRendering::fields`]`(i)`.
#[derive(Debug, Default, Clone)]
pub struct SpentRendering {
    text: Vec<u8>,
    /// Session `i`'s fields are `text[ends[i - 1]..ends[i]]` (from 0 for the first).
    ends: Vec<usize>,
}

impl SpentRendering {
    /// The fields of every session of `sessions`, in its order, as `spent` has them.
    pub fn new(sessions: &[Session], spent: SpentOf<'_>) -> SpentRendering {
        // About 70 bytes each: a cost with six decimals and a token count.
        let mut rendered = SpentRendering {
            text: Vec::with_capacity(sessions.len() * 72),
            ends: Vec::with_capacity(sessions.len()),
        };
        for s in sessions {
            spent_fields(&mut rendered.text, spent(s));
            rendered.ends.push(rendered.text.len());
        }
        rendered
    }

    /// How many sessions it holds fields for.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The bytes it holds (capacities).
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * std::mem::size_of::<usize>()
    }

    /// Session `i`'s fields (none past the end: a rendering made for other sessions).
    pub fn fields(&self, i: usize) -> &[u8] {
        let start = match i {
            0 => 0,
            _ => self.ends.get(i - 1).copied().unwrap_or(self.text.len()),
        };
        let end = self.ends.get(i).copied().unwrap_or(start);
        self.text.get(start..end).unwrap_or_default()
    }
}

/// The pieces of kept sessions `first..=last` with their costs, in order: for each, the kept
/// element up to its closing brace (with the separator before it, but the first's) and its
/// fields. An element that does not end as the printer ends one goes out whole, without costs,
/// as the listing writes it one at a time.
#[derive(Debug, Clone)]
pub struct CostedRun<'a> {
    rendered: &'a RenderedAgent,
    spent: &'a SpentRendering,
    next: usize,
    last: usize,
    first: usize,
    /// The fields of session `next - 1` are due before session `next`'s element.
    fields_due: bool,
}

impl<'a> CostedRun<'a> {
    pub fn new(
        rendered: &'a RenderedAgent,
        spent: &'a SpentRendering,
        first: usize,
        last: usize,
    ) -> Self {
        CostedRun {
            rendered,
            spent,
            next: first,
            last,
            first,
            fields_due: false,
        }
    }

    /// Session `i`'s element in the kept text, with the separator before it unless it opens
    /// the run, and whether it ends as the printer ends an element.
    fn element(&self, i: usize) -> (Range<usize>, bool) {
        let run = self.rendered.run(i, i);
        let start = if i == self.first {
            run.start
        } else {
            run.start - SEPARATOR.len()
        };
        let text = self.rendered.text();
        match text.get(run.clone()) {
            Some(element) if element.ends_with(ELEMENT_END) => {
                (start..run.end - ELEMENT_END.len(), true)
            }
            _ => (start..run.end, false),
        }
    }
}

impl<'a> Iterator for CostedRun<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.fields_due {
            self.fields_due = false;
            return Some(self.spent.fields(self.next - 1));
        }
        if self.next > self.last || self.next >= self.rendered.len() {
            return None;
        }
        let (range, costed) = self.element(self.next);
        self.next += 1;
        self.fields_due = costed;
        Some(self.rendered.text().get(range).unwrap_or_default())
    }
}
