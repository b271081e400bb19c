//! A listing made of parts ([`ListingParts`]) written out: its bytes in chunks of one bounded
//! buffer, the kept runs read back from the renderings' files as they are reached — so a full
//! listing at 100,000 sessions costs the daemon half a megabyte of buffer, not the 40 MB it is.
//!
//! A run of a text kept on the heap that is a chunk or longer goes out as it lies, with nothing
//! copied (as before texts were kept in files). From a file, long runs are read straight into
//! the buffer; the short ranges of a listing that picks elements one by one (costs looked up
//! per session, a costless listing from a costed text: two ranges an element) through a window
//! read ahead, so they are not a `pread` each. A writer that can send from a file to its socket
//! itself ([`Chunks::next_piece`]: the daemon, with `sendfile`) is given a long kept run as the
//! file's range instead, copied through no buffer of ours: read back into one, the 22k store's
//! warm listing with costs took ~2 ms more than with its text on the heap.

use std::fs::File;
use std::io;
use std::ops::Range;

use super::sink::{ListingParts, Part};
use super::{BarePiece, BareRun, ELEMENT_END, RenderedAgent};

/// The most a chunk holds (but for the end of one element of a bare run).
pub const CHUNK: usize = 512 * 1024;

/// How much of a kept file is read at once for the short ranges.
const WINDOW: usize = 256 * 1024;

/// A listing's bytes in chunks ([`ListingParts::chunks`]): [`Chunks::next`] gives each in
/// turn; an error (a kept text that cannot be read back, or is gone) ends it, so a listing is
/// never given short as if it were whole.
pub struct Chunks<'a, K> {
    parts: &'a ListingParts,
    kept: K,
    /// The part being written, and how far into it (bytes of a made or kept range).
    part: usize,
    at: usize,
    /// The elements of the bare run being written.
    bare: Option<BareRun<'a>>,
    /// The chunk being made: its first `filled` bytes. Never shortened, so a read into it
    /// does not zero it first.
    buf: Vec<u8>,
    filled: usize,
    window: Window,
}

/// A piece of a listing ([`Chunks::next_piece`]): bytes to write as they are, or a range of a
/// kept file to send from the file.
#[derive(Debug)]
pub enum Piece<'a> {
    Bytes(&'a [u8]),
    /// `len` bytes of `file` from byte `at` (all of them there: checked against its length).
    File {
        file: &'a File,
        at: u64,
        len: usize,
    },
}

/// Bytes of a kept file read ahead: the first `len` of `bytes` are its text from `start`, of
/// the rendering at address `key` (0: none).
#[derive(Default)]
struct Window {
    key: usize,
    start: usize,
    len: usize,
    bytes: Vec<u8>,
}

impl<'a, K> Chunks<'a, K>
where
    K: Fn(usize) -> Option<&'a RenderedAgent>,
{
    pub(super) fn new(parts: &'a ListingParts, kept: K) -> Self {
        Chunks {
            parts,
            kept,
            part: 0,
            at: 0,
            bare: None,
            buf: Vec::new(),
            filled: 0,
            window: Window::default(),
        }
    }

    /// The next chunk of the listing; `None` once it is whole. After an error there is none.
    #[allow(clippy::should_implement_trait)] // A lending iterator: each chunk borrows the buffer.
    pub fn next(&mut self) -> Option<io::Result<&[u8]>> {
        match self.next_with(/*files*/ false)? {
            Ok(Piece::Bytes(bytes)) => Some(Ok(bytes)),
            // Not given without `files`: read into the buffer instead.
            Ok(Piece::File { .. }) => Some(Err(io::Error::other("a file piece was not asked for"))),
            Err(error) => Some(Err(error)),
        }
    }

    /// The next piece of the listing: as [`Chunks::next`], but a long run of a text kept in a
    /// file is its range of the file, for the writer to send from there.
    pub fn next_piece(&mut self) -> Option<io::Result<Piece<'_>>> {
        self.next_with(/*files*/ true)
    }

    fn next_with(&mut self, files: bool) -> Option<io::Result<Piece<'_>>> {
        self.filled = 0;
        match self.fill(files) {
            Err(error) => {
                self.part = self.parts.parts.len();
                self.bare = None;
                Some(Err(error))
            }
            Ok(Some(direct)) => Some(Ok(direct)),
            Ok(None) if self.filled == 0 => None,
            Ok(None) => Some(Ok(Piece::Bytes(&self.buf[..self.filled]))),
        }
    }

    /// Fills the buffer up to a chunk, or gives a long run of a heap text to go out as it lies
    /// (with the buffer empty) — or, with `files`, a long run of a text kept in a file as its
    /// range there.
    fn fill(&mut self, files: bool) -> io::Result<Option<Piece<'a>>> {
        while let Some(part) = self.parts.parts.get(self.part) {
            let room = CHUNK.saturating_sub(self.filled);
            if room == 0 {
                return Ok(None);
            }
            match part {
                Part::Made(range) => {
                    let made = self.parts.made(range.clone());
                    let take = room.min(made.len() - self.at);
                    let bytes = &made[self.at..self.at + take];
                    self.spare(take).copy_from_slice(bytes);
                    self.advance(take, made.len());
                }
                Part::Kept { agent, range } => {
                    let rendered = self.rendered(*agent)?;
                    if self.at == 0
                        && range.len() >= CHUNK
                        && let Some(text) = rendered.heap_text()
                    {
                        if self.filled > 0 {
                            return Ok(None);
                        }
                        self.part += 1;
                        return text
                            .get(range.clone())
                            .map(|bytes| Some(Piece::Bytes(bytes)))
                            .ok_or_else(gone);
                    }
                    if files
                        && self.at == 0
                        && range.len() >= CHUNK
                        && let Some(kept) = rendered.kept_file()
                    {
                        if self.filled > 0 {
                            return Ok(None);
                        }
                        if range.end > kept.len() {
                            return Err(gone());
                        }
                        self.part += 1;
                        return Ok(Some(Piece::File {
                            file: kept.file(),
                            at: range.start as u64,
                            len: range.len(),
                        }));
                    }
                    let take = room.min(range.len() - self.at);
                    let start = range.start + self.at;
                    self.read(rendered, start..start + take)?;
                    self.advance(take, range.len());
                }
                Part::Bare { agent, first, last } => {
                    let rendered = self.rendered(*agent)?;
                    let run = self
                        .bare
                        .get_or_insert_with(|| BareRun::new(rendered, *first, *last));
                    match run.next() {
                        Some(BarePiece::Text(range)) => self.read(rendered, range)?,
                        Some(BarePiece::End) => {
                            self.spare(ELEMENT_END.len()).copy_from_slice(ELEMENT_END)
                        }
                        None => {
                            self.bare = None;
                            self.part += 1;
                        }
                    }
                }
            }
        }
        Ok(None)
    }

    /// `take` more bytes of a part `total` long were written.
    fn advance(&mut self, take: usize, total: usize) {
        self.at += take;
        if self.at >= total {
            self.part += 1;
            self.at = 0;
        }
    }

    /// The rendering of agent number `agent`; an error when the listing no longer has it.
    fn rendered(&self, agent: usize) -> io::Result<&'a RenderedAgent> {
        (self.kept)(agent).ok_or_else(gone)
    }

    /// The next `n` bytes of the chunk, to be written: counted as filled.
    fn spare(&mut self, n: usize) -> &mut [u8] {
        let end = self.filled + n;
        sized(&mut self.buf, end, CHUNK);
        let spare = &mut self.buf[self.filled..end];
        self.filled = end;
        spare
    }

    /// Appends `range` of `rendered`'s text to the chunk: a short range of a file through the
    /// window.
    fn read(&mut self, rendered: &RenderedAgent, range: Range<usize>) -> io::Result<()> {
        if rendered.heap_text().is_some() || range.len() >= WINDOW / 2 {
            return rendered.read_at(range.start, self.spare(range.len()));
        }
        let key = std::ptr::from_ref(rendered) as usize;
        let window = &mut self.window;
        let held = window.start..window.start + window.len;
        if window.key != key || range.start < held.start || range.end > held.end {
            window.key = 0;
            let len = WINDOW
                .min(rendered.text_len().saturating_sub(range.start))
                .max(range.len());
            sized(&mut window.bytes, len, WINDOW);
            rendered.read_at(range.start, &mut window.bytes[..len])?;
            (window.key, window.start, window.len) = (key, range.start, len);
        }
        let from = range.start - self.window.start;
        let bytes = &self.window.bytes[from..from + range.len()];
        let end = self.filled + bytes.len();
        sized(&mut self.buf, end, CHUNK);
        self.buf[self.filled..end].copy_from_slice(bytes);
        self.filled = end;
        Ok(())
    }
}

/// Makes `buf` at least `len` long (`at_least` at first): grown, never shortened.
fn sized(buf: &mut Vec<u8>, len: usize, at_least: usize) {
    if buf.is_empty() {
        // Zeroed by the allocator (fresh pages), not byte by byte.
        *buf = vec![0; len.max(at_least)];
    } else if buf.len() < len {
        buf.resize(len, 0);
    }
}

/// A listing that refers to a rendering it no longer has, or to bytes past its text's end.
fn gone() -> io::Error {
    io::Error::other("the listing refers to kept text it no longer holds")
}
