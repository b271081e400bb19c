//! OpenAI-compatible Chat Completions replies (`POST …/chat/completions`), as OpenAI documents
//! them and xAI, OpenRouter, llama.cpp's `llama-server` and Ollama serve them: one
//! `chat.completion` object with a single choice whose `message` carries the text (and any
//! `tool_calls`), `finish_reason`, and `usage` in prompt/completion tokens. Only the whole
//! (non-streaming) answer is scripted; cross-agent's provider pool asks without streaming.

use serde_json::{Value, json};

use super::Answer;
use super::Part;

/// The whole `chat.completion` of a non-streamed reply.
pub(crate) fn whole(answer: &Answer) -> Value {
    let text: Vec<&str> = answer
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => Some(text.as_str()),
            Part::Tool { .. } => None,
        })
        .collect();
    let calls: Vec<Value> = answer
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Tool { id, call } => Some(json!({
                "id": id,
                "type": "function",
                "function": { "name": call.responses_name, "arguments": call.arguments.to_string() },
            })),
            Part::Text(_) => None,
        })
        .collect();
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() { Value::Null } else { json!(text.join("\n")) },
        "refusal": null,
    });
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    let output_tokens = answer.output_tokens();
    json!({
        "id": format!("chatcmpl-{}", answer.response_id),
        "object": "chat.completion",
        "created": answer.created_at,
        "model": answer.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" },
        }],
        "usage": {
            "prompt_tokens": answer.input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": answer.input_tokens + output_tokens,
        },
    })
}
