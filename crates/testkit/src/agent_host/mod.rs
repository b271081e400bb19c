//! A fake VS Code Agent Host: AHP (JSON-RPC over a WebSocket) on a Unix socket, built from the
//! protocol's own types and docs (`docs/observed/copilot.md`), for tests of the `agent-host`
//! crate and of everything above it.
//!
//! It behaves like VS Code 1.141's host where the doc says how: the endpoint registry entry
//! (schema v2, owner-only), the `tkn` check at upgrade (403 otherwise), `0.10.0`-only
//! negotiation (`-32005` with `supportedVersions: ["^0.10.0"]`), `listSessions` with cursors,
//! `root/*` notifications (a status change too), session and chat subscriptions with
//! snapshots, echoes of dispatched actions with their origin (or a `rejectionReason`). A turn is answered by asking the scripted
//! [`crate::ModelEndpoint`] (Anthropic Messages, not streamed) and streaming its text back as
//! `chat/responsePart` + `chat/delta` + `chat/turnComplete`; each session's [`TurnScript`] can
//! make it ask for a tool confirmation first, fail, cancel, refuse, drop the connection, stay
//! silent, or send garbage or a 10 MB frame. Everything it receives is recorded.
//!
//! It runs its own tokio runtime on a thread, so it works from plain and tokio tests alike;
//! dropping the handle stops it and removes its registry entry.

mod registry;
mod server;
mod turn;
mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context as _;
use serde_json::Value;

pub use registry::{entries_dir, identity};
pub use wire::{HOST_PROTOCOL_VERSION, default_chat_uri, negotiate};

use server::Shared;

/// How a session's next turns go.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnScript {
    /// Echo, ask the model endpoint, stream its reply, complete.
    Answer,
    /// Echo, then a tool call waiting for confirmation (`chat/toolCallStart`,
    /// `chat/toolCallReady` without `confirmed`, and `session/inputNeededSet`); once confirmed
    /// (by a client or [`FakeAgentHost::editor_confirm`]) the turn is answered as usual.
    AskApproval {
        tool_name: String,
        display_name: String,
        message: String,
    },
    /// Echo, then `chat/error` with this message.
    Fail(String),
    /// Echo, then `chat/turnCancelled`.
    Cancel,
    /// Echo with this `rejectionReason`.
    Reject(String),
    /// Close the connection as soon as the `dispatchAction` arrives, before any echo.
    DropAfterDispatch,
    /// Take the turn without ever echoing it.
    NoEcho,
    /// Echo, then nothing more.
    Silent,
    /// Send frames that are not JSON-RPC first, then behave like [`TurnScript::Answer`].
    GarbageFirst,
    /// Echo, then send one 10 MB text frame.
    HugeFrameAfterEcho,
    /// Answer, but end with a `chat/turnComplete` whose fields drifted (a string `duration`),
    /// which `ahp-types` can only read as `StateAction::Unknown`.
    DriftedEnd,
}

/// A session the fake host serves.
#[derive(Debug, Clone)]
pub struct FakeSession {
    pub(crate) id: String,
    pub(crate) scheme: String,
    pub(crate) title: String,
    pub(crate) cwd: Option<String>,
    pub(crate) archived: bool,
    pub(crate) script: TurnScript,
    pub(crate) model: Option<String>,
    pub(crate) lifecycle: String,
    pub(crate) interactivity: Option<String>,
    pub(crate) busy: bool,
    pub(crate) modified_at: String,
    /// The `options` of its tool confirmations (`None`: Allow once / Deny).
    pub(crate) confirmation_options: Option<Value>,
}

impl FakeSession {
    /// A ready, idle session with a fresh UUID, answering through the model endpoint.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            scheme: "copilotcli".to_owned(),
            title: title.into(),
            cwd: None,
            archived: false,
            script: TurnScript::Answer,
            model: None,
            lifecycle: "ready".to_owned(),
            interactivity: None,
            busy: false,
            modified_at: "2026-12-02T17:59:00.000Z".to_owned(),
            confirmation_options: None,
        }
    }
    /// The `options` its [`TurnScript::AskApproval`] tool calls offer, as the host sends them
    /// (`[{id, label, kind, group?}]`), or `Value::Null` for none at all.
    pub fn confirmation_options(mut self, options: Value) -> Self {
        self.confirmation_options = Some(options);
        self
    }
    /// The editor's UUID (the URI's path).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }
    /// The URI scheme (`copilotcli` by default; `ahp-session` is the other one seen).
    pub fn scheme(mut self, scheme: impl Into<String>) -> Self {
        self.scheme = scheme.into();
        self
    }
    /// Its working directory, as a `file://` URI.
    pub fn cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }
    /// Status bit 64.
    pub fn archived(mut self) -> Self {
        self.archived = true;
        self
    }
    pub fn script(mut self, script: TurnScript) -> Self {
        self.script = script;
        self
    }
    /// A completed earlier turn whose message selected this model (what a new turn should
    /// carry on).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
    /// `creating`, `ready` or `failed`.
    pub fn lifecycle(mut self, lifecycle: impl Into<String>) -> Self {
        self.lifecycle = lifecycle.into();
        self
    }
    /// `full`, `read-only` or `hidden`.
    pub fn interactivity(mut self, interactivity: impl Into<String>) -> Self {
        self.interactivity = Some(interactivity.into());
        self
    }
    /// The chat has an active turn (the user's, started in the editor).
    pub fn busy(mut self) -> Self {
        self.busy = true;
        self
    }
    /// ISO 8601; the listing is ordered by it, newest first.
    pub fn modified_at(mut self, at: impl Into<String>) -> Self {
        self.modified_at = at.into();
        self
    }
    /// `<scheme>:/<id>`.
    pub fn uri(&self) -> String {
        format!("{}:/{}", self.scheme, self.id)
    }
    /// The default chat's URI.
    pub fn chat_uri(&self) -> String {
        default_chat_uri(&self.uri())
    }
}

/// Builds a [`FakeAgentHost`].
#[derive(Debug)]
pub struct FakeAgentHostBuilder {
    user_data: PathBuf,
    sessions: Vec<FakeSession>,
    model_url: Option<String>,
    page_size: usize,
    version: String,
}

impl FakeAgentHostBuilder {
    /// The protocol version the host speaks ([`HOST_PROTOCOL_VERSION`] unless told), negotiated
    /// by VS Code's rule.
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }
    /// Where turns get their answers: the endpoint's Anthropic Messages route.
    pub fn model_endpoint(mut self, endpoint: &crate::ModelEndpoint) -> Self {
        self.model_url = Some(format!("{}/v1/messages", endpoint.anthropic_base_url()));
        self
    }
    pub fn session(mut self, session: FakeSession) -> Self {
        self.sessions.push(session);
        self
    }
    /// The most summaries one `listSessions` page holds (the client's `limit` may lower it).
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// Binds the socket, starts serving, then writes the registry entry.
    pub fn start(self) -> anyhow::Result<FakeAgentHost> {
        let socket_dir = tempfile::Builder::new()
            .prefix("vscode-ah-")
            .tempdir()
            .context("creating the socket directory")?;
        let instance_id = wire::random_base64url(16);
        let token = wire::random_base64url(32);
        let socket = socket_dir.path().join(format!("{instance_id}.sock"));
        let listener = std::os::unix::net::UnixListener::bind(&socket)
            .with_context(|| format!("binding {}", socket.display()))?;
        listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared::new(
            token.clone(),
            self.model_url,
            self.page_size,
            self.version.clone(),
            self.sessions,
        ));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("starting the fake host's runtime")?;
        let handle = runtime.handle().clone();
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fake-agent-host".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    match tokio::net::UnixListener::from_std(listener) {
                        Ok(listener) => server::serve(serving, listener, stop_rx).await,
                        Err(err) => tracing::error!(%err, "fake agent host cannot listen"),
                    }
                });
                runtime.shutdown_background();
            })?;
        let entry = registry::write(
            &self.user_data,
            &registry::Entry {
                pid: std::process::id(),
                instance_id: &instance_id,
                socket: &socket,
                token: &token,
                protocol_version: &self.version,
            },
        )?;
        Ok(FakeAgentHost {
            shared,
            runtime: handle,
            socket,
            token,
            instance_id,
            entry,
            stop: Some(stop_tx),
            thread: Some(thread),
            _socket_dir: socket_dir,
        })
    }
}

/// A `chat/turnComplete` the host sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedTurn {
    pub turn_id: String,
    pub chat: String,
    /// Taken just before the action was queued for the subscribed connections: wall-clock, so
    /// that a daemon in another process can be measured against it.
    pub at: std::time::SystemTime,
}

/// A running fake Agent Host; dropping it stops it and removes its registry entry.
pub struct FakeAgentHost {
    shared: Arc<Shared>,
    /// The host's runtime, for the turns a test starts as the editor.
    runtime: tokio::runtime::Handle,
    socket: PathBuf,
    token: String,
    instance_id: String,
    entry: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    _socket_dir: tempfile::TempDir,
}

impl std::fmt::Debug for FakeAgentHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeAgentHost")
            .field("socket", &self.socket)
            .field("entry", &self.entry)
            .finish()
    }
}

impl FakeAgentHost {
    /// A host whose registry entry goes under `user_data` (VS Code's user data directory).
    pub fn builder(user_data: impl AsRef<Path>) -> FakeAgentHostBuilder {
        FakeAgentHostBuilder {
            user_data: user_data.as_ref().to_path_buf(),
            sessions: Vec::new(),
            model_url: None,
            page_size: 200,
            version: HOST_PROTOCOL_VERSION.to_owned(),
        }
    }
    /// The socket it listens on (`endpoint.path`).
    pub fn socket(&self) -> &Path {
        &self.socket
    }
    /// Its `connectionToken`.
    pub fn token(&self) -> &str {
        &self.token
    }
    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }
    /// Its registry entry file.
    pub fn entry_path(&self) -> &Path {
        &self.entry
    }
    /// Every message received, in order (a frame that is not JSON as a JSON string).
    pub fn received(&self) -> Vec<Value> {
        self.shared
            .received
            .lock()
            .iter()
            .map(|(message, _)| message.clone())
            .collect()
    }
    /// Every message received, with when it was read off the socket.
    pub fn received_at(&self) -> Vec<(Value, std::time::SystemTime)> {
        self.shared.received.lock().clone()
    }
    /// The `params` of every `dispatchAction` received, with when it was read off the socket
    /// (wall clock, for benches measuring a daemon in another process).
    pub fn dispatched_at(&self) -> Vec<(Value, std::time::SystemTime)> {
        self.shared
            .received
            .lock()
            .iter()
            .filter(|(m, _)| m["method"] == "dispatchAction")
            .map(|(m, at)| (m["params"].clone(), *at))
            .collect()
    }
    /// The `params` of every `dispatchAction` received.
    pub fn dispatched(&self) -> Vec<Value> {
        self.received()
            .into_iter()
            .filter(|m| m["method"] == "dispatchAction")
            .map(|m| m["params"].clone())
            .collect()
    }
    /// Every turn it completed (`chat/turnComplete` sent), in order, with when.
    pub fn completed_turns(&self) -> Vec<CompletedTurn> {
        self.shared.completed.lock().clone()
    }
    /// How many upgrades were refused for a missing or wrong token.
    pub fn refused_upgrades(&self) -> usize {
        self.shared
            .refused
            .load(std::sync::atomic::Ordering::SeqCst)
    }
    /// Adds a session and tells root subscribers (`root/sessionAdded`).
    pub fn add_session(&self, session: FakeSession) {
        self.shared.add_session(session);
    }
    /// Removes a session and tells root subscribers (`root/sessionRemoved`).
    pub fn remove_session(&self, uri: &str) {
        self.shared.remove_session(uri);
    }
    /// Renames a session and tells root subscribers (`root/sessionSummaryChanged`).
    pub fn rename_session(&self, uri: &str, title: &str) {
        self.shared.rename_session(uri, title);
    }
    /// Puts `item` on the first `listSessions` page as it is: a summary a client cannot parse.
    pub fn list_unparsable(&self, item: serde_json::Value) {
        self.shared.list_unparsable(item);
    }
    /// Starts a turn in the session `uri` as the editor's user would (another client), run by
    /// the session's [`TurnScript`]; the turn's id, or `None` when the session is unknown or
    /// busy.
    pub fn editor_turn(&self, uri: &str, text: &str) -> Option<String> {
        let _entered = self.runtime.enter();
        self.shared.editor_turn(uri, text)
    }
    /// Answers a pending tool confirmation as the editor would (another client). Returns
    /// whether one was pending.
    pub fn editor_confirm(&self, tool_call_id: &str, approved: bool) -> bool {
        self.shared.editor_confirm(tool_call_id, approved)
    }
    /// The tool calls waiting for confirmation.
    pub fn pending_tool_calls(&self) -> Vec<String> {
        self.shared.pending_tool_calls()
    }
}

impl Drop for FakeAgentHost {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.entry);
    }
}
