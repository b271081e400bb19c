//! The messaging contract: what a thin client (`cross-agent mcp`, `cross-agent send`, …) sends
//! the daemon for the MCP tools `send_to_*`, `list_agent_sessions`, `bridge_status` and
//! `pin_agent_session`, and what it gets back — receipts, refusals, delivery records.
//!
//! Field names are the spec's (docs/spec/cross-agent-mcp.md §4 and §6): agents and people already read them, so they are
//! the interface. Types only; the engine that fills them is the `hub` crate.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::vocabulary::{Agent, Scope, TargetKey, Transport};

mod listing;

use listing::absolute_cwd;

pub use listing::*;

/// One process in the caller's ancestry, nearest first (the `mcp` process's parent is first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AncestorProcess {
    pub pid: u32,
    /// The executable's file name (`/proc/<pid>/comm` or the exe's base name).
    pub name: String,
    /// The command line, arguments joined by spaces, trimmed to a few hundred characters.
    pub cmdline: String,
}

/// Who is calling and with which settings, gathered by the thin process that received the
/// call. The daemon decides the reply address from it (docs/spec/cross-agent-mcp.md "Reply address"); a pin never
/// stands in for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallerContext {
    /// The caller's working directory (the MCP server's cwd, which the agent sets to the
    /// session's directory).
    pub cwd: Option<String>,
    /// The thin process's own pid.
    pub pid: u32,
    /// The process chain above the thin process, nearest first.
    #[serde(default)]
    pub ancestry: Vec<AncestorProcess>,
    /// `clientInfo.name` from the MCP handshake (`claude-code`, `codex-mcp-client`, …).
    pub client_name: Option<String>,
    /// `CLAUDE_CODE_SESSION_ID` — a Claude caller's exact session.
    pub claude_code_session_id: Option<String>,
    /// `GROK_SESSION_ID` — counts only for a Grok caller.
    pub grok_session_id: Option<String>,
    /// `COPILOT_AGENT_SESSION_ID` — the Copilot SDK session a Copilot caller's MCP process was
    /// started for; mapped to the editor's session by the daemon, and counts only when no other
    /// known agent is the caller.
    #[serde(default)]
    pub copilot_agent_session_id: Option<String>,
    /// The Host session a Copilot caller's `tools/call` names in its `_meta` (an
    /// `ahp-session:/…` or `copilotcli:/…` URI, or the bare UUID), as received; counts only for a
    /// Copilot caller and, with `copilot_agent_session_id`, must name the same session
    /// (docs/observed/copilot.md §6: the key is not seen on the wire yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copilot_caller_session: Option<String>,
    /// `CROSS_AGENT_SELF_SESSION=<agent>:<id>`, as given, for turns the bridge started.
    pub self_session: Option<String>,
    /// `CROSS_AGENT_SELF`, as given: forces the caller's agent.
    pub self_agent: Option<String>,
    /// `CROSS_AGENT_CONVERSATION_ID` inherited from a bridge-started turn.
    pub conversation_id: Option<String>,
    /// Codex's per-call `_meta["x-codex-turn-metadata"]`, exactly as received (an object, or a
    /// string holding JSON); the daemon parses it defensively.
    pub codex_turn_metadata: Option<Value>,
    /// Every `CROSS_AGENT_*` variable of this registration: each registration guards its own
    /// side, whatever the daemon itself was started with.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// The environment a spawned peer CLI may inherit from this caller: the spec's baseline
    /// (docs/spec/cross-agent-mcp.md "What a spawned agent CLI inherits") plus the names in `CROSS_AGENT_CHILD_ENV`,
    /// filtered by the thin process. Used for the child only; never stored or logged.
    #[serde(default)]
    pub child_env: BTreeMap<String, String>,
    /// Every name the thin process withheld from `child_env`, whatever it is called (never a
    /// value; not the caller's identity variables), so a relay that fails for want of one can
    /// name it and how to pass it.
    #[serde(default)]
    pub withheld_env: Vec<String>,
}

/// `send`: the common `send_to_*` parameters (docs/spec/cross-agent-mcp.md §4), plus the target agent and the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SendParams {
    pub agent: Agent,
    pub message: String,
    /// Session id or exact conversation name.
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub new_session: bool,
    #[serde(default)]
    pub scope: Option<Scope>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// CLI inactivity limit in seconds (`timeout`, default `CROSS_AGENT_TIMEOUT` or 600).
    #[serde(default)]
    pub timeout: Option<u64>,
    #[serde(default)]
    pub conversation_id: Option<String>,
    #[serde(default)]
    pub raw: bool,
    /// `send_to_claude` / `send_to_grok` only; `send_to_codex` has no such flag.
    #[serde(default)]
    pub allow_same_agent: bool,
    pub caller: CallerContext,
}

/// How the target session was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TargetSelectedBy {
    /// The caller named it (`session_id`).
    Caller,
    /// A pin (`pin_agent_session`, or one the bridge made for a session it created).
    Pin,
    /// The active session on disk.
    Discovery,
    /// Nobody named it: the conversation open in the caller's window's panel — the tab a human
    /// typed into last, else the one whose transcript changed last, else the newest.
    #[serde(rename = "panel-focus")]
    PanelFocus,
    /// Nothing existed (or `new_session`): a new session will be created.
    NewSession,
}

/// The state of the target session's queue, as the receipt reports it (`peer_queue`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeerQueue {
    /// Deliveries any daemon generation has queued ahead for that session.
    pub queued_ahead: u32,
    /// How long the oldest of them has waited, in seconds.
    pub oldest_waiting_seconds: Option<u64>,
    /// `running`, `paused_on_approval` or `idle`, when known.
    pub peer_turn: Option<String>,
}

/// The receipt `send_to_*` returns at once: not an answer (docs/spec/cross-agent-mcp.md §4 "receipt").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SendReceipt {
    pub delivery_id: String,
    /// The host the target session lives on, for a send forwarded over a link; absent for
    /// this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub accepted: bool,
    /// Says there is no response yet, and where it will appear.
    pub note: String,
    pub target_agent: Agent,
    /// `None` only when a new session will be created and its id is not known yet.
    pub target_session_id: Option<String>,
    pub target_title: Option<String>,
    pub target_selected_by: TargetSelectedBy,
    /// How the message enters the session (`headless-cli`, `panel`, `claude-native`,
    /// `agent-host`), as the record names it.
    #[serde(default = "Transport::unnamed")]
    pub transport: Transport,
    /// The `session_id` argument exactly as the caller gave it.
    pub caller_supplied_session_id: Option<String>,
    pub will_create_session: bool,
    pub target_last_activity_seconds_ago: Option<u64>,
    /// Deliveries already waiting ahead of this one for the same target session.
    pub queue_depth: u32,
    pub peer_queue: PeerQueue,
    /// The return address: the sender session the answer is aimed at; `None` = nowhere.
    pub reply_lands_in_session: Option<String>,
    /// Whether the sender has a live return route now (false until panels exist).
    pub return_panel_available_now: bool,
    pub conversation_id: String,
    /// This request's hop number and the budget (`hop n/N`).
    pub hop: u32,
    pub max_hops: u32,
    /// `req_<epoch ms>_<6 chars>`: the peer is asked to end its finished answer with it.
    pub request_id: String,
    /// The headless idle policy (`inactivity timeout 600 s, reset by CLI output or transcript
    /// writes; no wall-clock limit`).
    pub idle_policy: String,
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Which rule refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// Arguments that contradict each other or are malformed (`session_id` with `new_session`).
    InvalidArguments,
    /// `CROSS_AGENT_MAX_HOPS` spent for this conversation.
    HopBudget,
    /// Same-agent relay without `allow_same_agent` or an explicit `session_id`.
    SelfCall,
    /// `CROSS_AGENT_REQUIRE_EXPLICIT_TARGET` and no `session_id` / `new_session`; or a Copilot
    /// send naming no session with no sticky pin (Copilot is never discovered).
    RequireExplicitTarget,
    /// `CROSS_AGENT_DISABLE_HEADLESS` and no panel holds the session.
    DisableHeadless,
    /// A name two or more sessions answer to.
    AmbiguousName,
    /// No session has that id or exact name.
    NoSuchSession,
    /// A configured scan bound was reached before the name could be shown unique.
    ScanBoundReached,
    /// A `CROSS_AGENT_*` setting of the caller's registration has a value that cannot be read.
    InvalidSetting,
    /// `CROSS_AGENT_UI_HOOK=require` and the send needs a panel that cannot be found: it names no
    /// session, or asks for a new conversation.
    UiHookRequire,
    /// The caller says it is a session that cannot be resolved to exactly one: a Copilot SDK
    /// session (`COPILOT_AGENT_SESSION_ID`) that no, an archived, or more than one registered
    /// default chat is backed by. Nothing is sent without a return address.
    CallerUnresolved,
    /// The target cannot be reached by any route: a Copilot session whose editor's Agent Host
    /// is not running ("host not running"), or Copilot under `CROSS_AGENT_UI_HOOK=off`.
    NotAvailable,
}

/// A session offered as a candidate in a refusal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCandidate {
    pub agent: Agent,
    pub session_id: String,
    pub title: Option<String>,
    pub title_is_assigned: bool,
    pub cwd: Option<String>,
    /// RFC 3339.
    pub last_activity: Option<String>,
}

/// Why a call was refused, in words that name the thing, with what was compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Refusal {
    pub reason: RefusalReason,
    pub message: String,
    #[serde(default)]
    pub candidates: Vec<SessionCandidate>,
    /// The values the guard compared (hop count and budget, caller and target, …).
    #[serde(default)]
    pub details: Value,
}

/// What `send` answers: a receipt, or a refusal (a refusal is an answer, not an RPC failure).
// One value per call, serialised at once: boxing the receipt would cost every reader a deref
// for no memory saved that matters.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum SendResponse {
    Accepted(SendReceipt),
    Refused(Refusal),
}

/// `pin`: the `pin_agent_session` tool. An empty or absent `session_id` unpins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PinParams {
    pub agent: Agent,
    #[serde(default)]
    pub session_id: Option<String>,
    /// The directory a name is resolved from, as an absolute path: a relative one is refused
    /// (`invalid_params`).
    #[serde(default, deserialize_with = "absolute_cwd")]
    pub cwd: Option<String>,
    pub caller: CallerContext,
}

/// A pin as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Pin {
    pub agent: Agent,
    pub session_id: String,
    pub title: Option<String>,
    pub cwd: Option<String>,
    /// Set with `pin_agent_session`: never expires. Automatic pins (a session the bridge
    /// created) hold only within the active window.
    pub sticky: bool,
    /// RFC 3339.
    pub pinned_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PinResponse {
    Pinned { pin: Pin, previous: Option<Pin> },
    Unpinned { previous: Option<Pin> },
    Refused(Refusal),
}

/// Where a delivery stands (docs/spec/cross-agent-mcp.md §9: queued → delivering → awaiting-peer → delivered / failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeliveryState {
    Queued,
    Delivering,
    AwaitingPeer,
    Delivered,
    Failed,
}

impl DeliveryState {
    pub fn is_finished(self) -> bool {
        match self {
            DeliveryState::Delivered | DeliveryState::Failed => true,
            DeliveryState::Queued | DeliveryState::Delivering | DeliveryState::AwaitingPeer => {
                false
            }
        }
    }
}

/// What is known of a hand-over whose outcome the peer never told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HandOverOutcome {
    /// Sent, but neither accepted nor refused before the connection ended or the wait ran
    /// out: it may have started, so it is never re-sent.
    Unknown,
}

/// One delivery as recorded in `hub.db`. Never the payload, never the child's environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeliveryRecord {
    pub delivery_id: String,
    /// The host the delivery was forwarded to over its link (the record there carries the
    /// same id); absent for a delivery carried on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// On the receiving machine, a delivery another machine's daemon forwarded: that machine
    /// as it named itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded_from: Option<String>,
    pub request_id: String,
    pub state: DeliveryState,
    pub from_agent: Option<Agent>,
    pub from_session: Option<String>,
    pub target_agent: Agent,
    pub target_session_id: Option<String>,
    pub target_cwd: Option<String>,
    pub target_selected_by: TargetSelectedBy,
    pub will_create_session: bool,
    pub conversation_id: String,
    pub hop: u32,
    pub max_hops: u32,
    /// How the message enters the session (`headless-cli` now; `panel` later).
    pub transport: Transport,
    /// RFC 3339 timestamps.
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// The lease of an in-flight record; past it the record is orphaned.
    pub expires_at: Option<String>,
    /// The daemon generation carrying it, and the peer process's pid while it runs.
    pub carrier_generation: Option<u64>,
    pub peer_pid: Option<u32>,
    pub error: Option<String>,
    #[serde(default)]
    pub is_killed_by_timeout: bool,
    #[serde(default)]
    pub is_stopped_with_carrier: bool,
    #[serde(default)]
    pub is_reply_recovered: bool,
    #[serde(default)]
    pub is_undelivered: bool,
    /// The answer's first 2,000 characters.
    pub reply_preview: Option<String>,
    pub late_reply_delivery_id: Option<String>,
    pub return_delivery_id: Option<String>,
    /// The `PROGRESS (INFO)` notice sent to the sender's panel while the turn ran long, as a
    /// delivery of its own.
    #[serde(default)]
    pub progress_delivery_id: Option<String>,
    /// What that notice said (kept even when it could not be delivered).
    #[serde(default)]
    pub progress_note: Option<String>,
    /// The message's length, for diagnostics (the text itself is never stored).
    pub message_chars: u64,
    /// The daemon carrying it disappeared without closing it; it is never re-sent.
    #[serde(default)]
    pub is_orphaned: bool,
    /// The answer (or failure) was never put into the sender's session, for want of a live
    /// return route: read it here and from the peer's transcript.
    #[serde(default)]
    pub is_return_status_only: bool,
    /// The target's transcript, when known, for re-reading the answer.
    #[serde(default)]
    pub target_transcript: Option<String>,
    /// What is known of the hand-over when that is all the record can say: `unknown` when the
    /// message was sent but the peer neither accepted nor refused it (it may have started, so
    /// it is never re-sent). Absent when the hand-over's outcome is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<HandOverOutcome>,
    /// How the answer was paired with the request, and what a relay of it says about that.
    #[serde(flatten, default)]
    pub answer: AnswerMarks,
}

/// How an answer was paired with its request (docs/spec/cross-agent-mcp.md §6 "Interim answers and late answers",
/// §9 "Every request carries a unique token"), and the header a relay of it carries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AnswerMarks {
    /// The answer's closing line carries this request's id: it is this request's answer,
    /// whenever it was written.
    #[serde(default)]
    pub reply_carries_request_id: bool,
    /// The answer named no request id: taken by timing only, relayed marked
    /// `NO REQUEST ID … possibly interim`, and a late-answer watch may follow.
    #[serde(default)]
    pub is_reply_possibly_interim: bool,
    /// A finished turn that echoed the request id was found in the peer's transcript while the
    /// transport was still waiting, and settled the delivery.
    #[serde(default)]
    pub is_reply_confirmed_by_transcript: bool,
    /// Why the transport failed, for a recovered answer (`transport failure:` line).
    #[serde(default)]
    pub transport_failure: Option<String>,
    /// The header lines a relay of this answer carries before the answer text
    /// (`=== BRIDGE REPLY …`, `LATE ANSWER …`, warnings).
    #[serde(default)]
    pub reply_header: Option<String>,
    /// Set on a late answer's own record: the request it answers.
    #[serde(default)]
    pub answers_delivery_id: Option<String>,
    /// The late-answer watch on this request runs until then (RFC 3339), if one was started.
    #[serde(default)]
    pub late_answer_watch_until: Option<String>,
}

/// `bridge_status`: diagnostics, or one delivery re-read from the peer's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BridgeStatusParams {
    /// The directory, as an absolute path: a relative one is refused (`invalid_params`).
    #[serde(default, deserialize_with = "absolute_cwd")]
    pub cwd: Option<String>,
    #[serde(default)]
    pub scope: Option<Scope>,
    #[serde(default)]
    pub delivery_id: Option<String>,
    pub caller: CallerContext,
}

/// What the peer's transcript says now about one delivery.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeerTranscript {
    pub path: Option<String>,
    pub is_working: bool,
    /// The answer read fresh from the transcript, if one exists after the delivery started.
    pub answer: Option<String>,
    /// Whether that answer's closing line carries this delivery's request id.
    pub answer_carries_request_id: bool,
    pub error: Option<String>,
}

/// `bridge_status`'s answer. Every section is a typed struct whose fields keep
/// `#[serde(default)]` where a section may grow: a reader built before a field was added still
/// reads a newer answer, and one built after reads an older answer with the field at its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BridgeStatusResponse {
    /// The daemon answering, and the replaced ones still draining.
    pub server_process: ServerProcess,
    /// Who is calling, as resolved (agent, session, how it was decided).
    pub caller: CallerStatus,
    /// The settings in effect for this caller's registration.
    pub settings: SettingsStatus,
    /// Per agent: the session a send would reach now, and how. Empty when no directory is known.
    #[serde(default)]
    pub resolved_sessions: BTreeMap<Agent, ResolvedSession>,
    pub pins: Vec<Pin>,
    /// Busy locks held (session, owner, since).
    #[serde(default)]
    pub locks: Vec<BusyLockStatus>,
    /// Deliveries pending, in flight (here and in other daemons), recent, and watched.
    pub deliveries: DeliveriesStatus,
    /// Set when `delivery_id` was given.
    pub delivery: Option<DeliveryRecord>,
    pub peer_transcript: Option<PeerTranscript>,
    /// With `delivery_id` of a request whose answer went back through the sender's panel: that
    /// return delivery's record (a request finishes before its answer lands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_delivery: Option<DeliveryRecord>,
    /// With `delivery_id` of a delivery carried by a panel: what the panel reports now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_panel: Option<PeerPanelStatus>,
    /// Per agent: the conversations open in editor panels, and which one an unaddressed send
    /// would reach (docs/spec/cross-agent-mcp.md "Which conversation tab it goes to").
    #[serde(default)]
    pub ide_panels: BTreeMap<Agent, IdePanels>,
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// `bridge_status.ide_panels.<agent>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct IdePanels {
    /// The conversations open in the caller's window's panels.
    pub tabs: Vec<PanelTabStatus>,
    /// The tab an unaddressed send would reach now, if any.
    pub selected_session_id: Option<String>,
    /// Why: `human-input`, `transcript-activity` or `newest`; or why none was selected.
    pub selected_by: Option<String>,
    /// Conversations open in other windows' panels: never auto-selected, reachable by
    /// `session_id`.
    pub other_window_sessions: Vec<PanelTabStatus>,
    /// Whether a panel of the caller's window can open a new conversation.
    pub can_open_new_conversation: bool,
}

/// One conversation a panel holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PanelTabStatus {
    pub session_id: Option<String>,
    /// `idle`, `working` or `awaiting_approval`.
    pub state: String,
    /// The last time a human typed into it (RFC 3339); injected turns never count.
    pub last_human_input: Option<String>,
    pub title: Option<String>,
    pub cwd: Option<String>,
    /// The shim's pid.
    pub shim_pid: u32,
}

/// `bridge_status(delivery_id).peer_panel`: the panel carrying a delivery, as it reports now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PeerPanelStatus {
    pub shim_pid: Option<u32>,
    pub session_id: Option<String>,
    /// `idle`, `working`, `awaiting_approval`, or `gone` when no live shim holds it.
    pub state: String,
    /// The approval the bridged turn waits on, if any.
    pub awaiting_approval: Option<AwaitingApproval>,
}

/// An approval a bridged turn waits on in a panel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct AwaitingApproval {
    pub request_id: String,
    /// `can_use_tool`, `item/commandExecution/requestApproval`, … .
    pub kind: String,
    pub tool: Option<String>,
    pub detail: Option<String>,
    pub waiting_seconds: u64,
}

/// `bridge_status.server_process`: the daemon that answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerProcess {
    pub pid: u32,
    /// Which start of the daemon for this home it is.
    pub generation: u64,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// Its cross-agent version.
    pub version: String,
    /// Earlier daemons of this home that were replaced and still finish what they carry.
    #[serde(default)]
    pub draining: Vec<crate::rpc::DrainingDaemon>,
    /// `hub.db`'s health as this daemon's start found it, and the damaged stores moved aside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<StoreHealth>,
}

/// A damaged store as `bridge_status` and `cross-agent check` show it. Found in the store's
/// memory of what it moved aside, or as a `hub.db.damaged-…` file beside it (a store moved
/// aside by a store that was itself damaged later: then only the file tells).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuarantinedStore {
    /// Where the damaged store went.
    pub file: String,
    /// When it was moved there.
    pub at: Option<String>,
    /// What SQLite found.
    pub reason: Option<String>,
    /// How many delivery ids could still be read from it.
    pub deliveries: Option<u64>,
}

/// The store's health: `bridge_status`'s `server_process.database`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StoreHealth {
    /// `hub.db`.
    pub path: String,
    /// Its size on disk (without its write-ahead log).
    pub size_bytes: Option<u64>,
    /// What this daemon's start found: `new`, `ok` or `quarantined`.
    pub check: Option<String>,
    /// How long that check took.
    pub check_ms: Option<u64>,
    /// Damaged stores moved aside, newest first.
    pub quarantined: Vec<QuarantinedStore>,
}

/// `bridge_status.caller`: the caller as the daemon resolved it (docs/spec/cross-agent-mcp.md "Reply address").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallerStatus {
    /// `None` when nothing identified the caller's agent.
    pub agent: Option<Agent>,
    pub session_id: Option<String>,
    /// How the agent and session were decided, in words.
    #[serde(default)]
    pub how: String,
    /// The bridge conversation the call continues, when it is inside one.
    pub conversation_id: Option<String>,
    /// The delivery whose headless turn is calling, when the daemon started the caller's turn.
    pub bridge_started_turn: Option<String>,
}

/// `bridge_status.settings`: the `CROSS_AGENT_*` settings in effect for the caller's
/// registration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SettingsStatus {
    /// `CROSS_AGENT_MAX_HOPS`.
    pub max_hops: u32,
    /// `CROSS_AGENT_TIMEOUT`: the CLI inactivity limit.
    pub timeout_seconds: u64,
    /// `CROSS_AGENT_REQUIRE_EXPLICIT_TARGET`.
    pub require_explicit_target: bool,
    /// `CROSS_AGENT_DISABLE_HEADLESS`.
    pub disable_headless: bool,
    /// `CROSS_AGENT_SCOPE`.
    pub scope: Scope,
    /// `CROSS_AGENT_ACTIVE_WINDOW_MIN`.
    pub active_window_minutes: u64,
    /// `CROSS_AGENT_LATE_ANSWER_WATCH`.
    pub late_answer_watch_seconds: u64,
    /// `CROSS_AGENT_PANEL_PATIENCE`.
    pub panel_patience_seconds: u64,
    /// `CROSS_AGENT_UI_HOOK`: `auto`, `off` or `require`.
    pub ui_hook: String,
    /// Whether an editor panel can take a delivery (`CROSS_AGENT_UI_HOOK` is not `off` and a
    /// live panel shim is registered).
    pub panels_available: bool,
    /// Settings whose value could not be read, each naming the variable; a send is refused
    /// while any is listed.
    pub invalid: Vec<String>,
}

/// `bridge_status.resolved_sessions.<agent>`: the session a send to that agent would reach now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResolvedSession {
    /// `None` when a new session would be created.
    pub session_id: Option<String>,
    /// `pin`, `discovery` or `new_session`.
    pub selected_by: TargetSelectedBy,
    /// The session's title, when discovery found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Whether the pin is sticky (set with `pin_agent_session`), when a pin chose it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sticky: Option<bool>,
}

/// `bridge_status.locks[]`: a session some delivery holds busy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BusyLockStatus {
    /// `<agent>:<session id>`.
    pub target_key: String,
    /// The process holding it.
    pub owner_pid: u32,
    pub delivery_id: Option<String>,
    /// RFC 3339.
    pub acquired_at: String,
    /// The lease's end, Unix milliseconds: past it the lock is reclaimed.
    pub lease_until_ms: i64,
}

/// `bridge_status.deliveries`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct DeliveriesStatus {
    /// Queued, not yet handed over.
    pub pending: Vec<DeliveryRecord>,
    /// Handed over by this daemon, answer not yet recorded.
    pub in_flight: Vec<DeliveryRecord>,
    /// Handed over by another daemon generation (one draining, or one that died).
    pub in_flight_elsewhere: Vec<DeliveryRecord>,
    /// The latest finished ones.
    pub recent: Vec<DeliveryRecord>,
    /// Requests whose peer transcript is watched for a later answer, newest first.
    pub watching_for_late_answers: Vec<LateAnswerWatch>,
}

/// `bridge_status.deliveries.watching_for_late_answers[]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LateAnswerWatch {
    pub delivery_id: String,
    /// The daemon keeping the watch.
    pub owner_pid: Option<u32>,
    pub request_id: Option<String>,
    pub target_agent: Option<Agent>,
    pub target_session_id: Option<String>,
    /// The watch ends then, RFC 3339.
    #[serde(default)]
    pub until: String,
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    /// The sections were `json!` literals before they were types; readers of that JSON (agents,
    /// scripts on `cross-agent status --json`) see the same names and shapes.
    #[test]
    fn status_sections_keep_the_shape_of_the_old_literals() {
        let status = BridgeStatusResponse {
            server_process: ServerProcess {
                pid: 7,
                generation: 2,
                started_at: "2026-01-01T00:00:00Z".into(),
                version: "0.1.0".into(),
                draining: Vec::new(),
                database: None,
            },
            caller: CallerStatus {
                agent: Some(Agent::Claude),
                session_id: Some("c-1".into()),
                how: "CLAUDE_CODE_SESSION_ID".into(),
                conversation_id: None,
                bridge_started_turn: None,
            },
            settings: SettingsStatus {
                max_hops: 4,
                timeout_seconds: 600,
                scope: Scope::Tree,
                active_window_minutes: 240,
                ui_hook: "auto".into(),
                ..SettingsStatus::default()
            },
            resolved_sessions: BTreeMap::from([
                (
                    Agent::Claude,
                    ResolvedSession {
                        session_id: Some("c-2".into()),
                        selected_by: TargetSelectedBy::Pin,
                        title: None,
                        sticky: Some(true),
                    },
                ),
                (
                    Agent::Codex,
                    ResolvedSession {
                        session_id: None,
                        selected_by: TargetSelectedBy::NewSession,
                        title: None,
                        sticky: None,
                    },
                ),
            ]),
            pins: Vec::new(),
            locks: Vec::new(),
            deliveries: DeliveriesStatus {
                watching_for_late_answers: vec![LateAnswerWatch {
                    delivery_id: "dlv_1".into(),
                    owner_pid: Some(7),
                    request_id: None,
                    target_agent: Some(Agent::Codex),
                    target_session_id: None,
                    until: "2026-01-01T03:00:00Z".into(),
                }],
                ..DeliveriesStatus::default()
            },
            delivery: None,
            peer_transcript: None,
            return_delivery: None,
            peer_panel: None,
            ide_panels: Default::default(),
            warnings: Vec::new(),
        };
        let wire = serde_json::to_value(&status).unwrap();
        assert_eq!(
            wire,
            json!({
                "server_process": {"pid": 7, "generation": 2, "started_at": "2026-01-01T00:00:00Z",
                                   "version": "0.1.0", "draining": []},
                "caller": {"agent": "claude", "session_id": "c-1", "how": "CLAUDE_CODE_SESSION_ID",
                           "conversation_id": null, "bridge_started_turn": null},
                "settings": {"max_hops": 4, "timeout_seconds": 600, "require_explicit_target": false,
                             "disable_headless": false, "scope": "tree", "active_window_minutes": 240,
                             "late_answer_watch_seconds": 0, "panel_patience_seconds": 0,
                             "ui_hook": "auto", "panels_available": false, "invalid": []},
                "resolved_sessions": {
                    "claude": {"session_id": "c-2", "selected_by": "pin", "sticky": true},
                    "codex": {"session_id": null, "selected_by": "new_session"},
                },
                "pins": [],
                "locks": [],
                "deliveries": {"pending": [], "in_flight": [], "in_flight_elsewhere": [], "recent": [],
                               "watching_for_late_answers": [{
                                   "delivery_id": "dlv_1", "owner_pid": 7, "request_id": null,
                                   "target_agent": "codex", "target_session_id": null,
                                   "until": "2026-01-01T03:00:00Z"}]},
                "delivery": null,
                "peer_transcript": null,
                "ide_panels": {},
                "warnings": [],
            })
        );
        assert_eq!(
            serde_json::from_value::<BridgeStatusResponse>(wire).unwrap(),
            status
        );
    }
}
