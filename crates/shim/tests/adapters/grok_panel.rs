//! `fake-grok` (testkit's ACP agent standing in for `grok agent stdio`) behind the Grok
//! adapter, with the test playing the Grok Build GUI extension over ACP.

use std::ffi::OsString;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use cross_agent_protocol::panel::{
    ApprovalAnswer, Injection, InjectionKind, PanelSessionState, ShimEvent,
};
use cross_agent_shim::adapter::PanelAdapter;
use cross_agent_shim::grok::{GrokAdapter, NO_EMPTY_SESSION};
use cross_agent_testkit::binaries::fake_grok_bin;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::pump::Pump;

const PATIENCE: Duration = Duration::from_secs(120);

fn panel() -> Result<Pump<GrokAdapter>> {
    let mut command = Command::new(fake_grok_bin()?);
    command
        .args(["agent", "stdio"])
        .env("FAKE_GROK_SLOW_MS", "1500");
    let adapter = GrokAdapter::new(&[OsString::from("agent"), OsString::from("stdio")]);
    let mut pump = Pump::spawn(command, adapter)?;
    pump.request(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}}),
        PATIENCE,
    )?;
    Ok(pump)
}

fn new_session(pump: &mut Pump<GrokAdapter>, id: u64) -> Result<String> {
    let response = pump.request(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
        PATIENCE,
    )?;
    response["result"]["sessionId"]
        .as_str()
        .map(str::to_owned)
        .context("no session id")
}

fn prompt(id: u64, session: &str, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
}

fn request(session: Option<&str>, text: &str) -> Injection {
    Injection {
        delivery_id: "dlv_grok".into(),
        kind: InjectionKind::Request,
        session_id: session.map(str::to_owned),
        new_session: session.is_none(),
        text: text.to_owned(),
        request_id: Some("req_1795992430000_abcdef".into()),
        title: None,
        sender_label: Some("claude · session 1234".into()),
    }
}

/// The `sessionUpdate` kinds and texts the extension got for one session, in order.
fn updates(pump: &Pump<GrokAdapter>, session: &str) -> Vec<(String, String)> {
    pump.extension_values()
        .into_iter()
        .filter(|v| v["method"] == "session/update" && v["params"]["sessionId"] == session)
        .map(|v| {
            let update = &v["params"]["update"];
            (
                update["sessionUpdate"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                update["content"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_bridged_turn_shows_the_quoted_message_holds_back_thinking_and_answers_after_the_tool_call()
-> Result<()> {
    let mut pump = panel()?;
    let session = new_session(&mut pump, 1)?;
    pump.request(&prompt(2, &session, "hello grok"), PATIENCE)?;

    pump.inject(
        1,
        request(
            Some(&session),
            "think and use a tool req_1795992430000_abcdef",
        ),
    );
    let ended = pump.finished(1, PATIENCE)?;
    assert_eq!(
        ended,
        ShimEvent::TurnEnded {
            session_id: Some(session.clone()),
            answer: Some(
                "grok: think and use a tool req_1795992430000_abcdef token req_1795992430000_abcdef"
                    .into()
            ),
            stop: "end_turn".into(),
            is_error: false,
        }
    );
    let shown = updates(&pump, &session);
    let block_at = shown
        .iter()
        .position(|(kind, text)| {
            kind == "agent_message_chunk" && text.starts_with("> **claude · session 1234**")
        })
        .context("no quoted block")?;
    // The quoted block heads the reply: after the human's earlier turn, before this one's text.
    let reply_at = shown
        .iter()
        .position(|(kind, text)| kind == "agent_message_chunk" && text == "Let me check. ")
        .context("no reply")?;
    assert!(block_at < reply_at);
    assert!(
        !shown.iter().any(|(kind, _)| kind == "agent_thought_chunk"),
        "{shown:?}"
    );
    pump.assert_no_xagent_id_reached_the_extension();
    Ok(())
}

#[test]
fn human_prompts_queued_ahead_hold_the_injection_until_the_last_is_answered() -> Result<()> {
    let mut pump = panel()?;
    let session = new_session(&mut pump, 1)?;
    pump.extension_sends(&prompt(2, &session, "slow one"));
    pump.extension_sends(&prompt(3, &session, "typed ahead"));
    pump.inject(1, request(Some(&session), "bridged"));
    assert_eq!(
        pump.reports_of(1),
        vec![ShimEvent::Accepted {
            session_id: Some(session.clone()),
            queued: true
        }]
    );
    let ended = pump.finished(1, PATIENCE)?;
    assert!(matches!(ended, ShimEvent::TurnEnded { .. }), "{ended:?}");
    // Ours went in only after both of the human's prompts were answered.
    let agent_got: Vec<Value> = pump
        .to_agent
        .iter()
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    let ours = agent_got
        .iter()
        .position(|v| v["id"] == "xagent-1")
        .context("ours never went in")?;
    let answered: Vec<usize> = [2, 3]
        .iter()
        .map(|id| {
            pump.extension_values()
                .iter()
                .position(|v| v["id"] == *id && v.get("result").is_some())
                .unwrap_or(usize::MAX)
        })
        .collect();
    assert!(answered.iter().all(|at| *at != usize::MAX), "{answered:?}");
    assert_eq!(
        ours,
        agent_got.len() - 1,
        "ours was not the last prompt written"
    );
    Ok(())
}

#[test]
fn a_permission_request_of_a_bridged_turn_is_answered_through_the_shim() -> Result<()> {
    let mut pump = panel()?;
    let session = new_session(&mut pump, 1)?;
    pump.request(&prompt(2, &session, "hello"), PATIENCE)?;
    pump.inject(1, request(Some(&session), "needs permission"));
    pump.until("the permission request", PATIENCE, |p| {
        p.reports_of(1)
            .iter()
            .any(|e| matches!(e, ShimEvent::ApprovalPending { .. }))
    })?;
    let Some(ShimEvent::ApprovalPending { approval }) = pump.reports_of(1).pop() else {
        panic!("no approval");
    };
    assert_eq!(approval.kind, "session/request_permission");
    assert_eq!(approval.delivery_id.as_deref(), Some("dlv_grok"));
    pump.answer_approval(
        2,
        ApprovalAnswer {
            session_id: Some(session.clone()),
            request_id: approval.request_id.clone(),
            allow: true,
            message: None,
        },
    );
    let ended = pump.finished(1, PATIENCE)?;
    assert_eq!(
        ended,
        ShimEvent::TurnEnded {
            session_id: Some(session),
            answer: Some("grok: needs permission".into()),
            stop: "end_turn".into(),
            is_error: false
        }
    );
    Ok(())
}

#[test]
fn a_new_conversation_goes_into_the_empty_session_and_then_there_is_none() -> Result<()> {
    let mut pump = panel()?;
    let used = new_session(&mut pump, 1)?;
    pump.request(&prompt(2, &used, "hello"), PATIENCE)?;
    let empty = new_session(&mut pump, 3)?;

    pump.inject(1, request(None, "start something new"));
    let ended = pump.finished(1, PATIENCE)?;
    assert_eq!(
        pump.reports_of(1)[1],
        ShimEvent::SessionStarted {
            session_id: empty.clone()
        }
    );
    assert!(matches!(ended, ShimEvent::TurnEnded { session_id: Some(s), .. } if s == empty));

    pump.inject(2, request(None, "and another"));
    match pump.last_report(2) {
        Some(ShimEvent::Failed { reason, delivered }) => {
            assert!(reason.starts_with(NO_EMPTY_SESSION), "{reason}");
            assert!(!delivered);
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    Ok(())
}

#[test]
fn a_human_typing_during_a_slow_bridged_turn_is_queued_by_grok_and_keeps_the_session_busy()
-> Result<()> {
    let mut pump = panel()?;
    let session = new_session(&mut pump, 1)?;
    pump.inject(1, request(Some(&session), "slow bridged"));
    pump.extension_sends(&prompt(2, &session, "typed meanwhile"));
    let ended = pump.finished(1, PATIENCE)?;
    assert!(
        matches!(&ended, ShimEvent::TurnEnded { answer: Some(a), .. } if a == "grok: slow bridged"),
        "{ended:?}"
    );
    // Ours ended; the human's prompt still runs, so the session is still busy.
    let busy = pump
        .adapter
        .sessions()
        .into_iter()
        .find(|s| s.session_id.as_deref() == Some(session.as_str()))
        .context("no session")?;
    assert_eq!(busy.unanswered_human_prompts, 1);
    assert_eq!(busy.state, PanelSessionState::Working);
    pump.until("the human's answer", PATIENCE, |p| {
        p.response_to(&json!(2)).is_some()
    })?;
    // The human's turn is drawn in full: only ours had anything held back.
    let drawn: String = updates(&pump, &session)
        .into_iter()
        .filter(|(kind, _)| kind == "agent_message_chunk")
        .map(|(_, text)| text)
        .collect();
    assert!(drawn.ends_with("grok: typed meanwhile"), "{drawn}");
    pump.assert_no_xagent_id_reached_the_extension();
    Ok(())
}
