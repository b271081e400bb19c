//! Copilot's tool confirmations answered from the phone, through the real daemon and its
//! Agent Host watcher: a `FakeAgentHost` (VS Code's Agent Host, from the protocol's docs) runs
//! a turn the editor's user started, which asks to run a tool; the bot posts a card with the
//! tool's own words, and a tap dispatches `chat/toolCallConfirmed` to the host, whose turn then
//! goes on to the model. A deny, and an answer given in the editor first (its card closed, a
//! late tap told it was answered), too. And a prompt from the phone to a Copilot session's
//! card, delivered as `send_to_copilot` is (a turn in its Agent Host, the answer back to the
//! phone), or refused in the chat when the host is gone. Fake Bot API, temporary homes, no
//! network.

use std::time::Duration;

use cross_agent_testkit::agent_host::{FakeAgentHost, FakeSession, TurnScript};
use cross_agent_testkit::endpoint::Reply;
use cross_agent_testkit::synthetic_stores::{CopilotEditor, now_millis};
use cross_agent_testkit::telegram::FakeBotApi;
use cross_agent_testkit::{ModelEndpoint, Rule};
use serde_json::{Value, json};

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

/// The card's buttons, row by row, as (text, callback data).
fn buttons(card: &Value) -> Vec<(String, String)> {
    card["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .map(|b| {
            (
                b["text"].as_str().unwrap().to_owned(),
                b["callback_data"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn button(card: &Value, label: &str) -> String {
    buttons(card)
        .into_iter()
        .find(|(text, _)| text.contains(label))
        .unwrap_or_else(|| panic!("no button {label:?} on {card:#}"))
        .1
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

/// The host's own confirmation options are the card's buttons (at most four, one that denies
/// kept, labels made safe), and the tap answers with the option chosen, as VS Code's client
/// does: `selectedOptionId` and `approved` by the option's kind.
#[test]
fn the_hosts_own_options_are_the_buttons_and_the_tap_names_the_option() {
    let (token, api) = bot();
    let env = paired(&api, &token, "30");
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("build it").reply_text("built"));
    let session = asking("Build", "cargo build").confirmation_options(json!([
        {"id": "allow-once", "label": "Allow once", "kind": "approve", "group": 0},
        {"id": "allow-session", "label": "Always allow\nin this <b>session</b>", "kind": "approve", "group": 0},
        {"id": "allow-workspace", "label": "Always allow in this workspace", "kind": "approve", "group": 0},
        {"id": "allow-forever", "label": "Always allow everywhere", "kind": "approve", "group": 0},
        {"id": "later", "label": "Ask me on Tuesday", "kind": "postpone", "group": 1},
        {"id": "deny", "label": "Skip", "kind": "deny", "group": 1},
    ]));
    let host = FakeAgentHost::builder(env.user.join(".config/Code"))
        .model_endpoint(&endpoint)
        .session(session.clone())
        .start()
        .unwrap();
    host.editor_turn(&session.uri(), "build it").unwrap();
    let shown = card(&api, 0);
    let offered = buttons(&shown);
    let texts: Vec<&str> = offered.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        texts,
        [
            "✅ Allow once",
            "✅ Always allow in this <b>session</b>",
            "✅ Always allow in this workspace",
            "❌ Skip"
        ],
        "{shown:#}"
    );
    assert!(offered.iter().all(|(_, data)| data.len() <= 64));

    api.push_callback(5001, 5001, 1, &button(&shown, "in this <b>session"));
    assert!(
        wait_until(|| confirmations(&host).len() == 1),
        "the tap reached the host"
    );
    let confirmed = &confirmations(&host)[0]["action"];
    assert_eq!(confirmed["approved"], true, "{confirmed:#}");
    assert_eq!(confirmed["selectedOptionId"], "allow-session");
    assert_eq!(confirmed["confirmed"], "user-action");
    assert!(
        wait_until(|| model_asked(&endpoint, "build it")),
        "the approved turn went on to the model"
    );
    assert!(
        sent_text(
            &api,
            "editMessageText",
            WAIT,
            "Allowed (“Always allow in this"
        )
        .is_some()
    );
    // The decision line is written beside the card's edit, not before it: waited for.
    assert!(
        wait_until(|| env.decisions().iter().any(|d| d["agent"] == "copilot"
            && d["outcome"] == "allowed"
            && d["details"]["choice"] == "allow-session")),
        "{:#?}",
        env.decisions()
    );
}

/// A host that offers no options: Allow / Deny, and the answer names none.
#[test]
fn a_confirmation_without_options_is_allow_or_deny() {
    let (token, api) = bot();
    let env = paired(&api, &token, "30");
    let endpoint = ModelEndpoint::start().unwrap();
    let session = asking("Plain", "make clean").confirmation_options(Value::Null);
    let host = FakeAgentHost::builder(env.user.join(".config/Code"))
        .model_endpoint(&endpoint)
        .session(session.clone())
        .start()
        .unwrap();
    host.editor_turn(&session.uri(), "clean").unwrap();
    let shown = card(&api, 0);
    let offered = buttons(&shown);
    assert_eq!(offered.len(), 2, "{shown:#}");
    assert!(offered[0].0.contains("Allow") && offered[0].1.starts_with("a:"));
    assert!(offered[1].0.contains("Deny") && offered[1].1.starts_with("d:"));
    api.push_callback(5001, 5001, 1, &offered[1].1);
    assert!(wait_until(|| confirmations(&host).len() == 1));
    let denied = &confirmations(&host)[0]["action"];
    assert_eq!(denied["approved"], false, "{denied:#}");
    assert_eq!(denied.get("selectedOptionId"), None, "{denied:#}");
    drop(env);
}

/// A Copilot session in VS Code's catalog under `env`'s HOME (the default Linux place), with
/// its working directory and default chat, as the editor writes them.
fn in_catalog(env: &Env, title: &str) -> (CopilotEditor, FakeSession) {
    let editor = CopilotEditor::new(&env.user.join(".config/Code"));
    let id = uuid::Uuid::new_v4().to_string();
    let now = now_millis();
    editor
        .register(&format!("copilotcli:/{id}"), now - 60_000, now)
        .unwrap();
    let project = env.user.join("project");
    std::fs::create_dir_all(&project).unwrap();
    editor
        .session(&id)
        .unwrap()
        .title(title)
        .unwrap()
        .default_chat(&uuid::Uuid::new_v4().to_string(), "gpt-5")
        .unwrap()
        .working_directory(&project.to_string_lossy())
        .unwrap();
    let session = FakeSession::new(title)
        .id(&id)
        .cwd(project.to_string_lossy())
        .script(TurnScript::Answer);
    (editor, session)
}

/// The person sends `/sessions` and gets the card of the session `id`: its message id.
fn card_of(api: &FakeBotApi, id: &str) -> (i64, String) {
    let before = api.sent().len();
    api.push_message(5001, 5001, "/sessions");
    let mut found = None;
    wait_until(|| {
        found = api
            .sent()
            .into_iter()
            .skip(before)
            .find(|(_, b)| b["text"].as_str().is_some_and(|t| t.contains(id)));
        found.is_some()
    });
    let (message_id, body) = found.unwrap_or_else(|| {
        panic!(
            "the Copilot session {id} has a card; the chat: {:#?}",
            api.sent()
        )
    });
    (message_id, body["text"].as_str().unwrap().to_owned())
}

/// The person replies to the bot's message `message_id` with `text`.
fn reply(api: &FakeBotApi, message_id: i64, text: &str) {
    api.push_message_with(
        5001,
        5001,
        false,
        json!({"text": text, "reply_to_message": {"message_id": message_id,
            "date": 1_760_000_000, "chat": {"id": 5001, "type": "private"}}}),
    );
}

/// The `chat/turnStarted` actions the host was sent.
fn turns_started(host: &FakeAgentHost) -> Vec<Value> {
    host.dispatched()
        .into_iter()
        .filter(|p| p["action"]["type"] == "chat/turnStarted")
        .collect()
}

/// Issue 25 §5: a prompt from the phone to a Copilot session goes through the same delivery
/// as `send_to_copilot` — its card is replied to, the session's Agent Host gets the turn (the
/// bridge envelope and its request token), the receipt names that route, and the answer comes
/// back to the phone.
#[test]
fn a_reply_to_a_copilot_card_is_a_turn_in_its_agent_host_and_the_answer_comes_back() {
    let (token, api) = bot();
    let env = paired(&api, &token, "30");
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_user_text("phone prompt for copilot")
            .reply(Reply::echo_token("copilot heard the phone"))
            .once(),
    );
    let (_editor, session) = in_catalog(&env, "Copilot from the phone");
    let id = session.uri().split_once(":/").unwrap().1.to_owned();
    let host = FakeAgentHost::builder(env.user.join(".config/Code"))
        .model_endpoint(&endpoint)
        .session(session.clone())
        .start()
        .unwrap();

    let (card, text) = card_of(&api, &id);
    assert!(text.starts_with("<b>copilot · "), "{text}");
    let before = api.sent().len();
    reply(&api, card, "phone prompt for copilot");

    assert!(
        wait_until(|| !turns_started(&host).is_empty()),
        "the host was sent a turn; the chat: {:#?}",
        api.sent()
    );
    let started = turns_started(&host);
    assert_eq!(started.len(), 1, "{started:#?}");
    assert_eq!(started[0]["channel"], session.chat_uri());
    let turn = started[0].to_string();
    assert!(turn.contains("phone prompt for copilot"), "{turn}");
    assert!(turn.contains("request: req_"), "{turn}");

    let receipt = sent_text(&api, "sendMessage", WAIT, "📨 Sent to").expect("a receipt");
    let receipt = receipt.body["text"].as_str().unwrap().to_owned();
    assert!(receipt.contains("Agent Host"), "{receipt}");
    assert!(!receipt.contains("headless"), "{receipt}");
    let answer = sent_text(&api, "sendMessage", WAIT, "copilot heard the phone")
        .expect("the answer reached the phone");
    assert!(
        !answer.body["text"].as_str().unwrap().contains("req_"),
        "the request token is not shown: {:#}",
        answer.body
    );
    assert!(api.sent().len() > before);
    assert!(
        env.decisions()
            .iter()
            .any(|d| d["kind"] == "telegram_prompt"
                && d["outcome"] == "sent"
                && d["agent"] == "copilot"
                && d["session"] == id.as_str()
                && d["details"]["transport"] == "agent_host"),
        "{:#?}",
        env.decisions()
    );
}

/// The same reply to a Copilot session whose editor's Agent Host is gone: the refusal's own
/// words on the phone, and no turn anywhere.
#[test]
fn a_reply_to_a_copilot_card_whose_host_is_gone_is_refused_on_the_phone() {
    let (token, api) = bot();
    let env = paired(&api, &token, "30");
    let endpoint = ModelEndpoint::start().unwrap();
    let (_editor, session) = in_catalog(&env, "Copilot closed");
    let id = session.uri().split_once(":/").unwrap().1.to_owned();
    let host = FakeAgentHost::builder(env.user.join(".config/Code"))
        .model_endpoint(&endpoint)
        .session(session.clone())
        .start()
        .unwrap();
    let (card, _) = card_of(&api, &id);
    drop(host);

    reply(&api, card, "a prompt for a closed editor");
    let refused = sent_text(&api, "sendMessage", WAIT, "❌ Not sent to").expect("a refusal");
    let refused = refused.body["text"].as_str().unwrap().to_owned();
    assert!(refused.contains("host not running"), "{refused}");
    assert!(refused.contains("VS Code"), "{refused}");
    assert!(
        endpoint.requests().is_empty(),
        "nothing reached the model: {:#?}",
        endpoint.requests()
    );
    assert!(
        wait_until(|| env
            .decisions()
            .iter()
            .any(|d| d["kind"] == "telegram_prompt"
                && d["outcome"] == "refused"
                && d["session"] == id.as_str())),
        "{:#?}",
        env.decisions()
    );
}
