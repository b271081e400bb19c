//! Linux's fast path for a pump whose input is a pipe: the bytes are *duplicated* into a scratch
//! pipe with `tee(2)` and only that copy is read (once) into the shim, for the adapter to look
//! at; the bytes themselves move on from the input pipe with `splice(2)`, page by page, without
//! passing through the shim's memory. A plain read-and-write relay copies every byte twice
//! (pipe → shim → pipe); this copies it once. Lines of our own and lines the adapter drops are
//! handled between splices, at line boundaries, so the order on the wire is what the adapter
//! decided ([`super::Shared::take_lines`]). A line that must be whole before it goes on waits in
//! a pipe of ours (the *park*, up to 256 KB; beyond that in the shim's copy) and is spliced on
//! from there; bytes of dropped lines are spliced into `/dev/null`.
//!
//! The four pipes of a panel session (the extension's two, the agent's two) are widened to
//! [`PIPE_SIZE`] ([`widen`]): each wake-up of the extension, the shim and the agent then moves
//! up to 256 KB instead of 64 KB. Measured (`benches/shim.rs`, a quiet machine): 80 % of the
//! plain pipe against 62–64 % for the same shim with the pipes as made; 1 MB pipes were no
//! faster and charge four times as much to the user's pipe quota.
//!
//! When the input is no pipe (a socket, a file), [`TeeInput::new`] declines and the pump reads
//! as everywhere else; when the output takes no splice, the batch's bytes are written from the
//! shim's copy instead and the pump reads from then on.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::pipe::{PipeFlags, SpliceFlags};

/// Bytes duplicated (and so looked at) per round, at most: a round takes what the input holds.
const TEE_MAX: usize = 1024 * 1024;
/// The park's size: a held line up to this long moves on without a copy, a longer one's rest
/// waits in the shim's copy. Kept small because a widened pipe is charged to the user's pipe
/// quota (`/proc/sys/fs/pipe-user-pages-soft`, 64 MB) for as long as the shim lives.
const PARK_SIZE: usize = 256 * 1024;

/// What [`widen`] makes a pipe. The kernel charges a pipe's size to its creator's quota
/// (`/proc/sys/fs/pipe-user-pages-soft`, 64 MB, past which that user's new pipes get 8 KB): four
/// pipes of 256 KB are 1 MB per panel session, three quarters of it more than the pipes as made.
pub const PIPE_SIZE: usize = 256 * 1024;

/// Widens `fd` to [`PIPE_SIZE`] when it is a narrower pipe; anything else (a socket, a file, a
/// pipe already as wide, a refusal) is left as it is.
pub fn widen(fd: BorrowedFd<'_>) {
    if let Ok(size) = rustix::pipe::fcntl_getpipe_size(fd)
        && size < PIPE_SIZE
    {
        let _ = rustix::pipe::fcntl_setpipe_size(fd, PIPE_SIZE);
    }
}

/// An input pipe looked at through a scratch pipe.
#[derive(Debug)]
pub struct TeeInput {
    input: OwnedFd,
    scratch_read: OwnedFd,
    scratch_write: OwnedFd,
    /// Where discarded bytes are spliced to, unread (`/dev/null`), when it can be opened.
    null: Option<OwnedFd>,
    /// A pipe of ours where the bytes of a line held until it ends wait (read end, write end),
    /// made when first needed, so they too move without a copy.
    park: Option<(OwnedFd, OwnedFd)>,
    /// The park could not be made: held bytes are only in the shim's copy.
    no_park: bool,
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
        // The scratch pipe takes a copy of everything the input holds (a round), and no more:
        // widened only when the input is wider than a new pipe (an error means shorter rounds).
        if let (Ok(wanted), Ok(has)) = (
            rustix::pipe::fcntl_getpipe_size(&input),
            rustix::pipe::fcntl_getpipe_size(&scratch_write),
        ) && wanted > has
        {
            let _ = rustix::pipe::fcntl_setpipe_size(&scratch_write, wanted);
        }
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
            park: None,
            no_park: false,
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
        splice_all(self.input.as_fd(), out, len)
    }

    /// Drops `len` bytes from the front of the input (their copy was peeked already).
    pub fn discard(&mut self, len: usize) -> io::Result<()> {
        drain(self.input.as_fd(), len, &mut self.null, &mut self.trash)
    }

    /// Moves up to `len` bytes from the front of the input into the park, as many as it has
    /// room for (never waiting); how many moved.
    pub fn park(&mut self, len: usize) -> usize {
        if self.park.is_none() && !self.no_park {
            match rustix::pipe::pipe_with(PipeFlags::CLOEXEC) {
                Ok((read, write)) => {
                    let _ = rustix::pipe::fcntl_setpipe_size(&write, PARK_SIZE);
                    self.park = Some((read, write));
                }
                Err(_) => self.no_park = true,
            }
        }
        let Some((_, park)) = &self.park else {
            return 0;
        };
        let mut moved = 0;
        while moved < len {
            let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
            match rustix::pipe::splice(&self.input, None, park, None, len - moved, flags) {
                Ok(0) => break,
                Ok(n) => moved += n,
                Err(Errno::INTR) => {}
                // Full (`EAGAIN`) or anything else: the rest stays in the input.
                Err(_) => break,
            }
        }
        moved
    }

    /// Moves `len` bytes from the front of the park to `out` (as [`TeeInput::splice_to`]).
    pub fn unpark_to(&self, out: BorrowedFd<'_>, len: usize) -> (usize, Option<Errno>) {
        match &self.park {
            Some((park, _)) => splice_all(park.as_fd(), out, len),
            None => (0, Some(Errno::BADF)),
        }
    }

    /// Drops `len` bytes from the front of the park.
    pub fn unpark_discard(&mut self, len: usize) -> io::Result<()> {
        match &self.park {
            Some((park, _)) => drain(park.as_fd(), len, &mut self.null, &mut self.trash),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }
}

/// Moves `len` bytes from the pipe `from` to `out`, waiting as a write would. On an error, the
/// bytes moved before it are counted in the `usize`.
fn splice_all(from: BorrowedFd<'_>, out: BorrowedFd<'_>, len: usize) -> (usize, Option<Errno>) {
    let mut moved = 0;
    while moved < len {
        match rustix::pipe::splice(from, None, out, None, len - moved, SpliceFlags::MOVE) {
            // The bytes are in the pipe (they were peeked): none coming means it failed.
            Ok(0) => return (moved, Some(Errno::IO)),
            Ok(n) => moved += n,
            Err(Errno::INTR) => {}
            Err(e) => return (moved, Some(e)),
        }
    }
    (moved, None)
}

/// Drops `len` bytes from the front of the pipe `from`: spliced into `/dev/null` (`null`, given
/// up on its first error), else read into `trash`.
fn drain(
    from: BorrowedFd<'_>,
    len: usize,
    null: &mut Option<OwnedFd>,
    trash: &mut Vec<u8>,
) -> io::Result<()> {
    let mut left = len;
    if let Some(sink) = null {
        let (moved, error) = splice_all(from, sink.as_fd(), left);
        left -= moved;
        if error.is_some() {
            *null = None;
        }
    }
    trash.resize(left.min(64 * 1024), 0);
    while left > 0 {
        let chunk = left.min(trash.len());
        match rustix::io::read(from, &mut trash[..chunk]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => left -= n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
