//! The CLI kinds against the real pinned agents (`.tools/agents`, TESTING.md), each pointed at
//! the scripted endpoint in a temporary HOME, one short call each.

use std::collections::BTreeMap;
use std::time::Duration;

use cross_agent_providers::{CliAgent, FailureKind, Pool, Provider, Request};
use cross_agent_testkit::agents::{AgentHome, Claude, Codex};
use cross_agent_testkit::{Api, ModelEndpoint, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["on_track", "drifting"]}},
        "required": ["verdict"],
        "additionalProperties": false,
    })
}

fn strings(vars: &BTreeMap<String, std::ffi::OsString>) -> BTreeMap<String, String> {
    vars.iter()
        .map(|(k, v)| (k.clone(), v.to_string_lossy().into_owned()))
        .collect()
}

#[test]
fn claude_cli_answers_with_structured_output_and_usage() {
    let home = AgentHome::new().unwrap();
    let endpoint = ModelEndpoint::start().unwrap();
    let claude = Claude::new(&home, &endpoint.anthropic_base_url())
        .unwrap()
        .with_env("CLAUDE_CODE_MAX_RETRIES", "0");
    endpoint.script([
        Rule::on_user_text("judge the session").tool_call(ToolCall::new(
            "StructuredOutput",
            json!({"verdict": "drifting"}),
        )),
        Rule::on_any_tool_result().reply_text("done"),
    ]);
    let mut vars = strings(claude.env());
    // Another provider's key: the CLI child must not get it.
    vars.insert(
        "OTHER_PROVIDER_KEY".to_owned(),
        "sk-other-provider".to_owned(),
    );
    let pool = Pool::new(Vec::new(), cross_agent_providers::Env::fixed(vars));
    let provider = Provider::cli(
        CliAgent::Claude,
        Some(claude.binary().to_owned()),
        Duration::from_secs(90),
    );
    let request = Request {
        system: Some("You review sessions.".to_owned()),
        json_schema: Some(schema()),
        cwd: Some(home.project("p").unwrap()),
        ..Request::new("judge the session")
    };
    let answer = pool.ask(&provider, &request);
    let requests = endpoint.model_requests();
    let answer = answer.unwrap_or_else(|f| panic!("{f:?}; requests: {requests:#?}"));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&answer.text).unwrap(),
        json!({"verdict": "drifting"})
    );
    assert!(answer.input_tokens.is_some_and(|n| n > 0), "{answer:?}");
    let first = &requests[0];
    assert_eq!(first.api, Api::Anthropic);
    assert!(
        first
            .system
            .as_deref()
            .unwrap_or("")
            .contains("You review sessions."),
        "{:?}",
        first.system
    );
    assert!(
        first.tools.iter().any(|t| t == "StructuredOutput"),
        "{:?}",
        first.tools
    );
    let body = first.body.to_string();
    assert!(
        body.contains("\"on_track\""),
        "the schema reached the model: {body}"
    );
    assert!(!body.contains("sk-other-provider"));
}

#[test]
fn codex_cli_asks_with_its_output_schema() {
    let home = AgentHome::new().unwrap();
    let endpoint = ModelEndpoint::start().unwrap();
    let codex = Codex::new(&home, &endpoint.openai_base_url()).unwrap();
    endpoint.script([Rule::on_user_text("judge the session")
        .reply_text(r#"{"verdict":"on_track"}"#)
        .for_api(Api::Responses)]);
    let mut vars = strings(codex.env());
    vars.insert(
        "OTHER_PROVIDER_KEY".to_owned(),
        "sk-other-provider".to_owned(),
    );
    let pool = Pool::new(Vec::new(), cross_agent_providers::Env::fixed(vars));
    let provider = Provider::cli(
        CliAgent::Codex,
        Some(
            cross_agent_testkit::agents::agent_binary(
                cross_agent_testkit::agents::AgentKind::Codex,
            )
            .unwrap(),
        ),
        Duration::from_secs(90),
    );
    let request = Request {
        system: Some("You review sessions.".to_owned()),
        json_schema: Some(schema()),
        ..Request::new("judge the session")
    };
    let answer = pool.ask(&provider, &request);
    let requests = endpoint.model_requests();
    let answer = answer.unwrap_or_else(|f| panic!("{f:?}; requests: {requests:#?}"));
    assert_eq!(answer.text, r#"{"verdict":"on_track"}"#);
    assert_eq!(answer.output_tokens.is_some(), true, "{answer:?}");
    let last = requests.last().unwrap();
    assert_eq!(
        last.body.pointer("/text/format/type"),
        Some(&json!("json_schema")),
        "{:#}",
        last.body
    );
    assert_eq!(
        last.body
            .pointer("/text/format/schema/properties/verdict/enum"),
        Some(&json!(["on_track", "drifting"]))
    );
    assert!(
        last.last_user_prompt
            .as_deref()
            .unwrap_or("")
            .contains("You review sessions.")
    );
    // Codex got its own provider's key (named by its config.toml), not another's.
    assert_eq!(last.header("authorization"), Some("Bearer test-key"));
    assert!(!last.body.to_string().contains("sk-other-provider"));
}

#[test]
fn a_cli_that_is_not_installed_is_unavailable() {
    let pool = Pool::new(Vec::new(), super::env(&[("PATH", "/usr/bin:/bin")]));
    let provider = Provider::cli(
        CliAgent::Claude,
        Some("/nonexistent/claude".into()),
        Duration::from_secs(5),
    );
    let failure = pool.ask(&provider, &Request::new("hi")).unwrap_err();
    assert_eq!(failure.kind, FailureKind::Unavailable);
    assert!(
        failure.why.contains("/nonexistent/claude"),
        "{}",
        failure.why
    );
}
