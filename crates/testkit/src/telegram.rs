//! A fake Telegram Bot API (core.telegram.org/bots/api) on loopback, for the daemon's bot.
//!
//! Start one with [`FakeBotApi::start`], point `CROSS_AGENT_TELEGRAM_API` at
//! [`FakeBotApi::base_url`], then act as a person would: [`FakeBotApi::push_message`] (a text
//! from a user in a chat), [`FakeBotApi::push_callback`] (a button tap), or
//! [`FakeBotApi::push_raw`] (an update as the test writes it, bad ones too). Every call the bot
//! makes is recorded ([`FakeBotApi::calls`]); a failure can be queued for any method
//! ([`FakeBotApi::fail_next`]: a 409, a 429 with `retry_after`, a 400 "can't parse entities").
//!
//! Methods: `getMe`, `getUpdates` (long poll from `offset`, confirming what lies before it),
//! `sendMessage`, `editMessageText`, `answerCallbackQuery`, `sendDocument` (multipart, recorded
//! as its fields, the file as `{"file_name", "content"}`), `createForumTopic`,
//! `setMyCommands`, `deleteWebhook`, `getFile` (of files added with [`FakeBotApi::add_file`])
//! and the file download path `GET /file/bot<token>/<file_path>`; anything else is a 404 as
//! Telegram answers it. A wrong
//! token is a 401 "Unauthorized". As on the real server, a second `getUpdates` ends the one in
//! flight with a 409 "Conflict: terminated by other getUpdates request". Like the model
//! endpoint, the server has its own runtime on its own thread: usable from a plain `#[test]`.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use parking_lot::{Mutex, MutexGuard};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

/// One call the bot made: the method and its JSON body (a multipart `sendDocument` is recorded
/// as its fields; a body that is neither, raw under `"multipart"`).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    pub method: String,
    pub body: Value,
    /// When the call arrived (a back-off shows as the gap between two calls).
    pub at: Instant,
    /// The error code it was answered with, when a queued failure answered it.
    pub failed_with: Option<u16>,
}

/// A queued failure for one method.
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: u16,
    pub description: String,
    pub retry_after: Option<u64>,
}

impl Failure {
    pub fn conflict() -> Failure {
        Failure {
            code: 409,
            description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running".into(),
            retry_after: None,
        }
    }

    pub fn too_many(retry_after: u64) -> Failure {
        Failure {
            code: 429,
            description: format!("Too Many Requests: retry after {retry_after}"),
            retry_after: Some(retry_after),
        }
    }

    pub fn cant_parse_entities() -> Failure {
        Failure {
            code: 400,
            description:
                "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"
                    .into(),
            retry_after: None,
        }
    }
}

#[derive(Default)]
struct Inner {
    /// Updates not yet confirmed by an `offset` past them.
    updates: Vec<Value>,
    next_update_id: i64,
    next_message_id: i64,
    calls: Vec<RecordedCall>,
    failures: HashMap<String, VecDeque<Failure>>,
    /// Failures for the next call of a method whose `text` contains a needle (checked first).
    failures_when: Vec<(String, String, Failure)>,
    /// Bumped by every `getUpdates`: a poll that sees it change was superseded (409).
    poll_generation: u64,
    /// Files a person sent, by `file_id`: their bytes (served at `file_path` `files/<file_id>`).
    files: HashMap<String, Vec<u8>>,
    /// Every download, by `file_path`.
    downloads: Vec<String>,
    /// Every message the bot sent (`sendMessage`, `sendDocument`): the id it got, its body.
    sent: Vec<(i64, Value)>,
}

struct Shared {
    token: String,
    username: String,
    inner: Mutex<Inner>,
    changed: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock()
    }
}

/// The running fake; dropping it stops the server.
pub struct FakeBotApi {
    base_url: String,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for FakeBotApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeBotApi")
            .field("base_url", &self.base_url)
            .finish()
    }
}

impl FakeBotApi {
    /// Serves a bot whose token is `token` and whose username is `username`.
    pub fn start(token: &str, username: &str) -> anyhow::Result<FakeBotApi> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .context("binding the fake Bot API to 127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            username: username.to_owned(),
            inner: Mutex::new(Inner {
                next_update_id: 1000,
                next_message_id: 1,
                ..Inner::default()
            }),
            changed: Notify::new(),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("building the fake Bot API's runtime")?;
        let (shutdown, shutdown_rx) = oneshot::channel::<()>();
        let app = Router::new()
            .route("/{bot}/{method}", post(handle))
            .route("/file/{bot}/{*path}", axum::routing::get(download))
            .with_state(Arc::clone(&shared));
        let thread = std::thread::Builder::new()
            .name(format!("fake-bot-api-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = shutdown_rx.await;
                        })
                        .await;
                });
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
            .context("spawning the fake Bot API's thread")?;
        Ok(FakeBotApi {
            base_url: format!("http://{addr}"),
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The value for `CROSS_AGENT_TELEGRAM_API`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn push_update(&self, make: impl FnOnce(i64, i64) -> Value) -> i64 {
        let mut inner = self.shared.lock();
        let id = inner.next_update_id;
        inner.next_update_id += 1;
        let message_id = inner.next_message_id;
        inner.next_message_id += 1;
        let update = make(id, message_id);
        inner.updates.push(update);
        drop(inner);
        self.shared.changed.notify_waiters();
        id
    }

    /// `user_id` sends `text` in chat `chat_id` (a private chat when they are equal). Returns
    /// the update's id.
    pub fn push_message(&self, user_id: i64, chat_id: i64, text: &str) -> i64 {
        let kind = if user_id == chat_id {
            "private"
        } else {
            "supergroup"
        };
        self.push_update(|id, message_id| {
            json!({"update_id": id, "message": {
                "message_id": message_id,
                "from": {"id": user_id, "is_bot": false, "first_name": format!("user{user_id}")},
                "chat": {"id": chat_id, "type": kind},
                "date": 1_760_000_000, "text": text}})
        })
    }

    /// `user_id` taps a button carrying `data` under message `message_id` in `chat_id`.
    pub fn push_callback(&self, user_id: i64, chat_id: i64, message_id: i64, data: &str) -> i64 {
        self.push_update(|id, _| {
            json!({"update_id": id, "callback_query": {
                "id": format!("cb{id}"),
                "from": {"id": user_id, "is_bot": false, "first_name": format!("user{user_id}")},
                "message": {"message_id": message_id, "chat": {"id": chat_id, "type": "private"},
                            "date": 1_760_000_000, "text": "…"},
                "chat_instance": "-53", "data": data}})
        })
    }

    /// An update exactly as `make` builds it from the next update id — for what Telegram should
    /// never send but a bot must survive (a field of the wrong type, no `update_id` at all).
    /// Returns the id it was offered (which `make` may leave out; an update without one is held
    /// until a poll with an `offset` above 0 confirms it).
    pub fn push_raw(&self, make: impl FnOnce(i64) -> Value) -> i64 {
        self.push_update(|id, _| make(id))
    }

    /// The next call of `method` fails with `failure` (queued: several calls fail in turn).
    pub fn fail_next(&self, method: &str, failure: Failure) {
        self.shared
            .lock()
            .failures
            .entry(method.to_owned())
            .or_default()
            .push_back(failure);
    }

    /// The next call of `method` whose `text` contains `needle` fails with `failure` (other
    /// calls go through): for a failure meant for one message among many.
    pub fn fail_next_containing(&self, method: &str, needle: &str, failure: Failure) {
        self.shared
            .lock()
            .failures_when
            .push((method.to_owned(), needle.to_owned(), failure));
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.shared.lock().calls.clone()
    }

    /// The calls of `method` so far.
    pub fn calls_to(&self, method: &str) -> Vec<RecordedCall> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method)
            .collect()
    }

    /// Waits up to `timeout` for a call of `method` whose body satisfies `test`.
    pub fn wait_for_call(
        &self,
        method: &str,
        timeout: Duration,
        test: impl Fn(&Value) -> bool,
    ) -> Option<RecordedCall> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(call) = self
                .calls_to(method)
                .into_iter()
                .find(|call| test(&call.body))
            {
                return Some(call);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether every pushed update has been confirmed (an `offset` past it was polled).
    pub fn all_confirmed(&self) -> bool {
        self.shared.lock().updates.is_empty()
    }
}

impl Drop for FakeBotApi {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // Long polls in flight are cut by the runtime's shutdown.
        self.shared.changed.notify_waiters();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn answer(status: u16, body: Value) -> Response {
    let status =
        axum::http::StatusCode::from_u16(status).unwrap_or(axum::http::StatusCode::BAD_REQUEST);
    (status, axum::Json(body)).into_response()
}

fn ok(result: Value) -> Response {
    answer(200, json!({"ok": true, "result": result}))
}

fn error(code: u16, description: &str, retry_after: Option<u64>) -> Response {
    let mut body = json!({"ok": false, "error_code": code, "description": description});
    if let Some(seconds) = retry_after {
        body["parameters"] = json!({"retry_after": seconds});
    }
    answer(code, body)
}

/// A `multipart/form-data` body as JSON: each text field by name; a file field as
/// `{"file_name": …, "content": …}` (its bytes as text, lossily).
fn multipart_fields(content_type: &str, body: &[u8]) -> Option<Value> {
    let boundary = content_type
        .split(';')
        .map(str::trim)
        .find_map(|part| part.strip_prefix("boundary="))?
        .trim_matches('"');
    let text = String::from_utf8_lossy(body);
    let mut fields = serde_json::Map::new();
    for part in text.split(&format!("--{boundary}")) {
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        let attribute = |name: &str| {
            head.split(';')
                .map(str::trim)
                .find_map(|a| a.strip_prefix(&format!("{name}=\"")))
                .and_then(|a| a.split('"').next())
                .map(str::to_owned)
        };
        let Some(name) = attribute("name") else {
            continue;
        };
        let field = match attribute("filename") {
            Some(file_name) => json!({"file_name": file_name, "content": value}),
            None => serde_json::from_str::<Value>(value)
                .ok()
                .filter(|v| v.is_number() || v.is_object())
                .unwrap_or_else(|| json!(value)),
        };
        fields.insert(name, field);
    }
    Some(Value::Object(fields))
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        return error(401, "Unauthorized", None);
    }
    let content_type = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let body: Value = if content_type.starts_with("multipart/form-data") {
        multipart_fields(content_type, &body)
            .unwrap_or_else(|| json!({"multipart": String::from_utf8_lossy(&body)}))
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| json!({"multipart": String::from_utf8_lossy(&body)}))
    };
    let failure = {
        let mut inner = shared.lock();
        let text = body.get("text").and_then(Value::as_str).unwrap_or("");
        let targeted = inner
            .failures_when
            .iter()
            .position(|(m, needle, _)| *m == method && text.contains(needle.as_str()));
        let failure = match targeted {
            Some(at) => Some(inner.failures_when.remove(at).2),
            None => inner
                .failures
                .get_mut(&method)
                .and_then(VecDeque::pop_front),
        };
        inner.calls.push(RecordedCall {
            method: method.clone(),
            body: body.clone(),
            at: Instant::now(),
            failed_with: failure.as_ref().map(|f| f.code),
        });
        failure
    };
    if let Some(failure) = failure {
        return error(failure.code, &failure.description, failure.retry_after);
    }
    match method.as_str() {
        "getMe" => ok(json!({"id": 777_000, "is_bot": true, "first_name": "Fake",
                             "username": shared.username, "can_join_groups": true})),
        "deleteWebhook" | "setMyCommands" | "answerCallbackQuery" => ok(json!(true)),
        "getUpdates" => get_updates(&shared, &body).await,
        "sendMessage" | "sendDocument" => {
            let message_id = {
                let mut inner = shared.lock();
                inner.next_message_id += 1;
                let id = inner.next_message_id;
                inner.sent.push((id, body.clone()));
                id
            };
            let chat_id = body.get("chat_id").cloned().unwrap_or(json!(0));
            ok(
                json!({"message_id": message_id, "chat": {"id": chat_id, "type": "private"},
                      "date": 1_760_000_000, "text": body.get("text").cloned().unwrap_or(json!(""))}),
            )
        }
        "getFile" => {
            let file_id = body.get("file_id").and_then(Value::as_str).unwrap_or("");
            let size = shared.lock().files.get(file_id).map(Vec::len);
            match size {
                Some(size) => ok(json!({"file_id": file_id, "file_unique_id": file_id,
                                        "file_size": size, "file_path": format!("files/{file_id}")})),
                None => error(400, "Bad Request: invalid file_id", None),
            }
        }
        "editMessageText" => ok(
            json!({"message_id": body.get("message_id").cloned().unwrap_or(json!(0)),
                                       "chat": {"id": body.get("chat_id").cloned().unwrap_or(json!(0)), "type": "private"},
                                       "date": 1_760_000_000, "text": body.get("text").cloned().unwrap_or(json!(""))}),
        ),
        "createForumTopic" => {
            let thread = {
                let mut inner = shared.lock();
                inner.next_message_id += 1;
                inner.next_message_id
            };
            ok(
                json!({"message_thread_id": thread, "name": body.get("name").cloned().unwrap_or(json!("")),
                      "icon_color": 7_322_096}),
            )
        }
        _ => error(404, "Not Found", None),
    }
}

async fn get_updates(shared: &Shared, body: &Value) -> Response {
    let offset = body.get("offset").and_then(Value::as_i64).unwrap_or(0);
    let timeout = body
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(50);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    let generation = {
        let mut inner = shared.lock();
        inner.poll_generation += 1;
        inner.poll_generation
    };
    // Wake a poll in flight so it notices it was superseded.
    shared.changed.notify_waiters();
    loop {
        let notified = shared.changed.notified();
        {
            let mut inner = shared.lock();
            if inner.poll_generation != generation {
                drop(inner);
                return error(409, &Failure::conflict().description, None);
            }
            if offset > 0 {
                inner
                    .updates
                    .retain(|u| u.get("update_id").and_then(Value::as_i64).unwrap_or(0) >= offset);
            }
            let ready: Vec<Value> = inner.updates.iter().take(100).cloned().collect();
            if !ready.is_empty() || tokio::time::Instant::now() >= deadline {
                return ok(Value::Array(ready));
            }
        }
        let _ = tokio::time::timeout_at(deadline, notified).await;
    }
}

/// `GET /file/bot<token>/<file_path>`: the bytes of a file added with [`FakeBotApi::add_file`].
async fn download(
    State(shared): State<Arc<Shared>>,
    Path((bot, path)): Path<(String, String)>,
) -> Response {
    if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        return error(401, "Unauthorized", None);
    }
    let mut inner = shared.lock();
    inner.downloads.push(path.clone());
    let bytes = path
        .strip_prefix("files/")
        .and_then(|id| inner.files.get(id).cloned());
    drop(inner);
    match bytes {
        Some(bytes) => (axum::http::StatusCode::OK, bytes).into_response(),
        None => error(404, "Not Found", None),
    }
}

impl FakeBotApi {
    /// A file a person is about to send: its `file_id` (for a `document` or `photo` field).
    pub fn add_file(&self, bytes: &[u8]) -> String {
        let id = format!("file{}", uuid::Uuid::new_v4().simple());
        self.shared.lock().files.insert(id.clone(), bytes.to_vec());
        id
    }

    /// Every message the bot sent so far, in order: the `message_id` it got and its body.
    pub fn sent(&self) -> Vec<(i64, Value)> {
        self.shared.lock().sent.clone()
    }

    /// Every file downloaded so far, by `file_path`.
    pub fn downloads(&self) -> Vec<String> {
        self.shared.lock().downloads.clone()
    }

    /// `user_id` sends a message in `chat_id` with `fields` added to it (`message_thread_id`,
    /// `reply_to_message`, `document`, `photo`, `caption`, `text`, …). `forum`: the chat is a
    /// supergroup with topics (`is_forum`). Returns the update's id.
    pub fn push_message_with(&self, user_id: i64, chat_id: i64, forum: bool, fields: Value) -> i64 {
        let kind = if user_id == chat_id {
            "private"
        } else {
            "supergroup"
        };
        self.push_update(|id, message_id| {
            let mut message = json!({
                "message_id": message_id,
                "from": {"id": user_id, "is_bot": false, "first_name": format!("user{user_id}")},
                "chat": {"id": chat_id, "type": kind, "is_forum": forum},
                "date": 1_760_000_000});
            if let (Some(message), Some(fields)) = (message.as_object_mut(), fields.as_object()) {
                for (key, value) in fields {
                    message.insert(key.clone(), value.clone());
                }
            }
            json!({"update_id": id, "message": message})
        })
    }

    /// `user_id` taps a button carrying `data` under `message` (the message as Telegram shows
    /// it in the callback: `message_id`, `chat`, `message_thread_id`, …).
    pub fn push_callback_on(&self, user_id: i64, message: Value, data: &str) -> i64 {
        self.push_update(|id, _| {
            json!({"update_id": id, "callback_query": {
                "id": format!("cb{id}"),
                "from": {"id": user_id, "is_bot": false, "first_name": format!("user{user_id}")},
                "message": message,
                "chat_instance": "-53", "data": data}})
        })
    }
}
