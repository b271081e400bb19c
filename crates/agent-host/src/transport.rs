//! `ahp::Transport` over a WebSocket on the host's Unix socket.
//!
//! `ahp-ws` only dials TCP (and pulls in a TLS stack); VS Code's editor host listens on a Unix
//! socket, so this is the small adapter `docs/observed/copilot.md` §5.3 describes: one JSON-RPC
//! message per text frame, the token in the `tkn` query parameter of the upgrade request.
//!
//! `ahp`'s drive loop only logs why a transport ended; the reason is kept in a [`CloseReason`]
//! shared with the connection, so that the error a caller sees can say it (a frame over the size
//! limit, the host closing, an I/O error).

use std::path::Path;
use std::sync::Arc;

use ahp::{TransportError, TransportMessage};
use futures_util::{SinkExt as _, StreamExt as _};
use parking_lot::Mutex;
use tokio::net::UnixStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::token::ConnectionToken;

/// The largest message (and frame) accepted from a host: 8 MiB. A bigger one ends the
/// connection instead of growing memory without bound (tungstenite's own default is 64 MiB).
pub const MAX_MESSAGE_BYTES: usize = 8 << 20;

/// Why the WebSocket ended, as seen by the transport; shared with the connection.
#[derive(Clone, Default)]
pub(crate) struct CloseReason(Arc<Mutex<Option<String>>>);

impl CloseReason {
    /// Keeps the first reason: what ended the connection, not the noise after it.
    fn record(&self, reason: String) {
        let mut slot = self.0.lock();
        if slot.is_none() {
            *slot = Some(reason);
        }
    }

    /// Whether the transport saw the connection end.
    pub(crate) fn is_set(&self) -> bool {
        self.0.lock().is_some()
    }

    /// The reason, or a generic one when the transport never saw the end (e.g. the drive task
    /// stopped first).
    pub(crate) fn get(&self) -> String {
        self.0
            .lock()
            .clone()
            .unwrap_or_else(|| "the connection closed".to_owned())
    }
}

/// How the upgrade request failed, without the URL (it holds the token).
pub(crate) enum HandshakeFailure {
    /// The host answered the upgrade with an HTTP status instead (403 for a wrong token).
    Status(u16),
    /// Anything else, already described.
    Other(String),
}

pub(crate) struct UnixWsTransport {
    inner: WebSocketStream<UnixStream>,
    closed: CloseReason,
}

impl UnixWsTransport {
    /// Performs the WebSocket upgrade on an already connected socket.
    pub(crate) async fn handshake(
        stream: UnixStream,
        token: &ConnectionToken,
        closed: CloseReason,
    ) -> Result<Self, HandshakeFailure> {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE_BYTES))
            .max_frame_size(Some(MAX_MESSAGE_BYTES));
        // The authority is irrelevant on a Unix socket; VS Code's host only reads `tkn`.
        let url = format!("ws://localhost/?tkn={}", token.expose());
        match tokio_tungstenite::client_async_with_config(url, stream, Some(config)).await {
            Ok((inner, _response)) => Ok(Self { inner, closed }),
            Err(tungstenite::Error::Http(response)) => {
                Err(HandshakeFailure::Status(response.status().as_u16()))
            }
            Err(err) => Err(HandshakeFailure::Other(describe(&err, token))),
        }
    }
}

/// A tungstenite error in words a user can act on. Never echoes a URL: the request's holds the
/// token, and the text of the rarer variants is scrubbed of it all the same.
fn describe(err: &tungstenite::Error, token: &ConnectionToken) -> String {
    use tungstenite::error::CapacityError;
    let text = match err {
        tungstenite::Error::Capacity(CapacityError::MessageTooLong { size, max_size }) => {
            format!("the host sent a message of {size} bytes, over the limit of {max_size} bytes")
        }
        tungstenite::Error::Capacity(other) => format!("the host went over a size limit: {other}"),
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => {
            "the connection closed".to_owned()
        }
        tungstenite::Error::Io(io) => format!("I/O error: {io}"),
        tungstenite::Error::Protocol(p) => format!("WebSocket protocol error: {p}"),
        tungstenite::Error::Url(_) => "the request URL was refused".to_owned(),
        tungstenite::Error::Http(response) => format!("HTTP {}", response.status()),
        other => other.to_string(),
    };
    let secret = token.expose();
    if secret.is_empty() {
        text
    } else {
        text.replace(secret, "<hidden>")
    }
}

impl ahp::Transport for UnixWsTransport {
    async fn send(&mut self, msg: TransportMessage) -> Result<(), TransportError> {
        let frame = match msg {
            TransportMessage::Text(text) => Message::text(text),
            TransportMessage::Binary(bytes) => Message::binary(bytes),
            TransportMessage::Parsed(parsed) => {
                let text = serde_json::to_string(&parsed)
                    .map_err(|e| TransportError::Protocol(e.to_string()))?;
                Message::text(text)
            }
        };
        self.inner.send(frame).await.map_err(|err| {
            let reason = format!("sending to the host failed: {}", describe_plain(&err));
            self.closed.record(reason.clone());
            TransportError::Io(reason)
        })
    }

    async fn recv(&mut self) -> Result<Option<TransportMessage>, TransportError> {
        loop {
            match self.inner.next().await {
                Some(Ok(Message::Text(text))) => {
                    return Ok(Some(TransportMessage::Text(text.as_str().to_owned())));
                }
                Some(Ok(Message::Binary(bytes))) => {
                    return Ok(Some(TransportMessage::Binary(bytes.to_vec())));
                }
                Some(Ok(Message::Close(frame))) => {
                    self.closed.record(match frame {
                        Some(frame) if !frame.reason.is_empty() => format!(
                            "the host closed the connection (code {}, \"{}\")",
                            u16::from(frame.code),
                            frame.reason
                        ),
                        Some(frame) => format!(
                            "the host closed the connection (code {})",
                            u16::from(frame.code)
                        ),
                        None => "the host closed the connection".to_owned(),
                    });
                    return Ok(None);
                }
                // Pings are answered by tungstenite itself; raw frames are not surfaced.
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                None => {
                    self.closed
                        .record("the host closed the socket without a close frame".to_owned());
                    return Ok(None);
                }
                Some(Err(err)) => {
                    let reason = describe_plain(&err);
                    self.closed.record(reason.clone());
                    return Err(TransportError::Io(reason));
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), TransportError> {
        self.inner
            .close(None)
            .await
            .map_err(|err| TransportError::Io(describe_plain(&err)))
    }
}

/// [`describe`] after the handshake: no request URL exists any more, so nothing to scrub.
fn describe_plain(err: &tungstenite::Error) -> String {
    describe(err, &ConnectionToken::new(String::new()))
}

/// Whether `path` is something to connect to: refuses a symbolic link (the published path is
/// the socket itself) and anything that is not a socket, naming the path.
pub(crate) fn check_socket_path(path: &Path) -> Result<(), SocketProblem> {
    use std::os::unix::fs::FileTypeExt as _;
    match std::fs::symlink_metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(SocketProblem::Missing),
        Err(err) => Err(SocketProblem::Unreadable(err)),
        Ok(meta) if meta.file_type().is_symlink() => Err(SocketProblem::Link),
        Ok(meta) if !meta.file_type().is_socket() => Err(SocketProblem::NotASocket),
        Ok(_) => Ok(()),
    }
}

pub(crate) enum SocketProblem {
    Missing,
    Unreadable(std::io::Error),
    Link,
    NotASocket,
}
