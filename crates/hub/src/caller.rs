//! Who is calling: the reply address (docs/spec/cross-agent-mcp.md "Reply address"). A pin never stands in for it —
//! a pin says where to *send*, not who *I am*.
//!
//! In order of trust:
//! 1. **A turn the daemon started itself.** A call whose process ancestry holds the pid of a
//!    headless turn the daemon runs, or whose Codex `_meta` names that turn's thread, comes from
//!    that turn: its agent, session and conversation are known exactly. This matters for Codex,
//!    which passes no environment to its MCP servers, so `CROSS_AGENT_CONVERSATION_ID` never
//!    reaches them.
//! 2. **The agent.** `CROSS_AGENT_SELF` forces it; else the MCP client's name, the nearest agent
//!    program in the ancestry, Codex's `_meta`, `CROSS_AGENT_SELF_SESSION`'s prefix, and last the
//!    agents' own variables.
//! 3. **The session, per agent.** Codex: the thread id Codex declares in
//!    `_meta["x-codex-turn-metadata"]` (an object, or a string holding JSON — read defensively;
//!    it wins over inference, since one Codex MCP server serves every thread of a window).
//!    Claude: `CLAUDE_CODE_SESSION_ID`. Grok: `GROK_SESSION_ID` — only for a Grok caller, since
//!    everything Grok runs inherits it. Else `CROSS_AGENT_SELF_SESSION` when it names the same
//!    agent. Copilot: `COPILOT_AGENT_SESSION_ID`, the SDK session its MCP process serves —
//!    the last clue to the agent (inherited, it means nothing when another agent is the
//!    caller), and not yet the session: the engine maps it to the editor's session through the
//!    catalog (`engine/copilot_caller.rs`), or stops the send. A Host session named in the
//!    call's `_meta` is a clue too; with the variable it must name the same session.

use cross_agent_protocol::bridge::{CallerContext, CallerStatus, TargetKey};
use cross_agent_protocol::settings as var;
use serde_json::Value;

use crate::Agent;

/// A headless turn the daemon is running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedTurn {
    /// The CLI's pid (also its process group).
    pub pid: u32,
    pub agent: Agent,
    /// The session the turn runs in, once known (a new Codex thread's comes later).
    pub session_id: Option<String>,
    pub conversation_id: String,
    pub delivery_id: String,
}

/// The caller, as decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    pub agent: Option<Agent>,
    pub session_id: Option<String>,
    /// How the agent and session were decided, for `bridge_status` and refusals.
    pub how: String,
    /// The conversation the call continues, when the caller is inside one.
    pub conversation_id: Option<String>,
    /// The call comes from a turn the daemon started.
    pub started_turn: Option<String>,
    /// A Copilot caller's SDK session (`COPILOT_AGENT_SESSION_ID`), still to be mapped to its
    /// editor session.
    pub copilot_sdk_session: Option<String>,
    /// The Host session a Copilot caller's `tools/call` `_meta` names, still to be checked
    /// against the catalog (and against the SDK session's mapping when both are present).
    pub copilot_host_session: Option<String>,
    /// A mapped Copilot caller's verified return route, when its host runs its MCP process.
    pub copilot_return: Option<crate::records::CopilotReturn>,
}

impl Caller {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.status()).unwrap_or(Value::Null)
    }

    /// The caller as `bridge_status` reports it.
    pub fn status(&self) -> CallerStatus {
        CallerStatus {
            agent: self.agent,
            session_id: self.session_id.clone(),
            how: self.how.clone(),
            conversation_id: self.conversation_id.clone(),
            bridge_started_turn: self.started_turn.clone(),
        }
    }
}

/// The thread id Codex declares in `x-codex-turn-metadata`, read defensively: the value may be
/// an object or a string holding JSON, and either `thread_id` or `session_id` may carry it.
pub fn codex_thread_id(meta: Option<&Value>) -> Option<String> {
    let meta = meta?;
    let parsed;
    let object = match meta {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).ok()?;
            &parsed
        }
        other => other,
    };
    ["thread_id", "threadId", "session_id", "sessionId"]
        .iter()
        .find_map(|key| object.get(*key).and_then(Value::as_str))
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// The agent a process name or MCP client name points at.
fn agent_of_name(name: &str) -> Option<Agent> {
    let name = name.to_ascii_lowercase();
    if name.contains("claude") {
        Some(Agent::Claude)
    } else if name.contains("codex") {
        Some(Agent::Codex)
    } else if name.contains("grok") {
        Some(Agent::Grok)
    } else {
        None
    }
}

/// `CROSS_AGENT_SELF_SESSION=<agent>:<id>`.
pub fn parse_self_session(text: &str) -> Option<(Agent, String)> {
    let key = text.parse::<TargetKey>().ok()?;
    Some((key.agent, key.session_id))
}

fn non_blank(value: Option<&String>) -> Option<String> {
    value
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// Decides who is calling. `turns` are the headless turns the daemon runs now.
pub fn identify(context: &CallerContext, turns: &[StartedTurn]) -> Caller {
    let codex_thread = codex_thread_id(context.codex_turn_metadata.as_ref());
    let env_conversation = non_blank(context.conversation_id.as_ref());

    // 1. A turn the daemon started.
    let by_pid = turns
        .iter()
        .find(|turn| context.pid == turn.pid || context.ancestry.iter().any(|a| a.pid == turn.pid));
    let by_thread = codex_thread.as_deref().and_then(|thread| {
        turns
            .iter()
            .find(|turn| turn.agent == Agent::Codex && turn.session_id.as_deref() == Some(thread))
    });
    if let Some(turn) = by_thread.or(by_pid) {
        let session_id = match turn.agent {
            Agent::Codex => codex_thread.clone().or_else(|| turn.session_id.clone()),
            Agent::Claude | Agent::Grok | Agent::Copilot => turn.session_id.clone(),
        };
        return Caller {
            agent: Some(turn.agent),
            session_id,
            how: format!(
                "a turn the bridge started (delivery {}, pid {})",
                turn.delivery_id, turn.pid
            ),
            conversation_id: env_conversation.or_else(|| Some(turn.conversation_id.clone())),
            started_turn: Some(turn.delivery_id.clone()),
            copilot_sdk_session: None,
            copilot_host_session: None,
            copilot_return: None,
        };
    }

    // 2. The agent.
    // Copilot is identified by its SDK's own variable only (mapped to its session by the
    // engine): a setting naming it, which any Agent Host runtime's server may carry, is as if
    // unset.
    let copilot_sdk = non_blank(context.copilot_agent_session_id.as_ref());
    let copilot_meta = non_blank(context.copilot_caller_session.as_ref());
    let not_copilot = |agent: &Agent| *agent != Agent::Copilot;
    let self_session = context
        .self_session
        .as_deref()
        .and_then(parse_self_session)
        .filter(|(agent, _)| not_copilot(agent));
    let forced = context
        .self_agent
        .as_deref()
        .and_then(Agent::parse)
        .filter(not_copilot);
    let (agent, agent_how) = if let Some(agent) = forced {
        (Some(agent), var::SELF)
    } else if let Some(agent) = context.client_name.as_deref().and_then(agent_of_name) {
        (Some(agent), "the MCP client's name")
    } else if let Some(agent) = context.ancestry.iter().find_map(|p| agent_of_name(&p.name)) {
        (Some(agent), "process ancestry")
    } else if codex_thread.is_some() {
        (Some(Agent::Codex), "Codex turn metadata")
    } else if let Some((agent, _)) = &self_session {
        (Some(*agent), var::SELF_SESSION)
    } else if context.claude_code_session_id.is_some() {
        (Some(Agent::Claude), "CLAUDE_CODE_SESSION_ID")
    } else if context.grok_session_id.is_some() {
        (Some(Agent::Grok), "GROK_SESSION_ID")
    } else if copilot_sdk.is_some() {
        (Some(Agent::Copilot), "COPILOT_AGENT_SESSION_ID")
    } else if copilot_meta.is_some() {
        (Some(Agent::Copilot), "Copilot caller metadata")
    } else {
        (None, "nothing identified it")
    };

    // 3. The session, by the agent's own rule.
    let from_self_session = |agent: Agent| {
        self_session
            .as_ref()
            .filter(|(a, _)| *a == agent)
            .map(|(_, id)| (id.clone(), var::SELF_SESSION))
    };
    let session = match agent {
        Some(Agent::Codex) => codex_thread
            .clone()
            .map(|id| (id, "Codex x-codex-turn-metadata"))
            .or_else(|| from_self_session(Agent::Codex)),
        Some(Agent::Claude) => non_blank(context.claude_code_session_id.as_ref())
            .map(|id| (id, "CLAUDE_CODE_SESSION_ID"))
            .or_else(|| from_self_session(Agent::Claude)),
        Some(Agent::Grok) => non_blank(context.grok_session_id.as_ref())
            .map(|id| (id, "GROK_SESSION_ID"))
            .or_else(|| from_self_session(Agent::Grok)),
        Some(Agent::Copilot) | None => None,
    };
    let how = match &session {
        Some((_, session_how)) => format!("agent from {agent_how}, session from {session_how}"),
        None => format!("agent from {agent_how}; session unknown"),
    };
    Caller {
        agent,
        session_id: session.map(|(id, _)| id),
        how,
        conversation_id: env_conversation,
        started_turn: None,
        copilot_sdk_session: copilot_sdk.filter(|_| agent == Some(Agent::Copilot)),
        copilot_host_session: copilot_meta.filter(|_| agent == Some(Agent::Copilot)),
        copilot_return: None,
    }
}
