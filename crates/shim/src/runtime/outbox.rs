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

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Bytes queued before a reader stops reading its side.
pub const HIGH_WATER: usize = 1024 * 1024;

#[derive(Debug, Default)]
struct Queue {
    chunks: VecDeque<Vec<u8>>,
    bytes: usize,
    /// Someone writes to the pipe now (the writer thread or a reader on the fast path).
    pen: bool,
    /// No more chunks will come: the writer finishes what is queued and closes the pipe.
    closed: bool,
    /// The pipe cannot be written (its reader is gone): chunks are dropped from now on.
    broken: bool,
    /// The writer has returned and the pipe is closed.
    finished: bool,
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
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_out(&self, bytes: &[u8]) -> bool {
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
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
        queue.chunks.push_back(chunk);
        self.changed.notify_all();
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
        }
        self.changed.notify_all();
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
            queue = self
                .changed
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
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
            queue = self
                .changed
                .wait_timeout(queue, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
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
                        if let Some(chunk) = queue.chunks.pop_front() {
                            queue.pen = true;
                            break Some(chunk);
                        }
                        if queue.closed || queue.broken {
                            break None;
                        }
                    }
                    queue = self
                        .changed
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
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
        drop(
            self.sink
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
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
