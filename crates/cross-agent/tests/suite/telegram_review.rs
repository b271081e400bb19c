//! The Review button end to end: the built binary's daemon polls the fake Bot API, the person
//! lists the sessions and taps Review on a card; the daemon runs `cross-agent review` off the
//! poller's loop — the scripted model endpoint playing the reviewer over Chat Completions — and
//! answers with a verdict card whose Send correction goes to the escalation guard. A tap from
//! someone not paired runs nothing; with no reviewer configured the card says so.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cross_agent_testkit::ModelEndpoint;
use cross_agent_testkit::endpoint::Rule;
use cross_agent_testkit::telegram::FakeBotApi;
use serde_json::{Value, json};

use super::review_robot::{Place, decisions, stop};
use super::telegram::{WAIT, bot, spawn_fed, wait_within};

const PERSON: i64 = 5001;
const STRANGER: i64 = 666;
const TASK: &str = "Fix the <build> of the importer";
const CORRECTION: &str = "Run the importer's tests before anything else.";

struct Phone {
    place: Place,
    api: FakeBotApi,
    env: Vec<(String, String)>,
    daemon: Option<Child>,
}

impl Phone {
    /// A paired person and a daemon whose reviews run with `env` (the provider pool).
    fn start(env: Vec<(String, String)>) -> Phone {
        let (token, api) = bot();
        let mut phone = Phone {
            place: Place::with_config(""),
            api,
            env,
            daemon: None,
        };
        let mut setup = phone.command(&["telegram", "setup", "--json"]);
        setup.stdout(Stdio::piped()).stderr(Stdio::piped());
        let setup = spawn_fed(&mut setup, &format!("{token}\n"));
        assert!(setup.wait_with_output().unwrap().status.success());
        phone.daemon = Some(
            phone
                .command(&["daemon", "run"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let out = phone
            .command(&["telegram", "pair", "--json"])
            .output()
            .unwrap();
        let code: Value = serde_json::from_slice(&out.stdout).unwrap();
        let pair = format!("/pair {}", code["code"].as_str().unwrap());
        phone.api.push_message(PERSON, PERSON, &pair);
        assert!(wait_within(WAIT, || !phone
            .lines("telegram_pair")
            .is_empty()));
        phone
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.place.command(args);
        command
            .env("CROSS_AGENT_TELEGRAM_API", self.api.base_url())
            .env("CROSS_AGENT_TELEGRAM_POLL_TIMEOUT", "1");
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
    }

    fn lines(&self, kind: &str) -> Vec<Value> {
        decisions(&self.place.state)
            .into_iter()
            .filter(|d| d["kind"] == kind)
            .collect()
    }

    /// The first message of the bot whose text holds `needle`.
    fn sent(&self, needle: &str) -> Option<(i64, Value)> {
        self.api
            .sent()
            .into_iter()
            .find(|(_, body)| body["text"].as_str().is_some_and(|t| t.contains(needle)))
    }

    fn wait_sent(&self, needle: &str) -> (i64, Value) {
        let mut found = None;
        let seen = wait_within(WAIT, || {
            found = self.sent(needle);
            found.is_some()
        });
        assert!(seen, "no message with {needle:?}: {:#?}", self.api.sent());
        found.unwrap()
    }

    fn tap(&self, user: i64, message_id: i64, data: &str) {
        let on = json!({"message_id": message_id, "date": 1_760_000_000,
                        "chat": {"id": PERSON, "type": "private"}});
        self.api.push_callback_on(user, on, data);
    }

    /// `/sessions`, then the Review button of the first session's card.
    fn review_button(&self) -> (i64, String) {
        self.api.push_message(PERSON, PERSON, "/sessions");
        let (message_id, body) = self.wait_sent(&self.place.ids[0]);
        let button = &body["reply_markup"]["inline_keyboard"][0][4];
        assert_eq!(button["text"], "🔍 Review", "{body:#}");
        (
            message_id,
            button["callback_data"].as_str().unwrap().to_owned(),
        )
    }
}

impl Drop for Phone {
    fn drop(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            stop(&self.place, daemon);
        }
    }
}

#[test]
fn review_from_the_phone_gives_a_verdict_card_and_send_correction_asks_the_guard() {
    let endpoint = ModelEndpoint::start().unwrap();
    let answer = json!({"verdict": "drifting", "task": TASK, "gaps": ["tests <not> run"],
                        "correction": CORRECTION});
    endpoint.push(
        Rule::on_any()
            .reply_text(answer.to_string())
            .include_side_requests(),
    );
    let providers = format!(
        "chat {} TEST_KEY gpt-reviewer openai",
        endpoint.openai_base_url()
    );
    let phone = Phone::start(vec![
        ("CROSS_AGENT_PROVIDERS".into(), providers),
        ("TEST_KEY".into(), "test-key".into()),
    ]);
    let (card_id, review) = phone.review_button();

    // A stranger's tap on the card (forwarded, say) runs nothing.
    phone.tap(STRANGER, card_id, &review);
    assert!(wait_within(WAIT, || !phone
        .lines("telegram_refused")
        .is_empty()));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(phone.lines("telegram_review").is_empty());
    assert!(
        endpoint.model_requests().is_empty(),
        "no reviewer was asked"
    );

    // The person's tap: the verdict card, escaped, with Send correction.
    phone.tap(PERSON, card_id, &review);
    let (verdict_id, card) = phone.wait_sent("<b>drifting</b>");
    let text = card["text"].as_str().unwrap();
    assert!(
        text.contains("Task: Fix the &lt;build&gt; of the importer"),
        "{text}"
    );
    assert!(text.contains("• tests &lt;not&gt; run"), "{text}");
    assert!(text.contains(CORRECTION), "{text}");
    assert!(text.contains("gpt-reviewer (openai)"), "{text}");
    let send = &card["reply_markup"]["inline_keyboard"][0][0];
    assert_eq!(send["text"], "📨 Send correction", "{card:#}");
    let send = send["callback_data"].as_str().unwrap().to_owned();
    let reviewed = phone.lines("telegram_review");
    assert_eq!(reviewed.len(), 1, "{reviewed:?}");
    assert_eq!(reviewed[0]["outcome"], "verdict");
    assert_eq!(reviewed[0]["session"], phone.place.ids[0].as_str());
    assert_eq!(reviewed[0]["details"]["verdict"], "drifting");
    assert!(!reviewed[0].to_string().contains(CORRECTION));

    // A stranger's Send correction asks nothing.
    let refused_before = phone.lines("telegram_refused").len();
    phone.tap(STRANGER, verdict_id, &send);
    assert!(wait_within(WAIT, || phone.lines("telegram_refused").len()
        > refused_before));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(phone.lines("telegram_correction").is_empty());

    // The person's: the escalation guard judges it.
    phone.tap(PERSON, verdict_id, &send);
    let (_, said) = phone.wait_sent("The correction was");
    let said = said["text"].as_str().unwrap();
    let asked = phone.lines("telegram_correction");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        asked[0]["details"]["review_id"],
        reviewed[0]["details"]["review_id"]
    );
    // Every rule of the guard passes (a drifting verdict, an idle session nobody wrote to
    // since, no correction before), so the correction goes to the bridge as a delivery — which
    // refuses it here: the synthetic session's folder does not exist on this machine. The chat
    // is told that rule and the bridge's words.
    assert_eq!(asked[0]["outcome"], "refused", "{said} {asked:?}");
    assert_eq!(asked[0]["guard"], "send_refused", "{said}");
    assert!(said.contains("<code>send_refused</code>"), "{said}");
    assert!(said.contains("does not exist"), "{said}");
    let refused = phone.lines("review_correction_refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["details"]["requested_by"], "telegram");
}

#[test]
fn with_no_reviewer_configured_the_card_says_so_and_offers_nothing_to_send() {
    let phone = Phone::start(Vec::new());
    let (card_id, review) = phone.review_button();
    phone.tap(PERSON, card_id, &review);
    let (_, card) = phone.wait_sent("no reviewer of another model family");
    assert!(card["reply_markup"].is_null(), "{card:#}");
    let reviewed = phone.lines("telegram_review");
    assert_eq!(reviewed.len(), 1, "{reviewed:?}");
    assert_eq!(reviewed[0]["outcome"], "no_reviewer");
}
