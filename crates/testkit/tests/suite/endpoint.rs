//! The scripted model endpoint on its own, driven over real HTTP on loopback: the wire shapes
//! of both APIs, the script's rules and failure modes, and what it records.

// Helpers here panic on a broken answer just as the tests do; clippy's test allowance only
// covers `#[test]` functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use cross_agent_testkit::endpoint::{
    Api, EndpointConfig, InputKind, ModelEndpoint, Reply, Rule, ToolCall,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .expect("reqwest client")
}

/// A Claude-Code-like Messages request: tools, a `<system-reminder>` block before the prompt,
/// and a trailing `system` message.
fn anthropic_request(prompt: &str, stream: bool) -> Value {
    json!({
        "model": "claude-test-model",
        "max_tokens": 32000,
        "stream": stream,
        "system": [
            { "type": "text", "text": "You are a Claude agent." },
            { "type": "text", "text": "Be brief." },
        ],
        "tools": [
            { "name": "Bash", "description": "run", "input_schema": { "type": "object" } },
            { "name": "mcp__probe__echo", "description": "echo", "input_schema": { "type": "object" } },
        ],
        "messages": [
            { "role": "user", "content": [
                { "type": "text", "text": "<system-reminder>\ncontext here\n</system-reminder>" },
                { "type": "text", "text": prompt },
            ]},
            { "role": "system", "content": [{ "type": "text", "text": "# Environment" }] },
        ],
    })
}

/// The follow-up request after a tool call: the assistant's `tool_use`, then the result.
fn anthropic_tool_result_request(prompt: &str, result: &str) -> Value {
    let mut request = anthropic_request(prompt, true);
    let messages = request["messages"].as_array_mut().expect("messages");
    messages.pop(); // the trailing system entry moves to the end again below
    messages.push(json!({ "role": "assistant", "content": [
        { "type": "tool_use", "id": "toolu_1", "name": "Bash", "input": { "command": "true" } },
    ]}));
    messages.push(json!({ "role": "user", "content": [
        { "type": "tool_result", "tool_use_id": "toolu_1",
          "content": [{ "type": "text", "text": result }] },
        { "type": "text", "text": "<system-reminder>keep going</system-reminder>" },
    ]}));
    messages.push(json!({ "role": "system", "content": "# Environment" }));
    request
}

/// A Codex-like Responses request.
fn responses_request(prompt: &str) -> Value {
    json!({
        "model": "test-model",
        "stream": true,
        "instructions": null,
        "tools": [
            { "type": "function", "name": "exec_command", "parameters": { "type": "object" } },
            { "type": "namespace", "name": "mcp__cross_agent", "tools": [
                { "type": "function", "name": "echo", "parameters": { "type": "object" } },
            ]},
            { "type": "web_search" },
        ],
        "input": [
            { "type": "message", "role": "developer",
              "content": [{ "type": "input_text", "text": "You are a coding agent." }] },
            { "type": "message", "role": "user",
              "content": [{ "type": "input_text", "text": "<environment_context>cwd</environment_context>" }] },
            { "type": "message", "role": "user",
              "content": [{ "type": "input_text", "text": prompt }] },
        ],
    })
}

fn responses_tool_result_request(prompt: &str, output: &str) -> Value {
    let mut request = responses_request(prompt);
    let input = request["input"].as_array_mut().expect("input");
    input.push(
        json!({ "type": "function_call", "call_id": "call_1", "name": "echo",
                       "namespace": "mcp__cross_agent", "arguments": "{}" }),
    );
    input.push(json!({ "type": "function_call_output", "call_id": "call_1", "output": output }));
    request
}

/// Parses an SSE body into (event name, JSON data) pairs, checking the framing of each.
fn parse_sse(body: &str) -> Vec<(String, Value)> {
    assert!(
        body.ends_with("\n\n"),
        "SSE body does not end with a blank line: {body:?}"
    );
    body.split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            let mut lines = frame.lines();
            let name = lines
                .next()
                .and_then(|line| line.strip_prefix("event: "))
                .unwrap_or_else(|| panic!("frame without an event line: {frame:?}"));
            let data = lines
                .next()
                .and_then(|line| line.strip_prefix("data: "))
                .unwrap_or_else(|| panic!("frame without a data line: {frame:?}"));
            assert_eq!(lines.next(), None, "extra lines in frame {frame:?}");
            let data: Value = serde_json::from_str(data).expect("data is JSON");
            (name.to_owned(), data)
        })
        .collect()
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

async fn post(url: String, body: &Value) -> reqwest::Response {
    client()
        .post(url)
        .json(body)
        .send()
        .await
        .expect("request sent")
}

async fn post_sse(url: String, body: &Value) -> Vec<(String, Value)> {
    let response = post(url, body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    parse_sse(&response.text().await.expect("body"))
}

fn messages_url(endpoint: &ModelEndpoint) -> String {
    format!("{}/v1/messages?beta=true", endpoint.anthropic_base_url())
}

fn responses_url(endpoint: &ModelEndpoint) -> String {
    format!("{}/responses", endpoint.openai_base_url())
}

/// The text an Anthropic event stream spells out.
fn anthropic_text(events: &[(String, Value)]) -> String {
    events
        .iter()
        .filter_map(|(_, data)| data["delta"]["text"].as_str())
        .collect()
}

#[tokio::test]
async fn anthropic_stream_has_the_shape_claude_code_accepts() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("hello").reply_text("hi there"));

    let events = post_sse(messages_url(&endpoint), &anthropic_request("hello", true)).await;

    assert_eq!(
        names(&events),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let message = &events[0].1["message"];
    assert_eq!(events[0].1["type"], "message_start");
    assert!(message["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["model"], "claude-test-model");
    assert_eq!(message["content"], json!([]));
    assert!(message["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        events[1].1,
        json!({ "type": "content_block_start", "index": 0,
                "content_block": { "type": "text", "text": "" } })
    );
    assert_eq!(
        events[2].1,
        json!({ "type": "content_block_delta", "index": 0,
                "delta": { "type": "text_delta", "text": "hi there" } })
    );
    assert_eq!(
        events[3].1,
        json!({ "type": "content_block_stop", "index": 0 })
    );
    assert_eq!(events[4].1["delta"]["stop_reason"], "end_turn");
    assert!(events[4].1["usage"]["output_tokens"].as_u64().unwrap() > 0);
    assert_eq!(events[5].1, json!({ "type": "message_stop" }));

    // Claude merges replies that share an id: every reply gets its own.
    let again = post_sse(messages_url(&endpoint), &anthropic_request("hello", true)).await;
    assert_ne!(again[0].1["message"]["id"], message["id"]);
}

#[tokio::test]
async fn anthropic_tool_use_streams_input_json_deltas() {
    let endpoint = ModelEndpoint::start().unwrap();
    let arguments = json!({ "command": "echo hello", "description": "say hello" });
    endpoint.push(
        Rule::on_user_text("run it").reply(
            Reply::text("Running.")
                .then_tool_call(ToolCall::new("Bash", arguments.clone()))
                .chunk_chars(7),
        ),
    );

    let events = post_sse(messages_url(&endpoint), &anthropic_request("run it", true)).await;

    let tool_start = events
        .iter()
        .find(|(name, data)| {
            name == "content_block_start" && data["content_block"]["type"] == "tool_use"
        })
        .expect("a tool_use block");
    assert_eq!(tool_start.1["index"], 1);
    assert_eq!(tool_start.1["content_block"]["name"], "Bash");
    assert_eq!(tool_start.1["content_block"]["input"], json!({}));
    assert!(
        tool_start.1["content_block"]["id"]
            .as_str()
            .unwrap()
            .starts_with("toolu_")
    );
    let partial: String = events
        .iter()
        .filter(|(_, data)| data["delta"]["type"] == "input_json_delta")
        .map(|(_, data)| {
            assert_eq!(data["index"], 1);
            data["delta"]["partial_json"].as_str().unwrap()
        })
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&partial).unwrap(), arguments);
    let text_deltas = events
        .iter()
        .filter(|(_, data)| data["delta"]["type"] == "text_delta")
        .count();
    assert_eq!(text_deltas, 2, "\"Running.\" in chunks of 7");
    assert_eq!(anthropic_text(&events), "Running.");
    let stop = events
        .iter()
        .find(|(name, _)| name == "message_delta")
        .unwrap();
    assert_eq!(stop.1["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn anthropic_non_streaming_answers_a_whole_message() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("plain").reply_text("plain answer"),
        Rule::on_user_text("tool").tool_call(ToolCall::mcp("cross-agent", "echo", json!({"a": 1}))),
    ]);

    let response = post(messages_url(&endpoint), &anthropic_request("plain", false)).await;
    assert_eq!(response.status(), 200);
    let message: Value = response.json().await.unwrap();
    assert!(message["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["model"], "claude-test-model");
    assert_eq!(
        message["content"],
        json!([{ "type": "text", "text": "plain answer" }])
    );
    assert_eq!(message["stop_reason"], "end_turn");

    let message: Value = post(messages_url(&endpoint), &anthropic_request("tool", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["content"][0]["type"], "tool_use");
    assert_eq!(message["content"][0]["name"], "mcp__cross-agent__echo");
    assert_eq!(message["content"][0]["input"], json!({"a": 1}));
}

#[tokio::test]
async fn count_tokens_answers_a_count() {
    let endpoint = ModelEndpoint::start().unwrap();
    let url = format!("{}/v1/messages/count_tokens?beta=true", endpoint.base_url());

    let response = post(url, &anthropic_request("count me", false)).await;

    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert!(body["input_tokens"].as_u64().unwrap() > 0, "{body}");
    let recorded = endpoint.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].api, Api::CountTokens);
    assert!(
        endpoint.model_requests().is_empty(),
        "a count is not a model request"
    );
}

#[tokio::test]
async fn responses_stream_has_the_shape_codex_accepts() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("hello").reply_text("hi from responses"));

    let events = post_sse(responses_url(&endpoint), &responses_request("hello")).await;

    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (index, (name, data)) in events.iter().enumerate() {
        assert_eq!(&data["type"], name);
        assert_eq!(data["sequence_number"], index);
    }
    let created = &events[0].1["response"];
    let response_id = created["id"].as_str().unwrap();
    assert!(response_id.starts_with("resp_"));
    assert_eq!(created["model"], "test-model");
    assert_eq!(events[3].1["delta"], "hi from responses");
    let item = &events[6].1["item"];
    assert_eq!(item["type"], "message");
    assert_eq!(item["role"], "assistant");
    assert_eq!(
        item["content"],
        json!([{ "type": "output_text", "text": "hi from responses", "annotations": [] }])
    );
    let completed = &events[7].1["response"];
    assert_eq!(completed["id"], response_id);
    assert_eq!(completed["status"], "completed");
    let usage = &completed["usage"];
    let (input, output) = (
        usage["input_tokens"].as_u64().unwrap(),
        usage["output_tokens"].as_u64().unwrap(),
    );
    assert!(input > 0 && output > 0);
    assert_eq!(usage["total_tokens"], input + output);
    assert_eq!(completed["output"], json!([item]));
}

#[tokio::test]
async fn responses_function_call_carries_namespace_call_id_and_string_arguments() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("mcp").tool_call(ToolCall::mcp(
            "cross-agent",
            "echo",
            json!({ "text": "ping" }),
        )),
        Rule::on_user_text("flat").tool_call(ToolCall::new("exec_command", json!({ "cmd": "ls" }))),
    ]);

    let events = post_sse(responses_url(&endpoint), &responses_request("mcp")).await;

    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let item = &events[2].1["item"];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "echo");
    assert_eq!(item["namespace"], "mcp__cross_agent");
    assert!(item["call_id"].as_str().unwrap().starts_with("call_"));
    let arguments = item["arguments"]
        .as_str()
        .expect("arguments is a JSON string");
    assert_eq!(
        serde_json::from_str::<Value>(arguments).unwrap(),
        json!({ "text": "ping" })
    );
    assert_eq!(events[1].1["item"]["call_id"], item["call_id"]);

    let events = post_sse(responses_url(&endpoint), &responses_request("flat")).await;
    let item = &events[2].1["item"];
    assert_eq!(item["name"], "exec_command");
    assert_eq!(item.get("namespace"), None);
}

#[tokio::test]
async fn responses_non_streaming_answers_a_whole_response() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("hello").reply_text("whole"));
    let mut request = responses_request("hello");
    request["stream"] = json!(false);

    let response: Value = post(responses_url(&endpoint), &request)
        .await
        .json()
        .await
        .unwrap();

    assert_eq!(response["object"], "response");
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"][0]["content"][0]["text"], "whole");
}

#[tokio::test]
async fn an_agent_loop_calls_the_tool_once_then_answers_from_its_result() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("check the weather").tool_call(ToolCall::new("Bash", json!({}))),
        Rule::on_tool_result("sunny").reply_text("It is sunny."),
    ]);

    let first = post_sse(
        messages_url(&endpoint),
        &anthropic_request("check the weather", true),
    )
    .await;
    assert!(
        first
            .iter()
            .any(|(_, data)| data["content_block"]["type"] == "tool_use")
    );
    // The follow-up still has the prompt as its last user *text*, but its newest input is the
    // tool's result: the user-text rule must not fire again.
    let second = post_sse(
        messages_url(&endpoint),
        &anthropic_tool_result_request("check the weather", "sunny, 21°C"),
    )
    .await;
    assert_eq!(anthropic_text(&second), "It is sunny.");
    // A result no rule covers gets the fallback rather than the tool call again.
    let third = post_sse(
        messages_url(&endpoint),
        &anthropic_tool_result_request("check the weather", "rain"),
    )
    .await;
    assert_eq!(anthropic_text(&third), "scripted: no rule matched");

    let recorded = endpoint.model_requests();
    assert_eq!(recorded[1].newest_input, InputKind::ToolResult);
    assert_eq!(recorded[1].last_tool_result.as_deref(), Some("sunny, 21°C"));
    assert_eq!(
        recorded
            .iter()
            .map(|request| request.answered_by.clone().unwrap())
            .collect::<Vec<_>>(),
        ["rule #0", "rule #1", "fallback"]
    );
}

#[tokio::test]
async fn responses_tool_results_match_tool_result_rules() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("go").tool_call(ToolCall::mcp("cross-agent", "echo", json!({}))),
        Rule::on_tool_result("echoed").reply_text("done"),
    ]);

    let events = post_sse(
        responses_url(&endpoint),
        &responses_tool_result_request("go", "echoed:ping"),
    )
    .await;

    assert_eq!(events[6].1["item"]["content"][0]["text"], "done");
    let recorded = &endpoint.model_requests()[0];
    assert_eq!(recorded.newest_input, InputKind::ToolResult);
    assert_eq!(recorded.last_tool_result.as_deref(), Some("echoed:ping"));
    assert_eq!(recorded.last_user_text.as_deref(), Some("go"));
}

#[tokio::test]
async fn one_shot_rules_are_used_up_and_repeating_rules_are_not() {
    let endpoint =
        ModelEndpoint::start_with(EndpointConfig::default().fallback(Reply::text("nothing left")))
            .unwrap();
    endpoint.script([
        Rule::on_user_text("ask").reply_text("first answer").once(),
        Rule::on_user_text("ask")
            .reply_text("second answer")
            .times(2),
        Rule::on_user_text("ask")
            .reply_text("forever")
            .label("repeating"),
    ]);

    let mut answers = Vec::new();
    for _ in 0..5 {
        let events = post_sse(messages_url(&endpoint), &anthropic_request("ask", true)).await;
        answers.push(anthropic_text(&events));
    }

    assert_eq!(
        answers,
        [
            "first answer",
            "second answer",
            "second answer",
            "forever",
            "forever"
        ]
    );
    let left: Vec<_> = endpoint.rules().iter().map(Rule::remaining).collect();
    assert_eq!(left, [Some(0), Some(0), None]);
    assert_eq!(
        endpoint.model_requests()[4].answered_by.as_deref(),
        Some("rule #2 (repeating)")
    );
    endpoint.clear_rules();
    let events = post_sse(messages_url(&endpoint), &anthropic_request("ask", true)).await;
    assert_eq!(anthropic_text(&events), "nothing left");
}

#[tokio::test]
async fn first_match_wins_and_contains_all_needs_every_needle() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text_all(["alpha", "beta"]).reply_text("both"),
        Rule::on_user_text("alpha").reply_text("alpha only"),
        Rule::on_any_user_text().reply_text("anything"),
    ]);

    let mut answers = Vec::new();
    for prompt in ["beta then alpha", "alpha", "gamma"] {
        let events = post_sse(messages_url(&endpoint), &anthropic_request(prompt, true)).await;
        answers.push(anthropic_text(&events));
    }

    assert_eq!(answers, ["both", "alpha only", "anything"]);
}

#[tokio::test]
async fn rules_can_be_limited_to_one_api() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("hi")
            .reply_text("claude side")
            .for_api(Api::Anthropic),
        Rule::on_user_text("hi")
            .reply_text("codex side")
            .for_api(Api::Responses),
    ]);

    let claude = post_sse(messages_url(&endpoint), &anthropic_request("hi", true)).await;
    let codex = post_sse(responses_url(&endpoint), &responses_request("hi")).await;

    assert_eq!(anthropic_text(&claude), "claude side");
    assert_eq!(codex[3].1["delta"], "codex side");
}

#[tokio::test]
async fn side_requests_skip_rules_unless_they_opt_in() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_user_text("fix the bug")
            .reply_text("turn answer")
            .once(),
    );
    // A title request quotes the prompt but offers no tools and wants a short answer; a quota
    // probe asks for one token.
    let mut title = anthropic_request("Write a title for: fix the bug", true);
    title.as_object_mut().unwrap().remove("tools");
    title["max_tokens"] = json!(512);
    let mut quota = anthropic_request("fix the bug", true);
    quota["max_tokens"] = json!(1);
    // `claude -p --tools ""` offers no tools either, but asks for a turn's worth of tokens.
    let mut toolless_turn = anthropic_request("fix the bug", true);
    toolless_turn.as_object_mut().unwrap().remove("tools");

    let title_events = post_sse(messages_url(&endpoint), &title).await;
    let quota_events = post_sse(messages_url(&endpoint), &quota).await;
    let turn = post_sse(messages_url(&endpoint), &toolless_turn).await;

    assert_eq!(anthropic_text(&title_events), "scripted side reply");
    assert_eq!(anthropic_text(&quota_events), "scripted side reply");
    assert_eq!(
        anthropic_text(&turn),
        "turn answer",
        "the one-shot rule was kept for the turn"
    );
    let side: Vec<_> = endpoint
        .model_requests()
        .iter()
        .map(|request| request.side_request)
        .collect();
    assert_eq!(side, [true, true, false]);

    endpoint.push(
        Rule::on_user_text("Write a title")
            .reply_text("Bug fix")
            .include_side_requests(),
    );
    let title_events = post_sse(messages_url(&endpoint), &title).await;
    assert_eq!(anthropic_text(&title_events), "Bug fix");
}

#[tokio::test]
async fn a_delay_holds_the_answer_back() {
    let endpoint = ModelEndpoint::start().unwrap();
    let delay = Duration::from_millis(300);
    endpoint.push(Rule::on_user_text("slow").reply(Reply::text("late").delay(delay)));

    let started = Instant::now();
    let events = post_sse(messages_url(&endpoint), &anthropic_request("slow", true)).await;

    assert!(
        started.elapsed() >= delay,
        "answered after {:?}",
        started.elapsed()
    );
    assert_eq!(anthropic_text(&events), "late");
}

#[tokio::test]
async fn chunk_delay_streams_text_piece_by_piece() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_user_text("stream").reply(
            Reply::text("one two three")
                .chunk_chars(4)
                .chunk_delay(Duration::from_millis(100)),
        ),
    );

    let mut response = post(messages_url(&endpoint), &anthropic_request("stream", true)).await;
    // The first event arrives on its own, well before the rest of the stream.
    let first = response.chunk().await.unwrap().expect("a first chunk");
    assert!(String::from_utf8_lossy(&first).starts_with("event: message_start\n"));
    let mut rest = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        rest.extend_from_slice(&chunk);
    }
    let mut body = String::from_utf8_lossy(&first).into_owned();
    body.push_str(&String::from_utf8_lossy(&rest));
    let events = parse_sse(&body);

    let deltas: Vec<_> = events
        .iter()
        .filter_map(|(_, data)| data["delta"]["text"].as_str())
        .collect();
    assert_eq!(deltas, ["one ", "two ", "thre", "e"]);
}

#[tokio::test]
async fn a_hang_never_answers_and_the_request_is_still_recorded() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("stuck").reply(Reply::hang()));

    let result = client()
        .post(messages_url(&endpoint))
        .timeout(Duration::from_millis(500))
        .json(&anthropic_request("stuck", true))
        .send()
        .await;

    let error = result.expect_err("a hung request must not answer");
    assert!(error.is_timeout(), "{error:?}");
    let recorded = endpoint.wait_for_requests_async(1, WAIT).await.unwrap();
    assert_eq!(
        recorded[0]
            .last_user_text
            .as_deref()
            .map(|t| t.ends_with("stuck")),
        Some(true)
    );
}

#[tokio::test]
async fn hang_after_events_starts_the_stream_then_goes_silent() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_user_text("stall").reply(Reply::text("never finished").hang_after_events(2)),
    );

    let mut response = post(messages_url(&endpoint), &anthropic_request("stall", true)).await;
    assert_eq!(response.status(), 200);
    let mut body = Vec::new();
    let stalled = tokio::time::timeout(Duration::from_millis(500), async {
        while let Some(chunk) = response.chunk().await.unwrap() {
            body.extend_from_slice(&chunk);
        }
    })
    .await;

    assert!(stalled.is_err(), "the stream must not end");
    let events = parse_sse(&String::from_utf8(body).unwrap());
    assert_eq!(names(&events), ["message_start", "content_block_start"]);
}

#[tokio::test]
async fn a_dropped_connection_answers_nothing() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("drop").reply(Reply::drop_connection()));

    let result = client()
        .post(messages_url(&endpoint))
        .json(&anthropic_request("drop", true))
        .send()
        .await;

    let error = result.expect_err("no response before the connection closes");
    assert!(!error.is_timeout(), "closed, not timed out: {error:?}");
    assert_eq!(endpoint.model_requests().len(), 1);
}

#[tokio::test]
async fn a_drop_mid_stream_breaks_the_body_after_some_events() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint
        .push(Rule::on_user_text("cut").reply(Reply::text("half an answer").drop_after_events(3)));

    let mut response = post(responses_url(&endpoint), &responses_request("cut")).await;
    assert_eq!(response.status(), 200);
    let mut body = Vec::new();
    let error = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => panic!("the stream ended cleanly"),
            Err(error) => break error,
        }
    };

    assert!(!error.is_timeout(), "{error:?}");
    let events = parse_sse(&String::from_utf8(body).unwrap());
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.output_item.added",
            "response.content_part.added"
        ]
    );
}

#[tokio::test]
async fn http_errors_carry_api_shaped_bodies() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("boom").reply(Reply::http_error(500, "scripted boom")),
        Rule::on_user_text("busy").reply(Reply::http_error(529, "too busy").no_retry()),
    ]);

    let response = post(messages_url(&endpoint), &anthropic_request("boom", true)).await;
    assert_eq!(response.status(), 500);
    assert_eq!(response.headers().get("x-should-retry"), None);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({ "type": "error", "error": { "type": "api_error", "message": "scripted boom" } })
    );

    let response = post(messages_url(&endpoint), &anthropic_request("busy", true)).await;
    assert_eq!(response.status(), 529);
    assert_eq!(response.headers()["x-should-retry"], "false");
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"]["type"],
        "overloaded_error"
    );

    let response = post(responses_url(&endpoint), &responses_request("boom")).await;
    assert_eq!(response.status(), 500);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({ "error": { "message": "scripted boom", "type": "server_error",
                           "param": null, "code": null } })
    );
}

#[tokio::test]
async fn echo_token_ends_the_reply_with_the_prompts_request_token() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_any_user_text().reply(Reply::echo_token("Done.")));

    let claude = post_sse(
        messages_url(&endpoint),
        &anthropic_request("Please answer. [req_1795992544448_a1b2c3]", true),
    )
    .await;
    let codex = post_sse(
        responses_url(&endpoint),
        &responses_request("token req_1795992544449_zZ9yX8 here"),
    )
    .await;
    let none = post_sse(
        messages_url(&endpoint),
        &anthropic_request("no token", true),
    )
    .await;

    assert_eq!(anthropic_text(&claude), "Done.\nreq_1795992544448_a1b2c3");
    assert_eq!(codex[3].1["delta"], "Done.\nreq_1795992544449_zZ9yX8");
    assert_eq!(anthropic_text(&none), "Done.\nno request token");
}

#[tokio::test]
async fn echo_token_pattern_is_configurable() {
    let endpoint =
        ModelEndpoint::start_with(EndpointConfig::default().token_pattern(r"ticket-[0-9]+"))
            .unwrap();
    endpoint.push(Rule::on_any_user_text().reply(Reply::echo_token("")));

    let events = post_sse(
        messages_url(&endpoint),
        &anthropic_request("see ticket-12 and ticket-345", true),
    )
    .await;

    assert_eq!(anthropic_text(&events), "ticket-345");
    assert!(ModelEndpoint::start_with(EndpointConfig::default().token_pattern("(")).is_err());
}

#[tokio::test]
async fn anthropic_requests_are_recorded_with_what_tests_assert_on() {
    let endpoint = ModelEndpoint::start().unwrap();

    post_sse(
        messages_url(&endpoint),
        &anthropic_request("the real prompt", true),
    )
    .await;

    let recorded = endpoint.wait_for_requests_async(1, WAIT).await.unwrap();
    let request = &recorded[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.query.as_deref(), Some("beta=true"));
    assert_eq!(request.api, Api::Anthropic);
    assert_eq!(request.model.as_deref(), Some("claude-test-model"));
    assert!(request.stream);
    assert_eq!(request.max_tokens, Some(32000));
    assert_eq!(
        request.system.as_deref(),
        Some("You are a Claude agent.\nBe brief.")
    );
    assert_eq!(request.tools, ["Bash", "mcp__probe__echo"]);
    // The last *user* message, past the trailing system entry, all its text blocks.
    assert_eq!(
        request.last_user_text.as_deref(),
        Some("<system-reminder>\ncontext here\n</system-reminder>\nthe real prompt")
    );
    assert_eq!(request.last_user_prompt.as_deref(), Some("the real prompt"));
    assert_eq!(request.newest_input, InputKind::UserText);
    assert_eq!(request.last_tool_result, None);
    assert_eq!(request.messages.len(), 2);
    assert_eq!(request.body, anthropic_request("the real prompt", true));
    assert_eq!(request.header("Content-Type"), Some("application/json"));
    assert!(!request.side_request);
    assert_eq!(request.answered_by.as_deref(), Some("fallback"));
}

#[tokio::test]
async fn responses_requests_are_recorded_with_namespaces_and_codex_headers() {
    let endpoint = ModelEndpoint::start().unwrap();
    let metadata = json!({ "session_id": "s-1", "thread_id": "t-1", "request_kind": "turn" });

    client()
        .post(responses_url(&endpoint))
        .header("x-codex-turn-metadata", metadata.to_string())
        .header("session-id", "s-1")
        .json(&responses_request("codex prompt"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();

    let request = &endpoint.model_requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.api, Api::Responses);
    assert_eq!(request.model.as_deref(), Some("test-model"));
    assert_eq!(
        request.tools,
        [
            "exec_command",
            "mcp__cross_agent",
            "mcp__cross_agent__echo",
            "web_search"
        ]
    );
    assert_eq!(request.last_user_text.as_deref(), Some("codex prompt"));
    assert_eq!(request.newest_input, InputKind::UserText);
    assert_eq!(request.messages.len(), 3);
    assert_eq!(request.header_json("x-codex-turn-metadata"), Some(metadata));
    assert_eq!(request.header("session-id"), Some("s-1"));
}

#[tokio::test]
async fn probes_and_unknown_routes_are_answered_harmlessly_and_recorded() {
    let endpoint = ModelEndpoint::start().unwrap();
    let client = client();

    let models = client
        .get(format!("{}/models", endpoint.openai_base_url()))
        .send()
        .await
        .unwrap();
    let hello = client
        .head(format!("{}/api/hello", endpoint.base_url()))
        .send()
        .await
        .unwrap();
    let unknown = client
        .get(format!("{}/v1/whatever?x=1", endpoint.base_url()))
        .send()
        .await
        .unwrap();

    assert_eq!(models.status(), 200);
    assert_eq!(models.json::<Value>().await.unwrap()["data"], json!([]));
    assert_eq!(hello.status(), 404);
    assert_eq!(unknown.status(), 404);
    assert_eq!(
        unknown.json::<Value>().await.unwrap()["error"]["type"],
        "not_found_error"
    );
    let recorded: Vec<_> = endpoint
        .requests()
        .iter()
        .map(|request| (request.method.clone(), request.path.clone(), request.api))
        .collect();
    assert_eq!(
        recorded,
        [
            ("GET".to_owned(), "/v1/models".to_owned(), Api::Other),
            ("HEAD".to_owned(), "/api/hello".to_owned(), Api::Other),
            ("GET".to_owned(), "/v1/whatever".to_owned(), Api::Other),
        ]
    );
    assert!(endpoint.model_requests().is_empty());
}

/// The handle works from plain synchronous test code: script, send, wait, read.
#[test]
fn works_from_a_plain_sync_test() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("sync").reply_text("sync answer"));

    let body = anthropic_request("sync", false).to_string();
    let mut stream = std::net::TcpStream::connect(endpoint.addr()).unwrap();
    write!(
        stream,
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();

    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.contains("sync answer"), "{response}");
    let recorded = endpoint.wait_for_requests(1, WAIT).unwrap();
    assert_eq!(
        recorded[0]
            .last_user_text
            .as_deref()
            .map(|t| t.ends_with("sync")),
        Some(true)
    );
    let error = endpoint
        .wait_for_requests(2, Duration::from_millis(100))
        .unwrap_err();
    assert!(
        format!("{error:#}").contains("POST /v1/messages"),
        "{error:#}"
    );
}

/// Dropping the endpoint inside an async test stops it even while a request hangs.
#[tokio::test]
async fn dropping_the_endpoint_cuts_off_hanging_requests() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_any().reply(Reply::hang()));
    let url = messages_url(&endpoint);
    let pending = tokio::spawn(async move { post_result(url).await });
    endpoint.wait_for_requests_async(1, WAIT).await.unwrap();

    drop(endpoint);

    let result = tokio::time::timeout(WAIT, pending).await.unwrap().unwrap();
    let error = result.expect_err("the connection closes without an answer");
    assert!(!error.is_timeout(), "{error:?}");
}

async fn post_result(url: String) -> Result<reqwest::Response, reqwest::Error> {
    client()
        .post(url)
        .json(&anthropic_request("anything", true))
        .send()
        .await
}

#[tokio::test]
async fn parallel_tool_results_read_as_one_and_earlier_steps_do_not_rematch() {
    let endpoint = ModelEndpoint::start().unwrap();
    let mut parallel = responses_request("go");
    let input = parallel["input"].as_array_mut().unwrap();
    for call in ["call_1", "call_2"] {
        input.push(
            json!({ "type": "function_call", "call_id": call, "name": "exec_command",
                           "arguments": "{}" }),
        );
    }
    for (call, output) in [("call_1", "first-result"), ("call_2", "second-result")] {
        input.push(json!({ "type": "function_call_output", "call_id": call, "output": output }));
    }
    // Two sequential steps: the first step's result is history by the second.
    let mut sequential = responses_tool_result_request("go", "step-one-result");
    let input = sequential["input"].as_array_mut().unwrap();
    input.push(
        json!({ "type": "function_call", "call_id": "call_2", "name": "exec_command",
                       "arguments": "{}" }),
    );
    input.push(json!({ "type": "function_call_output", "call_id": "call_2",
                       "output": [{ "type": "input_text", "text": "step-two-result" }] }));

    post_sse(responses_url(&endpoint), &parallel).await;
    post_sse(responses_url(&endpoint), &sequential).await;

    let results: Vec<_> = endpoint
        .model_requests()
        .into_iter()
        .map(|request| request.last_tool_result)
        .collect();
    assert_eq!(
        results,
        [
            Some("first-result\nsecond-result".to_owned()),
            Some("step-two-result".to_owned()),
        ]
    );
}

#[tokio::test]
async fn user_text_rules_ignore_words_in_system_reminders() {
    let endpoint = ModelEndpoint::start().unwrap();
    // "context" is only in the `<system-reminder>` block Claude puts before the prompt.
    endpoint.push(Rule::on_user_text("context").reply_text("wrongly matched"));
    let mut inline = anthropic_request("", true);
    inline["messages"][0]["content"] = json!(
        "<system-reminder>context</system-reminder>\nreal words <system-reminder>more context"
    );

    let events = post_sse(messages_url(&endpoint), &anthropic_request("hello", true)).await;
    post_sse(messages_url(&endpoint), &inline).await;

    assert_eq!(anthropic_text(&events), "scripted: no rule matched");
    let prompts: Vec<_> = endpoint
        .model_requests()
        .into_iter()
        .map(|request| request.last_user_prompt)
        .collect();
    assert_eq!(
        prompts,
        [Some("hello".to_owned()), Some("real words".to_owned())]
    );
}

/// Interactive Claude Code names a session with a request shaped like a turn (streamed, same
/// model, 128 000 tokens) but without tools, quoting the session in its user message.
#[tokio::test]
async fn claudes_session_title_request_is_a_side_request() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_user_text("fix the login bug")
            .tool_call(ToolCall::new("Bash", json!({})))
            .once(),
    );
    let title = json!({
        "model": "claude-opus-5-5",
        "max_tokens": 128000,
        "stream": true,
        "system": [
            { "type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude." },
            { "type": "text", "text": "You are naming a coding session so the user can pick it out." },
        ],
        "messages": [{ "role": "user", "content":
            "<session>\nuser: fix the login bug\n</session>\n\nWrite the title." }],
    });

    let events = post_sse(messages_url(&endpoint), &title).await;

    assert_eq!(anthropic_text(&events), "scripted side reply");
    assert!(endpoint.model_requests()[0].side_request);
    assert_eq!(
        endpoint.rules()[0].remaining(),
        Some(1),
        "the turn's rule is still there"
    );
}

#[tokio::test]
async fn an_error_event_ends_the_stream_the_way_each_api_fails_mid_answer() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_user_text("fail")
            .reply(Reply::text("cut short").error_after_events(1, "overloaded now")),
    );

    let claude = post_sse(messages_url(&endpoint), &anthropic_request("fail", true)).await;
    let codex = post_sse(responses_url(&endpoint), &responses_request("fail")).await;
    let whole = post(messages_url(&endpoint), &anthropic_request("fail", false)).await;

    assert_eq!(names(&claude), ["message_start", "error"]);
    assert_eq!(
        claude[1].1,
        json!({ "type": "error", "error": { "type": "overloaded_error", "message": "overloaded now" } })
    );
    assert_eq!(names(&codex), ["response.created", "response.failed"]);
    let failed = &codex[1].1;
    assert_eq!(failed["sequence_number"], 1);
    assert_eq!(failed["response"]["status"], "failed");
    assert_eq!(failed["response"]["id"], codex[0].1["response"]["id"]);
    assert_eq!(
        failed["response"]["error"],
        json!({ "code": "server_error", "message": "overloaded now" })
    );
    assert_eq!(whole.status(), 529);
}

#[tokio::test]
async fn peer_replies_answer_a_claude_envelope_with_send_message_to_its_from() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script(Rule::peer_replies("PEER ANSWER", "replied"));
    let envelope = "Another Claude session sent a message:\n\
        <cross-session-message from=\"uds:/tmp/cc-socks/4242.sock\" from-name=\"xa-cli-on-box\" from-mode=\"prompting\">\n\
        Please answer.\nrequest id: req_1795992544448_a1b2c3\n\
        </cross-session-message>\n\nThis came from another Claude session.";

    let first = post_sse(messages_url(&endpoint), &anthropic_request(envelope, true)).await;
    let after = post_sse(
        messages_url(&endpoint),
        &anthropic_tool_result_request(envelope, r#"{"success":true,"msg_id":"m-1"}"#),
    )
    .await;
    let plain = post_sse(
        messages_url(&endpoint),
        &anthropic_request("no envelope here", true),
    )
    .await;

    let tool = first
        .iter()
        .find(|(name, data)| {
            name == "content_block_start" && data["content_block"]["type"] == "tool_use"
        })
        .expect("a tool_use block");
    assert_eq!(tool.1["content_block"]["name"], "SendMessage");
    let partial: String = first
        .iter()
        .filter(|(_, data)| data["delta"]["type"] == "input_json_delta")
        .map(|(_, data)| data["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        json!({ "to": "uds:/tmp/cc-socks/4242.sock",
                "message": "PEER ANSWER\nreq_1795992544448_a1b2c3" })
    );
    assert_eq!(anthropic_text(&after), "replied");
    assert_eq!(anthropic_text(&plain), "scripted: no rule matched");
}
