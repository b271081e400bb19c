//! The MCP tools' `host` parameter (docs/remote.md, "The MCP tools"), against a real sshd on
//! loopback standing for another machine (`cross_agent_testkit::sshd`): this machine's daemon on
//! one temporary home, the remote's on another, reached only through `ssh there cross-agent rpc
//! --stdio`.
//! - over `cross-agent mcp`'s real stdio: `list_agent_sessions(host="all")` merges, a name on
//!   two machines with `host="all"` is refused naming both, an unknown host is refused naming
//!   the configured ones;
//! - the real Claude Code here calls `send_to_codex(host="there")` for a real Codex thread
//!   there and the answer comes back; then the link is cut while the remote Codex turn runs
//!   (the scripted model holds its reply), comes back, and the delivery ends with the remote's
//!   answer — the remote Codex got the prompt once, nothing was re-sent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_testkit::agents::{AgentHome, AgentKind, Claude, Codex, McpServer, agent_binary};
use cross_agent_testkit::endpoint::{Api, ModelEndpoint, Reply, Rule, ToolCall};
use cross_agent_testkit::sshd::Sshd;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{McpProcess, Scratch, cross_agent_bin};

/// This machine: a scratch home whose daemon links to the rig's sshd as host `there`.
struct Here {
    scratch: Scratch,
    ssh: PathBuf,
}

impl Here {
    fn new(sshd: &Sshd) -> Result<Here> {
        let scratch = Scratch::new()?;
        std::fs::create_dir_all(scratch.home())?;
        Ok(Here {
            scratch,
            ssh: sshd.ssh_program(),
        })
    }

    /// The environment of anything run here: the scratch homes and the rig's ssh.
    fn env(&self) -> BTreeMap<String, String> {
        let mut env = self.scratch.env();
        env.insert("CROSS_AGENT_SSH".into(), self.ssh.to_string_lossy().into());
        env
    }

    fn run(&self, args: &[&str]) -> Result<Output> {
        Ok(Command::new(cross_agent_bin())
            .args(args)
            .env_clear()
            .envs(self.env())
            .output()?)
    }

    /// Starts the daemon here (with the rig's ssh), adds host `there` and waits for its link.
    fn link(&self) -> Result<()> {
        for args in [&["daemon", "start"][..], &["hosts", "add", Sshd::ALIAS]] {
            let out = self.run(args)?;
            if !out.status.success() {
                bail!("{args:?}: {}", String::from_utf8_lossy(&out.stderr));
            }
        }
        self.wait_for_link(|_| true)?;
        Ok(())
    }

    /// `hosts status --json`'s one host.
    fn host(&self) -> Result<Value> {
        let out = self.run(&["hosts", "status", "--json"])?;
        let status: Value = serde_json::from_slice(&out.stdout)
            .with_context(|| String::from_utf8_lossy(&out.stderr).into_owned())?;
        Ok(status["hosts"][0].clone())
    }

    /// Waits until the link is connected and `also` holds for its status.
    fn wait_for_link(&self, also: impl Fn(&Value) -> bool) -> Result<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let host = self.host()?;
            if host["state"] == "connected" && also(&host) {
                return Ok(host);
            }
            if Instant::now() > deadline {
                bail!("the link did not come up: {host:#}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `cross-agent status ID --json` here, once the delivery is finished.
    fn finished(&self, delivery_id: &str) -> Result<Value> {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let out = self.run(&["status", delivery_id, "--json"])?;
            let status: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            let state = status["delivery"]["state"].as_str().unwrap_or("");
            if state == "delivered" || state == "failed" {
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!(
                    "delivery {delivery_id} did not finish: {status:#} {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn rig() -> Result<Option<Sshd>> {
    if !Sshd::available() {
        eprintln!("skipped: no /usr/sbin/sshd (scripts/install-debian-packages installs it)");
        return Ok(None);
    }
    Ok(Some(Sshd::start(&cross_agent_bin())?))
}

/// A Claude transcript titled `title` under `home`, active a minute ago.
fn claude_session(home: &Path, cwd: &str, id: &str, title: &str) -> Result<()> {
    use cross_agent_testkit::synthetic_stores::ClaudeTranscript;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    let mut t = ClaudeTranscript::new(home, cwd, id);
    t.user("hello", now - 60_000)
        .custom_title(title)
        .assistant_text("Hi.", now - 59_000);
    t.write()?;
    Ok(())
}

/// A `tools/call` over the server's stdio: the result object.
fn call(server: &mut McpProcess, tool: &str, arguments: Value) -> Result<Value> {
    let response = server.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
    response
        .get("result")
        .cloned()
        .with_context(|| format!("no result: {response}"))
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_tools_take_host_all_merges_and_refuses_ambiguous_and_unknown_hosts() -> Result<()> {
    let Some(sshd) = rig()? else { return Ok(()) };
    let here = Here::new(&sshd)?;
    claude_session(&here.scratch.home(), "/work/api", "c-here", "shared")?;
    claude_session(&sshd.remote_home(), "/srv/api", "c-there", "shared")?;
    claude_session(&sshd.remote_home(), "/srv/api", "c-lonely", "lonely")?;
    here.link()?;
    let mut server = McpProcess::spawn(&here.scratch, &here.env(), &here.scratch.home())?;
    server.initialize("remote-test")?;

    // Every tool that addresses a session says `host` in its schema.
    let listed = server.request("tools/list", json!({}))?;
    for tool in listed["result"]["tools"].as_array().context("tools")? {
        let description = tool["inputSchema"]["properties"]["host"]["description"]
            .as_str()
            .unwrap_or_default();
        assert!(
            description.contains("cross-agent hosts list"),
            "{}: {tool:#}",
            tool["name"]
        );
    }

    // host="all": this machine's and there's, each entry naming its host.
    let all = call(
        &mut server,
        "list_agent_sessions",
        json!({"agent": "claude", "scope": "any", "host": "all"}),
    )?;
    assert_eq!(all["isError"], json!(false), "{all:#}");
    let mut seen: Vec<(Value, String)> = all["structuredContent"]["sessions"]["claude"]
        .as_array()
        .context("claude entries")?
        .iter()
        .map(|e| {
            (
                e["host"].clone(),
                e["session_id"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    seen.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        seen,
        vec![
            (Value::Null, "c-here".to_owned()),
            (json!("there"), "c-lonely".to_owned()),
            (json!("there"), "c-there".to_owned()),
        ]
    );
    // Without host: this machine only.
    let local = call(
        &mut server,
        "list_agent_sessions",
        json!({"agent": "claude", "scope": "any"}),
    )?;
    let ids: Vec<&str> = local["structuredContent"]["sessions"]["claude"]
        .as_array()
        .context("claude entries")?
        .iter()
        .filter_map(|e| e["session_id"].as_str())
        .collect();
    assert_eq!(ids, vec!["c-here"]);

    // A name on both machines, asked of all: refused naming both, nothing sent.
    let ambiguous = call(
        &mut server,
        "send_to_claude",
        json!({"message": "hi", "session_id": "shared", "host": "all"}),
    )?;
    assert_eq!(ambiguous["isError"], json!(true), "{ambiguous:#}");
    assert!(
        text_of(&ambiguous).contains("on this machine and host `there`"),
        "{ambiguous:#}"
    );
    assert_eq!(ambiguous["structuredContent"]["reason"], "ambiguous_name");

    // An unknown host: refused naming the configured ones, for a send and for a listing.
    let unknown = call(
        &mut server,
        "send_to_codex",
        json!({"message": "hi", "session_id": "lonely", "host": "buildbox"}),
    )?;
    assert_eq!(unknown["isError"], json!(true), "{unknown:#}");
    assert!(
        text_of(&unknown).contains("no host `buildbox` in hosts.toml (known: there)"),
        "{unknown:#}"
    );
    let unknown = call(
        &mut server,
        "list_agent_sessions",
        json!({"host": "buildbox"}),
    )?;
    assert_eq!(unknown["isError"], json!(true), "{unknown:#}");
    assert_eq!(
        unknown["structuredContent"]["error"], "invalid_arguments",
        "{unknown:#}"
    );
    assert!(
        text_of(&unknown).contains("no host `buildbox` in hosts.toml (known: there)"),
        "{unknown:#}"
    );
    // A host that is not a string is the argument's fault, named.
    let bad = call(
        &mut server,
        "send_to_claude",
        json!({"message": "hi", "host": 7}),
    )?;
    assert_eq!(bad["structuredContent"]["error"], "invalid_arguments");
    assert!(text_of(&bad).contains("`host`"), "{bad:#}");
    server.close()?;
    Ok(())
}

/// The real Claude here and the real Codex there, one scripted model for both.
#[test]
fn real_claude_here_asks_real_codex_there_and_a_cut_mid_turn_loses_nothing() -> Result<()> {
    let Some(sshd) = rig()? else { return Ok(()) };
    let endpoint = ModelEndpoint::start()?;
    let release = tempfile::tempdir()?;
    let released = release.path().join("go");
    endpoint.script([
        Rule::on_user_text("codex setup")
            .reply_text("codex ready")
            .for_api(Api::Responses),
        Rule::on_user_text("remote-first")
            .reply_text("forty-two, says codex there")
            .for_api(Api::Responses),
        Rule::on_user_text("remote-cut")
            .reply(Reply::text("the held answer from there").after_file(&released))
            .for_api(Api::Responses),
    ]);

    // There: a Codex thread, and its daemon running with what its Codex needs.
    let there_agents = AgentHome::new()?;
    let there_project = there_agents.project("svc")?;
    let codex = Codex::new(&there_agents, &endpoint.openai_base_url())?;
    let setup = codex
        .turn(&there_project, "codex setup")
        .run()?
        .expect_success()?;
    let thread_id = setup.thread_id().context("a thread id")?.to_owned();
    let started = sshd
        .remote_command(&["daemon", "start"])
        .env("CODEX_HOME", codex.codex_home())
        .env("CROSS_AGENT_CODEX_BIN", agent_binary(AgentKind::Codex)?)
        .env("SCRIPTED_KEY", "test-key")
        .env("CROSS_AGENT_CHILD_ENV", "SCRIPTED_KEY,CODEX_HOME")
        // The late-answer watch there looks often, so a late answer is found at once.
        .env("CROSS_AGENT_LATE_ANSWER_POLL_MS", "200")
        .stdout(Stdio::null())
        .status()?;
    assert!(started.success());

    // Here: Claude Code, whose `cross-agent mcp` reaches this machine's daemon.
    let here = Here::new(&sshd)?;
    here.link()?;
    let here_agents = AgentHome::new()?;
    let here_project = here_agents.project("app")?;
    let server = || {
        McpServer::new("cross-agent", cross_agent_bin())
            .arg("mcp")
            .env(
                "CROSS_AGENT_HOME",
                here.scratch.cross_agent_home().to_string_lossy(),
            )
            .env("HOME", here_agents.path().to_string_lossy())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
    };
    let claude = Claude::new(&here_agents, &endpoint.anthropic_base_url())?;
    let ask = |prompt: &str, message: &str| {
        Rule::on_user_text(prompt)
            .tool_call(ToolCall::mcp(
                "cross-agent",
                "send_to_codex",
                json!({"message": message, "session_id": thread_id, "host": "there"}),
            ))
            .for_api(Api::Anthropic)
            .once()
    };
    endpoint.push(ask("ask codex there", "What is 6 times 7? remote-first"));
    endpoint.push(
        Rule::on_tool_result("delivery_id")
            .reply_text("sent")
            .for_api(Api::Anthropic),
    );

    let run = claude
        .turn(&here_project, "ask codex there")
        .mcp_server(server())
        .run()?
        .expect_success()?;
    let claude_session = run.session_id().context("a session id")?.to_owned();
    let receipt = receipts(&endpoint)
        .into_iter()
        .next()
        .context("a receipt")?;
    assert_eq!(receipt["accepted"], json!(true), "{receipt:#}");
    assert_eq!(receipt["host"], json!("there"));
    assert_eq!(receipt["target_session_id"], json!(thread_id));
    let first = receipt["delivery_id"].as_str().context("delivery_id")?;

    let status = here.finished(first)?;
    assert_eq!(status["delivery"]["state"], "delivered", "{status:#}");
    assert_eq!(status["delivery"]["host"], "there");
    assert_eq!(status["delivery"]["from_session"], json!(claude_session));
    assert!(
        status["delivery"]["reply_preview"]
            .as_str()
            .unwrap_or("")
            .contains("forty-two, says codex there"),
        "{status:#}"
    );

    // Codex answered without the request's id: taken by timing, so the watch there follows
    // its thread. A later turn there that carries the id is the late answer; it reaches the
    // record here as a late answer of this daemon's own, as a local one would.
    assert_eq!(
        status["delivery"]["is_reply_possibly_interim"], true,
        "{status:#}"
    );
    assert!(
        status["delivery"]["late_answer_watch_until"].is_string(),
        "{status:#}"
    );
    let request_id = receipt["request_id"].as_str().context("request_id")?;
    endpoint.push(
        Rule::on_user_text("answer properly")
            .reply_text(format!("Properly: forty-two.\n{request_id}"))
            .for_api(Api::Responses),
    );
    codex
        .turn(&there_project, "answer properly")
        .resume(&thread_id)
        .run()?
        .expect_success()?;
    let late_id = wait_for(&here, first, |d| {
        d["late_reply_delivery_id"].as_str().map(str::to_owned)
    })?;
    let late = here.finished(&late_id)?;
    assert_eq!(
        late["delivery"]["answers_delivery_id"],
        json!(first),
        "{late:#}"
    );
    assert_eq!(late["delivery"]["host"], "there");
    assert_eq!(late["delivery"]["from_session"], json!(claude_session));
    assert!(
        late["delivery"]["reply_preview"]
            .as_str()
            .unwrap_or("")
            .starts_with("Properly: forty-two."),
        "{late:#}"
    );
    assert!(
        late["delivery"]["reply_header"]
            .as_str()
            .unwrap_or("")
            .contains("LATE ANSWER"),
        "{late:#}"
    );

    // The cut: the remote Codex turn is running (its model request is held) when the ssh child
    // is killed; the link comes back; the delivery ends with the remote's answer.
    endpoint.push(ask("once more", "And 7 times 6? remote-cut"));
    claude
        .turn(&here_project, "once more")
        .resume(&claude_session)
        .mcp_server(server())
        .run()?
        .expect_success()?;
    let receipt = receipts(&endpoint)
        .into_iter()
        .nth(1)
        .context("a second receipt")?;
    let cut = receipt["delivery_id"].as_str().context("delivery_id")?;
    endpoint.wait_until(Duration::from_secs(120), |requests| {
        prompts_carrying(requests, "remote-cut") == 1
    })?;
    // Mid-turn: the record here waits on the remote's.
    let before = here.run(&["status", cut, "--json"])?;
    let before: Value = serde_json::from_slice(&before.stdout)?;
    let state = before["delivery"]["state"].as_str().unwrap_or("");
    assert!(
        state == "delivering" || state == "awaiting-peer",
        "{before:#}"
    );
    let link = here.host()?;
    let ssh_pid = link["ssh_pid"].as_u64().context("the ssh child")?;
    assert!(
        Command::new("kill")
            .args(["-KILL", &ssh_pid.to_string()])
            .status()?
            .success()
    );
    std::fs::write(&released, "")?;
    here.wait_for_link(|h| h["ssh_pid"].as_u64().is_some_and(|pid| pid != ssh_pid))?;

    let status = here.finished(cut)?;
    assert_eq!(status["delivery"]["state"], "delivered", "{status:#}");
    assert!(
        status["delivery"]["reply_preview"]
            .as_str()
            .unwrap_or("")
            .contains("the held answer from there"),
        "{status:#}"
    );
    // There, the same id; the remote Codex got the prompt once: nothing was re-sent.
    let there = sshd.remote_command(&["status", cut, "--json"]).output()?;
    let there: Value = serde_json::from_slice(&there.stdout)?;
    assert_eq!(there["delivery"]["delivery_id"], json!(cut));
    assert_eq!(there["delivery"]["state"], "delivered");
    assert_eq!(
        prompts_carrying(&endpoint.model_requests(), "remote-cut"),
        1
    );
    Ok(())
}

/// Polls `status ID --json` here until `found` picks something from the delivery.
fn wait_for<T>(here: &Here, delivery_id: &str, found: impl Fn(&Value) -> Option<T>) -> Result<T> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = here.run(&["status", delivery_id, "--json"])?;
        let status: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if let Some(value) = found(&status["delivery"]) {
            return Ok(value);
        }
        if Instant::now() > deadline {
            bail!("gave up waiting on delivery {delivery_id}: {status:#}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// How many model requests to Codex carry `needle` in their last user message.
fn prompts_carrying(
    requests: &[cross_agent_testkit::endpoint::RecordedRequest],
    needle: &str,
) -> usize {
    requests
        .iter()
        .filter(|r| r.api == Api::Responses)
        .filter(|r| {
            r.last_user_text
                .as_deref()
                .is_some_and(|t| t.contains(needle))
        })
        .count()
}

/// The receipts Claude was handed, in order, each once.
fn receipts(endpoint: &ModelEndpoint) -> Vec<Value> {
    let mut seen: Vec<Value> = Vec::new();
    let results = endpoint
        .model_requests()
        .into_iter()
        .filter(|r| r.api == Api::Anthropic)
        .filter_map(|r| r.last_tool_result);
    for text in results {
        let (Some(start), Some(end)) = (text.find('{'), text.rfind('}')) else {
            continue;
        };
        let Ok(receipt) = serde_json::from_str::<Value>(&text[start..=end]) else {
            continue;
        };
        if receipt["delivery_id"].is_string()
            && !seen
                .iter()
                .any(|s| s["delivery_id"] == receipt["delivery_id"])
        {
            seen.push(receipt);
        }
    }
    seen
}
