//! The real Codex 0.171.0 `app-server` behind the Codex adapter, with the test playing the VS
//! Code extension (docs/observed/codex.md §1–§5) and the scripted model endpoint answering.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use cross_agent_protocol::panel::{ApprovalAnswer, Injection, InjectionKind, ShimEvent};
use cross_agent_shim::adapter::PanelAdapter;
use cross_agent_shim::codex::CodexAdapter;
use cross_agent_testkit::agents::{AgentHome, Codex};
use cross_agent_testkit::{ModelEndpoint, Reply, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::pump::Pump;

const PATIENCE: Duration = Duration::from_secs(90);

fn panel(codex: &Codex, project: &Path) -> Result<Pump<CodexAdapter>> {
    let adapter = CodexAdapter::new(&[OsString::from("app-server")])
        .with_default_cwd(Some(project.to_string_lossy().into_owned()));
    Pump::spawn(codex.app_server(project), adapter)
}

/// The extension's handshake and its first thread; returns the thread id.
fn open_thread(pump: &mut Pump<CodexAdapter>, project: &Path, approval: &str) -> Result<String> {
    pump.request(
        &json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "codex_vscode", "title": "Test Extension", "version": "0.0.1"}, "capabilities": null}}),
        PATIENCE,
    )?;
    pump.extension_sends(&json!({"method": "initialized"}));
    let started = pump.request(
        &json!({"id": 2, "method": "thread/start", "params": {"cwd": project, "approvalPolicy": approval, "sandbox": "read-only"}}),
        PATIENCE,
    )?;
    started["result"]["thread"]["id"]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no thread in {started}"))
}

fn request(session: Option<&str>, text: &str) -> Injection {
    Injection {
        delivery_id: format!("dlv_{}", text.len()),
        kind: InjectionKind::Request,
        session_id: session.map(str::to_owned),
        new_session: false,
        text: text.to_owned(),
        request_id: None,
        title: None,
        sender_label: None,
    }
}

fn answer_of(event: &ShimEvent) -> Option<&str> {
    match event {
        ShimEvent::TurnEnded { answer, .. } => answer.as_deref(),
        _ => None,
    }
}

/// Whether the extension saw a `userMessage` item carrying `text` (the panel draws it).
fn panel_shows_user_message(values: &[Value], text: &str) -> bool {
    values.iter().any(|v| {
        v["method"] == "item/started"
            && v["params"]["item"]["type"] == "userMessage"
            && v["params"]["item"]["content"][0]["text"] == text
    })
}

#[test]
fn a_panel_thread_a_headless_resume_cannot_reach_takes_messages_idle_and_busy() -> Result<()> {
    let endpoint = ModelEndpoint::start()?;
    let home = AgentHome::new()?;
    // The human's answer is held until the bridged message is in: a gate, not a guessed delay.
    let release = home.path().join("release-the-human-answer");
    endpoint.script([
        Rule::on_user_text("bridged one").reply_text("codex answer one"),
        Rule::on_user_text("slow human").reply(Reply::text("human answer").after_file(&release)),
        Rule::on_user_text("bridged two").reply_text("codex answer two"),
    ]);
    let project = home.project("panel")?;
    let codex = Codex::new(&home, &endpoint.openai_base_url())?;
    let mut pump = panel(&codex, &project)?;
    let thread = open_thread(&mut pump, &project, "never")?;

    // Idle: the turn goes in at once, the panel shows it, the answer is reported.
    pump.inject(1, request(Some(&thread), "bridged one"));
    assert_eq!(
        pump.reports_of(1)[0],
        ShimEvent::Accepted {
            session_id: Some(thread.clone()),
            queued: false
        }
    );
    let ended = pump.finished(1, PATIENCE)?;
    assert_eq!(answer_of(&ended), Some("codex answer one"), "{ended:?}");
    assert!(panel_shows_user_message(
        &pump.extension_values(),
        "bridged one"
    ));

    // The panel's app-server holds the thread: a headless resume cannot reach it.
    let headless = codex
        .turn(&project, "headless hello")
        .resume(&thread)
        .timeout(PATIENCE)
        .run()?;
    assert!(!headless.output.status.success());
    let said = format!("{}{}", headless.output.stdout, headless.output.stderr);
    assert!(said.contains("already has an active writer"), "{said}");

    // Busy: a human turn runs; ours waits for it instead of steering it.
    pump.extension_sends(&json!({"id": 3, "method": "turn/start", "params": {"threadId": thread, "input": [{"type": "text", "text": "slow human"}]}}));
    pump.until("the human's turn to start", PATIENCE, |p| {
        p.extension_values()
            .iter()
            .any(|v| v["method"] == "turn/started")
            && p.response_to(&json!(3)).is_some()
    })?;
    pump.inject(2, request(Some(&thread), "bridged two"));
    assert_eq!(
        pump.reports_of(2)[0],
        ShimEvent::Accepted {
            session_id: Some(thread.clone()),
            queued: true
        }
    );
    std::fs::write(&release, "")?;
    let ended = pump.finished(2, PATIENCE)?;
    assert_eq!(answer_of(&ended), Some("codex answer two"), "{ended:?}");
    // The human's answer was not lost to a steer: its turn completed with it, before ours began.
    let values = pump.extension_values();
    let human_done = values
        .iter()
        .position(|v| {
            v["method"] == "turn/completed"
                && v["params"]["turn"]["items"][0]["text"] == "human answer"
        })
        .context("the human's turn never completed with its answer")?;
    let ours_began = values
        .iter()
        .position(|v| {
            v["method"] == "item/started"
                && v["params"]["item"]["content"][0]["text"] == "bridged two"
        })
        .context("the panel never showed the second message")?;
    assert!(human_done < ours_began);
    pump.assert_no_xagent_id_reached_the_extension();
    Ok(())
}

#[test]
fn a_new_conversation_is_opened_named_and_its_approval_answered_through_the_shim() -> Result<()> {
    let endpoint = ModelEndpoint::start()?;
    endpoint.script([
        Rule::on_user_text("please run the command").tool_call(ToolCall::new(
            "exec_command",
            json!({"cmd": "echo approved"}),
        )),
        Rule::on_any_tool_result().reply_text("command done"),
    ]);
    let home = AgentHome::new()?;
    let project = home.project("panel")?;
    let codex = Codex::new(&home, &endpoint.openai_base_url())?;
    let mut pump = panel(&codex, &project)?;
    open_thread(&mut pump, &project, "untrusted")?;

    let mut fresh = request(None, "please run the command");
    fresh.new_session = true;
    fresh.title = Some("claude: please run the command".into());
    pump.inject(1, fresh);
    pump.until("the approval", PATIENCE, |p| {
        p.reports_of(1)
            .iter()
            .any(|e| matches!(e, ShimEvent::ApprovalPending { .. }))
    })?;
    let reports = pump.reports_of(1);
    let ShimEvent::SessionStarted { session_id: thread } = &reports[1] else {
        panic!("expected session_started second, got {reports:?}");
    };
    let thread = thread.clone();
    let ShimEvent::ApprovalPending { approval } = &reports[2] else {
        panic!("expected approval_pending third, got {reports:?}");
    };
    assert_eq!(approval.kind, "item/commandExecution/requestApproval");
    assert!(
        approval
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("echo approved")),
        "{approval:?}"
    );
    // The extension was shown the same request, with the app-server's own id.
    let values = pump.extension_values();
    assert!(values.iter().any(|v| {
        v["method"] == "item/commandExecution/requestApproval"
            && v["id"].as_u64().map(|id| id.to_string()).as_deref()
                == Some(approval.request_id.as_str())
    }));
    // It learnt of the thread, and of its name.
    assert!(
        values
            .iter()
            .any(|v| v["method"] == "thread/started" && v["params"]["thread"]["id"] == thread)
    );
    assert!(values.iter().any(|v| v["method"] == "thread/name/updated"
        && v["params"]["threadName"] == "claude: please run the command"));

    pump.answer_approval(
        2,
        ApprovalAnswer {
            session_id: Some(thread.clone()),
            request_id: approval.request_id.clone(),
            allow: true,
            message: None,
        },
    );
    assert_eq!(
        pump.reports_of(2),
        vec![ShimEvent::ApprovalAnswered {
            accepted: true,
            reason: None
        }]
    );
    let ended = pump.finished(1, PATIENCE)?;
    assert_eq!(answer_of(&ended), Some("command done"), "{ended:?}");
    let ran = pump.extension_values().into_iter().any(|v| {
        v["method"] == "item/completed"
            && v["params"]["item"]["type"] == "commandExecution"
            && v["params"]["item"]["status"] == "completed"
    });
    assert!(ran, "the approved command did not run");
    pump.assert_no_xagent_id_reached_the_extension();
    Ok(())
}

#[test]
fn a_human_typing_during_a_bridged_turn_steers_it_and_the_turn_still_reports_its_end() -> Result<()>
{
    let endpoint = ModelEndpoint::start()?;
    let home = AgentHome::new()?;
    // The bridged turn's first answer is held until the human's steer is taken: a gate, not a
    // guessed delay.
    let release = home.path().join("release-the-first-answer");
    endpoint.script([
        Rule::on_user_text("bridged slow")
            .reply(Reply::text("the lost first answer").after_file(&release)),
        Rule::on_user_text("human steer").reply_text("answer to both"),
    ]);
    let project = home.project("panel")?;
    let codex = Codex::new(&home, &endpoint.openai_base_url())?;
    let mut pump = panel(&codex, &project)?;
    let thread = open_thread(&mut pump, &project, "never")?;

    pump.inject(1, request(Some(&thread), "bridged slow"));
    pump.until("the bridged turn to start", PATIENCE, |p| {
        p.extension_values()
            .iter()
            .any(|v| v["method"] == "turn/started")
    })?;
    let bridged_turn = pump
        .extension_values()
        .into_iter()
        .find(|v| v["method"] == "turn/started")
        .map(|v| v["params"]["turn"]["id"].clone())
        .context("no turn")?;
    let steered = pump.request(
        &json!({"id": 3, "method": "turn/start", "params": {"threadId": thread, "input": [{"type": "text", "text": "human steer"}]}}),
        PATIENCE,
    )?;
    // Observed §3: the app-server takes it into the running turn and says so with its id.
    assert_eq!(steered["result"]["turn"]["id"], bridged_turn);
    let session = pump
        .adapter
        .sessions()
        .into_iter()
        .find(|s| s.session_id.as_deref() == Some(thread.as_str()))
        .context("no session")?;
    assert!(session.last_human_input_ms.is_some());
    std::fs::write(&release, "")?;
    let ended = pump.finished(1, PATIENCE)?;
    assert_eq!(
        ended,
        ShimEvent::TurnEnded {
            session_id: Some(thread),
            answer: Some("answer to both".into()),
            stop: "completed".into(),
            is_error: false
        }
    );
    pump.assert_no_xagent_id_reached_the_extension();
    Ok(())
}

#[test]
fn a_new_conversations_first_turn_waits_for_its_slow_mcp_server() -> Result<()> {
    let endpoint = ModelEndpoint::start()?;
    endpoint.script([
        Rule::on_user_text("use the probe").tool_call(ToolCall::mcp(
            "probe",
            "echo",
            json!({"text": "ping"}),
        )),
        Rule::on_tool_result("echoed:ping").reply_text("the probe said ping"),
        Rule::on_any_tool_result().reply_text("the probe was not there"),
    ]);
    let home = AgentHome::new()?;
    let project = home.project("panel")?;
    let codex = Codex::new(&home, &endpoint.openai_base_url())?;
    // A server that takes seconds to start, not `required` (as a user's usually is): Codex
    // itself waits about a second for it, then runs the turn without its tools.
    let slow = home.path().join("slow-probe");
    std::fs::write(
        &slow,
        format!(
            "#!/bin/sh\nsleep 3\nexec '{}'\n",
            cross_agent_testkit::binaries::mcp_probe_bin()?.display()
        ),
    )?;
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let config = codex.codex_home().join("config.toml");
    let mut text = std::fs::read_to_string(&config)?;
    text.push_str(&format!(
        "\n[mcp_servers.probe]\ncommand = {}\nstartup_timeout_sec = 30\n",
        json!(slow)
    ));
    std::fs::write(&config, text)?;
    let mut pump = panel(&codex, &project)?;
    open_thread(&mut pump, &project, "never")?;

    let mut fresh = request(None, "use the probe");
    fresh.new_session = true;
    fresh.title = Some("claude: use the probe".into());
    pump.inject(1, fresh);
    let ended = pump.finished(1, PATIENCE)?;
    assert_eq!(answer_of(&ended), Some("the probe said ping"), "{ended:?}");
    Ok(())
}
