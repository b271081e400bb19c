//! The script: ordered rules that say how the scripted model answers each request.
//!
//! A rule pairs a matcher (what the newest input must contain) with a [`Reply`] (text, tool
//! calls, or a failure such as a hang, a dropped connection or an HTTP error). The first rule
//! that matches and still has uses left answers; one-shot rules are used up. When nothing
//! matches, the fallback reply answers.
//!
//! Matchers are scoped by what the newest input is. In an agent loop the model is called again
//! with the tool's result after every tool call, and the user's text is still the last user
//! text in that follow-up request; a rule on user text therefore only matches when the newest
//! input *is* user text, and a rule on a tool result only when it is a tool result. That is what
//! lets "user says X → call tool T" and "tool result contains Y → say Z" drive a loop that ends.

use std::time::Duration;

use serde_json::Value;

use super::record::{Api, InputKind, RecordedRequest};

/// How a Claude peer envelope opens (observed: `<cross-session-message from="uds:…"
/// from-name="alpha" from-mode="prompting">`).
pub const PEER_ENVELOPE_OPEN: &str = "<cross-session-message from=\"";

/// The default pattern of a request token the [`Reply::echo_token`] reply looks for: the
/// project's `req_<epoch ms>_<6 random chars>`.
pub const DEFAULT_TOKEN_PATTERN: &str = r"req_[0-9]{10,16}_[A-Za-z0-9]{6}";

/// The text the endpoint answers with when no rule matches, unless configured otherwise.
pub const DEFAULT_FALLBACK_TEXT: &str = "scripted: no rule matched";

/// The text the endpoint answers side requests (title generation, quota probes) with when no
/// rule opted in to them.
pub const DEFAULT_SIDE_TEXT: &str = "scripted side reply";

/// A tool call the scripted model makes, named for each API.
///
/// Claude Code names MCP tools `mcp__<server>__<tool>`; Codex offers them as a Responses
/// `namespace` tool `mcp__<server with '-' as '_'>` and expects a `function_call` with `name` =
/// the tool and `namespace` set — a flat name is rejected. [`ToolCall::mcp`] does both.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Name in an Anthropic `tool_use` block.
    pub anthropic_name: String,
    /// `name` of a Responses `function_call`.
    pub responses_name: String,
    /// `namespace` of a Responses `function_call`, if any.
    pub responses_namespace: Option<String>,
    /// The call's arguments (Anthropic `input`; Responses `arguments`, serialised).
    pub arguments: Value,
}

impl ToolCall {
    /// A call of a tool with the same flat name in both APIs (e.g. `Bash`, `exec_command`).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        let name = name.into();
        Self {
            anthropic_name: name.clone(),
            responses_name: name,
            responses_namespace: None,
            arguments,
        }
    }

    /// A call of a tool inside a Responses namespace; Anthropic sees `<namespace>__<name>`.
    pub fn namespaced(
        namespace: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        let namespace = namespace.into();
        let name = name.into();
        Self {
            anthropic_name: format!("{namespace}__{name}"),
            responses_name: name,
            responses_namespace: Some(namespace),
            arguments,
        }
    }

    /// A call of tool `tool` on the MCP server registered as `server`, named the way each agent
    /// exposes it: Claude `mcp__<server>__<tool>` (characters other than letters, digits, `_`
    /// and `-` become `_`), Codex namespace `mcp__<server>` (everything but letters, digits and
    /// `_` becomes `_`) with name `<tool>`.
    pub fn mcp(server: &str, tool: impl Into<String>, arguments: Value) -> Self {
        let tool = tool.into();
        let claude_server: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let codex_server: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Self {
            anthropic_name: format!("mcp__{claude_server}__{tool}"),
            responses_name: tool,
            responses_namespace: Some(format!("mcp__{codex_server}")),
            arguments,
        }
    }
}

/// One piece of a scripted answer, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Plain assistant text.
    Text(String),
    /// Text whose last line is the request token found in the prompt (see [`Reply::echo_token`]).
    EchoToken(String),
    /// A tool call; the reply then stops with `tool_use` (Anthropic).
    ToolCall(ToolCall),
    /// Claude's native reply to a peer: a `SendMessage` tool call whose `to` is the `from`
    /// attribute of the newest `<cross-session-message from="…">` envelope in the request and
    /// whose `message` is this text, a newline and the request token found in the prompt (as
    /// [`Block::EchoToken`] resolves it). Without an envelope it is plain text saying so.
    PeerReply(String),
}

/// How an answer fails, if it does.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Never answer: no status line, the connection stays open.
    Hang,
    /// Close the connection before sending any response.
    DropBeforeHeaders,
    /// Send the status, headers and the first `n` events, then close the connection.
    DropAfterEvents(usize),
    /// Send the status, headers and the first `n` events, then send nothing more, forever.
    HangAfterEvents(usize),
    /// Send the first `events` events, then the API's in-stream error event (Anthropic
    /// `error` with an `overloaded_error`; Responses `response.failed`) and end the stream. A
    /// non-streamed request gets an HTTP 529 (Anthropic) or 500 (Responses) instead.
    ErrorEventAfter {
        /// How many events come before the error.
        events: usize,
        /// The error's message.
        message: String,
    },
    /// Answer with this HTTP status and an error body shaped for the API.
    HttpError {
        /// HTTP status code.
        status: u16,
        /// The error's message.
        message: String,
        /// When false, send `x-should-retry: false` (the Anthropic SDK's hint; Claude Code
        /// 2.1.332 was seen to retry regardless — set `CLAUDE_CODE_MAX_RETRIES=0` instead).
        retry: bool,
    },
}

/// What the scripted model answers with, and how (delays, failures).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub(crate) blocks: Vec<Block>,
    pub(crate) failure: Option<Failure>,
    pub(crate) delay: Duration,
    pub(crate) chunk_delay: Duration,
    pub(crate) chunk_chars: Option<usize>,
    /// Nothing is sent until this file exists (a gate the test opens when it is ready).
    pub(crate) held_until: Option<std::path::PathBuf>,
    /// Extra response headers (`retry-after` on a 429), set on whatever the reply sends.
    pub(crate) headers: Vec<(String, String)>,
    /// The usage the reply reports, when a test chooses it (else estimated from the text).
    pub(crate) usage: Option<ScriptedUsage>,
}

/// Usage a scripted reply reports, in each API's own terms. Anthropic: `input_tokens` (uncached
/// input), `cache_creation_input_tokens` with its `cache_creation` 5 m / 1 h split,
/// `cache_read_input_tokens`, `output_tokens`. Responses: `input_tokens` (cached included) with
/// `input_tokens_details.cached_tokens`, `output_tokens` with
/// `output_tokens_details.reasoning_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptedUsage {
    pub input: u64,
    pub output: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub cache_read: u64,
    pub reasoning: u64,
}

impl Reply {
    fn with_blocks(blocks: Vec<Block>) -> Self {
        Self {
            blocks,
            failure: None,
            delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            chunk_chars: None,
            held_until: None,
            headers: Vec::new(),
            usage: None,
        }
    }

    fn failing(failure: Failure) -> Self {
        Self {
            failure: Some(failure),
            ..Self::with_blocks(Vec::new())
        }
    }

    /// Answer with this text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::with_blocks(vec![Block::Text(text.into())])
    }

    /// Answer with one tool call.
    pub fn tool_call(call: ToolCall) -> Self {
        Self::with_blocks(vec![Block::ToolCall(call)])
    }

    /// Answer with `prefix`, then a newline and the request token found in the prompt as the
    /// last line (`no request token` when none is found). The token is searched in the last
    /// user prompt first, then anywhere in the request body; the last occurrence wins.
    pub fn echo_token(prefix: impl Into<String>) -> Self {
        Self::with_blocks(vec![Block::EchoToken(prefix.into())])
    }

    /// Answer a peer's `<cross-session-message>` the way Claude does: a `SendMessage` back to
    /// its `from` address carrying `prefix` and the request token (see [`Block::PeerReply`]).
    pub fn peer_reply(prefix: impl Into<String>) -> Self {
        Self::with_blocks(vec![Block::PeerReply(prefix.into())])
    }

    /// Never answer; the connection stays open until the client gives up or the endpoint stops.
    pub fn hang() -> Self {
        Self::failing(Failure::Hang)
    }

    /// Close the connection without answering.
    pub fn drop_connection() -> Self {
        Self::failing(Failure::DropBeforeHeaders)
    }

    /// Answer with an HTTP error status and an API-shaped error body.
    pub fn http_error(status: u16, message: impl Into<String>) -> Self {
        Self::failing(Failure::HttpError {
            status,
            message: message.into(),
            retry: true,
        })
    }

    /// Send this header with the reply (a 429's `retry-after`, in seconds or as an HTTP date).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Report this usage instead of the estimate from the reply's length.
    pub fn usage(mut self, usage: ScriptedUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Append text after what the reply already says.
    pub fn then_text(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    /// Append a tool call (several make parallel calls).
    pub fn then_tool_call(mut self, call: ToolCall) -> Self {
        self.blocks.push(Block::ToolCall(call));
        self
    }

    /// Wait this long before sending anything (status line included).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Send nothing (status line included) until `path` exists: the test creates it once
    /// what must happen while the turn waits for its model has happened — no guessed delay.
    pub fn after_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.held_until = Some(path.into());
        self
    }

    /// Wait this long between streamed events.
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// Stream text in deltas of at most this many characters (default: one delta per block).
    pub fn chunk_chars(mut self, chars: usize) -> Self {
        self.chunk_chars = Some(chars.max(1));
        self
    }

    /// Start streaming, then close the connection after `events` SSE events.
    pub fn drop_after_events(mut self, events: usize) -> Self {
        self.failure = Some(Failure::DropAfterEvents(events));
        self
    }

    /// Start streaming, then go silent forever after `events` SSE events.
    pub fn hang_after_events(mut self, events: usize) -> Self {
        self.failure = Some(Failure::HangAfterEvents(events));
        self
    }

    /// Start streaming, then after `events` SSE events send the API's error event and end.
    pub fn error_after_events(mut self, events: usize, message: impl Into<String>) -> Self {
        self.failure = Some(Failure::ErrorEventAfter {
            events,
            message: message.into(),
        });
        self
    }

    /// For an HTTP error: ask the client not to retry (`x-should-retry: false`).
    pub fn no_retry(mut self) -> Self {
        if let Some(Failure::HttpError { retry, .. }) = &mut self.failure {
            *retry = false;
        }
        self
    }

    /// The blocks this reply answers with.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The failure this reply acts out, if any.
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }
}

/// What a rule's newest input must look like.
#[derive(Debug, Clone, PartialEq)]
pub enum Matcher {
    /// Any model request (user text, tool result, or neither).
    Any,
    /// The newest input is user text whose prompt (without `<system-reminder>` spans)
    /// contains every one of these substrings.
    UserText(Vec<String>),
    /// The newest input is a tool result whose text contains every one of these substrings
    /// (an empty list matches any tool result).
    ToolResult(Vec<String>),
}

/// Builds a [`Rule`] once its reply is known.
#[derive(Debug, Clone)]
#[must_use = "a rule needs a reply: call .reply(..), .reply_text(..) or .tool_call(..)"]
pub struct RuleBuilder {
    matcher: Matcher,
}

impl RuleBuilder {
    /// Finish the rule with this reply.
    pub fn reply(self, reply: Reply) -> Rule {
        Rule {
            matcher: self.matcher,
            reply,
            remaining: None,
            api: None,
            side_requests: false,
            label: None,
        }
    }

    /// Finish the rule with a text reply.
    pub fn reply_text(self, text: impl Into<String>) -> Rule {
        self.reply(Reply::text(text))
    }

    /// Finish the rule with a single tool call.
    pub fn tool_call(self, call: ToolCall) -> Rule {
        self.reply(Reply::tool_call(call))
    }
}

/// One entry of the script. Rules repeat until [`Rule::once`] or [`Rule::times`] limit them.
#[derive(Debug, Clone)]
pub struct Rule {
    pub(crate) matcher: Matcher,
    pub(crate) reply: Reply,
    /// Uses left; `None` repeats forever.
    pub(crate) remaining: Option<usize>,
    pub(crate) api: Option<Api>,
    pub(crate) side_requests: bool,
    pub(crate) label: Option<String>,
}

impl Rule {
    /// Match when the newest input is user text whose prompt (the text without
    /// `<system-reminder>` spans, [`RecordedRequest::last_user_prompt`]) contains `needle`.
    pub fn on_user_text(needle: impl Into<String>) -> RuleBuilder {
        RuleBuilder {
            matcher: Matcher::UserText(vec![needle.into()]),
        }
    }

    /// Match when the newest input is user text containing every one of `needles`.
    pub fn on_user_text_all<I, S>(needles: I) -> RuleBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        RuleBuilder {
            matcher: Matcher::UserText(needles.into_iter().map(Into::into).collect()),
        }
    }

    /// Match when the newest input is user text, whatever it says.
    pub fn on_any_user_text() -> RuleBuilder {
        RuleBuilder {
            matcher: Matcher::UserText(Vec::new()),
        }
    }

    /// Match when the newest input is a tool result whose text contains `needle`.
    pub fn on_tool_result(needle: impl Into<String>) -> RuleBuilder {
        RuleBuilder {
            matcher: Matcher::ToolResult(vec![needle.into()]),
        }
    }

    /// Match when the newest input is any tool result.
    pub fn on_any_tool_result() -> RuleBuilder {
        RuleBuilder {
            matcher: Matcher::ToolResult(Vec::new()),
        }
    }

    /// Match when the newest input is user text carrying a Claude peer envelope
    /// (`<cross-session-message from="…"`), as an idle Claude session receives one.
    pub fn on_peer_message() -> RuleBuilder {
        Self::on_user_text(PEER_ENVELOPE_OPEN)
    }

    /// The two rules of a scripted Claude that answers every peer message natively: a peer
    /// envelope → `SendMessage` back to its `from` with `prefix` and the request token
    /// ([`Reply::peer_reply`]); then `SendMessage`'s result → `done_text`, ending the turn.
    pub fn peer_replies(prefix: impl Into<String>, done_text: impl Into<String>) -> [Rule; 2] {
        [
            Self::on_peer_message()
                .reply(Reply::peer_reply(prefix))
                .label("peer reply"),
            // Claude's SendMessage result is a JSON text with `success` whether it was sent or
            // refused; either way the turn ends here.
            Self::on_tool_result("\"success\"")
                .reply_text(done_text)
                .label("peer reply sent"),
        ]
    }

    /// Match every model request.
    pub fn on_any() -> RuleBuilder {
        RuleBuilder {
            matcher: Matcher::Any,
        }
    }

    /// Use this rule once, then never again.
    pub fn once(self) -> Self {
        self.times(1)
    }

    /// Use this rule `n` times, then never again.
    pub fn times(mut self, n: usize) -> Self {
        self.remaining = Some(n);
        self
    }

    /// Only match requests to this API (Anthropic Messages or Responses).
    pub fn for_api(mut self, api: Api) -> Self {
        self.api = Some(api);
        self
    }

    /// Also match side requests (see [`RecordedRequest::side_request`]), which rules skip by
    /// default so a title-generation request quoting the user's prompt does not use them up.
    pub fn include_side_requests(mut self) -> Self {
        self.side_requests = true;
        self
    }

    /// Name the rule; the name shows in [`RecordedRequest::answered_by`].
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The rule's reply.
    pub fn reply_ref(&self) -> &Reply {
        &self.reply
    }

    /// Uses left (`None`: unlimited).
    pub fn remaining(&self) -> Option<usize> {
        self.remaining
    }

    /// Whether this rule answers `request` (ignoring uses left).
    pub fn matches(&self, request: &RecordedRequest) -> bool {
        if self.api.is_some_and(|api| api != request.api) {
            return false;
        }
        if request.side_request && !self.side_requests {
            return false;
        }
        let contains_all = |haystack: Option<&String>, needles: &[String]| {
            let haystack = haystack.map(String::as_str).unwrap_or("");
            needles
                .iter()
                .all(|needle| haystack.contains(needle.as_str()))
        };
        match &self.matcher {
            Matcher::Any => true,
            Matcher::UserText(needles) => {
                request.newest_input == InputKind::UserText
                    && contains_all(request.last_user_prompt.as_ref(), needles)
            }
            Matcher::ToolResult(needles) => {
                request.newest_input == InputKind::ToolResult
                    && contains_all(request.last_tool_result.as_ref(), needles)
            }
        }
    }

    fn describe(&self, index: usize) -> String {
        match &self.label {
            Some(label) => format!("rule #{index} ({label})"),
            None => format!("rule #{index}"),
        }
    }
}

/// The rules plus the answers used when no rule applies.
#[derive(Debug, Clone)]
pub(crate) struct Script {
    pub rules: Vec<Rule>,
    pub fallback: Reply,
    pub side_reply: Reply,
}

impl Script {
    /// Picks the reply for a model request and uses up a limited rule. Returns the reply and a
    /// description of who answered.
    pub fn answer(&mut self, request: &RecordedRequest) -> (Reply, String) {
        for (index, rule) in self.rules.iter_mut().enumerate() {
            if rule.remaining == Some(0) || !rule.matches(request) {
                continue;
            }
            if let Some(left) = &mut rule.remaining {
                *left -= 1;
            }
            return (rule.reply.clone(), rule.describe(index));
        }
        if request.side_request {
            (self.side_reply.clone(), "side-request default".to_owned())
        } else {
            (self.fallback.clone(), "fallback".to_owned())
        }
    }
}

/// Finds a request token for [`Block::EchoToken`]: the last match in the user prompt, else the
/// last in the whole body.
pub(crate) fn find_token(pattern: &regex::Regex, request: &RecordedRequest) -> Option<String> {
    let last_in = |text: &str| {
        pattern
            .find_iter(text)
            .last()
            .map(|m| m.as_str().to_owned())
    };
    request
        .last_user_prompt
        .as_deref()
        .and_then(last_in)
        .or_else(|| last_in(&request.body.to_string()))
}

/// The text of blocks with echo tokens resolved, in order; tool calls are returned separately
/// by the renderers, so they are skipped here.
pub(crate) fn resolve_text(text_block: &Block, token: Option<&str>) -> Option<String> {
    match text_block {
        Block::Text(text) => Some(text.clone()),
        Block::EchoToken(prefix) => {
            let token = token.unwrap_or("no request token");
            Some(if prefix.is_empty() {
                token.to_owned()
            } else {
                format!("{prefix}\n{token}")
            })
        }
        Block::ToolCall(_) | Block::PeerReply(_) => None,
    }
}

/// The `from` address of the newest peer envelope in a request: in the last user prompt
/// first, else in any text of the body (Claude hands a message that arrives mid-tool-round to
/// the model as a `system` entry).
pub(crate) fn find_peer_from(request: &RecordedRequest) -> Option<String> {
    fn last_from(text: &str) -> Option<String> {
        let at = text.rfind(PEER_ENVELOPE_OPEN)? + PEER_ENVELOPE_OPEN.len();
        let rest = &text[at..];
        rest.find('"').map(|end| rest[..end].to_owned())
    }
    fn walk(value: &Value, found: &mut Option<String>) {
        match value {
            Value::String(text) => {
                if let Some(from) = last_from(text) {
                    *found = Some(from);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, found)),
            Value::Object(map) => map.values().for_each(|item| walk(item, found)),
            _ => {}
        }
    }
    if let Some(from) = request.last_user_prompt.as_deref().and_then(last_from) {
        return Some(from);
    }
    let mut found = None;
    walk(&Value::Array(request.messages.clone()), &mut found);
    found
}

/// The `SendMessage` call a [`Block::PeerReply`] makes, or `None` when the request holds no
/// peer envelope to answer.
pub(crate) fn peer_reply_call(
    prefix: &str,
    request: &RecordedRequest,
    token: Option<&str>,
) -> Option<ToolCall> {
    let to = find_peer_from(request)?;
    let message = resolve_text(&Block::EchoToken(prefix.to_owned()), token).unwrap_or_default();
    Some(ToolCall::new(
        "SendMessage",
        serde_json::json!({ "to": to, "message": message }),
    ))
}
