//! The real Codex CLI (0.171.0) against the scripted endpoint: a plain `codex exec` turn, an MCP
//! tool call that reaches a real server, `exec resume`, and the model failures.

use std::collections::BTreeSet;
use std::time::Duration;

use cross_agent_testkit::agents::{CODEX_TEST_MODEL, Codex};
use cross_agent_testkit::endpoint::{Api, Reply, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::real_support::{Bench, contains_text, probe_calls, read_jsonl};

#[test]
fn codex_completes_a_turn_against_the_scripted_endpoint() -> anyhow::Result<()> {
    let bench = Bench::new()?;
    bench
        .endpoint
        .push(Rule::on_user_text("hello bench").reply_text("scripted codex answer"));
    let codex = Codex::new(&bench.home, &bench.endpoint.openai_base_url())?;

    let run = codex
        .turn(&bench.project, "hello bench")
        .run()?
        .expect_success()?;

    assert_eq!(run.final_message(), Some("scripted codex answer"));
    let thread_id = run
        .thread_id()
        .expect("thread.started carries the id")
        .to_owned();

    let requests = bench.endpoint.model_requests();
    assert_eq!(requests.len(), 1, "one model call for one plain turn");
    let request = &requests[0];
    assert_eq!(request.api, Api::Responses);
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.model.as_deref(), Some(CODEX_TEST_MODEL));
    assert!(request.stream, "Codex streams");
    assert!(
        request
            .last_user_text
            .as_deref()
            .unwrap_or("")
            .contains("hello bench")
    );
    let metadata = request
        .header_json("x-codex-turn-metadata")
        .expect("Codex sends its turn metadata as a JSON header");
    assert_eq!(metadata["thread_id"], json!(thread_id));

    let rollout = codex.rollout_of(&thread_id)?;
    let records = read_jsonl(&rollout)?;
    assert_eq!(
        records[0]["type"],
        json!("session_meta"),
        "a rollout opens with session_meta"
    );
    assert_eq!(records[0]["payload"]["id"], json!(thread_id));
    assert_eq!(
        records[0]["payload"]["cwd"],
        json!(bench.project.to_string_lossy())
    );
    assert_eq!(records[0]["payload"]["thread_source"], json!("user"));
    assert!(
        records
            .iter()
            .any(|r| contains_text(&r["payload"], "scripted codex answer"))
    );
    Ok(())
}

#[test]
fn codex_calls_a_real_mcp_server_with_its_turn_metadata() -> anyhow::Result<()> {
    let bench = Bench::new()?;
    let (probe, log) = bench.probe("probe");
    bench.endpoint.script([
        Rule::on_user_text("use the probe").tool_call(ToolCall::mcp(
            "probe",
            "echo",
            json!({ "text": "ping-codex" }),
        )),
        Rule::on_tool_result("echoed:ping-codex").reply_text("the probe answered ping-codex"),
    ]);
    // `required = true` in the registration makes `codex exec` wait for the server to be ready
    // before its first model request; without it the request goes out without the tools.
    let codex =
        Codex::new(&bench.home, &bench.endpoint.openai_base_url())?.with_mcp_server(probe)?;

    let run = codex
        .turn(&bench.project, "use the probe")
        .run()?
        .expect_success()?;

    assert_eq!(run.final_message(), Some("the probe answered ping-codex"));
    let thread_id = run.thread_id().expect("a thread id");
    let first = &bench.endpoint.model_requests()[0];
    assert!(
        first.tools.iter().any(|tool| tool == "mcp__probe__echo"),
        "the first request already offers the MCP tool: {:?}",
        first.tools
    );
    let calls = probe_calls(&log)?;
    assert_eq!(calls.len(), 1, "one call reached the server: {calls:?}");
    assert_eq!(calls[0]["arguments"], json!({ "text": "ping-codex" }));
    assert_eq!(
        calls[0]["meta"]["x-codex-turn-metadata"]["thread_id"],
        json!(thread_id),
        "the caller's thread arrives in the call's _meta"
    );
    assert!(
        calls[0]["env"].get("CODEX_HOME").is_none(),
        "Codex passes no environment beyond the server's env table: {}",
        calls[0]["env"]
    );
    Ok(())
}

#[test]
fn codex_resume_sends_the_first_turn_with_the_second() -> anyhow::Result<()> {
    let bench = Bench::new()?;
    bench.endpoint.script([
        Rule::on_user_text("remember the word pineapple").reply_text("noted the fruit"),
        Rule::on_user_text("which word").reply_text("it was pineapple"),
    ]);
    let codex = Codex::new(&bench.home, &bench.endpoint.openai_base_url())?;

    let first = codex
        .turn(&bench.project, "remember the word pineapple")
        .run()?
        .expect_success()?;
    let thread_id = first.thread_id().expect("a thread id").to_owned();
    let second = codex
        .turn(&bench.project, "which word did I ask you to remember?")
        .resume(&thread_id)
        .run()?
        .expect_success()?;

    assert_eq!(second.thread_id(), Some(thread_id.as_str()));
    assert_eq!(second.final_message(), Some("it was pineapple"));
    let last = bench
        .endpoint
        .model_requests()
        .pop()
        .expect("a second request");
    let history = json!(last.messages);
    assert!(
        contains_text(&history, "remember the word pineapple"),
        "first prompt resent"
    );
    assert!(
        contains_text(&history, "noted the fruit"),
        "first answer resent"
    );
    assert_eq!(
        codex.rollouts()?.len(),
        1,
        "resume appends to the same rollout"
    );
    Ok(())
}

/// Runs one `codex exec` whose model call fails the scripted way and returns its error text.
fn codex_failure(reply: Reply) -> anyhow::Result<String> {
    let bench = Bench::new()?;
    bench
        .endpoint
        .push(Rule::on_user_text("break please").reply(reply));
    let codex = Codex::new(&bench.home, &bench.endpoint.openai_base_url())?
        .with_stream_idle_timeout(Duration::from_secs(3))?;
    let run = codex
        .turn(&bench.project, "break please")
        .timeout(Duration::from_secs(90))
        .run()?;
    assert!(!run.output.timed_out, "codex reported the failure itself");
    assert!(!run.turn_completed(), "the turn must not complete");
    assert!(!run.output.status.success(), "codex exec exits non-zero");
    let errors = run.errors();
    assert!(
        !errors.is_empty(),
        "codex printed an error event: {}",
        run.output.stdout
    );
    Ok(errors.join("\n"))
}

/// The distinct reasons in a failure's error text: Codex 0.171.0 reports the same one twice, as an
/// `error` event and in `turn.failed`.
fn reasons(text: &str) -> BTreeSet<&str> {
    text.lines().collect()
}

#[test]
fn codex_reports_a_hanging_model_as_an_idle_stream() -> anyhow::Result<()> {
    // A model that accepts the request and then goes silent. (A hang before the response
    // headers is waited on forever by Codex 0.171.0: it has no connect-phase timeout.)
    let text = codex_failure(Reply::text("never finished").hang_after_events(1))?;
    assert_eq!(
        reasons(&text),
        BTreeSet::from(["stream disconnected before completion: idle timeout waiting for SSE"])
    );
    Ok(())
}

#[test]
fn codex_reports_a_dropped_connection() -> anyhow::Result<()> {
    let text = codex_failure(Reply::drop_connection())?;
    // Not the idle timeout above: the request itself failed.
    assert_eq!(
        reasons(&text),
        BTreeSet::from(["stream disconnected before completion: error sending request"])
    );
    Ok(())
}

#[test]
fn codex_reports_an_http_500() -> anyhow::Result<()> {
    let text = codex_failure(Reply::http_error(500, "scripted boom"))?;
    // Codex 0.171.0 reports a 5xx from the model as server overload, not with the body.
    assert!(text.contains("experiencing high demand"), "{text}");
    Ok(())
}

#[test]
fn codex_exec_fails_an_mcp_call_nobody_can_approve_and_goes_on() -> anyhow::Result<()> {
    let bench = Bench::new()?;
    let (probe, log) = bench.probe("probe");
    bench.endpoint.script([
        Rule::on_user_text("record this").tool_call(ToolCall::mcp(
            "probe",
            "record",
            json!({ "text": "x" }),
        )),
        Rule::on_any_tool_result().reply_text("let me try another way"),
    ]);
    // No `default_tools_approval_mode`, and `record` is not read-only (Codex approves
    // read-only tools itself).
    let codex = Codex::new(&bench.home, &bench.endpoint.openai_base_url())?
        .with_mcp_server(probe.requiring_approval())?;

    let run = codex.turn(&bench.project, "record this").run()?;

    let calls = run.items_of("mcp_tool_call");
    assert_eq!(calls.len(), 1, "{}", run.output.stdout);
    assert_eq!(calls[0]["status"], json!("failed"));
    assert_eq!(
        calls[0]["error"]["message"],
        json!("MCP tool call requires approval, but approval policy is never")
    );
    assert!(
        probe_calls(&log)?.is_empty(),
        "the server never got the call"
    );
    // The turn goes on and completes with whatever the model says next.
    assert!(run.turn_completed());
    assert_eq!(run.final_message(), Some("let me try another way"));
    Ok(())
}
