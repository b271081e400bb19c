//! The HTTP kinds: Anthropic Messages, OpenAI Responses and Chat Completions, asked without
//! streaming on a small tokio runtime of the calling thread (the callers are synchronous; the
//! daemon calls through `spawn_blocking`). Structured output, as each API documents it:
//! Anthropic `output_config.format` `{type: "json_schema", schema}`, Responses `text.format`
//! `{type: "json_schema", name, schema}`, Chat `response_format` `{type: "json_schema",
//! json_schema: {name, schema}}` (not `strict`: strict mode demands every property required,
//! and a schema with an optional field would be refused).

use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::ask::{Answer, Failure, FailureKind, Request, one_line};
use crate::config::Provider;
use crate::env::Env;
use crate::family::{Family, Kind};
use crate::retry;

/// The `anthropic-version` header the Messages API requires.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The schema's name where an API wants one.
const SCHEMA_NAME: &str = "answer";

/// One try's failure, with what the server said about waiting.
struct TryFailure {
    kind: FailureKind,
    why: String,
    wait: Option<Duration>,
}

pub(crate) fn ask(provider: &Provider, request: &Request, env: &Env) -> Result<Answer, Failure> {
    let started = Instant::now();
    let fail = |kind, why: String, tries| Failure {
        kind,
        why,
        millis: started.elapsed().as_millis() as u64,
        tries,
    };
    let url = provider.base_url.as_deref().unwrap_or("");
    let key = match &provider.key_var {
        Some(var) => match env.get(var) {
            Some(key) => Some(key),
            None => {
                return Err(fail(
                    FailureKind::Unavailable,
                    format!("{var} is not set (the key of {})", provider.name),
                    0,
                ));
            }
        },
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            fail(
                FailureKind::Connect,
                format!("cannot start an HTTP client: {e}"),
                0,
            )
        })?;
    let client = reqwest::Client::builder().build().map_err(|e| {
        fail(
            FailureKind::Connect,
            format!("cannot build an HTTP client: {e}"),
            0,
        )
    })?;
    let (endpoint, body) = request_body(provider, request);
    let target = format!("{url}{endpoint}");
    let deadline = started + provider.timeout;
    let mut waited = Duration::ZERO;
    let mut tries = 0;
    loop {
        tries += 1;
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(fail(
                FailureKind::Timeout,
                format!("{url} did not answer within {:?}", provider.timeout),
                tries - 1,
            ));
        }
        let mut builder = client.post(&target).timeout(left).json(&body);
        builder = match (provider.kind, &key) {
            (Kind::Anthropic, Some(key)) => builder.header("x-api-key", key),
            (_, Some(key)) => builder.bearer_auth(key),
            (_, None) => builder,
        };
        if provider.kind == Kind::Anthropic {
            builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
        }
        let outcome = runtime.block_on(async {
            match tokio::time::timeout(left, one_try(builder, url, key.as_deref())).await {
                Ok(outcome) => outcome,
                Err(_) => Err(TryFailure {
                    kind: FailureKind::Timeout,
                    why: String::new(),
                    wait: None,
                }),
            }
        });
        let failure = match outcome {
            Ok(body) => {
                return read_answer(provider, &body)
                    .map(|(text, model, input_tokens, output_tokens)| Answer {
                        text,
                        model,
                        input_tokens,
                        output_tokens,
                        millis: started.elapsed().as_millis() as u64,
                        tries,
                    })
                    .map_err(|why| fail(FailureKind::BadAnswer, format!("{url}: {why}"), tries));
            }
            Err(failure) => failure,
        };
        if failure.kind == FailureKind::Timeout {
            return Err(fail(
                FailureKind::Timeout,
                format!("{url} did not answer within {:?}", provider.timeout),
                tries,
            ));
        }
        if !failure.kind.retryable() || tries >= retry::MAX_TRIES {
            return Err(fail(failure.kind, failure.why, tries));
        }
        let wait = failure.wait.unwrap_or_else(|| retry::backoff(tries + 1));
        let left = deadline.saturating_duration_since(Instant::now());
        if wait > retry::MAX_WAIT || waited + wait > retry::MAX_TOTAL_WAIT || wait >= left {
            return Err(fail(
                failure.kind,
                format!(
                    "{}; not retried: waiting {wait:.1?} would pass {}",
                    failure.why,
                    if wait >= left {
                        format!("the timeout of {:?}", provider.timeout)
                    } else if wait > retry::MAX_WAIT {
                        format!("the longest wait of {:?}", retry::MAX_WAIT)
                    } else {
                        format!("the total wait of {:?}", retry::MAX_TOTAL_WAIT)
                    }
                ),
                tries,
            ));
        }
        tracing::debug!(provider = %provider.name, ?wait, tries, "provider busy; retrying");
        std::thread::sleep(wait);
        waited += wait;
    }
}

async fn one_try(
    builder: reqwest::RequestBuilder,
    url: &str,
    key: Option<&str>,
) -> Result<Value, TryFailure> {
    let response = builder.send().await.map_err(|e| TryFailure {
        kind: if e.is_timeout() {
            FailureKind::Timeout
        } else {
            FailureKind::Connect
        },
        // reqwest's error names the URL and the cause; the key is in a header, never in it,
        // but it is scrubbed all the same.
        why: one_line(&format!("{url}: {}", error_chain(&e)), 300, key),
        wait: None,
    })?;
    let status = response.status();
    let wait = retry::server_wait(response.headers(), SystemTime::now());
    let text = response.text().await.map_err(|e| TryFailure {
        kind: if e.is_timeout() {
            FailureKind::Timeout
        } else {
            FailureKind::Connect
        },
        why: one_line(&format!("{url}: reading the answer: {e}"), 300, key),
        wait: None,
    })?;
    if status.is_success() {
        return serde_json::from_str(&text).map_err(|e| TryFailure {
            kind: FailureKind::BadAnswer,
            why: one_line(&format!("{url}: the answer is not JSON: {e}"), 300, key),
            wait: None,
        });
    }
    let kind = match status.as_u16() {
        401 | 403 => FailureKind::Auth,
        408 => FailureKind::Timeout,
        429 => FailureKind::RateLimited,
        500..=599 => FailureKind::Server,
        _ => FailureKind::Refused,
    };
    let said = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("message"))
                .or_else(|| v.get("error"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let why = if said.is_empty() {
        format!("{url}: HTTP {status}")
    } else {
        format!("{url}: HTTP {status}: {said}")
    };
    Err(TryFailure {
        kind,
        why: one_line(&why, 300, key),
        wait,
    })
}

/// reqwest's error with its causes ("connection refused" is a cause).
fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The path under the base URL and the JSON body.
fn request_body(provider: &Provider, request: &Request) -> (&'static str, Value) {
    let model = provider.model.as_deref().unwrap_or("");
    match provider.kind {
        Kind::Anthropic => {
            let mut body = json!({
                "model": model,
                "max_tokens": request.max_tokens,
                "messages": [{"role": "user", "content": request.prompt}],
            });
            if let Some(system) = &request.system {
                body["system"] = json!(system);
            }
            if let Some(schema) = &request.json_schema {
                body["output_config"] =
                    json!({"format": {"type": "json_schema", "schema": schema}});
            }
            ("/v1/messages", body)
        }
        Kind::Responses => {
            let mut body = json!({
                "model": model,
                "input": request.prompt,
                "max_output_tokens": request.max_tokens,
            });
            if let Some(system) = &request.system {
                body["instructions"] = json!(system);
            }
            if let Some(schema) = &request.json_schema {
                body["text"] = json!({"format": {
                    "type": "json_schema", "name": SCHEMA_NAME, "schema": schema,
                }});
            }
            ("/responses", body)
        }
        // The CLI kinds never come here; an empty body would be refused by any server.
        Kind::Chat | Kind::Cli(_) => {
            let mut messages = Vec::new();
            if let Some(system) = &request.system {
                messages.push(json!({"role": "system", "content": system}));
            }
            messages.push(json!({"role": "user", "content": request.prompt}));
            let mut body = json!({"model": model, "messages": messages});
            // OpenAI's own API refuses `max_tokens` for its reasoning models and documents
            // `max_completion_tokens`; the other servers (xAI, OpenRouter, llama.cpp, Ollama)
            // read `max_tokens`.
            let limit = if provider.family == Family::Openai {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body[limit] = json!(request.max_tokens);
            if let Some(schema) = &request.json_schema {
                body["response_format"] = json!({"type": "json_schema", "json_schema": {
                    "name": SCHEMA_NAME, "schema": schema,
                }});
            }
            ("/chat/completions", body)
        }
    }
}

type Read = (String, String, Option<u64>, Option<u64>);

/// The text, model and token counts of a successful answer.
fn read_answer(provider: &Provider, body: &Value) -> Result<Read, String> {
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| provider.model.clone())
        .unwrap_or_default();
    let count = |pointer: &str| body.pointer(pointer).and_then(Value::as_u64);
    let (text, input, output) = match provider.kind {
        Kind::Anthropic => (
            texts(body.get("content")),
            count("/usage/input_tokens"),
            count("/usage/output_tokens"),
        ),
        Kind::Responses => (
            body.get("output")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter(|i| i.get("type").and_then(Value::as_str) == Some("message"))
                        .map(|i| texts(i.get("content")))
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default(),
            count("/usage/input_tokens"),
            count("/usage/output_tokens"),
        ),
        Kind::Chat | Kind::Cli(_) => {
            let message = body.pointer("/choices/0/message");
            if let Some(refusal) = message
                .and_then(|m| m.get("refusal"))
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
            {
                return Err(format!(
                    "the model refused: {}",
                    one_line(refusal, 200, None)
                ));
            }
            let text = match message.and_then(|m| m.get("content")) {
                Some(Value::String(text)) => text.clone(),
                other => texts(other),
            };
            (
                text,
                count("/usage/prompt_tokens"),
                count("/usage/completion_tokens"),
            )
        }
    };
    let text = text.trim();
    if text.is_empty() {
        return Err("the answer has no text".to_owned());
    }
    Ok((text.to_owned(), model, input, output))
}

/// The `text` of every text block in a content array.
fn texts(content: Option<&Value>) -> String {
    content
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
