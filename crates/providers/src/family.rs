//! Kinds of provider and model families. The review asks a reviewer of a family other than
//! the session's, so every provider has one: given in the configuration, or defaulted from the
//! kind (Anthropic Messages → anthropic, `claude-cli` → anthropic, `codex-cli` → openai), the
//! base URL's host (api.openai.com, api.x.ai, generativelanguage.googleapis.com, loopback →
//! local) or the model's name (`claude-…`, `gpt-…`, `grok-…`, `gemini-…`, OpenRouter's
//! `vendor/model`).

use serde::{Deserialize, Serialize};

/// How a provider is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Kind {
    /// Anthropic Messages, `POST {base_url}/v1/messages`.
    Anthropic,
    /// OpenAI Responses, `POST {base_url}/responses` (`base_url` ends in `/v1`). Named
    /// `openai` as in the old shorthand; `responses` is accepted too.
    Responses,
    /// OpenAI-compatible Chat Completions, `POST {base_url}/chat/completions` (OpenAI, xAI,
    /// OpenRouter, a llama.cpp or Ollama server).
    Chat,
    /// An agent's own CLI, headless.
    Cli(CliAgent),
}

/// An agent CLI that can answer headless.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CliAgent {
    /// `claude -p --output-format json` (`--json-schema` for structured output).
    Claude,
    /// `codex exec --json` (`--output-schema FILE` for structured output).
    Codex,
    /// `cursor-agent -p` (the schema goes in the prompt).
    Cursor,
    /// Antigravity's `agy -p` (the schema goes in the prompt).
    Antigravity,
}

impl CliAgent {
    /// Every CLI, in the order they are documented.
    pub const ALL: [CliAgent; 4] = [
        CliAgent::Claude,
        CliAgent::Codex,
        CliAgent::Cursor,
        CliAgent::Antigravity,
    ];

    /// The variable naming the program (`CROSS_AGENT_CLAUDE_BIN`, …) and the bare name.
    pub fn program_var(self) -> (&'static str, &'static str) {
        match self {
            CliAgent::Claude => ("CROSS_AGENT_CLAUDE_BIN", "claude"),
            CliAgent::Codex => ("CROSS_AGENT_CODEX_BIN", "codex"),
            CliAgent::Cursor => ("CROSS_AGENT_CURSOR_AGENT_BIN", "cursor-agent"),
            CliAgent::Antigravity => ("CROSS_AGENT_AGY_BIN", "agy"),
        }
    }

    /// How the attempt is named in records: `claude -p`, `codex exec`, …
    pub fn command_name(self) -> &'static str {
        match self {
            CliAgent::Claude => "claude -p",
            CliAgent::Codex => "codex exec",
            CliAgent::Cursor => "cursor-agent -p",
            CliAgent::Antigravity => "agy -p",
        }
    }

    /// The family of the models the CLI runs by default.
    pub fn family(self) -> Family {
        match self {
            CliAgent::Claude => Family::Anthropic,
            CliAgent::Codex => Family::Openai,
            // Cursor runs many vendors' models; its default is its own routing.
            CliAgent::Cursor => Family::Other("cursor".to_owned()),
            CliAgent::Antigravity => Family::Google,
        }
    }
}

impl Kind {
    /// The name used in the file and the shorthand.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Anthropic => "anthropic",
            Kind::Responses => "openai",
            Kind::Chat => "chat",
            Kind::Cli(CliAgent::Claude) => "claude-cli",
            Kind::Cli(CliAgent::Codex) => "codex-cli",
            Kind::Cli(CliAgent::Cursor) => "cursor-cli",
            Kind::Cli(CliAgent::Antigravity) => "agy-cli",
        }
    }

    /// From its name (`responses` is an alias of `openai`).
    pub fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "anthropic" => Kind::Anthropic,
            "openai" | "responses" => Kind::Responses,
            "chat" => Kind::Chat,
            "claude-cli" => Kind::Cli(CliAgent::Claude),
            "codex-cli" => Kind::Cli(CliAgent::Codex),
            "cursor-cli" => Kind::Cli(CliAgent::Cursor),
            "agy-cli" => Kind::Cli(CliAgent::Antigravity),
            _ => return None,
        })
    }

    /// True for the kinds asked over HTTP.
    pub fn is_api(self) -> bool {
        match self {
            Kind::Anthropic | Kind::Responses | Kind::Chat => true,
            Kind::Cli(_) => false,
        }
    }
}

/// What the names are, for error messages.
pub const KIND_NAMES: &str =
    "anthropic, openai (or responses), chat, claude-cli, codex-cli, cursor-cli, agy-cli";

impl From<Kind> for String {
    fn from(kind: Kind) -> String {
        kind.as_str().to_owned()
    }
}

impl TryFrom<String> for Kind {
    type Error = String;
    fn try_from(name: String) -> Result<Kind, String> {
        Kind::parse(&name).ok_or_else(|| format!("unknown kind {name:?} (one of {KIND_NAMES})"))
    }
}

/// A model family: who trained the model, as far as a second opinion is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Family {
    Anthropic,
    Openai,
    Xai,
    Google,
    /// A model served on this machine (llama.cpp, Ollama): counted as its own family.
    Local,
    /// Any other, lower-cased (`meta-llama`, `mistralai`, `deepseek`, …).
    Other(String),
}

impl Family {
    /// Its name in files and records.
    pub fn as_str(&self) -> &str {
        match self {
            Family::Anthropic => "anthropic",
            Family::Openai => "openai",
            Family::Xai => "xai",
            Family::Google => "google",
            Family::Local => "local",
            Family::Other(name) => name,
        }
    }

    /// From a name; unknown names are kept as [`Family::Other`].
    pub fn parse(name: &str) -> Family {
        match name.trim().to_ascii_lowercase().as_str() {
            "anthropic" | "claude" => Family::Anthropic,
            "openai" | "gpt" => Family::Openai,
            "xai" | "x-ai" | "grok" => Family::Xai,
            "google" | "gemini" => Family::Google,
            "local" => Family::Local,
            other => Family::Other(other.to_owned()),
        }
    }

    /// The family a model name says, if it says one: OpenRouter's `vendor/model` by its
    /// vendor, else `claude…`, `gpt…`/`o1…`/`o3…`/`o4…`/`codex…`, `grok…`, `gemini…`/`gemma…`.
    pub fn of_model(model: &str) -> Option<Family> {
        let model = model.trim().to_ascii_lowercase();
        if let Some((vendor, _)) = model.split_once('/') {
            return Some(match vendor {
                "anthropic" => Family::Anthropic,
                "openai" => Family::Openai,
                "x-ai" | "xai" => Family::Xai,
                "google" => Family::Google,
                other => Family::Other(other.to_owned()),
            });
        }
        let starts = |prefixes: &[&str]| prefixes.iter().any(|p| model.starts_with(p));
        if starts(&["claude"]) {
            Some(Family::Anthropic)
        } else if starts(&["gpt", "o1", "o3", "o4", "codex", "chatgpt"]) {
            Some(Family::Openai)
        } else if starts(&["grok"]) {
            Some(Family::Xai)
        } else if starts(&["gemini", "gemma"]) {
            Some(Family::Google)
        } else {
            None
        }
    }

    /// The family a base URL's host says: the big APIs by name, this machine as `local`.
    /// OpenRouter says nothing by itself (its models name their vendor).
    pub fn of_base_url(base_url: &str) -> Option<Family> {
        let rest = base_url
            .split_once("://")
            .map_or(base_url, |(_, rest)| rest);
        let authority = rest.split('/').next().unwrap_or("");
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let host = if let Some(v6) = host.strip_prefix('[') {
            v6.split(']').next().unwrap_or("")
        } else {
            host.split(':').next().unwrap_or("")
        }
        .to_ascii_lowercase();
        let under = |domain: &str| host == domain || host.ends_with(&format!(".{domain}"));
        if under("anthropic.com") {
            Some(Family::Anthropic)
        } else if under("openai.com") {
            Some(Family::Openai)
        } else if under("x.ai") {
            Some(Family::Xai)
        } else if under("googleapis.com") {
            Some(Family::Google)
        } else if host == "localhost"
            || host == "::1"
            || host.starts_with("127.")
            || host.ends_with(".localhost")
        {
            Some(Family::Local)
        } else {
            None
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Family> for String {
    fn from(family: Family) -> String {
        family.as_str().to_owned()
    }
}

impl From<String> for Family {
    fn from(name: String) -> Family {
        Family::parse(&name)
    }
}
