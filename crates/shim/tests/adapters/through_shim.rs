//! The same wires through the real `cross-agent shim codex|grok` process: the test plays the
//! extension over the shim's stdio and the daemon over the socket its registration names.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_protocol::panel::{
    Injection, InjectionKind, PanelRegistration, PanelSessionState, ShimEvent, ShimRequest,
};
use cross_agent_testkit::agents::{AgentHome, AgentKind, Codex, agent_binary};
use cross_agent_testkit::binaries::{cross_agent_bin, fake_grok_bin, stdio_recorder_bin};
use cross_agent_testkit::panel::PanelDriver;
use cross_agent_testkit::{ModelEndpoint, Rule};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(90);

/// `cross-agent shim <agent> <args…>` in `project`, with `env` and the state in `state`.
fn shim(
    agent: &str,
    args: &[&str],
    project: &Path,
    state: &Path,
    env: impl IntoIterator<Item = (String, std::ffi::OsString)>,
) -> Result<PanelDriver> {
    let mut command = Command::new(cross_agent_bin()?);
    command
        .current_dir(project)
        .env_clear()
        .envs(env)
        .env("CROSS_AGENT_HOME", state)
        .arg("shim")
        .arg(agent)
        .args(args);
    PanelDriver::start(command)
}

fn registration(state: &Path, agent: &str, pid: u32) -> Result<PanelRegistration> {
    let path = state.join("panels").join(format!("{agent}-{pid}.json"));
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// Waits until the shim's registration shows `session` idle.
fn idle_session(state: &Path, agent: &str, pid: u32, session: &str) -> Result<PathBuf> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Ok(found) = registration(state, agent, pid)
            && found.sessions.iter().any(|s| {
                s.session_id.as_deref() == Some(session) && s.state == PanelSessionState::Idle
            })
        {
            return Ok(PathBuf::from(found.socket));
        }
        if Instant::now() > deadline {
            bail!(
                "{session} never showed idle in the registration: {:?}",
                registration(state, agent, pid)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One injection over the shim's socket, as the daemon sends it; every event until the close.
fn inject(socket: &Path, injection: Injection) -> Result<Vec<ShimEvent>> {
    let mut stream = UnixStream::connect(socket)
        .with_context(|| format!("connecting to {}", socket.display()))?;
    let mut line = serde_json::to_vec(&ShimRequest::Inject(injection))?;
    line.push(b'\n');
    stream.write_all(&line)?;
    stream.set_read_timeout(Some(PATIENCE))?;
    let mut events = Vec::new();
    for line in BufReader::new(stream).lines() {
        events.push(serde_json::from_str(&line?)?);
    }
    Ok(events)
}

fn request(session: &str, text: &str) -> Injection {
    Injection {
        delivery_id: "dlv_shim".into(),
        kind: InjectionKind::Request,
        session_id: Some(session.to_owned()),
        new_session: false,
        text: text.to_owned(),
        request_id: None,
        title: None,
        sender_label: Some("claude · session 1234".into()),
    }
}

fn no_xagent_id(lines: &[Value]) {
    for line in lines {
        let id = line.get("id").and_then(Value::as_str).unwrap_or_default();
        assert!(!id.starts_with("xagent-"), "the extension got {line}");
    }
}

#[test]
fn a_codex_panel_thread_a_headless_resume_cannot_reach_takes_a_message_through_its_shim()
-> Result<()> {
    let endpoint = ModelEndpoint::start()?;
    endpoint.script([
        Rule::on_user_text("human hello").reply_text("hello human"),
        Rule::on_user_text("relayed question").reply_text("relayed answer"),
    ]);
    let home = AgentHome::new()?;
    let project = home.project("panel")?;
    let state = home.path().join(".cross-agent");
    let codex = Codex::new(&home, &endpoint.openai_base_url())?;
    let env: Vec<(String, std::ffi::OsString)> = codex
        .app_server(&project)
        .get_envs()
        .filter_map(|(key, value)| Some((key.to_str()?.to_owned(), value?.to_owned())))
        .chain([(
            "CROSS_AGENT_REAL_CODEX".to_owned(),
            agent_binary(AgentKind::Codex)?.into_os_string(),
        )])
        .collect();
    let mut panel = shim("codex", &["app-server"], &project, &state, env)?;
    panel.send(&json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "codex_vscode", "title": "Test Extension", "version": "0.0.1"}, "capabilities": null}}).to_string())?;
    panel.next_line(PATIENCE, |l| l["id"] == 1)?;
    panel.send(&json!({"method": "initialized"}).to_string())?;
    panel.send(&json!({"id": 2, "method": "thread/start", "params": {"cwd": project, "approvalPolicy": "never", "sandbox": "read-only"}}).to_string())?;
    let started = panel.next_line(PATIENCE, |l| l["id"] == 2)?;
    let thread = started["result"]["thread"]["id"]
        .as_str()
        .context("no thread")?
        .to_owned();
    panel.send(&json!({"id": 3, "method": "turn/start", "params": {"threadId": thread, "input": [{"type": "text", "text": "human hello"}]}}).to_string())?;
    panel.next_line(PATIENCE, |l| l["method"] == "turn/completed")?;

    let headless = codex
        .turn(&project, "headless hello")
        .resume(&thread)
        .timeout(PATIENCE)
        .run()?;
    let said = format!("{}{}", headless.output.stdout, headless.output.stderr);
    assert!(said.contains("already has an active writer"), "{said}");

    let socket = idle_session(&state, "codex", panel.pid(), &thread)?;
    let events = inject(&socket, request(&thread, "relayed question"))?;
    assert_eq!(
        events,
        vec![
            ShimEvent::Accepted {
                session_id: Some(thread.clone()),
                queued: false
            },
            ShimEvent::TurnEnded {
                session_id: Some(thread.clone()),
                answer: Some("relayed answer".into()),
                stop: "completed".into(),
                is_error: false
            }
        ]
    );
    // The turn's end came over the socket; wait for the panel's reader to get the item too.
    panel.next_line(PATIENCE, |l| {
        l["method"] == "item/started"
            && l["params"]["item"]["content"][0]["text"] == "relayed question"
    })?;
    let lines = panel.lines();
    no_xagent_id(&lines);
    // The human typed once; the injected turn did not count.
    let found = registration(&state, "codex", panel.pid())?;
    let session = &found.sessions[0];
    assert!(session.last_human_input_ms.is_some());
    panel.close_stdin();
    panel.wait(PATIENCE)?;
    Ok(())
}

#[test]
fn a_grok_panel_session_takes_a_message_through_its_shim() -> Result<()> {
    let home = AgentHome::new()?;
    let project = home.project("panel")?;
    let state = home.path().join(".cross-agent");
    let env = [
        (
            "PATH".to_owned(),
            std::env::var_os("PATH").unwrap_or_default(),
        ),
        ("HOME".to_owned(), home.path().as_os_str().to_owned()),
        (
            "CROSS_AGENT_REAL_GROK".to_owned(),
            fake_grok_bin()?.into_os_string(),
        ),
    ];
    let mut panel = shim("grok", &["agent", "stdio"], &project, &state, env)?;
    panel.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}).to_string())?;
    panel.next_line(PATIENCE, |l| l["id"] == 0)?;
    panel.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": project, "mcpServers": []}}).to_string())?;
    let created = panel.next_line(PATIENCE, |l| l["id"] == 1)?;
    let session = created["result"]["sessionId"]
        .as_str()
        .context("no session")?
        .to_owned();

    let socket = idle_session(&state, "grok", panel.pid(), &session)?;
    let events = inject(&socket, request(&session, "think with a tool"))?;
    assert_eq!(
        events,
        vec![
            ShimEvent::Accepted {
                session_id: Some(session.clone()),
                queued: false
            },
            ShimEvent::TurnEnded {
                session_id: Some(session.clone()),
                answer: Some("grok: think with a tool".into()),
                stop: "end_turn".into(),
                is_error: false
            }
        ]
    );
    // The turn's end came over the socket; the panel's reader may not have every line the shim
    // passed on yet: wait until the answer's chunks have arrived.
    let deadline = std::time::Instant::now() + PATIENCE;
    let lines = loop {
        let lines = panel.lines();
        let said: String = lines
            .iter()
            .filter(|l| l["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|l| l["params"]["update"]["content"]["text"].as_str())
            .collect();
        if said.contains("grok: think with a tool") || std::time::Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let chunks: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["method"] == "session/update")
        .map(|l| {
            let update = &l["params"]["update"];
            (
                update["sessionUpdate"].as_str().unwrap_or_default(),
                update["content"]["text"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        chunks.first(),
        Some(&(
            "agent_message_chunk",
            "> **claude · session 1234**\n>\n> think with a tool\n\n"
        ))
    );
    assert!(
        !chunks
            .iter()
            .any(|(kind, _)| *kind == "agent_thought_chunk")
    );
    no_xagent_id(&lines);
    panel.close_stdin();
    panel.wait(PATIENCE)?;
    Ok(())
}

/// The lines of `bytes` (each with its newline) that `keep` accepts, joined again.
fn lines_where(bytes: &[u8], keep: impl Fn(&Value) -> bool) -> Vec<u8> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .filter(|line| keep(&serde_json::from_slice(line).unwrap_or(Value::Null)))
        .flatten()
        .copied()
        .collect()
}

fn is_ours(line: &Value) -> bool {
    line.get("id")
        .and_then(Value::as_str)
        .is_some_and(|id| id.starts_with("xagent-"))
}

#[test]
fn a_codex_session_with_an_injection_passes_every_other_byte_unchanged_both_ways() -> Result<()> {
    let endpoint = ModelEndpoint::start()?;
    endpoint.script([Rule::on_user_text("relayed").reply_text("relayed answer")]);
    let home = AgentHome::new()?;
    let project = home.project("panel")?;
    let state = home.path().join(".cross-agent");
    let record = home.path().join("record");
    std::fs::create_dir_all(&record)?;
    // The recorder between the shim and the real app-server sees exactly what each got.
    let wrapper = home.path().join("codex-recorded");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' '{}' \"$@\"\n",
            stdio_recorder_bin()?.display(),
            agent_binary(AgentKind::Codex)?.display()
        ),
    )?;
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    let codex = Codex::new(&home, &endpoint.openai_base_url())?;
    let env: Vec<(String, std::ffi::OsString)> = codex
        .app_server(&project)
        .get_envs()
        .filter_map(|(key, value)| Some((key.to_str()?.to_owned(), value?.to_owned())))
        .chain([
            (
                "CROSS_AGENT_REAL_CODEX".to_owned(),
                wrapper.into_os_string(),
            ),
            (
                "CROSS_AGENT_RECORD_DIR".to_owned(),
                record.clone().into_os_string(),
            ),
        ])
        .collect();
    let mut panel = shim("codex", &["app-server"], &project, &state, env)?;
    panel.send(&json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "codex_vscode", "title": "Test Extension", "version": "0.0.1"}, "capabilities": null}}).to_string())?;
    panel.next_line(PATIENCE, |l| l["id"] == 1)?;
    panel.send(&json!({"method": "initialized"}).to_string())?;
    panel.send(&json!({"id": 2, "method": "thread/start", "params": {"cwd": project, "approvalPolicy": "never", "sandbox": "read-only"}}).to_string())?;
    let started = panel.next_line(PATIENCE, |l| l["id"] == 2)?;
    let thread = started["result"]["thread"]["id"]
        .as_str()
        .context("no thread")?
        .to_owned();
    let socket = idle_session(&state, "codex", panel.pid(), &thread)?;
    let events = inject(&socket, request(&thread, "relayed"))?;
    assert!(
        matches!(events.last(), Some(ShimEvent::TurnEnded { .. })),
        "{events:?}"
    );
    panel.send(&json!({"id": 3, "method": "turn/start", "params": {"threadId": thread, "input": [{"type": "text", "text": "after the relay, with unicode: é ✓"}]}}).to_string())?;
    panel.next_line(PATIENCE, |l| l["method"] == "turn/completed")?;
    panel.close_stdin();
    panel.wait(PATIENCE)?;

    let agent_got = std::fs::read(record.join("stdin.bin"))?;
    let agent_sent = std::fs::read(record.join("stdout.bin"))?;
    // The agent got the extension's bytes exactly, plus our own request lines between them.
    assert_eq!(
        String::from_utf8_lossy(&lines_where(&agent_got, |l| !is_ours(l))),
        String::from_utf8_lossy(panel.sent())
    );
    assert!(!lines_where(&agent_got, is_ours).is_empty());
    // The extension got the agent's bytes exactly, less the responses to our requests.
    assert_eq!(
        String::from_utf8_lossy(&panel.received()),
        String::from_utf8_lossy(&lines_where(&agent_sent, |l| !is_ours(l)))
    );
    Ok(())
}
