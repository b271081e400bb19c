//! The real Claude Code CLI (2.1.332) against the scripted endpoint: a plain turn, an MCP tool
//! call that reaches a real server, resume, an explicit session id, and the model failures.

use std::time::Duration;

use cross_agent_testkit::agents::Claude;
use cross_agent_testkit::endpoint::{Api, Reply, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::real_support::{Bench, contains_text, probe_calls, read_jsonl};

#[test]
fn claude_completes_a_turn_against_the_scripted_endpoint() -> anyhow::Result<()> {
    let bench = Bench::new()?;
    bench
        .endpoint
        .push(Rule::on_user_text("hello bench").reply_text("scripted answer one"));
    let claude = Claude::new(&bench.home, &bench.endpoint.anthropic_base_url())?;

    let run = claude
        .turn(&bench.project, "hello bench")
        .run()?
        .expect_success()?;

    assert_eq!(run.result_text(), Some("scripted answer one"));
    let session_id = run.session_id().expect("a session id").to_owned();

    let turn_requests: Vec<_> = bench
        .endpoint
        .model_requests()
        .into_iter()
        .filter(|request| !request.side_request)
        .collect();
    assert_eq!(turn_requests.len(), 1, "one model call for one plain turn");
    let request = &turn_requests[0];
    assert_eq!(request.api, Api::Anthropic);
    assert_eq!(request.path, "/v1/messages");
    assert!(request.stream, "Claude Code streams");
    assert!(
        request
            .last_user_text
            .as_deref()
            .unwrap_or("")
            .contains("hello bench")
    );
    assert!(
        request.tools.iter().any(|tool| tool == "Bash"),
        "tools: {:?}",
        request.tools
    );

    let transcript = claude.transcript_path(&bench.project, &session_id);
    let records = read_jsonl(&transcript)?;
    let user = records
        .iter()
        .find(|record| record["type"] == "user" && contains_text(&record["message"], "hello bench"))
        .expect("the prompt in the transcript");
    assert_eq!(user["cwd"], json!(bench.project.to_string_lossy()));
    assert_eq!(user["sessionId"], json!(session_id));
    assert!(
        records.iter().any(|record| record["type"] == "assistant"
            && contains_text(&record["message"], "scripted answer one")),
        "the answer in the transcript"
    );
    Ok(())
}

#[test]
fn claude_calls_a_real_mcp_server_which_sees_its_session_id() -> anyhow::Result<()> {
    let bench = Bench::new()?;
    let (probe, log) = bench.probe("probe");
    bench.endpoint.script([
        Rule::on_user_text("use the probe").tool_call(ToolCall::mcp(
            "probe",
            "echo",
            json!({ "text": "ping-claude" }),
        )),
        Rule::on_tool_result("echoed:ping-claude").reply_text("the probe answered ping-claude"),
    ]);
    let claude = Claude::new(&bench.home, &bench.endpoint.anthropic_base_url())?;

    let run = claude
        .turn(&bench.project, "use the probe")
        .mcp_server(probe)
        .run()?
        .expect_success()?;

    assert_eq!(run.result_text(), Some("the probe answered ping-claude"));
    let calls = probe_calls(&log)?;
    assert_eq!(calls.len(), 1, "one call reached the server: {calls:?}");
    assert_eq!(calls[0]["call"], json!("echo"));
    assert_eq!(calls[0]["arguments"], json!({ "text": "ping-claude" }));
    assert_eq!(
        calls[0]["env"]["CLAUDE_CODE_SESSION_ID"],
        json!(run.session_id().expect("a session id")),
        "the MCP server knows exactly which session called it"
    );
    // Claude Code 2.1.332 defers MCP tools: they are not in `tools` but announced by name in
    // the request (the model reaches them through ToolSearch or by calling the name).
    let first = &bench.endpoint.model_requests()[0];
    assert!(
        !first.tools.iter().any(|tool| tool == "mcp__probe__echo"),
        "MCP tools are deferred, not offered directly: {:?}",
        first.tools
    );
    assert!(
        contains_text(&first.body, "mcp__probe__echo"),
        "the deferred MCP tool is named somewhere in the request"
    );
    Ok(())
}

#[test]
fn claude_resume_sends_the_first_turn_with_the_second() -> anyhow::Result<()> {
    let bench = Bench::new()?;
    bench.endpoint.script([
        Rule::on_user_text("remember the word pineapple").reply_text("noted the fruit"),
        Rule::on_user_text("which word").reply_text("it was pineapple"),
    ]);
    let claude = Claude::new(&bench.home, &bench.endpoint.anthropic_base_url())?;

    let first = claude
        .turn(&bench.project, "remember the word pineapple")
        .run()?
        .expect_success()?;
    let session_id = first.session_id().expect("a session id").to_owned();
    let second = claude
        .turn(&bench.project, "which word did I ask you to remember?")
        .resume(&session_id)
        .run()?
        .expect_success()?;

    assert_eq!(second.session_id(), Some(session_id.as_str()));
    assert_eq!(second.result_text(), Some("it was pineapple"));
    let last = bench
        .endpoint
        .model_requests()
        .into_iter()
        .rfind(|request| !request.side_request)
        .expect("a model request for the second turn");
    let history = json!(last.messages);
    assert!(
        contains_text(&history, "remember the word pineapple"),
        "first prompt resent"
    );
    assert!(
        contains_text(&history, "noted the fruit"),
        "first answer resent"
    );
    let records = read_jsonl(&claude.transcript_path(&bench.project, &session_id))?;
    assert!(
        records
            .iter()
            .any(|r| contains_text(&r["message"], "noted the fruit"))
    );
    assert!(
        records
            .iter()
            .any(|r| contains_text(&r["message"], "it was pineapple"))
    );
    Ok(())
}

#[test]
fn claude_creates_a_session_with_a_given_id() -> anyhow::Result<()> {
    let bench = Bench::new()?;
    bench
        .endpoint
        .push(Rule::on_user_text("named start").reply_text("started"));
    let claude = Claude::new(&bench.home, &bench.endpoint.anthropic_base_url())?;
    let id = "4f1c2b9e-0d7a-4c55-9a31-6e2f8b7d1a00";

    let run = claude
        .turn(&bench.project, "named start")
        .session_id(id)
        .run()?
        .expect_success()?;

    assert_eq!(run.session_id(), Some(id));
    assert!(claude.transcript_path(&bench.project, id).is_file());
    Ok(())
}

/// Runs one `claude -p` whose model call fails the scripted way and returns what it reported.
fn claude_failure(reply: Reply) -> anyhow::Result<(bool, String)> {
    let bench = Bench::new()?;
    bench
        .endpoint
        .push(Rule::on_user_text("break please").reply(reply));
    let claude = Claude::new(&bench.home, &bench.endpoint.anthropic_base_url())?
        // Fail fast rather than after Claude's default 10 min request timeout and 10 retries.
        .with_env("API_TIMEOUT_MS", "4000")
        .with_env("CLAUDE_CODE_MAX_RETRIES", "0");
    let run = claude
        .turn(&bench.project, "break please")
        .timeout(Duration::from_secs(90))
        .run()?;
    assert!(!run.output.timed_out, "claude reported the failure itself");
    let text = format!(
        "{} {} {}",
        run.result_text().unwrap_or(""),
        run.output.stdout,
        run.output.stderr
    );
    Ok((run.is_error() || !run.output.status.success(), text))
}

#[test]
fn claude_reports_a_hanging_model_as_a_timeout() -> anyhow::Result<()> {
    let (failed, text) = claude_failure(Reply::hang())?;
    assert!(failed, "a hang is an error: {text}");
    assert!(
        text.to_lowercase().contains("timeout") || text.contains("timed out"),
        "{text}"
    );
    Ok(())
}

#[test]
fn claude_reports_a_dropped_connection() -> anyhow::Result<()> {
    let (failed, text) = claude_failure(Reply::drop_connection())?;
    assert!(failed, "a drop is an error: {text}");
    assert!(
        text.contains("Connection error") || text.contains("connection"),
        "{text}"
    );
    Ok(())
}

#[test]
fn claude_reports_an_http_500() -> anyhow::Result<()> {
    let (failed, text) = claude_failure(Reply::http_error(500, "scripted boom"))?;
    assert!(failed, "a 500 is an error: {text}");
    assert!(text.contains("500"), "{text}");
    Ok(())
}
