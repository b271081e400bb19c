//! Where in each log file a query reads: the start of a `--since` window found by bisecting the
//! file, and the pieces the rest is cut into so the cores scan one file together.
//!
//! The log is appended in time order, so the first record of a window can be found without
//! reading what comes before it: a probe in the middle reads the first whole line after an
//! offset and compares its `at`. Writers' clocks can disagree a little (several processes, a
//! clock step), so the bisection aims [`crate::query`]'s slack earlier than the window, and every
//! line after the start found is still checked on its own: a record out of order by less than
//! the slack is never lost. A probe that finds no stamp (a bad line, a line longer than a probe)
//! ends the bisection where it is, which only means reading more.

use std::fs::File;

use memchr::memchr;

use crate::clock;
use crate::line;
use crate::rotate::read_full_at;

/// What one probe reads: more than any ordinary record, so a probe nearly always finds a whole
/// line after its offset.
const PROBE_BYTES: usize = 16 * 1024;

/// Below this the bisection stops: reading the rest costs about what more probes would.
const BISECT_STOP: u64 = 256 * 1024;

/// The size of the pieces a file is scanned in, in parallel. Large enough that a piece's
/// set-up (a read call, a partial line at each end) is noise, small enough that a 16 MiB file
/// keeps every core busy.
pub(crate) const PIECE_BYTES: u64 = 2 * 1024 * 1024;

/// A byte range of one file whose lines a task scans: every line that *starts* in
/// `start..end` (the last may run past `end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece {
    /// Index of the file in the query's list.
    pub file: usize,
    pub start: u64,
    pub end: u64,
    /// The piece ends where the file does: an unterminated last line is read as a line.
    pub at_end: bool,
}

/// The offset of a line start at or before the first record stamped `from_ms` or later, found
/// by bisection; 0 when the file cannot be probed.
pub(crate) fn window_start(file: &File, len: u64, from_ms: i64) -> u64 {
    let mut buf = vec![0u8; PROBE_BYTES];
    // `lo` is always a line start whose record is older than `from_ms` (or 0); `hi` an offset
    // at or after which the window's first line starts.
    let (mut lo, mut hi) = (0u64, len);
    while hi - lo > BISECT_STOP {
        let mid = lo + (hi - lo) / 2;
        let Some((line_start, stamp_ms)) = probe(file, mid, &mut buf) else {
            break;
        };
        if line_start >= hi {
            // The line after `mid` starts beyond `hi`: nothing more to split.
            break;
        }
        if stamp_ms < from_ms {
            lo = line_start;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The first whole line starting after `offset`: where it starts and its `at` in milliseconds.
fn probe(file: &File, offset: u64, buf: &mut [u8]) -> Option<(u64, i64)> {
    let n = read_full_at(file, buf, offset).ok()?;
    let buf = buf.get(..n)?;
    let newline = memchr(b'\n', buf)?;
    let rest = buf.get(newline + 1..)?;
    let end = memchr(b'\n', rest)?;
    let stamp = line::stamp(rest.get(..end)?.trim_ascii())?;
    Some((offset + newline as u64 + 1, clock::to_millis(&stamp)?))
}

/// Cuts `start..len` of file `file` into pieces of about [`PIECE_BYTES`].
pub(crate) fn pieces(file: usize, start: u64, len: u64, out: &mut Vec<Piece>) {
    let mut at = start;
    while at < len {
        let end = at.saturating_add(PIECE_BYTES).min(len);
        out.push(Piece {
            file,
            start: at,
            end,
            at_end: end == len,
        });
        at = end;
    }
}

/// Reads the bytes of the lines that start in `piece` into `buf`: from the first line start at
/// or after `piece.start` (0, or just after a newline) to the newline ending the last line that
/// starts before `piece.end` (or the file's end). Returns the number of bytes read.
pub(crate) fn read_piece(file: &File, piece: Piece, buf: &mut Vec<u8>) -> std::io::Result<u64> {
    // One byte before the start tells whether a line starts exactly there.
    let from = piece.start.saturating_sub(1);
    let want = usize::try_from(piece.end - from).unwrap_or(usize::MAX);
    buf.clear();
    buf.resize(want, 0);
    let n = read_full_at(file, buf, from)?;
    buf.truncate(n);
    let mut read = n as u64;
    let skip = if piece.start == 0 {
        0
    } else {
        // The line the byte before the start belongs to is the previous piece's.
        match memchr(b'\n', buf) {
            Some(i) => i + 1,
            None => buf.len(),
        }
    };
    buf.drain(..skip);
    if !piece.at_end && !buf.is_empty() {
        // Finish the last line, which runs into the next piece.
        let mut at = from + n as u64;
        let mut more = vec![0u8; PROBE_BYTES];
        loop {
            let got = read_full_at(file, &mut more, at)?;
            if got == 0 {
                break;
            }
            read += got as u64;
            at += got as u64;
            match memchr(b'\n', &more[..got]) {
                Some(i) => {
                    buf.extend_from_slice(&more[..=i]);
                    break;
                }
                None => buf.extend_from_slice(&more[..got]),
            }
        }
    }
    Ok(read)
}
