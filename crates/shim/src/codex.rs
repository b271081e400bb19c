//! Codex's panel wire: `codex app-server` JSON-RPC over stdio, as `chatgpt.cliExecutable` runs it.
//!
//! What the real app-server does (docs/observed/codex.md) decides every rule here:
//! - Threads become targets only from what the extension itself sends (`thread/start`,
//!   `thread/resume`, `turn/start`, `turn/steer` and their responses); a thread id seen only in
//!   a notification is never enough, and sub-agent threads (which reject direct input) never are.
//! - A `turn/start` on a busy thread *steers* the running turn and the first answer is lost, so
//!   an injection is written only while its thread is idle and otherwise waits.
//! - Our requests carry string ids `xagent-<n>`; their responses are swallowed. Server→client
//!   requests (approvals) have their own integer ids from 0, answered by the extension's lines
//!   going the other way, so the two id spaces are kept apart by direction.
//! - A new conversation is `thread/start` with `threadSource: "user"`, named with
//!   `thread/name/set`, and its first turn waits (bounded) for its MCP servers to be ready:
//!   Codex itself waits only about a second and then runs the turn without their tools.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;

use cross_agent_protocol::panel::{
    ApprovalAnswer, Injection, InjectionKind, PanelSession, PanelSessionState, PendingApproval,
    ShimEvent,
};
use serde_json::{Map, Value, json};

use crate::adapter::{Action, InjectionId, PanelAdapter, Side, approval_answered};
use crate::rpc::{
    self, Message, XAGENT_ID_PREFIX, error_message, id_key, id_text, str_field, to_line, trimmed,
};

/// The error Codex gives a thread that takes no direct input (a multi-agent sub-agent).
const DIRECT_INPUT_REFUSED: &str = "direct app-server input is not allowed";

/// The server→client requests that ask the panel for an approval.
const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";
const ELICITATION: &str = "mcpServer/elicitation/request";
/// A grant of extra sandbox permissions: tracked so the wait shows, but its answer is a set of
/// permissions only the panel can choose.
const PERMISSIONS_APPROVAL: &str = "item/permissions/requestApproval";

/// The extension's requests and notifications the adapter reads.
const EXTENSION_METHODS: [&str; 5] = [
    "initialized",
    "thread/start",
    "thread/resume",
    "turn/start",
    "turn/steer",
];

/// The app-server's requests and notifications the adapter reads; the rest (text deltas, token
/// counts, …) pass on unread.
const AGENT_METHODS: [&str; 16] = [
    COMMAND_APPROVAL,
    FILE_CHANGE_APPROVAL,
    ELICITATION,
    PERMISSIONS_APPROVAL,
    "thread/started",
    "thread/status/changed",
    "turn/started",
    "item/started",
    "item/completed",
    "turn/completed",
    "thread/name/updated",
    "mcpServer/startupStatus/updated",
    "serverRequest/resolved",
    "thread/closed",
    "thread/archived",
    "thread/deleted",
];

/// How long a new conversation's first turn waits for the thread's MCP servers.
const MCP_STARTUP_PATIENCE_MS: u64 = 10_000;
/// How long after a new thread opens before it is taken as having no MCP server starting, when
/// the configuration could not be read: Codex announces `starting` right after `thread/started`.
const MCP_ANNOUNCE_GRACE_MS: u64 = 1_000;

/// Longest approval detail kept for the registration.
const DETAIL_CHARS: usize = 400;

/// The Codex app-server adapter.
#[derive(Debug)]
pub struct CodexAdapter {
    /// The extension's `initialized` went through: only then may a line of ours go in.
    initialized: bool,
    next_request: u64,
    /// Where a new conversation opens when the extension never said (the shim's cwd).
    default_cwd: Option<String>,
    /// The extension's last `thread/start` params, so a thread we open has the panel's settings.
    extension_thread_params: Option<Map<String, Value>>,
    threads: BTreeMap<String, Thread>,
    /// Sub-agent and refusing threads: never targets, whatever the extension sends later.
    excluded: BTreeSet<String>,
    /// The extension's requests whose responses tell about threads, by id key.
    extension_requests: HashMap<String, ExtensionRequest>,
    /// Our own requests, by their `xagent-` id.
    own_requests: HashMap<String, OwnRequest>,
    /// Approvals the app-server waits on, by the server request's id key.
    approvals: BTreeMap<String, Approval>,
    /// The `changes` of file-change items started and not completed, by item id: a file-change
    /// approval names only the item, and the phone's card must show the diff it would make.
    file_changes: HashMap<String, Value>,
    injections: BTreeMap<InjectionId, Pending>,
    sessions_changed: bool,
}

#[derive(Debug)]
struct Thread {
    cwd: Option<String>,
    state: PanelSessionState,
    opened_at_ms: u64,
    last_human_input_ms: Option<u64>,
    last_activity_ms: Option<u64>,
    has_history: bool,
    title: Option<String>,
    /// The running turn, from `turn/started`.
    turn_id: Option<String>,
    /// MCP servers announced `starting` and not yet `ready`.
    mcp_starting: BTreeSet<String>,
    /// MCP servers that announced they are done starting (ready or not).
    mcp_settled: BTreeSet<String>,
    /// Until when a turn of ours waits for them (Codex itself waits only about a second, then
    /// runs the turn without their tools).
    mcp_patience_until_ms: Option<u64>,
    /// The delivery whose turn runs now (a bridged turn).
    bridged_delivery_id: Option<String>,
}

#[derive(Debug)]
enum ExtensionRequest {
    ThreadStart,
    ThreadResume,
    /// `turn/start` / `turn/steer` into this thread.
    Input(String),
}

#[derive(Debug)]
enum OwnRequest {
    ThreadStart(InjectionId),
    ConfigRead(InjectionId),
    NameSet,
    TurnStart(InjectionId),
}

#[derive(Debug)]
struct Approval {
    id: Value,
    method: String,
    thread: Option<String>,
    approval: PendingApproval,
}

#[derive(Debug)]
struct Pending {
    injection: Injection,
    /// The thread it goes to; `None` while a new conversation is still to be opened.
    thread: Option<String>,
    stage: Stage,
    /// The daemon still listens.
    connected: bool,
    /// Already moved once to a new conversation after its thread refused it.
    retried: bool,
    /// The latest `agentMessage` text of its turn.
    answer: Option<String>,
    /// The MCP servers a new conversation's first turn waits for.
    mcp_expected: McpExpected,
}

/// The MCP servers a new thread will start, from `config/read` (its `mcp_servers` table).
#[derive(Debug, Clone, PartialEq)]
enum McpExpected {
    /// Not asked, or not answered yet.
    Unknown,
    /// The enabled servers by name.
    Known(BTreeSet<String>),
    /// The configuration could not be read: wait for announcements for a short grace.
    Unreadable,
}

#[derive(Debug, Clone, PartialEq)]
enum Stage {
    /// Waits for the extension's `initialized` or for its thread to be idle.
    Queued,
    /// Our `thread/start` went in; waiting for the thread.
    OpeningThread,
    /// The new thread is there; its first turn waits for its MCP servers.
    AwaitingMcp { opened_ms: u64 },
    /// Our `turn/start` went in; waiting for its response.
    Starting,
    /// The turn runs (its id once known).
    Running { turn_id: Option<String> },
}

impl CodexAdapter {
    /// `args` are the app-server's own arguments (`app-server [--flags]`); nothing in them
    /// changes the wire today.
    pub fn new(_args: &[OsString]) -> Self {
        Self {
            initialized: false,
            next_request: 0,
            default_cwd: std::env::current_dir()
                .ok()
                .map(|cwd| cwd.to_string_lossy().into_owned()),
            extension_thread_params: None,
            threads: BTreeMap::new(),
            excluded: BTreeSet::new(),
            extension_requests: HashMap::new(),
            own_requests: HashMap::new(),
            approvals: BTreeMap::new(),
            file_changes: HashMap::new(),
            injections: BTreeMap::new(),
            sessions_changed: false,
        }
    }

    /// Where a new conversation opens when the extension never started a thread itself.
    pub fn with_default_cwd(mut self, cwd: Option<String>) -> Self {
        self.default_cwd = cwd;
        self
    }

    fn next_id(&mut self) -> String {
        self.next_request += 1;
        format!("{XAGENT_ID_PREFIX}{}", self.next_request)
    }

    fn report(&self, id: InjectionId, event: ShimEvent, out: &mut Vec<Action>) {
        if self.injections.get(&id).is_some_and(|p| p.connected) {
            out.push(Action::Report(id, event));
        }
    }

    /// Reports the injection's last event and forgets it.
    fn finish(&mut self, id: InjectionId, event: ShimEvent, out: &mut Vec<Action>) {
        if let Some(pending) = self.injections.remove(&id)
            && pending.connected
        {
            out.push(Action::Report(id, event));
            out.push(Action::Close(id));
        }
    }

    fn mark_changed(&mut self) {
        self.sessions_changed = true;
    }

    /// Adds (or refreshes) a target from a Thread object the app-server returned to a request
    /// the extension or we sent. Sub-agent threads are excluded instead.
    fn adopt_thread(&mut self, thread: &Value, now_ms: u64) -> Option<String> {
        let id = str_field(thread, "id")?.to_owned();
        if is_sub_agent(thread) || is_ephemeral(thread) {
            self.exclude(&id);
            return None;
        }
        if self.excluded.contains(&id) {
            return None;
        }
        let entry = self.threads.entry(id.clone()).or_insert_with(|| Thread {
            cwd: None,
            state: PanelSessionState::Idle,
            opened_at_ms: now_ms,
            last_human_input_ms: None,
            last_activity_ms: Some(now_ms),
            has_history: false,
            title: None,
            turn_id: None,
            mcp_starting: BTreeSet::new(),
            mcp_settled: BTreeSet::new(),
            mcp_patience_until_ms: None,
            bridged_delivery_id: None,
        });
        if let Some(cwd) = str_field(thread, "cwd") {
            entry.cwd = Some(cwd.to_owned());
        }
        if let Some(name) = str_field(thread, "name") {
            entry.title = Some(name.to_owned());
        }
        let turns = thread.get("turns").and_then(Value::as_array);
        if turns.is_some_and(|turns| !turns.is_empty())
            || str_field(thread, "preview").is_some_and(|p| !p.is_empty())
        {
            entry.has_history = true;
        }
        if let Some(status) = thread.get("status") {
            entry.state = state_of(status, entry.state);
        }
        self.mark_changed();
        Some(id)
    }

    /// A thread the extension sent input to: a target from now on, unless excluded.
    fn touch_thread(&mut self, id: &str, now_ms: u64) -> bool {
        if self.excluded.contains(id) {
            return false;
        }
        if !self.threads.contains_key(id) {
            self.adopt_thread(&json!({"id": id}), now_ms);
        }
        true
    }

    fn exclude(&mut self, id: &str) {
        self.excluded.insert(id.to_owned());
        if self.threads.remove(id).is_some() {
            self.mark_changed();
        }
    }

    fn set_state(&mut self, thread: &str, state: PanelSessionState) {
        if let Some(entry) = self.threads.get_mut(thread)
            && entry.state != state
        {
            entry.state = state;
            self.sessions_changed = true;
        }
    }

    /// Whether a turn of ours may go into `thread` now.
    fn is_free(&self, thread: &str, now_ms: u64) -> bool {
        let idle = self.threads.get(thread).is_some_and(|t| {
            let mcp_starting = !t.mcp_starting.is_empty()
                && t.mcp_patience_until_ms.is_some_and(|until| now_ms < until);
            t.state == PanelSessionState::Idle && !mcp_starting
        });
        idle && !self.injections.values().any(|p| {
            p.thread.as_deref() == Some(thread)
                && matches!(
                    p.stage,
                    Stage::AwaitingMcp { .. } | Stage::Starting | Stage::Running { .. }
                )
        })
    }

    /// Starts every queued injection whose thread can take it now.
    fn dispatch(&mut self, now_ms: u64, out: &mut Vec<Action>) {
        if !self.initialized {
            return;
        }
        let ids: Vec<InjectionId> = self.injections.keys().copied().collect();
        for id in ids {
            let Some(pending) = self.injections.get(&id) else {
                continue;
            };
            match (&pending.stage, pending.thread.clone()) {
                (Stage::Queued, None) => self.open_thread(id, out),
                (Stage::Queued, Some(thread)) => {
                    if !self.threads.contains_key(&thread) {
                        self.finish(
                            id,
                            ShimEvent::Failed {
                                reason: format!(
                                    "codex thread {thread} is no longer open in this panel"
                                ),
                                delivered: false,
                            },
                            out,
                        );
                    } else if self.is_free(&thread, now_ms) {
                        self.start_turn(id, &thread, out);
                    }
                }
                (Stage::AwaitingMcp { opened_ms }, Some(thread)) => {
                    let opened_ms = *opened_ms;
                    let Some(entry) = self.threads.get(&thread) else {
                        continue;
                    };
                    let starting = !entry.mcp_starting.is_empty();
                    let ready = match &pending.mcp_expected {
                        McpExpected::Known(names) => {
                            !starting && names.is_subset(&entry.mcp_settled)
                        }
                        McpExpected::Unreadable => {
                            !starting && now_ms >= opened_ms + MCP_ANNOUNCE_GRACE_MS
                        }
                        McpExpected::Unknown => false,
                    };
                    if ready || now_ms >= opened_ms + MCP_STARTUP_PATIENCE_MS {
                        self.start_turn(id, &thread, out);
                    }
                }
                _ => {}
            }
        }
    }

    /// Our `thread/start` for an injection that needs a new conversation.
    fn open_thread(&mut self, id: InjectionId, out: &mut Vec<Action>) {
        let mut params = self.extension_thread_params.clone().unwrap_or_default();
        // A thread the extension never asked for must not be ephemeral or tied to a session
        // source the extension set for its own.
        params.remove("ephemeral");
        params.remove("sessionStartSource");
        params.insert("threadSource".into(), json!("user"));
        if !params.contains_key("cwd")
            && let Some(cwd) = &self.default_cwd
        {
            params.insert("cwd".into(), json!(cwd));
        }
        let cwd = params.get("cwd").cloned().unwrap_or(Value::Null);
        let request_id = self.next_id();
        out.push(Action::ToAgent(to_line(&json!({
            "id": request_id,
            "method": "thread/start",
            "params": params,
        }))));
        self.own_requests
            .insert(request_id, OwnRequest::ThreadStart(id));
        // Which MCP servers the thread will start, so its first turn waits for exactly those.
        let request_id = self.next_id();
        out.push(Action::ToAgent(to_line(&json!({
            "id": request_id,
            "method": "config/read",
            "params": {"cwd": cwd},
        }))));
        self.own_requests
            .insert(request_id, OwnRequest::ConfigRead(id));
        if let Some(pending) = self.injections.get_mut(&id) {
            pending.stage = Stage::OpeningThread;
        }
    }

    /// Our `turn/start` into an idle thread.
    fn start_turn(&mut self, id: InjectionId, thread: &str, out: &mut Vec<Action>) {
        let Some(pending) = self.injections.get_mut(&id) else {
            return;
        };
        pending.stage = Stage::Starting;
        let text = pending.injection.text.clone();
        let delivery_id = pending.injection.delivery_id.clone();
        let request_id = self.next_id();
        out.push(Action::ToAgent(to_line(&json!({
            "id": request_id,
            "method": "turn/start",
            "params": {
                "threadId": thread,
                "input": [{"type": "text", "text": text}],
                "clientUserMessageId": request_id,
            },
        }))));
        self.own_requests
            .insert(request_id, OwnRequest::TurnStart(id));
        if let Some(entry) = self.threads.get_mut(thread) {
            // Busy from now: the response comes before `turn/started`, and a second turn/start
            // in between would steer ours.
            entry.state = PanelSessionState::Working;
            entry.has_history = true;
            entry.bridged_delivery_id = Some(delivery_id);
        }
        self.mark_changed();
    }

    fn on_extension(&mut self, message: Message<'_>, now_ms: u64, out: &mut Vec<Action>) {
        match message {
            Message::Request { id, method, params } => {
                let thread = str_field(params, "threadId").map(str::to_owned);
                let request = match (method, thread) {
                    ("thread/start", _) => {
                        self.extension_thread_params = params.as_object().cloned();
                        Some(ExtensionRequest::ThreadStart)
                    }
                    ("thread/resume", Some(_)) => Some(ExtensionRequest::ThreadResume),
                    ("turn/start" | "turn/steer", Some(thread)) => {
                        if self.touch_thread(&thread, now_ms)
                            && let Some(entry) = self.threads.get_mut(&thread)
                        {
                            entry.last_human_input_ms = Some(now_ms);
                            entry.last_activity_ms = Some(now_ms);
                            entry.has_history = true;
                            if entry.state == PanelSessionState::Idle {
                                entry.state = PanelSessionState::Working;
                            }
                            self.sessions_changed = true;
                        }
                        Some(ExtensionRequest::Input(thread))
                    }
                    _ => None,
                };
                if let Some(request) = request {
                    self.extension_requests.insert(id_key(id), request);
                }
            }
            Message::Notification { method, .. } => {
                if method == "initialized" {
                    self.initialized = true;
                    self.dispatch(now_ms, out);
                }
            }
            Message::Response { id, result, error } => {
                // The extension answering a server request: an approval decided in the panel.
                let Some(approval) = self.approvals.remove(&id_key(id)) else {
                    return;
                };
                let allowed = error.is_none() && is_allowing(result);
                self.resolve_approval(approval, allowed, out);
            }
        }
    }

    fn resolve_approval(&mut self, approval: Approval, allowed: bool, out: &mut Vec<Action>) {
        self.mark_changed();
        if let Some(thread) = &approval.thread {
            let still_waiting = self
                .approvals
                .values()
                .any(|a| a.thread.as_deref() == Some(thread));
            if !still_waiting
                && self
                    .threads
                    .get(thread)
                    .is_some_and(|t| t.state == PanelSessionState::AwaitingApproval)
            {
                self.set_state(thread, PanelSessionState::Working);
            }
        }
        if let Some(injection) = self.bridged_injection(approval.thread.as_deref()) {
            self.report(
                injection,
                ShimEvent::ApprovalResolved {
                    request_id: approval.approval.request_id,
                    allowed,
                },
                out,
            );
        }
    }

    /// The injection whose turn runs in `thread`, if one does.
    fn bridged_injection(&self, thread: Option<&str>) -> Option<InjectionId> {
        let thread = thread?;
        self.injections.iter().find_map(|(id, p)| {
            (p.thread.as_deref() == Some(thread)
                && matches!(p.stage, Stage::Starting | Stage::Running { .. }))
            .then_some(*id)
        })
    }

    fn on_agent(&mut self, message: Message<'_>, now_ms: u64, out: &mut Vec<Action>) -> bool {
        match message {
            Message::Response { id, result, error } => {
                if let Some(own) = id
                    .as_str()
                    .filter(|id| id.starts_with(XAGENT_ID_PREFIX))
                    .and_then(|id| self.own_requests.remove(id))
                {
                    self.on_own_response(own, result, error, now_ms, out);
                    return false;
                }
                if let Some(request) = self.extension_requests.remove(&id_key(id)) {
                    self.on_extension_response(request, result, error, now_ms);
                }
            }
            Message::Request { id, method, params } => {
                if matches!(
                    method,
                    COMMAND_APPROVAL | FILE_CHANGE_APPROVAL | ELICITATION | PERMISSIONS_APPROVAL
                ) {
                    self.on_approval_request(id, method, params, now_ms, out);
                }
            }
            Message::Notification { method, params } => {
                self.on_notification(method, params, now_ms, out);
            }
        }
        true
    }

    fn on_extension_response(
        &mut self,
        request: ExtensionRequest,
        result: &Value,
        error: Option<&Value>,
        now_ms: u64,
    ) {
        match (request, error) {
            (ExtensionRequest::ThreadStart | ExtensionRequest::ThreadResume, None) => {
                if let Some(thread) = result.get("thread") {
                    self.adopt_thread(thread, now_ms);
                }
            }
            (ExtensionRequest::Input(thread), Some(error)) => {
                if error_message(error).contains(DIRECT_INPUT_REFUSED) {
                    self.exclude(&thread);
                } else if self
                    .threads
                    .get(&thread)
                    .is_some_and(|t| t.turn_id.is_none())
                {
                    // The turn never started: the thread is as idle as before.
                    self.set_state(&thread, PanelSessionState::Idle);
                }
            }
            _ => {}
        }
    }

    fn on_own_response(
        &mut self,
        request: OwnRequest,
        result: &Value,
        error: Option<&Value>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        match request {
            OwnRequest::NameSet => {}
            OwnRequest::ThreadStart(id) => self.on_thread_opened(id, result, error, now_ms, out),
            OwnRequest::ConfigRead(id) => {
                let expected = match (error, result.pointer("/config/mcp_servers")) {
                    (None, Some(Value::Object(servers))) => McpExpected::Known(
                        servers
                            .iter()
                            .filter(|(_, server)| server.get("enabled") != Some(&json!(false)))
                            .map(|(name, _)| name.clone())
                            .collect(),
                    ),
                    (None, None | Some(Value::Null)) => McpExpected::Known(BTreeSet::new()),
                    _ => McpExpected::Unreadable,
                };
                if let Some(pending) = self.injections.get_mut(&id) {
                    pending.mcp_expected = expected;
                }
                self.dispatch(now_ms, out);
            }
            OwnRequest::TurnStart(id) => self.on_turn_started(id, result, error, now_ms, out),
        }
    }

    fn on_thread_opened(
        &mut self,
        id: InjectionId,
        result: &Value,
        error: Option<&Value>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let thread = match error {
            None => result
                .get("thread")
                .and_then(|thread| self.adopt_thread(thread, now_ms)),
            Some(_) => None,
        };
        let Some(thread) = thread else {
            let reason = error.map_or_else(
                || "codex opened no usable thread for the new conversation".to_owned(),
                |e| {
                    format!(
                        "codex could not open a new conversation: {}",
                        error_message(e)
                    )
                },
            );
            self.finish(
                id,
                ShimEvent::Failed {
                    reason,
                    delivered: false,
                },
                out,
            );
            return;
        };
        let title = self
            .injections
            .get(&id)
            .and_then(|p| p.injection.title.clone());
        if let Some(title) = title {
            let request_id = self.next_id();
            out.push(Action::ToAgent(to_line(&json!({
                "id": request_id,
                "method": "thread/name/set",
                "params": {"threadId": thread, "name": title},
            }))));
            self.own_requests.insert(request_id, OwnRequest::NameSet);
        }
        if let Some(pending) = self.injections.get_mut(&id) {
            pending.thread = Some(thread.clone());
            pending.stage = Stage::AwaitingMcp { opened_ms: now_ms };
        }
        self.report(
            id,
            ShimEvent::SessionStarted {
                session_id: thread.clone(),
            },
            out,
        );
        // Nobody typed into it: the extension shows it in its list, the human has not used it.
        self.dispatch(now_ms, out);
    }

    fn on_turn_started(
        &mut self,
        id: InjectionId,
        result: &Value,
        error: Option<&Value>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let Some(pending) = self.injections.get(&id) else {
            return;
        };
        let thread = pending.thread.clone();
        let retried = pending.retried;
        let kind = pending.injection.kind;
        if let Some(error) = error {
            let message = error_message(error);
            if let Some(thread) = &thread {
                if let Some(entry) = self.threads.get_mut(thread) {
                    entry.bridged_delivery_id = None;
                    if entry.turn_id.is_none() {
                        entry.state = PanelSessionState::Idle;
                    }
                }
                if message.contains(DIRECT_INPUT_REFUSED) {
                    self.exclude(thread);
                }
            }
            let may_retry = message.contains(DIRECT_INPUT_REFUSED) && !retried;
            if may_retry {
                if let Some(pending) = self.injections.get_mut(&id) {
                    pending.retried = true;
                    pending.thread = None;
                    pending.stage = Stage::Queued;
                }
                self.dispatch(now_ms, out);
            } else {
                self.finish(
                    id,
                    ShimEvent::Failed {
                        reason: format!("codex refused the turn: {message}"),
                        delivered: false,
                    },
                    out,
                );
            }
            self.mark_changed();
            return;
        }
        let turn_id = result
            .get("turn")
            .and_then(|turn| str_field(turn, "id"))
            .map(str::to_owned);
        if kind == InjectionKind::Request {
            if let Some(pending) = self.injections.get_mut(&id) {
                pending.stage = Stage::Running { turn_id };
            }
        } else {
            // Return traffic expects no answer: it is done once the app-server took the turn.
            // The thread stays busy by its own notifications until that turn ends.
            if let Some(entry) = thread.as_ref().and_then(|t| self.threads.get_mut(t)) {
                entry.bridged_delivery_id = None;
            }
            self.finish(id, ShimEvent::Written { session_id: thread }, out);
        }
    }

    fn on_approval_request(
        &mut self,
        id: &Value,
        method: &str,
        params: &Value,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let thread = str_field(params, "threadId").map(str::to_owned);
        let (tool, detail) = approval_subject(method, params);
        let input = match method {
            COMMAND_APPROVAL => Some(json!({
                "command": str_field(params, "command").unwrap_or_default(),
                "cwd": str_field(params, "cwd"),
                "reason": str_field(params, "reason"),
            })),
            FILE_CHANGE_APPROVAL => str_field(params, "itemId")
                .and_then(|item| self.file_changes.get(item))
                .map(|changes| json!({"changes": changes})),
            ELICITATION => params
                .get("_meta")
                .and_then(|meta| meta.get("tool_params"))
                .cloned(),
            _ => None,
        }
        .and_then(|input| crate::claude::whole_input(&input));
        let delivery_id = thread
            .as_deref()
            .and_then(|t| self.threads.get(t))
            .and_then(|t| t.bridged_delivery_id.clone());
        let approval = PendingApproval {
            request_id: id_text(id),
            kind: method.to_owned(),
            tool,
            detail,
            since_ms: now_ms,
            delivery_id,
            input,
        };
        if let Some(thread) = &thread {
            self.set_state(thread, PanelSessionState::AwaitingApproval);
        }
        if let Some(injection) = self.bridged_injection(thread.as_deref()) {
            self.report(
                injection,
                ShimEvent::ApprovalPending {
                    approval: approval.clone(),
                },
                out,
            );
        }
        self.approvals.insert(
            id_key(id),
            Approval {
                id: id.clone(),
                method: method.to_owned(),
                thread,
                approval,
            },
        );
        self.mark_changed();
    }

    fn on_notification(
        &mut self,
        method: &str,
        params: &Value,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let Some(thread) = str_field(params, "threadId").map(str::to_owned) else {
            return;
        };
        if let Some(entry) = self.threads.get_mut(&thread) {
            entry.last_activity_ms = Some(now_ms);
        }
        match method {
            "thread/started" => {
                // Never creates a target; tells us whether a known one is a sub-agent.
                if let Some(object) = params.get("thread")
                    && self.threads.contains_key(&thread)
                    && is_sub_agent(object)
                {
                    self.exclude(&thread);
                }
            }
            "thread/status/changed" => {
                if let Some((entry, status)) = self.threads.get(&thread).zip(params.get("status")) {
                    let state = state_of(status, entry.state);
                    self.set_state(&thread, state);
                }
            }
            "turn/started" => {
                let turn_id = params
                    .get("turn")
                    .and_then(|turn| str_field(turn, "id"))
                    .map(str::to_owned);
                if let Some(entry) = self.threads.get_mut(&thread) {
                    entry.turn_id = turn_id.clone();
                    entry.has_history = true;
                    if entry.state == PanelSessionState::Idle {
                        entry.state = PanelSessionState::Working;
                        self.sessions_changed = true;
                    }
                }
                for pending in self.injections.values_mut() {
                    if pending.thread.as_deref() == Some(thread.as_str())
                        && pending.stage == (Stage::Running { turn_id: None })
                    {
                        pending.stage = Stage::Running {
                            turn_id: turn_id.clone(),
                        };
                    }
                }
            }
            "item/started" => {
                let item = params.get("item").unwrap_or(&Value::Null);
                if str_field(item, "type") == Some("fileChange")
                    && let (Some(id), Some(changes)) = (str_field(item, "id"), item.get("changes"))
                {
                    self.file_changes.insert(id.to_owned(), changes.clone());
                }
            }
            "item/completed" => {
                let item = params.get("item").unwrap_or(&Value::Null);
                if let Some(id) = str_field(item, "id") {
                    self.file_changes.remove(id);
                }
                if str_field(item, "type") == Some("agentMessage")
                    && let Some(text) = str_field(item, "text")
                {
                    let turn_id = str_field(params, "turnId");
                    for pending in self.injections.values_mut() {
                        if pending.thread.as_deref() == Some(thread.as_str())
                            && runs_turn(&pending.stage, turn_id)
                        {
                            pending.answer = Some(text.to_owned());
                        }
                    }
                }
            }
            "turn/completed" => self.on_turn_completed(&thread, params, now_ms, out),
            "thread/closed" | "thread/archived" | "thread/deleted" => {
                // Not open in the panel any more; input the extension sends it later makes it
                // a target again.
                if self.threads.remove(&thread).is_some() {
                    self.sessions_changed = true;
                }
                self.dispatch(now_ms, out);
            }
            "thread/name/updated" => {
                let name = str_field(params, "threadName").map(str::to_owned);
                if let Some(entry) = self.threads.get_mut(&thread)
                    && entry.title != name
                {
                    entry.title = name;
                    self.sessions_changed = true;
                }
            }
            "mcpServer/startupStatus/updated" => {
                let name = str_field(params, "name").unwrap_or_default().to_owned();
                if let Some(entry) = self.threads.get_mut(&thread) {
                    if str_field(params, "status") == Some("starting") {
                        if entry.mcp_starting.is_empty() {
                            entry.mcp_patience_until_ms = Some(now_ms + MCP_STARTUP_PATIENCE_MS);
                        }
                        entry.mcp_settled.remove(&name);
                        entry.mcp_starting.insert(name);
                    } else {
                        entry.mcp_starting.remove(&name);
                        entry.mcp_settled.insert(name.clone());
                        if entry.mcp_starting.is_empty() {
                            entry.mcp_patience_until_ms = None;
                        }
                    }
                }
                self.dispatch(now_ms, out);
            }
            "serverRequest/resolved" => {
                if let Some(request) = params.get("requestId")
                    && let Some(approval) = self.approvals.remove(&id_key(request))
                {
                    // Answered somewhere we did not see (or the turn ended): nothing allowed it
                    // that we know of.
                    self.resolve_approval(approval, false, out);
                }
            }
            _ => {}
        }
    }

    fn on_turn_completed(
        &mut self,
        thread: &str,
        params: &Value,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let turn = params.get("turn").unwrap_or(&Value::Null);
        let turn_id = str_field(turn, "id");
        // Our turn/start already went in (after the idle announced just before this): the
        // thread is ours and busy, whatever turn ended now.
        let ours_starting = self
            .injections
            .values()
            .any(|p| p.thread.as_deref() == Some(thread) && p.stage == Stage::Starting);
        if let Some(entry) = self.threads.get_mut(thread) {
            entry.turn_id = None;
            if !ours_starting {
                entry.state = PanelSessionState::Idle;
                entry.bridged_delivery_id = None;
            }
            self.sessions_changed = true;
        }
        // Approvals of the ended turn can no longer be answered.
        let stale: Vec<String> = self
            .approvals
            .iter()
            .filter(|(_, a)| a.thread.as_deref() == Some(thread))
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            self.approvals.remove(&key);
        }
        let ended = self.injections.iter().find_map(|(id, p)| {
            (p.thread.as_deref() == Some(thread) && runs_turn(&p.stage, turn_id)).then_some(*id)
        });
        if let Some(id) = ended {
            let stop = str_field(turn, "status").unwrap_or("completed").to_owned();
            let from_items = turn
                .get("items")
                .and_then(Value::as_array)
                .and_then(|items| {
                    items
                        .iter()
                        .rev()
                        .find(|item| str_field(item, "type") == Some("agentMessage"))
                })
                .and_then(|item| str_field(item, "text"))
                .map(str::to_owned);
            let answer = from_items.or_else(|| self.injections.get(&id)?.answer.clone());
            let is_error = stop == "failed" || turn.get("error").is_some_and(|e| !e.is_null());
            self.finish(
                id,
                ShimEvent::TurnEnded {
                    session_id: Some(thread.to_owned()),
                    answer,
                    stop,
                    is_error,
                },
                out,
            );
        }
        self.dispatch(now_ms, out);
    }
}

/// Whether a pending stage runs the turn `turn_id` (an unknown id matches a running turn whose
/// id is not known yet, and a known one only itself). A turn/start still waiting for its
/// response runs nothing yet: the app-server answers it before its turn starts, so a turn
/// ending meanwhile is the one before ours (idle is announced just before `turn/completed`).
fn runs_turn(stage: &Stage, turn_id: Option<&str>) -> bool {
    match stage {
        Stage::Running {
            turn_id: Some(ours),
        } => turn_id.is_none_or(|t| t == ours),
        Stage::Running { turn_id: None } => true,
        Stage::Starting | Stage::Queued | Stage::OpeningThread | Stage::AwaitingMcp { .. } => false,
    }
}

/// A thread a multi-agent run created: it rejects direct input.
fn is_sub_agent(thread: &Value) -> bool {
    let set = |key: &str| thread.get(key).is_some_and(|v| !v.is_null());
    set("parentThreadId")
        || set("agentNickname")
        || set("agentRole")
        || thread.get("canAcceptDirectInput") == Some(&Value::Bool(false))
}

/// A thread kept in memory only (`ephemeral: true`): no rollout, not in the panel's list, so
/// nobody reads a message left there.
fn is_ephemeral(thread: &Value) -> bool {
    thread.get("ephemeral") == Some(&Value::Bool(true))
}

/// A thread `status` object as a session state.
fn state_of(status: &Value, current: PanelSessionState) -> PanelSessionState {
    match str_field(status, "type") {
        Some("active") => {
            let waiting = status
                .get("activeFlags")
                .and_then(Value::as_array)
                .is_some_and(|flags| flags.iter().any(|f| f == "waitingOnApproval"));
            if waiting {
                PanelSessionState::AwaitingApproval
            } else {
                PanelSessionState::Working
            }
        }
        Some("idle" | "notLoaded" | "systemError") => PanelSessionState::Idle,
        _ => current,
    }
}

/// Whether an approval response allows (`accept…` decisions, an elicitation's `accept`).
fn is_allowing(result: &Value) -> bool {
    match result.get("decision") {
        Some(Value::String(decision)) => decision.starts_with("accept"),
        Some(Value::Object(decision)) => decision.keys().any(|key| key.starts_with("accept")),
        _ => str_field(result, "action") == Some("accept"),
    }
}

/// What an approval is about: (tool, detail) as `bridge_status` shows them.
fn approval_subject(method: &str, params: &Value) -> (Option<String>, Option<String>) {
    let trim = |text: &str| Some(trimmed(text, DETAIL_CHARS));
    match method {
        COMMAND_APPROVAL => {
            let command = str_field(params, "command").unwrap_or_default();
            let detail = match str_field(params, "reason") {
                Some(reason) => format!("{command} ({reason})"),
                None => command.to_owned(),
            };
            (Some("command".to_owned()), trim(&detail))
        }
        PERMISSIONS_APPROVAL => (
            Some("permissions".to_owned()),
            params
                .get("permissions")
                .map(Value::to_string)
                .as_deref()
                .and_then(trim),
        ),
        FILE_CHANGE_APPROVAL => {
            let detail = str_field(params, "reason")
                .map(str::to_owned)
                .or_else(|| params.get("grantRoot").map(Value::to_string))
                .unwrap_or_else(|| "file change".to_owned());
            (Some("file change".to_owned()), trim(&detail))
        }
        _ => {
            let meta = params.get("_meta").unwrap_or(&Value::Null);
            let server = str_field(params, "serverName").unwrap_or("mcp");
            let tool = str_field(meta, "tool_name")
                .map(|tool| format!("{server}/{tool}"))
                .or_else(|| Some(server.to_owned()));
            let detail = meta
                .get("tool_params")
                .map(Value::to_string)
                .or_else(|| str_field(params, "message").map(str::to_owned));
            (tool, detail.as_deref().and_then(trim))
        }
    }
}

impl PanelAdapter for CodexAdapter {
    fn on_line(&mut self, side: Side, line: &[u8], now_ms: u64, out: &mut Vec<Action>) {
        rpc::on_line(self, side, line, now_ms, out);
    }

    fn on_inject(
        &mut self,
        id: InjectionId,
        injection: Injection,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let thread = match (&injection.session_id, injection.new_session) {
            (Some(thread), _) => {
                if !self.threads.contains_key(thread) {
                    let reason = if self.excluded.contains(thread) {
                        format!("codex thread {thread} takes no direct input (a sub-agent)")
                    } else {
                        format!("codex thread {thread} is not open in this panel")
                    };
                    out.push(Action::Report(
                        id,
                        ShimEvent::Failed {
                            reason,
                            delivered: false,
                        },
                    ));
                    out.push(Action::Close(id));
                    return;
                }
                Some(thread.clone())
            }
            (None, true) => None,
            (None, false) => {
                if self.threads.len() == 1 {
                    self.threads.keys().next().cloned()
                } else {
                    out.push(Action::Report(
                        id,
                        ShimEvent::Failed {
                            reason: format!(
                                "this codex panel holds {} threads: name one, or ask for a new \
                                 conversation",
                                self.threads.len()
                            ),
                            delivered: false,
                        },
                    ));
                    out.push(Action::Close(id));
                    return;
                }
            }
        };
        self.injections.insert(
            id,
            Pending {
                injection,
                thread: thread.clone(),
                stage: Stage::Queued,
                connected: true,
                retried: false,
                answer: None,
                mcp_expected: McpExpected::Unknown,
            },
        );
        let mut started = Vec::new();
        self.dispatch(now_ms, &mut started);
        let queued = self
            .injections
            .get(&id)
            .is_some_and(|p| p.stage == Stage::Queued && p.thread.is_some());
        out.push(Action::Report(
            id,
            ShimEvent::Accepted {
                session_id: thread,
                queued: queued || !self.initialized,
            },
        ));
        out.append(&mut started);
        rpc::flush_changes(self, out);
    }

    fn on_answer_approval(
        &mut self,
        id: InjectionId,
        answer: ApprovalAnswer,
        _now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let key = self.approvals.iter().find_map(|(key, approval)| {
            let same_thread = answer.session_id.is_none()
                || answer.session_id.as_deref() == approval.thread.as_deref();
            (approval.approval.request_id == answer.request_id && same_thread).then(|| key.clone())
        });
        let answerable = key
            .as_ref()
            .and_then(|key| self.approvals.get(key))
            .is_some_and(|a| a.method != PERMISSIONS_APPROVAL);
        if key.is_some() && !answerable {
            approval_answered(
                id,
                Some(format!(
                    "codex request {} asks for a set of sandbox permissions: answer it in \
                         the panel",
                    answer.request_id
                )),
                out,
            );
            return;
        }
        let Some(approval) = key.and_then(|key| self.approvals.remove(&key)) else {
            approval_answered(
                id,
                Some(format!(
                    "no pending codex approval {} (answered already, or never asked)",
                    answer.request_id
                )),
                out,
            );
            return;
        };
        let result = if approval.method == ELICITATION {
            json!({"action": if answer.allow { "accept" } else { "decline" }, "content": {}})
        } else {
            json!({"decision": if answer.allow { "accept" } else { "decline" }})
        };
        out.push(Action::ToAgent(to_line(
            &json!({"id": approval.id, "result": result}),
        )));
        approval_answered(id, None, out);
        self.resolve_approval(approval, answer.allow, out);
        rpc::flush_changes(self, out);
    }

    fn on_disconnect(&mut self, id: InjectionId) {
        // Accepted is handed over: the message still goes in (queued or not), unreported.
        if let Some(pending) = self.injections.get_mut(&id) {
            pending.connected = false;
        }
    }

    fn on_tick(&mut self, now_ms: u64, out: &mut Vec<Action>) {
        self.dispatch(now_ms, out);
        rpc::flush_changes(self, out);
    }

    fn on_agent_exit(&mut self, out: &mut Vec<Action>) {
        let ids: Vec<InjectionId> = self.injections.keys().copied().collect();
        for id in ids {
            let delivered = self
                .injections
                .get(&id)
                .is_some_and(|p| matches!(p.stage, Stage::Starting | Stage::Running { .. }));
            self.finish(
                id,
                ShimEvent::Failed {
                    reason: "the codex app-server exited".to_owned(),
                    delivered,
                },
                out,
            );
        }
    }

    fn streams_from_head(&mut self, side: Side, head: &[u8], _: u64, _: &mut Vec<Action>) -> bool {
        rpc::unread_by_its_head(head, |method| {
            rpc::RpcWire::reads(self, side, Some(method), None)
        })
    }

    fn sessions(&self) -> Vec<PanelSession> {
        self.threads
            .iter()
            .map(|(id, thread)| PanelSession {
                session_id: Some(id.clone()),
                cwd: thread.cwd.clone(),
                state: thread.state,
                opened_at_ms: thread.opened_at_ms,
                last_human_input_ms: thread.last_human_input_ms,
                last_activity_ms: thread.last_activity_ms,
                has_history: thread.has_history,
                unanswered_human_prompts: 0,
                pending_approvals: self
                    .approvals
                    .values()
                    .filter(|a| a.thread.as_deref() == Some(id))
                    .map(|a| a.approval.clone())
                    .collect(),
                bridged_delivery_id: thread.bridged_delivery_id.clone(),
                title: thread.title.clone(),
            })
            .collect()
    }
}

impl CodexAdapter {}

impl rpc::RpcWire for CodexAdapter {
    fn reads(&self, side: Side, method: Option<&str>, id: Option<&Value>) -> bool {
        match (side, method, id) {
            (Side::Extension, Some(method), _) => EXTENSION_METHODS.contains(&method),
            (Side::Agent, Some(method), _) => AGENT_METHODS.contains(&method),
            (Side::Extension, None, Some(id)) => self.approvals.contains_key(&id_key(id)),
            (Side::Agent, None, Some(id)) => {
                self.extension_requests.contains_key(&id_key(id))
                    || id
                        .as_str()
                        .is_some_and(|id| self.own_requests.contains_key(id))
            }
            (_, None, None) => false,
        }
    }

    fn extension_message(&mut self, message: Message<'_>, now_ms: u64, out: &mut Vec<Action>) {
        self.on_extension(message, now_ms, out);
    }

    fn agent_message(&mut self, message: Message<'_>, now_ms: u64, out: &mut Vec<Action>) -> bool {
        self.on_agent(message, now_ms, out)
    }

    fn take_sessions_changed(&mut self) -> bool {
        std::mem::take(&mut self.sessions_changed)
    }
}

#[cfg(test)]
mod tests;
