//! Messages put into a live Claude panel through the shim's socket, with real Claude Code
//! behind it: idle and busy panels, a human typing meanwhile, approvals, and the registration
//! that tells the daemon about it all.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use cross_agent_protocol::panel::{ApprovalAnswer, PanelSessionState, ShimEvent, ShimRequest};
use cross_agent_testkit::panel::{
    CLAUDE_SDK_ARGS, PanelDriver, Spelling, claude_initialize, claude_permission_spelt,
    claude_user, claude_user_spelt,
};
use cross_agent_testkit::{Reply, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{Bench, Connection, TURN, request, results};

fn socket(bench: &Bench, pid: u32) -> std::path::PathBuf {
    bench.panels().join(format!("claude-{pid}.sock"))
}

/// Whether `pid` runs (a zombie, exited but not yet reaped, does not).
fn runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

fn turn_ended(events: &[ShimEvent]) -> Option<&ShimEvent> {
    events
        .iter()
        .find(|e| matches!(e, ShimEvent::TurnEnded { .. }))
}

/// Sends "bridged question" into a panel busy with the human's turn: accepted, queued.
fn queued_question(bench: &Bench, pid: u32) -> Result<Connection> {
    let mut connection = Connection::open(&socket(bench, pid), &request("d1", "bridged question"))?;
    let accepted = connection.next()?;
    assert!(
        matches!(accepted, Some(ShimEvent::Accepted { queued: true, .. })),
        "{accepted:?}"
    );
    Ok(connection)
}

/// The queued question's turn ends with its own answer, after the human's turn and its answer.
fn answered_after_the_human(mut connection: Connection, panel: &mut PanelDriver) -> Result<()> {
    let events = connection.rest()?;
    let Some(ShimEvent::TurnEnded { answer, .. }) = turn_ended(&events) else {
        panic!("{events:?}")
    };
    assert_eq!(answer.as_deref(), Some("bridged answer"));
    panel.next_line(TURN, |l| {
        l["type"] == "result" && l["result"] == "bridged answer"
    })?;
    assert_eq!(
        results(panel),
        vec!["human answer".to_owned(), "bridged answer".to_owned()]
    );
    Ok(())
}

#[test]
fn an_idle_panel_takes_a_message_its_answer_is_reported_and_the_registration_follows() -> Result<()>
{
    let bench = Bench::new()?;
    bench.script([
        Rule::on_user_text("bridged question")
            .reply_text("bridged answer")
            .once(),
        Rule::on_user_text("human question")
            .reply_text("human answer")
            .once(),
    ]);
    let mut panel = bench.claude_panel()?;
    let pid = panel.pid();
    let registration = bench.registration_when(pid, |r| r.agent_pid.is_some())?;
    assert!(registration.intercepting);
    assert_eq!(
        registration.ancestors.first().copied(),
        Some(std::process::id())
    );
    let session = &registration.sessions[0];
    assert_eq!(
        (session.session_id.as_deref(), session.state),
        (None, PanelSessionState::Idle)
    );

    let mut connection =
        Connection::open(&socket(&bench, pid), &request("d1", "bridged question"))?;
    let events = connection.rest()?;
    assert_eq!(
        events[0],
        ShimEvent::Accepted {
            session_id: None,
            queued: false
        }
    );
    let ShimEvent::SessionStarted { session_id } = &events[1] else {
        panic!("{events:?}")
    };
    assert_eq!(
        turn_ended(&events),
        Some(&ShimEvent::TurnEnded {
            session_id: Some(session_id.clone()),
            answer: Some("bridged answer".to_owned()),
            stop: "success".to_owned(),
            is_error: false,
        })
    );
    // The panel showed the bridged turn.
    panel.next_line(TURN, |l| {
        l["type"] == "result" && l["result"] == "bridged answer"
    })?;
    let registration =
        bench.registration_when(pid, |r| r.sessions[0].state == PanelSessionState::Idle)?;
    let session = &registration.sessions[0];
    assert_eq!(session.session_id.as_ref(), Some(session_id));
    assert_eq!(
        session.last_human_input_ms, None,
        "an injected turn is not human input"
    );
    assert!(session.has_history);

    panel.send(&claude_user("human question"))?;
    panel.next_line(TURN, |l| {
        l["type"] == "result" && l["result"] == "human answer"
    })?;
    let registration = bench.registration(pid)?;
    assert!(registration.sessions[0].last_human_input_ms.is_some());

    panel.close_stdin();
    assert!(panel.wait(TURN)?.success());
    assert!(
        !bench.registration_path(pid).exists(),
        "registration removed at exit"
    );
    assert!(!socket(&bench, pid).exists(), "socket removed at exit");
    Ok(())
}

/// Scripts a human turn ("slow human") whose answer waits for the file returned, and a
/// bridged question answered at once: creating the file releases the human's answer, a gate
/// rather than a guessed delay.
fn script_a_slow_human_turn(bench: &Bench) -> PathBuf {
    let release = bench.state.with_file_name("release-the-human-answer");
    bench.script([
        Rule::on_user_text("slow human")
            .reply(Reply::text("human answer").after_file(&release))
            .once(),
        Rule::on_user_text("bridged question")
            .reply_text("bridged answer")
            .once(),
    ]);
    release
}

/// The link started as claude itself (the SDK's arguments first, the real one named by
/// `CROSS_AGENT_REAL_CLAUDE`): the same panel — the human's turn, a message queued behind it.
#[test]
fn a_panel_started_through_the_link_as_claude_itself_takes_a_message() -> Result<()> {
    let bench = Bench::new()?;
    let release = script_a_slow_human_turn(&bench);
    let mut panel = PanelDriver::start(bench.link_command(CLAUDE_SDK_ARGS)?)?;
    let pid = panel.pid();
    panel.send(&claude_initialize("init-1"))?;
    panel.next_line(TURN, |l| l["type"] == "control_response")?;
    let registration = bench.registration_when(pid, |r| r.agent_pid.is_some())?;
    assert!(registration.intercepting);
    panel.send(&claude_user("slow human"))?;
    bench.registration_when(pid, |r| r.sessions[0].state == PanelSessionState::Working)?;
    let connection = queued_question(&bench, pid)?;
    std::fs::write(&release, "")?;
    answered_after_the_human(connection, &mut panel)
}

#[test]
fn a_message_waits_for_the_extensions_first_line() -> Result<()> {
    let bench = Bench::new()?;
    bench.script([Rule::on_user_text("early question")
        .reply_text("early answer")
        .once()]);
    // Claude runs with --await-initialize: a first line that is not `initialize` ends it.
    let mut panel = bench.claude_panel_unspoken()?;
    let pid = panel.pid();
    let agent_pid = bench
        .registration_when(pid, |r| r.agent_pid.is_some())?
        .agent_pid
        .unwrap_or_default();
    let mut connection = Connection::open(&socket(&bench, pid), &request("d1", "early question"))?;
    assert_eq!(
        connection.next()?,
        Some(ShimEvent::Accepted {
            session_id: None,
            queued: true
        })
    );
    // A negative check, not a synchronisation: this pause (a few of the shim's one-second ticks)
    // is the chance a shim that wrongly wrote the message before `initialize` gets to do so; a
    // slow machine can only make it miss such a shim, never fail a right one. Claude would have
    // ended on that first line, so it must still be running, and have printed nothing.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        runs(agent_pid),
        "Claude still waits for its first line: {}",
        String::from_utf8_lossy(&panel.received())
    );
    assert!(
        panel.received().is_empty(),
        "nothing before the extension spoke"
    );
    panel.send(&claude_initialize("init-1"))?;
    panel.next_of_type("control_response", TURN)?;
    let events = connection.rest()?;
    let Some(ShimEvent::TurnEnded { answer, .. }) = turn_ended(&events) else {
        panic!("{events:?}")
    };
    assert_eq!(answer.as_deref(), Some("early answer"));
    Ok(())
}

#[test]
fn a_busy_panel_queues_the_message_until_the_humans_turn_ends() -> Result<()> {
    let bench = Bench::new()?;
    let release = script_a_slow_human_turn(&bench);
    let mut panel = bench.claude_panel()?;
    let pid = panel.pid();
    panel.send(&claude_user("slow human"))?;
    bench.registration_when(pid, |r| r.sessions[0].state == PanelSessionState::Working)?;

    let connection = queued_question(&bench, pid)?;
    std::fs::write(&release, "")?;
    answered_after_the_human(connection, &mut panel)
}

#[test]
fn a_human_typing_during_a_bridged_turn_gets_an_answer_of_its_own() -> Result<()> {
    let bench = Bench::new()?;
    // The bridged answer is held until the shim has seen the human type: a gate, not a guess.
    let release = bench.state.with_file_name("release-the-bridged-answer");
    bench.script([
        Rule::on_user_text("bridged question")
            .reply(Reply::text("bridged answer").after_file(&release))
            .once(),
        Rule::on_user_text("human meanwhile")
            .reply_text("human answer")
            .once(),
    ]);
    let mut panel = bench.claude_panel()?;
    let pid = panel.pid();
    let mut connection =
        Connection::open(&socket(&bench, pid), &request("d1", "bridged question"))?;
    assert!(matches!(
        connection.next()?,
        Some(ShimEvent::Accepted { queued: false, .. })
    ));
    panel.send(&claude_user("human meanwhile"))?;
    bench.registration_when(pid, |r| r.sessions[0].last_human_input_ms.is_some())?;
    std::fs::write(&release, "")?;
    let events = connection.rest()?;
    let Some(ShimEvent::TurnEnded { answer, .. }) = turn_ended(&events) else {
        panic!("{events:?}")
    };
    assert_eq!(answer.as_deref(), Some("bridged answer"));
    panel.next_line(TURN, |l| {
        l["type"] == "result" && l["result"] == "human answer"
    })?;
    assert_eq!(
        results(&panel),
        vec!["bridged answer".to_owned(), "human answer".to_owned()]
    );
    let registration =
        bench.registration_when(pid, |r| r.sessions[0].state == PanelSessionState::Idle)?;
    assert!(registration.sessions[0].last_human_input_ms.is_some());
    Ok(())
}

/// A bridged turn whose tool needs approval; returns the panel, the injection's connection,
/// the approval's request id and the file the tool writes.
fn bridged_turn_awaiting_approval(
    bench: &Bench,
) -> Result<(
    cross_agent_testkit::panel::PanelDriver,
    Connection,
    String,
    std::path::PathBuf,
)> {
    let marker = bench.project.join("approved.txt");
    let command = format!(
        "echo approved > {} && cat {}",
        marker.display(),
        marker.display()
    );
    bench.script([
        Rule::on_user_text("use the tool")
            .tool_call(ToolCall::new(
                "Bash",
                json!({"command": command, "description": "write"}),
            ))
            .once(),
        Rule::on_any_tool_result()
            .reply_text("tool turn done")
            .once(),
    ]);
    let mut panel = bench.claude_panel()?;
    let pid = panel.pid();
    let mut connection = Connection::open(&socket(bench, pid), &request("d1", "use the tool"))?;
    let ask = panel.next_line(TURN, |l| l["type"] == "control_request")?;
    let request_id = ask["request_id"].as_str().unwrap_or_default().to_owned();
    let pending = loop {
        match connection.next()? {
            Some(ShimEvent::ApprovalPending { approval }) => break approval,
            Some(_) => continue,
            None => anyhow::bail!("closed before the approval"),
        }
    };
    assert_eq!(pending.request_id, request_id);
    assert_eq!(pending.tool.as_deref(), Some("Bash"));
    assert_eq!(pending.delivery_id.as_deref(), Some("d1"));
    assert!(
        pending
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("echo approved"))
    );
    let registration = bench.registration_when(pid, |r| {
        r.sessions[0].state == PanelSessionState::AwaitingApproval
    })?;
    assert_eq!(registration.sessions[0].pending_approvals, vec![pending]);
    Ok((panel, connection, request_id, marker))
}

#[test]
fn an_approval_of_a_bridged_turn_answered_through_the_shim() -> Result<()> {
    let bench = Bench::new()?;
    let (mut panel, mut connection, request_id, marker) = bridged_turn_awaiting_approval(&bench)?;
    let answer = ShimRequest::AnswerApproval(ApprovalAnswer {
        session_id: None,
        request_id: request_id.clone(),
        allow: true,
        message: None,
    });
    let answered = Connection::open(&socket(&bench, panel.pid()), &answer)?.rest()?;
    assert_eq!(
        answered,
        vec![ShimEvent::ApprovalAnswered {
            accepted: true,
            reason: None
        }]
    );
    let events = connection.rest()?;
    assert_eq!(
        events[0],
        ShimEvent::ApprovalResolved {
            request_id: request_id.clone(),
            allowed: true
        }
    );
    let Some(ShimEvent::TurnEnded { answer, .. }) = turn_ended(&events) else {
        panic!("{events:?}")
    };
    assert_eq!(answer.as_deref(), Some("tool turn done"));
    assert_eq!(std::fs::read_to_string(&marker)?, "approved\n");
    // The panel was told the request is withdrawn, so its prompt closes.
    panel.next_line(TURN, |l| {
        l["type"] == "control_cancel_request" && l["request_id"] == request_id.as_str()
    })?;
    Ok(())
}

/// The panel's answer is matched however the host spells it (`type` first, spaced, another key
/// first).
#[test]
fn an_approval_of_a_bridged_turn_answered_in_the_panel_whatever_its_spelling() -> Result<()> {
    for spelling in Spelling::ALL {
        let bench = Bench::new()?;
        let (mut panel, mut connection, request_id, marker) =
            bridged_turn_awaiting_approval(&bench)?;
        panel.send(&claude_permission_spelt(
            &request_id,
            false,
            &json!({}),
            spelling,
        ))?;
        let events = connection.rest()?;
        assert_eq!(
            events[0],
            ShimEvent::ApprovalResolved {
                request_id,
                allowed: false
            },
            "{spelling:?}"
        );
        assert!(matches!(
            turn_ended(&events),
            Some(ShimEvent::TurnEnded { .. })
        ));
        assert!(!marker.exists(), "the denied tool did not run");
    }
    Ok(())
}

/// A long human message (a pasted image, a big paste) streams on to Claude before it ends; the
/// shim counts the human's turn from the line's head, however the host spells it, so a message
/// sent while the rest is still coming waits for that turn and is answered on its own (it is
/// not written behind the line as if the panel were idle, nor handed the human's answer).
#[cfg(target_os = "linux")]
#[test]
fn a_message_sent_while_a_long_human_line_streams_in_waits_for_the_humans_turn() -> Result<()> {
    for spelling in Spelling::ALL {
        let bench = Bench::new()?;
        bench.script([
            Rule::on_user_text("long paste")
                .reply_text("human answer")
                .once(),
            Rule::on_user_text("bridged question")
                .reply_text("bridged answer")
                .once(),
        ]);
        let mut panel = bench.claude_panel()?;
        let pid = panel.pid();
        let line = claude_user_spelt(&format!("long paste {}", "x".repeat(300 * 1024)), spelling);
        let (head, rest) = line.as_bytes().split_at(100 * 1024);
        panel.send_raw(head)?;
        // The line has not ended, and the shim already counts the human's turn.
        let registration =
            bench.registration_when(pid, |r| r.sessions[0].state == PanelSessionState::Working)?;
        assert_eq!(
            registration.sessions[0].unanswered_human_prompts, 1,
            "{spelling:?}"
        );

        let connection = queued_question(&bench, pid)?;
        panel.send_raw(rest)?;
        panel.send_raw(b"\n")?;
        answered_after_the_human(connection, &mut panel)?;
    }
    Ok(())
}
