//! `hello` first, one protocol version, and what `status` reports.

use cross_agent_ipc::{Client, Error};
use cross_agent_protocol::rpc::{
    ClientKind, HelloParams, PROTOCOL_VERSION, StatusParams, StatusResponse,
};
use pretty_assertions::assert_eq;

use super::{Raw, Running, TempHome, connect};

#[tokio::test]
async fn hello_then_status_reports_the_daemon() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let connection = connect(&temp.home).await;

    assert_eq!(connection.hello.protocol_version, PROTOCOL_VERSION);
    assert_eq!(connection.hello.daemon_pid, std::process::id());
    assert_eq!(connection.hello.generation, 1);
    assert!(!connection.started);

    let mut status = connection.client.call(StatusParams {}).await.unwrap();
    assert!(status.uptime_seconds < 60);
    status.uptime_seconds = 0;
    assert_eq!(
        status,
        StatusResponse {
            daemon_pid: std::process::id(),
            daemon_version: env!("CARGO_PKG_VERSION").to_owned(),
            protocol_version: PROTOCOL_VERSION,
            generation: 1,
            started_at: daemon.info.started_at.clone(),
            uptime_seconds: 0,
            home: temp.root().to_string_lossy().into_owned(),
            socket: temp.home.socket().to_string_lossy().into_owned(),
            draining: vec![],
        }
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_client_of_another_protocol_version_is_told_both_versions() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let client = Client::connect(&temp.home.socket()).await.unwrap();

    let error = client
        .call(HelloParams {
            protocol_version: PROTOCOL_VERSION + 1,
            client_kind: ClientKind::Cli,
            client_pid: 4242,
            client_version: "9.9.9".into(),
        })
        .await
        .unwrap_err();
    match &error {
        Error::ProtocolMismatch {
            client,
            daemon,
            daemon_pid,
            ..
        } => {
            assert_eq!(
                (*client, *daemon, *daemon_pid),
                (PROTOCOL_VERSION + 1, PROTOCOL_VERSION, std::process::id())
            );
        }
        other => panic!("expected ProtocolMismatch, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains(&format!("speaks protocol {PROTOCOL_VERSION}"))
            && message.contains(&format!("speaks protocol {}", PROTOCOL_VERSION + 1))
            && message.contains("cross-agent daemon restart"),
        "{message}"
    );

    // The daemon hangs up on a mismatched client; later calls fail instead of hanging.
    let after = client.call(StatusParams {}).await.unwrap_err();
    assert!(matches!(after, Error::Closed { .. }), "{after:?}");
    daemon.stop().await;
}

#[tokio::test]
async fn the_raw_mismatch_error_carries_both_versions_as_data() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let mut raw = Raw::connect(&temp.home.socket()).await;
    raw.send(
        br#"{"id":5,"method":"hello","params":{"protocol_version":0,"client_kind":"mcp","client_pid":1,"client_version":"0.0.1"}}
"#,
    )
    .await;
    let answer = raw.recv().await.unwrap();
    assert_eq!(answer["type"], "error");
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["error"]["code"], "protocol_mismatch");
    assert_eq!(
        answer["error"]["data"]["daemon_protocol_version"],
        PROTOCOL_VERSION
    );
    assert_eq!(answer["error"]["data"]["client_protocol_version"], 0);
    assert_eq!(
        raw.recv().await,
        None,
        "the connection is closed after a mismatch"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn requests_before_hello_are_refused() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let client = Client::connect(&temp.home.socket()).await.unwrap();
    match client.call(StatusParams {}).await {
        Err(Error::Rpc { code, message, .. }) => {
            assert_eq!(code.as_str(), "handshake_required");
            assert!(message.contains("hello"), "{message}");
        }
        other => panic!("expected handshake_required, got {other:?}"),
    }
    // The same connection may still say hello and go on.
    client.hello(ClientKind::Other).await.unwrap();
    client.call(StatusParams {}).await.unwrap();
    daemon.stop().await;
}

#[tokio::test]
async fn many_calls_in_flight_on_one_connection_each_get_their_answer() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let connection = connect(&temp.home).await;
    let client = std::sync::Arc::new(connection.client);
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let client = std::sync::Arc::clone(&client);
        calls.spawn(async move { client.call(StatusParams {}).await });
    }
    while let Some(result) = calls.join_next().await {
        assert_eq!(result.unwrap().unwrap().generation, 1);
    }
    daemon.stop().await;
}
