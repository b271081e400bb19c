//! The daemon RPC client: one connection, many requests in flight, answers matched by id.
//!
//! A background task reads the daemon's frames and hands each answer to the call waiting for
//! its id, so an MCP server can forward concurrent tool calls over one connection. When the
//! connection ends, every waiting call fails with [`Error::Closed`] rather than hanging.
//!
//! The byte stream under it is any pair of halves ([`Client::from_io`]): the daemon's socket
//! here, or the pipes of `ssh <host> cross-agent rpc --stdio` for the link to another machine's
//! daemon (crate `hosts`), so a call over the link is the same call as a local one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cross_agent_protocol::rpc::{
    ClientKind, ErrorCode, HelloParams, HelloResponse, Method, PROTOCOL_VERSION,
    ProtocolMismatchData, RequestId, RpcError, ServerMessage,
};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::{Error, Result};
use crate::frame::{self, FrameReader, ReadError};
use crate::transport::{self, Stream};

type Answer = std::result::Result<serde_json::Value, RpcError>;

#[derive(Default)]
struct Pending {
    waiting: HashMap<RequestId, oneshot::Sender<Answer>>,
    /// Set once the reader has stopped; no new call may wait after that.
    closed: bool,
}

/// The writing half of whatever carries the frames.
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// A connection to the daemon. Dropping it closes the connection.
pub struct Client {
    socket: PathBuf,
    writer: tokio::sync::Mutex<Writer>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
    reader: JoinHandle<()>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("socket", &self.socket)
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("waiting", &self.waiting.len())
            .field("closed", &self.closed)
            .finish()
    }
}

impl Client {
    /// Connects to the socket without the handshake. Most callers want
    /// [`crate::connect_or_start`], which also says `hello`.
    pub async fn connect(socket: &Path) -> Result<Client> {
        let stream = transport::connect(socket).await?;
        Ok(Client::from_stream(stream, socket))
    }

    /// Wraps an already connected stream.
    pub fn from_stream(stream: Stream, socket: &Path) -> Client {
        let (read, write) = stream.into_split();
        Client::from_io(read, write, socket)
    }

    /// A client over any reading and writing half that carry the daemon's frames (a child's
    /// stdout and stdin, say). `peer` names the other end in errors, where a socket's path
    /// would be. Must be called inside a tokio runtime.
    pub fn from_io<R, W>(read: R, write: W, peer: &Path) -> Client
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let socket = peer;
        let pending = Arc::new(Mutex::new(Pending::default()));
        let reader = tokio::spawn(read_answers(
            FrameReader::with_limit(BufReader::new(read), frame::MAX_REPLY_BYTES),
            Arc::clone(&pending),
            socket.to_owned(),
        ));
        Client {
            socket: socket.to_owned(),
            writer: tokio::sync::Mutex::new(Box::new(write)),
            pending,
            next_id: AtomicU64::new(1),
            reader,
        }
    }

    /// The socket this client is connected to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The handshake with this build's protocol version. A daemon of another version is
    /// [`Error::ProtocolMismatch`], naming both.
    pub async fn hello(&self, kind: ClientKind) -> Result<HelloResponse> {
        let response = self
            .call(HelloParams {
                protocol_version: PROTOCOL_VERSION,
                client_kind: kind,
                client_pid: std::process::id(),
                client_version: env!("CARGO_PKG_VERSION").to_owned(),
            })
            .await?;
        if response.protocol_version != PROTOCOL_VERSION {
            return Err(Error::ProtocolMismatch {
                client: PROTOCOL_VERSION,
                daemon: response.protocol_version,
                daemon_pid: response.daemon_pid,
                daemon_version: response.daemon_version,
            });
        }
        Ok(response)
    }

    /// Calls one method and waits for its answer.
    pub async fn call<M: Method>(&self, params: M) -> Result<M::Response> {
        let id = RequestId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let bytes = frame::encode_call(id, params)?;

        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock();
            if pending.closed {
                return Err(self.closed());
            }
            pending.waiting.insert(id, tx);
        }
        let written = {
            let mut writer = self.writer.lock().await;
            match writer.write_all(&bytes).await {
                Ok(()) => writer.flush().await,
                Err(e) => Err(e),
            }
        };
        if let Err(source) = written {
            self.pending.lock().waiting.remove(&id);
            return Err(match source.kind() {
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset => {
                    self.closed()
                }
                _ => Error::Transport {
                    socket: self.socket.clone(),
                    source,
                },
            });
        }

        match rx.await {
            Ok(Ok(value)) => {
                serde_json::from_value(value).map_err(|source| Error::Malformed { source })
            }
            Ok(Err(error)) => Err(rpc_error(M::NAME, error)),
            Err(_) => Err(self.closed()),
        }
    }

    fn closed(&self) -> Error {
        Error::Closed {
            socket: self.socket.clone(),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Turns the daemon's error into this crate's, lifting a protocol mismatch into its own variant.
pub(crate) fn rpc_error(method: &'static str, error: RpcError) -> Error {
    if error.code == ErrorCode::ProtocolMismatch
        && let Some(data) = error
            .data
            .as_ref()
            .and_then(|d| serde_json::from_value::<ProtocolMismatchData>(d.clone()).ok())
    {
        return Error::ProtocolMismatch {
            client: data.client_protocol_version,
            daemon: data.daemon_protocol_version,
            daemon_pid: data.daemon_pid,
            daemon_version: data.daemon_version,
        };
    }
    Error::Rpc {
        method,
        code: error.code,
        message: error.message,
    }
}

async fn read_answers<R>(mut frames: FrameReader<R>, pending: Arc<Mutex<Pending>>, socket: PathBuf)
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    loop {
        let frame = match frames.next_frame().await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(ReadError::TooLarge { limit }) => {
                tracing::warn!(socket = %socket.display(), limit, "skipped an over-long frame from the daemon");
                continue;
            }
            Err(ReadError::Io(error)) => {
                tracing::debug!(socket = %socket.display(), %error, "daemon connection failed");
                break;
            }
        };
        let message: ServerMessage = match frame::decode(&frame) {
            Ok(message) => message,
            Err(error) => {
                tracing::warn!(socket = %socket.display(), %error, "unreadable frame from the daemon");
                continue;
            }
        };
        let (id, answer) = match message {
            ServerMessage::Response { id, result } => (id, Ok(result)),
            ServerMessage::Error {
                id: Some(id),
                error,
            } => (id, Err(error)),
            ServerMessage::Error { id: None, error } => {
                // Only a frame the daemon could not read has no id; this client never sends
                // one, so it is logged rather than pinned on some unrelated call.
                tracing::warn!(socket = %socket.display(), %error, "daemon reported an unreadable request");
                continue;
            }
        };
        let waiter = pending.lock().waiting.remove(&id);
        match waiter {
            Some(tx) => {
                let _ = tx.send(answer);
            }
            None => tracing::debug!(%id, "answer for a request nobody waits for"),
        }
    }
    let mut pending = pending.lock();
    pending.closed = true;
    // Dropping the senders wakes every waiting call with `Closed`.
    pending.waiting.clear();
}
