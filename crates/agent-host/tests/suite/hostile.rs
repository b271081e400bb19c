use cross_agent_agent_host::{DeliverRequest, Error, MAX_MESSAGE_BYTES};
use cross_agent_testkit::agent_host::{FakeSession, TurnScript};
use pretty_assertions::assert_eq;

use super::common::{ANSWER_TIMEOUT, Bench, assert_no_token, connect};

#[tokio::test]
async fn garbage_frames_do_not_kill_the_client() {
    let bench = Bench::new();
    let session = FakeSession::new("noisy").script(TurnScript::GarbageFirst);
    let host = bench.host().session(session.clone()).start().unwrap();
    let conn = connect(&host).await;
    let turn = conn
        .deliver(DeliverRequest::new(session.uri(), "ping"))
        .await
        .unwrap();
    let answer = turn.answer(ANSWER_TIMEOUT).await.unwrap();
    assert_eq!(answer.text, "pong from copilot");
    // And the connection still works afterwards.
    assert_eq!(conn.list_sessions().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_10_mb_frame_ends_the_connection_with_a_clear_error() {
    const { assert!(MAX_MESSAGE_BYTES < 10_000_000) };
    let bench = Bench::new();
    let session = FakeSession::new("huge").script(TurnScript::HugeFrameAfterEcho);
    let host = bench.host().session(session.clone()).start().unwrap();
    let conn = connect(&host).await;
    let turn = conn
        .deliver(DeliverRequest::new(session.uri(), "ping"))
        .await
        .unwrap();
    let err = turn.answer(ANSWER_TIMEOUT).await.unwrap_err();
    let shown = err.to_string();
    assert!(matches!(err, Error::NoAnswer { .. }), "{err:?}");
    assert!(shown.contains("over the limit of 8388608 bytes"), "{shown}");
    assert_no_token(&err, host.token());
    // Later requests fail naming the socket, not hang.
    let err = conn.list_sessions().await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost { .. }), "{err:?}");
    assert!(
        err.to_string().contains(host.socket().to_str().unwrap()),
        "{err}"
    );
}
