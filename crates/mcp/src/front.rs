//! A line-level front between stdio and rmcp: it answers input that is not JSON with a JSON-RPC
//! parse error (`-32700`, `id: null`) instead of dropping it silently, as rmcp does, answers a
//! `tools/call` whose params do not fit (none, or `arguments` that are not an object) with
//! invalid params (`-32602`) where rmcp would say the method does not exist, and passes every
//! other line through untouched. The two output streams (rmcp's answers and the parse
//! errors) are merged by one writer so a line is never interleaved with another.

use cross_agent_protocol::schema::json_kind;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest line accepted; a longer one is skipped and answered with a parse error.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Copies `input` to `to_server` line by line, answering lines that are not JSON on `replies`.
/// Closes `to_server` at end of input so the server sees the client leave.
pub async fn filter_input<R, W>(input: R, mut to_server: W, replies: mpsc::Sender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "reading stdin failed; closing the session");
                break;
            }
        }
        if line.len() > MAX_LINE_BYTES && line.last() != Some(&b'\n') {
            // Skip the rest of the oversized line, then say so.
            if skip_line(&mut reader).await.is_err() {
                break;
            }
            let _ = replies
                .send(parse_error(&format!(
                    "a message longer than {MAX_LINE_BYTES} bytes was skipped"
                )))
                .await;
            continue;
        }
        let text = trim_line(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<serde_json::Value>(text) {
            Ok(message) if let Some(reply) = invalid_tool_call(&message) => {
                if replies.send(reply).await.is_err() {
                    break;
                }
            }
            Ok(_) => {
                let forwarded = async {
                    to_server.write_all(text).await?;
                    to_server.write_all(b"\n").await?;
                    to_server.flush().await
                };
                if forwarded.await.is_err() {
                    break;
                }
            }
            Err(error) => {
                tracing::debug!(%error, "answering input that is not JSON");
                if replies.send(parse_error(&error.to_string())).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to_server.shutdown().await;
}

/// Copies the server's output lines to `replies`, so the single writer can merge them.
pub async fn pump_output<R>(from_server: R, replies: mpsc::Sender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
{
    let mut reader = BufReader::new(from_server);
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if line.last() != Some(&b'\n') {
                    line.push(b'\n');
                }
                if replies.send(line).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// Writes every reply to `output`, flushing each, until all senders are gone.
pub async fn write_replies<W>(
    mut output: W,
    mut replies: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    while let Some(line) = replies.recv().await {
        output.write_all(&line).await?;
        output.flush().await?;
    }
    Ok(())
}

async fn skip_line<R: AsyncBufReadExt + Unpin>(reader: &mut R) -> std::io::Result<()> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        match memchr_newline(buffer) {
            Some(at) => {
                reader.consume(at + 1);
                return Ok(());
            }
            None => {
                let len = buffer.len();
                reader.consume(len);
            }
        }
    }
}

fn memchr_newline(buffer: &[u8]) -> Option<usize> {
    buffer.iter().position(|&b| b == b'\n')
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The `-32602` answer to a `tools/call` request whose params cannot be a call: absent, not an
/// object, without a tool name, or with `arguments` that are not an object. `None` for anything
/// else (rmcp answers it).
fn invalid_tool_call(message: &serde_json::Value) -> Option<Vec<u8>> {
    use serde_json::Value;
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    // A notification has no id and gets no answer.
    let id = message.get("id")?;
    let problem = match message.get("params") {
        None | Some(Value::Null) => {
            "tools/call needs params: {\"name\": <tool>, \"arguments\": {…}}".to_owned()
        }
        Some(Value::Object(params)) => match (params.get("name"), params.get("arguments")) {
            (Some(Value::String(_)), None | Some(Value::Null | Value::Object(_))) => return None,
            (Some(Value::String(_)), Some(other)) => format!(
                "tools/call `arguments` must be an object of named parameters, not {}",
                json_kind(other)
            ),
            _ => "tools/call params need `name`, the tool's name as a string".to_owned(),
        },
        Some(other) => format!(
            "tools/call params must be an object, not {}",
            json_kind(other)
        ),
    };
    let mut line = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32602, "message": format!("Invalid params: {problem}")},
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    Some(line)
}

/// A JSON-RPC 2.0 parse error: the id could not be read, so it is null.
fn parse_error(detail: &str) -> Vec<u8> {
    let mut line = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {detail}")},
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}
