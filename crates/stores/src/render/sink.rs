//! Where a listing is written ([`ListingSink`]): a growing buffer, a writer the listing goes
//! out to as it is made (the CLI's stdout, [`WriteSink`]), or [`ListingParts`] — the parts a
//! daemon sends, runs of the kept renderings referred to rather than copied.

use super::{BarePiece, BareRun, Chunks, ELEMENT_END, RenderedAgent};

/// Where a listing is written: bytes made for it, and runs of an agent's kept rendering, which
/// a sink may keep a reference to instead of copying ([`ListingParts`]).
pub trait ListingSink {
    /// Bytes made for this listing.
    fn put(&mut self, bytes: &[u8]);

    /// `range` of the text of `rendered`, the kept rendering of the listing's agent number
    /// `agent` (in the order the listing was asked in). Read back when the text is kept in a
    /// file; a read that fails is the sink's [`ListingSink::fail`].
    fn put_kept(&mut self, agent: usize, rendered: &RenderedAgent, range: std::ops::Range<usize>) {
        let _ = agent;
        match rendered.heap_text() {
            Some(text) => self.put(&text[range]),
            None => {
                let mut read = vec![0; range.len()];
                match rendered.read_at(range.start, &mut read) {
                    Ok(()) => self.put(&read),
                    Err(error) => self.fail(error),
                }
            }
        }
    }

    /// Kept sessions `first..=last` of agent number `agent` without the cost fields its text
    /// may carry ([`BareRun`]).
    fn put_bare(&mut self, agent: usize, rendered: &RenderedAgent, (first, last): (usize, usize)) {
        if !rendered.costed {
            self.put_kept(agent, rendered, rendered.run(first, last));
            return;
        }
        for piece in BareRun::new(rendered, first, last) {
            match piece {
                BarePiece::Text(range) => self.put_kept(agent, rendered, range),
                BarePiece::End => self.put(ELEMENT_END),
            }
        }
    }

    /// A kept text could not be read back: the listing is not whole. A sink that can carry an
    /// error keeps it; a buffer (for renderings on the heap, which cannot fail) has none.
    fn fail(&mut self, error: std::io::Error) {
        let _ = error;
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

    fn fail(&mut self, error: std::io::Error) {
        self.error.get_or_insert(error);
    }
}

/// A listing as parts: bytes made for it, and ranges of the kept renderings, which a daemon
/// writes to its socket one after another with nothing copied ([`ListingParts::pieces`]).
/// Everything made for it is one buffer, so a listing with a part made after every kept element
/// is not an allocation per session.
#[derive(Debug, Default)]
pub struct ListingParts {
    pub(super) parts: Vec<Part>,
    /// Every byte made for the listing; [`Part::Made`] ranges are into it.
    made: Vec<u8>,
    len: usize,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Part {
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

    fn put_kept(&mut self, agent: usize, _: &RenderedAgent, range: std::ops::Range<usize>) {
        self.len += range.len();
        self.parts.push(Part::Kept { agent, range });
    }

    fn put_bare(&mut self, agent: usize, rendered: &RenderedAgent, (first, last): (usize, usize)) {
        if !rendered.costed {
            self.put_kept(agent, rendered, rendered.run(first, last));
            return;
        }
        // Counted once here (a pass over lengths) so `len` needs no pass at sending.
        self.len += BareRun::new(rendered, first, last)
            .map(|piece| piece.len())
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

    /// The listing's bytes in order, in chunks of a bounded buffer, given what it refers to by
    /// agent number (`kept(agent)`: the rendering the listing was made from; `None` when
    /// gone, an error of the listing): see [`Chunks`].
    pub fn chunks<'a, K>(&'a self, kept: K) -> Chunks<'a, K>
    where
        K: Fn(usize) -> Option<&'a RenderedAgent>,
    {
        Chunks::new(self, kept)
    }

    /// The bytes made for the listing in `range`.
    pub(super) fn made(&self, range: std::ops::Range<usize>) -> &[u8] {
        self.made.get(range).unwrap_or_default()
    }
}
