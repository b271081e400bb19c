//! The kept connections: one per endpoint, shared by the deliveries to its host, replaced when
//! it ends or the entry changes; and a shared connection that drops leaves every delivery in
//! flight on it with an unknown outcome, none re-sent.

use std::time::Duration;

use cross_agent_agent_host::{
    ConnectionToken, DeliverRequest, EndpointKey, Error, HostConnection, HostPool,
};
use cross_agent_testkit::agent_host::{FakeAgentHost, FakeSession, TurnScript};
use cross_agent_testkit::endpoint::{Reply, Rule};

use super::common::{ANSWER_TIMEOUT, Bench, CLIENT_ID, token_of};

fn key_of(host: &FakeAgentHost) -> EndpointKey {
    EndpointKey {
        socket: host.socket().to_path_buf(),
        pid: std::process::id(),
        instance_id: host.instance_id().to_owned(),
        token: token_of(host),
    }
}

/// How many connections the host saw negotiate.
fn initializes(host: &FakeAgentHost) -> usize {
    host.received()
        .iter()
        .filter(|m| m["method"] == "initialize")
        .count()
}

fn turns_started(host: &FakeAgentHost) -> usize {
    host.dispatched()
        .iter()
        .filter(|d| d["action"]["type"] == "chat/turnStarted")
        .count()
}

#[tokio::test]
async fn deliveries_to_one_host_share_one_kept_connection() {
    let bench = Bench::new();
    let session = FakeSession::new("kept");
    let host = bench.host().session(session.clone()).start().unwrap();
    let pool = HostPool::new(CLIENT_ID);
    for _ in 0..3 {
        let conn = pool.get(&key_of(&host)).await.unwrap();
        let turn = conn
            .deliver(DeliverRequest::new(session.uri(), "ping"))
            .await
            .unwrap();
        let answer = turn.answer(ANSWER_TIMEOUT).await.unwrap();
        assert_eq!(answer.text, "pong from copilot");
    }
    assert_eq!(initializes(&host), 1, "three deliveries, one connection");
    assert_eq!(pool.len().await, 1);
}

#[tokio::test]
async fn a_changed_entry_is_a_new_connection_and_the_old_one_is_dropped() {
    let bench = Bench::new();
    let host = bench.host().session(FakeSession::new("a")).start().unwrap();
    let pool = HostPool::new(CLIENT_ID);
    let first = pool.get(&key_of(&host)).await.unwrap();
    // The same socket under another instance (the host restarted in place): never reused.
    let restarted = EndpointKey {
        instance_id: "another-instance".to_owned(),
        ..key_of(&host)
    };
    let second = pool.get(&restarted).await.unwrap();
    assert_eq!(initializes(&host), 2);
    assert_eq!(pool.len().await, 1, "the old entry's connection is let go");
    drop((first, second));
    // A token that changed is another key too; the host refuses a wrong one, and says why.
    let stale = EndpointKey {
        token: ConnectionToken::new("not-the-token"),
        ..key_of(&host)
    };
    let err = pool.get(&stale).await.unwrap_err();
    assert!(matches!(err, Error::Refused { status: 403, .. }), "{err:?}");
}

#[tokio::test]
async fn an_ended_kept_connection_is_replaced_on_the_next_get() {
    let bench = Bench::new();
    let drops = FakeSession::new("drops").script(TurnScript::DropAfterDispatch);
    let fine = FakeSession::new("fine");
    let host = bench
        .host()
        .session(drops.clone())
        .session(fine.clone())
        .start()
        .unwrap();
    let pool = HostPool::new(CLIENT_ID);
    let conn = pool.get(&key_of(&host)).await.unwrap();
    let err = conn
        .deliver(DeliverRequest::new(drops.uri(), "ping"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UnknownOutcome { .. }), "{err:?}");
    assert!(conn.is_closed());
    let again = pool.get(&key_of(&host)).await.unwrap();
    assert!(!again.is_closed());
    let turn = again
        .deliver(DeliverRequest::new(fine.uri(), "ping"))
        .await
        .unwrap();
    assert_eq!(
        turn.answer(ANSWER_TIMEOUT).await.unwrap().text,
        "pong from copilot"
    );
    assert_eq!(initializes(&host), 2);
}

#[tokio::test]
async fn a_shared_connection_that_drops_fails_every_delivery_in_flight_as_unknown() {
    let bench = Bench::new();
    // The first turn is taken and never echoed: it is in flight when the second one's
    // dispatch makes the host drop the connection they share.
    let mute = FakeSession::new("mute").script(TurnScript::NoEcho);
    let drops = FakeSession::new("drops").script(TurnScript::DropAfterDispatch);
    let host = bench
        .host()
        .session(mute.clone())
        .session(drops.clone())
        .start()
        .unwrap();
    let pool = HostPool::new(CLIENT_ID);
    let conn: HostConnection = pool.get(&key_of(&host)).await.unwrap();
    let waiting = tokio::spawn({
        let conn = pool.get(&key_of(&host)).await.unwrap();
        let uri = mute.uri();
        // Far longer than the test: only the connection's end can settle it.
        async move {
            conn.deliver(DeliverRequest::new(uri, "ping").echo_timeout(Duration::from_secs(120)))
                .await
        }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while turns_started(&host) < 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the first turn never arrived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = conn
        .deliver(DeliverRequest::new(drops.uri(), "ping"))
        .await
        .unwrap_err();
    assert!(matches!(second, Error::UnknownOutcome { .. }), "{second:?}");
    let first = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the first delivery settled when the connection dropped")
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&first, Error::UnknownOutcome { why, .. } if why.contains("connection ended")),
        "{first:?}"
    );
    assert_eq!(initializes(&host), 1, "both were on one connection");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(turns_started(&host), 2, "nothing was sent again");
}

fn subscribes(host: &FakeAgentHost) -> usize {
    host.received()
        .iter()
        .filter(|m| m["method"] == "subscribe")
        .count()
}

/// A kept connection keeps its session and chat subscribed, their state current: the second
/// and third deliveries to the same chat send no `subscribe`, yet see the earlier turns ended
/// (not busy) and a turn another client started (busy).
#[tokio::test]
async fn a_kept_connection_subscribes_to_a_chat_once_and_follows_its_state() {
    let bench = Bench::new();
    let session = FakeSession::new("followed");
    let host = bench.host().session(session.clone()).start().unwrap();
    let pool = HostPool::new(CLIENT_ID);
    for _ in 0..3 {
        let conn = pool.get(&key_of(&host)).await.unwrap();
        let turn = conn
            .deliver(DeliverRequest::new(session.uri(), "ping"))
            .await
            .unwrap();
        let answer = turn.answer(ANSWER_TIMEOUT).await.unwrap();
        assert_eq!(answer.text, "pong from copilot");
    }
    assert_eq!(subscribes(&host), 2, "the session and its chat, once each");

    // The person types into the chat in the editor (another client), a turn that runs for a
    // few seconds: the kept state sees the chat busy, and nothing is sent.
    bench.endpoint.push(
        Rule::on_user_text("hold the chat")
            .reply(Reply::echo_token("held").delay(Duration::from_secs(3)))
            .once(),
    );
    host.editor_turn(&session.uri(), "hold the chat").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = turns_started(&host);
    let conn = pool.get(&key_of(&host)).await.unwrap();
    let busy = conn
        .deliver(DeliverRequest::new(session.uri(), "ping"))
        .await
        .unwrap_err();
    assert!(matches!(busy, Error::ChatBusy { .. }), "{busy:?}");
    assert_eq!(turns_started(&host), started, "nothing dispatched");
    // Once the person's turn ended, the kept state sees the chat free again.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let turn = conn
        .deliver(DeliverRequest::new(session.uri(), "ping"))
        .await
        .unwrap();
    assert_eq!(
        turn.answer(ANSWER_TIMEOUT).await.unwrap().text,
        "pong from copilot"
    );
    assert_eq!(subscribes(&host), 2, "still none more");
}
