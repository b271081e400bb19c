//! Complete lines out of bytes that arrive in pieces: a reader is fed whatever was appended to a
//! file since its last look, and a half-written last line waits for the rest. [`Reader`] is the
//! one reader shell every agent's usage reader uses, with what is its own behind [`LineRecords`].

use std::path::Path;

use cross_agent_protocol::timestamp::UnixMillis;
use serde::de::DeserializeOwned;

/// Holds the bytes after the last newline until their line is complete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineBuffer {
    pending: Vec<u8>,
}

impl LineBuffer {
    /// Calls `each` with every complete line (without its `\n`) in `pending + bytes`.
    pub fn feed(&mut self, bytes: &[u8], mut each: impl FnMut(&[u8])) {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (line, after) = rest.split_at(end);
            if self.pending.is_empty() {
                each(line);
            } else {
                self.pending.extend_from_slice(line);
                let whole = std::mem::take(&mut self.pending);
                each(&whole);
            }
            rest = &after[1..];
        }
        self.pending.extend_from_slice(rest);
    }

    /// Whether a part line is waiting for its end.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The end of a file read whole: a last line without `\n` is offered if it is whole JSON (a
    /// line still being written is not, and stays pending).
    pub fn finish(&mut self, mut each: impl FnMut(&[u8])) {
        if self.pending.is_empty() {
            return;
        }
        if serde_json::from_slice::<serde::de::IgnoredAny>(&self.pending).is_ok() {
            let whole = std::mem::take(&mut self.pending);
            each(&whole);
        }
    }
}

/// The earliest timestamp of a file's lines, in 8 bytes (an `Option<UnixMillis>` takes 16, in
/// a parse kept for every file: [`crate::entry`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Earliest(i64);

/// No timestamp yet (no line says one this early).
const NO_EARLIEST: i64 = i64::MIN;

impl Default for Earliest {
    fn default() -> Earliest {
        Earliest(NO_EARLIEST)
    }
}

impl Earliest {
    pub fn get(self) -> Option<UnixMillis> {
        (self.0 != NO_EARLIEST).then_some(UnixMillis(self.0))
    }

    /// Takes `at` when it is earlier (the first millisecond `i64` holds is taken as the next).
    pub fn note(&mut self, at: UnixMillis) {
        let at = at.0.max(NO_EARLIEST + 1);
        if self.0 == NO_EARLIEST || at < self.0 {
            self.0 = at;
        }
    }
}

impl std::fmt::Debug for Earliest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.get(), f)
    }
}

/// What one kind of transcript makes of its lines; [`Reader`] does the rest (pieces, blank and
/// damaged lines, the earliest timestamp), the same for every agent.
pub trait LineRecords: Default {
    /// The fields of a line this kind looks at.
    type Line: DeserializeOwned;
    /// What a file of this kind records about usage.
    type File;
    /// The file as known before any line is read: what its path says.
    fn start(path: &Path) -> Self::File;
    /// When the line was written, if it says.
    fn timestamp(line: &Self::Line) -> Option<UnixMillis>;
    /// Takes in one parsed line, written `at`.
    fn record(&mut self, file: &mut Self::File, line: Self::Line, at: Option<UnixMillis>);
    /// Where the file keeps its earliest timestamp.
    fn started(file: &mut Self::File) -> &mut Earliest;
    /// Where the file counts the lines that were not JSON, so a caller can say so.
    fn bad_lines(file: &mut Self::File) -> &mut u64;
    /// Gives back the room a read left spare (a growing list holds up to twice its length):
    /// the live index keeps every file's reader between reads.
    fn shrink(&mut self, file: &mut Self::File);
    /// Puts what the file keeps for the index's life and shares by `Arc` (its path, its calls)
    /// in fresh allocations, when nothing else holds them ([`crate::live`]'s compaction; what
    /// it owns outright is made afresh by cloning it).
    fn renew(file: &mut Self::File);
}

/// Reads one file of kind `R` from any number of appended pieces.
#[derive(Debug, Clone)]
pub struct Reader<R: LineRecords> {
    file: R::File,
    records: R,
    lines: LineBuffer,
}

impl<R: LineRecords> Reader<R> {
    /// A reader for the file at `path`.
    pub fn new(path: &Path) -> Self {
        Self {
            file: R::start(path),
            records: R::default(),
            lines: LineBuffer::default(),
        }
    }

    /// Reads the bytes appended since the last call.
    pub fn feed(&mut self, bytes: &[u8]) {
        let Self {
            file,
            records,
            lines,
        } = self;
        lines.feed(bytes, |line| take_line(records, file, line));
    }

    /// Reads one complete line (without its newline), as another reader split it.
    pub fn feed_line(&mut self, line: &[u8]) {
        if self.lines.is_empty() {
            take_line(&mut self.records, &mut self.file, line);
        } else {
            self.feed(line);
            self.feed(b"\n");
        }
    }

    /// What has been read so far, a half-written last line left out.
    pub fn file(&self) -> &R::File {
        &self.file
    }

    /// What has been read so far, to change in place (its calls written to disk or back).
    pub fn file_mut(&mut self) -> &mut R::File {
        &mut self.file
    }

    /// Gives back the room the reads so far left spare ([`LineRecords::shrink`]).
    pub fn shrink(&mut self) {
        self.records.shrink(&mut self.file);
        self.lines.pending.shrink_to_fit();
    }

    /// See [`LineRecords::renew`].
    pub fn renew(&mut self) {
        R::renew(&mut self.file);
    }

    /// Whether a part line waits for its end (then [`Reader::finished`] may differ from
    /// [`Reader::file`]).
    pub fn waiting(&self) -> bool {
        !self.lines.is_empty()
    }

    /// The file as [`Reader::finish`] would give it now, the reader left to go on reading.
    pub fn finished(&self) -> R::File
    where
        Self: Clone,
        R::File: Clone,
    {
        if self.lines.is_empty() {
            return self.file.clone();
        }
        self.clone().finish()
    }

    /// The file read whole: a last line without a newline is taken when it is whole JSON.
    pub fn finish(mut self) -> R::File {
        let Self {
            file,
            records,
            lines,
        } = &mut self;
        lines.finish(|line| take_line(records, file, line));
        self.file
    }
}

/// Reads a whole file's bytes.
pub fn read<R: LineRecords>(path: &Path, bytes: &[u8]) -> R::File {
    let mut reader = Reader::<R>::new(path);
    reader.feed(bytes);
    reader.finish()
}

fn take_line<R: LineRecords>(records: &mut R, file: &mut R::File, raw: &[u8]) {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let Ok(line) = serde_json::from_slice::<R::Line>(raw) else {
        *R::bad_lines(file) += 1;
        return;
    };
    let at = R::timestamp(&line);
    if let Some(ts) = at {
        R::started(file).note(ts);
    }
    records.record(file, line, at);
}
