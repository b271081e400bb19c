//! What is asked of a provider and what comes back: [`Request`], [`Answer`], and [`Failure`]
//! with its [`FailureKind`], whose one-line `why` never holds a key (the key's value is
//! scrubbed from anything a server or a library says before it becomes a `why`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One question.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Instructions apart from the question (Anthropic `system`, Responses `instructions`,
    /// a Chat `system` message, `claude --system-prompt`; put before the prompt for CLIs
    /// without such a flag).
    pub system: Option<String>,
    pub prompt: String,
    /// When given, the answer must be JSON matching it; each API is asked for structured output
    /// its own documented way (docs/providers.md). The answer's text is then that JSON.
    pub json_schema: Option<Value>,
    pub max_tokens: u32,
    /// Where a CLI runs (default: the temporary directory). The HTTP kinds ignore it.
    pub cwd: Option<PathBuf>,
}

impl Request {
    /// A plain question: no system text, no schema, [`Request::DEFAULT_MAX_TOKENS`].
    pub fn new(prompt: impl Into<String>) -> Request {
        Request {
            system: None,
            prompt: prompt.into(),
            json_schema: None,
            max_tokens: Request::DEFAULT_MAX_TOKENS,
            cwd: None,
        }
    }

    /// The answer's length limit when none is given.
    pub const DEFAULT_MAX_TOKENS: u32 = 2048;
}

/// A provider's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The text (the JSON, when a schema was given), trimmed.
    pub text: String,
    /// The model that answered, as the provider says (else as configured; a CLI's default
    /// model it does not name is `default`).
    pub model: String,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// The whole ask, retries and waits included.
    pub millis: u64,
    /// How many requests it took (1 without retries).
    pub tries: u32,
}

/// Why a provider did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Its timeout passed (a request, a retry's wait, or a CLI that ran too long).
    Timeout,
    /// HTTP 429 to the last try.
    RateLimited,
    /// HTTP 5xx (529 overloaded included) to the last try.
    Server,
    /// HTTP 401 or 403: the key is wrong or lacks access.
    Auth,
    /// Any other HTTP 4xx: the request was refused (unknown model, bad request).
    Refused,
    /// No HTTP answer: connection refused or reset, DNS, TLS.
    Connect,
    /// Not askable here: the key variable is unset, the CLI is not installed.
    Unavailable,
    /// A CLI exited with an error.
    Exited,
    /// An answer came but holds no usable text (not JSON, empty, a refusal).
    BadAnswer,
}

impl FailureKind {
    /// Whether another try may help: rate limits and server errors.
    pub fn retryable(self) -> bool {
        match self {
            FailureKind::RateLimited | FailureKind::Server => true,
            FailureKind::Timeout
            | FailureKind::Auth
            | FailureKind::Refused
            | FailureKind::Connect
            | FailureKind::Unavailable
            | FailureKind::Exited
            | FailureKind::BadAnswer => false,
        }
    }
}

/// A provider that did not answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{why}")]
pub struct Failure {
    pub kind: FailureKind,
    /// One line, naming the provider's URL or program; never a key.
    pub why: String,
    pub millis: u64,
    pub tries: u32,
}

/// `text` on one line, at most `max` characters, with `secret` (a key) replaced.
pub(crate) fn one_line(text: &str, max: usize, secret: Option<&str>) -> String {
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(secret) = secret.filter(|s| s.len() >= 4) {
        text = text.replace(secret, "[key]");
    }
    if text.chars().count() > max {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    } else {
        text
    }
}
