//! The six tools: their names, descriptions, annotations and input schemas, and the reading of
//! a call's arguments into the daemon contract's params (004 §4).
//!
//! The input schemas and the reading both come from the argument types in
//! `cross_agent_protocol::tools`: one definition, so what an agent is shown is what is accepted,
//! and an unknown argument is refused rather than dropped. The committed fixture
//! (`crates/protocol/schema/mcp_tools.json`) makes any change to them visible. Defaults shown are
//! the ones in effect for this registration (`CROSS_AGENT_SCOPE`, `CROSS_AGENT_TIMEOUT`), so a
//! schema never promises a default the daemon will not apply.

use std::sync::Arc;

use cross_agent_protocol::bridge::{
    Agent, BridgeStatusParams, CallerContext, ListSessionsParams, PinParams, SendParams,
};
use cross_agent_protocol::tools::{
    self as args, BridgeStatusArgs, ListAgentSessionsArgs, PinAgentSessionArgs, SendToClaudeArgs,
    SendToCodexArgs, SendToGrokArgs, ToolDefaults, read_args,
};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};

pub use cross_agent_protocol::tools::{
    BRIDGE_STATUS, DEFAULT_LIST_LIMIT, DEFAULT_TIMEOUT_SECONDS, LIST_AGENT_SESSIONS,
    MAX_MESSAGE_BYTES, PIN_AGENT_SESSION, SEND_TO_CLAUDE, SEND_TO_CODEX, SEND_TO_GROK, TOOL_NAMES,
};

/// The defaults a schema shows, read from this registration's settings.
pub type Defaults = ToolDefaults;

/// The tool list, in [`TOOL_NAMES`] order.
pub fn all(defaults: &Defaults) -> Vec<Tool> {
    vec![
        send_tool(Agent::Claude, defaults),
        send_tool(Agent::Codex, defaults),
        send_tool(Agent::Grok, defaults),
        list_sessions_tool(defaults),
        bridge_status_tool(defaults),
        pin_tool(defaults),
    ]
}

/// A tool with its input schema, generated from its argument type.
fn tool(name: &'static str, title: &str, description: String, defaults: &Defaults) -> Tool {
    // Every name passed here is one of the protocol's tools, so a schema always exists.
    let schema = args::input_schema(name, *defaults).unwrap_or_default();
    let mut tool = Tool::new(name, description, Arc::new(schema));
    tool.title = Some(title.to_owned());
    tool
}

fn send_tool(agent: Agent, defaults: &Defaults) -> Tool {
    let product = agent.product_name();
    let noun = match agent {
        Agent::Codex => "thread",
        Agent::Claude | Agent::Grok => "session",
    };
    let same_agent = match agent {
        Agent::Codex => "Reaching another Codex thread from Codex needs an explicit session_id.",
        Agent::Claude => {
            "Reaching another Claude session from Claude needs session_id or allow_same_agent."
        }
        Agent::Grok => {
            "Reaching another Grok session from Grok needs session_id or allow_same_agent."
        }
    };
    let description = format!(
        "Sends a message to a {product} {noun} (by default the active one), keeping its context. \
         Asynchronous: returns a receipt (delivery_id) at once, not the answer. The answer \
         arrives as a new message in this session when it is open in a panel; otherwise read it \
         with bridge_status(delivery_id). {same_agent} A message is at most 8 MiB \
         ({MAX_MESSAGE_BYTES} bytes); `cwd`, when given, must be an existing directory."
    );
    let mut tool = tool(
        agent.send_tool(),
        &format!("Send to {product}"),
        description,
        defaults,
    );
    tool.annotations = Some(
        ToolAnnotations::with_title(format!("Send to {product}"))
            .read_only(false)
            .destructive(false)
            .idempotent(false)
            // It reaches another agent, which may act on the world.
            .open_world(true),
    );
    tool
}

fn list_sessions_tool(defaults: &Defaults) -> Tool {
    let mut tool = tool(
        LIST_AGENT_SESSIONS,
        "List agent sessions",
        "Lists the sessions the bridge can find, newest first, with id, name or title, \
         directory, last activity and whether each is active, pinned or the caller's own. Use it \
         to pick a session_id for send_to_* or pin_agent_session."
            .to_owned(),
        defaults,
    );
    tool.annotations = Some(read_only("List agent sessions"));
    tool
}

fn bridge_status_tool(defaults: &Defaults) -> Tool {
    let mut tool = tool(
        BRIDGE_STATUS,
        "Bridge status",
        "Diagnostics: who is calling (as resolved), the settings in effect, the session a send \
         would reach per agent, pins, busy locks and deliveries pending, in flight and recent. \
         Given a delivery_id, re-reads that delivery's peer transcript and reports its state \
         and the answer, if there is one yet."
            .to_owned(),
        defaults,
    );
    tool.annotations = Some(read_only("Bridge status"));
    tool
}

fn pin_tool(defaults: &Defaults) -> Tool {
    let mut tool = tool(
        PIN_AGENT_SESSION,
        "Pin agent session",
        "Pins a session (by id or exact conversation name) as the target of send_to_<agent> \
         when no session_id is given. A pin never expires and no new conversation is opened \
         while it holds. An empty or absent session_id unpins. A pin says where to send, never \
         who you are."
            .to_owned(),
        defaults,
    );
    tool.annotations = Some(
        ToolAnnotations::with_title("Pin agent session")
            .read_only(false)
            // It replaces at most a pin, which the answer names so it can be restored.
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    );
    tool
}

fn read_only(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

/// A call's arguments did not fit the tool's schema; the message names the parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadArguments(pub String);

/// One parsed tool call, ready for the daemon.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Send(SendParams),
    ListSessions(ListSessionsParams),
    BridgeStatus(BridgeStatusParams),
    Pin(PinParams),
}

/// Parses a call to `name` with `arguments`. `None` when no such tool exists.
pub fn parse(
    name: &str,
    arguments: &JsonObject,
    caller: CallerContext,
) -> Option<Result<Call, BadArguments>> {
    let call = match name {
        SEND_TO_CLAUDE => read::<SendToClaudeArgs>(arguments)
            .map(|args| args.into_params(caller))
            .and_then(checked_send),
        SEND_TO_CODEX => codex_has_no_same_agent_flag(arguments)
            .and_then(|()| read::<SendToCodexArgs>(arguments))
            .map(|args| args.into_params(caller))
            .and_then(checked_send),
        SEND_TO_GROK => read::<SendToGrokArgs>(arguments)
            .map(|args| args.into_params(caller))
            .and_then(checked_send),
        LIST_AGENT_SESSIONS => read::<ListAgentSessionsArgs>(arguments)
            .map(|args| Call::ListSessions(args.into_params(caller))),
        BRIDGE_STATUS => read::<BridgeStatusArgs>(arguments)
            .map(|args| Call::BridgeStatus(args.into_params(caller))),
        PIN_AGENT_SESSION => {
            read::<PinAgentSessionArgs>(arguments).map(|args| Call::Pin(args.into_params(caller)))
        }
        _ => return None,
    };
    Some(call)
}

fn read<T: for<'de> serde::Deserialize<'de>>(arguments: &JsonObject) -> Result<T, BadArguments> {
    read_args(arguments).map_err(BadArguments)
}

/// `send_to_codex` has no `allow_same_agent`: said in the spec's words rather than as an
/// unknown argument, since an agent that knows the other tools will try it.
fn codex_has_no_same_agent_flag(arguments: &JsonObject) -> Result<(), BadArguments> {
    if arguments.contains_key("allow_same_agent") {
        return Err(BadArguments(
            "send_to_codex has no `allow_same_agent`: another Codex thread is reached only by \
             naming it in `session_id`"
                .into(),
        ));
    }
    Ok(())
}

/// What this process can refuse before the daemon sees a send: a message too long for the
/// daemon's frame, said with its size, instead of a lost connection.
fn checked_send(params: SendParams) -> Result<Call, BadArguments> {
    match args::message_too_long(&params.message) {
        Some(why) => Err(BadArguments(format!("`message`: {why}"))),
        None => Ok(Call::Send(params)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an agent is shown is the committed fixture (`crates/protocol/schema/mcp_tools.json`,
    /// checked against the types by the protocol crate's `schema_fixtures` test).
    #[test]
    fn the_listed_input_schemas_are_the_committed_ones() {
        let committed: serde_json::Value =
            serde_json::from_str(include_str!("../../protocol/schema/mcp_tools.json")).unwrap();
        let tools = all(&Defaults::from_settings(&Default::default()));
        assert_eq!(tools.len(), TOOL_NAMES.len());
        for tool in tools {
            let shown = serde_json::Value::Object((*tool.input_schema).clone());
            assert_eq!(
                shown,
                committed["tools"][tool.name.as_ref()]["input"],
                "{}",
                tool.name
            );
        }
    }
}
