//! The other machines this daemon links to over SSH (docs/remote.md): what `hosts status`
//! asks the daemon and what it answers, one [`HostStatus`] per host in `hosts.toml`.
//!
//! The link itself carries nothing of its own: it is the daemon RPC of `rpc.rs`, frame for
//! frame, spoken to the remote daemon through `ssh <dest> cross-agent rpc --stdio`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `hosts_status`: every host's link as the daemon sees it now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HostsStatusParams {}

/// The daemon's answer to `hosts_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostsStatusResponse {
    /// One entry per host in `hosts.toml`, by name.
    pub hosts: Vec<HostStatus>,
    /// Why `hosts.toml` could not be read, when it could not (the links of the last good read
    /// keep running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_error: Option<String>,
}

/// One host's link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostStatus {
    /// The host's name, as given to `hosts add`.
    pub name: String,
    /// The ssh destination (`user@box`, an alias of `~/.ssh/config`).
    pub destination: String,
    /// Where the link is.
    pub state: LinkState,
    /// What went wrong last, in ssh's own words when ssh said something (the last line it
    /// wrote to stderr, control characters removed), else the link's.
    pub last_error: Option<String>,
    /// The last round trip of a `status` call over the link, in milliseconds.
    pub rtt_ms: Option<f64>,
    /// The remote daemon's cross-agent version, from its `hello`.
    pub remote_version: Option<String>,
    /// The remote daemon's RPC version, from its `hello` or its refusal.
    pub remote_protocol_version: Option<u32>,
    /// Since when the link is in this state, RFC 3339 UTC.
    pub since: String,
    /// How many times the link was (re)started since the daemon started.
    pub attempts: u64,
    /// The ssh child's process id while one runs.
    pub ssh_pid: Option<u32>,
    /// When it is tried again, while `backing_off` or `refused`, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
}

/// Where one host's link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// ssh is starting, or the remote daemon has not answered `hello` yet.
    Connecting,
    /// The remote daemon answered `hello` with a compatible version; pings go through.
    Connected,
    /// The link failed (ssh could not connect, the remote went away); it is tried again after
    /// a pause that doubles up to a cap.
    BackingOff,
    /// The remote daemon speaks another protocol version: the link is not used, and it is
    /// tried again only after the longest pause (an upgrade on either side is what fixes it).
    Refused,
    /// A state this build does not know, sent by a newer daemon.
    #[serde(other)]
    Unknown,
}

impl LinkState {
    /// The state as spelled on the wire and in `hosts status`.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkState::Connecting => "connecting",
            LinkState::Connected => "connected",
            LinkState::BackingOff => "backing_off",
            LinkState::Refused => "refused",
            LinkState::Unknown => "unknown",
        }
    }
}

/// The host named by `--hosts all` / `host="all"`: every host, this machine first.
pub const ALL_HOSTS: &str = "all";

/// `on_host`: a request addressed to another machine's sessions (`--host NAME`, the MCP
/// tools' `host` parameter). The daemon here takes it and forwards `call` over that host's
/// link, where the remote daemon answers it as it would a local client; filters such as
/// `scope` and `cwd` apply there as given. `host = "all"` asks this machine and every linked
/// host where a merge makes sense: a listing merged (each entry naming its `host`), or a send
/// to the one host whose sessions answer to its `session_id` (two hosts answering is refused
/// as ambiguous, naming both).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OnHostParams {
    /// A name of `hosts.toml`, or `all`.
    pub host: String,
    /// What to ask there.
    pub call: HostCall,
}

/// The requests that can be addressed to another host, tagged like the RPC's own
/// (`{"method":"send","params":{…}}`).
// One value per call, serialised at once, like the RPC's own request enum.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub enum HostCall {
    /// `send_to_*` on that host; answers a `SendResponse` whose receipt names the host.
    #[serde(rename = "send")]
    Send(crate::bridge::SendParams),
    /// `list_agent_sessions` there; answers a `ListSessionsResponse`, each entry's `host` set.
    #[serde(rename = "list_sessions")]
    ListSessions(crate::bridge::ListSessionsParams),
    /// `pin_agent_session` there; answers a `PinResponse`.
    #[serde(rename = "pin")]
    Pin(crate::bridge::PinParams),
    /// `bridge_status` there; answers a `BridgeStatusResponse`.
    #[serde(rename = "bridge_status")]
    BridgeStatus(crate::bridge::BridgeStatusParams),
    /// The decisions log there; answers a `DecisionsQueryResponse`.
    #[serde(rename = "decisions_query")]
    DecisionsQuery(DecisionsQueryParams),
}

impl HostCall {
    /// The method's name on the wire.
    pub fn method(&self) -> &'static str {
        match self {
            HostCall::Send(_) => "send",
            HostCall::ListSessions(_) => "list_sessions",
            HostCall::Pin(_) => "pin",
            HostCall::BridgeStatus(_) => "bridge_status",
            HostCall::DecisionsQuery(_) => "decisions_query",
        }
    }
}

/// The answer to `on_host`: the addressed method's own response, as JSON (the caller knows
/// which type from the call it made).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct OnHostResponse(pub serde_json::Value);

/// `send_forwarded`: a send another machine's daemon accepted for a session here and forwards
/// over its link. It is taken exactly like a local `send`, except that the delivery keeps the
/// id the sending daemon gave it, so the records on both machines carry the same id and the
/// sender can ask for its outcome by it after a link that dropped comes back. A second
/// `send_forwarded` with an id already recorded is refused: nothing is ever sent twice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SendForwardedParams {
    /// The id the sending daemon recorded the delivery under.
    pub delivery_id: String,
    /// The sending machine as it names itself (its host name), for the record and the envelope.
    #[serde(default)]
    pub from_machine: Option<String>,
    /// The send as the sender made it; its `caller` describes a session on the other machine.
    pub send: crate::bridge::SendParams,
}

/// `decisions_query`: count (or list) this daemon's decisions log, the way `cross-agent
/// decisions` reads it; how `decisions --hosts all` asks each host's log where it lies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionsQueryParams {
    /// `--since`, as given (a duration back from the answering daemon's now, or RFC 3339).
    #[serde(default)]
    pub since: Option<String>,
    /// `--until`, as given.
    #[serde(default)]
    pub until: Option<String>,
    /// `--kind`.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// `--where FIELD=VALUE`, as given.
    #[serde(default)]
    pub conditions: Vec<String>,
    /// `--by FIELD`: the fields counted by. Empty: the matching records are listed.
    #[serde(default)]
    pub by: Vec<String>,
}

/// The answer to `decisions_query`. Asked of one daemon, every group and record has `host`
/// `null` (its own machine); through `on_host` each names the host it came from, and with
/// `host = "all"` the answers of this machine and every host are merged: counts stay per host
/// (largest first), records are interleaved by time, and a host that could not be asked is in
/// `unreachable`, never silently left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionsQueryResponse {
    /// With `by`: each group's values (one per field, `null` when missing) and its count.
    #[serde(default)]
    pub groups: Vec<DecisionGroup>,
    /// Without `by`: the matching records as written, oldest first.
    #[serde(default)]
    pub records: Vec<DecisionRecord>,
    /// Lines skipped as unreadable and files that could not be read, each naming its machine
    /// when the answer covers more than one.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The machines whose logs this answer covers (`null`: the answering daemon's own).
    #[serde(default)]
    pub hosts: Vec<Option<String>>,
    /// The hosts that could not be asked, and why: the answer is partial.
    #[serde(default)]
    pub unreachable: Vec<UnreachableHost>,
}

/// One group of a `decisions_query` count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionGroup {
    /// The machine whose log counted these: a host's name, `null` for the answering daemon's own.
    #[serde(default)]
    pub host: Option<String>,
    /// The values of the `by` fields, in order.
    pub key: Vec<Option<String>>,
    /// How many decisions have them.
    pub count: u64,
}

/// `approvals_pending`: the approvals this daemon holds for the bot of a daemon linked to it
/// (docs/remote.md, "What the phone sees"). A daemon whose own bot cannot ask (none set up, or
/// no chat paired) holds a Claude hook's escalation for a linked daemon's bot while one asks
/// for them; the asking is what tells it one does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalsPendingParams {}

/// The answer to `approvals_pending`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalsPendingResponse {
    /// Every approval waiting for an answer, oldest first.
    pub approvals: Vec<LinkedApproval>,
}

/// One approval waiting on this daemon, as the asking daemon's card shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LinkedApproval {
    /// This daemon's id for it (what `approval_answer` names).
    pub id: String,
    /// The agent whose tool call waits (`claude`).
    pub agent: String,
    pub session_id: String,
    /// The card's headline as this daemon words it (tool, where, the danger that fired).
    pub headline: String,
    /// What the call would do: the full command, or the diff against the file as it is on
    /// this machine.
    #[serde(default)]
    pub what: Option<String>,
    /// `what` is a unified diff.
    #[serde(default)]
    pub is_diff: bool,
    /// `what` is only part of the call (a detail the source had to cut, a file change known
    /// only by its reason), so the card does not offer Allow.
    #[serde(default)]
    pub partial: bool,
    /// The source's own choices, in its order (a Copilot confirmation's options); empty means
    /// Allow / Deny. A tap names the one it chose (`approval_answer`'s `choice`).
    #[serde(default)]
    pub choices: Vec<LinkedChoice>,
}

/// One of a held approval's own choices, as its card's button shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LinkedChoice {
    /// The source's id for it, handed back with the tap.
    pub id: String,
    /// The source's words for it.
    pub label: String,
    /// Whether it approves the call.
    pub allow: bool,
}

/// `approval_answer`: the first tap on a linked daemon's card, for approval `id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalAnswerParams {
    pub id: String,
    pub allow: bool,
    /// The Telegram user who tapped.
    pub user_id: i64,
    /// The machine the tap came from as it names itself, for the decision line.
    #[serde(default)]
    pub from_machine: Option<String>,
    /// The id of the approval's own choice that was tapped, when it offered choices.
    #[serde(default)]
    pub choice: Option<String>,
}

/// The answer to `approval_answer`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalAnswerResponse {
    /// Why the answer was not taken (the approval was answered, or timed out, first); `None`
    /// when it was.
    #[serde(default)]
    pub not_taken: Option<String>,
}

/// One record of a `decisions_query` listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionRecord {
    /// The machine whose log holds it: a host's name, `null` for the answering daemon's own.
    #[serde(default)]
    pub host: Option<String>,
    /// The record's line as written (one JSON object).
    pub line: String,
}

/// A host an answer over several machines could not include.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UnreachableHost {
    /// The host's name in `hosts.toml`.
    pub host: String,
    /// Why it could not be asked: its link's state and last error, or the error of the call.
    pub reason: String,
}
