//! The six tools: their names, descriptions, input schemas, annotations, and the parsing of a
//! call's arguments into the daemon contract's params (004 §4).
//!
//! Schemas are written out by hand rather than derived: the parameter names, types, defaults
//! and descriptions are the spec's, agents read them, and a derive would make a rename of a
//! Rust field a silent change of the interface. Defaults shown are the ones in effect for this
//! registration (`CROSS_AGENT_SCOPE`, `CROSS_AGENT_TIMEOUT`), so a schema never promises a
//! default the daemon will not apply.

use std::sync::Arc;

use cross_agent_protocol::bridge::{
    Agent, AgentFilter, BridgeStatusParams, CallerContext, ListSessionsParams, PinParams, Scope,
    SendParams,
};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// The tool names, in the order `tools/list` gives them.
pub const SEND_TO_CLAUDE: &str = "send_to_claude";
pub const SEND_TO_CODEX: &str = "send_to_codex";
pub const SEND_TO_GROK: &str = "send_to_grok";
pub const LIST_AGENT_SESSIONS: &str = "list_agent_sessions";
pub const BRIDGE_STATUS: &str = "bridge_status";
pub const PIN_AGENT_SESSION: &str = "pin_agent_session";

/// Every tool this server lists. Copilot is not among them: it does not work yet, and a tool an
/// agent can see but not use would only mislead it.
pub const TOOL_NAMES: [&str; 6] = [
    SEND_TO_CLAUDE,
    SEND_TO_CODEX,
    SEND_TO_GROK,
    LIST_AGENT_SESSIONS,
    BRIDGE_STATUS,
    PIN_AGENT_SESSION,
];

/// `list_agent_sessions`' default `limit`.
pub const DEFAULT_LIST_LIMIT: u32 = 20;
/// The spec's default CLI inactivity limit, seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 600;

/// The defaults a schema shows, read from this registration's settings.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// `CROSS_AGENT_SCOPE`, else `cwd`.
    pub scope: Scope,
    /// `CROSS_AGENT_TIMEOUT`, else 600.
    pub timeout: u64,
}

impl Defaults {
    /// Reads `CROSS_AGENT_SCOPE` and `CROSS_AGENT_TIMEOUT` from the settings; a value that does
    /// not parse leaves the spec's default (the daemon reports the bad setting).
    pub fn from_settings(settings: &std::collections::BTreeMap<String, String>) -> Defaults {
        let scope = settings
            .get("CROSS_AGENT_SCOPE")
            .and_then(|value| parse_scope(value))
            .unwrap_or_default();
        let timeout = settings
            .get("CROSS_AGENT_TIMEOUT")
            .and_then(|value| value.trim().parse().ok())
            .filter(|&seconds| seconds > 0)
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
        Defaults { scope, timeout }
    }
}

fn scope_str(scope: Scope) -> &'static str {
    match scope {
        Scope::Cwd => "cwd",
        Scope::Tree => "tree",
        Scope::Any => "any",
    }
}

fn parse_scope(text: &str) -> Option<Scope> {
    match text.trim().to_ascii_lowercase().as_str() {
        "cwd" => Some(Scope::Cwd),
        "tree" => Some(Scope::Tree),
        "any" => Some(Scope::Any),
        _ => None,
    }
}

/// The tool list, in [`TOOL_NAMES`] order.
pub fn all(defaults: &Defaults) -> Vec<Tool> {
    vec![
        send_tool(Agent::Claude, defaults),
        send_tool(Agent::Codex, defaults),
        send_tool(Agent::Grok, defaults),
        list_sessions_tool(defaults),
        bridge_status_tool(defaults),
        pin_tool(),
    ]
}

fn object(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(map) => Arc::new(map),
        // Every schema below is an object literal; an empty object is the harmless fallback.
        _ => Arc::new(JsonObject::new()),
    }
}

fn tool(name: &'static str, title: &str, description: String, schema: Value) -> Tool {
    let mut tool = Tool::new(name, description, object(schema));
    tool.title = Some(title.to_owned());
    tool
}

fn scope_property(defaults: &Defaults, what: &str) -> Value {
    json!({
        "type": "string",
        "enum": ["cwd", "tree", "any"],
        "default": scope_str(defaults.scope),
        "description": format!(
            "{what}: `cwd` = the directory and its subdirectories, `tree` = also its parent \
             directories, `any` = every session."
        ),
    })
}

fn send_tool(agent: Agent, defaults: &Defaults) -> Tool {
    let product = agent.product_name();
    let noun = match agent {
        Agent::Codex => "thread",
        Agent::Claude | Agent::Grok => "session",
    };
    let mut properties = json!({
        "message": {
            "type": "string",
            "description": "The content to send to the peer agent. The peer cannot see this \
                side's conversation, so write it self-contained.",
        },
        "session_id": {
            "type": "string",
            "description": format!(
                "Targets a specific {product} {noun}: its id or its exact conversation name (no \
                 partial matches). If nothing matches, the call fails instead of creating a new \
                 one. Default: the pinned {noun}, else the active one in `cwd`."
            ),
        },
        "new_session": {
            "type": "boolean",
            "default": false,
            "description": "Forces a new conversation even if one is active. The last resort: \
                the peer starts with no context. Cannot be combined with session_id.",
        },
        "scope": scope_property(defaults, "Where the active session is looked for"),
        "cwd": {
            "type": "string",
            "description": "Basis for discovery and where a new session is created. Default: \
                this server's working directory.",
        },
        "timeout": {
            "type": "integer",
            "minimum": 1,
            "default": defaults.timeout,
            "description": "CLI inactivity limit in seconds, reset by the peer's output or \
                transcript writes; an active turn has no wall-clock limit. It does not make the \
                caller wait.",
        },
        "conversation_id": {
            "type": "string",
            "description": "Continues an existing bridge conversation, sharing its hop budget. \
                Default: the conversation this turn belongs to, else a new one.",
        },
        "raw": {
            "type": "boolean",
            "default": false,
            "description": "Delivers the raw text with no bridge header.",
        },
    });
    match agent {
        Agent::Claude | Agent::Grok => {
            if let Some(map) = properties.as_object_mut() {
                map.insert(
                    "allow_same_agent".into(),
                    json!({
                        "type": "boolean",
                        "default": false,
                        "description": format!(
                            "Allows a {product} caller to reach another {product} session \
                             found by discovery (never its own). An explicit session_id passes \
                             this guard on its own."
                        ),
                    }),
                );
            }
        }
        // Codex has no such flag (004 §6): another Codex thread is reached only by naming it.
        Agent::Codex => {}
    }
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
         with bridge_status(delivery_id). {same_agent}"
    );
    let mut tool = tool(
        agent.send_tool(),
        &format!("Send to {product}"),
        description,
        json!({
            "type": "object",
            "properties": properties,
            "required": ["message"],
        }),
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
        json!({
            "type": "object",
            "properties": {
                "agent": {
                    "type": "string",
                    "enum": ["claude", "codex", "grok", "both", "all"],
                    "default": "all",
                    "description": "`claude`, `codex`, `grok`, `both` (Claude and Codex) or \
                        `all`.",
                },
                "scope": scope_property(defaults, "Which sessions to list"),
                "cwd": {
                    "type": "string",
                    "description": "The directory the scope is relative to. Default: this \
                        server's working directory.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "default": DEFAULT_LIST_LIMIT,
                    "description": "At most this many sessions per agent.",
                },
            },
        }),
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
        json!({
            "type": "object",
            "properties": {
                "cwd": {
                    "type": "string",
                    "description": "The directory sessions are resolved for. Default: this \
                        server's working directory.",
                },
                "scope": scope_property(defaults, "Where sessions are resolved"),
                "delivery_id": {
                    "type": "string",
                    "description": "One delivery to report on (from a send_to_* receipt).",
                },
            },
        }),
    );
    tool.annotations = Some(read_only("Bridge status"));
    tool
}

fn pin_tool() -> Tool {
    let mut tool = tool(
        PIN_AGENT_SESSION,
        "Pin agent session",
        "Pins a session (by id or exact conversation name) as the target of send_to_<agent> \
         when no session_id is given. A pin never expires and no new conversation is opened \
         while it holds. An empty or absent session_id unpins. A pin says where to send, never \
         who you are."
            .to_owned(),
        json!({
            "type": "object",
            "properties": {
                "agent": {
                    "type": "string",
                    "enum": ["claude", "codex", "grok"],
                    "description": "Whose session to pin.",
                },
                "session_id": {
                    "type": "string",
                    "description": "Session id or exact conversation name; empty or absent \
                        unpins.",
                },
                "cwd": {
                    "type": "string",
                    "description": "The directory a name is resolved from. Default: this \
                        server's working directory.",
                },
            },
            "required": ["agent"],
        }),
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
    let args = Args(arguments);
    let call = match name {
        SEND_TO_CLAUDE => parse_send(Agent::Claude, &args, caller),
        SEND_TO_CODEX => parse_send(Agent::Codex, &args, caller),
        SEND_TO_GROK => parse_send(Agent::Grok, &args, caller),
        LIST_AGENT_SESSIONS => parse_list(&args, caller),
        BRIDGE_STATUS => parse_status(&args, caller),
        PIN_AGENT_SESSION => parse_pin(&args, caller),
        _ => return None,
    };
    Some(call)
}

fn parse_send(agent: Agent, args: &Args<'_>, caller: CallerContext) -> Result<Call, BadArguments> {
    let message = args
        .string("message")?
        .ok_or_else(|| BadArguments("`message` is required: the text to send".into()))?;
    let allow_same_agent = match agent {
        Agent::Claude | Agent::Grok => args.boolean("allow_same_agent")?.unwrap_or(false),
        Agent::Codex => {
            if args.0.contains_key("allow_same_agent") {
                return Err(BadArguments(
                    "send_to_codex has no `allow_same_agent`: another Codex thread is reached \
                     only by naming it in `session_id`"
                        .into(),
                ));
            }
            false
        }
    };
    Ok(Call::Send(SendParams {
        agent,
        message,
        session_id: args.string("session_id")?,
        new_session: args.boolean("new_session")?.unwrap_or(false),
        scope: args.scope()?,
        cwd: args.string("cwd")?,
        timeout: args.positive_integer("timeout")?,
        conversation_id: args.string("conversation_id")?,
        raw: args.boolean("raw")?.unwrap_or(false),
        allow_same_agent,
        caller,
    }))
}

fn parse_list(args: &Args<'_>, caller: CallerContext) -> Result<Call, BadArguments> {
    let agent = match args.string("agent")? {
        None => AgentFilter::All,
        Some(text) => match text.trim().to_ascii_lowercase().as_str() {
            "claude" => AgentFilter::Claude,
            "codex" => AgentFilter::Codex,
            "grok" => AgentFilter::Grok,
            "both" => AgentFilter::Both,
            "all" | "" => AgentFilter::All,
            other => {
                return Err(BadArguments(format!(
                    "`agent` is `{other}`; use claude, codex, grok, both or all"
                )));
            }
        },
    };
    let limit = args
        .positive_integer("limit")?
        .map(|limit| u32::try_from(limit).unwrap_or(u32::MAX))
        .unwrap_or(DEFAULT_LIST_LIMIT);
    Ok(Call::ListSessions(ListSessionsParams {
        agent,
        scope: args.scope()?,
        cwd: args.string("cwd")?,
        limit: Some(limit),
        caller,
    }))
}

fn parse_status(args: &Args<'_>, caller: CallerContext) -> Result<Call, BadArguments> {
    Ok(Call::BridgeStatus(BridgeStatusParams {
        cwd: args.string("cwd")?,
        scope: args.scope()?,
        delivery_id: args
            .string("delivery_id")?
            .filter(|id| !id.trim().is_empty()),
        caller,
    }))
}

fn parse_pin(args: &Args<'_>, caller: CallerContext) -> Result<Call, BadArguments> {
    let agent = args
        .string("agent")?
        .ok_or_else(|| BadArguments("`agent` is required: claude, codex or grok".into()))?;
    let agent = Agent::parse(&agent)
        .ok_or_else(|| BadArguments(format!("`agent` is `{agent}`; use claude, codex or grok")))?;
    Ok(Call::Pin(PinParams {
        agent,
        session_id: args.string("session_id")?,
        cwd: args.string("cwd")?,
        caller,
    }))
}

/// Typed access to a call's arguments. Lenient where models often are (`"600"` for 600,
/// `"true"` for true, `null` for absent); strict about anything else, naming the parameter.
struct Args<'a>(&'a JsonObject);

impl Args<'_> {
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|value| !value.is_null())
    }

    fn string(&self, name: &str) -> Result<Option<String>, BadArguments> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(BadArguments(format!(
                "`{name}` must be a string, not {other}"
            ))),
        }
    }

    fn boolean(&self, name: &str) -> Result<Option<bool>, BadArguments> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(Value::String(text)) if text.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(text)) if text.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(other) => Err(BadArguments(format!(
                "`{name}` must be true or false, not {other}"
            ))),
        }
    }

    fn positive_integer(&self, name: &str) -> Result<Option<u64>, BadArguments> {
        let bad = |value: &Value| {
            BadArguments(format!("`{name}` must be a positive integer, not {value}"))
        };
        match self.get(name) {
            None => Ok(None),
            Some(value @ Value::Number(number)) => match number.as_u64() {
                Some(n) if n > 0 => Ok(Some(n)),
                // A whole float (`600.0`) is still a whole number.
                _ => match number.as_f64() {
                    Some(f) if f >= 1.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => {
                        Ok(Some(f as u64))
                    }
                    _ => Err(bad(value)),
                },
            },
            Some(value @ Value::String(text)) => match text.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(bad(value)),
            },
            Some(other) => Err(bad(other)),
        }
    }

    fn scope(&self) -> Result<Option<Scope>, BadArguments> {
        match self.string("scope")? {
            None => Ok(None),
            Some(text) => parse_scope(&text)
                .map(Some)
                .ok_or_else(|| BadArguments(format!("`scope` is `{text}`; use cwd, tree or any"))),
        }
    }
}
