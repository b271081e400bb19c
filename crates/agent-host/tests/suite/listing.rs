use std::time::Duration;

use cross_agent_agent_host::RootEvent;
use cross_agent_testkit::agent_host::FakeSession;
use pretty_assertions::assert_eq;

use super::common::{Bench, connect};

#[tokio::test]
async fn lists_every_page_with_uuid_archived_cwd_and_default_chat() {
    let bench = Bench::new();
    let mut builder = bench.host().page_size(2);
    let mut expected = Vec::new();
    for i in 0..5 {
        let mut session = FakeSession::new(format!("session {i}"))
            .cwd(format!("file:///home/u/p{i}"))
            .modified_at(format!("2026-12-0{}T10:00:00.000Z", i + 1));
        if i == 3 {
            session = session.archived();
        }
        expected.push(session.clone());
        builder = builder.session(session);
    }
    let host = builder.start().unwrap();
    let conn = connect(&host).await;

    let listed = conn.list_sessions().await.unwrap();
    // Newest first, all five across three pages.
    let titles: Vec<&str> = listed.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "session 4",
            "session 3",
            "session 2",
            "session 1",
            "session 0"
        ]
    );
    let pages = host
        .received()
        .iter()
        .filter(|m| m["method"] == "listSessions")
        .count();
    assert_eq!(pages, 3);

    let third = &listed[1];
    let source = &expected[3];
    assert_eq!(third.uri, source.uri());
    assert_eq!(
        third.editor_id,
        source.uri().trim_start_matches("copilotcli:/")
    );
    assert!(third.archived());
    assert!(!listed[0].archived());
    assert_eq!(
        third.working_directories,
        vec!["file:///home/u/p3".to_owned()]
    );
    assert_eq!(
        third.default_chat.as_deref(),
        Some(source.chat_uri().as_str())
    );
    assert_eq!(third.modified_at, "2026-12-04T10:00:00.000Z");
    assert!(third.status.idle());
}

#[tokio::test]
async fn root_notifications_keep_the_listing_current() {
    let bench = Bench::new();
    let host = bench
        .host()
        .session(FakeSession::new("first"))
        .start()
        .unwrap();
    let conn = connect(&host).await;
    let mut events = conn.root_events().await;

    let added = FakeSession::new("added later").scheme("ahp-session");
    host.add_session(added.clone());
    host.rename_session(&added.uri(), "renamed");
    host.remove_session(&added.uri());

    let RootEvent::Added(info) = next(&mut events).await else {
        panic!("expected sessionAdded first");
    };
    assert_eq!(info.uri, added.uri());
    assert_eq!(
        info.editor_id,
        added.uri().trim_start_matches("ahp-session:/")
    );
    match next(&mut events).await {
        RootEvent::Changed { uri, title, .. } => {
            assert_eq!(uri, added.uri());
            assert_eq!(title.as_deref(), Some("renamed"));
        }
        other => panic!("expected sessionSummaryChanged, got {other:?}"),
    }
    assert_eq!(
        next(&mut events).await,
        RootEvent::Removed { uri: added.uri() }
    );
}

async fn next(events: &mut cross_agent_agent_host::RootEvents) -> RootEvent {
    tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("a root event in time")
        .expect("the connection is up")
}

/// One summary the client cannot parse (a `status` that is not a number, no `createdAt`) is
/// skipped; the sessions beside it on the same page are still listed.
#[tokio::test]
async fn a_summary_that_does_not_parse_is_skipped_and_the_others_are_listed() {
    let bench = Bench::new();
    let host = bench
        .host()
        .session(FakeSession::new("kept one"))
        .session(FakeSession::new("kept two"))
        .start()
        .unwrap();
    host.list_unparsable(serde_json::json!({
        "provider": "copilotcli", "title": "broken", "status": "idle",
        "resource": "copilotcli:/0bad0000-0000-4000-8000-000000000000"
    }));
    let conn = connect(&host).await;

    let listed = conn.list_sessions().await.unwrap();
    let mut titles: Vec<&str> = listed.iter().map(|s| s.title.as_str()).collect();
    titles.sort_unstable();
    assert_eq!(titles, ["kept one", "kept two"]);
}
