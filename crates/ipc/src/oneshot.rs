//! A plain blocking client for a CLI command that asks the daemon one or two things and exits:
//! no async runtime, no reader task, `hello` and the first request sent in one write. It makes
//! the same checks as [`crate::connect`] (the home verified, the socket ours, the peer running
//! as us) and never starts a daemon.
//!
//! It is also the one client that can read an answer's trailer: `index_listing` is answered by
//! a frame and then the listing's own bytes, which [`OneShot::call_with_trailer`] copies to a
//! writer as they arrive.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cross_agent_protocol::rpc::{
    ClientKind, HelloParams, HelloResponse, Method, PROTOCOL_VERSION, RequestId, ServerMessage,
};

use crate::error::{Error, Result};
use crate::frame::{self, MAX_REPLY_BYTES};
use cross_agent_home::Home;

/// A connection that has said `hello` (or has it on the way: see [`OneShot::connect`]).
#[derive(Debug)]
pub struct OneShot {
    socket: PathBuf,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
    /// `hello`'s id, until its answer has been read.
    hello_pending: Option<RequestId>,
    hello: Option<HelloResponse>,
    hello_timeout: Duration,
}

impl OneShot {
    /// Connects to the daemon of `home` and sends `hello`; its answer is read with the first
    /// call's (one round trip for both), within `hello_timeout`. No daemon answering is
    /// [`Error::NotRunning`].
    pub fn connect(home: &Home, kind: ClientKind, hello_timeout: Duration) -> Result<OneShot> {
        home.verify()?;
        let socket = home.socket();
        let stream = connect(&socket)?;
        let writer = stream
            .try_clone()
            .map_err(|source| transport(&socket, source))?;
        let mut client = OneShot {
            socket,
            reader: BufReader::with_capacity(256 << 10, stream),
            writer,
            next_id: 1,
            hello_pending: None,
            hello: None,
            hello_timeout,
        };
        let id = client.send(HelloParams {
            protocol_version: PROTOCOL_VERSION,
            client_kind: kind,
            client_pid: std::process::id(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
        })?;
        client.hello_pending = Some(id);
        Ok(client)
    }

    /// What the daemon said in `hello` (read now if it was not yet).
    pub fn hello(&mut self) -> Result<&HelloResponse> {
        self.finish_hello()?;
        self.hello.as_ref().ok_or_else(|| self.closed())
    }

    /// Calls one method and waits for its answer.
    pub fn call<M: Method>(&mut self, params: M) -> Result<M::Response> {
        let id = self.send(params)?;
        self.finish_hello()?;
        self.answer::<M>(id)
    }

    /// Calls a method whose answer is followed by a trailer of `trailer_len(&answer)` bytes,
    /// and copies that trailer to `sink` as it arrives. An error of the sink (a closed pipe, a
    /// full disk) is [`Error::Io`]; the connection is then of no further use.
    pub fn call_with_trailer<M: Method>(
        &mut self,
        params: M,
        trailer_len: impl FnOnce(&M::Response) -> u64,
        sink: &mut dyn Write,
    ) -> Result<M::Response> {
        let answer = self.call(params)?;
        let want = trailer_len(&answer);
        let mut trailer = (&mut self.reader).take(want);
        let mut sink = Sink {
            inner: sink,
            failed: false,
        };
        let copied = std::io::copy(&mut trailer, &mut sink).map_err(|source| {
            if sink.failed {
                Error::io("write the answer to", Path::new("the output"), source)
            } else {
                transport(&self.socket, source)
            }
        })?;
        if copied != want {
            return Err(self.closed());
        }
        Ok(answer)
    }

    fn send<M: Method>(&mut self, params: M) -> Result<RequestId> {
        let id = RequestId(self.next_id);
        self.next_id += 1;
        let bytes = frame::encode_call(id, params)?;
        self.writer
            .write_all(&bytes)
            .map_err(|source| match source.kind() {
                ErrorKind::BrokenPipe | ErrorKind::ConnectionReset => self.closed(),
                _ => transport(&self.socket, source),
            })?;
        Ok(id)
    }

    fn finish_hello(&mut self) -> Result<()> {
        let Some(id) = self.hello_pending.take() else {
            return Ok(());
        };
        self.set_timeout(Some(self.hello_timeout))?;
        let hello = self.answer::<HelloParams>(id).map_err(|e| match e {
            Error::Transport { source, .. }
                if matches!(source.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                Error::Timeout {
                    what: "the daemon's hello",
                    socket: self.socket.clone(),
                    waited: self.hello_timeout,
                }
            }
            other => other,
        })?;
        self.set_timeout(None)?;
        if hello.protocol_version != PROTOCOL_VERSION {
            return Err(Error::ProtocolMismatch {
                client: PROTOCOL_VERSION,
                daemon: hello.protocol_version,
                daemon_pid: hello.daemon_pid,
                daemon_version: hello.daemon_version,
            });
        }
        self.hello = Some(hello);
        Ok(())
    }

    fn set_timeout(&self, limit: Option<Duration>) -> Result<()> {
        self.reader
            .get_ref()
            .set_read_timeout(limit)
            .map_err(|source| transport(&self.socket, source))
    }

    /// Reads frames until the answer to `id` (answers come in order; one to another id, which
    /// this client never leaves waiting, is skipped).
    fn answer<M: Method>(&mut self, id: RequestId) -> Result<M::Response> {
        loop {
            let frame = self.next_frame()?;
            let message: ServerMessage = frame::decode(&frame)?;
            match message {
                ServerMessage::Response { id: got, result } if got == id => {
                    return serde_json::from_value(result)
                        .map_err(|source| Error::Malformed { source });
                }
                ServerMessage::Error {
                    id: Some(got),
                    error,
                } if got == id => return Err(crate::client::rpc_error(M::NAME, error)),
                _ => continue,
            }
        }
    }

    fn next_frame(&mut self) -> Result<Vec<u8>> {
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = (&mut self.reader)
                .take(MAX_REPLY_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .map_err(|source| transport(&self.socket, source))?;
            if n == 0 {
                return Err(self.closed());
            }
            if line.last() != Some(&b'\n') {
                return Err(if n > MAX_REPLY_BYTES {
                    Error::FrameTooLarge {
                        limit: MAX_REPLY_BYTES,
                    }
                } else {
                    self.closed()
                });
            }
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Ok(line);
            }
        }
    }

    fn closed(&self) -> Error {
        Error::Closed {
            socket: self.socket.clone(),
        }
    }
}

/// The trailer's writer, remembering whether an error was its own (not the socket's).
struct Sink<'a> {
    inner: &'a mut dyn Write,
    failed: bool,
}

impl Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf).inspect_err(|_| self.failed = true)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().inspect_err(|_| self.failed = true)
    }
}

fn transport(socket: &Path, source: std::io::Error) -> Error {
    Error::Transport {
        socket: socket.to_owned(),
        source,
    }
}

/// Connects as [`crate::transport::connect`] does, blocking: the socket checked first, the
/// peer's user after.
fn connect(socket: &Path) -> Result<UnixStream> {
    crate::transport::check_length(socket)?;
    if !cross_agent_home::safety::check_socket(socket)? {
        return Err(Error::NotRunning {
            socket: socket.to_owned(),
        });
    }
    let stream = UnixStream::connect(socket).map_err(|source| match source.kind() {
        ErrorKind::NotFound | ErrorKind::ConnectionRefused => Error::NotRunning {
            socket: socket.to_owned(),
        },
        _ => Error::Connect {
            socket: socket.to_owned(),
            source,
        },
    })?;
    cross_agent_home::safety::check_peer(socket, peer_uid(&stream, socket)?)?;
    Ok(stream)
}

/// The user the listening process runs as.
fn peer_uid(stream: &UnixStream, socket: &Path) -> Result<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        rustix::net::sockopt::socket_peercred(stream)
            .map(|cred| cred.uid.as_raw())
            .map_err(|e| Error::Connect {
                socket: socket.to_owned(),
                source: e.into(),
            })
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        // No peer-credentials call in std or rustix here: tokio's (getpeereid) on a clone.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(Error::Runtime)?;
        let _entered = runtime.enter();
        let clone = stream.try_clone().map_err(|source| Error::Connect {
            socket: socket.to_owned(),
            source,
        })?;
        clone
            .set_nonblocking(true)
            .map_err(|source| Error::Connect {
                socket: socket.to_owned(),
                source,
            })?;
        let tokio_stream =
            tokio::net::UnixStream::from_std(clone).map_err(|source| Error::Connect {
                socket: socket.to_owned(),
                source,
            })?;
        let uid = tokio_stream.peer_cred().map(|cred| cred.uid());
        drop(tokio_stream);
        // The clone shares the open file's flags: blocking again for the reads to come.
        stream
            .set_nonblocking(false)
            .map_err(|source| Error::Connect {
                socket: socket.to_owned(),
                source,
            })?;
        uid.map_err(|source| Error::Connect {
            socket: socket.to_owned(),
            source,
        })
    }
}
