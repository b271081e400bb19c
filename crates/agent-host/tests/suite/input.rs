//! `watch_input`: the tool confirmations a session waits on, whoever started the turn (here
//! the editor's user, through the fake host), come as `Needed` with the host's words, and go
//! as `Removed` once answered — in the editor, or by us through `confirm_tool_call`.

use std::time::Duration;

use cross_agent_agent_host::{ConfirmOutcome, InputChange};
use cross_agent_testkit::agent_host::{FakeSession, TurnScript};
use pretty_assertions::assert_eq;

use super::common::{Bench, connect};

const WAIT: Duration = Duration::from_secs(20);

fn asking() -> FakeSession {
    FakeSession::new("Tidy").script(TurnScript::AskApproval {
        tool_name: "run_in_terminal".to_owned(),
        display_name: "Terminal".to_owned(),
        message: "ls -la".to_owned(),
    })
}

#[tokio::test]
async fn a_confirmation_of_the_editors_turn_comes_and_goes_when_answered_there() {
    let bench = Bench::new();
    let session = asking();
    let host = bench.host().session(session.clone()).start().unwrap();
    let conn = connect(&host).await;
    let mut watch = conn.watch_input(&session.uri()).await.unwrap();
    assert_eq!(watch.take_initial(), Vec::new());

    host.editor_turn(&session.uri(), "ping").unwrap();
    let change = tokio::time::timeout(WAIT, watch.next())
        .await
        .unwrap()
        .unwrap();
    let InputChange::Needed {
        request_id,
        approval,
    } = change
    else {
        panic!("not a confirmation: {change:?}");
    };
    assert_eq!(approval.session, session.uri());
    assert_eq!(approval.chat, session.chat_uri());
    assert_eq!(approval.display_name, "Terminal");
    assert_eq!(approval.message, "ls -la");
    assert_eq!(approval.title.as_deref(), Some("Run Terminal?"));
    assert_eq!(
        host.pending_tool_calls(),
        vec![approval.tool_call_id.clone()]
    );

    assert!(host.editor_confirm(&approval.tool_call_id, true));
    let change = tokio::time::timeout(WAIT, watch.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(change, InputChange::Removed { request_id });
    // Our late answer is refused: the editor's came first.
    let late = conn
        .confirm_tool_call(
            &approval.chat,
            &approval.turn_id,
            &approval.tool_call_id,
            true,
            None,
        )
        .await
        .unwrap();
    assert!(matches!(late, ConfirmOutcome::Refused { .. }), "{late:?}");
}

#[tokio::test]
async fn a_watch_begun_while_a_confirmation_waits_has_it_first() {
    let bench = Bench::new();
    let session = asking();
    let host = bench.host().session(session.clone()).start().unwrap();
    host.editor_turn(&session.uri(), "ping").unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    while host.pending_tool_calls().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the call never waited"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let conn = connect(&host).await;
    let mut watch = conn.watch_input(&session.uri()).await.unwrap();
    let initial = watch.take_initial();
    assert_eq!(initial.len(), 1, "{initial:?}");
    let InputChange::Needed { approval, .. } = &initial[0] else {
        panic!("not a confirmation: {initial:?}");
    };
    // Answered by us: applied, and the entry goes.
    let outcome = conn
        .confirm_tool_call(
            &approval.chat,
            &approval.turn_id,
            &approval.tool_call_id,
            false,
            None,
        )
        .await
        .unwrap();
    assert_eq!(outcome, ConfirmOutcome::Applied);
    let change = tokio::time::timeout(WAIT, watch.next())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(change, InputChange::Removed { .. }), "{change:?}");
    assert!(host.pending_tool_calls().is_empty());
}
