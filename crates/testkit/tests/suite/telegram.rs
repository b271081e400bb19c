//! The fake Bot API on its own: what a client sees of it (the envelope, a wrong token, a
//! superseded long poll, confirmation by offset, queued failures, the methods it serves).

// The helper panics on a broken answer just as the tests do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use cross_agent_testkit::telegram::{Failure, FakeBotApi};
use serde_json::{Value, json};

const TOKEN: &str = "4242:FAKEtoken";

async fn call(fake: &FakeBotApi, token: &str, method: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/bot{token}/{method}", fake.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn it_answers_as_the_bot_api_does() {
    let fake = FakeBotApi::start(TOKEN, "fake_bot").unwrap();
    let (status, me) = call(&fake, TOKEN, "getMe", json!({})).await;
    assert_eq!(
        (status, &me["result"]["username"]),
        (200, &json!("fake_bot"))
    );
    let (status, wrong) = call(&fake, "1:other", "getMe", json!({})).await;
    assert_eq!(
        (status, &wrong["description"]),
        (401, &json!("Unauthorized"))
    );

    let (_, topic) = call(
        &fake,
        TOKEN,
        "createForumTopic",
        json!({"chat_id": -100, "name": "claude · x"}),
    )
    .await;
    assert_eq!(topic["result"]["name"], "claude · x");
    assert!(topic["result"]["message_thread_id"].is_i64());
    for method in ["sendDocument", "sendMessage", "editMessageText"] {
        let (status, sent) = call(
            &fake,
            TOKEN,
            method,
            json!({"chat_id": 5, "text": "t", "message_id": 1}),
        )
        .await;
        assert_eq!((status, sent["ok"].clone()), (200, json!(true)), "{method}");
    }
    let (status, _) = call(&fake, TOKEN, "noSuchMethod", json!({})).await;
    assert_eq!(status, 404);

    fake.fail_next("sendMessage", Failure::too_many(7));
    let (status, limited) = call(
        &fake,
        TOKEN,
        "sendMessage",
        json!({"chat_id": 5, "text": "t"}),
    )
    .await;
    assert_eq!(
        (status, &limited["parameters"]["retry_after"]),
        (429, &json!(7))
    );
    assert_eq!(
        fake.calls_to("sendMessage").len(),
        2,
        "failed calls are recorded too"
    );
}

#[tokio::test]
async fn updates_wait_in_a_long_poll_are_confirmed_by_offset_and_a_second_poll_ends_the_first() {
    let fake = FakeBotApi::start(TOKEN, "fake_bot").unwrap();
    let first = fake.push_message(1, 1, "one");
    let (_, got) = call(
        &fake,
        TOKEN,
        "getUpdates",
        json!({"offset": 0, "timeout": 0}),
    )
    .await;
    assert_eq!(got["result"][0]["message"]["text"], "one");
    assert!(!fake.all_confirmed());
    let (_, got) = call(
        &fake,
        TOKEN,
        "getUpdates",
        json!({"offset": first + 1, "timeout": 0}),
    )
    .await;
    assert_eq!(got["result"], json!([]));
    assert!(fake.all_confirmed());

    // A long poll that another getUpdates supersedes ends with a 409, as Telegram's does.
    let waiting = tokio::spawn({
        let url = format!("{}/bot{TOKEN}/getUpdates", fake.base_url());
        async move {
            let response = reqwest::Client::new()
                .post(url)
                .json(&json!({"offset": first + 1, "timeout": 10}))
                .send()
                .await
                .unwrap();
            response.status().as_u16()
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = tokio::spawn({
        let url = format!("{}/bot{TOKEN}/getUpdates", fake.base_url());
        async move {
            let response = reqwest::Client::new()
                .post(url)
                .json(&json!({"offset": first + 1, "timeout": 10}))
                .send()
                .await
                .unwrap();
            response.json::<Value>().await.unwrap()
        }
    });
    assert_eq!(waiting.await.unwrap(), 409);
    tokio::time::sleep(Duration::from_millis(100)).await;
    fake.push_message(1, 1, "two");
    let got = second.await.unwrap();
    assert_eq!(
        got["result"][0]["message"]["text"], "two",
        "a pushed update ends the wait"
    );
}
