//! The fake host's server: the accept loop, the token check at upgrade, one task per
//! connection, and the shared state (sessions, subscriptions, pending tool confirmations) that
//! requests and dispatched actions read and change.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::{SinkExt as _, StreamExt as _};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::{FakeSession, TurnScript, wire};

pub(crate) const ROOT: &str = "ahp-root://";

/// What a connection task is told to do.
pub(crate) enum Out {
    Text(String),
}

struct Conn {
    client_id: String,
    subs: HashSet<String>,
    tx: mpsc::UnboundedSender<Out>,
}

/// A session and its default chat.
pub(crate) struct Entry {
    pub session: FakeSession,
    pub created_at: String,
    pub turns: Vec<Value>,
    /// `{id, startedAt, message}` of the running turn.
    pub active: Option<Value>,
    pub input_needed: Vec<Value>,
}

struct Pending {
    chat: String,
    turn_id: String,
    session: String,
    request_id: String,
    answer: oneshot::Sender<bool>,
}

#[derive(Default)]
struct State {
    server_seq: u64,
    next_conn: u64,
    editor_seq: i64,
    sessions: Vec<Entry>,
    conns: HashMap<u64, Conn>,
    pending: HashMap<String, Pending>,
    /// Items put on the first `listSessions` page as they are (summaries a client cannot parse).
    unparsable: Vec<Value>,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    /// Every message received, with the wall-clock instant it was read off the socket.
    pub received: Mutex<Vec<(Value, std::time::SystemTime)>>,
    /// Every `chat/turnComplete` sent, with the wall-clock instant it was handed to the
    /// connections (benches set it beside the daemon's record stamps, another process's clock).
    pub completed: Mutex<Vec<super::CompletedTurn>>,
    pub refused: AtomicUsize,
    token: String,
    pub model_url: Option<String>,
    page_size: usize,
    /// The protocol version this host speaks (VS Code 1.141: `0.10.0`).
    version: String,
    pub http: reqwest::Client,
}

impl Shared {
    pub fn new(
        token: String,
        model_url: Option<String>,
        page_size: usize,
        version: String,
        sessions: Vec<FakeSession>,
    ) -> Self {
        let state = State {
            sessions: sessions.into_iter().map(Entry::new).collect(),
            ..State::default()
        };
        Self {
            state: Mutex::new(state),
            received: Mutex::new(Vec::new()),
            completed: Mutex::new(Vec::new()),
            refused: AtomicUsize::new(0),
            token,
            model_url,
            page_size,
            version,
            http: reqwest::Client::new(),
        }
    }

    // ── Sending ──────────────────────────────────────────────────────────────────────────

    /// Sends an action envelope to every subscriber of `channel`; returns its `serverSeq`.
    pub fn broadcast(&self, channel: &str, action: Value, origin: Option<(String, i64)>) -> u64 {
        let mut state = self.state.lock();
        state.server_seq += 1;
        let mut params =
            json!({"channel": channel, "serverSeq": state.server_seq, "action": action});
        if let Some((client_id, client_seq)) = origin {
            params["origin"] = json!({"clientId": client_id, "clientSeq": client_seq});
        }
        let text = wire::notification("action", params).to_string();
        for conn in state.conns.values() {
            if conn.subs.contains(channel) {
                let _ = conn.tx.send(Out::Text(text.clone()));
            }
        }
        state.server_seq
    }

    /// Echoes a refused action to the client that sent it.
    fn reject(&self, conn: u64, channel: &str, action: Value, origin: (String, i64), reason: &str) {
        let mut state = self.state.lock();
        state.server_seq += 1;
        let params = json!({"channel": channel, "serverSeq": state.server_seq, "action": action,
            "origin": {"clientId": origin.0, "clientSeq": origin.1}, "rejectionReason": reason});
        if let Some(conn) = state.conns.get(&conn) {
            let _ = conn
                .tx
                .send(Out::Text(wire::notification("action", params).to_string()));
        }
    }

    /// A frame sent as is to one connection (garbage, a huge frame).
    pub fn send_raw(&self, conn: u64, text: String) {
        if let Some(conn) = self.state.lock().conns.get(&conn) {
            let _ = conn.tx.send(Out::Text(text));
        }
    }

    fn notify_root(&self, method: &str, params: Value) {
        let text = wire::notification(method, params).to_string();
        for conn in self.state.lock().conns.values() {
            if conn.subs.contains(ROOT) {
                let _ = conn.tx.send(Out::Text(text.clone()));
            }
        }
    }

    // ── The test's levers ────────────────────────────────────────────────────────────────

    pub fn add_session(&self, session: FakeSession) {
        let entry = Entry::new(session);
        let summary = entry.summary();
        self.state.lock().sessions.push(entry);
        self.notify_root(
            "root/sessionAdded",
            json!({"channel": ROOT, "summary": summary}),
        );
    }

    pub fn remove_session(&self, uri: &str) {
        self.state
            .lock()
            .sessions
            .retain(|e| e.session.uri() != uri);
        self.notify_root(
            "root/sessionRemoved",
            json!({"channel": ROOT, "session": uri}),
        );
    }

    pub fn list_unparsable(&self, item: Value) {
        self.state.lock().unparsable.push(item);
    }

    pub fn rename_session(&self, uri: &str, title: &str) {
        if let Some(entry) = self
            .state
            .lock()
            .sessions
            .iter_mut()
            .find(|e| e.session.uri() == uri)
        {
            entry.session.title = title.to_owned();
        }
        self.notify_root(
            "root/sessionSummaryChanged",
            json!({"channel": ROOT, "session": uri, "changes": {"title": title}}),
        );
    }

    pub fn pending_tool_calls(&self) -> Vec<String> {
        self.state.lock().pending.keys().cloned().collect()
    }

    /// The confirmation options the session `uri` was given, if any.
    pub(crate) fn confirmation_options(&self, uri: &str) -> Option<Value> {
        let state = self.state.lock();
        state
            .sessions
            .iter()
            .find(|e| e.session.uri() == uri)
            .and_then(|e| e.session.confirmation_options.clone())
    }

    pub fn editor_confirm(&self, tool_call_id: &str, approved: bool) -> bool {
        let seq = {
            let mut state = self.state.lock();
            state.editor_seq += 1;
            state.editor_seq
        };
        let Some(pending) = self.take_pending(tool_call_id) else {
            return false;
        };
        let action = confirmed_action(&pending.turn_id, tool_call_id, approved);
        self.resolve(
            pending,
            action,
            Some(("vscode-editor".to_owned(), seq)),
            approved,
        );
        true
    }

    /// Starts a turn in the default chat of the session `uri` as the editor's user would
    /// (origin `vscode-editor`), run by the session's script; the turn's id, or `None` when
    /// the session is unknown or busy.
    pub fn editor_turn(self: &Arc<Self>, uri: &str, text: &str) -> Option<String> {
        let turn_id = format!("editor-{}", uuid::Uuid::new_v4().simple());
        let message = json!({"text": text, "origin": {"kind": "user"}});
        let (chat, script, seq) = {
            let mut state = self.state.lock();
            state.editor_seq += 1;
            let seq = state.editor_seq;
            let entry = state
                .sessions
                .iter_mut()
                .find(|e| e.session.uri() == uri && e.active.is_none())?;
            entry.active = Some(
                json!({"id": turn_id, "startedAt": "2026-12-02T18:00:00.000Z",
                "message": message}),
            );
            (entry.session.chat_uri(), entry.session.script.clone(), seq)
        };
        let action = json!({"type": "chat/turnStarted", "turnId": turn_id,
            "startedAt": "2026-12-02T18:00:00.000Z", "message": message});
        self.broadcast(&chat, action, Some(("vscode-editor".to_owned(), seq)));
        self.notify_status(|e| e.session.uri() == uri);
        tokio::spawn(super::turn::run(
            self.clone(),
            super::turn::TurnRun {
                // No client connection: the raw-frame scripts have nobody to send to.
                conn: 0,
                session: uri.to_owned(),
                chat,
                turn_id: turn_id.clone(),
                text: text.to_owned(),
                model: None,
                script,
            },
        ));
        Some(turn_id)
    }

    fn take_pending(&self, tool_call_id: &str) -> Option<Pending> {
        self.state.lock().pending.remove(tool_call_id)
    }

    fn resolve(
        &self,
        pending: Pending,
        action: Value,
        origin: Option<(String, i64)>,
        approved: bool,
    ) {
        self.broadcast(&pending.chat, action, origin);
        self.set_input_needed(&pending.session, &pending.request_id, None);
        let _ = pending.answer.send(approved);
    }

    /// Registers a tool call waiting for confirmation; the receiver gets the answer.
    pub fn add_pending(
        &self,
        session: &str,
        chat: &str,
        turn_id: &str,
        tool_call_id: &str,
        request: Value,
    ) -> oneshot::Receiver<bool> {
        let (answer, rx) = oneshot::channel();
        let request_id = request["id"].as_str().unwrap_or_default().to_owned();
        self.state.lock().pending.insert(
            tool_call_id.to_owned(),
            Pending {
                chat: chat.to_owned(),
                turn_id: turn_id.to_owned(),
                session: session.to_owned(),
                request_id: request_id.clone(),
                answer,
            },
        );
        self.set_input_needed(session, &request_id, Some(request));
        rx
    }

    /// `session/inputNeededSet` / `Removed`, in the state and on the session channel.
    fn set_input_needed(&self, session: &str, id: &str, request: Option<Value>) {
        {
            let mut state = self.state.lock();
            if let Some(entry) = state
                .sessions
                .iter_mut()
                .find(|e| e.session.uri() == session)
            {
                entry.input_needed.retain(|r| r["id"] != id);
                if let Some(request) = &request {
                    entry.input_needed.push(request.clone());
                }
            }
        }
        let action = match request {
            Some(request) => json!({"type": "session/inputNeededSet", "request": request}),
            None => json!({"type": "session/inputNeededRemoved", "id": id}),
        };
        self.broadcast(session, action, None);
        self.notify_status(|e| e.session.uri() == session);
    }

    /// `root/sessionSummaryChanged` with the new `status` of the session `which` picks, as the
    /// host tells every status change (a turn starting or ending, input needed or answered).
    fn notify_status(&self, which: impl Fn(&Entry) -> bool) {
        let found = self
            .state
            .lock()
            .sessions
            .iter()
            .find(|e| which(e))
            .map(|e| (e.session.uri(), e.status()));
        if let Some((uri, status)) = found {
            self.notify_root(
                "root/sessionSummaryChanged",
                json!({"channel": ROOT, "session": uri, "changes": {"status": status}}),
            );
        }
    }

    /// Ends the running turn of `chat`, keeping it in the chat's history.
    pub fn finish_turn(&self, chat: &str, state_word: &str, text: &str) {
        self.end_turn(chat, state_word, text);
        self.notify_status(|e| e.session.chat_uri() == chat);
    }

    fn end_turn(&self, chat: &str, state_word: &str, text: &str) {
        let mut state = self.state.lock();
        let entry = state
            .sessions
            .iter_mut()
            .find(|e| e.session.chat_uri() == chat);
        if let Some(entry) = entry
            && let Some(active) = entry.active.take()
        {
            entry.turns.push(json!({
                "id": active["id"], "startedAt": active["startedAt"], "message": active["message"],
                "responseParts": [{"kind": "markdown", "id": "answer", "content": text}],
                "state": state_word,
            }));
        }
    }

    // ── Requests ─────────────────────────────────────────────────────────────────────────

    fn on_request(&self, conn: u64, id: u64, method: &str, params: &Value) -> Value {
        match method {
            "initialize" => {
                let offered: Vec<String> =
                    serde_json::from_value(params["protocolVersions"].clone()).unwrap_or_default();
                let Some(version) = wire::negotiate(&offered, &self.version) else {
                    return wire::unsupported_version(id, &offered, &self.version);
                };
                let mut state = self.state.lock();
                let seq = state.server_seq;
                let mut snapshots = Vec::new();
                if let Some(c) = state.conns.get_mut(&conn) {
                    c.client_id = params["clientId"].as_str().unwrap_or_default().to_owned();
                    for uri in params["initialSubscriptions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        if let Some(uri) = uri.as_str() {
                            c.subs.insert(uri.to_owned());
                            if uri == ROOT {
                                snapshots.push(json!({"resource": ROOT, "state": {"agents": []}, "fromSeq": seq}));
                            }
                        }
                    }
                }
                wire::result(
                    id,
                    json!({"protocolVersion": version, "serverSeq": seq, "snapshots": snapshots}),
                )
            }
            "ping" => wire::result(id, json!({})),
            "listSessions" => {
                let state = self.state.lock();
                let mut all: Vec<&Entry> = state.sessions.iter().collect();
                all.sort_by(|a, b| b.session.modified_at.cmp(&a.session.modified_at));
                let start: usize = params["cursor"]
                    .as_str()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let limit = params["limit"]
                    .as_u64()
                    .map_or(self.page_size, |l| (l as usize).min(self.page_size))
                    .max(1);
                let mut items: Vec<Value> = all
                    .iter()
                    .skip(start)
                    .take(limit)
                    .map(|e| e.summary())
                    .collect();
                if start == 0 {
                    items.extend(state.unparsable.iter().cloned());
                }
                let mut result = json!({"items": items});
                if start + limit < all.len() {
                    result["nextCursor"] = json!((start + limit).to_string());
                }
                wire::result(id, result)
            }
            "subscribe" => {
                let channel = params["channel"].as_str().unwrap_or_default().to_owned();
                let mut state = self.state.lock();
                let seq = state.server_seq;
                let snapshot = if channel == ROOT {
                    Some(json!({"agents": []}))
                } else {
                    state.sessions.iter().find_map(|e| {
                        if e.session.uri() == channel {
                            Some(e.session_state())
                        } else if e.session.chat_uri() == channel {
                            Some(e.chat_state())
                        } else {
                            None
                        }
                    })
                };
                let Some(snapshot) = snapshot else {
                    return wire::error(id, -32001, &format!("Session not found: {channel}"));
                };
                if let Some(c) = state.conns.get_mut(&conn) {
                    c.subs.insert(channel.clone());
                }
                wire::result(
                    id,
                    json!({"snapshot": {"resource": channel, "state": snapshot, "fromSeq": seq}}),
                )
            }
            other => wire::error(id, -32601, &format!("Method not found: {other}")),
        }
    }

    // ── Dispatched actions ───────────────────────────────────────────────────────────────

    /// Handles a `dispatchAction`; returns false when the connection must be dropped now.
    fn on_dispatch(self: &Arc<Self>, conn: u64, params: &Value) -> bool {
        let channel = params["channel"].as_str().unwrap_or_default().to_owned();
        let client_seq = params["clientSeq"].as_i64().unwrap_or_default();
        let action = params["action"].clone();
        let (client_id, found) = {
            let state = self.state.lock();
            let client_id = state
                .conns
                .get(&conn)
                .map(|c| c.client_id.clone())
                .unwrap_or_default();
            let found = state
                .sessions
                .iter()
                .find(|e| e.session.chat_uri() == channel)
                .map(|e| {
                    (
                        e.session.uri(),
                        e.session.script.clone(),
                        e.active.is_some(),
                    )
                });
            (client_id, found)
        };
        let origin = (client_id, client_seq);
        // An action for a chat that does not exist is ignored, without an echo (the spec).
        let Some((session, script, busy)) = found else {
            return true;
        };
        match action["type"].as_str().unwrap_or_default() {
            "chat/turnStarted" => {
                match &script {
                    TurnScript::DropAfterDispatch => return false,
                    TurnScript::NoEcho => return true,
                    TurnScript::GarbageFirst => {
                        self.send_raw(conn, "this is not JSON".to_owned());
                        self.send_raw(
                            conn,
                            "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}".to_owned(),
                        );
                        self.send_raw(conn, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}".to_owned());
                    }
                    _ => {}
                }
                if busy {
                    self.reject(
                        conn,
                        &channel,
                        action,
                        origin,
                        "The chat already has an active turn",
                    );
                    return true;
                }
                if let TurnScript::Reject(reason) = &script {
                    self.reject(conn, &channel, action, origin, reason);
                    return true;
                }
                let parsed: Result<ahp_types::actions::ChatTurnStartedAction, _> =
                    serde_json::from_value(action.clone());
                let Ok(turn) = parsed else {
                    self.reject(
                        conn,
                        &channel,
                        action,
                        origin,
                        "Invalid chat/turnStarted action",
                    );
                    return true;
                };
                {
                    let mut state = self.state.lock();
                    if let Some(e) = state
                        .sessions
                        .iter_mut()
                        .find(|e| e.session.chat_uri() == channel)
                    {
                        e.active = Some(
                            json!({"id": turn.turn_id, "startedAt": turn.started_at, "message": action["message"]}),
                        );
                    }
                }
                self.broadcast(&channel, action, Some(origin));
                self.notify_status(|e| e.session.chat_uri() == channel);
                let shared = self.clone();
                tokio::spawn(super::turn::run(
                    shared,
                    super::turn::TurnRun {
                        conn,
                        session,
                        chat: channel,
                        turn_id: turn.turn_id,
                        text: turn.message.text,
                        model: turn.message.model.map(|m| m.id),
                        script,
                    },
                ));
            }
            "chat/toolCallConfirmed" => {
                let tool_call_id = action["toolCallId"].as_str().unwrap_or_default().to_owned();
                let turn_id = action["turnId"].as_str().unwrap_or_default();
                let pending = {
                    let mut state = self.state.lock();
                    match state.pending.get(&tool_call_id) {
                        Some(p) if p.turn_id == turn_id && p.chat == channel => {
                            state.pending.remove(&tool_call_id)
                        }
                        _ => None,
                    }
                };
                match pending {
                    Some(pending) => {
                        let approved = action["approved"].as_bool().unwrap_or(false);
                        self.resolve(pending, action, Some(origin), approved);
                    }
                    None => self.reject(
                        conn,
                        &channel,
                        action,
                        origin,
                        &format!("Tool call {tool_call_id} is not pending confirmation"),
                    ),
                }
            }
            other => {
                let reason = format!("The fake agent host does not take {other}");
                self.reject(conn, &channel, action, origin, &reason);
            }
        }
        true
    }
}

fn confirmed_action(turn_id: &str, tool_call_id: &str, approved: bool) -> Value {
    if approved {
        json!({"type": "chat/toolCallConfirmed", "turnId": turn_id, "toolCallId": tool_call_id, "approved": true, "confirmed": "user-action"})
    } else {
        json!({"type": "chat/toolCallConfirmed", "turnId": turn_id, "toolCallId": tool_call_id, "approved": false, "reason": "denied"})
    }
}

impl Entry {
    fn new(session: FakeSession) -> Self {
        let turns = match &session.model {
            Some(model) => vec![json!({
                "id": "earlier-turn", "startedAt": "2026-12-01T09:00:00.000Z",
                "message": {"text": "an earlier question", "origin": {"kind": "user"}, "model": {"id": model}},
                "responseParts": [{"kind": "markdown", "id": "earlier", "content": "an earlier answer"}],
                "state": "complete",
            })],
            None => Vec::new(),
        };
        let active = session.busy.then(|| {
            json!({"id": "editor-turn", "startedAt": "2026-12-02T18:00:00.000Z",
                "message": {"text": "the user's own question", "origin": {"kind": "user"}}})
        });
        Self {
            session,
            created_at: "2026-11-30T10:00:00.000Z".to_owned(),
            turns,
            active,
            input_needed: Vec::new(),
        }
    }

    fn status(&self) -> u32 {
        let mut bits = if self.active.is_some() { 8 } else { 1 };
        if !self.input_needed.is_empty() {
            bits |= 24;
        }
        if self.session.archived {
            bits |= 64;
        }
        bits
    }

    fn working_directories(&self) -> Value {
        json!(self.session.cwd.iter().collect::<Vec<_>>())
    }

    pub fn summary(&self) -> Value {
        json!({
            "provider": "copilotcli", "title": self.session.title, "status": self.status(),
            "resource": self.session.uri(), "createdAt": self.created_at,
            "modifiedAt": self.session.modified_at,
            "workingDirectories": self.working_directories(),
            "defaultChat": self.session.chat_uri(),
        })
    }

    fn session_state(&self) -> Value {
        json!({
            "provider": "copilotcli", "title": self.session.title, "status": self.status(),
            "lifecycle": self.session.lifecycle, "activeClients": [],
            "chats": [{"resource": self.session.chat_uri(), "title": self.session.title,
                "status": self.status(), "modifiedAt": self.session.modified_at}],
            "defaultChat": self.session.chat_uri(),
            "workingDirectories": self.working_directories(),
            "inputNeeded": self.input_needed,
        })
    }

    fn chat_state(&self) -> Value {
        let mut chat = json!({
            "resource": self.session.chat_uri(), "title": self.session.title,
            "status": self.status(), "modifiedAt": self.session.modified_at, "turns": self.turns,
        });
        if let Some(active) = &self.active {
            let mut active = active.clone();
            active["responseParts"] = json!([]);
            chat["activeTurn"] = active;
        }
        if let Some(interactivity) = &self.session.interactivity {
            chat["interactivity"] = json!(interactivity);
        }
        chat
    }
}

// ── The socket ───────────────────────────────────────────────────────────────────────────

pub(crate) async fn serve(
    shared: Arc<Shared>,
    listener: UnixListener,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(connection(shared.clone(), stream));
                }
                Err(err) => {
                    tracing::warn!(%err, "fake agent host accept failed");
                    return;
                }
            },
        }
    }
}

// The refusal's size is tungstenite's `Callback` signature, not ours.
#[allow(clippy::result_large_err)]
async fn connection(shared: Arc<Shared>, stream: UnixStream) {
    let token = shared.token.clone();
    let counted = shared.clone();
    let check = move |request: &Request, response: Response| {
        let ok = request.uri().query().is_some_and(|query| {
            query
                .split('&')
                .any(|pair| pair.strip_prefix("tkn=") == Some(token.as_str()))
        });
        if ok {
            Ok(response)
        } else {
            // Counted before the 403 is written, so a client that has read it sees the count.
            counted.refused.fetch_add(1, Ordering::SeqCst);
            let mut refusal = ErrorResponse::new(Some("Forbidden".to_owned()));
            *refusal.status_mut() = StatusCode::FORBIDDEN;
            Err(refusal)
        }
    };
    // The host reads big messages; only the client under test is meant to refuse them.
    let config = WebSocketConfig::default()
        .max_message_size(None)
        .max_frame_size(None);
    let mut ws =
        match tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)).await {
            Ok(ws) => ws,
            Err(_) => return,
        };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let id = {
        let mut state = shared.state.lock();
        state.next_conn += 1;
        let id = state.next_conn;
        state.conns.insert(
            id,
            Conn {
                client_id: String::new(),
                subs: HashSet::new(),
                tx,
            },
        );
        id
    };
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(Out::Text(text)) => {
                    if ws.send(Message::text(text)).await.is_err() {
                        break;
                    }
                }
                None => break,
            },
            inbound = ws.next() => match inbound {
                Some(Ok(Message::Text(text))) => {
                    let text = text.as_str().to_owned();
                    let message: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
                    shared
                        .received
                        .lock()
                        .push((message.clone(), std::time::SystemTime::now()));
                    if !handle(&shared, id, &message, &mut ws).await {
                        break;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
        }
    }
    shared.state.lock().conns.remove(&id);
}

/// One inbound message; false ends the connection.
async fn handle(
    shared: &Arc<Shared>,
    conn: u64,
    message: &Value,
    ws: &mut tokio_tungstenite::WebSocketStream<UnixStream>,
) -> bool {
    let method = message["method"].as_str().unwrap_or_default();
    let params = &message["params"];
    match message["id"].as_u64() {
        Some(id) => {
            let reply = shared.on_request(conn, id, method, params);
            ws.send(Message::text(reply.to_string())).await.is_ok()
        }
        None => match method {
            "dispatchAction" => shared.on_dispatch(conn, params),
            "unsubscribe" => {
                if let (Some(c), Some(channel)) = (
                    shared.state.lock().conns.get_mut(&conn),
                    params["channel"].as_str(),
                ) {
                    c.subs.remove(channel);
                }
                true
            }
            _ => true,
        },
    }
}
