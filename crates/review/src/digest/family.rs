//! The model family a session runs on, from the model name its transcript records: the
//! reviewer must be of another family, so an unknown one says so rather than guessing.
//!
//! Where each agent records the model: Claude Code on every assistant record
//! (`message.model`; `<synthetic>` marks Claude Code's own notes and is no model), Codex on each
//! `turn_context` line (`payload.model`). Grok Build's `updates.jsonl` records none in the
//! public descriptions it follows; Grok Build runs xAI's models only, so a Grok session without
//! a recorded model is taken as xAI and says that the agent, not the transcript, decided.
//!
//! A Copilot session runs whichever family's model its user picked (Claude, GPT, Gemini, …), so
//! only the model its SDK events record decides: `model` on the assistant's and tools' events,
//! `newModel` on `session.model_change`, `selectedModel` on `session.start` / `session.resume`
//! (`docs/observed/copilot.md` §4.3). Without one, the family is unknown.

use serde::{Deserialize, Serialize};

/// Who made a model: the unit the reviewer's "other family" rule compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModelFamily {
    Anthropic,
    Openai,
    Xai,
    Google,
    Meta,
    Mistral,
    Deepseek,
    Alibaba,
    /// No model was recorded, or its name is not one this build knows.
    Unknown,
}

impl ModelFamily {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelFamily::Anthropic => "anthropic",
            ModelFamily::Openai => "openai",
            ModelFamily::Xai => "xai",
            ModelFamily::Google => "google",
            ModelFamily::Meta => "meta",
            ModelFamily::Mistral => "mistral",
            ModelFamily::Deepseek => "deepseek",
            ModelFamily::Alibaba => "alibaba",
            ModelFamily::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for ModelFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What decided the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FamilySource {
    /// The model name the transcript records.
    Transcript,
    /// The transcript names no model; the agent runs one family's models only (Grok Build).
    Agent,
    /// Neither: the family is unknown.
    None,
}

/// The session's model and its family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionModel {
    /// The latest model name the transcript records.
    pub model: Option<String>,
    pub family: ModelFamily,
    pub source: FamilySource,
}

/// The family of a model name, by its vendor prefix or its well-known name: `claude-*` →
/// anthropic, `gpt-*` / `o1`… / `codex-*` → openai, `grok-*` → xai, `gemini-*` → google.
/// Routing prefixes (`openai/gpt-5`, `us.anthropic.claude-…`, `models/gemini-…`) are looked
/// through.
pub fn family_of_model(model: &str) -> ModelFamily {
    let lower = model.trim().to_ascii_lowercase();
    // `vendor/model` (OpenRouter, Vertex): the vendor says it, else the last part does.
    if let Some((vendor, rest)) = lower.split_once('/') {
        let by_vendor = match vendor {
            "anthropic" => Some(ModelFamily::Anthropic),
            "openai" => Some(ModelFamily::Openai),
            "x-ai" | "xai" => Some(ModelFamily::Xai),
            "google" => Some(ModelFamily::Google),
            "meta-llama" | "meta" => Some(ModelFamily::Meta),
            "mistralai" | "mistral" => Some(ModelFamily::Mistral),
            "deepseek" => Some(ModelFamily::Deepseek),
            "qwen" | "alibaba" => Some(ModelFamily::Alibaba),
            _ => None,
        };
        return by_vendor.unwrap_or_else(|| family_of_model(rest));
    }
    // Bedrock ids: `us.anthropic.claude-…`, `anthropic.claude-…`.
    let name = lower
        .rsplit_once("anthropic.")
        .map_or(lower.as_str(), |(_, rest)| rest);
    let starts = |p: &str| name.starts_with(p);
    if starts("claude") || matches!(name, "opus" | "sonnet" | "haiku") {
        ModelFamily::Anthropic
    } else if starts("gpt-")
        || starts("gpt4")
        || starts("chatgpt")
        || starts("codex")
        || starts("davinci")
        || is_openai_o_series(name)
    {
        ModelFamily::Openai
    } else if starts("grok") {
        ModelFamily::Xai
    } else if starts("gemini") || starts("gemma") {
        ModelFamily::Google
    } else if starts("llama") || starts("meta-llama") {
        ModelFamily::Meta
    } else if starts("mistral")
        || starts("mixtral")
        || starts("codestral")
        || starts("devstral")
        || starts("magistral")
    {
        ModelFamily::Mistral
    } else if starts("deepseek") {
        ModelFamily::Deepseek
    } else if starts("qwen") || starts("qwq") {
        ModelFamily::Alibaba
    } else {
        ModelFamily::Unknown
    }
}

/// `o1`, `o3-mini`, `o4-mini-high`: an `o`, digits, then the end or a dash.
fn is_openai_o_series(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('o') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(rest.as_bytes().get(digits), None | Some(b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_their_makers() {
        for (name, family) in [
            ("claude-sonnet-4-5-20250929", ModelFamily::Anthropic),
            ("us.anthropic.claude-opus-4-1-v1:0", ModelFamily::Anthropic),
            ("anthropic/claude-3.5-sonnet", ModelFamily::Anthropic),
            ("gpt-5.1-codex", ModelFamily::Openai),
            ("o3", ModelFamily::Openai),
            ("o4-mini", ModelFamily::Openai),
            ("openai/gpt-4o", ModelFamily::Openai),
            ("grok-code-fast-1", ModelFamily::Xai),
            ("x-ai/grok-4", ModelFamily::Xai),
            ("gemini-2.5-pro", ModelFamily::Google),
            ("models/gemini-2.0-flash", ModelFamily::Google),
            ("llama-3.1-70b", ModelFamily::Meta),
            ("qwen2.5-coder", ModelFamily::Alibaba),
            ("test-model", ModelFamily::Unknown),
            ("omni", ModelFamily::Unknown),
            ("", ModelFamily::Unknown),
        ] {
            assert_eq!(family_of_model(name), family, "{name}");
        }
    }
}
