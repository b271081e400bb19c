//! An ordered queue of bytes for one pipe (the agent's stdin, or the extension's end of our
//! stdout) and the thread that writes it.
//!
//! Every producer — the reader of the other side, an injection from the socket, a tick — pushes
//! while it holds the shim's state lock, so what the adapter decided is written in the order it
//! decided it; pushing never blocks, so no lock is ever held across a write to a pipe whose
//! reader might itself be waiting on us. The readers alone wait, outside the lock, while more
//! than [`HIGH_WATER`] bytes are queued: that is the back-pressure a plain pipe gives, and what
//! keeps the shim's memory small when one end is slow.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Bytes queued before a reader stops reading its side.
pub const HIGH_WATER: usize = 1024 * 1024;

#[derive(Debug, Default)]
struct Queue {
    chunks: VecDeque<Vec<u8>>,
    bytes: usize,
    /// No more chunks will come: the writer finishes what is queued and closes the pipe.
    closed: bool,
    /// The pipe cannot be written (its reader is gone): chunks are dropped from now on.
    broken: bool,
    /// The writer has returned.
    finished: bool,
}

#[derive(Debug, Default)]
pub struct Outbox {
    queue: Mutex<Queue>,
    changed: Condvar,
}

impl Outbox {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// Waits until the writer has returned, at most `limit`; true when it has.
    pub fn wait_finished(&self, limit: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + limit;
        let mut queue = self.lock();
        while !queue.finished {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
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

    /// Writes queued chunks to `sink` until closed and empty, or until a write fails; then
    /// drops `sink`, which closes the pipe.
    pub fn run_writer(&self, mut sink: impl Write) {
        loop {
            let chunk = {
                let mut queue = self.lock();
                loop {
                    if let Some(chunk) = queue.chunks.pop_front() {
                        break Some(chunk);
                    }
                    if queue.closed {
                        break None;
                    }
                    queue = self
                        .changed
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            let Some(chunk) = chunk else { break };
            let written = sink.write_all(&chunk).and_then(|()| sink.flush());
            let mut queue = self.lock();
            queue.bytes -= chunk.len();
            if written.is_err() {
                queue.broken = true;
                queue.chunks.clear();
                queue.bytes = 0;
                self.changed.notify_all();
                break;
            }
            self.changed.notify_all();
        }
        drop(sink);
        self.lock().finished = true;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn chunks_are_written_in_order_and_the_pipe_closed_after_the_last() {
        let outbox = Arc::new(Outbox::default());
        let (reader, writer) = std::io::pipe().unwrap();
        let writer_box = outbox.clone();
        let thread = std::thread::spawn(move || writer_box.run_writer(writer));
        for i in 0..100 {
            outbox.push(format!("{i}\n").into_bytes());
        }
        outbox.close();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut { reader }, &mut text).unwrap();
        thread.join().unwrap();
        let expected: String = (0..100).map(|i| format!("{i}\n")).collect();
        assert_eq!(text, expected);
        assert!(outbox.wait_finished(std::time::Duration::ZERO));
    }

    #[test]
    fn a_gone_reader_breaks_the_pipe_and_releases_waiting_readers() {
        let outbox = Arc::new(Outbox::default());
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let writer_box = outbox.clone();
        let thread = std::thread::spawn(move || writer_box.run_writer(writer));
        outbox.push(vec![b'x'; 2 * HIGH_WATER]);
        outbox.wait_below(HIGH_WATER);
        thread.join().unwrap();
        assert!(outbox.is_broken());
    }
}
