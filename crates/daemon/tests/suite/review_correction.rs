//! `review_correction` through a real daemon into a live panel of the real Claude Code (the
//! scripted model endpoint plays its model): a correction is delivered once and not twice
//! (the same one refused by `same_correction`, another by `cooldown`), refused while a person
//! writes after the reviewed part (`human_after_review`) and while a turn runs
//! (`session_busy`); the envelope's `from:` line names the reviewer; each answer is a decision
//! line without the correction's text.

use cross_agent_protocol::bridge::{Agent, DeliveryState, Transport};
use cross_agent_protocol::panel::PanelSessionState;
use cross_agent_protocol::review::{
    CorrectionRequester, GuardRule, ReviewCorrectionParams, ReviewCorrectionResponse,
    ReviewVerdict, ReviewedSession, ReviewedUpTo, ReviewerIdentity,
};
use cross_agent_testkit::endpoint::{Reply, Rule};
use cross_agent_testkit::panel::claude_user;
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::bridge_support::Bridge;
use super::panels_real::{Panel, TURN, prompts_with, registration_where};

const FIRST: &str = "CORRECTION-RC1: go back to the csv importer the person asked for.";
const SECOND: &str = "CORRECTION-RC2: stop editing Cargo.lock.";
const THIRD: &str = "CORRECTION-RC3: finish the parser tests first.";

fn params(bridge: &Bridge, session: &str, offset: u64, text: &str) -> ReviewCorrectionParams {
    ReviewCorrectionParams {
        session: ReviewedSession {
            agent: Agent::Claude,
            session_id: session.to_owned(),
        },
        review_id: "rev_test_1".into(),
        verdict: ReviewVerdict::Drifting,
        correction: text.to_owned(),
        reviewer: ReviewerIdentity {
            provider: "openai".into(),
            model: "gpt-5".into(),
            family: "openai".into(),
        },
        reviewed_up_to: ReviewedUpTo {
            offset,
            timestamp: None,
            record_id: None,
        },
        requested_by: CorrectionRequester::Cli,
        // A CLI run from a terminal of this HOME: its stores, not a session of its own.
        caller: bridge.codex_caller("019a0000-0000-7000-8000-0000000000c1"),
    }
}

async fn ask(bridge: &Bridge, params: ReviewCorrectionParams) -> ReviewCorrectionResponse {
    bridge.conn.client.call(params).await.unwrap()
}

fn refused_by(response: &ReviewCorrectionResponse) -> GuardRule {
    match response {
        ReviewCorrectionResponse::Refused { rule, .. } => *rule,
        ReviewCorrectionResponse::Sent { delivery_id } => {
            panic!("expected a refusal, the correction went out as {delivery_id}")
        }
    }
}

fn decisions(bridge: &Bridge) -> Vec<Value> {
    let text = std::fs::read_to_string(bridge.state.root().join("decisions.jsonl")).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|d| {
            d["kind"]
                .as_str()
                .is_some_and(|k| k.starts_with("review_correction"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correction_goes_into_a_live_panel_once_and_the_guard_refuses_the_rest() {
    let bridge = Bridge::start().await;
    let mut panel = Panel::open_with(&bridge, &[]);
    let session = panel.converse(&bridge, "hello review rc1");
    let transcript = bridge.claude_transcript(&session);
    // The review read the whole transcript as it is now.
    let reviewed = std::fs::metadata(&transcript).unwrap().len();

    bridge.endpoint.push(
        Rule::on_user_text("CORRECTION-RC1")
            .reply(Reply::echo_token("back on the importer rc1"))
            .once(),
    );
    let sent = ask(&bridge, params(&bridge, &session, reviewed, FIRST)).await;
    let ReviewCorrectionResponse::Sent { delivery_id } = sent else {
        panic!("expected the correction to go out: {sent:?}");
    };
    let record = bridge.wait_finished(&delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert_eq!(record.transport, Transport::Panel);
    assert_eq!(record.target_session_id.as_deref(), Some(session.as_str()));
    // Sent by nobody's session: no session of the requester's, and the answer stays on the
    // record.
    assert_eq!(record.from_session, None);
    assert!(record.is_return_status_only);
    // The model saw the envelope naming the reviewer, not the human.
    let prompts = prompts_with(&bridge, "CORRECTION-RC1");
    assert_eq!(prompts.len(), 1, "{prompts:#?}");
    assert!(
        prompts[0].contains(
            "from: cross-agent's reviewer (openai gpt-5, model family openai; an automated \
             review, not the human user)"
        ),
        "{}",
        prompts[0]
    );
    assert!(prompts[0].contains("reply-to: nobody"), "{}", prompts[0]);
    // The person watching the panel saw it (the bridged turn's result is on its stdout).
    let result = panel
        .driver
        .next_line(TURN, |l| l["type"] == "result")
        .unwrap();
    assert!(
        result.to_string().contains("back on the importer rc1"),
        "{result}"
    );

    // Not twice: the same correction (re-spaced) is refused by its hash…
    let again = ask(
        &bridge,
        params(&bridge, &session, reviewed, &FIRST.replace(' ', "  ")),
    )
    .await;
    assert_eq!(refused_by(&again), GuardRule::SameCorrection, "{again:?}");
    // …and another one within the cool-down by the cool-down.
    let other = ask(&bridge, params(&bridge, &session, reviewed, SECOND)).await;
    assert_eq!(refused_by(&other), GuardRule::Cooldown, "{other:?}");

    // A person writes after the reviewed part: refused, whatever else.
    panel.converse(&bridge, "human again rc1");
    let after = ask(&bridge, params(&bridge, &session, reviewed, THIRD)).await;
    assert_eq!(refused_by(&after), GuardRule::HumanAfterReview, "{after:?}");

    // A turn runs: refused as busy (reviewed up to now, so only the turn stands in the way
    // besides the cool-down, which comes later in the order).
    let release = bridge.agents.path().join("release-human-rc1");
    bridge.endpoint.push(
        Rule::on_user_text("slow human rc1")
            .reply(Reply::text("human answer rc1").after_file(&release))
            .once(),
    );
    panel.driver.send(&claude_user("slow human rc1")).unwrap();
    let shim = panel.shim;
    registration_where(&bridge, |r| {
        r.pid == shim && r.sessions[0].state == PanelSessionState::Working
    });
    let now = std::fs::metadata(&transcript).unwrap().len();
    let busy = ask(&bridge, params(&bridge, &session, now, THIRD)).await;
    assert_eq!(refused_by(&busy), GuardRule::SessionBusy, "{busy:?}");
    std::fs::write(&release, "").unwrap();
    panel
        .driver
        .next_line(TURN, |l| l["type"] == "result")
        .unwrap();

    // Nothing but the first correction reached the model.
    for needle in ["CORRECTION-RC2", "CORRECTION-RC3"] {
        assert_eq!(prompts_with(&bridge, needle), Vec::<String>::new());
    }
    assert_eq!(prompts_with(&bridge, "CORRECTION-RC1").len(), 1);

    // One decision line per answer, naming the delivery or the rule, never the text.
    let lines = decisions(&bridge);
    let summary: Vec<(String, String)> = lines
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap_or("").to_owned(),
                d["details"]["rule"]
                    .as_str()
                    .or(d["delivery"].as_str())
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("review_correction_sent".to_owned(), delivery_id.clone()),
            (
                "review_correction_refused".to_owned(),
                "same_correction".to_owned()
            ),
            (
                "review_correction_refused".to_owned(),
                "cooldown".to_owned()
            ),
            (
                "review_correction_refused".to_owned(),
                "human_after_review".to_owned()
            ),
            (
                "review_correction_refused".to_owned(),
                "session_busy".to_owned()
            ),
        ]
    );
    let raw = std::fs::read_to_string(bridge.state.root().join("decisions.jsonl")).unwrap();
    for needle in ["CORRECTION-RC", "csv importer", "Cargo.lock"] {
        assert!(
            !raw.contains(needle),
            "{needle} leaked into decisions.jsonl"
        );
    }
}
