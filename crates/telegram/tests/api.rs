//! The poller and the outbound queue against the fake Bot API (testkit `telegram`), in process:
//! a 429 waits its `retry_after`, a parse error is retried as plain text, a long text is
//! chunked, a failed send is a decision.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use cross_agent_decisions::DecisionLog;
use cross_agent_telegram::api::MAX_TEXT_CHARS;
use cross_agent_telegram::poller::{Poller, PollerConfig};
use cross_agent_telegram::queue::OutboundQueue;
use cross_agent_telegram::secrets::Scrubber;
use cross_agent_telegram::{HttpApi, TelegramApi};
use cross_agent_testkit::telegram::{Failure, FakeBotApi};
use serde_json::Value;

const TOKEN: &str = "4242:SECRETapi";

fn decisions(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("decisions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test]
async fn a_429_waits_its_retry_after_before_the_next_poll() {
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    fake.fail_next("getUpdates", Failure::too_many(2));
    let home = tempfile::tempdir().unwrap();
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let config = PollerConfig {
        poll_timeout: Duration::from_secs(1),
        ..PollerConfig::default()
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let poller =
        tokio::spawn(Poller::new(api, home.path(), config, DecisionLog::disabled()).run(stopped));
    // Stopped once it has come back, not after a guessed pause (a ceiling for a loaded machine).
    tokio::time::timeout(Duration::from_secs(120), async {
        while fake.calls_to("getUpdates").len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the poller came back after the 429");
    stop.send_replace(true);
    poller.await.unwrap();
    let polls = fake.calls_to("getUpdates");
    assert!(polls.len() >= 2, "the poller came back after the 429");
    let waited = polls[1].at - polls[0].at;
    assert!(waited >= Duration::from_secs(2), "waited {waited:?}");
    let status = cross_agent_telegram::store::read_status(home.path()).unwrap();
    assert!(status.last_error.unwrap().contains("retry after 2"));
}

#[tokio::test]
async fn a_parse_error_is_retried_as_plain_text_and_logged() {
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    fake.fail_next("sendMessage", Failure::cant_parse_entities());
    let home = tempfile::tempdir().unwrap();
    let log = DecisionLog::new(home.path());
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let queue = OutboundQueue::new(api, log, Scrubber::default());
    queue.text(42, "if a < b && c > d", "test");
    queue.idle().await;
    let sends = fake.calls_to("sendMessage");
    assert_eq!(sends.len(), 2);
    assert_eq!(sends[0].body["parse_mode"], "HTML");
    assert_eq!(sends[0].body["text"], "if a &lt; b &amp;&amp; c &gt; d");
    assert!(sends[1].body.get("parse_mode").is_none());
    assert_eq!(sends[1].body["text"], "if a < b && c > d");
    let logged = decisions(home.path());
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0]["kind"], "telegram_delivery");
    assert_eq!(logged[0]["outcome"], "retried_plain");
}

#[tokio::test]
async fn a_10000_character_text_goes_out_in_chunks_of_at_most_4096_in_order() {
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    let home = tempfile::tempdir().unwrap();
    let log = DecisionLog::new(home.path());
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let text: String = (0..10_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let queue = OutboundQueue::new(api, log, Scrubber::default());
    queue.text(42, &text, "test");
    queue.idle().await;
    let sends = fake.calls_to("sendMessage");
    assert_eq!(sends.len(), 3);
    let pieces: Vec<&str> = sends
        .iter()
        .map(|s| s.body["text"].as_str().unwrap())
        .collect();
    assert!(pieces.iter().all(|p| p.chars().count() <= MAX_TEXT_CHARS));
    assert_eq!(pieces.concat(), text);
    let logged = decisions(home.path());
    assert_eq!(logged.len(), 3);
    assert!(
        logged
            .iter()
            .all(|d| d["details"]["chunks"] == 3 && d["outcome"] == "sent")
    );
}

#[tokio::test]
async fn a_failed_send_is_a_decision_with_the_apis_description_and_no_token() {
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    let home = tempfile::tempdir().unwrap();
    let log = DecisionLog::new(home.path());
    // Nobody listens on the port of a stopped fake: a network error.
    let base = fake.base_url().to_owned();
    drop(fake);
    let api = HttpApi::new(Some(&base), TOKEN).unwrap();
    let queue = OutboundQueue::new(api.clone(), log, Scrubber::default());
    queue.text(42, "hello", "test");
    queue.idle().await;
    assert_eq!(queue.counts().failed, 1);
    assert!(api.get_me().await.is_err());
    let logged = std::fs::read_to_string(home.path().join("decisions.jsonl")).unwrap();
    assert!(logged.contains("\"outcome\":\"failed\""), "{logged}");
    assert!(!logged.contains(TOKEN), "{logged}");
    assert!(!format!("{api:?}").contains(TOKEN));
}

#[tokio::test]
async fn edits_to_one_chat_are_paced_and_another_chat_is_not_held_up() {
    use cross_agent_telegram::limit::{EditLimiter, edit_text};
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let log = DecisionLog::disabled();

    // Paced: the n-th edit goes out no sooner than n slots after the first was asked for. A
    // lower bound from a time read before the first edit holds however slow the machine is.
    let per_chat = Duration::from_millis(300);
    let limiter = EditLimiter::new(per_chat);
    let asked = std::time::Instant::now();
    for n in 0..4 {
        assert!(edit_text(&api, &limiter, &log, 42, 7, &format!("step {n}")).await);
    }
    let to_42: Vec<_> = fake
        .calls_to("editMessageText")
        .into_iter()
        .filter(|e| e.body["chat_id"] == 42)
        .collect();
    assert_eq!(to_42.len(), 4);
    for (n, edit) in (0u32..).zip(&to_42) {
        let after = edit.at - asked;
        assert!(after >= per_chat * n, "edit {n} went out {after:?} in");
    }

    // Not held up: with chat 44's next slot an hour away and an edit waiting for it, an edit to
    // chat 45 goes out at once (the ceiling is a hang guard; holding it up would take an hour).
    let limiter = EditLimiter::new(Duration::from_secs(3600));
    assert!(edit_text(&api, &limiter, &log, 44, 7, "first").await);
    let held = edit_text(&api, &limiter, &log, 44, 7, "held an hour");
    let other = tokio::time::timeout(
        Duration::from_secs(120),
        edit_text(&api, &limiter, &log, 45, 8, "other chat"),
    );
    tokio::select! {
        _ = held => panic!("chat 44's second edit did not wait for its slot"),
        sent = other => assert!(sent.expect("the other chat is not held up")),
    }
    let chats: Vec<_> = fake
        .calls_to("editMessageText")
        .into_iter()
        .map(|e| e.body["chat_id"].clone())
        .filter(|chat| chat == 44 || chat == 45)
        .collect();
    assert_eq!(chats, [44, 45]);
}

#[tokio::test]
async fn an_edit_telegram_cannot_parse_is_retried_as_plain_text() {
    use cross_agent_telegram::limit::{EditLimiter, edit_text};
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    fake.fail_next("editMessageText", Failure::cant_parse_entities());
    let home = tempfile::tempdir().unwrap();
    let log = DecisionLog::new(home.path());
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let limiter = EditLimiter::default();
    assert!(edit_text(&api, &limiter, &log, 42, 7, "a &lt; b").await);
    let edits = fake.calls_to("editMessageText");
    assert_eq!(edits.len(), 2);
    assert_eq!(edits[1].body["text"], "a < b");
    assert_eq!(decisions(home.path())[0]["outcome"], "retried_plain");
}

#[tokio::test]
async fn a_file_is_fetched_by_get_file_and_a_download_past_the_cap_is_cut_off() {
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let id = fake.add_file(b"0123456789");
    let file = api.get_file(&id).await.unwrap();
    assert_eq!(file.file_size, Some(10));
    let path = file.file_path.unwrap();
    assert_eq!(api.download_file(&path, 10).await.unwrap(), b"0123456789");
    // A file bigger than it said (or than the cap) is refused, not kept.
    let error = api.download_file(&path, 9).await.unwrap_err();
    assert!(
        matches!(error, cross_agent_telegram::Error::TooLarge { limit: 9 }),
        "{error}"
    );
    let unknown = api.get_file("nope").await.unwrap_err();
    assert_eq!(unknown.code(), Some(400));
}

/// Entries with no readable `update_id` confirm nothing: the poller says so and backs off
/// instead of asking for the same entries at once, tells each of them once however often it is
/// offered, and moves on as soon as an update with a readable id comes behind them.
#[tokio::test]
async fn updates_without_a_readable_id_back_off_are_told_once_and_a_readable_one_moves_on() {
    let fake = FakeBotApi::start(TOKEN, "bot").unwrap();
    fake.push_raw(|_| serde_json::json!({"message": {"message_id": 1}}));
    fake.push_raw(|_| serde_json::json!(["not", "an", "update"]));
    let home = tempfile::tempdir().unwrap();
    let api = HttpApi::new(Some(fake.base_url()), TOKEN).unwrap();
    let config = PollerConfig {
        poll_timeout: Duration::from_secs(1),
        max_network_backoff: Duration::from_secs(1),
        ..PollerConfig::default()
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let poller = tokio::spawn(
        Poller::new(api, home.path(), config, DecisionLog::new(home.path())).run(stopped),
    );
    tokio::time::timeout(Duration::from_secs(120), async {
        while fake.calls_to("getUpdates").len() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the poller polled again");
    let calls = fake.calls_to("getUpdates");
    for pair in calls.windows(2) {
        let waited = pair[1].at - pair[0].at;
        assert!(
            waited >= Duration::from_millis(500),
            "asked again after {waited:?}"
        );
        assert_eq!(pair[1].body["offset"], 0, "nothing was confirmed");
    }
    // Between two polls it says it is backing off (while one is in flight, polling).
    let status = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            let status = cross_agent_telegram::store::read_status(home.path()).unwrap();
            if status.state == "backing_off" {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the poller backs off");
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap()
            .contains("2 update(s) and no readable update_id"),
        "{status:?}"
    );
    assert_eq!(status.updates_skipped, 2, "each told once: {status:?}");

    // An update whose id can be read: the poller goes past it and everything before it.
    let good = fake.push_message(6001, 6001, "hello");
    tokio::time::timeout(Duration::from_secs(120), async {
        while !fake.all_confirmed() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the poller confirmed past the readable update");
    assert!(
        fake.calls_to("getUpdates")
            .iter()
            .any(|c| c.body["offset"] == good + 1)
    );
    stop.send_replace(true);
    poller.await.unwrap();
    let logged = decisions(home.path());
    let skipped: Vec<_> = logged
        .iter()
        .filter(|d| d["kind"] == "telegram_update")
        .collect();
    assert_eq!(skipped.len(), 2, "{logged:#?}");
    assert_eq!(skipped[0]["outcome"], "skipped");
    assert_eq!(skipped[0]["reason"], "it has no update_id");
    assert_eq!(skipped[0]["details"]["update_kind"], "message");
    assert!(skipped[0]["details"].get("update_id").is_none());
    assert_eq!(skipped[1]["reason"], "it is an array, not an update object");
    assert!(
        logged
            .iter()
            .any(|d| d["kind"] == "telegram_refused" && d["details"]["user_id"] == 6001),
        "the readable update was handled: {logged:#?}"
    );
    let status = cross_agent_telegram::store::read_status(home.path()).unwrap();
    assert_eq!(status.state, "stopped");
    assert_eq!(status.updates_skipped, 2);
}
