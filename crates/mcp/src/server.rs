//! The MCP handler: lists the tools, gathers the caller for each call, forwards it to the
//! daemon and renders the answer. No business logic lives here; every decision (resolution,
//! guards, hops) is the daemon's.
//!
//! Calls are dispatched by rmcp's tool router (`#[tool_handler]` over the routes
//! [`crate::tools`] declares). `call_tool` stays ours around it: it answers an unknown tool in
//! its own words, resolves the caller once (handed to the tool as an `Extension`), and announces
//! a changed tool list after the call. `list_tools` stays ours too, to keep the spec's order.
//!
//! Both protocol eras reach this handler through rmcp: the `initialize` handshake (2025-06-18
//! and its predecessors) and the 2026-07-28 lifecycle, where a client opens with
//! `server/discover` and every request carries its own `_meta` (protocol version, client
//! capabilities, client info). rmcp routes both; the caller's client name is read from
//! whichever the session used.
//!
//! After the daemon was replaced by one reporting another tools version (see [`crate::link`]),
//! the client is told `notifications/tools/list_changed`: on its `subscriptions/listen` stream
//! when it holds one (the 2026-07-28 era, where that stream is the one place a server speaks
//! unasked), else as a plain notification (the `initialize` era).

use std::sync::Arc;

use cross_agent_caller::{PerCall, Snapshot};
use cross_agent_protocol::bridge::{
    BridgeStatusParams, BridgeStatusResponse, ListSessionsParams, ListSessionsResponse, PinParams,
    PinResponse, SendParams, SendResponse,
};
use cross_agent_protocol::hosts::{HostCall, OnHostParams, OnHostResponse};
use cross_agent_protocol::settings as var;
use cross_agent_protocol::tools::ToolFailure;
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::handler::server::tool::{ToolCallContext, ToolRouter};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter,
    Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer, SubscriptionContext, SubscriptionSink};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::link::{DaemonLink, LinkFailure};
use crate::tools::{self, Defaults};

/// The sentence the instructions carry under strict mode.
pub const STRICT_SENTENCE: &str = "This registration sets CROSS_AGENT_REQUIRE_EXPLICIT_TARGET: \
    a send_to_* call that names neither session_id nor new_session=true is refused before any \
    lookup (a pin does not count), so always name the target.";

/// The sentence the instructions carry under `CROSS_AGENT_UI_HOOK=require`.
pub const UI_HOOK_REQUIRE_SENTENCE: &str = "This registration sets CROSS_AGENT_UI_HOOK=require: \
    a send that names no session (no session_id and no pin) or asks for a new conversation goes \
    only into an editor panel, and is refused when none is found; name the session to reach it \
    over its CLI.";

/// How often a server whose client holds a `subscriptions/listen` stream checks whether its
/// daemon was replaced. A `status` on a local socket; cheap.
const WATCH_DAEMON_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// The MCP server: cheap to clone, one per stdio session.
#[derive(Debug, Clone)]
pub struct Bridge {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    snapshot: Snapshot,
    /// The six tools' routes, their schemas showing this registration's defaults.
    router: ToolRouter<Bridge>,
    /// The same tools, in the order `tools/list` gives them.
    tools: Vec<Tool>,
    instructions: String,
    link: DaemonLink,
    /// The client's open `subscriptions/listen` streams.
    listeners: parking_lot::Mutex<Vec<SubscriptionSink>>,
}

impl Bridge {
    /// A server for this process: its environment, cwd and ancestry, and the daemon of
    /// `CROSS_AGENT_HOME`.
    pub fn from_process() -> Bridge {
        Bridge::new(Snapshot::from_process(), DaemonLink::from_env())
    }

    /// A server over an explicit snapshot and daemon link (tests, benchmarks).
    pub fn new(snapshot: Snapshot, link: DaemonLink) -> Bridge {
        let settings = cross_agent_caller::settings(&snapshot.vars);
        let router = tools::router(&Defaults::from_settings(&settings));
        Bridge {
            inner: Arc::new(Inner {
                tools: tools::listed(&router),
                router,
                instructions: instructions(&settings),
                snapshot,
                link,
                listeners: parking_lot::Mutex::new(Vec::new()),
            }),
        }
    }

    /// The tools this server lists.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }

    /// The server instructions sent in the handshake.
    pub fn instructions(&self) -> &str {
        &self.inner.instructions
    }

    fn listeners(&self) -> parking_lot::MutexGuard<'_, Vec<SubscriptionSink>> {
        self.inner.listeners.lock()
    }

    /// Tells the client the tool list may have changed: on every open `subscriptions/listen`
    /// stream, or as a plain notification when there is none.
    async fn announce_tools_changed(&self, peer: &Peer<RoleServer>) {
        let sinks = self.listeners().clone();
        if sinks.is_empty() {
            if let Err(error) = peer.notify_tool_list_changed().await {
                tracing::debug!(%error, "could not announce the changed tool list");
            }
            return;
        }
        for sink in sinks {
            if let Err(error) = sink.notify_tool_list_changed().await {
                tracing::debug!(%error, "could not announce the changed tool list on a stream");
            }
        }
    }

    /// Forwards a send (to `host`'s session when one is named): a receipt, or the refusal.
    pub(crate) async fn send(&self, host: Option<String>, params: SendParams) -> CallToolResult {
        tracing::debug!(tool = params.agent.send_tool(), host = ?host, "forwarding to the daemon");
        let answer = match host {
            None => self.inner.link.call(params, /*repeatable*/ false).await,
            Some(host) => {
                self.on_host(host, HostCall::Send(params), /*repeatable*/ false)
                    .await
            }
        };
        match answer {
            Ok(response @ SendResponse::Accepted(_)) => success(&response),
            Ok(response @ SendResponse::Refused(_)) => refusal(&response),
            Err(failure) => link_failure(failure),
        }
    }

    /// Forwards `list_agent_sessions` (to `host`, or every host with `all`).
    pub(crate) async fn list_sessions(
        &self,
        host: Option<String>,
        params: ListSessionsParams,
    ) -> CallToolResult {
        tracing::debug!(
            tool = tools::LIST_AGENT_SESSIONS,
            host = ?host,
            "forwarding to the daemon"
        );
        let answer: Result<ListSessionsResponse, LinkFailure> = match host {
            None => self.inner.link.call(params, /*repeatable*/ true).await,
            Some(host) => {
                self.on_host(
                    host,
                    HostCall::ListSessions(params),
                    /*repeatable*/ true,
                )
                .await
            }
        };
        match answer {
            Ok(response) => success(&response),
            Err(failure) => link_failure(failure),
        }
    }

    /// Forwards `bridge_status` (to `host` when one is named).
    pub(crate) async fn status(
        &self,
        host: Option<String>,
        params: BridgeStatusParams,
    ) -> CallToolResult {
        tracing::debug!(tool = tools::BRIDGE_STATUS, host = ?host, "forwarding to the daemon");
        let answer: Result<BridgeStatusResponse, LinkFailure> = match host {
            None => self.inner.link.call(params, /*repeatable*/ true).await,
            Some(host) => {
                self.on_host(
                    host,
                    HostCall::BridgeStatus(params),
                    /*repeatable*/ true,
                )
                .await
            }
        };
        match answer {
            Ok(response) => success(&response),
            Err(failure) => link_failure(failure),
        }
    }

    /// Forwards a pin (to `host` when one is named): what was pinned or unpinned, or the
    /// refusal.
    pub(crate) async fn pin(&self, host: Option<String>, params: PinParams) -> CallToolResult {
        tracing::debug!(tool = tools::PIN_AGENT_SESSION, host = ?host, "forwarding to the daemon");
        let answer = match host {
            None => self.inner.link.call(params, /*repeatable*/ true).await,
            Some(host) => {
                self.on_host(host, HostCall::Pin(params), /*repeatable*/ true)
                    .await
            }
        };
        match answer {
            Ok(response @ (PinResponse::Pinned { .. } | PinResponse::Unpinned { .. })) => {
                success(&response)
            }
            Ok(response @ PinResponse::Refused(_)) => refusal(&response),
            Err(failure) => link_failure(failure),
        }
    }

    /// Asks the daemon here to put `call` to `host` (a name of `hosts.toml`, or `all`) over its
    /// link: the daemon knows the hosts, so an unknown one is refused there, naming the
    /// configured ones. The answer is the addressed method's own response.
    async fn on_host<T: DeserializeOwned>(
        &self,
        host: String,
        call: HostCall,
        repeatable: bool,
    ) -> Result<T, LinkFailure> {
        let method = call.method();
        let OnHostResponse(answer) = self
            .inner
            .link
            .call(OnHostParams { host, call }, repeatable)
            .await?;
        serde_json::from_value(answer).map_err(|error| LinkFailure {
            message: format!(
                "the cross-agent daemon's answer to `{method}` on another host could not be \
                 read: {error}"
            ),
            kind: "daemon_error",
        })
    }
}

/// Whether a boolean setting is on: the spec's rule, where `0` / `false` / `no` / `off` (and an
/// empty value) leave it off and any other value turns it on.
pub fn is_on(value: Option<&String>) -> bool {
    match value.map(|v| v.trim().to_ascii_lowercase()) {
        None => false,
        Some(v) => !matches!(v.as_str(), "" | "0" | "false" | "no" | "off"),
    }
}

/// The server instructions: how to address sessions, and what this registration's settings
/// change about it.
pub fn instructions(settings: &std::collections::BTreeMap<String, String>) -> String {
    let mut text = String::from(
        "cross-agent relays messages between coding-agent sessions (Claude Code, Codex, Grok \
         Build, Copilot) so each keeps its own context. send_to_claude / send_to_codex / \
         send_to_grok / send_to_copilot queue a message for a peer session and return a receipt at once, not the answer: the \
         answer arrives as a new message in this session when it is open in a panel, otherwise \
         read it with bridge_status(delivery_id=...). The peer cannot see this conversation, so \
         write each message self-contained.\n\
         \n\
         Addressing: name the target in session_id, by session id or by its exact name (no \
         partial matches; an unknown or ambiguous name is refused, never replaced by a new \
         conversation). Without session_id a send goes to the session pinned with \
         pin_agent_session, else to the active session in this directory (scope cwd, tree or \
         any). A new conversation is the last resort: its peer starts with no context, so use \
         new_session=true only when that is what you mean. Name your sessions: give every \
         session another one will send to a unique name of its own (a generated title is a \
         description, not an address), and rename a retired session before giving its name to \
         the replacement. list_agent_sessions shows the candidates; bridge_status shows who you \
         are, the settings in effect and the deliveries in flight.\n\
         \n\
         Reaching another session of your own agent needs an explicit session_id (or \
         allow_same_agent=true on send_to_claude / send_to_grok); discovery never picks your own \
         session.\n\
         \n\
         Copilot: send_to_copilot reaches an existing Copilot session in VS Code through the \
         editor's running Agent Host. Name it in session_id (exact name, editor UUID or session \
         URI) or pin it (sticky); it is never discovered or created, new_session=true is \
         refused, and a session whose VS Code is not open is refused (no CLI fallback).",
    );
    if is_on(settings.get(var::REQUIRE_EXPLICIT_TARGET)) {
        text.push_str("\n\n");
        text.push_str(STRICT_SENTENCE);
    }
    if is_on(settings.get(var::DISABLE_HEADLESS)) {
        text.push_str(
            "\n\nThis registration sets CROSS_AGENT_DISABLE_HEADLESS: a send reaches only a \
             session an editor panel holds; anything else is refused with nothing sent.",
        );
    }
    if settings
        .get(var::UI_HOOK)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("require"))
    {
        text.push_str("\n\n");
        text.push_str(UI_HOOK_REQUIRE_SENTENCE);
    }
    text
}

fn pretty(value: &impl Serialize) -> (String, Value) {
    match serde_json::to_value(value) {
        Ok(json) => {
            let text = serde_json::to_string_pretty(&json).unwrap_or_else(|_| json.to_string());
            (text, json)
        }
        // Serializing the contract's own types cannot fail; should it, say so rather than panic.
        Err(error) => {
            let json =
                json!({"outcome": "error", "error": "internal", "message": error.to_string()});
            (json.to_string(), json)
        }
    }
}

/// A result as JSON text and `structuredContent` (the same object).
fn success(value: &impl Serialize) -> CallToolResult {
    let (text, json) = pretty(value);
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json);
    result
}

/// A refusal: `isError`, its message first (what an agent reads), then the details.
fn refusal(value: &impl Serialize) -> CallToolResult {
    let (text, json) = pretty(value);
    let message = json
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("refused")
        .to_owned();
    let mut result =
        CallToolResult::error(vec![ContentBlock::text(format!("{message}\n\n{text}"))]);
    result.structured_content = Some(json);
    result
}

/// A failure before or outside the daemon's decision, as a tool error whose
/// `structuredContent` is a [`ToolFailure`] of `kind`.
pub(crate) fn tool_error(kind: &str, message: String) -> CallToolResult {
    let failure = ToolFailure::new(kind, message);
    let mut result = CallToolResult::error(vec![ContentBlock::text(failure.message.clone())]);
    result.structured_content = serde_json::to_value(&failure).ok();
    result
}

fn link_failure(failure: LinkFailure) -> CallToolResult {
    tool_error(failure.kind, failure.message)
}

#[rmcp::tool_handler(router = self.inner.router)]
impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            // `listChanged`: after a daemon restart with another tool surface the client is
            // told to fetch the list again.
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new("cross-agent", env!("CARGO_PKG_VERSION"))
                .with_title("cross-agent bridge"),
        )
        .with_instructions(self.inner.instructions.clone())
    }

    /// `subscriptions/listen` (2026-07-28): the one notification this server sends is
    /// `notifications/tools/list_changed`.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let id = context.sink().id().clone();
        self.listeners().push(context.sink().clone());
        // While the stream is open, look at the daemon now and then, so a restart is announced
        // without waiting for the next tool call (Claude Code holds this stream all session).
        let mut look = tokio::time::interval(WATCH_DAEMON_EVERY);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = context.cancelled() => break,
                _ = look.tick() => {
                    if self.inner.link.refresh().await {
                        self.announce_tools_changed(&context.request_context().peer).await;
                    }
                }
            }
        }
        self.listeners().retain(|sink| *sink.id() != id);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if !self.inner.router.has_route(&request.name) {
            return Err(McpError::invalid_params(
                format!(
                    "no tool named `{}`; this server has {}",
                    request.name,
                    tools::TOOL_NAMES.join(", ")
                ),
                None,
            ));
        }
        // rmcp moves the request's `_meta` into the context; the request's own copy is read too
        // in case a path leaves it there. It is read here because the router's call context
        // keeps no copy of the request's `_meta`.
        let codex_turn_metadata = cross_agent_caller::codex_turn_metadata(Some(&context.meta.0.0))
            .or_else(|| {
                cross_agent_caller::codex_turn_metadata(request.meta.as_ref().map(|meta| &meta.0.0))
            });
        let copilot_caller_session =
            cross_agent_caller::copilot_caller_session(Some(&context.meta.0.0)).or_else(|| {
                cross_agent_caller::copilot_caller_session(
                    request.meta.as_ref().map(|meta| &meta.0.0),
                )
            });
        let per_call = PerCall {
            client_name: context.client_info().map(|info| info.name),
            codex_turn_metadata,
            copilot_caller_session,
        };
        let caller = cross_agent_caller::context(&self.inner.snapshot, per_call);
        context.extensions.insert(caller);
        let peer = context.peer.clone();
        let answer = self
            .inner
            .router
            .call(ToolCallContext::new(self, request, context))
            .await;
        // The daemon was replaced by one with another tool surface (docs/spec/cross-agent-mcp.md §3: after a
        // reload the client is told the tool list may have changed; Claude Code refetches it).
        if self.inner.link.take_tools_changed() {
            self.announce_tools_changed(&peer).await;
        }
        answer
    }
}
