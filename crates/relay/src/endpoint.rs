//! The deterministic relay endpoint: the subset of the Anthropic Messages API Claude Code calls
//! (`POST /v1/messages`, streaming SSE or a whole message; `count_tokens`; the model list),
//! served on `127.0.0.1:0`, answering without any model.
//!
//! Every request names its relay by its API key (each relay gets its own, see
//! [`crate::host`]); an unknown key is refused with 401. The answer depends only on the
//! request's newest input and the send the host queued for that relay:
//! - the send turn (the newest user text carries the queued turn's prompt) → one `tool_use` of
//!   `SendMessage` with exactly the queued `{to, message}`, `stop_reason: tool_use`;
//! - the result of that `tool_use` → a short text ending with [`RELAY_STATUS_LINE`], `end_turn`;
//! - anything else → [`RELAY_STATUS_LINE`] alone, `end_turn`.
//!
//! Every reply has its own `message.id` (Claude merges replies that share one). Model requests
//! are counted per relay, so a test can show that inbound mail made none.
//!
//! Hand-written SSE: the handful of events Claude needs are formatted directly (a few lines)
//! rather than pulling an SSE crate into the daemon.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use parking_lot::{Mutex, MutexGuard};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::error::RelayError;
use crate::{RELAY_MODEL, RELAY_STATUS_LINE};

/// What the endpoint says after Claude's `SendMessage` ran, before the status line.
const SENT_TEXT: &str = "Handed to SendMessage; Claude's receipt went to the relay's hooks.";

/// The send a relay may make in its current turn.
#[derive(Debug, Clone)]
pub(crate) struct SendTurn {
    /// The user prompt of the send turn; the endpoint recognises the turn by it.
    pub prompt: String,
    pub to: String,
    pub message: String,
    /// The id of the `tool_use` the endpoint answers with, fixed per send so a retried request
    /// gets the same call.
    pub tool_use_id: String,
}

#[derive(Debug, Default)]
struct KeyState {
    relay: String,
    requests: u64,
    turn: Option<SendTurn>,
    /// Test-only misbehaviour for the next send turn.
    #[cfg(feature = "testing")]
    misbehave: Option<Misbehave>,
}

/// How the endpoint misbehaves on a send turn, in tests only (the `testing` feature).
#[cfg(feature = "testing")]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Misbehave {
    /// Answer with this tool call (name, input) instead of the queued `SendMessage`.
    Tool(String, Value),
    /// Never answer.
    Hang,
}

/// What the host and the server share.
#[derive(Debug, Default)]
pub(crate) struct EndpointState {
    keys: Mutex<HashMap<String, KeyState>>,
}

impl EndpointState {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, KeyState>> {
        // Each operation is one small update; a panic while held leaves the map consistent.
        self.keys.lock()
    }

    pub fn register(&self, key: &str, relay: &str) {
        self.lock().insert(
            key.to_owned(),
            KeyState {
                relay: relay.to_owned(),
                ..KeyState::default()
            },
        );
    }

    pub fn set_turn(&self, key: &str, turn: Option<SendTurn>) {
        if let Some(state) = self.lock().get_mut(key) {
            state.turn = turn;
        }
    }

    #[cfg(feature = "testing")]
    pub fn misbehave(&self, key: &str, how: Misbehave) {
        if let Some(state) = self.lock().get_mut(key) {
            state.misbehave = Some(how);
        }
    }

    /// Model requests made by the relay named `relay` so far (0 for an unknown relay); the
    /// count survives the relay's restart under a new key only per key, so it is summed.
    pub fn requests(&self, relay: &str) -> u64 {
        self.lock()
            .values()
            .filter(|state| state.relay == relay)
            .map(|state| state.requests)
            .sum()
    }
}

/// The running endpoint; dropping it stops the accept loop.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub addr: SocketAddr,
    pub state: Arc<EndpointState>,
    accept: JoinHandle<()>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Endpoint {
    pub async fn start() -> Result<Endpoint, RelayError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(RelayError::Bind)?;
        let addr = listener.local_addr().map_err(RelayError::Bind)?;
        let state = Arc::new(EndpointState::default());
        let shared = Arc::clone(&state);
        let accept = tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        let state = Arc::clone(&shared);
                        tokio::spawn(async move {
                            let service = hyper::service::service_fn(move |request| {
                                handle(request, Arc::clone(&state))
                            });
                            if let Err(error) = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await
                            {
                                tracing::debug!(%error, "relay endpoint connection ended");
                            }
                        });
                    }
                    Err(error) => {
                        // Usually out of file descriptors: back off instead of spinning.
                        tracing::warn!(%error, "relay endpoint: accepting failed");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
        });
        Ok(Endpoint {
            addr,
            state,
            accept,
        })
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn handle(
    request: Request<Incoming>,
    state: Arc<EndpointState>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().trim_end_matches('/').to_owned();
    let key = parts
        .headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| {
            parts
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::to_owned)
        });
    let bytes = body
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    if parts.method == hyper::Method::GET && path.ends_with("/models") {
        return Ok(plain(
            200,
            json!({"object":"list","data":[],"has_more":false,"first_id":null,"last_id":null}),
        ));
    }
    if parts.method != hyper::Method::POST {
        // Probes (`HEAD /api/hello`): a 404 is harmless to Claude.
        return Ok(plain(
            404,
            error_body(404, "no such route on the relay endpoint"),
        ));
    }
    if path.ends_with("/messages/count_tokens") {
        return Ok(plain(200, json!({ "input_tokens": 1 })));
    }
    if !path.ends_with("/messages") {
        return Ok(plain(
            404,
            error_body(404, "no such route on the relay endpoint"),
        ));
    }
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(RELAY_MODEL)
        .to_owned();

    let answer = {
        let mut keys = state.lock();
        let Some(relay) = key.as_deref().and_then(|key| keys.get_mut(key)) else {
            return Ok(plain(
                401,
                error_body(
                    401,
                    "this API key names no relay of this cross-agent daemon",
                ),
            ));
        };
        relay.requests += 1;
        decide(&body, relay)
    };
    #[cfg(feature = "testing")]
    if answer == Answer::Hang {
        // The connection stays open until the relay gives up or dies.
        std::future::pending::<()>().await;
    }
    let message_id = format!("msg_relay_{}", uuid::Uuid::new_v4().simple());
    let response = if stream {
        Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .body(Full::new(Bytes::from(sse(&answer, &message_id, &model))))
    } else {
        Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(
                whole(&answer, &message_id, &model).to_string(),
            )))
    };
    Ok(response.unwrap_or_else(|_| plain(500, error_body(500, "relay endpoint error"))))
}

/// The relay's answer to one model request.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Text(String),
    /// Never answer (test-only misbehaviour).
    #[cfg(feature = "testing")]
    Hang,
    Tool {
        id: String,
        name: String,
        input: Value,
    },
}

fn decide(body: &Value, relay: &mut KeyState) -> Answer {
    let status = || Answer::Text(RELAY_STATUS_LINE.to_owned());
    let Some(last_user) = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|messages| {
            messages
                .iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        })
    else {
        return status();
    };
    let blocks: Vec<&Value> = match last_user.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().collect(),
        Some(text @ Value::String(_)) => vec![text],
        _ => Vec::new(),
    };
    let Some(turn) = relay.turn.clone() else {
        return status();
    };
    let results: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
        .collect();
    if !results.is_empty() {
        return if results.contains(&turn.tool_use_id.as_str()) {
            Answer::Text(format!("{SENT_TEXT}\n{RELAY_STATUS_LINE}"))
        } else {
            status()
        };
    }
    let is_send_turn = blocks.iter().any(|block| {
        let text = match block {
            Value::String(text) => Some(text.as_str()),
            block => block.get("text").and_then(Value::as_str),
        };
        text.is_some_and(|text| text.contains(&turn.prompt))
    });
    if !is_send_turn {
        return status();
    }
    #[cfg(feature = "testing")]
    match relay.misbehave.take() {
        Some(Misbehave::Tool(name, input)) => {
            return Answer::Tool {
                id: turn.tool_use_id,
                name,
                input,
            };
        }
        Some(Misbehave::Hang) => return Answer::Hang,
        None => {}
    }
    Answer::Tool {
        id: turn.tool_use_id,
        name: "SendMessage".to_owned(),
        input: json!({ "to": turn.to, "message": turn.message }),
    }
}

fn usage(output_tokens: u64) -> Value {
    json!({"input_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
           "output_tokens": output_tokens})
}

fn stop_reason(answer: &Answer) -> &'static str {
    match answer {
        Answer::Text(_) => "end_turn",
        #[cfg(feature = "testing")]
        Answer::Hang => "end_turn",
        Answer::Tool { .. } => "tool_use",
    }
}

fn event(out: &mut String, name: &str, data: &Value) {
    out.push_str("event: ");
    out.push_str(name);
    out.push_str("\ndata: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

/// The streamed reply: `message_start`, one content block, `message_delta`, `message_stop`.
fn sse(answer: &Answer, message_id: &str, model: &str) -> String {
    let mut out = String::new();
    event(
        &mut out,
        "message_start",
        &json!({"type":"message_start","message":{"id":message_id,"type":"message","role":"assistant",
            "model":model,"content":[],"stop_reason":null,"stop_sequence":null,"usage":usage(1)}}),
    );
    let (start, delta) = match answer {
        #[cfg(feature = "testing")]
        Answer::Hang => (
            json!({"type":"text","text":""}),
            json!({"type":"text_delta","text":""}),
        ),
        Answer::Text(text) => (
            json!({"type":"text","text":""}),
            json!({"type":"text_delta","text":text}),
        ),
        Answer::Tool { id, name, input } => (
            json!({"type":"tool_use","id":id,"name":name,"input":{}}),
            json!({"type":"input_json_delta","partial_json":input.to_string()}),
        ),
    };
    event(
        &mut out,
        "content_block_start",
        &json!({"type":"content_block_start","index":0,"content_block":start}),
    );
    event(
        &mut out,
        "content_block_delta",
        &json!({"type":"content_block_delta","index":0,"delta":delta}),
    );
    event(
        &mut out,
        "content_block_stop",
        &json!({"type":"content_block_stop","index":0}),
    );
    event(
        &mut out,
        "message_delta",
        &json!({"type":"message_delta","delta":{"stop_reason":stop_reason(answer),"stop_sequence":null},
            "usage":{"output_tokens":1}}),
    );
    event(&mut out, "message_stop", &json!({"type":"message_stop"}));
    out
}

/// The whole message of a non-streamed reply (Claude falls back to one after a stream fails).
fn whole(answer: &Answer, message_id: &str, model: &str) -> Value {
    let content = match answer {
        #[cfg(feature = "testing")]
        Answer::Hang => json!([]),
        Answer::Text(text) => json!([{"type":"text","text":text}]),
        Answer::Tool { id, name, input } => {
            json!([{"type":"tool_use","id":id,"name":name,"input":input}])
        }
    };
    json!({"id":message_id,"type":"message","role":"assistant","model":model,"content":content,
           "stop_reason":stop_reason(answer),"stop_sequence":null,"usage":usage(1)})
}

fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        401 => "authentication_error",
        404 => "not_found_error",
        _ => "api_error",
    };
    json!({"type":"error","error":{"type":kind,"message":message}})
}

fn plain(status: u16, body: Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relay_with_turn() -> KeyState {
        KeyState {
            relay: "xa-cli-on-m".into(),
            turn: Some(SendTurn {
                prompt: "[relay send s1]".into(),
                to: "uds:/tmp/cc-socks/9.sock".into(),
                message: "hi".into(),
                tool_use_id: "toolu_relay_s1".into(),
            }),
            ..KeyState::default()
        }
    }

    #[test]
    fn the_send_turn_gets_exactly_the_queued_send_message() {
        let mut relay = relay_with_turn();
        let turn = json!({"messages":[{"role":"user","content":[
            {"type":"text","text":"<system-reminder>x</system-reminder>"},
            {"type":"text","text":"[relay send s1]"}]},{"role":"system","content":"env"}]});
        assert_eq!(
            decide(&turn, &mut relay),
            Answer::Tool {
                id: "toolu_relay_s1".into(),
                name: "SendMessage".into(),
                input: json!({"to":"uds:/tmp/cc-socks/9.sock","message":"hi"})
            }
        );
        let result = json!({"messages":[{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"toolu_relay_s1","content":"{}"}]}]});
        match decide(&result, &mut relay) {
            Answer::Text(text) => assert!(text.ends_with(RELAY_STATUS_LINE)),
            other => panic!("{other:?}"),
        }
        let other = json!({"messages":[{"role":"user","content":"something else"}]});
        assert_eq!(
            decide(&other, &mut relay),
            Answer::Text(RELAY_STATUS_LINE.into())
        );
        relay.turn = None;
        assert_eq!(
            decide(&turn, &mut relay),
            Answer::Text(RELAY_STATUS_LINE.into())
        );
    }

    #[test]
    fn streamed_replies_have_the_events_claude_expects() {
        let text = sse(&Answer::Text("a".into()), "msg_1", "m");
        let names: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("event: "))
            .collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
    }
}
