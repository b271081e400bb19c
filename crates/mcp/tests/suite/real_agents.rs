//! The real Claude Code (2.1.332) and Codex (0.171.0) calling `cross-agent mcp` through their
//! own MCP registrations, against the scripted model endpoint and the real daemon:
//! - each calls `bridge_status`, and the daemon's answer shows it identified the caller's
//!   exact session (Claude from `CLAUDE_CODE_SESSION_ID`, Codex from the per-call
//!   `x-codex-turn-metadata`);
//! - end to end, a Claude session calls `send_to_codex` and a real Codex thread receives the
//!   bridge envelope and answers, the delivery ending `delivered`; and Codex → Claude alike.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_testkit::agents::{AgentHome, AgentKind, Claude, Codex, McpServer, agent_binary};
use cross_agent_testkit::endpoint::{Api, ModelEndpoint, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Scratch, cross_agent_bin};

struct Bench {
    endpoint: ModelEndpoint,
    home: AgentHome,
    project: PathBuf,
    scratch: Scratch,
}

impl Bench {
    fn new() -> Result<Self> {
        let endpoint = ModelEndpoint::start()?;
        let home = AgentHome::new()?;
        let project = home.project("proj")?;
        Ok(Self {
            endpoint,
            home,
            project,
            scratch: Scratch::new()?,
        })
    }

    /// `cross-agent mcp` registered as `cross-agent`, on this bench's daemon home.
    fn server(&self) -> McpServer {
        McpServer::new("cross-agent", cross_agent_bin())
            .arg("mcp")
            .env(
                "CROSS_AGENT_HOME",
                self.scratch.cross_agent_home().to_string_lossy(),
            )
            .env("HOME", self.home.path().to_string_lossy())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
    }

    fn cross_agent(&self, args: &[&str]) -> Result<std::process::Output> {
        Ok(Command::new(cross_agent_bin())
            .args(args)
            .env("CROSS_AGENT_HOME", self.scratch.cross_agent_home())
            .env("HOME", self.home.path())
            .output()?)
    }

    /// Polls `cross-agent status <id> --json` until the delivery is finished.
    fn wait_for_delivery(&self, delivery_id: &str, limit: Duration) -> Result<Value> {
        let started = Instant::now();
        loop {
            let output = self.cross_agent(&["status", delivery_id, "--json"])?;
            if output.status.success() {
                let status: Value = serde_json::from_slice(&output.stdout)?;
                let state = status["delivery"]["state"].as_str().unwrap_or("");
                if state == "delivered" || state == "failed" {
                    return Ok(status);
                }
            }
            if started.elapsed() > limit {
                bail!(
                    "delivery {delivery_id} did not finish within {limit:?}; last status: {}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// The tool result the model was handed back (the request that carried it).
fn tool_result_json(endpoint: &ModelEndpoint, api: Api, needle: &str) -> Result<Value> {
    let text = endpoint
        .model_requests()
        .into_iter()
        .filter(|request| request.api == api)
        .filter_map(|request| request.last_tool_result)
        .find(|text| text.contains(needle))
        .with_context(|| format!("no tool result containing {needle}"))?;
    let start = text.find('{').context("JSON in the tool result")?;
    let end = text.rfind('}').context("JSON in the tool result")?;
    serde_json::from_str(&text[start..=end]).with_context(|| format!("tool result: {text}"))
}

#[test]
fn real_claude_calls_bridge_status_and_the_daemon_knows_its_session() -> Result<()> {
    let bench = Bench::new()?;
    bench.endpoint.script([
        Rule::on_user_text("check the bridge").tool_call(ToolCall::mcp(
            "cross-agent",
            "bridge_status",
            json!({}),
        )),
        Rule::on_tool_result("server_process").reply_text("bridge checked"),
    ]);
    let claude = Claude::new(&bench.home, &bench.endpoint.anthropic_base_url())?;

    let run = claude
        .turn(&bench.project, "check the bridge")
        .mcp_server(bench.server())
        .run()?
        .expect_success()?;

    assert_eq!(run.result_text(), Some("bridge checked"));
    let session_id = run.session_id().context("a session id")?;
    let status = tool_result_json(&bench.endpoint, Api::Anthropic, "server_process")?;
    assert_eq!(status["caller"]["agent"], json!("claude"), "{status}");
    assert_eq!(status["caller"]["session_id"], json!(session_id));
    assert!(
        status["caller"]["how"]
            .as_str()
            .unwrap_or("")
            .contains("CLAUDE_CODE_SESSION_ID"),
        "{}",
        status["caller"]
    );
    Ok(())
}

#[test]
fn real_codex_calls_bridge_status_and_the_daemon_knows_its_thread() -> Result<()> {
    let bench = Bench::new()?;
    bench.endpoint.script([
        Rule::on_user_text("check the bridge").tool_call(ToolCall::mcp(
            "cross-agent",
            "bridge_status",
            json!({}),
        )),
        Rule::on_tool_result("server_process").reply_text("bridge checked"),
    ]);
    let codex = Codex::new(&bench.home, &bench.endpoint.openai_base_url())?
        .with_mcp_server(bench.server())?;

    let run = codex
        .turn(&bench.project, "check the bridge")
        .run()?
        .expect_success()?;

    assert_eq!(run.final_message(), Some("bridge checked"));
    let thread_id = run.thread_id().context("a thread id")?;
    let status = tool_result_json(&bench.endpoint, Api::Responses, "server_process")?;
    assert_eq!(status["caller"]["agent"], json!("codex"), "{status}");
    assert_eq!(
        status["caller"]["session_id"],
        json!(thread_id),
        "the thread id Codex declared in x-codex-turn-metadata"
    );
    assert!(
        status["caller"]["how"]
            .as_str()
            .unwrap_or("")
            .contains("x-codex-turn-metadata"),
        "{}",
        status["caller"]
    );
    Ok(())
}

#[test]
fn claude_sends_to_codex_and_the_codex_thread_answers() -> Result<()> {
    let bench = Bench::new()?;
    let codex = Codex::new(&bench.home, &bench.endpoint.openai_base_url())?;
    bench.endpoint.script([
        Rule::on_user_text("codex setup")
            .reply_text("codex ready")
            .for_api(Api::Responses),
        Rule::on_user_text("e2e-claude-to-codex")
            .reply_text("forty-two, says codex")
            .for_api(Api::Responses),
    ]);
    let setup = codex
        .turn(&bench.project, "codex setup")
        .run()?
        .expect_success()?;
    let thread_id = setup.thread_id().context("a thread id")?.to_owned();

    bench.endpoint.push(
        Rule::on_user_text("ask codex")
            .tool_call(ToolCall::mcp(
                "cross-agent",
                "send_to_codex",
                json!({"message": "What is 6 times 7? e2e-claude-to-codex", "session_id": thread_id}),
            ))
            .for_api(Api::Anthropic),
    );
    bench.endpoint.push(
        Rule::on_tool_result("delivery_id")
            .reply_text("sent to codex")
            .for_api(Api::Anthropic),
    );
    let codex_bin = agent_binary(AgentKind::Codex)?;
    let server = bench
        .server()
        .env("CROSS_AGENT_CODEX_BIN", codex_bin.to_string_lossy())
        .env("CODEX_HOME", codex.codex_home().to_string_lossy())
        .env("SCRIPTED_KEY", "test-key")
        .env("CROSS_AGENT_CHILD_ENV", "SCRIPTED_KEY");
    let claude = Claude::new(&bench.home, &bench.endpoint.anthropic_base_url())?;

    let run = claude
        .turn(&bench.project, "ask codex")
        .mcp_server(server)
        .run()?
        .expect_success()?;
    assert_eq!(run.result_text(), Some("sent to codex"));
    let claude_session = run.session_id().context("a session id")?.to_owned();

    let receipt = tool_result_json(&bench.endpoint, Api::Anthropic, "delivery_id")?;
    assert_eq!(receipt["accepted"], json!(true), "{receipt}");
    assert_eq!(receipt["target_session_id"], json!(thread_id));
    assert_eq!(receipt["target_selected_by"], json!("caller"));
    let delivery_id = receipt["delivery_id"].as_str().context("delivery_id")?;
    let request_id = receipt["request_id"].as_str().context("request_id")?;

    let status = bench.wait_for_delivery(delivery_id, Duration::from_secs(180))?;
    assert_eq!(status["delivery"]["state"], json!("delivered"), "{status}");
    assert_eq!(status["delivery"]["from_agent"], json!("claude"));
    assert_eq!(status["delivery"]["from_session"], json!(claude_session));
    assert_eq!(status["delivery"]["target_session_id"], json!(thread_id));

    let envelope = bench
        .endpoint
        .model_requests()
        .into_iter()
        .filter(|request| request.api == Api::Responses)
        .filter_map(|request| request.last_user_text)
        .find(|text| text.contains("e2e-claude-to-codex"))
        .context("Codex received the message")?;
    assert!(
        envelope.contains("=== CROSS-AGENT BRIDGE MESSAGE ==="),
        "{envelope}"
    );
    assert!(
        envelope.contains(&format!("reply-to: claude session {claude_session}")),
        "{envelope}"
    );
    assert!(envelope.contains(request_id), "{envelope}");
    Ok(())
}

#[test]
fn codex_sends_to_claude_and_the_claude_session_answers() -> Result<()> {
    let bench = Bench::new()?;
    let claude = Claude::new(&bench.home, &bench.endpoint.anthropic_base_url())?;
    bench.endpoint.script([
        Rule::on_user_text("claude setup")
            .reply_text("claude ready")
            .for_api(Api::Anthropic),
        Rule::on_user_text("e2e-codex-to-claude")
            .reply_text("forty-two, says claude")
            .for_api(Api::Anthropic),
    ]);
    let setup = claude
        .turn(&bench.project, "claude setup")
        .run()?
        .expect_success()?;
    let claude_session = setup.session_id().context("a session id")?.to_owned();

    bench.endpoint.push(
        Rule::on_user_text("ask claude")
            .tool_call(ToolCall::mcp(
                "cross-agent",
                "send_to_claude",
                json!({"message": "What is 6 times 7? e2e-codex-to-claude", "session_id": claude_session}),
            ))
            .for_api(Api::Responses),
    );
    bench.endpoint.push(
        Rule::on_tool_result("delivery_id")
            .reply_text("sent to claude")
            .for_api(Api::Responses),
    );
    let claude_bin = agent_binary(AgentKind::Claude)?;
    let server = bench
        .server()
        .env("CROSS_AGENT_CLAUDE_BIN", claude_bin.to_string_lossy())
        .env("ANTHROPIC_BASE_URL", bench.endpoint.anthropic_base_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env(
            "CROSS_AGENT_CHILD_ENV",
            "ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY,CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        );
    let codex =
        Codex::new(&bench.home, &bench.endpoint.openai_base_url())?.with_mcp_server(server)?;

    let run = codex
        .turn(&bench.project, "ask claude")
        .run()?
        .expect_success()?;
    assert_eq!(run.final_message(), Some("sent to claude"));
    let thread_id = run.thread_id().context("a thread id")?.to_owned();

    let receipt = tool_result_json(&bench.endpoint, Api::Responses, "delivery_id")?;
    assert_eq!(receipt["accepted"], json!(true), "{receipt}");
    assert_eq!(receipt["target_session_id"], json!(claude_session));
    let delivery_id = receipt["delivery_id"].as_str().context("delivery_id")?;

    let status = bench.wait_for_delivery(delivery_id, Duration::from_secs(180))?;
    assert_eq!(status["delivery"]["state"], json!("delivered"), "{status}");
    assert_eq!(status["delivery"]["from_agent"], json!("codex"));
    assert_eq!(status["delivery"]["from_session"], json!(thread_id));

    let envelope = bench
        .endpoint
        .model_requests()
        .into_iter()
        .filter(|request| request.api == Api::Anthropic)
        .filter_map(|request| request.last_user_text)
        .find(|text| text.contains("e2e-codex-to-claude"))
        .context("Claude received the message")?;
    assert!(
        envelope.contains("=== CROSS-AGENT BRIDGE MESSAGE ==="),
        "{envelope}"
    );
    assert!(
        envelope.contains(&format!("reply-to: codex session {thread_id}")),
        "{envelope}"
    );
    Ok(())
}
