//! The daemon's end of a shim's socket: one [`ShimRequest`] line out, [`ShimEvent`] lines back
//! until the shim closes. Blocking, with every wait bounded: the engine calls it on its blocking
//! pool. Before a byte of payload moves the socket must be this user's (no link), and so must
//! the process listening on it — the same two checks a client makes of the daemon's socket.
//!
//! Hand-written over std's `UnixStream` because a bounded connect needs a non-blocking
//! `connect(2)` (rustix), and the peer's uid `SO_PEERCRED` (rustix: std's is unstable).

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cross_agent_protocol::panel::{PanelRegistration, ShimEvent, ShimRequest};
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

/// How long a shim has to take the connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a shim has to read the request line.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a shim has to answer `status`; one that does not is treated as gone.
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(2);
/// An event line longer than this is not one.
const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

/// Why a shim could not be talked to.
#[derive(Debug, thiserror::Error)]
pub enum ShimError {
    /// The socket is not this user's, not a socket, or a link; or whoever listens is another
    /// user. Nothing was written.
    #[error("the shim socket {socket} is not safe to use: {problem}")]
    Unsafe { socket: PathBuf, problem: String },
    /// Nobody answered at the socket in time, or the connection broke.
    #[error("the shim at {socket} does not answer: {source}")]
    Unreachable {
        socket: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The shim wrote something that is not an event.
    #[error("the shim at {socket} wrote a line that is not an event: {problem}")]
    Garbled { socket: PathBuf, problem: String },
}

/// What reading the next event gave.
#[derive(Debug)]
pub enum Next {
    Event(ShimEvent),
    /// The wait ran out with no event; the connection stays open.
    Quiet,
    /// The shim closed the connection (or its process went away).
    Closed,
}

/// One request's connection to a shim.
#[derive(Debug)]
pub struct ShimConnection {
    socket: PathBuf,
    reader: BufReader<UnixStream>,
}

/// Connects to `socket`, checks both ends are this user's, and writes `request`.
pub fn open(socket: &Path, request: &ShimRequest) -> Result<ShimConnection, ShimError> {
    check_socket_file(socket)?;
    let stream = connect(socket, CONNECT_TIMEOUT)?;
    check_peer(socket, &stream)?;
    let unreachable = |source| ShimError::Unreachable {
        socket: socket.to_owned(),
        source,
    };
    let mut line = serde_json::to_vec(request).map_err(|e| ShimError::Garbled {
        socket: socket.to_owned(),
        problem: e.to_string(),
    })?;
    line.push(b'\n');
    stream
        .set_write_timeout(Some(WRITE_TIMEOUT))
        .map_err(unreachable)?;
    (&stream).write_all(&line).map_err(unreachable)?;
    Ok(ShimConnection {
        socket: socket.to_owned(),
        reader: BufReader::new(stream),
    })
}

impl ShimConnection {
    /// The next event, waiting at most `wait`.
    pub fn next(&mut self, wait: Duration) -> Result<Next, ShimError> {
        let socket = self.socket.clone();
        let unreachable = |source| ShimError::Unreachable {
            socket: socket.clone(),
            source,
        };
        self.reader
            .get_ref()
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .map_err(unreachable)?;
        let mut line = Vec::new();
        loop {
            let mut limited = (&mut self.reader).take(MAX_LINE_BYTES);
            match limited.read_until(b'\n', &mut line) {
                Ok(0) if line.is_empty() => return Ok(Next::Closed),
                Ok(_) if line.ends_with(b"\n") || limited.limit() == 0 => break,
                // End of stream after a partial line: take what came.
                Ok(0) => break,
                Ok(_) => {}
                Err(error)
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    // A line half read is kept for the next wait.
                    if line.is_empty() {
                        return Ok(Next::Quiet);
                    }
                }
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(error) if error.kind() == ErrorKind::ConnectionReset => {
                    return Ok(Next::Closed);
                }
                Err(error) => return Err(unreachable(error)),
            }
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            return self.next(wait);
        }
        serde_json::from_str(text.trim())
            .map(Next::Event)
            .map_err(|e| ShimError::Garbled {
                socket: self.socket.clone(),
                problem: e.to_string(),
            })
    }
}

/// Asks a shim for its registration as it sees it now: the probe of whether a panel is there.
/// A shim that does not answer within [`STATUS_TIMEOUT`] is treated as gone.
pub fn status(socket: &Path) -> Result<PanelRegistration, ShimError> {
    let mut connection = open(socket, &ShimRequest::Status)?;
    let deadline = Instant::now() + STATUS_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ShimError::Unreachable {
                socket: socket.to_owned(),
                source: std::io::Error::new(ErrorKind::TimedOut, "no status within 2 s"),
            });
        }
        match connection.next(left)? {
            Next::Event(ShimEvent::Status { registration }) => return Ok(registration),
            Next::Event(_) | Next::Quiet => {}
            Next::Closed => {
                return Err(ShimError::Unreachable {
                    socket: socket.to_owned(),
                    source: std::io::Error::new(
                        ErrorKind::UnexpectedEof,
                        "closed without a status",
                    ),
                });
            }
        }
    }
}

fn unsafe_socket(socket: &Path, problem: String) -> ShimError {
    ShimError::Unsafe {
        socket: socket.to_owned(),
        problem,
    }
}

fn check_socket_file(socket: &Path) -> Result<(), ShimError> {
    let meta = std::fs::symlink_metadata(socket).map_err(|source| ShimError::Unreachable {
        socket: socket.to_owned(),
        source,
    })?;
    if meta.file_type().is_symlink() {
        return Err(unsafe_socket(socket, "it is a symbolic link".into()));
    }
    if !meta.file_type().is_socket() {
        return Err(unsafe_socket(socket, "it is not a socket".into()));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(unsafe_socket(
            socket,
            format!("it is owned by uid {}, not by you (uid {me})", meta.uid()),
        ));
    }
    Ok(())
}

fn check_peer(socket: &Path, stream: &UnixStream) -> Result<(), ShimError> {
    let credentials =
        rustix::net::sockopt::socket_peercred(stream).map_err(|e| ShimError::Unreachable {
            socket: socket.to_owned(),
            source: e.into(),
        })?;
    let me = rustix::process::geteuid().as_raw();
    let peer = credentials.uid.as_raw();
    if peer != me {
        return Err(unsafe_socket(
            socket,
            format!("the process listening there runs as uid {peer}, not as you (uid {me})"),
        ));
    }
    Ok(())
}

/// A non-blocking `connect(2)`, retried until `timeout`: a Unix socket whose listener's backlog
/// is full says `EAGAIN` instead of making the caller wait without bound.
fn connect(socket: &Path, timeout: Duration) -> Result<UnixStream, ShimError> {
    let unreachable = |source: std::io::Error| ShimError::Unreachable {
        socket: socket.to_owned(),
        source,
    };
    let address = SocketAddrUnix::new(socket).map_err(|e| unreachable(e.into()))?;
    let deadline = Instant::now() + timeout;
    loop {
        let fd: OwnedFd = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| unreachable(e.into()))?;
        match rustix::net::connect(&fd, &address) {
            Ok(()) => {
                let stream = UnixStream::from(fd);
                stream.set_nonblocking(false).map_err(unreachable)?;
                return Ok(stream);
            }
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR)
                if Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => return Err(unreachable(error.into())),
        }
    }
}
