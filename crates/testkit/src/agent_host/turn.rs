//! How the fake host runs a turn it accepted: per the session's [`TurnScript`], ask the model
//! endpoint and stream the reply back, or fail, cancel, wait for a tool confirmation first, go
//! silent, or send a frame too big for the client.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use ahp_types::actions::{
    ChatDeltaAction, ChatResponsePartAction, ChatToolCallReadyAction, ChatToolCallStartAction,
    ChatTurnCancelledAction, ChatTurnCompleteAction, StateAction,
};
use ahp_types::common::StringOrMarkdown;
use ahp_types::state::{MarkdownResponsePart, ResponsePart};
use serde_json::{Value, json};

use super::TurnScript;
use super::server::Shared;

/// The size of the oversized frame: 10 MB, above the client's 8 MiB limit.
const HUGE_FRAME_BYTES: usize = 10_000_000;
/// Deltas carry the answer in pieces of this many characters.
const DELTA_CHARS: usize = 8;

pub(crate) struct TurnRun {
    pub conn: u64,
    pub session: String,
    pub chat: String,
    pub turn_id: String,
    pub text: String,
    pub model: Option<String>,
    pub script: TurnScript,
}

fn to_value(action: StateAction) -> Value {
    serde_json::to_value(action).unwrap_or(Value::Null)
}

pub(crate) async fn run(shared: Arc<Shared>, turn: TurnRun) {
    let started = Instant::now();
    let duration = || i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    match &turn.script {
        TurnScript::Fail(message) => {
            let action = json!({"type": "chat/error", "turnId": turn.turn_id, "duration": duration(),
                "part": {"kind": "error", "error": {"errorType": "fake", "message": message}, "resumable": false}});
            shared.broadcast(&turn.chat, action, None);
            shared.finish_turn(&turn.chat, "error", "");
            return;
        }
        TurnScript::Cancel => {
            let action = to_value(StateAction::ChatTurnCancelled(ChatTurnCancelledAction {
                turn_id: turn.turn_id.clone(),
                duration: duration(),
                meta: None,
            }));
            shared.broadcast(&turn.chat, action, None);
            shared.finish_turn(&turn.chat, "cancelled", "");
            return;
        }
        TurnScript::Silent => return,
        TurnScript::HugeFrameAfterEcho => {
            let filler = "x".repeat(HUGE_FRAME_BYTES);
            shared.send_raw(
                turn.conn,
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"noise\",\"params\":{{\"x\":\"{filler}\"}}}}"
                ),
            );
            return;
        }
        TurnScript::AskApproval {
            tool_name,
            display_name,
            message,
        } => {
            let tool_call_id = format!("tool-{}", uuid::Uuid::new_v4().simple());
            shared.broadcast(
                &turn.chat,
                to_value(StateAction::ChatToolCallStart(ChatToolCallStartAction {
                    turn_id: turn.turn_id.clone(),
                    tool_call_id: tool_call_id.clone(),
                    meta: None,
                    tool_name: tool_name.clone(),
                    display_name: display_name.clone(),
                    intention: None,
                    contributor: None,
                })),
                None,
            );
            let options = shared
                .confirmation_options(&turn.session)
                .unwrap_or_else(|| {
                    json!([
                        {"id": "allow-once", "label": "Allow", "kind": "approve", "group": 0},
                        {"id": "deny", "label": "Deny", "kind": "deny", "group": 1},
                    ])
                });
            let ready = ChatToolCallReadyAction {
                turn_id: turn.turn_id.clone(),
                tool_call_id: tool_call_id.clone(),
                meta: None,
                contributor: None,
                intention: None,
                invocation_message: StringOrMarkdown::Plain(message.clone()),
                tool_input: None,
                confirmation_title: Some(StringOrMarkdown::Plain(format!("Run {display_name}?"))),
                risk_assessment: None,
                edits: None,
                editable: None,
                confirmed: None,
                options: serde_json::from_value(options.clone()).ok(),
            };
            shared.broadcast(
                &turn.chat,
                to_value(StateAction::ChatToolCallReady(ready)),
                None,
            );
            let request = json!({
                "kind": "toolConfirmation", "id": format!("input-{tool_call_id}"),
                "chat": turn.chat, "turnId": turn.turn_id,
                "toolCall": {"status": "pending-confirmation", "toolCallId": tool_call_id,
                    "toolName": tool_name, "displayName": display_name,
                    "invocationMessage": message, "confirmationTitle": format!("Run {display_name}?"),
                    "options": options},
            });
            let answer = shared.add_pending(
                &turn.session,
                &turn.chat,
                &turn.turn_id,
                &tool_call_id,
                request,
            );
            if answer.await.is_err() {
                return;
            }
        }
        TurnScript::Answer
        | TurnScript::GarbageFirst
        | TurnScript::DriftedEnd
        | TurnScript::Reject(_)
        | TurnScript::DropAfterDispatch
        | TurnScript::NoEcho => {}
    }
    let text = match ask_model(&shared, &turn).await {
        Ok(text) => text,
        Err(message) => {
            let action = json!({"type": "chat/error", "turnId": turn.turn_id, "duration": duration(),
                "part": {"kind": "error", "error": {"errorType": "model", "message": message}}});
            shared.broadcast(&turn.chat, action, None);
            shared.finish_turn(&turn.chat, "error", "");
            return;
        }
    };
    let part_id = format!("md-{}", turn.turn_id);
    shared.broadcast(
        &turn.chat,
        to_value(StateAction::ChatResponsePart(ChatResponsePartAction {
            turn_id: turn.turn_id.clone(),
            part: ResponsePart::Markdown(MarkdownResponsePart {
                id: part_id.clone(),
                content: String::new(),
            }),
            meta: None,
        })),
        None,
    );
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(DELTA_CHARS) {
        shared.broadcast(
            &turn.chat,
            to_value(StateAction::ChatDelta(ChatDeltaAction {
                turn_id: turn.turn_id.clone(),
                part_id: part_id.clone(),
                content: piece.iter().collect(),
                meta: None,
            })),
            None,
        );
    }
    shared.finish_turn(&turn.chat, "complete", &text);
    let end = if turn.script == TurnScript::DriftedEnd {
        json!({"type": "chat/turnComplete", "turnId": turn.turn_id, "duration": "a while"})
    } else {
        to_value(StateAction::ChatTurnComplete(ChatTurnCompleteAction {
            turn_id: turn.turn_id.clone(),
            duration: duration(),
            meta: None,
        }))
    };
    shared.completed.lock().push(super::CompletedTurn {
        turn_id: turn.turn_id.clone(),
        chat: turn.chat.clone(),
        at: SystemTime::now(),
    });
    shared.broadcast(&turn.chat, end, None);
}

/// The turn's text to the endpoint's Anthropic Messages route, not streamed; its text blocks.
async fn ask_model(shared: &Shared, turn: &TurnRun) -> Result<String, String> {
    let Some(url) = &shared.model_url else {
        return Err("the fake agent host has no model endpoint".to_owned());
    };
    let body = json!({
        "model": turn.model.as_deref().unwrap_or("claude-sonnet-4.5"),
        // A turn, not a side request: the endpoint takes short tool-less requests for titles.
        "max_tokens": 32000,
        "messages": [{"role": "user", "content": turn.text}],
    });
    let response = shared
        .http
        .post(url)
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("the model endpoint failed: {e}"))?;
    let status = response.status();
    let reply: Value = response
        .json()
        .await
        .map_err(|e| format!("the model endpoint answered something unreadable: {e}"))?;
    if !status.is_success() {
        return Err(format!("the model endpoint answered {status}: {reply}"));
    }
    Ok(reply["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect())
}
