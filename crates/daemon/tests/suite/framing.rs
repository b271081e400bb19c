//! Broken frames get an error answer and the daemon — and the connection — keep serving.

use cross_agent_ipc::frame::MAX_FRAME_BYTES;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Raw, Running, TempHome, connect};

#[tokio::test]
async fn a_malformed_frame_gets_an_error_and_the_connection_goes_on() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let mut raw = Raw::connect(&temp.home.socket()).await;

    raw.send(b"this is not json\n").await;
    let answer = raw.recv().await.unwrap();
    assert_eq!(answer["type"], "error");
    assert_eq!(answer["id"], json!(null));
    assert_eq!(answer["error"]["code"], "parse_error");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("one JSON object per line")
    );

    raw.hello().await;

    raw.send(b"{\"no\":\"id\"}\n").await;
    let answer = raw.recv().await.unwrap();
    assert_eq!(answer["error"]["code"], "invalid_request");

    raw.send(b"{\"id\":7,\"method\":\"teleport\",\"params\":{}}\n")
        .await;
    let answer = raw.recv().await.unwrap();
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], "method_not_found");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`teleport`")
    );

    raw.send(b"{\"id\":8,\"method\":\"shutdown\",\"params\":{\"reason\":5}}\n")
        .await;
    let answer = raw.recv().await.unwrap();
    assert_eq!(answer["id"], 8);
    assert_eq!(answer["error"]["code"], "invalid_params");

    raw.send(b"{\"id\":9,\"method\":\"status\",\"params\":{}}\n")
        .await;
    let answer = raw.recv().await.unwrap();
    assert_eq!(answer["type"], "response");
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["result"]["generation"], 1);
    daemon.stop().await;
}

#[tokio::test]
async fn an_over_long_frame_is_refused_without_losing_the_connection() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let mut raw = Raw::connect(&temp.home.socket()).await;
    raw.hello().await;

    let mut huge = b"{\"id\":2,\"method\":\"status\",\"params\":{\"pad\":\"".to_vec();
    huge.extend(std::iter::repeat_n(b'x', MAX_FRAME_BYTES + 10));
    huge.extend(b"\"}}\n");
    raw.send(&huge).await;
    let answer = raw.recv().await.unwrap();
    assert_eq!(answer["type"], "error");
    assert_eq!(answer["error"]["code"], "frame_too_large");

    raw.send(b"{\"id\":3,\"method\":\"status\",\"params\":{}}\n")
        .await;
    let answer = raw.recv().await.unwrap();
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["type"], "response");

    // Other clients were never affected.
    let other = connect(&temp.home).await;
    assert_eq!(other.hello.generation, 1);
    daemon.stop().await;
}

/// `index_listing` is answered by a frame and then exactly `bytes` bytes of the rendered
/// listing (pretty JSON, newlines and all); the one-shot client copies them out and the
/// connection stays in step for the next request.
#[tokio::test(flavor = "multi_thread")]
async fn the_rendered_listing_follows_its_answer_and_the_connection_goes_on() {
    use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};

    let temp = TempHome::new();
    let user = temp.dir.path().join("user");
    let mut t = ClaudeTranscript::new(&user, "/work/api", "c-listed");
    t.user("list me", now_millis() - 60_000)
        .custom_title("listed");
    t.write().unwrap();
    let daemon = Running::start(&temp.home);
    let (answer, bytes, status) = listed_then_status(&temp, &user, 1).await;
    assert_eq!(answer.bytes, bytes.len() as u64);
    assert_eq!(answer.sessions, 1);
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.ends_with("}\n") && text.lines().count() > 10, "{text}");
    let listing: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(listing["claude"][0]["session_id"], "c-listed");
    assert_eq!(listing["claude"][0]["title"], "listed");
    assert_eq!(listing["claude"][0]["is_active"], true);
    assert_eq!(listing["codex"], json!([]));
    assert_eq!(status.generation, daemon.info.generation);
    daemon.stop().await;
}

/// A listing with costs is two pieces a session, far more than one vectored write takes and far
/// more bytes than the socket holds: every byte still arrives once, in order — the listing
/// parses, every session is in it with its cost, and the connection goes on.
#[tokio::test(flavor = "multi_thread")]
async fn a_listing_larger_than_the_socket_in_thousands_of_pieces_arrives_whole() {
    use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};

    const SESSIONS: usize = 2_500;
    let temp = TempHome::new();
    let user = temp.dir.path().join("user");
    // Days old: not active, so each session goes out as its kept rendering and its cost.
    let at = now_millis() - 3 * 86_400_000;
    for n in 0..SESSIONS {
        let mut t = ClaudeTranscript::new(&user, "/work/api", &format!("c-{n:05}"));
        t.user("list me", at).assistant_text("listed", at + 1_000);
        t.write().unwrap();
    }
    let daemon = Running::start(&temp.home);
    // Twice: the first builds the index, the second is the kept renderings' own listing.
    let (answer, bytes, status) = listed_then_status(&temp, &user, 2).await;
    assert!(bytes.len() > 512 << 10, "{} bytes", bytes.len());
    assert_eq!(answer.bytes, bytes.len() as u64);
    let listing: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let claude = listing["claude"].as_array().unwrap();
    let mut ids: Vec<&str> = claude
        .iter()
        .map(|e| e["session_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    let want: Vec<String> = (0..SESSIONS).map(|n| format!("c-{n:05}")).collect();
    assert_eq!(ids, want);
    // Each transcript's one reply is its own (ids unique across sessions, as Claude Code's
    // are): every session costs 12 tokens in and 34 out of claude-sonnet-4-5.
    for entry in claude {
        assert_eq!(entry["cost_usd"], "0.000546", "{entry}");
        assert_eq!(entry["usage_tokens"], 46, "{entry}");
    }
    assert_eq!(status.generation, daemon.info.generation);
    daemon.stop().await;
}

/// `index_listing` for the stores under `user`, asked `times` times on one one-shot connection
/// (the last answer and its bytes kept), then `status` on the same connection.
async fn listed_then_status(
    temp: &TempHome,
    user: &std::path::Path,
    times: usize,
) -> (
    cross_agent_protocol::bridge::IndexListingResponse,
    Vec<u8>,
    cross_agent_protocol::rpc::StatusResponse,
) {
    use cross_agent_ipc::oneshot::OneShot;
    use cross_agent_protocol::bridge::{CallerContext, IndexListingParams, Scope};
    use cross_agent_protocol::rpc::{ClientKind, StatusParams};
    use cross_agent_testkit::synthetic_stores::now_millis;

    let (home, user) = (temp.home.clone(), user.to_string_lossy().into_owned());
    tokio::task::spawn_blocking(move || {
        let mut client =
            OneShot::connect(&home, ClientKind::Other, std::time::Duration::from_secs(30)).unwrap();
        let params = IndexListingParams {
            agents: Vec::new(),
            scope: Scope::Any,
            cwd: "/".to_owned(),
            limit: None,
            now: now_millis(),
            active_window_min: 240,
            caller: CallerContext {
                child_env: [("HOME".to_owned(), user)].into(),
                ..CallerContext::default()
            },
        };
        let mut bytes = Vec::new();
        let mut answer = None;
        for _ in 0..times {
            bytes.clear();
            answer = Some(
                client
                    .call_with_trailer(params.clone(), |a| a.bytes, &mut bytes)
                    .unwrap(),
            );
        }
        let status = client.call(StatusParams {}).unwrap();
        (answer.unwrap(), bytes, status)
    })
    .await
    .unwrap()
}
