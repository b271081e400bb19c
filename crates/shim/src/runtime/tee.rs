//! Linux's fast path for a pump whose input is a pipe: the bytes are *duplicated* into a scratch
//! pipe with `tee(2)` and only that copy is read (once) into the shim, for the adapter to look
//! at; the bytes themselves move on from the input pipe with `splice(2)`, page by page, without
//! passing through the shim's memory. A plain read-and-write relay copies every byte twice
//! (pipe → shim → pipe); this copies it once. Lines of our own and lines the adapter drops are
//! handled between splices, at line boundaries, so the order on the wire is what the adapter
//! decided ([`super::Shared::take_lines`]).
//!
//! When the input is no pipe (a socket, a file), [`TeeInput::new`] declines and the pump reads
//! as everywhere else; when the output takes no splice, the batch's bytes are written from the
//! shim's copy instead and the pump reads from then on.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::pipe::{PipeFlags, SpliceFlags};

/// Bytes duplicated (and so looked at) per round: enough that a round's syscalls are few, small
/// enough that the shim's copy stays small.
const TEE_MAX: usize = 256 * 1024;
/// The scratch pipe holds a whole round (a pipe's default 64 KB would cut rounds short).
const SCRATCH_SIZE: usize = 1024 * 1024;

/// An input pipe looked at through a scratch pipe.
#[derive(Debug)]
pub struct TeeInput {
    input: OwnedFd,
    scratch_read: OwnedFd,
    scratch_write: OwnedFd,
    /// Where discarded bytes are spliced to, unread (`/dev/null`), when it can be opened.
    null: Option<OwnedFd>,
    trash: Vec<u8>,
}

impl TeeInput {
    /// The fast path over `input`, or `input` back when it is no pipe (or no scratch pipe can be
    /// made).
    pub fn new(input: OwnedFd) -> Result<TeeInput, OwnedFd> {
        if rustix::pipe::fcntl_getpipe_size(&input).is_err() {
            return Err(input);
        }
        let Ok((scratch_read, scratch_write)) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC) else {
            return Err(input);
        };
        // A smaller scratch pipe only means shorter rounds.
        let _ = rustix::pipe::fcntl_setpipe_size(&scratch_write, SCRATCH_SIZE);
        let null = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .ok();
        Ok(TeeInput {
            input,
            scratch_read,
            scratch_write,
            null,
            trash: Vec::new(),
        })
    }

    /// The input, for reading it plainly from now on.
    pub fn into_input(self) -> OwnedFd {
        self.input
    }

    /// Waits for bytes in the input and appends a copy of them to `buf`; they stay in the input
    /// until spliced or discarded. 0 at the input's end.
    pub fn peek(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        let teed = loop {
            match rustix::pipe::tee(
                &self.input,
                &self.scratch_write,
                TEE_MAX,
                SpliceFlags::empty(),
            ) {
                Ok(n) => break n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        };
        buf.reserve(teed);
        let mut left = teed;
        while left > 0 {
            // The scratch pipe holds exactly the bytes just duplicated, so a read never takes
            // more than `left`.
            match rustix::io::read(&self.scratch_read, rustix::buffer::spare_capacity(buf)) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(got) => left = left.saturating_sub(got),
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(teed)
    }

    /// Moves `len` bytes from the front of the input to `out`. On an error, the bytes moved
    /// before it are counted in the `usize`.
    pub fn splice_to(&self, out: BorrowedFd<'_>, len: usize) -> (usize, Option<Errno>) {
        let mut moved = 0;
        while moved < len {
            match rustix::pipe::splice(&self.input, None, out, None, len - moved, SpliceFlags::MOVE)
            {
                // The bytes are in the input (they were peeked): none coming means no input.
                Ok(0) => return (moved, Some(Errno::IO)),
                Ok(n) => moved += n,
                Err(Errno::INTR) => {}
                Err(e) => return (moved, Some(e)),
            }
        }
        (moved, None)
    }

    /// Drops `len` bytes from the front of the input (their copy was peeked already): spliced
    /// into `/dev/null`, else read.
    pub fn discard(&mut self, len: usize) -> io::Result<()> {
        let mut left = len;
        if let Some(null) = &self.null {
            let (moved, error) = self.splice_to(null.as_fd(), left);
            left -= moved;
            if error.is_some() {
                self.null = None;
            }
        }
        self.trash.resize(left.min(64 * 1024), 0);
        while left > 0 {
            let chunk = left.min(self.trash.len());
            match rustix::io::read(self.input.as_fd(), &mut self.trash[..chunk]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => left -= n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
