//! Copilot's tool confirmations answered from the phone, through the real daemon and its
//! Agent Host watcher: a `FakeAgentHost` (VS Code's Agent Host, from the protocol's docs) runs
//! a turn the editor's user started, which asks to run a tool; the bot posts a card with the
//! tool's own words, and a tap dispatches `chat/toolCallConfirmed` to the host, whose turn then
//! goes on to the model. A deny, and an answer given in the editor first (its card closed, a
//! late tap told it was answered), too. Fake Bot API, temporary homes, no network.

use std::time::Duration;

use cross_agent_testkit::agent_host::{FakeAgentHost, FakeSession, TurnScript};
use cross_agent_testkit::telegram::FakeBotApi;
use cross_agent_testkit::{ModelEndpoint, Rule};
use serde_json::Value;

use super::telegram::{Env, WAIT, bot, paired, sent_text, wait_until};

/// The approval cards posted so far (messages with buttons).
fn cards(api: &FakeBotApi) -> Vec<Value> {
    api.calls_to("sendMessage")
        .into_iter()
        .filter(|c| c.body.get("reply_markup").is_some())
        .map(|c| c.body)
        .collect()
}

/// The `n`th card (from 0), once posted.
fn card(api: &FakeBotApi, n: usize) -> Value {
    assert!(
        wait_until(|| cards(api).len() > n),
        "approval card {n} was posted; calls: {:#?}",
        api.calls_to("sendMessage")
    );
    cards(api).remove(n)
}

fn button(card: &Value, label: &str) -> String {
    card["reply_markup"]["inline_keyboard"][0]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["text"].as_str().unwrap().contains(label))
        .unwrap()["callback_data"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A session whose turns ask to run `command` in the terminal first.
fn asking(title: &str, command: &str) -> FakeSession {
    FakeSession::new(title)
        .cwd("file:///work/tidy")
        .script(TurnScript::AskApproval {
            tool_name: "run_in_terminal".to_owned(),
            display_name: "Terminal".to_owned(),
            message: command.to_owned(),
        })
}

/// The `chat/toolCallConfirmed` actions the host received, with who sent them.
fn confirmations(host: &FakeAgentHost) -> Vec<Value> {
    host.dispatched()
        .into_iter()
        .filter(|p| p["action"]["type"] == "chat/toolCallConfirmed")
        .collect()
}

/// Whether the model was asked to answer `prompt` (the turn went on past its tool call).
fn model_asked(endpoint: &ModelEndpoint, prompt: &str) -> bool {
    endpoint
        .requests()
        .iter()
        .any(|r| r.body.to_string().contains(prompt))
}

#[test]
fn a_copilot_confirmation_is_a_card_a_tap_approves_and_another_denies() {
    let (token, api) = bot();
    let env = paired(&api, &token, "30");
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("list the files").reply_text("here they are"));
    let first = asking("Tidy the repo", "ls -la /work/tidy");
    let second = asking("Clean up", "rm -rf /work/tidy/build");
    let host = FakeAgentHost::builder(env.user.join(".config/Code"))
        .model_endpoint(&endpoint)
        .session(first.clone())
        .session(second.clone())
        .start()
        .unwrap();

    // 1. The editor's user starts a turn; its tool call waits; the card says what it runs.
    host.editor_turn(&first.uri(), "list the files").unwrap();
    let shown = card(&api, 0);
    let text = shown["text"].as_str().unwrap();
    assert!(text.contains("Copilot · Terminal in /work/tidy"), "{text}");
    assert!(text.contains("Run Terminal?"), "{text}");
    assert!(text.contains("ls -la /work/tidy"), "{text}");
    assert!(
        confirmations(&host).is_empty(),
        "nothing answered before a tap"
    );
    // The listing says the session waits for the user, as its host does.
    let first_id = first.uri().split_once(":/").unwrap().1.to_owned();
    assert!(
        wait_until(|| {
            let out = env.run(&["sessions", "--agent", "copilot", "--json"]);
            let listing: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            listing["copilot"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["session_id"] == first_id && s["copilot"]["input_needed"] == true)
        }),
        "the session is listed as waiting for input"
    );

    // A tap approves it: the host gets `approved: true` from the daemon, and the turn goes on.
    api.push_callback(5001, 5001, 1, &button(&shown, "Allow"));
    assert!(
        wait_until(|| confirmations(&host).len() == 1),
        "the tap reached the host"
    );
    let confirmed = &confirmations(&host)[0];
    assert_eq!(confirmed["action"]["approved"], true);
    assert_eq!(confirmed["channel"], first.chat_uri());
    assert!(
        wait_until(|| model_asked(&endpoint, "list the files")),
        "the approved turn went on to the model"
    );
    assert!(sent_text(&api, "editMessageText", WAIT, "Allowed by user 5001").is_some());

    // 2. Another session's call, denied from the phone.
    host.editor_turn(&second.uri(), "clean the build").unwrap();
    let shown = card(&api, 1);
    assert!(
        shown["text"]
            .as_str()
            .unwrap()
            .contains("rm -rf /work/tidy/build")
    );
    api.push_callback(5001, 5001, 2, &button(&shown, "Deny"));
    assert!(
        wait_until(|| confirmations(&host).len() == 2),
        "the deny reached the host"
    );
    let denied = &confirmations(&host)[1];
    assert_eq!(denied["action"]["approved"], false);
    assert_eq!(denied["channel"], second.chat_uri());
    assert!(host.pending_tool_calls().is_empty());

    // Every answer is a decision line naming Copilot.
    let outcomes: Vec<String> = env
        .decisions()
        .into_iter()
        .filter(|d| d["kind"] == "approval" && d["agent"] == "copilot")
        .map(|d| d["outcome"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        outcomes.contains(&"allowed".to_owned()) && outcomes.contains(&"denied".to_owned()),
        "{outcomes:?}"
    );
}

#[test]
fn an_answer_in_the_editor_first_closes_the_card_and_a_late_tap_is_told() {
    let (token, api) = bot();
    let env = paired(&api, &token, "30");
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("format it").reply_text("formatted"));
    let session = asking("Format", "cargo fmt --all");
    let host = FakeAgentHost::builder(env.user.join(".config/Code"))
        .model_endpoint(&endpoint)
        .session(session.clone())
        .start()
        .unwrap();
    host.editor_turn(&session.uri(), "format it").unwrap();
    let shown = card(&api, 0);
    let pending = host.pending_tool_calls();
    assert_eq!(pending.len(), 1);

    // The editor answers first: the card is closed as answered there.
    assert!(host.editor_confirm(&pending[0], true));
    assert!(
        sent_text(
            &api,
            "editMessageText",
            Duration::from_secs(60),
            "Answered in the editor"
        )
        .is_some(),
        "the card was closed"
    );
    // A late tap changes nothing and is told so.
    let taps_before = api.calls_to("answerCallbackQuery").len();
    api.push_callback(5001, 5001, 1, &button(&shown, "Allow"));
    assert!(wait_until(
        || api.calls_to("answerCallbackQuery").len() == taps_before + 1
    ));
    assert_eq!(
        api.calls_to("answerCallbackQuery")[taps_before].body["text"],
        "Already answered"
    );
    assert!(
        confirmations(&host).is_empty(),
        "nothing was sent to the host: {:#?}",
        confirmations(&host)
    );
    assert!(
        env.decisions()
            .iter()
            .any(|d| d["agent"] == "copilot" && d["outcome"] == "answered_in_editor"),
        "the decision says where it was answered"
    );
}

#[test]
fn a_confirmation_waiting_before_a_chat_is_paired_is_offered_once_one_is() {
    let (token, api) = bot();
    let mut env = Env::new(&api);
    env.set_up_and_poll(&token);
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("tidy up").reply_text("tidied"));
    let session = asking("Tidy", "git clean -n");
    let host = FakeAgentHost::builder(env.user.join(".config/Code"))
        .model_endpoint(&endpoint)
        .session(session.clone())
        .start()
        .unwrap();
    host.editor_turn(&session.uri(), "tidy up").unwrap();
    // Nobody to ask yet: said once as a decision, no card.
    assert!(
        wait_until(|| env
            .decisions()
            .iter()
            .any(|d| d["agent"] == "copilot" && d["outcome"] == "not_posted")),
        "the waiting confirmation is a decision"
    );
    assert!(cards(&api).is_empty());

    let code = env.pair_code();
    api.push_message(5001, 5001, &format!("/pair {code}"));
    let shown = card(&api, 0);
    assert!(shown["text"].as_str().unwrap().contains("git clean -n"));
    api.push_callback(5001, 5001, 1, &button(&shown, "Allow"));
    assert!(
        wait_until(|| confirmations(&host).len() == 1),
        "the tap reached the host"
    );
    assert!(
        env.decisions().iter().any(|d| d["agent"] == "copilot"
            && d["outcome"] == "posted"
            && d["details"]["after_pairing"] == true),
        "{:#?}",
        env.decisions()
    );
}
