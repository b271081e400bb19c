//! OpenAI Responses replies in the shapes Codex 0.171.0 accepts.
//!
//! A stream opens with `response.created`; each output item gets `response.output_item.added`
//! and `response.output_item.done` (text also streams `response.output_text.delta` between
//! them, as the real API does), and `response.completed` closes it with the response id and
//! `usage`. A tool call is a `function_call` item with `call_id`, `name`, `arguments` (a JSON
//! string) and, for MCP tools, `namespace`: Codex offers MCP tools as a namespace tool and
//! rejects a flat name.

use serde_json::{Value, json};

use super::Answer;
use super::Part;
use super::sse::Event;

/// The SSE events of a streamed reply.
pub(crate) fn stream(answer: &Answer) -> Vec<Event> {
    let mut sequence = 0u64;
    let mut next = |name: &'static str, mut data: Value| {
        if let Value::Object(map) = &mut data {
            map.insert("type".into(), json!(name));
            map.insert("sequence_number".into(), json!(sequence));
        }
        sequence += 1;
        Event::new(name, data)
    };
    let mut events = vec![next(
        "response.created",
        json!({ "response": response(answer, "in_progress", Vec::new()) }),
    )];
    let mut output = Vec::new();
    for (index, part) in answer.parts.iter().enumerate() {
        let item = item(answer, index, part);
        match part {
            Part::Text(text) => {
                let item_id = item.get("id").cloned().unwrap_or(Value::Null);
                let mut opened = item.clone();
                opened["status"] = json!("in_progress");
                opened["content"] = json!([]);
                events.push(next(
                    "response.output_item.added",
                    json!({ "output_index": index, "item": opened }),
                ));
                events.push(next(
                    "response.content_part.added",
                    json!({
                        "item_id": item_id, "output_index": index, "content_index": 0,
                        "part": { "type": "output_text", "text": "", "annotations": [] },
                    }),
                ));
                for chunk in answer.chunks(text) {
                    events.push(next(
                        "response.output_text.delta",
                        json!({
                            "item_id": item_id, "output_index": index, "content_index": 0,
                            "delta": chunk,
                        }),
                    ));
                }
                events.push(next(
                    "response.output_text.done",
                    json!({
                        "item_id": item_id, "output_index": index, "content_index": 0,
                        "text": text,
                    }),
                ));
                events.push(next(
                    "response.content_part.done",
                    json!({
                        "item_id": item_id, "output_index": index, "content_index": 0,
                        "part": { "type": "output_text", "text": text, "annotations": [] },
                    }),
                ));
            }
            Part::Tool { .. } => {
                let mut opened = item.clone();
                opened["status"] = json!("in_progress");
                opened["arguments"] = json!("");
                events.push(next(
                    "response.output_item.added",
                    json!({ "output_index": index, "item": opened }),
                ));
            }
        }
        events.push(next(
            "response.output_item.done",
            json!({ "output_index": index, "item": item }),
        ));
        output.push(item);
    }
    events.push(next(
        "response.completed",
        json!({ "response": response(answer, "completed", output) }),
    ));
    events
}

/// The whole response object of a non-streamed reply.
pub(crate) fn whole(answer: &Answer) -> Value {
    let output = answer
        .parts
        .iter()
        .enumerate()
        .map(|(index, part)| item(answer, index, part))
        .collect();
    response(answer, "completed", output)
}

/// An OpenAI error body.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        400 => ("invalid_request_error", Value::Null),
        401 => ("invalid_request_error", json!("invalid_api_key")),
        404 => ("invalid_request_error", json!("model_not_found")),
        429 => ("rate_limit_exceeded", json!("rate_limit_exceeded")),
        _ => ("server_error", Value::Null),
    };
    json!({ "error": { "message": message, "type": kind, "param": null, "code": code } })
}

/// The `response.failed` event that ends a stream the server gave up on.
pub(crate) fn failed(answer: &Answer, sequence_number: usize, message: &str) -> Event {
    let mut response = response(answer, "failed", Vec::new());
    response["error"] = json!({ "code": "server_error", "message": message });
    Event::new(
        "response.failed",
        json!({
            "type": "response.failed",
            "sequence_number": sequence_number,
            "response": response,
        }),
    )
}

fn item(answer: &Answer, index: usize, part: &Part) -> Value {
    match part {
        Part::Text(text) => json!({
            "type": "message",
            "id": format!("msg_{}_{index}", answer.message_id),
            "role": "assistant",
            "status": "completed",
            "content": [{ "type": "output_text", "text": text, "annotations": [] }],
        }),
        Part::Tool { id, call } => {
            let mut item = json!({
                "type": "function_call",
                "id": format!("fc_{id}"),
                "call_id": id,
                "name": call.responses_name,
                "arguments": call.arguments.to_string(),
                "status": "completed",
            });
            if let Some(namespace) = &call.responses_namespace {
                item["namespace"] = json!(namespace);
            }
            item
        }
    }
}

fn response(answer: &Answer, status: &str, output: Vec<Value>) -> Value {
    let mut response = json!({
        "id": answer.response_id,
        "object": "response",
        "created_at": answer.created_at,
        "status": status,
        "model": answer.model,
        "output": output,
    });
    if status == "completed"
        && let Some(u) = &answer.usage
    {
        // Responses counts cached input inside `input_tokens`.
        let input = u.input + u.cache_read;
        response["usage"] = json!({
            "input_tokens": input,
            "input_tokens_details": { "cached_tokens": u.cache_read },
            "output_tokens": u.output,
            "output_tokens_details": { "reasoning_tokens": u.reasoning },
            "total_tokens": input + u.output,
        });
    } else if status == "completed" {
        let output_tokens = answer.output_tokens();
        response["usage"] = json!({
            "input_tokens": answer.input_tokens,
            "input_tokens_details": { "cached_tokens": 0 },
            "output_tokens": output_tokens,
            "output_tokens_details": { "reasoning_tokens": 0 },
            "total_tokens": answer.input_tokens + output_tokens,
        });
    }
    response
}
