//! Complete lines out of bytes that arrive in pieces: a reader is fed whatever was appended to a
//! file since its last look, and a half-written last line waits for the rest.

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
