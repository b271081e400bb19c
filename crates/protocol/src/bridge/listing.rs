//! The listing half of the messaging contract: what `list_agent_sessions` and the CLI's
//! `sessions` ask the daemon (`list_sessions`, and the live index's `index_sessions` /
//! `index_listing`) and the session entries they get back, Copilot's details included.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Agent, CallerContext, Scope};

/// Which agents `list_agent_sessions` covers: one, `both` (Claude and Codex) or `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentFilter {
    Claude,
    Codex,
    Grok,
    Copilot,
    // Claude and Codex. A plain comment: a documented variant would turn the schema's `enum`
    // into a `oneOf`.
    Both,
    #[default]
    All,
}

/// `list_sessions`: the `list_agent_sessions` tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListSessionsParams {
    #[serde(default)]
    pub agent: AgentFilter,
    #[serde(default)]
    pub scope: Option<Scope>,
    /// The directory, as an absolute path: a relative one is refused (`invalid_params`).
    #[serde(default, deserialize_with = "absolute_cwd")]
    pub cwd: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    pub caller: CallerContext,
}

/// What is wrong with `cwd` as the directory sessions are looked for from, if anything: a
/// relative path. The daemon has no directory of the caller's to take it from, and a scope
/// relative to it would match nothing, silently. A blank one is no `cwd` at all.
pub fn relative_cwd(cwd: &str) -> Option<String> {
    if cwd.trim().is_empty() || std::path::Path::new(cwd).is_absolute() {
        return None;
    }
    Some(format!(
        "is `{cwd}`, a relative path: give the absolute path of the directory (the daemon has \
         no current directory of yours to take it from)"
    ))
}

/// A `cwd` param, refused (as `invalid_params`, naming it) when [`relative_cwd`] says so.
pub(super) fn absolute_cwd<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let cwd = Option::<String>::deserialize(deserializer)?;
    match cwd.as_deref().and_then(relative_cwd) {
        Some(problem) => Err(serde::de::Error::custom(format!("`cwd` {problem}"))),
        None => Ok(cwd),
    }
}

/// One session as listed (the same fields as `cross-agent sessions --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionEntry {
    /// The machine the session lives on: a host name of `hosts.toml`, `null` for this one.
    #[serde(default)]
    pub host: Option<String>,
    pub session_id: String,
    pub title: Option<String>,
    pub title_is_assigned: bool,
    pub cwd: Option<String>,
    /// RFC 3339.
    pub last_activity: Option<String>,
    pub is_active: bool,
    pub is_working: bool,
    pub path: String,
    /// The caller's own session.
    #[serde(default)]
    pub is_caller: bool,
    /// Pinned for this agent.
    #[serde(default)]
    pub is_pinned: bool,
    /// A Claude session a running Claude Code process holds: the name its registry
    /// (`~/.claude/sessions/<pid>.json`) gives it, which other Claude sessions address it by.
    /// Absent when no live process holds the session (a stale entry a crash left is ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_name: Option<String>,
    /// That process's own status in the registry: `busy` or `idle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_status: Option<String>,
    /// What only a Copilot session has (absent for the other agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copilot: Option<CopilotDetails>,
}

/// A Copilot session's own facts, as VS Code's Agent Host catalog records them
/// (`docs/observed/copilot.md` §4). The session's editor UUID is its `session_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CopilotDetails {
    /// The host's session URI as the catalog holds it (`copilotcli:/<uuid>` or
    /// `ahp-session:/<uuid>`): opaque, never rebuilt.
    pub session_uri: String,
    /// Every working directory the session records (`cwd` is the first).
    #[serde(default)]
    pub working_directories: Vec<String>,
    /// Archived in the editor.
    #[serde(default)]
    pub archived: bool,
    /// A turn is running (a live host says so; the catalog cannot).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_progress: bool,
    /// A turn waits for the user: a tool confirmation or a question (a live host says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub input_needed: bool,
    /// The URI of the session's default chat, when the catalog knows it (a live host does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_chat: Option<String>,
    /// The Copilot SDK session backing the default chat (`defaultChatProviderData`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_session_id: Option<String>,
    /// The editor's user-data directory the session belongs to.
    pub user_data_dir: String,
    /// A running Agent Host publishes an endpoint for that user-data directory (and, once the
    /// daemon's host watcher is connected, lists the session itself).
    #[serde(default)]
    pub live: bool,
}

/// Sessions keyed by agent name (`{"claude": [...], "codex": [...], "grok": [...]}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListSessionsResponse {
    pub sessions: BTreeMap<String, Vec<SessionEntry>>,
    /// Files skipped while reading the stores, one line each naming the file.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// `index_sessions`: the sessions the daemon's live index holds, as the store readers see them
/// (the CLI's `sessions` and `sessions resolve` render them; `list_agent_sessions` is the
/// tool's shaped view of the same index).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IndexSessionsParams {
    /// Whose sessions; every agent when empty.
    #[serde(default)]
    pub agents: Vec<Agent>,
    /// Resolve one id or exact name in the daemon instead of sending the whole listing.
    #[serde(default)]
    pub resolve: Option<IndexResolve>,
    pub caller: CallerContext,
}

/// An id or exact name to resolve among one agent's sessions (`cross-agent sessions resolve`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IndexResolve {
    pub agent: Agent,
    pub query: String,
    pub scope: Scope,
    /// The directory the scope is relative to (absolute).
    pub cwd: String,
    /// How many of the newest sessions a name is looked for among (the caller's scan limit).
    #[serde(default)]
    pub bound: Option<u64>,
}

/// One session of the index (the store readers' model).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IndexedSession {
    pub agent: Agent,
    pub session_id: String,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub title_is_assigned: bool,
    /// Milliseconds since the Unix epoch.
    pub first_activity: Option<i64>,
    pub last_activity: Option<i64>,
    pub is_working: bool,
    pub path: String,
    /// What only a Copilot session has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copilot: Option<CopilotDetails>,
}

/// The sessions asked for, newest first. With `resolve`: the one session it resolved to and
/// how it matched, or — when it did not resolve — every session of that agent, so the caller
/// can explain the refusal exactly as its own lookup would.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IndexSessionsResponse {
    pub sessions: Vec<IndexedSession>,
    /// `session_id`, `assigned_name` or `generated_title` when `resolve` found its session.
    #[serde(default)]
    pub matched_by: Option<String>,
    /// Files skipped while reading the stores, one line each naming the file.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// `index_listing`: the listing `cross-agent sessions --json` prints, rendered by the daemon
/// from the live index. The answer's frame is followed on the connection by exactly
/// [`IndexListingResponse::bytes`] bytes of that listing (pretty JSON, which has newlines, so
/// it cannot travel inside a frame): only a client that reads that trailer may call it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IndexListingParams {
    /// Whose sessions, in the order printed; every agent when empty.
    #[serde(default)]
    pub agents: Vec<Agent>,
    pub scope: Scope,
    /// The directory the scope is relative to (absolute).
    pub cwd: String,
    /// At most this many sessions per agent, newest first.
    #[serde(default)]
    pub limit: Option<u64>,
    /// The caller's clock and active window, which `is_active` is judged by: milliseconds since
    /// the Unix epoch, and minutes.
    pub now: i64,
    pub active_window_min: u64,
    pub caller: CallerContext,
}

/// What precedes the rendered listing (see [`IndexListingParams`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IndexListingResponse {
    /// The length of the listing that follows this frame.
    pub bytes: u64,
    /// How many sessions it lists.
    pub sessions: u64,
    /// Files skipped while reading the stores, one line each naming the file.
    #[serde(default)]
    pub warnings: Vec<String>,
}
