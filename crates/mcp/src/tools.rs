//! The six tools, declared with rmcp's `#[tool_router]`: each is one method of [`Bridge`] whose
//! name is the tool's, whose attribute carries its title, description and annotations, and whose
//! [`Args`] parameter names the argument type it reads (docs/spec/cross-agent-mcp.md §4).
//!
//! The input schemas and the reading both come from the argument types in
//! `cross_agent_protocol::tools`: one definition, so what an agent is shown is what is accepted,
//! and an unknown argument is refused rather than dropped. The committed fixture
//! (`crates/protocol/schema/mcp_tools.json`) makes any change to them visible. Defaults shown are
//! the ones in effect for this registration (`CROSS_AGENT_SCOPE`, `CROSS_AGENT_TIMEOUT`), so a
//! schema never promises a default the daemon will not apply: `router` sets them on the
//! routes the macro built with the spec's.
//!
//! Arguments are read by [`Args`] rather than rmcp's `Parameters`: `Parameters` turns a value
//! that does not fit into a JSON-RPC error, or a bare `failed to deserialize parameters` text,
//! where the spec answers a tool error whose `structuredContent` is a [`ToolFailure`]
//! (`invalid_arguments`) naming the parameter in an agent's words (`unknown argument `x`; this
//! tool's parameters are ...`). `Args` never fails the request; the method answers the refusal.
//!
//! [`ToolFailure`]: cross_agent_protocol::tools::ToolFailure

use std::sync::Arc;

use cross_agent_protocol::bridge::{Agent, CallerContext, SendParams};
use cross_agent_protocol::tools::{
    self as args, BridgeStatusArgs, ListAgentSessionsArgs, PinAgentSessionArgs, SendToClaudeArgs,
    SendToCodexArgs, SendToCopilotArgs, SendToGrokArgs, ToolDefaults, read_args,
};
use rmcp::handler::server::common::{Extension, FromContextPart};
use rmcp::handler::server::tool::{ToolCallContext, ToolRouter};
use rmcp::model::{CallToolResult, JsonObject, Tool};
use rmcp::schemars::JsonSchema;
use rmcp::{ErrorData as McpError, tool, tool_router};
use serde::de::DeserializeOwned;

use crate::server::Bridge;

pub use cross_agent_protocol::tools::{
    BRIDGE_STATUS, DEFAULT_LIST_LIMIT, DEFAULT_TIMEOUT_SECONDS, LIST_AGENT_SESSIONS,
    MAX_MESSAGE_BYTES, PIN_AGENT_SESSION, SEND_TO_CLAUDE, SEND_TO_CODEX, SEND_TO_COPILOT,
    SEND_TO_GROK, TOOL_NAMES,
};

/// The defaults a schema shows, read from this registration's settings.
pub type Defaults = ToolDefaults;

#[tool_router(vis = "pub(crate)")]
impl Bridge {
    #[tool(
        title = "Send to Claude Code",
        description = send_description(Agent::Claude),
        input_schema = spec_schema::<SendToClaudeArgs>(),
        annotations(
            title = "Send to Claude Code",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            // It reaches another agent, which may act on the world.
            open_world_hint = true
        )
    )]
    async fn send_to_claude(
        &self,
        Extension(caller): Extension<CallerContext>,
        Args(args): Args<SendToClaudeArgs>,
    ) -> CallToolResult {
        match args.and_then(|args| checked_send(args.host(), args.into_params(caller))) {
            Ok((host, params)) => self.send(host, params).await,
            Err(bad) => bad.answer(SEND_TO_CLAUDE),
        }
    }

    #[tool(
        title = "Send to Codex",
        description = send_description(Agent::Codex),
        input_schema = spec_schema::<SendToCodexArgs>(),
        annotations(
            title = "Send to Codex",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn send_to_codex(
        &self,
        Extension(caller): Extension<CallerContext>,
        Args(args): Args<SendToCodexArgs>,
    ) -> CallToolResult {
        match args.and_then(|args| checked_send(args.host(), args.into_params(caller))) {
            Ok((host, params)) => self.send(host, params).await,
            Err(bad) => bad.answer(SEND_TO_CODEX),
        }
    }

    #[tool(
        title = "Send to Grok Build",
        description = send_description(Agent::Grok),
        input_schema = spec_schema::<SendToGrokArgs>(),
        annotations(
            title = "Send to Grok Build",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn send_to_grok(
        &self,
        Extension(caller): Extension<CallerContext>,
        Args(args): Args<SendToGrokArgs>,
    ) -> CallToolResult {
        match args.and_then(|args| checked_send(args.host(), args.into_params(caller))) {
            Ok((host, params)) => self.send(host, params).await,
            Err(bad) => bad.answer(SEND_TO_GROK),
        }
    }

    #[tool(
        title = "Send to Copilot",
        description = send_description(Agent::Copilot),
        input_schema = spec_schema::<SendToCopilotArgs>(),
        annotations(
            title = "Send to Copilot",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn send_to_copilot(
        &self,
        Extension(caller): Extension<CallerContext>,
        Args(args): Args<SendToCopilotArgs>,
    ) -> CallToolResult {
        match args.and_then(|args| checked_send(args.host(), args.into_params(caller))) {
            Ok((host, params)) => self.send(host, params).await,
            Err(bad) => bad.answer(SEND_TO_COPILOT),
        }
    }

    #[tool(
        title = "List agent sessions",
        description = "Lists the sessions the bridge can find, newest first, with id, name or \
            title, directory, last activity and whether each is active, pinned or the caller's \
            own. Use it to pick a session_id for send_to_* or pin_agent_session. host=\"all\" \
            lists this machine's and every linked host's sessions, each entry naming its host \
            (null for this machine); host=\"NAME\" lists that machine's. Default: this machine \
            only.",
        input_schema = spec_schema::<ListAgentSessionsArgs>(),
        annotations(
            title = "List agent sessions",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_agent_sessions(
        &self,
        Extension(caller): Extension<CallerContext>,
        Args(args): Args<ListAgentSessionsArgs>,
    ) -> CallToolResult {
        match args {
            Ok(args) => {
                self.list_sessions(args.host(), args.into_params(caller))
                    .await
            }
            Err(bad) => bad.answer(LIST_AGENT_SESSIONS),
        }
    }

    #[tool(
        title = "Bridge status",
        description = "Diagnostics: who is calling (as resolved), the settings in effect, the \
            session a send would reach per agent, pins, busy locks and deliveries pending, in \
            flight and recent. Given a delivery_id, re-reads that delivery's peer transcript and \
            reports its state and the answer, if there is one yet. A delivery sent to another \
            machine is reported here by its id; host=\"NAME\" asks that machine instead.",
        input_schema = spec_schema::<BridgeStatusArgs>(),
        annotations(
            title = "Bridge status",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn bridge_status(
        &self,
        Extension(caller): Extension<CallerContext>,
        Args(args): Args<BridgeStatusArgs>,
    ) -> CallToolResult {
        match args {
            Ok(args) => self.status(args.host(), args.into_params(caller)).await,
            Err(bad) => bad.answer(BRIDGE_STATUS),
        }
    }

    #[tool(
        title = "Pin agent session",
        description = "Pins a session (by id or exact conversation name) as the target of \
            send_to_<agent> when no session_id is given. A pin never expires and no new \
            conversation is opened while it holds. An empty or absent session_id unpins. A pin \
            says where to send, never who you are. host=\"NAME\" pins a session of that \
            machine, on that machine.",
        input_schema = spec_schema::<PinAgentSessionArgs>(),
        annotations(
            title = "Pin agent session",
            read_only_hint = false,
            // It replaces at most a pin, which the answer names so it can be restored.
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn pin_agent_session(
        &self,
        Extension(caller): Extension<CallerContext>,
        Args(args): Args<PinAgentSessionArgs>,
    ) -> CallToolResult {
        match args {
            Ok(args) => self.pin(args.host(), args.into_params(caller)).await,
            Err(bad) => bad.answer(PIN_AGENT_SESSION),
        }
    }
}

/// The tool router for a registration: the routes `#[tool_router]` declares, each input schema
/// showing `defaults`.
pub(crate) fn router(defaults: &Defaults) -> ToolRouter<Bridge> {
    let mut router = Bridge::tool_router();
    for route in router.map.values_mut() {
        if let Some(schema) = args::input_schema(&route.attr.name, *defaults) {
            route.attr.input_schema = Arc::new(schema);
        }
    }
    router
}

/// The tool list, in [`TOOL_NAMES`] order (rmcp's own listing sorts by name).
pub(crate) fn listed(router: &ToolRouter<Bridge>) -> Vec<Tool> {
    TOOL_NAMES
        .iter()
        .filter_map(|name| router.get(name).cloned())
        .collect()
}

/// The input schema `#[tool]` declares for `T`: with the spec's defaults, which [`router`]
/// replaces with the registration's.
fn spec_schema<T: ToolArgs>() -> Arc<JsonObject> {
    // Every `ToolArgs` names one of the protocol's tools, so a schema always exists.
    Arc::new(args::input_schema(T::TOOL, ToolDefaults::default()).unwrap_or_default())
}

/// What every send tool's description says about `host`.
const HOST_SENTENCE: &str = "To reach a session on another machine linked over SSH, pass host \
    (a name of `cross-agent hosts list`), or host=\"all\" with session_id to find the one \
    machine whose session answers to it (a name on two is refused, naming both); the default \
    is this machine only. The answer of a remote session is read the same way, with \
    bridge_status(delivery_id) here.";

fn send_description(agent: Agent) -> String {
    let product = agent.product_name();
    let noun = match agent {
        Agent::Codex => "thread",
        Agent::Claude | Agent::Grok | Agent::Copilot => "session",
    };
    let same_agent = match agent {
        Agent::Codex => "Reaching another Codex thread from Codex needs an explicit session_id.",
        Agent::Claude => {
            "Reaching another Claude session from Claude needs session_id or allow_same_agent."
        }
        Agent::Grok => {
            "Reaching another Grok session from Grok needs session_id or allow_same_agent."
        }
        Agent::Copilot => {
            "Reaching another Copilot session from Copilot needs session_id, or \
             allow_same_agent with a sticky pin."
        }
    };
    if agent == Agent::Copilot {
        return format!(
            "Sends a message to an existing Copilot session in VS Code (its default chat) through \
             the editor's running Agent Host, keeping its context. Name it in session_id: its \
             exact conversation name, editor UUID or session URI (or pin it with \
             pin_agent_session, sticky). No session is discovered or created, and there is no \
             CLI fallback: a session whose VS Code is not open is refused. Asynchronous: returns \
             a receipt (delivery_id) at once; read the answer with bridge_status(delivery_id). \
             {same_agent} A message is at most 8 MiB ({MAX_MESSAGE_BYTES} bytes). \
             {HOST_SENTENCE}"
        );
    }
    format!(
        "Sends a message to a {product} {noun} (by default the active one), keeping its context. \
         Asynchronous: returns a receipt (delivery_id) at once, not the answer. The answer \
         arrives as a new message in this session when it is open in a panel; otherwise read it \
         with bridge_status(delivery_id). {same_agent} A message is at most 8 MiB \
         ({MAX_MESSAGE_BYTES} bytes); `cwd`, when given, must be an existing directory. {HOST_SENTENCE}"
    )
}

/// A tool's argument type (from `cross_agent_protocol::tools`): the tool it belongs to, whose
/// schema is generated from it.
pub trait ToolArgs: DeserializeOwned + JsonSchema + Send + 'static {
    /// The tool these are the arguments of.
    const TOOL: &'static str;

    /// A refusal said better than serde would, checked on the raw arguments before reading.
    fn refuse_early(_arguments: &JsonObject) -> Result<(), BadArguments> {
        Ok(())
    }
}

impl ToolArgs for SendToClaudeArgs {
    const TOOL: &'static str = SEND_TO_CLAUDE;
}

impl ToolArgs for SendToCodexArgs {
    const TOOL: &'static str = SEND_TO_CODEX;

    /// `send_to_codex` has no `allow_same_agent`: said in the spec's words rather than as an
    /// unknown argument, since an agent that knows the other tools will try it.
    fn refuse_early(arguments: &JsonObject) -> Result<(), BadArguments> {
        if arguments.contains_key("allow_same_agent") {
            return Err(BadArguments(
                "send_to_codex has no `allow_same_agent`: another Codex thread is reached only \
                 by naming it in `session_id`"
                    .into(),
            ));
        }
        Ok(())
    }
}

impl ToolArgs for SendToGrokArgs {
    const TOOL: &'static str = SEND_TO_GROK;
}

impl ToolArgs for SendToCopilotArgs {
    const TOOL: &'static str = SEND_TO_COPILOT;
}

impl ToolArgs for ListAgentSessionsArgs {
    const TOOL: &'static str = LIST_AGENT_SESSIONS;
}

impl ToolArgs for BridgeStatusArgs {
    const TOOL: &'static str = BRIDGE_STATUS;
}

impl ToolArgs for PinAgentSessionArgs {
    const TOOL: &'static str = PIN_AGENT_SESSION;
}

/// A call's arguments read as `T`, or what does not fit `T`'s schema. Extracting it never fails
/// the request: a refusal is the tool's own answer (see the module header).
pub struct Args<T>(pub Result<T, BadArguments>);

impl<S, T: ToolArgs> FromContextPart<ToolCallContext<'_, S>> for Args<T> {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, McpError> {
        // A call without `arguments` is a call with none.
        let arguments = context.arguments.take().unwrap_or_default();
        let read = T::refuse_early(&arguments)
            .and_then(|()| read_args::<T>(&arguments).map_err(BadArguments));
        Ok(Args(read))
    }
}

/// A call's arguments did not fit the tool's schema; the message names the parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadArguments(pub String);

impl BadArguments {
    /// The tool error `tool` answers: `invalid_arguments`, its message prefixed with the tool.
    fn answer(self, tool: &str) -> CallToolResult {
        crate::server::tool_error("invalid_arguments", format!("{tool}: {}", self.0))
    }
}

/// What this process can refuse before the daemon sees a send: a message too long for the
/// daemon's frame, said with its size, instead of a lost connection.
fn checked_send(
    host: Option<String>,
    params: SendParams,
) -> Result<(Option<String>, SendParams), BadArguments> {
    match args::message_too_long(&params.message) {
        Some(why) => Err(BadArguments(format!("`message`: {why}"))),
        None => Ok((host, params)),
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
        let tools = listed(&router(&Defaults::from_settings(&Default::default())));
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

    /// The router serves exactly the protocol's tools, listed in its order.
    #[test]
    fn the_router_serves_the_six_tools_in_order() {
        let router = router(&Defaults::default());
        let names: Vec<String> = listed(&router)
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect();
        assert_eq!(names, TOOL_NAMES);
        assert_eq!(router.map.len(), TOOL_NAMES.len());
    }

    /// A registration's defaults are the ones its schemas show.
    #[test]
    fn the_schemas_show_the_registrations_defaults() {
        let defaults = Defaults {
            scope: cross_agent_protocol::bridge::Scope::Tree,
            timeout: 90,
        };
        let router = router(&defaults);
        let send = router.get(SEND_TO_GROK).unwrap();
        assert_eq!(send.input_schema["properties"]["scope"]["default"], "tree");
        assert_eq!(send.input_schema["properties"]["timeout"]["default"], 90);
        let list = router.get(LIST_AGENT_SESSIONS).unwrap();
        assert_eq!(list.input_schema["properties"]["scope"]["default"], "tree");
    }
}
