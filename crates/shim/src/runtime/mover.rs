//! What a pump moves bytes with: its [`Source`] (plain reads, or on Linux the tee-and-splice
//! fast path), the [`Batch`] of bytes taken in and not passed on whole yet, and the [`Mover`]
//! that sends one batch on in the order of its pieces — written from the batch, spliced from the
//! park or straight from the input pipe, or discarded — with the output's pen held.

use std::ops::Range;
#[cfg(target_os = "linux")]
use std::os::fd::AsFd;
use std::os::fd::OwnedFd;

use super::outbox::Outbox;
#[cfg(target_os = "linux")]
use super::tee;
use crate::adapter::Side;
use crate::log::ShimLog;

/// Where a pump's bytes come from.
pub(super) enum Source {
    /// Read into the shim and written on from there (any input, every platform).
    Read(OwnedFd),
    /// Looked at through a copy and spliced on (Linux, an input pipe): [`tee`].
    #[cfg(target_os = "linux")]
    Tee(Box<tee::TeeInput>),
    /// Nothing more can be read.
    Gone,
}

impl Source {
    pub(super) fn new(input: OwnedFd) -> Source {
        #[cfg(target_os = "linux")]
        {
            match tee::TeeInput::new(input) {
                Ok(tee) => Source::Tee(Box::new(tee)),
                Err(input) => Source::Read(input),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Source::Read(input)
        }
    }

    /// From the fast path to plain reads (between batches, when no byte of the batch is left
    /// in the input).
    pub(super) fn fall_back(&mut self, log: &ShimLog, side: Side) {
        #[cfg(target_os = "linux")]
        if let Source::Tee(_) = self
            && let Source::Tee(tee) = std::mem::replace(self, Source::Gone)
        {
            log.line(format_args!(
                "the {side:?} side is read plainly from now on"
            ));
            *self = Source::Read(tee.into_input());
        }
        let _ = (log, side);
    }
}

/// The bytes a pump has taken in and not passed on whole yet.
#[derive(Debug, Default)]
pub(super) struct Batch {
    pub(super) buf: Vec<u8>,
    /// `buf[..sent]` has passed on already: the head of a long line streaming through, with
    /// the forward pen kept (`pen`).
    pub(super) sent: usize,
    /// `buf[..held]` has been taken out of the input; `buf[held..]` is a copy of bytes still at
    /// the front of the input pipe (the fast path).
    pub(super) held: usize,
    /// Bytes at the start of `buf` already searched for a newline (a long line's head).
    pub(super) scanned: usize,
    /// The pen of the pipe this side forwards to is kept across batches: a line streams.
    pub(super) pen: bool,
    /// `buf[sent..sent + parked]` also waits in the fast path's park (a pipe of ours), so it
    /// moves on without a copy.
    pub(super) parked: usize,
}

impl Batch {
    /// `buf[..end]` is dealt with.
    pub(super) fn after_take(&mut self, end: usize) {
        self.buf.drain(..end);
        self.taken(end);
    }

    /// `end` bytes were taken off the front of `buf`.
    pub(super) fn taken(&mut self, end: usize) {
        self.sent = self.sent.saturating_sub(end);
        self.held = self.held.saturating_sub(end);
        self.scanned = self.buf.len();
    }
}

/// Sends one batch with the pen held, in the order of its pieces. Bytes the batch holds are
/// spliced from the park where they wait, else written from the batch's copy; bytes still in
/// the input pipe are spliced (or, if the output takes no splice, discarded from the pipe and
/// written from the copy); bytes of dropped lines are discarded.
///
/// The batch's bytes, by position: `[..sent)` passed on before, `[sent..park_end)` wait in the
/// park (from `park_at`), then those only in the copy up to `held`, then those still in the
/// input (from `pipe_at`).
pub(super) struct Mover<'a> {
    #[cfg(target_os = "linux")]
    pub(super) tee: Option<&'a mut tee::TeeInput>,
    pub(super) outbox: &'a Outbox,
    pub(super) buf: &'a [u8],
    pub(super) held: usize,
    pub(super) pipe_at: usize,
    pub(super) sent: usize,
    pub(super) park_at: usize,
    pub(super) park_end: usize,
    /// Splicing failed or the output broke: read plainly from the next batch on (the park is
    /// not used again; what waits there is in the copy too).
    pub(super) fall_back: bool,
    /// The output is gone: bytes are only taken out of the input.
    pub(super) broken: bool,
}

impl Mover<'_> {
    pub(super) fn new<'a>(
        #[cfg(target_os = "linux")] tee: Option<&'a mut tee::TeeInput>,
        outbox: &'a Outbox,
        batch: &'a Batch,
    ) -> Mover<'a> {
        Mover {
            #[cfg(target_os = "linux")]
            tee,
            outbox,
            buf: &batch.buf,
            held: batch.held,
            pipe_at: batch.held,
            sent: batch.sent,
            park_at: batch.sent,
            park_end: batch.sent + batch.parked,
            fall_back: false,
            broken: false,
        }
    }

    /// Bytes still waiting in the park.
    pub(super) fn parked(&self) -> usize {
        self.park_end - self.park_at
    }

    pub(super) fn write(&mut self, range: Range<usize>) {
        if !range.is_empty() && !self.broken && !self.outbox.write_held(&self.buf[range]) {
            self.broken = true;
            self.fall_back = true;
        }
    }

    /// Splices `len` bytes on (from the park or the input); how many moved. On an error the
    /// output is marked broken or the batch falls back to writing from its copy.
    #[cfg(target_os = "linux")]
    pub(super) fn splice(&mut self, from_park: bool, len: usize) -> usize {
        let Some(tee) = self.tee.as_deref_mut() else {
            return 0;
        };
        if self.fall_back || self.broken {
            return 0;
        }
        let (moved, error) = self
            .outbox
            .with_sink(|sink| match from_park {
                true => tee.unpark_to(sink.as_fd(), len),
                false => tee.splice_to(sink.as_fd(), len),
            })
            .unwrap_or((0, Some(rustix::io::Errno::PIPE)));
        match error {
            None => {}
            Some(rustix::io::Errno::PIPE) => {
                self.outbox.set_broken();
                self.broken = true;
                self.fall_back = true;
            }
            // The output takes no splice (or it failed otherwise): copy from here on.
            Some(_) => self.fall_back = true,
        }
        moved
    }

    pub(super) fn forward(&mut self, range: Range<usize>) {
        let range = range.start.max(self.sent)..range.end;
        if range.is_empty() {
            return;
        }
        // Waiting in the park.
        let parked = range.start..range.end.min(self.park_end);
        if !parked.is_empty() {
            self.drop_to(parked.start);
            #[cfg(target_os = "linux")]
            {
                let moved = self.splice(true, parked.len());
                self.park_at += moved;
            }
            let from = self.park_at;
            self.drop_to(parked.end);
            self.write(from..parked.end);
        }
        // Only in the copy.
        let own = range.start.max(self.park_end)..range.end.min(self.held);
        self.write(own);
        // Still in the input.
        let piped = range.start.max(self.held)..range.end;
        if piped.is_empty() {
            return;
        }
        self.drop_to(piped.start);
        #[cfg(target_os = "linux")]
        {
            let moved = self.splice(false, piped.len());
            self.pipe_at += moved;
        }
        let from = self.pipe_at;
        self.drop_to(piped.end);
        self.write(from..piped.end);
    }

    /// A line of ours.
    pub(super) fn own(&mut self, line: &[u8]) {
        if !self.broken && !self.outbox.write_held(line) {
            self.broken = true;
            self.fall_back = true;
        }
    }

    /// Takes the bytes before `buf[to]` out of the park and the input, unsent (their copy is
    /// in `buf`).
    pub(super) fn drop_to(&mut self, to: usize) {
        let park_to = to.min(self.park_end);
        if park_to > self.park_at {
            #[cfg(target_os = "linux")]
            if let Some(tee) = self.tee.as_deref_mut()
                && !self.fall_back
                && tee.unpark_discard(park_to - self.park_at).is_err()
            {
                self.fall_back = true;
            }
            self.park_at = park_to;
        }
        self.drop_to_input_only(to);
    }

    /// Takes the incomplete line `buf[from..]` out of the input to wait for its end: into the
    /// park while every byte of it taken before is there too and it has room, the rest only
    /// into the copy. Returns the bytes waiting in the park (they start at `from`).
    pub(super) fn hold_rest(&mut self, from: usize) -> usize {
        self.drop_to(from);
        let end = self.buf.len();
        if self.parked() == 0 {
            // An empty park starts where the line's first byte not in the copy alone is.
            self.park_at = self.pipe_at.max(from);
            self.park_end = self.park_at;
        }
        #[cfg(target_os = "linux")]
        if self.park_end == self.pipe_at
            && self.park_at == from
            && !self.fall_back
            && let Some(tee) = self.tee.as_deref_mut()
        {
            let moved = tee.park(end - self.pipe_at);
            self.pipe_at += moved;
            self.park_end += moved;
        }
        self.drop_to_input_only(end);
        if self.park_at != from && self.parked() > 0 {
            // Not where the line starts (never expected): out of the park with them, the copy
            // serves.
            let park_end = self.park_end;
            self.drop_to(park_end);
        }
        if self.fall_back { 0 } else { self.parked() }
    }

    /// As [`Mover::drop_to`], for the input alone (the park keeps its bytes).
    pub(super) fn drop_to_input_only(&mut self, to: usize) {
        if to <= self.pipe_at {
            return;
        }
        #[cfg(target_os = "linux")]
        if let Some(tee) = self.tee.as_deref_mut()
            && tee.discard(to - self.pipe_at).is_err()
        {
            // The input failed under us: what is left of it is lost, as a failed read loses it.
            self.fall_back = true;
        }
        self.pipe_at = to;
    }
}
