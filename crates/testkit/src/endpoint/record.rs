//! What the endpoint remembers about each request, and how it reads an agent's request body.
//!
//! Every request is recorded the moment its body has arrived, before any reply is chosen, so a
//! test can wait for a request that the script then leaves hanging. The parsing here is what the
//! script matches on: the last *user* message (Claude may end `messages` with a `system` entry
//! and open the user turn with `<system-reminder>` blocks) and whether the newest input is the
//! user's text or a tool result, which keeps a "user said X → call tool" rule from re-firing on
//! the follow-up request that carries the tool's result.

use std::collections::BTreeMap;

use serde_json::Value;

/// Which API a request was addressed to, judged by method and path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// `POST …/v1/messages` — Anthropic Messages (Claude Code).
    Anthropic,
    /// `POST …/v1/messages/count_tokens` — Anthropic token counting.
    CountTokens,
    /// `POST …/v1/responses` — OpenAI Responses (Codex).
    Responses,
    /// `POST …/chat/completions` — OpenAI-compatible Chat Completions (OpenAI, xAI,
    /// OpenRouter, llama.cpp and Ollama servers), answered as one JSON body.
    Chat,
    /// Anything else: probes such as `HEAD /api/hello` or `GET /v1/models`.
    Other,
}

/// What the newest input of a model request is; rules are scoped by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum InputKind {
    /// The newest input is text the user typed (or the bridge injected).
    UserText,
    /// The newest input carries the result of a tool call the model asked for.
    ToolResult,
    /// No user message or tool result was found (or the request is not a model request).
    #[default]
    None,
}

/// One request as the endpoint received it, with the fields tests assert on already extracted.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Arrival order, from 0, over all requests (model requests and probes alike).
    pub seq: usize,
    /// HTTP method, upper case.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// Raw query string, if any (Claude Code sends `beta=true`).
    pub query: Option<String>,
    /// Which API the request was for.
    pub api: Api,
    /// Every header, names lower-cased; a repeated header keeps its values joined by `, `.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON; a body that is not JSON is kept as a JSON string, an empty one as null.
    pub body: Value,
    /// The requested `model`.
    pub model: Option<String>,
    /// The request's `stream` flag.
    pub stream: bool,
    /// `max_tokens` (Anthropic) or `max_output_tokens` (Responses), when given.
    pub max_tokens: Option<u64>,
    /// The system prompt: Anthropic `system` (all text blocks joined) or Responses `instructions`.
    pub system: Option<String>,
    /// Anthropic `messages` or Responses `input` items, as sent.
    pub messages: Vec<Value>,
    /// Tools offered to the model. Anthropic: `tools[].name`. Responses: each tool's `name`
    /// (or its `type` when it has none, e.g. `web_search`), and for a `namespace` tool also each
    /// inner tool as `<namespace>__<name>` (Codex offers MCP tools that way, e.g.
    /// `mcp__cross_agent__echo`).
    pub tools: Vec<String>,
    /// All text blocks of the last user message, joined by newlines.
    pub last_user_text: Option<String>,
    /// [`RecordedRequest::last_user_text`] without its `<system-reminder>…</system-reminder>`
    /// spans, trimmed: what the user (or the bridge) typed. User-text rules match on this, so
    /// the context Claude Code wraps around a prompt (git status, attribution rules, dates)
    /// cannot set off a rule by accident. `None` when nothing is left.
    pub last_user_prompt: Option<String>,
    /// The text of the newest tool result(s), joined by newlines: Anthropic `tool_result`
    /// blocks of the latest user message that has any; Responses the last run of adjacent
    /// `function_call_output` items (the results of parallel calls).
    pub last_tool_result: Option<String>,
    /// Whether the newest input is user text or a tool result.
    pub newest_input: InputKind,
    /// True for a request the endpoint takes to be an agent's side request rather than a turn:
    /// a quota probe (`max_tokens` ≤ 1), an Anthropic request that offers no tools and either
    /// asks for at most 8192 tokens or has a known side-request system prompt (Claude Code's
    /// session-title request), or a Responses request that offers no tools. Rules skip these unless they opt in, so a side request quoting the user's prompt
    /// cannot use up the rule meant for the turn.
    pub side_request: bool,
    /// Which script entry answered, once one was chosen: `rule #N` (with its label, if any),
    /// `fallback`, `side-request default`, or the fixed answer of a non-model route.
    pub answered_by: Option<String>,
}

impl RecordedRequest {
    /// The value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// True for Anthropic Messages, OpenAI Responses and Chat Completions requests: the ones
    /// the script answers.
    pub fn is_model_request(&self) -> bool {
        matches!(self.api, Api::Anthropic | Api::Responses | Api::Chat)
    }

    /// A header whose value is JSON (Codex's `x-codex-turn-metadata`), parsed.
    pub fn header_json(&self, name: &str) -> Option<Value> {
        self.header(name)
            .and_then(|raw| serde_json::from_str(raw).ok())
    }
}

/// Decides the API from method and path. Suffix matching tolerates a base URL given with or
/// without `/v1` by a test (Claude appends `/v1/messages` to its base, Codex `/responses`).
pub(crate) fn classify(method: &str, path: &str) -> Api {
    if method != "POST" {
        return Api::Other;
    }
    let path = path.trim_end_matches('/');
    if path.ends_with("/messages/count_tokens") {
        Api::CountTokens
    } else if path.ends_with("/messages") {
        Api::Anthropic
    } else if path.ends_with("/responses") {
        Api::Responses
    } else if path.ends_with("/chat/completions") {
        Api::Chat
    } else {
        Api::Other
    }
}

/// The largest `max_tokens` of an Anthropic request without tools still taken for a side
/// request. Claude's agent turns ask for far more (32 000 to 128 000, with or without
/// `--tools ""`); a title or summary asks for a few hundred.
const SIDE_REQUEST_MAX_TOKENS: u64 = 8192;

/// Words of the system prompt of a side request an agent was seen to make with a turn's
/// `max_tokens`. Claude Code 2.1.332 names an interactive session with a streamed, tool-less
/// request for 128 000 tokens whose user message quotes the whole session.
const SIDE_REQUEST_SYSTEM_MARKERS: [&str; 1] = ["You are naming a coding session"];

/// Whether a model request is an agent's side request rather than a turn of the conversation:
/// a quota probe (`max_tokens` ≤ 1), an Anthropic request that offers no tools and asks for a
/// short answer or has a known side-request system prompt (title generation, summaries), or a
/// Responses request that offers no tools
/// (Codex offers tools on every turn). A side request can quote the user's prompt, and must
/// not use up the rule meant for the turn.
pub(crate) fn is_side_request(api: Api, parsed: &Parsed) -> bool {
    let tiny = parsed.max_tokens.is_some_and(|max| max <= 1);
    match api {
        Api::Anthropic => {
            let known = parsed.system.as_deref().is_some_and(|system| {
                SIDE_REQUEST_SYSTEM_MARKERS
                    .iter()
                    .any(|marker| system.contains(marker))
            });
            tiny || (parsed.tools.is_empty()
                && (known
                    || parsed
                        .max_tokens
                        .is_none_or(|max| max <= SIDE_REQUEST_MAX_TOKENS)))
        }
        Api::Responses => tiny || parsed.tools.is_empty(),
        // No agent here speaks Chat Completions; its requests come from cross-agent's own
        // provider pool, whose plain questions are the turn.
        Api::Chat => tiny,
        Api::CountTokens | Api::Other => false,
    }
}

/// The parts of a request body the script and the tests care about.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub model: Option<String>,
    pub stream: bool,
    pub max_tokens: Option<u64>,
    pub system: Option<String>,
    pub messages: Vec<Value>,
    pub tools: Vec<String>,
    pub last_user_text: Option<String>,
    pub last_user_prompt: Option<String>,
    pub last_tool_result: Option<String>,
    pub newest_input: InputKind,
}

/// Reads a request body for the given API.
pub(crate) fn parse(api: Api, body: &Value) -> Parsed {
    let mut parsed = Parsed {
        model: body.get("model").and_then(Value::as_str).map(str::to_owned),
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        ..Parsed::default()
    };
    match api {
        Api::Anthropic | Api::CountTokens => parse_anthropic(body, &mut parsed),
        Api::Responses => parse_responses(body, &mut parsed),
        Api::Chat => parse_chat(body, &mut parsed),
        Api::Other => {}
    }
    parsed.last_user_prompt = parsed
        .last_user_text
        .as_deref()
        .map(strip_system_reminders)
        .filter(|prompt| !prompt.is_empty());
    parsed
}

/// `text` without `<system-reminder>…</system-reminder>` spans (an unclosed one runs to the
/// end), trimmed.
fn strip_system_reminders(text: &str) -> String {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    let mut kept = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        kept.push_str(&rest[..start]);
        rest = match rest[start..].find(CLOSE) {
            Some(end) => &rest[start + end + CLOSE.len()..],
            None => "",
        };
    }
    kept.push_str(rest);
    kept.trim().to_owned()
}

fn parse_anthropic(body: &Value, parsed: &mut Parsed) {
    parsed.max_tokens = body.get("max_tokens").and_then(Value::as_u64);
    parsed.system = match body.get("system") {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Array(blocks)) => Some(join(blocks.iter().filter_map(block_text))),
        _ => None,
    };
    parsed.tools = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool.get("name").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();

    // The last user message decides both the user text and what kind the newest input is;
    // trailing `system` (or assistant prefill) messages after it are not input.
    if let Some(last_user) = messages
        .iter()
        .rev()
        .find(|message| role(message) == Some("user"))
    {
        let blocks = content_blocks(last_user);
        let texts: Vec<String> = blocks
            .iter()
            .filter(|block| block_type(block) == Some("text"))
            .filter_map(block_text)
            .collect();
        if !texts.is_empty() {
            parsed.last_user_text = Some(join(texts));
        }
        let has_tool_result = blocks
            .iter()
            .any(|block| block_type(block) == Some("tool_result"));
        parsed.newest_input = if has_tool_result {
            InputKind::ToolResult
        } else {
            InputKind::UserText
        };
    }
    // The newest tool results may sit in an earlier user message when the user typed after them.
    parsed.last_tool_result = messages.iter().rev().find_map(|message| {
        if role(message) != Some("user") {
            return None;
        }
        let results: Vec<String> = content_blocks(message)
            .iter()
            .filter(|block| block_type(block) == Some("tool_result"))
            .map(|block| match block.get("content") {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Array(parts)) => join(parts.iter().filter_map(block_text)),
                _ => String::new(),
            })
            .collect();
        (!results.is_empty()).then(|| join(results))
    });
    parsed.messages = messages;
}

fn parse_responses(body: &Value, parsed: &mut Parsed) {
    parsed.max_tokens = body.get("max_output_tokens").and_then(Value::as_u64);
    parsed.system = body
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_owned);
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = tool
            .get("name")
            .or_else(|| tool.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("");
        parsed.tools.push(name.to_owned());
        for inner in tool
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(inner_name) = inner.get("name").and_then(Value::as_str) {
                parsed.tools.push(format!("{name}__{inner_name}"));
            }
        }
    }
    let input = match body.get("input") {
        Some(Value::Array(items)) => items.clone(),
        // A bare string input is one user message.
        Some(Value::String(text)) => vec![serde_json::json!({
            "type": "message", "role": "user",
            "content": [{ "type": "input_text", "text": text }],
        })],
        _ => Vec::new(),
    };

    let user_text = |item: &Value| -> Option<String> {
        let is_user_message = role(item) == Some("user")
            && item
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("message")
                == "message";
        if !is_user_message {
            return None;
        }
        Some(join(content_blocks(item).iter().filter_map(block_text)))
    };
    parsed.last_user_text = input.iter().rev().find_map(user_text);
    // The newest tool results: the last run of adjacent outputs, so the results of parallel
    // calls (Codex sends all the calls, then all the outputs) read as one, while an earlier
    // step's result cannot match again in a later step of the same loop.
    let mut outputs: Vec<String> = input
        .iter()
        .rev()
        .skip_while(|item| !is_tool_output(item))
        .take_while(|item| is_tool_output(item))
        .map(|item| match item.get("output") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => join(parts.iter().filter_map(block_text)),
            Some(other) => other.to_string(),
            None => String::new(),
        })
        .collect();
    outputs.reverse();
    if !outputs.is_empty() {
        parsed.last_tool_result = Some(join(outputs));
    }
    // The newest input is the last user message or tool output; developer/system messages and
    // the model's own items (function calls, reasoning) between them are not input.
    parsed.newest_input = input
        .iter()
        .rev()
        .find_map(|item| {
            if is_tool_output(item) {
                Some(InputKind::ToolResult)
            } else if user_text(item).is_some() {
                Some(InputKind::UserText)
            } else {
                None
            }
        })
        .unwrap_or(InputKind::None);
    parsed.messages = input;
}

/// Chat Completions: `messages` of `{role, content}` where content is a string or text parts;
/// `system`/`developer` messages are the system prompt, `tool` messages tool results.
fn parse_chat(body: &Value, parsed: &mut Parsed) {
    parsed.max_tokens = body
        .get("max_completion_tokens")
        .or_else(|| body.get("max_tokens"))
        .and_then(Value::as_u64);
    parsed.tools = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|tool| tool.pointer("/function/name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let text_of = |message: &Value| join(content_blocks(message).iter().filter_map(block_text));
    let system: Vec<String> = messages
        .iter()
        .filter(|m| matches!(role(m), Some("system" | "developer")))
        .map(text_of)
        .collect();
    if !system.is_empty() {
        parsed.system = Some(join(system));
    }
    parsed.last_user_text = messages
        .iter()
        .rev()
        .find(|m| role(m) == Some("user"))
        .map(text_of);
    let mut results: Vec<String> = messages
        .iter()
        .rev()
        .skip_while(|m| role(m) != Some("tool"))
        .take_while(|m| role(m) == Some("tool"))
        .map(text_of)
        .collect();
    results.reverse();
    if !results.is_empty() {
        parsed.last_tool_result = Some(join(results));
    }
    parsed.newest_input = messages
        .iter()
        .rev()
        .find_map(|m| match role(m) {
            Some("tool") => Some(InputKind::ToolResult),
            Some("user") => Some(InputKind::UserText),
            _ => None,
        })
        .unwrap_or(InputKind::None);
    parsed.messages = messages;
}

fn is_tool_output(item: &Value) -> bool {
    matches!(
        item.get("type").and_then(Value::as_str),
        Some("function_call_output" | "custom_tool_call_output" | "mcp_tool_call_output")
    )
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

/// The content of a message as blocks; a plain string content is one text block.
fn content_blocks(message: &Value) -> Vec<Value> {
    match message.get("content") {
        Some(Value::String(text)) => vec![serde_json::json!({ "type": "text", "text": text })],
        Some(Value::Array(blocks)) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// The text of a text-like block (`text`, `input_text`, `output_text`), or of a bare string.
fn block_text(block: &Value) -> Option<String> {
    match block {
        Value::String(text) => Some(text.clone()),
        Value::Object(_) => match block_type(block) {
            Some("text" | "input_text" | "output_text") | None => {
                block.get("text").and_then(Value::as_str).map(str::to_owned)
            }
            Some(_) => None,
        },
        _ => None,
    }
}

fn join(parts: impl IntoIterator<Item = String>) -> String {
    parts.into_iter().collect::<Vec<_>>().join("\n")
}
