//! Reading a JSON-lines transcript from a byte offset, one complete line at a time.
//!
//! Agents append to their transcripts while we read them, so the last line may be half-written.
//! [`read_complete_lines`] feeds only lines that end in a newline and returns the position just
//! after the last one: the index stores it with the fold state and resumes there next time, so
//! the half-written line is read once it is finished, and no byte is read twice.
//!
//! Lines longer than [`MAX_LINE_BYTES`] are skipped with a warning instead of being held in
//! memory whole (one base64 image in a tool result can be tens of MB); nothing the listing needs
//! lives in such a line.
//!
//! A file is read a chunk at a time; a line that does not end in its chunk is carried over. A
//! line longer than a chunk (a tool's output, a few MB) is held whole while it is assembled, so
//! the process holds at most [`LONG_LINES_AT_ONCE`] of them at a time, whatever the number of
//! readers: a cold listing reads on 16 threads, and each holding its own few-MB line (and the
//! buffers it grew through) was most of that listing's peak memory.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::model::{LineContext, LineProblem, TranscriptFold, Warnings};

/// Lines longer than this are skipped with a warning rather than buffered.
pub const MAX_LINE_BYTES: usize = 32 << 20;

/// The read buffer: large enough that a typical transcript takes few system calls.
pub const CHUNK: usize = 256 << 10;

/// How many lines longer than [`CHUNK`] the process assembles at once; a reader meeting one
/// more waits for one of them to be done. Such lines are rare (the scale bench's store has 160
/// in 1.3 GB), so the wait is rarely met, and it is what bounds the readers' memory.
pub const LONG_LINES_AT_ONCE: usize = 2;

/// Where a reader stopped: the byte offset just after the last complete line, and how many lines
/// (1-based numbering continues from here) came before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Position {
    pub offset: u64,
    pub line: u64,
}

/// Anything lines can be fed to: every [`TranscriptFold`], and side files such as Codex's
/// `session_index.jsonl` names.
pub trait LineSink {
    /// One complete line, without its newline (and without a trailing `\r`). Never empty.
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings);
}

impl<T: TranscriptFold> LineSink for T {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        TranscriptFold::feed_line(self, line, at, warnings)
    }
}

/// Feeds every complete line of `path` after `from` to `sink` and returns the position after the
/// last complete line. A half-written last line is left for the next call.
///
/// If the file is now shorter than `from.offset` it was replaced or truncated: the caller should
/// start again from [`Position::default`] with a fresh fold (this function just reads nothing).
pub fn read_complete_lines<S: LineSink + ?Sized>(
    path: &Path,
    from: Position,
    sink: &mut S,
    warnings: &mut Warnings,
) -> Result<Position> {
    let mut file = File::open(path).map_err(|e| StoreError::io(path, e))?;
    if from.offset > 0 {
        file.seek(SeekFrom::Start(from.offset))
            .map_err(|e| StoreError::io(path, e))?;
    }
    feed_lines(
        &mut file, path, from, /*consume_tail*/ false, sink, warnings,
    )
    .map_err(|e| StoreError::io(path, e))
}

/// Feeds every line of a whole `.jsonl.zst` file to `sink`. A compressed rollout is complete
/// when written, so an unterminated last line is fed too. A corrupt stream is an error naming
/// the file; the lines before the damage have been fed.
pub fn read_zstd_lines<S: LineSink + ?Sized>(
    path: &Path,
    sink: &mut S,
    warnings: &mut Warnings,
) -> Result<Position> {
    let file = File::open(path).map_err(|e| StoreError::io(path, e))?;
    let mut decoder = zstd::stream::read::Decoder::new(file).map_err(|e| StoreError::Zstd {
        path: path.to_path_buf(),
        source: e,
    })?;
    feed_lines(
        &mut decoder,
        path,
        Position::default(),
        /*consume_tail*/ true,
        sink,
        warnings,
    )
    .map_err(|e| StoreError::Zstd {
        path: path.to_path_buf(),
        source: e,
    })
}

/// Feeds every line of a whole file, plain or `.zst` by its name, including an unterminated last
/// line: for readers that look at a finished file once (the turns of one session).
pub fn read_all_lines<S: LineSink + ?Sized>(
    path: &Path,
    sink: &mut S,
    warnings: &mut Warnings,
) -> Result<Position> {
    if is_zstd_path(path) {
        return read_zstd_lines(path, sink, warnings);
    }
    let mut file = File::open(path).map_err(|e| StoreError::io(path, e))?;
    feed_lines(
        &mut file,
        path,
        Position::default(),
        /*consume_tail*/ true,
        sink,
        warnings,
    )
    .map_err(|e| StoreError::io(path, e))
}

/// Feeds the complete lines `reader` yields to `sink`, numbering them from `from` and naming
/// `path` in warnings; with `consume_tail`, an unterminated last line is fed too. The in-memory
/// form of [`read_complete_lines`], for callers that already hold the bytes (and for tests).
pub fn read_lines_from<R: Read + ?Sized, S: LineSink + ?Sized>(
    reader: &mut R,
    path: &Path,
    from: Position,
    consume_tail: bool,
    sink: &mut S,
    warnings: &mut Warnings,
) -> io::Result<Position> {
    feed_lines(reader, path, from, consume_tail, sink, warnings)
}

/// True for a `.zst`-compressed transcript name.
pub fn is_zstd_path(path: &Path) -> bool {
    has_extension(path.as_os_str().as_encoded_bytes(), b"zst")
}

/// Whether a file name or a path (without a trailing separator) has the extension `ext`, as
/// `Path::extension` would say, on the bytes: `Path` parses components for it, and a warm
/// listing asks this of every file.
pub(crate) fn has_extension(name: &[u8], ext: &[u8]) -> bool {
    let Some(stem) = name
        .strip_suffix(ext)
        .and_then(|rest| rest.strip_suffix(b"."))
    else {
        return false;
    };
    // `.zst` alone is a hidden file with no extension; so is `dir/.zst`.
    !stem.is_empty() && !stem.ends_with(b"/")
}

thread_local! {
    /// Each thread's read buffer, kept between files: a fresh zeroed 256 KB per file costs more
    /// than reading a small transcript.
    static CHUNK_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The thread's read buffer while a file is read; given back when dropped (also on an error).
struct ChunkBuf(Vec<u8>);

impl ChunkBuf {
    fn take() -> ChunkBuf {
        let buf = CHUNK_BUF.take();
        ChunkBuf(if buf.len() == CHUNK {
            buf
        } else {
            vec![0u8; CHUNK]
        })
    }
}

impl Drop for ChunkBuf {
    fn drop(&mut self) {
        CHUNK_BUF.set(std::mem::take(&mut self.0));
    }
}

/// The long-line slots: how many are taken, and the buffers of lines already done, kept for the
/// next (a long line grows its buffer through a few sizes, each a fresh allocation: reusing one
/// is what keeps a listing's many long lines from each paying that, and the allocator from
/// holding what they freed).
struct LongLines {
    held: usize,
    spare: Vec<Vec<u8>>,
}

static LONG_LINES: parking_lot::Mutex<LongLines> = parking_lot::Mutex::new(LongLines {
    held: 0,
    spare: Vec::new(),
});
/// Signalled when a slot is given back.
static LONG_LINE_FREED: parking_lot::Condvar = parking_lot::Condvar::new();

/// A spare buffer larger than this is freed rather than kept: a long line is a few MB, and
/// [`LONG_LINES_AT_ONCE`] of these are what a batch of reads keeps between its long lines.
const LONG_LINE_KEPT: usize = 8 << 20;

/// Frees the long-line buffers kept for the next long line: called when a batch of reads is over
/// (the index's reads of changed files), so a long-lived process does not keep them between
/// batches.
pub(crate) fn free_spare_long_line_buffers() {
    let spare = std::mem::take(&mut LONG_LINES.lock().spare);
    drop(spare);
}

thread_local! {
    /// This thread holds a long-line slot: a sink reading another file meanwhile (on the same
    /// thread) goes on without one rather than wait for itself.
    static HOLDS_LONG_LINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// One of the [`LONG_LINES_AT_ONCE`] slots, with its buffer; given back when dropped.
struct LongLineSlot {
    buf: Vec<u8>,
}

impl LongLineSlot {
    /// Waits for a free slot; `None` when this thread already holds one.
    fn acquire() -> Option<LongLineSlot> {
        if HOLDS_LONG_LINE.get() {
            return None;
        }
        let mut lines = LONG_LINES.lock();
        while lines.held >= LONG_LINES_AT_ONCE {
            LONG_LINE_FREED.wait(&mut lines);
        }
        lines.held += 1;
        let buf = lines.spare.pop().unwrap_or_default();
        HOLDS_LONG_LINE.set(true);
        Some(LongLineSlot { buf })
    }
}

impl Drop for LongLineSlot {
    fn drop(&mut self) {
        HOLDS_LONG_LINE.set(false);
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let mut lines = LONG_LINES.lock();
        lines.held = lines.held.saturating_sub(1);
        if buf.capacity() <= LONG_LINE_KEPT && lines.spare.len() < LONG_LINES_AT_ONCE {
            lines.spare.push(buf);
        }
        drop(lines);
        LONG_LINE_FREED.notify_one();
    }
}

/// The start of a line that did not end inside the chunk read. Up to a chunk's length it is kept
/// in a buffer reused for the whole file; longer, it moves to a long-line slot's buffer (waiting
/// for a slot), given back once the line is done.
#[derive(Default)]
struct Carry {
    short: Vec<u8>,
    long: Option<LongLineSlot>,
}

impl Carry {
    fn bytes(&self) -> &[u8] {
        match &self.long {
            Some(slot) => &slot.buf,
            None => &self.short,
        }
    }

    fn extend(&mut self, more: &[u8]) {
        if self.long.is_none()
            && self.short.len() + more.len() > CHUNK
            && let Some(mut slot) = LongLineSlot::acquire()
        {
            slot.buf.extend_from_slice(&self.short);
            self.short.clear();
            self.long = Some(slot);
        }
        match &mut self.long {
            Some(slot) => slot.buf.extend_from_slice(more),
            None => self.short.extend_from_slice(more),
        }
    }

    /// The line is done (fed, or skipped as too long).
    fn done(&mut self) {
        self.long = None;
        if self.short.capacity() > CHUNK {
            self.short = Vec::new();
        } else {
            self.short.clear();
        }
    }
}

/// The line splitter shared by the plain and compressed readers.
fn feed_lines<R: Read + ?Sized, S: LineSink + ?Sized>(
    reader: &mut R,
    path: &Path,
    from: Position,
    consume_tail: bool,
    sink: &mut S,
    warnings: &mut Warnings,
) -> io::Result<Position> {
    let mut buf = ChunkBuf::take();
    let buf = &mut buf.0;
    // The start of a line that did not end inside the previous chunk.
    let mut carry = Carry::default();
    // True while the current line is past MAX_LINE_BYTES and being thrown away.
    let mut skipping = false;
    let mut skipped_len: u64 = 0;
    let mut done = from;

    loop {
        let n = match reader.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            let piece = &chunk[start..nl];
            let consumed = (nl + 1 - start) as u64;
            let line_no = done.line + 1;
            if skipping {
                // `skipped_len` counts the pieces of this line seen in earlier chunks.
                let total = skipped_len + piece.len() as u64;
                too_long(warnings, path, line_no, total);
                done.offset += total + 1;
                skipping = false;
                skipped_len = 0;
            } else if carry.bytes().is_empty() {
                emit(piece, path, line_no, sink, warnings);
                done.offset += consumed;
            } else if carry.bytes().len() + piece.len() > MAX_LINE_BYTES {
                let total = (carry.bytes().len() + piece.len()) as u64;
                too_long(warnings, path, line_no, total);
                carry.done();
                done.offset += total + 1;
            } else {
                let carried = carry.bytes().len() as u64;
                carry.extend(piece);
                emit(carry.bytes(), path, line_no, sink, warnings);
                carry.done();
                done.offset += carried + consumed;
            }
            done.line = line_no;
            start = nl + 1;
        }
        let rest = &chunk[start..];
        if skipping {
            skipped_len += rest.len() as u64;
        } else if carry.bytes().len() + rest.len() > MAX_LINE_BYTES {
            skipping = true;
            skipped_len = (carry.bytes().len() + rest.len()) as u64;
            carry.done();
        } else {
            carry.extend(rest);
        }
    }

    if consume_tail && (!carry.bytes().is_empty() || skipping) {
        let line_no = done.line + 1;
        if skipping {
            too_long(warnings, path, line_no, skipped_len);
            done.offset += skipped_len;
        } else {
            emit(carry.bytes(), path, line_no, sink, warnings);
            done.offset += carry.bytes().len() as u64;
        }
        done.line = line_no;
    }
    Ok(done)
}

/// The warning for a line of `len` bytes thrown away unread.
fn too_long(warnings: &mut Warnings, path: &Path, line: u64, len: u64) {
    warnings.push_line(
        LineContext { path, line },
        LineProblem::TooLong,
        format!("line of {len} bytes is longer than {MAX_LINE_BYTES}; skipped"),
    );
}

fn emit<S: LineSink + ?Sized>(
    line: &[u8],
    path: &Path,
    line_no: u64,
    sink: &mut S,
    warnings: &mut Warnings,
) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    sink.feed_line(
        line,
        LineContext {
            path,
            line: line_no,
        },
        warnings,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_extension_agrees_with_path_extension() {
        for name in [
            "a.jsonl",
            ".jsonl",
            "jsonl",
            "a.jsonl.zst",
            "a..jsonl",
            "..jsonl",
            "dir/.jsonl",
            "dir/a.jsonl",
            "/x/rollout-1.jsonl",
            "a.JSONL",
            "ajsonl",
            "a.jsonlx",
        ] {
            let by_path = Path::new(name).extension().is_some_and(|e| e == "jsonl");
            assert_eq!(has_extension(name.as_bytes(), b"jsonl"), by_path, "{name}");
        }
    }
}
