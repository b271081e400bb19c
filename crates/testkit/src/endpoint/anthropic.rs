//! Anthropic Messages replies in the shapes Claude Code 2.1.332 accepts.
//!
//! Streaming: `message_start` (a message with its own `id` — Claude merges replies that share
//! one — role `assistant`, the requested model, empty content, usage), then per content block
//! `content_block_start`, `content_block_delta` (`text_delta`, or `input_json_delta` carrying
//! `partial_json` for a `tool_use` block), `content_block_stop`, then `message_delta` with the
//! `stop_reason` (`tool_use` when the reply calls a tool, else `end_turn`) and `message_stop`.

use serde_json::{Value, json};

use super::Answer;
use super::Part;
use super::sse::Event;

/// The SSE events of a streamed reply.
pub(crate) fn stream(answer: &Answer) -> Vec<Event> {
    let mut events = vec![Event::new(
        "message_start",
        json!({
            "type": "message_start",
            "message": {
                "id": answer.message_id,
                "type": "message",
                "role": "assistant",
                "model": answer.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": start_usage(answer),
            },
        }),
    )];
    for (index, part) in answer.parts.iter().enumerate() {
        let (start, deltas) = match part {
            Part::Text(text) => (
                json!({ "type": "text", "text": "" }),
                answer
                    .chunks(text)
                    .into_iter()
                    .map(|chunk| json!({ "type": "text_delta", "text": chunk }))
                    .collect::<Vec<_>>(),
            ),
            Part::Tool { id, call } => {
                let arguments = call.arguments.to_string();
                (
                    json!({ "type": "tool_use", "id": id, "name": call.anthropic_name, "input": {} }),
                    answer
                        .chunks(&arguments)
                        .into_iter()
                        .map(|chunk| json!({ "type": "input_json_delta", "partial_json": chunk }))
                        .collect(),
                )
            }
        };
        events.push(Event::new(
            "content_block_start",
            json!({ "type": "content_block_start", "index": index, "content_block": start }),
        ));
        for delta in deltas {
            events.push(Event::new(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": index, "delta": delta }),
            ));
        }
        events.push(Event::new(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        ));
    }
    events.push(Event::new(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": { "stop_reason": stop_reason(answer), "stop_sequence": null },
            "usage": delta_usage(answer),
        }),
    ));
    events.push(Event::new(
        "message_stop",
        json!({ "type": "message_stop" }),
    ));
    events
}

/// The whole message of a non-streamed reply.
pub(crate) fn message(answer: &Answer) -> Value {
    let content: Vec<Value> = answer
        .parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => json!({ "type": "text", "text": text }),
            Part::Tool { id, call } => json!({
                "type": "tool_use", "id": id, "name": call.anthropic_name, "input": call.arguments,
            }),
        })
        .collect();
    json!({
        "id": answer.message_id,
        "type": "message",
        "role": "assistant",
        "model": answer.model,
        "content": content,
        "stop_reason": stop_reason(answer),
        "stop_sequence": null,
        "usage": final_usage(answer),
    })
}

/// An Anthropic error body; the `type` follows the status the way the real API maps them.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({ "type": "error", "error": { "type": kind, "message": message } })
}

/// The in-stream `error` event the real API sends when it fails mid-answer (typically
/// overloaded).
pub(crate) fn error_event(message: &str) -> Event {
    Event::new("error", error(529, message))
}

fn stop_reason(answer: &Answer) -> &'static str {
    if answer
        .parts
        .iter()
        .any(|part| matches!(part, Part::Tool { .. }))
    {
        "tool_use"
    } else {
        "end_turn"
    }
}

/// `message_start`'s usage: the input side whole, output 1 (as the API sends before any text).
fn start_usage(answer: &Answer) -> Value {
    match &answer.usage {
        Some(u) => chosen_usage(u, 1),
        None => usage(answer.input_tokens, 1),
    }
}

/// `message_delta`'s usage: the final output count (and the input side again, as the API does).
fn delta_usage(answer: &Answer) -> Value {
    match &answer.usage {
        Some(u) => chosen_usage(u, u.output),
        None => json!({ "output_tokens": answer.output_tokens() }),
    }
}

fn final_usage(answer: &Answer) -> Value {
    match &answer.usage {
        Some(u) => chosen_usage(u, u.output),
        None => usage(answer.input_tokens, answer.output_tokens()),
    }
}

fn chosen_usage(u: &super::script::ScriptedUsage, output_tokens: u64) -> Value {
    json!({
        "input_tokens": u.input,
        "cache_creation_input_tokens": u.cache_write_5m + u.cache_write_1h,
        "cache_read_input_tokens": u.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": u.cache_write_5m,
            "ephemeral_1h_input_tokens": u.cache_write_1h,
        },
        "output_tokens": output_tokens,
    })
}

fn usage(input_tokens: u64, output_tokens: u64) -> Value {
    json!({
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    })
}
