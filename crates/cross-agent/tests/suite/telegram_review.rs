//! The Review button end to end: the built binary's daemon polls the fake Bot API, the person
//! lists the sessions and taps Review on a card; the daemon runs the review off the poller's
//! loop and answers with a card in the chat, and a tap from someone not paired is refused.
//!
//! On this branch the daemon's `cross-agent review SESSION --json` is not built yet (issue 26
//! §2 lands beside it), so the review cannot run and the card must say so; with it, and no
//! provider configured, the card says there is no reviewer. Either way nothing is sent.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use super::review_robot::{Place, decisions, stop};
use super::telegram::{WAIT, bot, spawn_fed, wait_within};

const PERSON: i64 = 5001;
const STRANGER: i64 = 666;

fn sent_containing(
    api: &cross_agent_testkit::telegram::FakeBotApi,
    needle: &str,
) -> Option<(i64, Value)> {
    api.sent()
        .into_iter()
        .find(|(_, body)| body["text"].as_str().is_some_and(|t| t.contains(needle)))
}

#[test]
fn review_from_the_phone_answers_with_a_card_and_a_strangers_tap_is_refused() {
    let place = Place::with_config("");
    let (token, api) = bot();
    let with_bot = |args: &[&str]| {
        let mut command = place.command(args);
        command
            .env("CROSS_AGENT_TELEGRAM_API", api.base_url())
            .env("CROSS_AGENT_TELEGRAM_POLL_TIMEOUT", "1");
        command
    };
    let mut setup = with_bot(&["telegram", "setup", "--json"]);
    setup.stdout(Stdio::piped()).stderr(Stdio::piped());
    assert!(
        spawn_fed(&mut setup, &format!("{token}\n"))
            .wait_with_output()
            .unwrap()
            .status
            .success()
    );
    let daemon = with_bot(&["daemon", "run"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = with_bot(&["telegram", "pair", "--json"]).output().unwrap();
    let code: Value = serde_json::from_slice(&out.stdout).unwrap();
    api.push_message(
        PERSON,
        PERSON,
        &format!("/pair {}", code["code"].as_str().unwrap()),
    );
    assert!(wait_within(WAIT, || decisions(&place.state).iter().any(
        |d| d["kind"] == "telegram_pair" && d["outcome"] == "paired"
    )));

    api.push_message(PERSON, PERSON, "/sessions");
    let id = &place.ids[0];
    let mut card = None;
    assert!(wait_within(WAIT, || {
        card = sent_containing(&api, id);
        card.is_some()
    }));
    let (message_id, body) = card.unwrap();
    let buttons = body["reply_markup"]["inline_keyboard"][0]
        .as_array()
        .unwrap();
    assert_eq!(buttons[4]["text"], "🔍 Review", "{body:#}");
    let review = buttons[4]["callback_data"].as_str().unwrap().to_owned();
    let on_card = json!({"message_id": message_id, "date": 1_760_000_000,
                         "chat": {"id": PERSON, "type": "private"}});

    // A stranger's tap on the card (forwarded, say) runs nothing.
    api.push_callback_on(STRANGER, on_card.clone(), &review);
    assert!(wait_within(WAIT, || decisions(&place.state)
        .iter()
        .any(|d| d["kind"] == "telegram_refused")));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !decisions(&place.state)
            .iter()
            .any(|d| d["kind"] == "telegram_review"),
        "the stranger's tap started no review"
    );
    assert!(sent_containing(&api, "Reviewing").is_none());

    // The person's tap: the review runs and its card answers in the chat.
    api.push_callback_on(PERSON, on_card, &review);
    let mut answer = None;
    assert!(
        wait_within(WAIT, || {
            answer = sent_containing(&api, "could not run")
                .or_else(|| sent_containing(&api, "no reviewer of another model family"));
            answer.is_some()
        }),
        "{:#?}",
        api.sent()
    );
    let line = decisions(&place.state)
        .into_iter()
        .find(|d| d["kind"] == "telegram_review")
        .unwrap();
    assert_eq!(line["session"], id.as_str());
    assert!(
        line["outcome"] == "failed" || line["outcome"] == "no_reviewer",
        "{line}"
    );
    assert!(sent_containing(&api, "Reviewing").is_some());
    stop(&place, daemon);
}
