//! One side's pump: it reads the side's input to its end and hands whole lines to the adapter
//! in batches ([`Shared::take_lines`]); what the adapter lets through is moved on by a
//! [`Mover`], lines of ours between whole lines, and an incomplete line streams on or waits as
//! the adapter says.

use std::os::fd::OwnedFd;

use super::Shared;
use super::core::{LineAt, Piece, Pieces, Routed, lock};
use super::mover::{Batch, Mover, Source};
use super::outbox::{HIGH_WATER, Pen};
use crate::adapter::Side;
use crate::registration::now_ms;

/// Bytes asked of a pipe per read.
const READ_SIZE: usize = 64 * 1024;

/// Bytes of an incomplete line after which its head is shown to the adapter, which may let it
/// stream on before it ends: enough for every head the adapters tell lines by
/// (`{"type":"assistant",`, `{"jsonrpc":"2.0","method":"…"`; one cut short is asked again when
/// more has come). Most lines an agent writes are whole in one read, and the rest of a round's
/// last line goes on in the round's one splice instead of waiting in the park for its end
/// (measured: about 2 points of the plain pipe's throughput).
pub(super) const STREAM_AFTER: usize = 64;
/// How much of a line that streamed the shim keeps: it is handed to the adapter as this head.
pub(super) const STREAMED_HEAD: usize = 16 * 1024;

/// Reads `input` to its end, handing whole lines to the adapter; a partial last line at the end
/// is passed on as it is.
pub(super) fn pump(shared: &Shared, side: Side, input: OwnedFd) {
    let destination = match side {
        Side::Extension => &shared.to_agent,
        Side::Agent => &shared.to_extension,
    };
    let mut source = Source::new(input);
    let mut batch = Batch::default();
    loop {
        let read = match &mut source {
            Source::Read(input) => {
                batch.buf.reserve(READ_SIZE);
                // Read into the spare capacity: zeroing the buffer before every read would cost
                // a memset of it per read, however few bytes the pipe holds.
                match rustix::io::read(&*input, rustix::buffer::spare_capacity(&mut batch.buf)) {
                    Ok(n) => {
                        batch.held = batch.buf.len();
                        n
                    }
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => {
                        shared
                            .log
                            .line(format_args!("reading the {side:?} side failed: {e}"));
                        0
                    }
                }
            }
            #[cfg(target_os = "linux")]
            Source::Tee(tee) => match tee.peek(&mut batch.buf) {
                Ok(n) => n,
                Err(e) => {
                    // Whatever the copy got is still in the input: read it plainly.
                    shared
                        .log
                        .line(format_args!("looking at the {side:?} side failed: {e}"));
                    batch.buf.truncate(batch.held);
                    batch.parked = 0;
                    source.fall_back(&shared.log, side);
                    continue;
                }
            },
            Source::Gone => 0,
        };
        if read == 0 {
            break;
        }
        shared.take_lines(side, &mut batch, &mut source, false);
        if !batch.pen {
            destination.wait_below(HIGH_WATER);
        }
    }
    if !batch.buf.is_empty() || batch.pen {
        shared.take_lines(side, &mut batch, &mut source, true);
    }
}

impl Shared {
    /// Hands the complete lines of `batch.buf[..end]` to the adapter and sends on what comes
    /// out; the consumed bytes are removed from the batch. Bytes of the batch still in the
    /// input pipe (the fast path, [`tee`]) are spliced on or discarded here, and so is the
    /// incomplete line after `end`: a long one streams on (the pen kept) when the adapter lets
    /// it, else its bytes are taken out of the pipe and held in the batch until it ends.
    pub(super) fn take_lines(
        &self,
        side: Side,
        batch: &mut Batch,
        source: &mut Source,
        at_end: bool,
    ) {
        let (forward_to, other_to) = match side {
            Side::Extension => (&self.to_agent, &self.to_extension),
            Side::Agent => (&self.to_extension, &self.to_agent),
        };
        let len = batch.buf.len();
        #[cfg(target_os = "linux")]
        let teeing = matches!(source, Source::Tee(_));
        #[cfg(not(target_os = "linux"))]
        let teeing = false;
        // The first newline, searched for after what earlier batches searched (a long line's
        // head is scanned once); nothing to do without one unless bytes wait in the input pipe.
        let scanned = batch.scanned.min(len);
        let first = memchr::memchr(b'\n', &batch.buf[scanned..])
            .map(|i| scanned + i + 1)
            .or(at_end.then_some(len).filter(|&l| l > 0));
        if first.is_none() && batch.held == len && !batch.pen {
            batch.scanned = len;
            return;
        }
        let mut queued = false;
        let mut end = 0;
        let direct = {
            let mut core = lock(&self.core);
            let mut routed = Routed::default();
            let now = now_ms();
            let mut next = first;
            while let Some(stop) = next {
                let buf = &batch.buf;
                let whole = &buf[end..stop];
                let line = whole.strip_suffix(b"\n").unwrap_or(whole);
                let committed = end < batch.sent;
                // A line that streamed kept only its head ([`Shared::move_batch`]): the adapter
                // gets that head, not the head joined to the line's last bytes.
                let line = if committed {
                    &line[..line.len().min(STREAMED_HEAD)]
                } else {
                    line
                };
                let at = LineAt {
                    range: end..stop,
                    now,
                    committed,
                };
                core.on_line(side, line, at, &mut routed, &self.log);
                end = stop;
                next = memchr::memchr(b'\n', &buf[stop..])
                    .map(|i| stop + i + 1)
                    .or((at_end && stop < len).then_some(len));
            }
            // The incomplete line after `end` streams on once it is long (or already does).
            let tail = &batch.buf[end..];
            let early = !tail.is_empty()
                && (batch.sent > end
                    || (teeing
                        && tail.len() >= STREAM_AFTER
                        && core.streams_from_head(side, tail, now, &mut routed, &self.log)));
            if core.signal_stale() {
                self.registration_changed.notify_one();
            }
            // Queued (or the pen taken) while the lock is held, so the order the adapter
            // decided is kept.
            let (forward, other) = match side {
                Side::Extension => (routed.to_agent, routed.to_extension),
                Side::Agent => (routed.to_extension, routed.to_agent),
            };
            other.send(&batch.buf, other_to);
            if batch.held == len && !batch.pen && !early && batch.parked == 0 {
                // Every byte is in the batch and no line streams: the plain path.
                if !forward.is_whole(end) {
                    forward.send(&batch.buf, forward_to);
                    false
                } else if forward_to.try_direct() {
                    true
                } else {
                    let rest = batch.buf.split_off(end);
                    forward_to.push(std::mem::replace(&mut batch.buf, rest));
                    batch.taken(end);
                    return;
                }
            } else {
                let pen = if batch.pen {
                    Pen::Now
                } else {
                    forward_to.reserve()
                };
                match pen {
                    Pen::Now => {}
                    Pen::Queued => queued = true,
                    Pen::Unavailable => {
                        // Broken or closed: queue a copy as a push would (it is dropped if
                        // broken), and take the bytes out of the pipe.
                        forward.send(&batch.buf, forward_to);
                        drop(core);
                        return self.discard_batch(side, batch, end, source);
                    }
                }
                let plan = (forward, early);
                drop(core);
                return self.move_batch(side, batch, end, source, plan, queued);
            }
        };
        if direct {
            forward_to.write_direct(&batch.buf[..end]);
        }
        batch.after_take(end);
    }

    /// Sends a batch with the pen held (or its turn queued): the batch's own bytes are
    /// written, those still in the input pipe spliced, dropped lines discarded from it.
    pub(super) fn move_batch(
        &self,
        side: Side,
        batch: &mut Batch,
        end: usize,
        source: &mut Source,
        (forward, early): (Pieces, bool),
        queued: bool,
    ) {
        let forward_to = match side {
            Side::Extension => &self.to_agent,
            Side::Agent => &self.to_extension,
        };
        let len = batch.buf.len();
        if queued && !forward_to.wait_turn() {
            // Broke while waiting: nothing more reaches that side.
            return self.discard_batch(side, batch, end, source);
        }
        #[cfg(target_os = "linux")]
        let tee = match source {
            Source::Tee(tee) => Some(tee.as_mut()),
            _ => None,
        };
        let mut mover = Mover::new(
            #[cfg(target_os = "linux")]
            tee,
            forward_to,
            batch,
        );
        let mut pieces = forward.into_pieces();
        // A streaming line right after the last forwarded one goes on with it: one splice, one
        // wake-up of the reader.
        let mut streamed = false;
        if early
            && let Some(Piece::Range(last)) = pieces.last_mut()
            && last.end == end
        {
            last.end = len;
            streamed = true;
        }
        for piece in pieces {
            match piece {
                Piece::Range(range) => mover.forward(range),
                Piece::Owned(line) => mover.own(&line),
            }
        }
        mover.drop_to(end);
        let parked = if early {
            if !streamed {
                mover.forward(end..len);
            }
            0
        } else {
            // Its bytes wait for its end, in the park or in the batch.
            mover.hold_rest(end)
        };
        let fall_back = mover.fall_back;
        batch.pen = early;
        batch.parked = if fall_back { 0 } else { parked };
        if early {
            // Every byte of the streaming line has passed on, and the adapter reads a line that
            // streamed by its head alone: only the head is kept (a 1 MB image is then neither
            // held in memory nor moved about in it).
            batch.buf.truncate(len.min(end + STREAMED_HEAD));
            batch.sent = batch.buf.len();
        } else {
            forward_to.release();
        }
        batch.held = batch.buf.len();
        batch.after_take(end);
        if fall_back {
            source.fall_back(&self.log, side);
        }
    }

    /// The pipe this batch goes to is gone: its bytes still in the input are taken out (as a
    /// plain read would have), and the pump reads plainly from now on.
    pub(super) fn discard_batch(
        &self,
        side: Side,
        batch: &mut Batch,
        end: usize,
        source: &mut Source,
    ) {
        let len = batch.buf.len();
        #[cfg(target_os = "linux")]
        if let Source::Tee(tee) = source
            && batch.held < len
            && let Err(error) = tee.discard(len - batch.held)
        {
            self.log
                .line(format_args!("reading the {side:?} side failed: {error}"));
        }
        batch.held = len;
        batch.sent = 0;
        batch.pen = false;
        batch.parked = 0;
        batch.after_take(end);
        source.fall_back(&self.log, side);
    }
}
