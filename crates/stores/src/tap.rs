//! A second reader riding on the session index's reads: whatever else is derived from the same
//! transcripts (the daemon's usage index) is handed each line the index reads from a file's
//! start, so a cold daemon reads every byte once, not once per index.
//!
//! Only reads from the start are offered: a resumed read hands over the appended lines of a
//! file the other reader has its own state for, and it reads those few bytes itself. The lines
//! are the index's (complete lines, `\r` and blank lines dropped, as its folds see them); a read
//! that skipped a line as too long, or failed, ends with `None`, and the other reader reads that
//! file itself.

use std::sync::Arc;

use crate::roots::SourceFile;

/// Offered every transcript the session index reads from its start.
pub trait ReadTap: Send + Sync {
    /// The sink for this file's lines, or `None` to let it go by.
    fn begin(&self, source: &SourceFile) -> Option<Box<dyn TapSink>>;
}

/// One file's lines, as the session index reads them.
pub trait TapSink: Send {
    /// One complete line, without its newline.
    fn line(&mut self, line: &[u8]);
    /// The read ended: `Some(consumed)` bytes from the start were read and every line in them
    /// was handed over; `None` when not (an error, a line too long to hold).
    fn end(self: Box<Self>, consumed: Option<u64>);
}

/// A [`ReadTap`] held by a scanner.
#[derive(Clone)]
pub struct Tap(pub Arc<dyn ReadTap>);

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tap")
    }
}
