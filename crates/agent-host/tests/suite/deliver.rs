use std::time::Duration;

use cross_agent_agent_host::{ConfirmOutcome, DeliverRequest, Error};
use cross_agent_testkit::agent_host::{FakeSession, TurnScript};
use pretty_assertions::assert_eq;

use super::common::{ANSWER_TIMEOUT, Bench, CLIENT_ID, assert_no_token, connect};

#[tokio::test]
async fn a_delivered_turn_is_accepted_and_its_answer_comes_back() {
    let bench = Bench::new();
    let session = FakeSession::new("work").model("gpt-5.2");
    let host = bench.host().session(session.clone()).start().unwrap();
    let conn = connect(&host).await;

    let turn = conn
        .deliver(DeliverRequest::new(session.uri(), "request: req_1\nping"))
        .await
        .unwrap();
    assert_eq!(turn.chat(), session.chat_uri());
    let answer = turn.answer(ANSWER_TIMEOUT).await.unwrap();
    assert_eq!(answer.text, "pong from copilot");

    // What went on the wire: our origin, a user message, the chat's own model carried on.
    let dispatched = host.dispatched();
    assert_eq!(dispatched.len(), 1);
    let params = &dispatched[0];
    assert_eq!(params["channel"], session.chat_uri());
    assert_eq!(params["clientSeq"], 1);
    let action = &params["action"];
    assert_eq!(action["type"], "chat/turnStarted");
    assert_eq!(action["turnId"], answer.turn_id.as_str());
    assert_eq!(action["message"]["origin"]["kind"], "user");
    assert_eq!(action["message"]["text"], "request: req_1\nping");
    assert_eq!(
        action["message"]["model"],
        serde_json::json!({"id": "gpt-5.2"})
    );
    // The model endpoint saw the text.
    assert!(
        bench
            .endpoint
            .model_requests()
            .iter()
            .any(|r| r.body.to_string().contains("req_1"))
    );
}

#[tokio::test]
async fn a_drifted_turn_complete_still_ends_the_answer() {
    let bench = Bench::new();
    let session = FakeSession::new("drift").script(TurnScript::DriftedEnd);
    let host = bench.host().session(session.clone()).start().unwrap();
    let conn = connect(&host).await;
    let turn = conn
        .deliver(DeliverRequest::new(session.uri(), "ping"))
        .await
        .unwrap();
    let answer = turn.answer(Duration::from_secs(5)).await.unwrap();
    assert_eq!(answer.text, "pong from copilot");
}

#[tokio::test]
async fn a_refused_turn_is_rejected_with_the_hosts_words() {
    let bench = Bench::new();
    let session =
        FakeSession::new("refuses").script(TurnScript::Reject("Agent is busy elsewhere".into()));
    let host = bench.host().session(session.clone()).start().unwrap();
    let conn = connect(&host).await;
    let err = conn
        .deliver(DeliverRequest::new(session.uri(), "ping"))
        .await
        .unwrap_err();
    match &err {
        Error::Rejected { reason, chat } => {
            assert_eq!(reason, "Agent is busy elsewhere");
            assert_eq!(chat, &session.chat_uri());
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
    assert_no_token(&err, host.token());
}

#[tokio::test]
async fn preconditions_refuse_before_sending_anything() {
    let bench = Bench::new();
    let busy = FakeSession::new("busy").busy();
    let creating = FakeSession::new("creating").lifecycle("creating");
    let read_only = FakeSession::new("read-only").interactivity("read-only");
    let host = bench
        .host()
        .session(busy.clone())
        .session(creating.clone())
        .session(read_only.clone())
        .start()
        .unwrap();
    let conn = connect(&host).await;
    let err = conn
        .deliver(DeliverRequest::new(busy.uri(), "ping"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::ChatBusy { turn, .. } if turn == "editor-turn"),
        "{err:?}"
    );
    let err = conn
        .deliver(DeliverRequest::new(creating.uri(), "ping"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::SessionNotReady { lifecycle, .. } if lifecycle == "creating"),
        "{err:?}"
    );
    let err = conn
        .deliver(DeliverRequest::new(read_only.uri(), "ping"))
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::ChatNotInteractive { .. }), "{err:?}");
    let err = conn
        .deliver(DeliverRequest::new("copilotcli:/nope", "ping"))
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::Rpc { code: -32001, .. }), "{err:?}");
    assert_eq!(host.dispatched(), Vec::<serde_json::Value>::new());
}

#[tokio::test]
async fn a_drop_after_dispatch_is_an_unknown_outcome() {
    let bench = Bench::new();
    let session = FakeSession::new("drops").script(TurnScript::DropAfterDispatch);
    let host = bench.host().session(session.clone()).start().unwrap();
    let conn = connect(&host).await;
    let err = conn
        .deliver(DeliverRequest::new(session.uri(), "ping"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UnknownOutcome { .. }), "{err:?}");
    assert!(err.to_string().contains("must not be resent"), "{err}");
    assert_eq!(host.dispatched().len(), 1, "the dispatch reached the host");
}

#[tokio::test]
async fn no_echo_in_time_is_an_unknown_outcome() {
    let bench = Bench::new();
    let session = FakeSession::new("mute").script(TurnScript::NoEcho);
    let host = bench.host().session(session.clone()).start().unwrap();
    let conn = connect(&host).await;
    let err = conn
        .deliver(
            DeliverRequest::new(session.uri(), "ping").echo_timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::UnknownOutcome { why, .. } if why.contains("no echo")),
        "{err:?}"
    );
}

#[tokio::test]
async fn chat_error_and_cancel_fail_with_the_hosts_words() {
    let bench = Bench::new();
    let failing =
        FakeSession::new("fails").script(TurnScript::Fail("Rate limit exceeded for model".into()));
    let cancelled = FakeSession::new("cancels").script(TurnScript::Cancel);
    let silent = FakeSession::new("silent").script(TurnScript::Silent);
    let host = bench
        .host()
        .session(failing.clone())
        .session(cancelled.clone())
        .session(silent.clone())
        .start()
        .unwrap();
    let conn = connect(&host).await;

    let turn = conn
        .deliver(DeliverRequest::new(failing.uri(), "ping"))
        .await
        .unwrap();
    let err = turn.answer(ANSWER_TIMEOUT).await.unwrap_err();
    assert!(
        matches!(&err, Error::TurnFailed { message, .. } if message == "Rate limit exceeded for model"),
        "{err:?}"
    );

    let turn = conn
        .deliver(DeliverRequest::new(cancelled.uri(), "ping"))
        .await
        .unwrap();
    let err = turn.answer(ANSWER_TIMEOUT).await.unwrap_err();
    assert!(matches!(err, Error::TurnCancelled { .. }), "{err:?}");

    // Never waits forever: the caller's deadline ends a turn that never ends.
    let turn = conn
        .deliver(DeliverRequest::new(silent.uri(), "ping"))
        .await
        .unwrap();
    let err = turn.answer(Duration::from_millis(300)).await.unwrap_err();
    assert!(matches!(err, Error::NoAnswer { .. }), "{err:?}");
}

#[tokio::test]
async fn a_tool_confirmation_is_surfaced_answered_and_a_late_answer_is_refused() {
    let bench = Bench::new();
    let script = TurnScript::AskApproval {
        tool_name: "run_in_terminal".into(),
        display_name: "Run in Terminal".into(),
        message: "Run `cargo test` in /home/u/proj".into(),
    };
    let session = FakeSession::new("tools").script(script);
    let host = bench.host().session(session.clone()).start().unwrap();
    let conn = connect(&host).await;

    // 1. We answer first and win.
    let (tx, mut approvals) = tokio::sync::mpsc::unbounded_channel();
    let turn = conn
        .deliver(DeliverRequest::new(session.uri(), "ping").approvals(tx))
        .await
        .unwrap();
    let turn_id = turn.turn_id().to_owned();
    let answering = tokio::spawn(turn.answer(ANSWER_TIMEOUT));
    let pending = tokio::time::timeout(ANSWER_TIMEOUT, approvals.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(pending.turn_id, turn_id);
    assert_eq!(pending.tool_name, "run_in_terminal");
    assert_eq!(pending.display_name, "Run in Terminal");
    assert_eq!(pending.message, "Run `cargo test` in /home/u/proj");
    assert_eq!(pending.title.as_deref(), Some("Run Run in Terminal?"));
    assert_eq!(pending.options.len(), 2);
    let outcome = conn
        .confirm_tool_call(
            &pending.chat,
            &pending.turn_id,
            &pending.tool_call_id,
            true,
            None,
        )
        .await
        .unwrap();
    assert_eq!(outcome, ConfirmOutcome::Applied);
    let answer = answering.await.unwrap().unwrap();
    assert_eq!(answer.text, "pong from copilot");
    // Surfaced once, although both the chat and the session told of it.
    assert!(approvals.try_recv().is_err());

    // 2. The editor answers first; ours comes back refused.
    let (tx, mut approvals) = tokio::sync::mpsc::unbounded_channel();
    let turn = conn
        .deliver(DeliverRequest::new(session.uri(), "ping").approvals(tx))
        .await
        .unwrap();
    let answering = tokio::spawn(turn.answer(ANSWER_TIMEOUT));
    let pending = tokio::time::timeout(ANSWER_TIMEOUT, approvals.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(host.editor_confirm(&pending.tool_call_id, true));
    let outcome = conn
        .confirm_tool_call(
            &pending.chat,
            &pending.turn_id,
            &pending.tool_call_id,
            false,
            None,
        )
        .await
        .unwrap();
    match outcome {
        ConfirmOutcome::Refused { reason } => assert!(reason.contains("not pending"), "{reason}"),
        other => panic!("expected Refused, got {other:?}"),
    }
    answering.await.unwrap().unwrap();
    let confirms: Vec<_> = host
        .dispatched()
        .into_iter()
        .filter(|p| p["action"]["type"] == "chat/toolCallConfirmed")
        .collect();
    assert_eq!(confirms.len(), 2);
    assert_eq!(confirms[0]["action"]["approved"], true);
    assert_eq!(confirms[0]["action"]["confirmed"], "user-action");
    assert_eq!(confirms[1]["action"]["reason"], "denied");
    let _ = CLIENT_ID;
}
