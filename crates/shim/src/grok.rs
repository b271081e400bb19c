//! Grok Build's panel wire: ACP (JSON-RPC 2.0) over `grok agent [--reasoning-effort L] stdio`,
//! as `grok.cliPath` runs it (docs/observed/telegram_ahp_grok.md §3, docs/spec/cross-agent-mcp.md "Shared rules").
//!
//! - Sessions come from `session/new` responses and `session/load` params; one process may host
//!   several, each addressed by its id. One nobody prompted is empty, and only an empty one may
//!   take a new conversation: a session made behind the extension's back is one its panel never
//!   heard of, so with none empty the request fails with [`NO_EMPTY_SESSION`] and the daemon
//!   takes the CLI.
//! - Grok queues prompts typed ahead, so a session is busy until the last unanswered
//!   `session/prompt` of the extension is answered, and ours goes in only when it is idle.
//! - The extension draws only the prompts it sent, so the relayed message is written to it as a
//!   quoted block at the head of the reply; the thinking of a bridged turn is held back (the
//!   extension would open a "Thinking" block it never closes); the answer is the text after
//!   the last tool call; the turn ends with the `session/prompt` response's `stopReason`.
//! - What the adapter reads of a message, and every line it writes, goes through the typed ACP
//!   subset in [`cross_agent_protocol::acp`]; the lines it forwards stay the bytes that came.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;

use cross_agent_protocol::acp::{
    self, ContentBlock, PermissionOption, PermissionOutcome, SessionUpdate,
};
use cross_agent_protocol::panel::{
    ApprovalAnswer, Injection, InjectionKind, PanelSession, PanelSessionState, PendingApproval,
    ShimEvent,
};
use serde::{Deserialize as _, Serialize};
use serde_json::Value;

use crate::adapter::{Action, InjectionId, PanelAdapter, Side, approval_answered};
use crate::rpc::{self, Message, XAGENT_ID_PREFIX, id_key, id_text, trimmed};

pub use cross_agent_protocol::panel::NO_EMPTY_SESSION;

const PERMISSION_REQUEST: &str = "session/request_permission";

/// Longest approval detail kept for the registration.
const DETAIL_CHARS: usize = 400;

/// The Grok ACP adapter.
#[derive(Debug)]
pub struct GrokAdapter {
    /// The extension's `initialize` was answered: only then may a line of ours go in.
    initialized: bool,
    next_request: u64,
    sessions: BTreeMap<String, GrokSession>,
    /// The extension's requests whose responses matter, by id key.
    extension_requests: HashMap<String, ExtensionRequest>,
    /// Permission requests the agent waits on, by the request's id key.
    approvals: BTreeMap<String, Approval>,
    injections: BTreeMap<InjectionId, Pending>,
    sessions_changed: bool,
}

#[derive(Debug)]
struct GrokSession {
    cwd: Option<String>,
    opened_at_ms: u64,
    last_human_input_ms: Option<u64>,
    last_activity_ms: Option<u64>,
    has_history: bool,
    /// A `session/load` is replaying history.
    loading: bool,
    /// The extension's prompts not answered yet, by id key.
    human_prompts: BTreeSet<String>,
    /// Our prompt running in it.
    bridged: Option<BridgedPrompt>,
}

#[derive(Debug)]
struct BridgedPrompt {
    request_id: String,
    delivery_id: String,
    /// Where to report its end (`None` for return traffic, done once written).
    injection: Option<InjectionId>,
    /// The text since the last tool call.
    answer: String,
}

#[derive(Debug)]
enum ExtensionRequest {
    Initialize,
    NewSession { cwd: Option<String> },
    LoadSession(String),
    Prompt(String),
}

#[derive(Debug)]
struct Approval {
    id: Value,
    session: Option<String>,
    options: Vec<PermissionOption>,
    approval: PendingApproval,
}

#[derive(Debug)]
struct Pending {
    injection: Injection,
    session: String,
    /// Written already (then it is the session's bridged prompt).
    written: bool,
    connected: bool,
}

impl GrokAdapter {
    /// `args` are grok's own (`agent [--reasoning-effort L] stdio`); nothing in them changes
    /// the wire.
    pub fn new(_args: &[OsString]) -> Self {
        Self {
            initialized: false,
            next_request: 0,
            sessions: BTreeMap::new(),
            extension_requests: HashMap::new(),
            approvals: BTreeMap::new(),
            injections: BTreeMap::new(),
            sessions_changed: false,
        }
    }

    fn state_of(&self, id: &str, session: &GrokSession) -> PanelSessionState {
        if self
            .approvals
            .values()
            .any(|a| a.session.as_deref() == Some(id))
        {
            PanelSessionState::AwaitingApproval
        } else if session.loading || session.bridged.is_some() || !session.human_prompts.is_empty()
        {
            PanelSessionState::Working
        } else {
            PanelSessionState::Idle
        }
    }

    fn is_idle(&self, id: &str) -> bool {
        self.sessions
            .get(id)
            .is_some_and(|s| self.state_of(id, s) == PanelSessionState::Idle)
    }

    fn add_session(&mut self, id: &str, cwd: Option<String>, has_history: bool, now_ms: u64) {
        let session = self.sessions.entry(id.to_owned()).or_insert(GrokSession {
            cwd: None,
            opened_at_ms: now_ms,
            last_human_input_ms: None,
            last_activity_ms: Some(now_ms),
            has_history: false,
            loading: false,
            human_prompts: BTreeSet::new(),
            bridged: None,
        });
        if cwd.is_some() {
            session.cwd = cwd;
        }
        session.has_history |= has_history;
        self.sessions_changed = true;
    }

    fn report(&self, id: InjectionId, event: ShimEvent, out: &mut Vec<Action>) {
        if self.injections.get(&id).is_some_and(|p| p.connected) {
            out.push(Action::Report(id, event));
        }
    }

    fn finish(&mut self, id: InjectionId, event: ShimEvent, out: &mut Vec<Action>) {
        if let Some(pending) = self.injections.remove(&id)
            && pending.connected
        {
            out.push(Action::Report(id, event));
            out.push(Action::Close(id));
        }
    }

    /// Writes every queued injection whose session is idle now.
    fn dispatch(&mut self, out: &mut Vec<Action>) {
        if !self.initialized {
            return;
        }
        let queued: Vec<InjectionId> = self
            .injections
            .iter()
            .filter(|(_, p)| !p.written)
            .map(|(id, _)| *id)
            .collect();
        for id in queued {
            let Some(session) = self.injections.get(&id).map(|p| p.session.clone()) else {
                continue;
            };
            if !self.sessions.contains_key(&session) {
                self.finish(
                    id,
                    ShimEvent::Failed {
                        reason: format!("grok session {session} is no longer open in this panel"),
                        delivered: false,
                    },
                    out,
                );
            } else if self.is_idle(&session) {
                self.write_prompt(id, &session, out);
            }
        }
    }

    /// The quoted block for the extension, then our `session/prompt` for the agent.
    fn write_prompt(&mut self, id: InjectionId, session: &str, out: &mut Vec<Action>) {
        let Some(pending) = self.injections.get_mut(&id) else {
            return;
        };
        pending.written = true;
        let injection = pending.injection.clone();
        self.next_request += 1;
        let request_id = format!("{XAGENT_ID_PREFIX}{}", self.next_request);
        out.push(Action::ToExtension(line_of(&acp::Notification {
            jsonrpc: acp::JSONRPC_VERSION,
            method: "session/update",
            params: acp::SessionNotification {
                session_id: session.into(),
                update: SessionUpdate::AgentMessageChunk {
                    content: ContentBlock::Text {
                        text: quoted_block(&injection).into(),
                    },
                },
            },
        })));
        out.push(Action::ToAgent(line_of(&acp::Request {
            jsonrpc: acp::JSONRPC_VERSION,
            id: &request_id,
            method: "session/prompt",
            params: acp::PromptRequest {
                session_id: session,
                prompt: vec![ContentBlock::Text {
                    text: injection.text.as_str().into(),
                }],
            },
        })));
        let expects_answer = injection.kind == InjectionKind::Request;
        if let Some(entry) = self.sessions.get_mut(session) {
            entry.has_history = true;
            entry.bridged = Some(BridgedPrompt {
                request_id,
                delivery_id: injection.delivery_id.clone(),
                injection: expects_answer.then_some(id),
                answer: String::new(),
            });
        }
        self.sessions_changed = true;
        if !expects_answer {
            // ACP has no acknowledgement of a prompt: the write is the delivery.
            self.finish(
                id,
                ShimEvent::Written {
                    session_id: Some(session.to_owned()),
                },
                out,
            );
        }
    }

    fn on_extension(&mut self, message: Message<'_>, now_ms: u64, out: &mut Vec<Action>) {
        match message {
            Message::Request { id, method, params } => {
                let acp::SessionScope { session_id, cwd } =
                    acp::SessionScope::deserialize(params).unwrap_or_default();
                let request = match (method, session_id) {
                    ("initialize", _) => Some(ExtensionRequest::Initialize),
                    ("session/new", _) => Some(ExtensionRequest::NewSession { cwd }),
                    ("session/load", Some(session)) => {
                        // A loaded session has history by definition; it replays it until the
                        // response, and takes nothing of ours meanwhile.
                        self.add_session(&session, cwd, true, now_ms);
                        if let Some(entry) = self.sessions.get_mut(&session) {
                            entry.loading = true;
                        }
                        Some(ExtensionRequest::LoadSession(session))
                    }
                    ("session/prompt", Some(session)) => {
                        self.add_session(&session, None, true, now_ms);
                        if let Some(entry) = self.sessions.get_mut(&session) {
                            entry.human_prompts.insert(id_key(id));
                            entry.last_human_input_ms = Some(now_ms);
                            entry.last_activity_ms = Some(now_ms);
                        }
                        Some(ExtensionRequest::Prompt(session))
                    }
                    _ => None,
                };
                if let Some(request) = request {
                    self.extension_requests.insert(id_key(id), request);
                }
            }
            Message::Response { id, result, error } => {
                let Some(approval) = self.approvals.remove(&id_key(id)) else {
                    return;
                };
                let allowed = error.is_none()
                    && acp::RequestPermissionResponse::deserialize(result)
                        .is_ok_and(|answer| selects_allow(&answer.outcome, &approval.options));
                self.resolve_approval(approval, allowed, out);
            }
            Message::Notification { .. } => {}
        }
    }

    fn resolve_approval(&mut self, approval: Approval, allowed: bool, out: &mut Vec<Action>) {
        self.sessions_changed = true;
        let injection = approval
            .session
            .as_deref()
            .and_then(|s| self.sessions.get(s))
            .and_then(|s| s.bridged.as_ref())
            .and_then(|b| b.injection);
        if let Some(injection) = injection {
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

    /// Returns whether the line goes on to the extension.
    fn on_agent(&mut self, message: Message<'_>, now_ms: u64, out: &mut Vec<Action>) -> bool {
        match message {
            Message::Response { id, result, error } => {
                if let Some(request_id) = id.as_str().filter(|i| i.starts_with(XAGENT_ID_PREFIX))
                    && let Some(session) = self.session_of_prompt(request_id)
                {
                    self.on_bridged_end(&session, result, error, out);
                    return false;
                }
                if let Some(request) = self.extension_requests.remove(&id_key(id)) {
                    self.on_extension_response(request, id, result, error, now_ms, out);
                }
                true
            }
            Message::Request { id, method, params } => {
                if method == PERMISSION_REQUEST {
                    self.on_permission_request(id, params, now_ms, out);
                }
                true
            }
            Message::Notification { method, params } => {
                if method == "session/update" {
                    self.on_session_update(params, now_ms)
                } else {
                    true
                }
            }
        }
    }

    fn session_of_prompt(&self, request_id: &str) -> Option<String> {
        self.sessions.iter().find_map(|(id, s)| {
            s.bridged
                .as_ref()
                .is_some_and(|b| b.request_id == request_id)
                .then(|| id.clone())
        })
    }

    fn on_extension_response(
        &mut self,
        request: ExtensionRequest,
        id: &Value,
        result: &Value,
        error: Option<&Value>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        match request {
            ExtensionRequest::Initialize => {
                if error.is_none() {
                    self.initialized = true;
                }
            }
            ExtensionRequest::NewSession { cwd } => {
                if let Ok(created) = acp::NewSessionResponse::deserialize(result) {
                    self.add_session(&created.session_id, cwd, false, now_ms);
                }
            }
            ExtensionRequest::LoadSession(session) => {
                if error.is_some() {
                    self.sessions.remove(&session);
                } else if let Some(entry) = self.sessions.get_mut(&session) {
                    entry.loading = false;
                }
                self.sessions_changed = true;
            }
            ExtensionRequest::Prompt(session) => {
                if let Some(entry) = self.sessions.get_mut(&session) {
                    entry.human_prompts.remove(&id_key(id));
                    entry.last_activity_ms = Some(now_ms);
                }
                self.forget_stale_approvals(&session);
                self.sessions_changed = true;
            }
        }
        self.dispatch(out);
    }

    fn on_bridged_end(
        &mut self,
        session: &str,
        result: &Value,
        error: Option<&Value>,
        out: &mut Vec<Action>,
    ) {
        let Some(bridged) = self
            .sessions
            .get_mut(session)
            .and_then(|s| s.bridged.take())
        else {
            return;
        };
        self.forget_stale_approvals(session);
        self.sessions_changed = true;
        if let Some(injection) = bridged.injection {
            let event = match error {
                Some(error) => ShimEvent::Failed {
                    reason: format!("grok failed the prompt: {}", error_text(error)),
                    delivered: true,
                },
                None => {
                    let stop = acp::PromptResponse::deserialize(result)
                        .unwrap_or_default()
                        .stop_reason
                        .unwrap_or_else(|| "end_turn".to_owned());
                    let answer = bridged.answer.trim();
                    ShimEvent::TurnEnded {
                        session_id: Some(session.to_owned()),
                        answer: (!answer.is_empty()).then(|| answer.to_owned()),
                        is_error: stop == "refusal",
                        stop,
                    }
                }
            };
            self.finish(injection, event, out);
        }
        self.dispatch(out);
    }

    fn on_permission_request(
        &mut self,
        id: &Value,
        params: &Value,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let acp::RequestPermissionRequest {
            session_id: session,
            tool_call,
            options,
        } = acp::RequestPermissionRequest::deserialize(params).unwrap_or_default();
        let detail = tool_call
            .raw_input
            .map(|input| trimmed(&input.to_string(), DETAIL_CHARS));
        let tool = tool_call
            .title
            .or(tool_call.kind)
            .or(tool_call.tool_call_id);
        let bridged = session
            .as_deref()
            .and_then(|s| self.sessions.get(s))
            .and_then(|s| s.bridged.as_ref());
        let approval = PendingApproval {
            request_id: id_text(id),
            kind: PERMISSION_REQUEST.to_owned(),
            tool,
            detail,
            since_ms: now_ms,
            delivery_id: bridged.map(|b| b.delivery_id.clone()),
            input: None,
        };
        if let Some(injection) = bridged.and_then(|b| b.injection) {
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
                session,
                options,
                approval,
            },
        );
        self.sessions_changed = true;
    }

    /// Returns whether the update goes on to the extension: a bridged turn's thinking does not.
    fn on_session_update(&mut self, params: &Value, now_ms: u64) -> bool {
        let Ok(notification) = acp::SessionNotification::deserialize(params) else {
            return true;
        };
        let Some(entry) = self.sessions.get_mut(&*notification.session_id) else {
            return true;
        };
        entry.last_activity_ms = Some(now_ms);
        let Some(bridged) = entry.bridged.as_mut() else {
            return true;
        };
        match notification.update {
            SessionUpdate::AgentThoughtChunk => return false,
            SessionUpdate::ToolCall | SessionUpdate::ToolCallUpdate => bridged.answer.clear(),
            SessionUpdate::AgentMessageChunk {
                content: ContentBlock::Text { text },
            } => bridged.answer.push_str(&text),
            SessionUpdate::AgentMessageChunk {
                content: ContentBlock::Other,
            }
            | SessionUpdate::Other => {}
        }
        true
    }

    /// A permission request outlives no turn: once nothing runs in the session, one still
    /// pending (the extension never answered it) can no longer be.
    fn forget_stale_approvals(&mut self, session: &str) {
        let running = self
            .sessions
            .get(session)
            .is_some_and(|s| s.bridged.is_some() || !s.human_prompts.is_empty());
        if !running {
            self.approvals
                .retain(|_, approval| approval.session.as_deref() != Some(session));
        }
    }

    fn refuse(id: InjectionId, reason: String, out: &mut Vec<Action>) {
        out.push(Action::Report(
            id,
            ShimEvent::Failed {
                reason,
                delivered: false,
            },
        ));
        out.push(Action::Close(id));
    }

    /// The empty session a new conversation goes into: the newest one nobody prompted.
    fn empty_session(&self) -> Option<String> {
        self.sessions
            .iter()
            .filter(|(id, s)| {
                !s.has_history
                    && s.bridged.is_none()
                    && !self.injections.values().any(|p| &p.session == *id)
            })
            .max_by_key(|(_, s)| s.opened_at_ms)
            .map(|(id, _)| id.clone())
    }
}

/// The relayed message as the panel shows it: a quoted block (headed by who sent it) at the
/// head of the reply that follows.
fn quoted_block(injection: &Injection) -> String {
    let mut block = String::new();
    if let Some(label) = &injection.sender_label {
        block.push_str(&format!("> **{label}**\n>\n"));
    }
    for line in injection.text.lines() {
        block.push_str(if line.is_empty() { ">" } else { "> " });
        block.push_str(line);
        block.push('\n');
    }
    block.push('\n');
    block
}

/// Whether a permission response selected an `allow_*` option.
fn selects_allow(outcome: &PermissionOutcome, options: &[PermissionOption]) -> bool {
    match outcome {
        PermissionOutcome::Selected { option_id } => options
            .iter()
            .any(|option| option.option_id == *option_id && option.allows()),
        PermissionOutcome::Cancelled | PermissionOutcome::Other => false,
    }
}

/// The option answering a permission request as the panel would: allow (or reject) once,
/// else always.
fn pick_option(options: &[PermissionOption], allow: bool) -> Option<String> {
    let kinds: [&str; 2] = if allow {
        ["allow_once", "allow_always"]
    } else {
        ["reject_once", "reject_always"]
    };
    kinds.iter().find_map(|kind| {
        options
            .iter()
            .find(|option| option.kind == *kind)
            .map(|option| option.option_id.clone())
    })
}

/// A JSON-RPC error's message, or the whole error when it has none.
fn error_text(error: &Value) -> String {
    acp::Error::deserialize(error)
        .ok()
        .and_then(|error| error.message)
        .unwrap_or_else(|| error.to_string())
}

/// One line of ours, serialised (without its newline). These types have string keys only, so
/// serialising them cannot fail.
fn line_of(message: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(message).unwrap_or_default()
}

impl PanelAdapter for GrokAdapter {
    fn on_line(&mut self, side: Side, line: &[u8], now_ms: u64, out: &mut Vec<Action>) {
        rpc::on_line(self, side, line, now_ms, out);
    }

    fn on_inject(
        &mut self,
        id: InjectionId,
        injection: Injection,
        _now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let (session, new_conversation) = match (&injection.session_id, injection.new_session) {
            (Some(session), _) => {
                if !self.sessions.contains_key(session) {
                    return Self::refuse(
                        id,
                        format!("grok session {session} is not open in this panel"),
                        out,
                    );
                }
                (session.clone(), false)
            }
            (None, true) => match self.empty_session() {
                Some(session) => (session, true),
                None => {
                    return Self::refuse(
                        id,
                        format!(
                            "{NO_EMPTY_SESSION}: every session it hosts has history, and a \
                             session the shim opened would be one the extension never heard of"
                        ),
                        out,
                    );
                }
            },
            (None, false) => {
                if self.sessions.len() != 1 {
                    return Self::refuse(
                        id,
                        format!(
                            "this grok panel hosts {} sessions: name one, or ask for a new \
                             conversation",
                            self.sessions.len()
                        ),
                        out,
                    );
                }
                match self.sessions.keys().next() {
                    Some(session) => (session.clone(), false),
                    None => return,
                }
            }
        };
        self.injections.insert(
            id,
            Pending {
                injection,
                session: session.clone(),
                written: false,
                connected: true,
            },
        );
        let queued = !(self.initialized && self.is_idle(&session));
        out.push(Action::Report(
            id,
            ShimEvent::Accepted {
                session_id: Some(session.clone()),
                queued,
            },
        ));
        if new_conversation {
            out.push(Action::Report(
                id,
                ShimEvent::SessionStarted {
                    session_id: session,
                },
            ));
        }
        self.dispatch(out);
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
            let same_session = answer.session_id.is_none()
                || answer.session_id.as_deref() == approval.session.as_deref();
            (approval.approval.request_id == answer.request_id && same_session).then(|| key.clone())
        });
        // A request with no option to answer this way stays pending: the panel still can.
        let option = key
            .as_ref()
            .and_then(|key| self.approvals.get(key))
            .and_then(|approval| pick_option(&approval.options, answer.allow));
        let found = option
            .is_some()
            .then(|| key.and_then(|key| self.approvals.remove(&key)))
            .flatten();
        let (Some(approval), Some(option)) = (found, option) else {
            approval_answered(
                id,
                Some(format!(
                    "no pending grok permission request {} with an option to {} it",
                    answer.request_id,
                    if answer.allow { "allow" } else { "reject" }
                )),
                out,
            );
            return;
        };
        out.push(Action::ToAgent(line_of(&acp::Response {
            jsonrpc: acp::JSONRPC_VERSION,
            id: &approval.id,
            result: acp::RequestPermissionResponse {
                outcome: PermissionOutcome::Selected { option_id: option },
            },
        })));
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

    fn on_tick(&mut self, _now_ms: u64, out: &mut Vec<Action>) {
        self.dispatch(out);
        rpc::flush_changes(self, out);
    }

    fn on_agent_exit(&mut self, out: &mut Vec<Action>) {
        let ids: Vec<InjectionId> = self.injections.keys().copied().collect();
        for id in ids {
            let delivered = self.injections.get(&id).is_some_and(|p| p.written);
            self.finish(
                id,
                ShimEvent::Failed {
                    reason: "grok exited".to_owned(),
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
        self.sessions
            .iter()
            .map(|(id, session)| PanelSession {
                session_id: Some(id.clone()),
                cwd: session.cwd.clone(),
                state: self.state_of(id, session),
                opened_at_ms: session.opened_at_ms,
                last_human_input_ms: session.last_human_input_ms,
                last_activity_ms: session.last_activity_ms,
                has_history: session.has_history,
                unanswered_human_prompts: u32::try_from(session.human_prompts.len())
                    .unwrap_or(u32::MAX),
                pending_approvals: self
                    .approvals
                    .values()
                    .filter(|a| a.session.as_deref() == Some(id))
                    .map(|a| a.approval.clone())
                    .collect(),
                bridged_delivery_id: session.bridged.as_ref().map(|b| b.delivery_id.clone()),
                title: None,
            })
            .collect()
    }
}

impl rpc::RpcWire for GrokAdapter {
    fn reads(&self, side: Side, method: Option<&str>, id: Option<&Value>) -> bool {
        match (side, method, id) {
            (Side::Extension, Some(method), _) => matches!(
                method,
                "initialize" | "session/new" | "session/load" | "session/prompt"
            ),
            (Side::Agent, Some("session/update"), _) => {
                self.sessions.values().any(|s| s.bridged.is_some())
            }
            (Side::Agent, Some(method), _) => method == PERMISSION_REQUEST,
            (Side::Extension, None, Some(id)) => self.approvals.contains_key(&id_key(id)),
            (Side::Agent, None, Some(id)) => {
                self.extension_requests.contains_key(&id_key(id))
                    || id
                        .as_str()
                        .is_some_and(|id| self.session_of_prompt(id).is_some())
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
