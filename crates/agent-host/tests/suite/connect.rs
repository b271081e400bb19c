use cross_agent_agent_host::{ConnectionToken, Error, HostConnection, OFFERED_PROTOCOL_VERSIONS};
use pretty_assertions::assert_eq;

use super::common::{Bench, CLIENT_ID, assert_no_token, connect};

#[tokio::test]
async fn negotiates_0_10_0_with_a_1_141_host_and_writes_the_registry_entry() {
    let bench = Bench::new();
    let host = bench.host().start().unwrap();
    let conn = connect(&host).await;
    assert_eq!(conn.protocol_version(), "0.10.0");

    let init = &host.received()[0];
    assert_eq!(init["method"], "initialize");
    assert_eq!(
        init["params"]["protocolVersions"],
        serde_json::json!(OFFERED_PROTOCOL_VERSIONS)
    );
    assert_eq!(init["params"]["clientId"], CLIENT_ID);
    assert_eq!(
        init["params"]["initialSubscriptions"],
        serde_json::json!(["ahp-root://"])
    );

    // The entry, as VS Code writes it: schema v2, owner-only, named by its identity.
    use std::os::unix::fs::PermissionsExt as _;
    let entry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(host.entry_path()).unwrap()).unwrap();
    assert_eq!(entry["schemaVersion"], 2);
    assert_eq!(entry["endpoint"]["path"], host.socket().to_str().unwrap());
    assert_eq!(entry["connectionToken"], host.token());
    let name =
        cross_agent_testkit::agent_host::identity("editor", std::process::id(), host.instance_id());
    assert_eq!(
        host.entry_path().file_name().unwrap().to_str().unwrap(),
        format!("{name}.json")
    );
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(host.entry_path()), 0o600);
    assert_eq!(mode(host.entry_path().parent().unwrap()), 0o700);

    let entry_path = host.entry_path().to_path_buf();
    drop(conn);
    drop(host);
    assert!(!entry_path.exists(), "the entry outlived its host");
}

#[tokio::test]
async fn a_1_0_0_only_offer_is_refused_naming_the_hosts_versions() {
    // Our client always offers three versions; speak to the host the way a 1.0.0-only client
    // would, through `ahp` directly, to see the host's refusal and what our error makes of it.
    let bench = Bench::new();
    let host = bench.host().start().unwrap();
    let err = raw_initialize(&host, &["1.0.0"]).await.unwrap_err();
    assert_eq!(err.code, -32005);
    assert_eq!(
        err.data,
        Some(serde_json::json!({"supportedVersions": ["^0.10.0"]}))
    );
    assert!(err.message.contains("[1.0.0]"), "{}", err.message);
}

/// `initialize` with `versions` over our own transport stack, returning the host's error.
async fn raw_initialize(
    host: &cross_agent_testkit::agent_host::FakeAgentHost,
    versions: &[&str],
) -> Result<(), ahp::ahp_types::messages::JsonRpcError> {
    use futures_util::{SinkExt as _, StreamExt as _};
    let stream = tokio::net::UnixStream::connect(host.socket())
        .await
        .unwrap();
    let url = format!("ws://localhost/?tkn={}", host.token());
    let (mut ws, _) = tokio_tungstenite::client_async(url, stream).await.unwrap();
    let request = serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize",
        "params":{"channel":"ahp-root://","clientId":"old","protocolVersions":versions}});
    ws.send(tokio_tungstenite::tungstenite::Message::text(
        request.to_string(),
    ))
    .await
    .unwrap();
    let reply = ws.next().await.unwrap().unwrap();
    let reply: serde_json::Value = serde_json::from_str(reply.to_text().unwrap()).unwrap();
    match reply.get("error") {
        Some(error) => Err(serde_json::from_value(error.clone()).unwrap()),
        None => Ok(()),
    }
}

#[tokio::test]
async fn a_host_accepting_none_of_our_versions_is_an_error_naming_its_versions() {
    let bench = Bench::new();
    let host = bench.host().protocol_version("0.11.0").start().unwrap();
    let err = HostConnection::connect(host.socket(), &super::common::token_of(&host), CLIENT_ID)
        .await
        .unwrap_err();
    match &err {
        Error::UnsupportedVersion {
            offered, supported, ..
        } => {
            assert_eq!(
                offered,
                &OFFERED_PROTOCOL_VERSIONS.map(str::to_owned).to_vec()
            );
            assert_eq!(supported, &vec!["^0.11.0".to_owned()]);
        }
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
    let shown = err.to_string();
    assert!(
        shown.contains("^0.11.0") && shown.contains(host.socket().to_str().unwrap()),
        "{shown}"
    );
    assert_no_token(&err, host.token());
}

#[tokio::test]
async fn a_wrong_token_is_refused_with_403_and_the_error_never_shows_it() {
    let bench = Bench::new();
    let host = bench.host().start().unwrap();
    let wrong = "wrong-token-5f3a9c";
    let err = HostConnection::connect(host.socket(), &ConnectionToken::new(wrong), CLIENT_ID)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Refused { status: 403, .. }), "{err:?}");
    assert!(
        err.to_string().contains(host.socket().to_str().unwrap()),
        "{err}"
    );
    assert_no_token(&err, wrong);
    assert_no_token(&err, host.token());
    assert_eq!(host.refused_upgrades(), 1);
    // Nor does the token type itself.
    let token = ConnectionToken::new(host.token());
    assert!(!format!("{token} {token:?}").contains(host.token()));
}

#[tokio::test]
async fn a_host_that_is_gone_is_a_clear_error_naming_the_socket() {
    let bench = Bench::new();
    let host = bench.host().start().unwrap();
    let socket = host.socket().to_path_buf();
    let token = ConnectionToken::new(host.token());
    drop(host);
    let err = HostConnection::connect(&socket, &token, CLIENT_ID)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::SocketMissing { .. }), "{err:?}");
    assert!(err.to_string().contains(socket.to_str().unwrap()), "{err}");

    // A socket file nobody listens on any more.
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let err = HostConnection::connect(&stale, &token, CLIENT_ID)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains(stale.to_str().unwrap()), "{err}");

    // A symbolic link where the socket should be is not followed.
    let live = bench.host().start().unwrap();
    let link = dir.path().join("link.sock");
    std::os::unix::fs::symlink(live.socket(), &link).unwrap();
    let err = HostConnection::connect(&link, &ConnectionToken::new(live.token()), CLIENT_ID)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::SocketRefused { .. }), "{err:?}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_no_token(&err, live.token());
}
