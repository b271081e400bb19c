//! What the writer keeps out of the log: payloads and secrets (docs/spec/vsc-relay.txt, "never the
//! message payload or a secret").
//!
//! No filter can recognise every secret, so the first defence is the API: a [`Decision`] has no
//! field for a payload, and the [`crate::events`] constructors put only ids, counts and enum
//! names in `details`. This is the second: before a line is written, the value of any `details`
//! key (at any depth) or unknown top-level key whose name has a word from [`WITHHELD_WORDS`] in
//! it (`message`, `reply_text`, `bot_token`, `OPENAI_API_KEY`, `child_env`, …) is replaced by
//! [`WITHHELD`], unless it is a number, a boolean or null — a `message_chars` count or a
//! `has_token` flag carries nothing to hide, and counting them is useful. The key stays, so a
//! reader sees that something was there. Long strings are cut at [`MAX_STRING_CHARS`]: a
//! value that long is text, not an id, whatever its key is called.

use serde_json::{Map, Value};

use crate::Decision;

/// What a withheld value is replaced by.
pub const WITHHELD: &str = "[withheld]";

/// A key with one of these words (split at `_`, `-`, `.` and case changes) has its value
/// withheld. `api_key`, `apikey` and `access_key` are matched as wholes too.
pub const WITHHELD_WORDS: &[&str] = &[
    "message",
    "messages",
    "text",
    "prompt",
    "body",
    "payload",
    "content",
    "reply",
    "answer",
    "preview",
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "env",
    "environment",
    "authorization",
    "auth",
    "cookie",
    "credential",
    "credentials",
    "stdin",
    "stdout",
    "stderr",
];

/// Strings longer than this many characters are cut (with `…`).
pub const MAX_STRING_CHARS: usize = 512;

/// Whether the value under `key` is withheld.
pub fn is_withheld_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    if ["api_key", "api-key", "apikey", "access_key", "private_key"]
        .iter()
        .any(|whole| lower.contains(whole))
    {
        return true;
    }
    words(key).any(|word| WITHHELD_WORDS.contains(&word.as_str()))
}

/// `replyText` → `reply`, `text`; `CHILD_ENV` → `child`, `env`.
fn words(key: &str) -> impl Iterator<Item = String> + '_ {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out.into_iter()
}

/// Applies the rules to `decision` in place; returns how many values were withheld.
pub fn withhold(decision: &mut Decision) -> usize {
    let mut count = 0;
    withhold_map(&mut decision.details, &mut count);
    withhold_map(&mut decision.extra, &mut count);
    for text in [
        &mut decision.reason,
        &mut decision.guard,
        &mut decision.session,
        &mut decision.target_session,
        &mut decision.delivery,
        &mut decision.conversation_id,
        &mut decision.agent,
    ]
    .into_iter()
    .flatten()
    {
        cut(text);
    }
    count
}

fn withhold_map(map: &mut Map<String, Value>, count: &mut usize) {
    for (key, value) in map.iter_mut() {
        if is_withheld_key(key) {
            match value {
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
                Value::String(_) | Value::Array(_) | Value::Object(_) => {
                    *value = Value::String(WITHHELD.to_owned());
                    *count += 1;
                }
            }
        } else {
            withhold_value(value, count);
        }
    }
}

fn withhold_value(value: &mut Value, count: &mut usize) {
    match value {
        Value::Object(map) => withhold_map(map, count),
        Value::Array(items) => items.iter_mut().for_each(|v| withhold_value(v, count)),
        Value::String(text) => cut(text),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn cut(text: &mut String) {
    if let Some((at, _)) = text.char_indices().nth(MAX_STRING_CHARS) {
        text.truncate(at);
        text.push('…');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_by_word() {
        for key in [
            "message",
            "reply_text",
            "replyText",
            "bot_token",
            "OPENAI_API_KEY",
            "child_env",
            "Authorization",
            "x-api-key",
            "prompt",
        ] {
            assert!(is_withheld_key(key), "{key}");
        }
        for key in [
            "guard",
            "hops_spent",
            "target_selected_by",
            "session_id",
            "pattern",
            "tokenizer_model", // one word, not "token"
            "environ_count",
        ] {
            assert!(!is_withheld_key(key), "{key}");
        }
    }
}
