//! An ordered way into one pipe (the agent's stdin, or the extension's end of our stdout): a
//! queue, the thread that writes it, and a fast path for the reader that forwards to it.
//!
//! Every producer — the reader of the other side, an injection from the socket, a tick — decides
//! while it holds the shim's state lock, and either queues its bytes there (never blocking) or,
//! when nothing is queued and nobody is writing, takes the pipe's *pen* there and writes after
//! releasing the lock. Either way the bytes reach the pipe in the order the adapter decided
//! them. The pen spares the common case (a batch of forwarded lines) a copy and a hand-over to
//! the writer thread; only a reader ever writes directly, into the pipe it forwards to, so a
//! slow pipe blocks exactly the side a plain pipe would block, and no thread waits on a pipe
//! while another waits on it. Queued bytes above [`HIGH_WATER`] make the readers wait too,
//! which keeps the shim's memory small when one end is slow.
//!
//! A reader whose bytes still sit in its input pipe (the Linux fast path, [`super::tee`]) cannot
//! queue them: when the pen is taken it queues a *turn* instead ([`Outbox::reserve`]), and the
//! writer hands it the pen when the turn comes up, after everything queued before it. A reader
//! may also keep the pen between batches, while a long line streams through: nothing queued
//! (an injected line) is written until that line has ended.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

/// Bytes queued before a reader stops reading its side.
pub const HIGH_WATER: usize = 1024 * 1024;

/// What waits in the queue.
#[derive(Debug)]
enum Chunk {
    Bytes(Vec<u8>),
    /// The reader's turn: the pen goes to it here ([`Outbox::reserve`]).
    Turn,
}

#[derive(Debug, Default)]
struct Queue {
    chunks: VecDeque<Chunk>,
    bytes: usize,
    /// Someone writes to the pipe now (the writer thread or a reader on the fast path).
    pen: bool,
    /// No more chunks will come: the writer finishes what is queued and closes the pipe.
    closed: bool,
    /// The pipe cannot be written (its reader is gone): chunks are dropped from now on.
    broken: bool,
    /// The writer has returned and the pipe is closed.
    finished: bool,
    /// The writer reached the reader's turn and handed it the pen.
    handed: bool,
}

/// How the pen was had from [`Outbox::reserve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pen {
    /// Taken now.
    Now,
    /// Turn queued: [`Outbox::wait_turn`].
    Queued,
    /// The pipe is broken or closed: nothing more is written through the pen.
    Unavailable,
}

#[derive(Debug)]
pub struct Outbox {
    queue: Mutex<Queue>,
    changed: Condvar,
    /// Written only by the holder of the pen, so this lock is never contended.
    sink: Mutex<Option<File>>,
}

impl Outbox {
    pub fn new(sink: File) -> Outbox {
        Outbox {
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
            sink: Mutex::new(Some(sink)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock()
    }

    fn write_out(&self, bytes: &[u8]) -> bool {
        let mut sink = self.sink.lock();
        sink.as_mut()
            .is_some_and(|file| file.write_all(bytes).is_ok())
    }

    /// Queues a chunk; never blocks.
    pub fn push(&self, chunk: Vec<u8>) {
        if chunk.is_empty() {
            return;
        }
        let mut queue = self.lock();
        if queue.broken || queue.finished {
            return;
        }
        queue.bytes += chunk.len();
        queue.chunks.push_back(Chunk::Bytes(chunk));
        self.changed.notify_all();
    }

    /// Takes the pen now (as [`Outbox::try_direct`]) or queues the caller's turn for it; call it
    /// where a push would have been made (under the state lock). [`Pen::Queued`] is then
    /// followed by [`Outbox::wait_turn`] (after the state lock is released).
    pub fn reserve(&self) -> Pen {
        let mut queue = self.lock();
        if queue.broken || queue.closed {
            return Pen::Unavailable;
        }
        if queue.chunks.is_empty() && !queue.pen {
            queue.pen = true;
            return Pen::Now;
        }
        queue.chunks.push_back(Chunk::Turn);
        self.changed.notify_all();
        Pen::Queued
    }

    /// Waits until the writer reaches the turn queued by [`Outbox::reserve`]; true with the pen
    /// taken, false when the pipe broke first.
    pub fn wait_turn(&self) -> bool {
        let mut queue = self.lock();
        while !queue.handed && !queue.broken {
            self.changed.wait(&mut queue);
        }
        std::mem::take(&mut queue.handed)
    }

    /// Writes with the pen held (taken by [`Outbox::reserve`] or [`Outbox::try_direct`], kept
    /// until [`Outbox::release`]); false once the pipe is broken.
    pub fn write_held(&self, bytes: &[u8]) -> bool {
        if bytes.is_empty() {
            return true;
        }
        let written = self.write_out(bytes);
        if !written {
            self.set_broken();
        }
        written
    }

    /// Runs `with` on the pipe, with the pen held; `None` once the pipe is closed.
    pub fn with_sink<R>(&self, with: impl FnOnce(&File) -> R) -> Option<R> {
        let sink = self.sink.lock();
        sink.as_ref().map(with)
    }

    /// The pipe cannot be written (found by a holder of the pen).
    pub fn set_broken(&self) {
        let mut queue = self.lock();
        queue.broken = true;
        queue.chunks.clear();
        queue.bytes = 0;
        self.changed.notify_all();
    }

    /// Gives the pen back after [`Outbox::write_held`]s.
    pub fn release(&self) {
        let mut queue = self.lock();
        queue.pen = false;
        // Only the writer waits on the pen, and only with something to write (or to close):
        // waking it after every batch would cost two context switches each.
        if !queue.chunks.is_empty() || queue.closed {
            self.changed.notify_all();
        }
    }

    /// Takes the pen when nothing is queued and nobody writes: the caller then writes with
    /// [`Outbox::write_direct`]. Call it where a push would have been made (under the state
    /// lock), so nothing decided later can overtake.
    pub fn try_direct(&self) -> bool {
        let mut queue = self.lock();
        if queue.chunks.is_empty() && !queue.pen && !queue.broken && !queue.closed {
            queue.pen = true;
            return true;
        }
        false
    }

    /// Writes with the pen taken by [`Outbox::try_direct`], then gives it back.
    pub fn write_direct(&self, bytes: &[u8]) {
        let written = self.write_out(bytes);
        let mut queue = self.lock();
        queue.pen = false;
        if !written {
            queue.broken = true;
            queue.chunks.clear();
            queue.bytes = 0;
            self.changed.notify_all();
        } else if !queue.chunks.is_empty() || queue.closed {
            // As in [`Outbox::release`].
            self.changed.notify_all();
        }
    }

    /// Nothing more will be pushed: the pipe closes once the queue is written.
    pub fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }

    /// Waits while more than `limit` bytes are queued (unless the pipe broke).
    pub fn wait_below(&self, limit: usize) {
        let mut queue = self.lock();
        while queue.bytes > limit && !queue.broken {
            self.changed.wait(&mut queue);
        }
    }

    /// Waits until the writer has closed the pipe, at most `limit`; true when it has.
    pub fn wait_finished(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut queue = self.lock();
        while !queue.finished {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            self.changed.wait_for(&mut queue, left);
        }
        true
    }

    /// Whether the pipe's reader went away.
    pub fn is_broken(&self) -> bool {
        self.lock().broken
    }

    /// Writes queued chunks until closed and empty (or the pipe broke), then closes the pipe.
    pub fn run_writer(&self) {
        loop {
            let chunk = {
                let mut queue = self.lock();
                loop {
                    if !queue.pen {
                        match queue.chunks.pop_front() {
                            Some(Chunk::Bytes(chunk)) => {
                                queue.pen = true;
                                break Some(chunk);
                            }
                            Some(Chunk::Turn) => {
                                // The reader's turn: it writes next, then gives the pen back.
                                queue.pen = true;
                                queue.handed = true;
                                self.changed.notify_all();
                                continue;
                            }
                            None => {}
                        }
                        if queue.closed || queue.broken {
                            break None;
                        }
                    }
                    self.changed.wait(&mut queue);
                }
            };
            let Some(chunk) = chunk else { break };
            let written = self.write_out(&chunk);
            let mut queue = self.lock();
            queue.pen = false;
            queue.bytes -= chunk.len();
            if !written {
                queue.broken = true;
                queue.chunks.clear();
                queue.bytes = 0;
            }
            self.changed.notify_all();
        }
        drop(self.sink.lock().take());
        self.lock().finished = true;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn pipe() -> (File, File) {
        let (reader, writer) = std::io::pipe().unwrap();
        (
            File::from(std::os::fd::OwnedFd::from(reader)),
            File::from(std::os::fd::OwnedFd::from(writer)),
        )
    }

    #[test]
    fn queued_and_direct_writes_keep_their_order_and_the_pipe_closes_after_the_last() {
        let (reader, writer) = pipe();
        let outbox = Arc::new(Outbox::new(writer));
        let writer_box = outbox.clone();
        let thread = std::thread::spawn(move || writer_box.run_writer());
        let mut expected = String::new();
        for i in 0..100 {
            let line = format!("{i}\n");
            expected.push_str(&line);
            if i % 3 == 0 && outbox.try_direct() {
                outbox.write_direct(line.as_bytes());
            } else {
                outbox.push(line.into_bytes());
            }
        }
        outbox.close();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut { reader }, &mut text).unwrap();
        thread.join().unwrap();
        assert_eq!(text, expected);
        assert!(outbox.wait_finished(Duration::ZERO));
        assert!(!outbox.try_direct(), "no direct write after close");
    }

    #[test]
    fn a_gone_reader_breaks_the_pipe_and_releases_waiting_readers() {
        let (reader, writer) = pipe();
        drop(reader);
        let outbox = Arc::new(Outbox::new(writer));
        let writer_box = outbox.clone();
        let thread = std::thread::spawn(move || writer_box.run_writer());
        outbox.push(vec![b'x'; 2 * HIGH_WATER]);
        outbox.wait_below(HIGH_WATER);
        thread.join().unwrap();
        assert!(outbox.is_broken());
    }
}
