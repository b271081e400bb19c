//! The MCP tools' arguments (docs/spec/cross-agent-mcp.md §4) as types: what an agent may pass to each tool, how
//! each value is read, and the JSON Schema the agent is shown — generated from these same types,
//! so a parameter cannot be renamed in one place and not the other (the committed fixture in
//! `schema/` and `tests/schema_fixtures.rs` make any change to it visible).
//!
//! Every struct refuses an argument it does not know, naming it and the tool's parameters: an
//! agent that misspells `timeout` must not get the default silently. Values are read as leniently
//! as models write them (`"600"` for 600, `"true"` for true, `null` for absent, `Tree` for
//! `tree`) and strictly otherwise (a timeout of 0 or -5 is refused).

use crate::settings as var;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::bridge::{
    Agent, AgentFilter, BridgeStatusParams, BridgeStatusResponse, CallerContext,
    ListSessionsParams, ListSessionsResponse, PinParams, PinResponse, Scope, SendParams,
    SendResponse,
};

/// The tool names, in the order `tools/list` gives them.
pub const SEND_TO_CLAUDE: &str = "send_to_claude";
pub const SEND_TO_CODEX: &str = "send_to_codex";
pub const SEND_TO_GROK: &str = "send_to_grok";
pub const SEND_TO_COPILOT: &str = "send_to_copilot";
pub const LIST_AGENT_SESSIONS: &str = "list_agent_sessions";
pub const BRIDGE_STATUS: &str = "bridge_status";
pub const PIN_AGENT_SESSION: &str = "pin_agent_session";

/// Every tool the MCP server lists.
pub const TOOL_NAMES: [&str; 7] = [
    SEND_TO_CLAUDE,
    SEND_TO_CODEX,
    SEND_TO_GROK,
    SEND_TO_COPILOT,
    LIST_AGENT_SESSIONS,
    BRIDGE_STATUS,
    PIN_AGENT_SESSION,
];

/// The longest message a `send_to_*` call (or `cross-agent send`) takes: 8 MiB. The daemon's
/// frame limit is the same size, so a longer message could never reach it; it is refused before
/// it leaves the caller's process, naming its size.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// `list_agent_sessions`' default `limit`.
pub const DEFAULT_LIST_LIMIT: u32 = 20;
/// The spec's default CLI inactivity limit, seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 600;

/// Why a message cannot be sent for its size, in words naming the size and the limit; `None`
/// when it fits.
pub fn message_too_long(message: &str) -> Option<String> {
    let bytes = message.len();
    (bytes > MAX_MESSAGE_BYTES).then(|| {
        format!(
            "the message is {bytes} bytes ({:.1} MiB); the limit is {MAX_MESSAGE_BYTES} bytes \
             (8 MiB). Send a shorter message, or write the text to a file and send its path",
            bytes as f64 / (1024.0 * 1024.0)
        )
    })
}

/// Declares one `send_to_<agent>` argument struct. The three differ in their wording (the
/// product's name, `session` or `thread`) and in `allow_same_agent`, which `send_to_codex` does
/// not have (docs/spec/cross-agent-mcp.md §6: another Codex thread is reached only by naming it).
macro_rules! send_args {
    ($name:ident, $agent:expr, $product:literal, $noun:literal, allow_same_agent) => {
        send_args!(@define $name, $agent, $product, $noun, [
            #[doc = concat!("Allows a ", $product, " caller to reach another ", $product,
                " session found by discovery (never its own). An explicit session_id passes \
                this guard on its own.")]
            #[serde(default, deserialize_with = "lenient::flag")]
            pub allow_same_agent: bool,
        ]);
        impl $name {
            fn allows_same_agent(&self) -> bool {
                self.allow_same_agent
            }
        }
    };
    ($name:ident, $agent:expr, $product:literal, $noun:literal) => {
        send_args!(@define $name, $agent, $product, $noun, []);
        impl $name {
            fn allows_same_agent(&self) -> bool {
                false
            }
        }
    };
    (@define $name:ident, $agent:expr, $product:literal, $noun:literal, [$($extra:tt)*]) => {
        #[doc = concat!("The arguments of the tool that sends to ", $product, ".")]
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// The content to send to the peer agent. The peer cannot see this side's
            /// conversation, so write it self-contained. At most 8 MiB (8388608 bytes).
            pub message: String,
            #[doc = concat!("Targets a specific ", $product, " ", $noun, ": its id or its exact \
                conversation name (no partial matches). If nothing matches, the call fails \
                instead of creating a new one. Default: the pinned ", $noun, ", else the active \
                one in `cwd`.")]
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub session_id: Option<String>,
            /// Forces a new conversation even if one is active. The last resort: the peer
            /// starts with no context. Cannot be combined with session_id.
            #[serde(default, deserialize_with = "lenient::flag")]
            pub new_session: bool,
            /// Where the active session is looked for: `cwd` = the directory and its
            /// subdirectories, `tree` = also its parent directories, `any` = every session.
            #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::scope")]
            pub scope: Option<Scope>,
            /// Basis for discovery and where a new session is created; it must be an existing
            /// directory. Default: this server's working directory.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub cwd: Option<String>,
            /// CLI inactivity limit in seconds, reset by the peer's output or transcript
            /// writes; an active turn has no wall-clock limit. It does not make the caller
            /// wait.
            #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::positive")]
            #[schemars(range(min = 1))]
            pub timeout: Option<u64>,
            /// Continues an existing bridge conversation, sharing its hop budget. Default: the
            /// conversation this turn belongs to, else a new one.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub conversation_id: Option<String>,
            /// Delivers the raw text with no bridge header.
            #[serde(default, deserialize_with = "lenient::flag")]
            pub raw: bool,
            /// The machine the session is on: a host of `cross-agent hosts list`, or `all` for
            /// the one machine (this one included) whose session answers to session_id; a name
            /// found on two is refused as ambiguous, naming both. Default: this machine only.
            #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::host")]
            pub host: Option<String>,
            $($extra)*
        }

        impl $name {
            /// The machine addressed (`None`: this one).
            pub fn host(&self) -> Option<String> {
                self.host.clone()
            }

            /// The daemon's `send` params for these arguments (the `host` is asked for apart:
            /// [`Self::host`]).
            pub fn into_params(self, caller: CallerContext) -> SendParams {
                let allow_same_agent = self.allows_same_agent();
                SendParams {
                    agent: $agent,
                    message: self.message,
                    session_id: self.session_id,
                    new_session: self.new_session,
                    scope: self.scope,
                    cwd: self.cwd,
                    timeout: self.timeout,
                    conversation_id: self.conversation_id,
                    raw: self.raw,
                    allow_same_agent,
                    caller,
                }
            }
        }
    };
}

send_args!(
    SendToClaudeArgs,
    Agent::Claude,
    "Claude Code",
    "session",
    allow_same_agent
);
send_args!(SendToCodexArgs, Agent::Codex, "Codex", "thread");
send_args!(
    SendToGrokArgs,
    Agent::Grok,
    "Grok Build",
    "session",
    allow_same_agent
);
send_args!(
    SendToCopilotArgs,
    Agent::Copilot,
    "Copilot",
    "session",
    allow_same_agent
);

/// What `send_to_copilot`'s schema says instead of the common wording, where Copilot's rules
/// differ (docs/spec/cross-agent-mcp.md, "Copilot (VS Code Agent Host)"): no discovery, no new
/// sessions, the session URI accepted.
const COPILOT_WORDING: [(&str, &str); 3] = [
    (
        "session_id",
        "The Copilot session: its exact conversation name (no partial matches), its editor \
         UUID, or its session URI (copilotcli:/<uuid>, ahp-session:/<uuid>), as \
         list_agent_sessions(agent=\"copilot\") shows them. Required unless a sticky pin names \
         one: no Copilot session is discovered or created. The session must be open on a \
         running VS Code Agent Host.",
    ),
    (
        "new_session",
        "Unsupported for Copilot: true is refused (create the chat in VS Code first).",
    ),
    (
        "allow_same_agent",
        "Lets a Copilot caller use a sticky pin to another Copilot session (never its own). \
         An explicit session_id passes this guard on its own.",
    ),
];
/// The arguments of `list_agent_sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAgentSessionsArgs {
    /// `claude`, `codex`, `grok`, `copilot`, `both` (Claude and Codex) or `all`.
    #[serde(default, deserialize_with = "lenient::agent_filter")]
    pub agent: AgentFilter,
    /// Which sessions to list: `cwd` = the directory and its subdirectories, `tree` = also its
    /// parent directories, `any` = every session.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::scope"
    )]
    pub scope: Option<Scope>,
    /// The directory the scope is relative to, as an absolute path. Default: this server's
    /// working directory.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::absolute"
    )]
    pub cwd: Option<String>,
    /// At most this many sessions per agent.
    #[serde(default = "default_list_limit", deserialize_with = "lenient::limit")]
    #[schemars(range(min = 1))]
    pub limit: u32,
    /// The machine whose sessions to list: a host of `cross-agent hosts list`, or `all` for
    /// this machine's and every host's, merged, each entry naming its `host` (`null` for this
    /// machine). Default: this machine only.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::host"
    )]
    pub host: Option<String>,
}

fn default_list_limit() -> u32 {
    DEFAULT_LIST_LIMIT
}

impl ListAgentSessionsArgs {
    /// The machine addressed (`None`: this one).
    pub fn host(&self) -> Option<String> {
        self.host.clone()
    }

    /// The daemon's `list_sessions` params for these arguments.
    pub fn into_params(self, caller: CallerContext) -> ListSessionsParams {
        ListSessionsParams {
            agent: self.agent,
            scope: self.scope,
            cwd: self.cwd,
            limit: Some(self.limit),
            caller,
        }
    }
}

/// The arguments of `bridge_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgeStatusArgs {
    /// The directory sessions are resolved for, as an absolute path. Default: this server's
    /// working directory.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::absolute"
    )]
    pub cwd: Option<String>,
    /// Where sessions are resolved: `cwd` = the directory and its subdirectories, `tree` = also
    /// its parent directories, `any` = every session.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::scope"
    )]
    pub scope: Option<Scope>,
    /// One delivery to report on (from a send_to_* receipt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_id: Option<String>,
    /// The machine to ask: a host of `cross-agent hosts list`. A delivery sent to another
    /// host is reported here by its id without it (its record here follows the remote one).
    /// Default: this machine.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::host"
    )]
    pub host: Option<String>,
}

impl BridgeStatusArgs {
    /// The machine addressed (`None`: this one).
    pub fn host(&self) -> Option<String> {
        self.host.clone()
    }

    /// The daemon's `bridge_status` params for these arguments; a blank `delivery_id` is none.
    pub fn into_params(self, caller: CallerContext) -> BridgeStatusParams {
        BridgeStatusParams {
            cwd: self.cwd,
            scope: self.scope,
            delivery_id: self.delivery_id.filter(|id| !id.trim().is_empty()),
            caller,
        }
    }
}

/// The arguments of `pin_agent_session`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PinAgentSessionArgs {
    /// Whose session to pin.
    #[serde(deserialize_with = "lenient::agent")]
    pub agent: Agent,
    /// Session id or exact conversation name; empty or absent unpins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The directory a name is resolved from, as an absolute path. Default: this server's
    /// working directory.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::absolute"
    )]
    pub cwd: Option<String>,
    /// The machine the session is on, where the pin is kept: a host of `cross-agent hosts
    /// list`. Default: this machine.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::host"
    )]
    pub host: Option<String>,
}

impl PinAgentSessionArgs {
    /// The machine addressed (`None`: this one).
    pub fn host(&self) -> Option<String> {
        self.host.clone()
    }

    /// The daemon's `pin` params for these arguments.
    pub fn into_params(self, caller: CallerContext) -> PinParams {
        PinParams {
            agent: self.agent,
            session_id: self.session_id,
            cwd: self.cwd,
            caller,
        }
    }
}

/// What a tool call answers when it fails before or outside the daemon's decision: arguments
/// that do not fit, or a daemon that cannot be reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolFailure {
    /// Always `error`.
    pub outcome: String,
    /// `invalid_arguments`, `daemon_unreachable`, `daemon_error`, `not_served`, `internal`.
    pub error: String,
    /// What went wrong, naming the parameter or the daemon's state, and what to do.
    pub message: String,
}

impl ToolFailure {
    pub fn new(error: impl Into<String>, message: impl Into<String>) -> ToolFailure {
        ToolFailure {
            outcome: "error".to_owned(),
            error: error.into(),
            message: message.into(),
        }
    }
}

/// The per-registration defaults a tool's input schema shows (`CROSS_AGENT_SCOPE`,
/// `CROSS_AGENT_TIMEOUT`), so a schema never promises a default the daemon will not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolDefaults {
    pub scope: Scope,
    pub timeout: u64,
}

impl Default for ToolDefaults {
    /// The spec's: scope `cwd`, timeout 600 s.
    fn default() -> ToolDefaults {
        ToolDefaults {
            scope: Scope::Cwd,
            timeout: DEFAULT_TIMEOUT_SECONDS,
        }
    }
}

impl ToolDefaults {
    /// Reads `CROSS_AGENT_SCOPE` and `CROSS_AGENT_TIMEOUT` from a registration's settings; a
    /// value that does not parse leaves the spec's default (the daemon reports the bad setting).
    pub fn from_settings(settings: &std::collections::BTreeMap<String, String>) -> ToolDefaults {
        let spec = ToolDefaults::default();
        let scope = settings
            .get(var::SCOPE)
            .and_then(|value| Scope::parse(value))
            .unwrap_or(spec.scope);
        let timeout = settings
            .get(var::TIMEOUT)
            .and_then(|value| value.trim().parse().ok())
            .filter(|&seconds| seconds > 0)
            .unwrap_or(spec.timeout);
        ToolDefaults { scope, timeout }
    }
}

/// The input schema an agent is shown for `tool`, with this registration's defaults; `None` for
/// a tool that does not exist.
pub fn input_schema(tool: &str, defaults: ToolDefaults) -> Option<Map<String, Value>> {
    let schema = match tool {
        SEND_TO_CLAUDE => tool_input::<SendToClaudeArgs>(),
        SEND_TO_CODEX => tool_input::<SendToCodexArgs>(),
        SEND_TO_GROK => tool_input::<SendToGrokArgs>(),
        SEND_TO_COPILOT => tool_input::<SendToCopilotArgs>(),
        LIST_AGENT_SESSIONS => tool_input::<ListAgentSessionsArgs>(),
        BRIDGE_STATUS => tool_input::<BridgeStatusArgs>(),
        PIN_AGENT_SESSION => tool_input::<PinAgentSessionArgs>(),
        _ => return None,
    };
    let mut object = match schema.to_value() {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    // Shown as before the schemas were generated: no meta-schema URI or Rust type name.
    object.remove("$schema");
    object.remove("title");
    object.remove("description");
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        let mut set_default = |name: &str, value: Value| {
            if let Some(Value::Object(property)) = properties.get_mut(name) {
                property.insert("default".to_owned(), value);
            }
        };
        set_default("scope", Value::from(scope_name(defaults.scope)));
        set_default("timeout", Value::from(defaults.timeout));
        if tool == SEND_TO_COPILOT {
            for (name, wording) in COPILOT_WORDING {
                if let Some(Value::Object(property)) = properties.get_mut(name) {
                    property.insert("description".to_owned(), Value::from(wording));
                }
            }
        }
    }
    Some(object)
}

/// The JSON Schema of what `tool` answers on success (`structuredContent`); `None` for a tool
/// that does not exist. A failure answers [`ToolFailure`] or the refusal in the response.
pub fn output_schema(tool: &str) -> Option<Value> {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let schema = match tool {
        SEND_TO_CLAUDE | SEND_TO_CODEX | SEND_TO_GROK | SEND_TO_COPILOT => {
            generator.into_root_schema_for::<SendResponse>()
        }
        LIST_AGENT_SESSIONS => generator.into_root_schema_for::<ListSessionsResponse>(),
        BRIDGE_STATUS => generator.into_root_schema_for::<BridgeStatusResponse>(),
        PIN_AGENT_SESSION => generator.into_root_schema_for::<PinResponse>(),
        _ => return None,
    };
    Some(schema.to_value())
}

/// Every tool's input schema (with the spec's defaults) and output schema, keyed by tool name:
/// the committed `schema/mcp_tools.json`.
pub fn tools_schema() -> Value {
    let mut tools = Map::new();
    for tool in TOOL_NAMES {
        let mut entry = Map::new();
        if let Some(input) = input_schema(tool, ToolDefaults::default()) {
            entry.insert("input".to_owned(), Value::Object(input));
        }
        if let Some(output) = output_schema(tool) {
            entry.insert("output".to_owned(), output);
        }
        tools.insert(tool.to_owned(), Value::Object(entry));
    }
    let failure = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<ToolFailure>();
    let mut root = Map::new();
    root.insert("tools".to_owned(), Value::Object(tools));
    root.insert("failure".to_owned(), failure.to_value());
    Value::Object(root)
}

/// One tool's input schema, inlined (agents' clients do not all follow `$ref`) and plain: an
/// enum as `enum`, an optional value as its type (absent or `null` both mean the default).
fn tool_input<T: JsonSchema>() -> Schema {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let mut schema = settings.into_generator().into_root_schema_for::<T>();
    plain(&mut schema);
    schema
}

/// Rewrites `schema` and its subschemas as the hand-written schemas read: `oneOf` of string
/// constants → `enum`, `[T, "null"]` / `anyOf [.., null]` → `T`, no `format`.
fn plain(schema: &mut Schema) {
    schemars::transform::transform_subschemas(&mut plain, schema);
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    object.remove("format");
    // Doc comments wrap at 100 columns; a description is one paragraph.
    if let Some(Value::String(description)) = object.get_mut("description") {
        *description = description
            .split('\n')
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
    }
    if let Some(Value::Array(types)) = object.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() == 1 {
            object.insert("type".to_owned(), kept[0].clone());
        }
    }
    if let Some(Value::Array(alternatives)) = object.get("anyOf") {
        let kept: Vec<Value> = alternatives
            .iter()
            .filter(|alt| alt.get("type").and_then(Value::as_str) != Some("null"))
            .cloned()
            .collect();
        if let [only] = kept.as_slice()
            && let Value::Object(only) = only.clone()
        {
            object.remove("anyOf");
            for (key, value) in only {
                object.entry(key).or_insert(value);
            }
        }
    }
    if let Some(Value::Array(variants)) = object.get("oneOf") {
        let constants: Option<Vec<Value>> = variants
            .iter()
            .map(|variant| variant.get("const").filter(|c| c.is_string()).cloned())
            .collect();
        if let Some(constants) = constants {
            object.remove("oneOf");
            object.insert("type".to_owned(), Value::from("string"));
            object.insert("enum".to_owned(), Value::Array(constants));
        }
    }
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Cwd => "cwd",
        Scope::Tree => "tree",
        Scope::Any => "any",
    }
}

/// Readers for values as models write them.
mod lenient {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    use crate::bridge::{Agent, AgentFilter, Scope};

    /// `true` / `false`, also as strings; `null` is false.
    pub fn flag<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Null => Ok(false),
            Value::Bool(flag) => Ok(flag),
            Value::String(text) if text.trim().eq_ignore_ascii_case("true") => Ok(true),
            Value::String(text) if text.trim().eq_ignore_ascii_case("false") => Ok(false),
            other => Err(D::Error::custom(format!(
                "must be true or false, not {other}"
            ))),
        }
    }

    /// A whole number of at least 1, also as a string or a whole float; `null` is absent.
    pub fn positive<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let bad = || D::Error::custom(format!("must be a positive whole number, not {value}"));
        match &value {
            Value::Null => Ok(None),
            Value::Number(number) => match number.as_u64() {
                Some(n) if n > 0 => Ok(Some(n)),
                Some(_) => Err(bad()),
                None => match number.as_f64() {
                    // A whole float (`600.0`) is still a whole number.
                    Some(f) if f >= 1.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => {
                        Ok(Some(f as u64))
                    }
                    _ => Err(bad()),
                },
            },
            Value::String(text) => match text.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }

    /// [`positive`], as a `u32` (a larger number is the largest `u32`); `null` is the default.
    pub fn limit<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
        Ok(positive(deserializer)?
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
            .unwrap_or(super::DEFAULT_LIST_LIMIT))
    }

    fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Null => Ok(None),
            Value::String(text) => Ok(Some(text.trim().to_ascii_lowercase())),
            other => Err(D::Error::custom(format!("must be a string, not {other}"))),
        }
    }

    /// `cwd`, `tree` or `any`, in any case; `null` is absent.
    pub fn scope<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Scope>, D::Error> {
        match text(deserializer)? {
            None => Ok(None),
            Some(text) => Scope::parse(&text)
                .map(Some)
                .ok_or_else(|| D::Error::custom(format!("is `{text}`; use cwd, tree or any"))),
        }
    }

    /// `claude`, `codex`, `grok`, `copilot`, `both` or `all`, in any case; `null` or empty is `all`.
    pub fn agent_filter<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<AgentFilter, D::Error> {
        match text(deserializer)?.as_deref() {
            None | Some("all" | "") => Ok(AgentFilter::All),
            Some("claude") => Ok(AgentFilter::Claude),
            Some("codex") => Ok(AgentFilter::Codex),
            Some("grok") => Ok(AgentFilter::Grok),
            Some("copilot") => Ok(AgentFilter::Copilot),
            Some("both") => Ok(AgentFilter::Both),
            Some(other) => Err(D::Error::custom(format!(
                "is `{other}`; use claude, codex, grok, copilot, both or all"
            ))),
        }
    }

    /// An absolute path (or none; blank is none): see [`crate::bridge::relative_cwd`].
    pub fn absolute<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        let cwd = Option::<String>::deserialize(deserializer)?;
        match cwd.as_deref().and_then(crate::bridge::relative_cwd) {
            Some(problem) => Err(D::Error::custom(problem)),
            None => Ok(cwd),
        }
    }

    /// A host's name as given (trimmed), or `all`; `null` or blank is none (this machine).
    /// Whether the name is one of `hosts.toml` is the daemon's to say, naming the known ones.
    pub fn host<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Null => Ok(None),
            Value::String(text) if text.trim().is_empty() => Ok(None),
            Value::String(text) => Ok(Some(text.trim().to_owned())),
            other => Err(D::Error::custom(format!(
                "must be a host's name (or `all`), not {other}"
            ))),
        }
    }

    /// `claude`, `codex`, `grok` or `copilot`, in any case.
    pub fn agent<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Agent, D::Error> {
        let text = text(deserializer)?.unwrap_or_default();
        Agent::parse(&text).ok_or_else(|| {
            D::Error::custom(format!("is `{text}`; use claude, codex, grok or copilot"))
        })
    }
}

/// Reads a tool's arguments into `T`, or says what is wrong, naming the parameter.
pub fn read_args<T: for<'de> Deserialize<'de>>(
    arguments: &Map<String, Value>,
) -> Result<T, String> {
    // The arguments are a map already; reading them through a `Value` keeps the path.
    let value = Value::Object(arguments.clone());
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner().to_string();
        if let Some(rest) = inner.strip_prefix("unknown field ") {
            // serde's words name the field and every parameter; say them as an agent thinks.
            return format!(
                "unknown argument {}",
                rest.replace(", expected one of ", "; this tool's parameters are ")
                    .replace(", expected ", "; this tool's parameter is ")
            );
        }
        if let Some(field) = inner.strip_prefix("missing field ") {
            return format!("{field} is required");
        }
        if path.is_empty() || path == "." {
            inner
        } else {
            format!("`{path}` {inner}")
        }
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn an_unknown_argument_is_refused_naming_it_and_the_parameters() {
        let error =
            read_args::<SendToCodexArgs>(&args(json!({"message": "m", "timeout_seconds": -5})))
                .unwrap_err();
        assert!(error.contains("timeout_seconds"), "{error}");
        assert!(
            error.contains("`timeout`") && error.contains("`session_id`"),
            "{error}"
        );
    }

    #[test]
    fn values_are_read_leniently_and_checked() {
        let read = read_args::<SendToClaudeArgs>(&args(
            json!({"message": "m", "timeout": "90", "raw": "true", "scope": "Tree", "cwd": null}),
        ))
        .unwrap();
        assert_eq!(read.timeout, Some(90));
        assert!(read.raw);
        assert_eq!(read.scope, Some(Scope::Tree));
        for bad in [json!(-5), json!(0), json!("soon"), json!(1.5)] {
            let error =
                read_args::<SendToClaudeArgs>(&args(json!({"message": "m", "timeout": bad})))
                    .unwrap_err();
            assert!(
                error.starts_with("`timeout` must be a positive whole number"),
                "{error}"
            );
        }
        let listed = read_args::<ListAgentSessionsArgs>(&Map::new()).unwrap();
        assert_eq!(
            (listed.agent, listed.limit),
            (AgentFilter::All, DEFAULT_LIST_LIMIT)
        );
    }

    #[test]
    fn a_message_over_8_mib_is_named_with_its_size() {
        assert_eq!(message_too_long(&"x".repeat(MAX_MESSAGE_BYTES)), None);
        let said = message_too_long(&"x".repeat(MAX_MESSAGE_BYTES + 1)).unwrap();
        assert!(
            said.contains("8388609 bytes") && said.contains("8388608"),
            "{said}"
        );
    }
}
