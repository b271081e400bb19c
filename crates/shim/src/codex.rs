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
//!
//! The adapter's state and its [`PanelAdapter`] face live here; the work is split by where a
//! line comes from: `dispatch` (the thread table, the injection queue and the lines of ours),
//! `extension` (the extension's lines), `agent` (the app-server's responses and requests),
//! `notifications` (its notifications), and `fields` (reading its objects).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;

use cross_agent_protocol::panel::{
    ApprovalAnswer, Injection, PanelSession, PanelSessionState, PendingApproval, ShimEvent,
};
use serde_json::{Map, Value, json};

use crate::adapter::{Action, InjectionId, PanelAdapter, Side, approval_answered};
use crate::rpc::{self, Message, id_key, to_line};

mod agent;
mod dispatch;
mod extension;
mod fields;
mod notifications;

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
