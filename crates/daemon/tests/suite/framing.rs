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
