//! The scripted model endpoint: a loopback HTTP server that stands in for the model behind the
//! real Claude Code (Anthropic Messages) and Codex (OpenAI Responses) CLIs.
//!
//! A test starts one with [`ModelEndpoint::start`], points an agent at
//! [`ModelEndpoint::anthropic_base_url`] or [`ModelEndpoint::openai_base_url`], scripts the
//! model with [`Rule`]s, and asserts on the [`RecordedRequest`]s. The server runs its own tokio
//! runtime on a background thread, so the same handle works from a plain `#[test]` and from
//! inside a tokio test, and everything stops when the handle is dropped.
//!
//! Routes: `POST …/messages` (streaming SSE or a JSON message), `POST …/messages/count_tokens`,
//! `POST …/responses` (streaming SSE or a JSON response), `POST …/chat/completions` (a JSON
//! `chat.completion`; a streaming request is refused with a 400), `GET …/models` (an empty
//! list), and
//! anything else gets a 404 JSON body — every request is recorded, so a probe an agent makes
//! shows up in [`ModelEndpoint::requests`].
//!
//! What the real CLIs were seen to send (Claude Code 2.1.332, Codex 0.171.0):
//! - Claude `-p`: `HEAD /api/hello` (a connectivity probe, skipped with
//!   `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`) and one `POST /v1/messages?beta=true` per
//!   model call, streaming, with tools; its `messages` end with a `role: "system"` entry and
//!   the user turn opens with a `<system-reminder>` block.
//! - Codex `exec`: one `POST /v1/responses` per model call, streaming, with the
//!   `x-codex-turn-metadata` (JSON), `session-id` and `thread-id` headers; its `input` holds
//!   developer messages, a user `<environment_context>` message, then the prompt.
//! - Neither sent a side request in `claude -p`, Claude's stream-json panel protocol or
//!   `codex exec`. Interactive Claude names the session with an extra streamed, tool-less
//!   `/v1/messages` request (same model, `max_tokens` 128 000, system prompt "You are naming a
//!   coding session…", the session quoted in its user message); it is recognised as a side
//!   request (see [`RecordedRequest::side_request`]) so it cannot use up the turn's rule.
//! - Claude wraps context in `<system-reminder>` blocks (git status, commit attribution, the
//!   date) that contain common words; user-text rules match on
//!   [`RecordedRequest::last_user_prompt`], which leaves them out.
//! - Claude 2.1.332 defers MCP tools behind `ToolSearch`: they are *named* in a system
//!   message, not listed in `tools`, unless the agent runs with `ENABLE_TOOL_SEARCH=false`.
//!   A scripted `tool_use` of a deferred MCP tool still reaches the server.
//!
//! How the failures look to the real CLIs:
//! - Claude retries an HTTP 5xx or a dropped connection 10 times (about three minutes; it
//!   ignores `x-should-retry: false`) unless `CLAUDE_CODE_MAX_RETRIES=0`; after a streaming
//!   failure it retries once without streaming. A [`Reply::hang`] fails after `API_TIMEOUT_MS`;
//!   a stream that goes silent ([`Reply::hang_after_events`]) is only cut after at least five
//!   minutes (its idle timeout is clamped to ≥ 300 s).
//! - An in-stream error ([`Reply::error_after_events`]) shows in Claude as `API Error: 529
//!   <message>` (after one non-streaming retry) and in Codex as `stream disconnected before
//!   completion: <message>`.
//! - Codex retries per its provider's `request_max_retries` / `stream_max_retries` (set both to
//!   0 in tests); a silent stream fails after `stream_idle_timeout_ms`, but a [`Reply::hang`]
//!   before the status line is waited on indefinitely. It reports any 500 as "We’re currently
//!   experiencing high demand…", not the scripted message.

mod anthropic;
mod chat;
mod record;
mod responses;
mod script;
mod sse;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use axum::body::Body;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use parking_lot::{Condvar, Mutex, MutexGuard};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

pub use record::{Api, InputKind, RecordedRequest};
pub use script::{
    Block, DEFAULT_FALLBACK_TEXT, DEFAULT_SIDE_TEXT, DEFAULT_TOKEN_PATTERN, Failure, Matcher,
    PEER_ENVELOPE_OPEN, Reply, Rule, RuleBuilder, ScriptedUsage, ToolCall,
};

use script::Script;
use sse::{Cut, Event};

/// How a [`ModelEndpoint`] answers what no rule covers, and how it finds request tokens.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// The reply to a model request no rule matches.
    pub fallback: Reply,
    /// The reply to a side request (see [`RecordedRequest::side_request`]) no rule opted in to.
    pub side_reply: Reply,
    /// Regular expression of a request token, for [`Reply::echo_token`].
    pub token_pattern: String,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        Self {
            fallback: Reply::text(DEFAULT_FALLBACK_TEXT),
            side_reply: Reply::text(DEFAULT_SIDE_TEXT),
            token_pattern: DEFAULT_TOKEN_PATTERN.to_owned(),
        }
    }
}

impl EndpointConfig {
    /// Use this reply when no rule matches.
    pub fn fallback(mut self, reply: Reply) -> Self {
        self.fallback = reply;
        self
    }

    /// Use this reply for side requests no rule opted in to.
    pub fn side_reply(mut self, reply: Reply) -> Self {
        self.side_reply = reply;
        self
    }

    /// Look for request tokens matching this regular expression.
    pub fn token_pattern(mut self, pattern: impl Into<String>) -> Self {
        self.token_pattern = pattern.into();
        self
    }
}

/// A running scripted model endpoint on `127.0.0.1`. Dropping it stops the server; requests
/// still hanging are cut off.
pub struct ModelEndpoint {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ModelEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelEndpoint")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// State shared between the handle and the server thread.
struct Shared {
    state: Mutex<State>,
    /// Signalled whenever a request is recorded, for the waits.
    changed: Condvar,
    token_pattern: regex::Regex,
}

struct State {
    script: Script,
    requests: Vec<RecordedRequest>,
}

impl Shared {
    /// The state, even if a panicking test thread poisoned the lock: the data stays usable and
    /// a second panic would only hide the first.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }
}

impl ModelEndpoint {
    /// Starts an endpoint on `127.0.0.1:0` with the default fallback and token pattern.
    pub fn start() -> anyhow::Result<Self> {
        Self::start_with(EndpointConfig::default())
    }

    /// Starts an endpoint on `127.0.0.1:0` with this configuration.
    pub fn start_with(config: EndpointConfig) -> anyhow::Result<Self> {
        let token_pattern = regex::Regex::new(&config.token_pattern)
            .with_context(|| format!("invalid token pattern {:?}", config.token_pattern))?;
        // Bind before the thread starts so the address is known (and a failure reported) now;
        // connections made before the runtime accepts wait in the backlog.
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .context("binding the scripted model endpoint to 127.0.0.1:0")?;
        listener
            .set_nonblocking(true)
            .context("making the endpoint's listener non-blocking")?;
        let addr = listener
            .local_addr()
            .context("reading the endpoint's address")?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                script: Script {
                    rules: Vec::new(),
                    fallback: config.fallback,
                    side_reply: config.side_reply,
                },
                requests: Vec::new(),
            }),
            changed: Condvar::new(),
            token_pattern,
        });
        // Its own runtime on its own thread: usable from sync tests, and never the runtime of
        // an async test, which could not be blocked on or dropped from inside itself.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("building the endpoint's runtime")?;
        let (shutdown, shutdown_rx) = oneshot::channel();
        let server_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("model-endpoint-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(serve(listener, server_shared, shutdown_rx));
                // Connections still hanging are dropped here, closing their sockets.
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
            .context("spawning the endpoint's thread")?;
        tracing::debug!(%addr, "scripted model endpoint started");
        Ok(Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The socket address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The value for `ANTHROPIC_BASE_URL` (Claude appends `/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        self.base_url()
    }

    /// The `base_url` of a Codex provider (`…/v1`; Codex appends `/responses`).
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// Appends one rule to the script.
    pub fn push(&self, rule: Rule) {
        self.shared.lock().script.rules.push(rule);
    }

    /// Appends rules to the script, in order.
    pub fn script(&self, rules: impl IntoIterator<Item = Rule>) {
        self.shared.lock().script.rules.extend(rules);
    }

    /// Removes every rule.
    pub fn clear_rules(&self) {
        self.shared.lock().script.rules.clear();
    }

    /// Replaces the reply used when no rule matches.
    pub fn set_fallback(&self, reply: Reply) {
        self.shared.lock().script.fallback = reply;
    }

    /// The rules as they stand, with the uses they have left.
    pub fn rules(&self) -> Vec<Rule> {
        self.shared.lock().script.rules.clone()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The Anthropic Messages and Responses requests so far (no probes, no token counts).
    pub fn model_requests(&self) -> Vec<RecordedRequest> {
        model_requests(&self.shared.lock().requests)
    }

    /// Forgets the requests recorded so far.
    pub fn clear_requests(&self) {
        self.shared.lock().requests.clear();
    }

    /// Blocks until at least `n` model requests (Messages or Responses) have arrived and
    /// returns them; fails after `timeout`, listing what did arrive.
    pub fn wait_for_requests(
        &self,
        n: usize,
        timeout: Duration,
    ) -> anyhow::Result<Vec<RecordedRequest>> {
        self.wait_until(timeout, |requests| model_requests(requests).len() >= n)
            .map(|requests| model_requests(&requests))
            .with_context(|| format!("waiting for {n} model request(s)"))
    }

    /// Blocks until `ready` holds for all requests so far (probes included) and returns them;
    /// fails after `timeout`.
    pub fn wait_until(
        &self,
        timeout: Duration,
        ready: impl Fn(&[RecordedRequest]) -> bool,
    ) -> anyhow::Result<Vec<RecordedRequest>> {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.lock();
        loop {
            if ready(&state.requests) {
                return Ok(state.requests.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                anyhow::bail!(
                    "timed out after {timeout:?}; requests so far: {}",
                    summary(&state.requests)
                );
            }
            self.shared.changed.wait_for(&mut state, deadline - now);
        }
    }

    /// [`ModelEndpoint::wait_for_requests`] for async tests: polls without blocking the
    /// caller's runtime.
    pub async fn wait_for_requests_async(
        &self,
        n: usize,
        timeout: Duration,
    ) -> anyhow::Result<Vec<RecordedRequest>> {
        let deadline = Instant::now() + timeout;
        loop {
            let requests = self.model_requests();
            if requests.len() >= n {
                return Ok(requests);
            }
            if Instant::now() >= deadline {
                anyhow::bail!(
                    "timed out after {timeout:?} waiting for {n} model request(s); requests so far: {}",
                    summary(&self.requests())
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for ModelEndpoint {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            // The server may already be gone; there is nothing else to stop then.
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::warn!("the scripted model endpoint's thread panicked");
        }
    }
}

fn model_requests(requests: &[RecordedRequest]) -> Vec<RecordedRequest> {
    requests
        .iter()
        .filter(|request| request.is_model_request())
        .cloned()
        .collect()
}

fn summary(requests: &[RecordedRequest]) -> String {
    if requests.is_empty() {
        return "none".to_owned();
    }
    requests
        .iter()
        .map(|request| format!("{} {} ({:?})", request.method, request.path, request.api))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Accepts connections until `shutdown` fires.
async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(%error, "the scripted model endpoint cannot listen");
            return;
        }
    };
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(connection(stream, Arc::clone(&shared)));
                }
                Err(error) => {
                    // Usually out of file descriptors; back off instead of spinning.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    }
}

/// Serves one connection. A handler that must drop the connection before answering signals
/// `kill`; dropping the connection future closes the socket.
async fn connection(stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    let kill = Arc::new(Notify::new());
    let service = {
        let kill = Arc::clone(&kill);
        hyper::service::service_fn(move |request| {
            handle(request, Arc::clone(&shared), Arc::clone(&kill))
        })
    };
    let served =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        result = served => {
            if let Err(error) = result {
                tracing::debug!(%error, "endpoint connection ended with an error");
            }
        }
        () = kill.notified() => tracing::debug!("endpoint connection dropped as scripted"),
    }
}

/// The content of a reply with ids assigned and echo tokens resolved, ready to render.
pub(crate) struct Answer {
    pub message_id: String,
    pub response_id: String,
    pub created_at: u64,
    pub model: String,
    pub input_tokens: u64,
    pub parts: Vec<Part>,
    pub chunk_chars: Option<usize>,
    /// The usage the test chose for this reply, if it did.
    pub usage: Option<script::ScriptedUsage>,
}

/// One rendered piece of an [`Answer`].
pub(crate) enum Part {
    Text(String),
    Tool { id: String, call: ToolCall },
}

impl Answer {
    /// `text` split into the deltas it streams as; always at least one, possibly empty.
    pub fn chunks(&self, text: &str) -> Vec<String> {
        let Some(size) = self.chunk_chars else {
            return vec![text.to_owned()];
        };
        let chars: Vec<char> = text.chars().collect();
        if chars.is_empty() {
            return vec![String::new()];
        }
        chars
            .chunks(size)
            .map(|chunk| chunk.iter().collect())
            .collect()
    }

    /// A rough token count, about four characters a token, as usage figures need one.
    pub fn output_tokens(&self) -> u64 {
        let chars: usize = self
            .parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => text.len(),
                Part::Tool { call, .. } => call.arguments.to_string().len(),
            })
            .sum();
        (chars as u64 / 4).max(1)
    }
}

fn unique_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

async fn handle(
    request: Request<Incoming>,
    shared: Arc<Shared>,
    kill: Arc<Notify>,
) -> Result<Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().map(str::to_owned);
    let mut headers = BTreeMap::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        headers
            .entry(name.as_str().to_owned())
            .and_modify(|existing: &mut String| {
                existing.push_str(", ");
                existing.push_str(&value);
            })
            .or_insert(value);
    }
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            tracing::debug!(%error, "reading a request body failed");
            bytes::Bytes::new()
        }
    };
    let body: Value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    let api = record::classify(&method, &path);
    let parsed = record::parse(api, &body);
    let side_request = record::is_side_request(api, &parsed);
    let input_tokens = (bytes.len() as u64 / 4).max(1);

    // Record first, so a test sees the request even if the script then hangs on it.
    let (recorded, chosen) = {
        let mut state = shared.lock();
        let recorded = RecordedRequest {
            seq: state.requests.len(),
            method: method.clone(),
            path: path.clone(),
            query,
            api,
            headers,
            body,
            model: parsed.model,
            stream: parsed.stream,
            max_tokens: parsed.max_tokens,
            system: parsed.system,
            messages: parsed.messages,
            tools: parsed.tools,
            last_user_text: parsed.last_user_text,
            last_user_prompt: parsed.last_user_prompt,
            last_tool_result: parsed.last_tool_result,
            newest_input: parsed.newest_input,
            side_request,
            answered_by: None,
        };
        let chosen = match api {
            Api::Anthropic | Api::Responses | Api::Chat => Some(state.script.answer(&recorded)),
            Api::CountTokens | Api::Other => None,
        };
        let mut stored = recorded.clone();
        stored.answered_by = Some(match &chosen {
            Some((_, by)) => by.clone(),
            None if api == Api::CountTokens => "count_tokens".to_owned(),
            None => "no route".to_owned(),
        });
        state.requests.push(stored);
        (recorded, chosen)
    };
    shared.changed.notify_all();
    tracing::debug!(%method, %path, ?api, "scripted model endpoint request");

    let Some((reply, _)) = chosen else {
        return Ok(fixed_route(&recorded, input_tokens));
    };
    let mut response = answer_with(&reply, &recorded, api, &shared, &kill, input_tokens).await;
    for (name, value) in &reply.headers {
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    Ok(response)
}

/// The response a chosen reply makes (before its scripted extra headers).
async fn answer_with(
    reply: &Reply,
    recorded: &RecordedRequest,
    api: Api,
    shared: &Shared,
    kill: &Notify,
    input_tokens: u64,
) -> Response<Body> {
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    if let Some(gate) = &reply.held_until {
        while !gate.exists() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    let cut = match &reply.failure {
        Some(Failure::Hang) => std::future::pending().await,
        Some(Failure::DropBeforeHeaders) => {
            kill.notify_one();
            std::future::pending().await
        }
        Some(Failure::HttpError {
            status,
            message,
            retry,
        }) => return http_error(api, *status, message, *retry),
        Some(Failure::DropAfterEvents(n)) => Some(Cut::Drop(*n)),
        Some(Failure::HangAfterEvents(n)) => Some(Cut::Hang(*n)),
        Some(Failure::ErrorEventAfter { message, .. }) if !recorded.stream => {
            let status = if api == Api::Anthropic { 529 } else { 500 };
            return http_error(api, status, message, true);
        }
        Some(Failure::ErrorEventAfter { .. }) | None => None,
    };

    if api == Api::Chat && recorded.stream {
        return plain(
            400,
            responses::error(
                400,
                "scripted endpoint: streaming Chat Completions is not scripted",
            ),
        );
    }
    let token = script::find_token(&shared.token_pattern, recorded);
    let answer = Answer {
        message_id: format!("msg_scripted_{}", unique_suffix()),
        response_id: format!("resp_scripted_{}", unique_suffix()),
        created_at: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs())
            .unwrap_or(0),
        model: recorded
            .model
            .clone()
            .unwrap_or_else(|| "scripted-model".to_owned()),
        input_tokens,
        usage: reply.usage,
        parts: reply
            .blocks
            .iter()
            .map(|block| match block {
                Block::ToolCall(call) => Part::Tool {
                    id: match api {
                        Api::Responses | Api::Chat => format!("call_{}", unique_suffix()),
                        _ => format!("toolu_{}", unique_suffix()),
                    },
                    call: call.clone(),
                },
                Block::PeerReply(prefix) => {
                    match script::peer_reply_call(prefix, recorded, token.as_deref()) {
                        Some(call) => Part::Tool {
                            id: format!("toolu_{}", unique_suffix()),
                            call,
                        },
                        None => Part::Text(format!(
                            "{prefix}\nscripted: no cross-session-message to reply to"
                        )),
                    }
                }
                text => {
                    Part::Text(script::resolve_text(text, token.as_deref()).unwrap_or_default())
                }
            })
            .collect(),
        chunk_chars: reply.chunk_chars,
    };

    let response = if recorded.stream {
        let mut events: Vec<Event> = match api {
            Api::Responses => responses::stream(&answer),
            _ => anthropic::stream(&answer),
        };
        if let Some(Failure::ErrorEventAfter {
            events: after,
            message,
        }) = &reply.failure
        {
            events.truncate(*after);
            events.push(match api {
                Api::Responses => responses::failed(&answer, events.len(), message),
                _ => anthropic::error_event(message),
            });
        }
        let chunks = events.iter().map(Event::encode).collect();
        Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .header("request-id", format!("req_scripted_{}", unique_suffix()))
            .body(sse::body(chunks, reply.chunk_delay, cut))
    } else {
        let whole = match api {
            Api::Responses => responses::whole(&answer),
            Api::Chat => chat::whole(&answer),
            _ => anthropic::message(&answer),
        };
        Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .header("request-id", format!("req_scripted_{}", unique_suffix()))
            .body(sse::body(
                vec![bytes::Bytes::from(whole.to_string())],
                Duration::ZERO,
                // A whole message is one chunk: a server that breaks mid-answer breaks it
                // before any of it, or a client falling back from streaming would get the
                // full answer from a reply scripted to fail.
                cut.map(|cut| match cut {
                    Cut::Drop(_) => Cut::Drop(0),
                    Cut::Hang(_) => Cut::Hang(0),
                }),
            ))
    };
    response.unwrap_or_else(|error| plain(500, json!({ "error": error.to_string() })))
}

/// Answers count_tokens, model lists and unknown routes.
fn fixed_route(request: &RecordedRequest, input_tokens: u64) -> Response<Body> {
    match request.api {
        Api::CountTokens => plain(200, json!({ "input_tokens": input_tokens })),
        Api::Anthropic | Api::Responses | Api::Chat | Api::Other => {
            if request.method == "GET" && request.path.trim_end_matches('/').ends_with("/models") {
                return plain(
                    200,
                    json!({ "object": "list", "data": [], "has_more": false,
                            "first_id": null, "last_id": null }),
                );
            }
            // Agents probe a few URLs (Claude: `HEAD /api/hello`); a 404 is harmless to them.
            tracing::info!(method = %request.method, path = %request.path,
                "scripted model endpoint: no route");
            let message = format!(
                "scripted endpoint: no route for {} {}",
                request.method, request.path
            );
            plain(404, anthropic::error(404, &message))
        }
    }
}

fn http_error(api: Api, status: u16, message: &str, retry: bool) -> Response<Body> {
    let body = match api {
        Api::Responses | Api::Chat => responses::error(status, message),
        _ => anthropic::error(status, message),
    };
    let mut response = plain(status, body);
    if !retry {
        response.headers_mut().insert(
            "x-should-retry",
            hyper::header::HeaderValue::from_static("false"),
        );
    }
    response
}

fn plain(status: u16, body: Value) -> Response<Body> {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}
