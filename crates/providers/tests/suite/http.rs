//! The HTTP kinds against the scripted model endpoint on loopback: each kind's request shape
//! (structured output asked the documented way), retries honouring `retry-after`, the timeout,
//! 401 as `Auth`, a missing key variable, and the key kept out of every error and `Debug`.

use std::time::{Duration, Instant, SystemTime};

use cross_agent_providers::config::parse_shorthand;
use cross_agent_providers::{FailureKind, Pool, Provider, Request};
use cross_agent_testkit::{Api, ModelEndpoint, Reply, Rule};
use pretty_assertions::assert_eq;
use serde_json::json;

const KEY: &str = "sk-test-secret-0123456789";

fn provider(line: &str, timeout: Duration) -> Provider {
    parse_shorthand("CROSS_AGENT_PROVIDERS", line, timeout)
        .unwrap()
        .remove(0)
}

fn pool() -> Pool {
    Pool::new(Vec::new(), super::env(&[("TEST_KEY", KEY)]))
}

fn schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]})
}

fn judged() -> Request {
    Request {
        system: Some("You review.".to_owned()),
        json_schema: Some(schema()),
        max_tokens: 500,
        ..Request::new("judge it")
    }
}

#[test]
fn anthropic_messages_with_output_config() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_any()
            .reply_text(r#"{"verdict":"on_track"}"#)
            .include_side_requests(),
    );
    let p = provider(
        &format!(
            "anthropic {} TEST_KEY claude-test",
            endpoint.anthropic_base_url()
        ),
        Duration::from_secs(10),
    );
    let answer = pool().ask(&p, &judged()).unwrap();
    assert_eq!(answer.text, r#"{"verdict":"on_track"}"#);
    assert_eq!(answer.model, "claude-test");
    assert_eq!(answer.tries, 1);
    assert!(answer.input_tokens.is_some() && answer.output_tokens.is_some());
    let request = endpoint.model_requests().remove(0);
    assert_eq!(request.api, Api::Anthropic);
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        request.body,
        json!({
            "model": "claude-test",
            "max_tokens": 500,
            "system": "You review.",
            "messages": [{"role": "user", "content": "judge it"}],
            "output_config": {"format": {"type": "json_schema", "schema": schema()}},
        })
    );
}

#[test]
fn openai_responses_with_text_format() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_any()
            .reply_text(r#"{"verdict":"drifting"}"#)
            .include_side_requests(),
    );
    let p = provider(
        &format!("openai {} TEST_KEY gpt-test", endpoint.openai_base_url()),
        Duration::from_secs(10),
    );
    let answer = pool().ask(&p, &judged()).unwrap();
    assert_eq!(answer.text, r#"{"verdict":"drifting"}"#);
    let request = endpoint.model_requests().remove(0);
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-test",
            "input": "judge it",
            "instructions": "You review.",
            "max_output_tokens": 500,
            "text": {"format": {"type": "json_schema", "name": "answer", "schema": schema()}},
        })
    );
}

#[test]
fn chat_completions_with_response_format_and_no_key_for_a_local_server() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("judge it").reply_text(r#"{"verdict":"blocked"}"#));
    let p = provider(
        &format!("chat {} - llama-3-8b", endpoint.openai_base_url()),
        Duration::from_secs(10),
    );
    assert_eq!(p.family, cross_agent_providers::Family::Local);
    let answer = pool().ask(&p, &judged()).unwrap();
    assert_eq!(answer.text, r#"{"verdict":"blocked"}"#);
    assert!(answer.output_tokens.is_some());
    let request = endpoint.model_requests().remove(0);
    assert_eq!(request.api, Api::Chat);
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), None);
    assert_eq!(
        request.body,
        json!({
            "model": "llama-3-8b",
            "messages": [
                {"role": "system", "content": "You review."},
                {"role": "user", "content": "judge it"},
            ],
            "max_tokens": 500,
            "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema()}},
        })
    );

    // OpenAI's family gets `max_completion_tokens`, and the key as a bearer token.
    let p = provider(
        &format!(
            "chat {} TEST_KEY gpt-test openai",
            endpoint.openai_base_url()
        ),
        Duration::from_secs(10),
    );
    pool().ask(&p, &Request::new("judge it")).unwrap();
    let request = endpoint.model_requests().remove(1);
    assert_eq!(request.body["max_completion_tokens"], json!(2048));
    assert_eq!(request.body.get("max_tokens"), None);
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn a_429_is_retried_after_the_seconds_retry_after_says() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_any()
            .reply(Reply::http_error(429, "slow down").header("retry-after", "1"))
            .include_side_requests()
            .once(),
        Rule::on_any().reply_text("fine").include_side_requests(),
    ]);
    let p = provider(
        &format!("anthropic {} TEST_KEY m", endpoint.anthropic_base_url()),
        Duration::from_secs(20),
    );
    let started = Instant::now();
    let answer = pool().ask(&p, &Request::new("q")).unwrap();
    assert_eq!((answer.text.as_str(), answer.tries), ("fine", 2));
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(endpoint.model_requests().len(), 2);
}

#[test]
fn a_retry_after_http_date_is_honoured_and_5xx_is_retried_with_backoff() {
    let endpoint = ModelEndpoint::start().unwrap();
    let at = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
    endpoint.script([
        Rule::on_any()
            .reply(Reply::http_error(503, "busy").header("retry-after", at))
            .include_side_requests()
            .once(),
        Rule::on_any()
            .reply(Reply::http_error(529, "overloaded"))
            .include_side_requests()
            .once(),
        Rule::on_any().reply_text("fine").include_side_requests(),
    ]);
    let p = provider(
        &format!("anthropic {} TEST_KEY m", endpoint.anthropic_base_url()),
        Duration::from_secs(20),
    );
    let started = Instant::now();
    let answer = pool().ask(&p, &Request::new("q")).unwrap();
    assert_eq!(answer.tries, 3);
    // The date is whole seconds: at least one second of it was waited.
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_rate_limit_storm_fails_after_the_bounded_tries() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_any().reply(Reply::http_error(429, "storm").header("retry-after", "0")));
    let p = provider(
        &format!("chat {} TEST_KEY grok-test", endpoint.openai_base_url()),
        Duration::from_secs(20),
    );
    let failure = pool().ask(&p, &Request::new("q")).unwrap_err();
    assert_eq!(failure.kind, FailureKind::RateLimited);
    assert_eq!(failure.tries, cross_agent_providers::retry::MAX_TRIES);
    assert_eq!(endpoint.model_requests().len(), 4);
    assert!(
        failure.why.contains("429") && failure.why.contains("storm"),
        "{}",
        failure.why
    );
}

#[test]
fn a_retry_after_past_the_timeout_is_not_waited() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_any()
            .reply(Reply::http_error(429, "later").header("retry-after", "3600"))
            .include_side_requests(),
    );
    let p = provider(
        &format!("anthropic {} TEST_KEY m", endpoint.anthropic_base_url()),
        Duration::from_secs(5),
    );
    let started = Instant::now();
    let failure = pool().ask(&p, &Request::new("q")).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!((failure.kind, failure.tries), (FailureKind::RateLimited, 1));
    assert!(failure.why.contains("not retried"), "{}", failure.why);
}

#[test]
fn a_hanging_provider_times_out_within_its_timeout() {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_any().reply(Reply::hang()).include_side_requests());
    let p = provider(
        &format!("openai {} TEST_KEY m", endpoint.openai_base_url()),
        Duration::from_secs(1),
    );
    let started = Instant::now();
    let failure = pool().ask(&p, &Request::new("q")).unwrap_err();
    assert_eq!(failure.kind, FailureKind::Timeout);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_401_is_auth_and_the_key_never_shows() {
    let endpoint = ModelEndpoint::start().unwrap();
    // Some APIs quote the key they were given; the why must not.
    endpoint.push(Rule::on_any().reply(Reply::http_error(
        401,
        format!("Incorrect API key provided: {KEY}"),
    )));
    let p = provider(
        &format!("chat {} TEST_KEY grok-test", endpoint.openai_base_url()),
        Duration::from_secs(10),
    );
    let pool = pool();
    let failure = pool.ask(&p, &Request::new("q")).unwrap_err();
    assert_eq!((failure.kind, failure.tries), (FailureKind::Auth, 1));
    assert!(failure.why.contains("401"), "{}", failure.why);
    for shown in [
        failure.why.clone(),
        failure.to_string(),
        format!("{failure:?}"),
        format!("{pool:?}"),
        format!("{p:?}"),
    ] {
        assert!(!shown.contains(KEY), "the key leaked: {shown}");
    }
    assert!(failure.why.contains("[key]"), "{}", failure.why);
}

#[test]
fn an_unset_key_variable_is_unavailable_and_nothing_is_sent() {
    let endpoint = ModelEndpoint::start().unwrap();
    let p = provider(
        &format!("anthropic {} NOT_SET_KEY m", endpoint.anthropic_base_url()),
        Duration::from_secs(10),
    );
    let failure = pool().ask(&p, &Request::new("q")).unwrap_err();
    assert_eq!(failure.kind, FailureKind::Unavailable);
    assert!(
        failure.why.contains("NOT_SET_KEY is not set"),
        "{}",
        failure.why
    );
    assert!(endpoint.requests().is_empty());
}

#[test]
fn a_server_that_is_not_there_is_a_connect_failure() {
    let p = provider(
        "chat http://127.0.0.1:9/v1 - m local",
        Duration::from_secs(10),
    );
    let failure = pool().ask(&p, &Request::new("q")).unwrap_err();
    assert_eq!(failure.kind, FailureKind::Connect, "{failure:?}");
    assert!(failure.why.contains("127.0.0.1:9"), "{}", failure.why);
}
