//! Newline-delimited JSON framing, shared by the client and the daemon.
//!
//! One message is one JSON object on one line. serde_json never writes a raw newline inside a
//! value (it escapes them in strings), so a newline always ends a frame. Frames are capped at
//! [`MAX_FRAME_BYTES`]: a longer one is skipped up to its newline and reported as
//! [`Error::FrameTooLarge`], after which the stream is back in step and reading can go on —
//! one bad message never costs the connection, and nothing buffers an unbounded line.

use cross_agent_protocol::rpc::{Method, Request, RequestId};
use memchr::memchr;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::{Error, Result};

/// The largest request frame, in bytes (without the newline). Big enough for any message an
/// agent would relay; small enough that a runaway writer cannot exhaust memory.
pub const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;

/// The largest reply frame: the daemon's answers may carry the whole session index the CLI asks
/// for (about 400 bytes a session: 22,000 sessions are 9 MB). Still a bound.
pub const MAX_REPLY_BYTES: usize = 64 * 1024 * 1024;

/// Reads frames from a buffered stream.
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    limit: usize,
    buf: Vec<u8>,
    /// Inside an over-long frame: drop bytes until its newline.
    discarding: bool,
}

/// Why [`FrameReader::next_frame`] returned without a frame.
#[derive(Debug)]
pub enum ReadError {
    /// The frame was too long and was skipped; reading may continue.
    TooLarge {
        /// The limit it broke.
        limit: usize,
    },
    /// The stream failed; reading may not continue.
    Io(std::io::Error),
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// A reader with the default limit.
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_FRAME_BYTES)
    }

    /// A reader with a chosen limit.
    pub fn with_limit(inner: R, limit: usize) -> Self {
        Self {
            inner,
            limit,
            buf: Vec::new(),
            discarding: false,
        }
    }

    /// The next frame without its newline (and without a trailing `\r`), or `None` at the end of
    /// the stream. Blank lines are skipped. Bytes after the last newline at the end of the
    /// stream count as a final frame, so a peer that forgets the last newline is still heard.
    pub async fn next_frame(&mut self) -> std::result::Result<Option<Vec<u8>>, ReadError> {
        loop {
            let available = self.inner.fill_buf().await.map_err(ReadError::Io)?;
            if available.is_empty() {
                if self.discarding {
                    self.discarding = false;
                    return Err(ReadError::TooLarge { limit: self.limit });
                }
                let frame = std::mem::take(&mut self.buf);
                return Ok(trimmed(frame));
            }
            match memchr(b'\n', available) {
                Some(end) => {
                    let too_long = self.discarding || self.buf.len() + end > self.limit;
                    if !too_long {
                        self.buf.extend_from_slice(&available[..end]);
                    }
                    self.inner.consume(end + 1);
                    if too_long {
                        self.discarding = false;
                        self.buf.clear();
                        return Err(ReadError::TooLarge { limit: self.limit });
                    }
                    if let Some(frame) = trimmed(std::mem::take(&mut self.buf)) {
                        return Ok(Some(frame));
                    }
                }
                None => {
                    let n = available.len();
                    if !self.discarding && self.buf.len() + n > self.limit {
                        self.discarding = true;
                        self.buf = Vec::new();
                    }
                    if !self.discarding {
                        self.buf.extend_from_slice(available);
                    }
                    self.inner.consume(n);
                }
            }
        }
    }
}

/// Drops a trailing `\r`; `None` for an empty or blank frame.
fn trimmed(mut frame: Vec<u8>) -> Option<Vec<u8>> {
    if frame.last() == Some(&b'\r') {
        frame.pop();
    }
    if frame.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(frame)
    }
}

/// Encodes `value` as one frame, newline included.
pub fn encode<T: Serialize>(value: &T, limit: usize) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec(value).map_err(|source| Error::Encode { source })?;
    if bytes.len() > limit {
        return Err(Error::FrameTooLarge { limit });
    }
    bytes.push(b'\n');
    Ok(bytes)
}

/// The frame of one call of `M` under `id` (the daemon's request limit applies).
pub fn encode_call<M: Method>(id: RequestId, params: M) -> Result<Vec<u8>> {
    encode(
        &Request {
            id,
            call: params.into_request(),
        },
        MAX_FRAME_BYTES,
    )
}

/// Decodes one frame.
pub fn decode<T: DeserializeOwned>(frame: &[u8]) -> Result<T> {
    serde_json::from_slice(frame).map_err(|source| Error::Malformed { source })
}

/// Writes `value` as one reply frame (at most [`MAX_REPLY_BYTES`]) and flushes.
pub async fn write_frame<W, T>(writer: &mut W, value: &T) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let bytes = encode(value, MAX_REPLY_BYTES).map_err(std::io::Error::other)?;
    writer.write_all(&bytes).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use tokio::io::BufReader;

    use super::*;

    async fn frames(input: &[u8], limit: usize) -> Vec<Result<String, String>> {
        let mut reader = FrameReader::with_limit(BufReader::with_capacity(4, input), limit);
        let mut out = Vec::new();
        loop {
            match reader.next_frame().await {
                Ok(Some(f)) => out.push(Ok(String::from_utf8(f).unwrap())),
                Ok(None) => return out,
                Err(ReadError::TooLarge { limit }) => out.push(Err(format!("too large {limit}"))),
                Err(ReadError::Io(e)) => panic!("{e}"),
            }
        }
    }

    #[tokio::test]
    async fn splits_on_newlines_and_skips_blank_lines() {
        assert_eq!(
            frames(b"{\"a\":1}\n\n{\"b\":2}\r\n{\"c\":3}", 100).await,
            vec![
                Ok("{\"a\":1}".to_owned()),
                Ok("{\"b\":2}".to_owned()),
                Ok("{\"c\":3}".to_owned())
            ]
        );
    }

    #[tokio::test]
    async fn an_over_long_frame_is_skipped_and_reading_goes_on() {
        let mut input = b"{\"ok\":1}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 50));
        input.extend(b"\n{\"ok\":2}\n");
        input.extend(std::iter::repeat_n(b'y', 50));
        assert_eq!(
            frames(&input, 20).await,
            vec![
                Ok("{\"ok\":1}".to_owned()),
                Err("too large 20".to_owned()),
                Ok("{\"ok\":2}".to_owned()),
                Err("too large 20".to_owned()),
            ]
        );
    }

    #[tokio::test]
    async fn a_frame_exactly_at_the_limit_passes() {
        let line = "x".repeat(20);
        assert_eq!(
            frames(format!("{line}\n").as_bytes(), 20).await,
            vec![Ok(line)]
        );
    }

    #[test]
    fn encode_refuses_what_the_peer_would_refuse() {
        let big = "x".repeat(30);
        assert!(matches!(
            encode(&big, 20),
            Err(Error::FrameTooLarge { limit: 20 })
        ));
        assert_eq!(encode(&"a\nb", 20).unwrap(), b"\"a\\nb\"\n".to_vec());
    }

    #[test]
    fn decode_reports_not_json() {
        assert!(matches!(
            decode::<serde_json::Value>(b"not json"),
            Err(Error::Malformed { .. })
        ));
    }
}
