//! The panel shims' contract with the daemon (docs/spec/cross-agent-mcp.md "IDE panel integration"): the
//! registration a shim keeps in `CROSS_AGENT_HOME/panels/`, and the conversation on the shim's
//! own socket — the daemon asks for an injection, the shim reports what became of it.
//!
//! A shim works with the daemon down, so it never calls the daemon: it writes its registration
//! file (and rewrites it when its sessions change), and the daemon reads `panels/` when it
//! resolves a target or a return route. The daemon connects to the socket the registration
//! names, writes one [`ShimRequest`] line, and reads [`ShimEvent`] lines until the shim closes
//! the connection (an injection's last event is `turn_ended`, `written` for one that expects no
//! answer, or `failed`). Both ends check the other's uid before a byte of payload moves.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vocabulary::Agent;

/// Bumped when a field changes meaning; a daemon skips registrations of another version and
/// says so in `bridge_status`.
pub const PANEL_PROTOCOL_VERSION: u32 = 1;

/// The folder under `CROSS_AGENT_HOME` holding one registration (and one socket) per live shim.
pub const PANELS_DIR: &str = "panels";

/// How a Grok shim's `failed` reason starts when a new conversation was asked for and every
/// session it hosts already has history (a shim cannot open one the extension would know of):
/// the daemon then runs the message over the CLI instead (docs/spec/cross-agent-mcp.md "When the panel has no
/// conversation open").
pub const NO_EMPTY_SESSION: &str = "no empty grok session in this panel";

/// `panels/<agent>-<pid>.json`, owner-only, written atomically (temporary file + rename).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PanelRegistration {
    pub protocol: u32,
    pub agent: Agent,
    /// The shim's own pid (also the agent's parent: the shim spawns the real binary).
    pub pid: u32,
    /// The shim's start time in clock ticks since boot (`/proc/<pid>/stat` field 22), so a
    /// reused pid is not taken for a live shim. `None` where the platform does not say.
    pub pid_start_ticks: Option<u64>,
    /// The real agent process the shim runs.
    pub agent_pid: Option<u32>,
    /// The processes above the shim, nearest first: the extension host, the window, … . The
    /// daemon picks the shim whose window the caller runs in from these (docs/spec/cross-agent-mcp.md "Conversations in
    /// another VS Code window").
    pub ancestors: Vec<u32>,
    /// The shim's socket, an absolute path (`panels/<agent>-<pid>.sock`).
    pub socket: String,
    /// The real binary the shim runs.
    pub real_binary: String,
    /// The shim's working directory (the workspace the extension started it in).
    pub cwd: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    pub updated_at_ms: u64,
    /// `false` once the shim hit an error of its own: it still passes every byte, but takes no
    /// injection (fail-open).
    pub intercepting: bool,
    /// The sessions (Claude: one; Codex threads; Grok ACP sessions) the process hosts.
    #[serde(default)]
    pub sessions: Vec<PanelSession>,
}

/// One conversation a panel process hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PanelSession {
    /// `None` for a Claude panel process that has not started a conversation yet (a message
    /// written there *is* the new conversation).
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub state: PanelSessionState,
    /// When the shim first saw the session (ms since the epoch).
    pub opened_at_ms: u64,
    /// The last time a human typed into it, observed on the extension→agent path. Injected
    /// turns never count (docs/spec/cross-agent-mcp.md "Which conversation tab it goes to").
    pub last_human_input_ms: Option<u64>,
    /// The last line either way that belonged to this session.
    pub last_activity_ms: Option<u64>,
    /// Grok: a session the extension opened and nobody prompted is empty; only an empty one
    /// may take a new conversation. Claude and Codex: whether any turn ran.
    pub has_history: bool,
    /// Prompts a human typed that are not answered yet (Grok queues them; the session is busy
    /// until the last is answered).
    #[serde(default)]
    pub unanswered_human_prompts: u32,
    /// Approval requests the agent is waiting on, oldest first.
    #[serde(default)]
    pub pending_approvals: Vec<PendingApproval>,
    /// The injection whose turn runs now, if the running turn is a bridged one.
    #[serde(default)]
    pub bridged_delivery_id: Option<String>,
    /// The conversation's name when the wire says it (Codex `thread/name/updated`).
    #[serde(default)]
    pub title: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PanelSessionState {
    Idle,
    /// A turn runs (a human's or a bridged one).
    Working,
    /// A turn runs and waits on an approval.
    AwaitingApproval,
}

/// An approval the agent asked its panel for, as the shim saw it go by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingApproval {
    /// The request's id on the wire, as text (Claude `request_id`, a JSON-RPC id).
    pub request_id: String,
    /// What asks: `can_use_tool`, `item/commandExecution/requestApproval`,
    /// `item/fileChange/requestApproval`, `mcpServer/elicitation/request`,
    /// `session/request_permission`.
    pub kind: String,
    /// The tool or command it is about (`Bash`, the command line, the MCP tool).
    pub tool: Option<String>,
    /// What will happen if allowed: the command, or a diff, trimmed.
    pub detail: Option<String>,
    pub since_ms: u64,
    /// Whether the turn asking is a bridged one (and so whose delivery waits on it).
    pub delivery_id: Option<String>,
    /// The whole of what is asked, untrimmed, so the phone never approves blind: Claude's tool
    /// input (`Edit`'s strings, `Write`'s content), Codex's file changes (`{"changes": […]}`
    /// with their diffs). `None` when the shim has nothing more than `detail`, or when it is
    /// too large for a registration (then the card offers no Allow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
}

/// What the daemon writes to a shim's socket: one line, one request per connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ShimRequest {
    /// Put a message into one of the panel's conversations.
    Inject(Injection),
    /// Answer a pending approval (the phone, later): first answer wins.
    AnswerApproval(ApprovalAnswer),
    /// The registration as the shim sees it now (answered with one `status` event).
    Status,
}

/// Why a message is injected: a request that expects an answer, or return traffic that does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InjectionKind {
    /// A `send_to_*` request: the turn's answer is reported back.
    Request,
    /// `BRIDGE REPLY` / `LATE ANSWER`: the sender's session reads the answer.
    Reply,
    /// `DELIVERY FAILED` / `PROGRESS (INFO)`.
    Notice,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Injection {
    /// The delivery this injection carries (the request's, or the return delivery's own).
    pub delivery_id: String,
    pub kind: InjectionKind,
    /// The conversation to write into. `None` with `new_session` = open a new conversation in
    /// the panel; `None` without it = the shim's only session (Claude).
    pub session_id: Option<String>,
    #[serde(default)]
    pub new_session: bool,
    /// The whole text the model reads (the envelope with the message, or the reply).
    pub text: String,
    /// The request token the answer is expected to end with; a turn ending with it is the
    /// answer even if others interleave.
    pub request_id: Option<String>,
    /// The title a new conversation gets (Codex `thread/name/set`: "sender: head of message").
    #[serde(default)]
    pub title: Option<String>,
    /// Who sent it, as the panel shows it (Grok's quoted block: `claude · session …`).
    #[serde(default)]
    pub sender_label: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalAnswer {
    pub session_id: Option<String>,
    pub request_id: String,
    pub allow: bool,
    /// Shown to the model on a deny.
    #[serde(default)]
    pub message: Option<String>,
}

/// What a shim writes back on the connection, one per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ShimEvent {
    /// The injection is taken. `queued` = it waits for the session's running turn to end.
    Accepted {
        session_id: Option<String>,
        queued: bool,
    },
    /// The line went into the agent's stdin (the last event of a `reply` or `notice`).
    Written { session_id: Option<String> },
    /// A new conversation opened for the injection has its id now.
    SessionStarted { session_id: String },
    /// The bridged turn waits on an approval in the panel.
    ApprovalPending { approval: PendingApproval },
    /// That approval was answered (by the person in the panel, or through the daemon).
    ApprovalResolved { request_id: String, allowed: bool },
    /// The bridged turn ended: its final answer text, and how it ended.
    TurnEnded {
        session_id: Option<String>,
        answer: Option<String>,
        /// `completed`, `interrupted`, `cancelled`, `error`, … as the agent said.
        stop: String,
        is_error: bool,
    },
    /// Not delivered, or the turn could not be followed to its end. `delivered` says whether
    /// the agent received the message before it failed (then it must never be sent again).
    Failed { reason: String, delivered: bool },
    /// The answer to `status`.
    Status { registration: PanelRegistration },
    /// The answer to `answer_approval`.
    ApprovalAnswered {
        accepted: bool,
        reason: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_events_are_tagged_lines() {
        let line = serde_json::to_string(&ShimRequest::Status).unwrap();
        assert_eq!(line, r#"{"op":"status"}"#);
        let event = ShimEvent::Written {
            session_id: Some("s".into()),
        };
        let line = serde_json::to_string(&event).unwrap();
        assert_eq!(line, r#"{"event":"written","session_id":"s"}"#);
        let back: ShimEvent = serde_json::from_str(&line).unwrap();
        assert_eq!(back, event);
    }
}
