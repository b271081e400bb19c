//! Server-sent events on the wire, and a response body that streams them with the script's
//! pacing and failures.
//!
//! Both APIs frame each event as `event: NAME\ndata: JSON\n\n`. The body is a stream so that a
//! delay between events is real time on the socket, and so that a scripted drop can end the
//! body with an error: hyper then closes the connection without the final chunk, which is what
//! a client sees when a server dies mid-answer.

use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use serde_json::Value;

/// One SSE event: its name and its JSON data.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub name: &'static str,
    pub data: Value,
}

impl Event {
    pub fn new(name: &'static str, data: Value) -> Self {
        Self { name, data }
    }

    /// The event's bytes on the wire.
    pub fn encode(&self) -> Bytes {
        Bytes::from(format!("event: {}\ndata: {}\n\n", self.name, self.data))
    }
}

/// Where a streamed body stops early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Close the connection after this many chunks.
    Drop(usize),
    /// Send nothing more after this many chunks, forever.
    Hang(usize),
}

/// How long to let hyper flush the chunks already written before a drop, so the client reads
/// them before the connection goes away rather than seeing an empty reset.
const FLUSH_BEFORE_DROP: Duration = Duration::from_millis(50);

/// A body that sends `chunks` in order, waiting `chunk_delay` between them, and stops at `cut`.
pub(crate) fn body(chunks: Vec<Bytes>, chunk_delay: Duration, cut: Option<Cut>) -> Body {
    struct State {
        chunks: std::vec::IntoIter<Bytes>,
        sent: usize,
        chunk_delay: Duration,
        cut: Option<Cut>,
    }
    let state = State {
        chunks: chunks.into_iter(),
        sent: 0,
        chunk_delay,
        cut,
    };
    let stream = futures_util::stream::unfold(state, |mut state| async move {
        match state.cut {
            Some(Cut::Drop(after)) if state.sent >= after => {
                tokio::time::sleep(FLUSH_BEFORE_DROP).await;
                // Leave the cut behind so the stream ends after this error.
                state.cut = None;
                state.chunks = Vec::new().into_iter();
                let error = std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "scripted drop mid-stream",
                );
                return Some((Err(error), state));
            }
            Some(Cut::Hang(after)) if state.sent >= after => {
                std::future::pending::<()>().await;
            }
            _ => {}
        }
        let chunk = state.chunks.next()?;
        if state.sent > 0 && !state.chunk_delay.is_zero() {
            tokio::time::sleep(state.chunk_delay).await;
        }
        state.sent += 1;
        Some((Ok::<Bytes, std::io::Error>(chunk), state))
    });
    Body::from_stream(stream)
}
