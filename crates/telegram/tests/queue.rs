//! The outbound queue against the fake Bot API: a 429 storm loses nothing and keeps each chat's
//! order, a parse error goes again as plain text, a long text is chunked in order, a document
//! is sent whole, and the token and `CROSS_AGENT_CHILD_ENV` values never reach the chat.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use cross_agent_decisions::DecisionLog;
use cross_agent_telegram::HttpApi;
use cross_agent_telegram::queue::{OutboundQueue, Outgoing};
use cross_agent_telegram::secrets::Scrubber;
use cross_agent_testkit::telegram::{Failure, FakeBotApi};
use serde_json::Value;

const TOKEN: &str = "4242:SECRETqueue";

fn texts_to(fake: &FakeBotApi, chat: i64) -> Vec<String> {
    fake.calls_to("sendMessage")
        .into_iter()
        .filter(|c| c.body["chat_id"] == chat && c.failed_with.is_none())
        .map(|c| c.body["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_429_storm_loses_nothing_and_keeps_each_chats_order() {
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    for _ in 0..12 {
        fake.fail_next("sendMessage", Failure::too_many(1));
    }
    let home = tempfile::tempdir().unwrap();
    let log = DecisionLog::new(home.path());
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let queue = OutboundQueue::new(api, log, Scrubber::default());
    for n in 0..40 {
        for chat in [1_i64, 2, 3] {
            queue.text(chat, &format!("message {n} to {chat}"), "test");
        }
    }
    queue.idle().await;
    for chat in [1_i64, 2, 3] {
        let got = texts_to(&fake, chat);
        let delivered = got;
        let wanted: Vec<String> = (0..40).map(|n| format!("message {n} to {chat}")).collect();
        assert_eq!(delivered, wanted, "chat {chat}");
    }
    let counts = queue.counts();
    assert_eq!(counts.sent, 120);
    assert_eq!(counts.failed, 0);
    assert_eq!(counts.rate_limited, 12);
    // The retry after a 429 waited its retry_after.
    let calls = fake.calls_to("sendMessage");
    let first = calls.iter().find(|c| c.failed_with == Some(429)).unwrap();
    let retry = calls
        .iter()
        .find(|c| c.body == first.body && c.failed_with.is_none())
        .expect("the refused message went again");
    assert!(retry.at - first.at >= Duration::from_millis(900));
    let logged = std::fs::read_to_string(home.path().join("decisions.jsonl")).unwrap();
    assert_eq!(logged.lines().count(), 120, "one decision per message");
    assert!(logged.contains("\"rate_limited\":"), "{logged}");
}

#[tokio::test]
async fn a_parse_error_goes_again_as_plain_text_and_a_long_text_is_chunked_in_order() {
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    fake.fail_next("sendMessage", Failure::cant_parse_entities());
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let queue = OutboundQueue::new(api, DecisionLog::disabled(), Scrubber::default());
    queue.text(9, "a < b", "test");
    let long: String = (0..10_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    queue.text(9, &long, "test");
    queue.idle().await;
    let refused = &fake.calls_to("sendMessage")[0];
    assert_eq!(refused.failed_with, Some(400));
    assert_eq!(refused.body["text"], "a &lt; b");
    let sent = texts_to(&fake, 9);
    assert_eq!(sent[0], "a < b");
    assert_eq!(sent[1..].concat(), long);
    assert!(sent[1..].iter().all(|t| t.chars().count() <= 4096));
    assert_eq!(queue.counts().retried_plain, 1);
}

#[tokio::test]
async fn a_document_is_sent_whole_with_its_caption_and_secrets_are_scrubbed() {
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let scrubber = Scrubber::new(Some(TOKEN), |name| match name {
        "CROSS_AGENT_CHILD_ENV" => Some("ACC_KEY".into()),
        "ACC_KEY" => Some("sk-child-987654".into()),
        _ => None,
    });
    let home = tempfile::tempdir().unwrap();
    let queue = OutboundQueue::new(api, DecisionLog::new(home.path()), scrubber);
    let content = format!("+line with sk-child-987654\n{}", "+x\n".repeat(3000));
    let message = queue
        .send(
            5,
            Outgoing::Document {
                file_name: "approval.diff".into(),
                bytes: content.clone().into_bytes(),
                caption: format!("the diff, token {TOKEN}"),
                markup: None,
            },
            "test",
        )
        .await
        .unwrap();
    assert!(message.message_id > 0);
    queue.text(5, "echo $ACC_KEY gave sk-child-987654", "test");
    queue.idle().await;
    let document = &fake.calls_to("sendDocument")[0].body;
    assert_eq!(document["chat_id"], 5);
    assert_eq!(document["document"]["file_name"], "approval.diff");
    let got = document["document"]["content"].as_str().unwrap();
    assert_eq!(got, content.replace("sk-child-987654", "[secret]"));
    assert_eq!(document["caption"], "the diff, token [secret]");
    let everything: Value = fake
        .calls()
        .into_iter()
        .map(|c| c.body)
        .collect::<Vec<_>>()
        .into();
    let everything = everything.to_string();
    assert!(!everything.contains("sk-child-987654") && !everything.contains("SECRETqueue"));
    let logged = std::fs::read_to_string(home.path().join("decisions.jsonl")).unwrap();
    assert!(!logged.contains("sk-child-987654") && !logged.contains("SECRETqueue"));
}

#[tokio::test]
async fn a_message_for_a_topic_keeps_its_thread_and_the_snapshot_shows_what_waits_and_the_last_429()
{
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    fake.fail_next("sendMessage", Failure::too_many(1));
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let queue = OutboundQueue::new(api, DecisionLog::disabled(), Scrubber::default());
    queue.text(-100_777, "held by the 429", "test");
    let card = {
        let queue = queue.clone();
        tokio::spawn(async move {
            queue
                .send(
                    -100_777,
                    Outgoing::Text {
                        text: "<b>claude · card</b>".into(),
                        mode: cross_agent_telegram::api::ParseMode::Html,
                        markup: Some(serde_json::json!({"inline_keyboard": [[{"text": "Prompt",
                            "callback_data": "s:1"}]]})),
                        thread: Some(42),
                    },
                    "session_card",
                )
                .await
        })
    };
    // The card is queued (behind the first message, held by the 429) before the answer.
    while queue.snapshot().waiting.get(&-100_777) != Some(&2) {
        tokio::task::yield_now().await;
    }
    queue.text_in(-100_777, Some(42), "an answer in the topic", "answer");
    let waiting = queue.snapshot();
    assert_eq!(waiting.waiting.get(&-100_777), Some(&3), "{waiting:?}");
    let sent = card.await.unwrap().unwrap();
    queue.idle().await;
    let snapshot = queue.snapshot();
    assert!(snapshot.waiting.is_empty(), "{snapshot:?}");
    let limited = snapshot.last_rate_limited.expect("the 429 is kept");
    assert_eq!(
        (limited.chat_id, limited.retry_after_s),
        (-100_777, Some(1))
    );
    let calls: Vec<Value> = fake
        .calls_to("sendMessage")
        .into_iter()
        .filter(|c| c.failed_with.is_none())
        .map(|c| c.body)
        .collect();
    assert_eq!(calls.len(), 3);
    assert!(calls[0].get("message_thread_id").is_none());
    assert_eq!(
        calls[1]["message_thread_id"], 42,
        "the card stays in its topic"
    );
    assert_eq!(
        calls[1]["reply_markup"]["inline_keyboard"][0][0]["text"],
        "Prompt"
    );
    assert_eq!(calls[2]["message_thread_id"], 42);
    assert!(
        sent.message_id > 0,
        "the card's id comes back from the queue"
    );
}
