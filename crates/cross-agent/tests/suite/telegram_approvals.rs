//! Approvals from the phone for panel sessions, and what reaches the chat: a real Claude Code
//! panel (`cross-agent shim claude` in front of the real binary, the test playing the VS Code
//! extension) asks `can_use_tool` for a `Write`; the daemon posts the card with the diff, a tap
//! answers it through the shim, and the file is written. A second request answered in the
//! editor first closes its card, and a late tap is refused. Also: the `Stop` hook's answer and a
//! question notified, and no secret in any message or decision.

use std::process::Command;
use std::time::Duration;

use cross_agent_testkit::agents::{AgentHome, Claude};
use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::panel::{
    CLAUDE_SDK_ARGS, PanelDriver, claude_initialize, claude_permission, claude_user,
};
use cross_agent_testkit::telegram::FakeBotApi;
use cross_agent_testkit::{ModelEndpoint, Rule, ToolCall};
use serde_json::{Value, json};

use super::telegram::{WAIT, paired, token, wait_until};

const TURN: Duration = Duration::from_secs(120);

/// The approval cards posted so far (messages with buttons).
fn cards(api: &FakeBotApi) -> Vec<Value> {
    api.calls_to("sendMessage")
        .into_iter()
        .filter(|c| c.body.get("reply_markup").is_some())
        .map(|c| c.body)
        .collect()
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

#[test]
fn a_real_claude_panel_write_is_approved_from_the_phone_seeing_the_diff_and_an_editor_answer_closes_the_card()
 {
    let token = token();
    let api = FakeBotApi::start(&token, "relay_test_bot").unwrap();
    let env = paired(&api, &token, "60");
    let agents = AgentHome::new().unwrap();
    let project = agents.project("proj").unwrap();
    let endpoint = ModelEndpoint::start().unwrap();
    let claude = Claude::new(&agents, &endpoint.anthropic_base_url()).unwrap();
    let notes = project.join("notes.txt");
    std::fs::write(&notes, "alpha\nbeta\ngamma\n").unwrap();
    endpoint.push(
        Rule::on_user_text("fix the notes")
            .tool_call(ToolCall::new(
                "Write",
                json!({"file_path": notes, "content": "alpha\nBETA <b>\ngamma\n"}),
            ))
            .once(),
    );
    let second = project.join("second.txt");
    endpoint.push(
        Rule::on_user_text("write a second file")
            .tool_call(ToolCall::new(
                "Write",
                json!({"file_path": second, "content": "two\n"}),
            ))
            .once(),
    );
    endpoint.push(Rule::on_any_tool_result().reply_text("done with the file"));

    let mut command = Command::new(cross_agent_bin().unwrap());
    command
        .arg("shim")
        .arg("claude")
        .arg(claude.binary())
        .args(CLAUDE_SDK_ARGS)
        .current_dir(&project)
        .env_clear()
        .envs(claude.env())
        .env("CROSS_AGENT_HOME", &env.state);
    let mut panel = PanelDriver::start(command).unwrap();
    panel.send(&claude_initialize("init-1")).unwrap();
    panel
        .next_line(TURN, |l| l["type"] == "control_response")
        .unwrap();

    // 1. Allowed from the phone: the card shows the diff against the file as it is.
    panel.send(&claude_user("fix the notes")).unwrap();
    let asked = panel
        .next_line(TURN, |l| l["type"] == "control_request")
        .unwrap();
    assert_eq!(asked["request"]["tool_name"], "Write");
    assert!(wait_until(|| !cards(&api).is_empty()), "a card was posted");
    let card = cards(&api).remove(0);
    let shown = card["text"].as_str().unwrap();
    assert!(shown.contains("Claude panel · Write"), "{shown}");
    assert!(
        shown.contains("-beta\n+BETA &lt;b&gt;\n"),
        "the diff, escaped: {shown}"
    );
    assert!(shown.contains("<pre>"), "{shown}");
    api.push_callback(5001, 5001, 1, &button(&card, "Allow"));
    panel.next_line(TURN, |l| l["type"] == "result").unwrap();
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "alpha\nBETA <b>\ngamma\n",
        "allowed from the phone: the tool ran"
    );
    assert!(
        api.wait_for_call("editMessageText", WAIT, |b| b["text"]
            .as_str()
            .unwrap_or("")
            .contains("Allowed by user 5001"))
            .is_some(),
        "the card is closed"
    );
    assert!(wait_until(|| env.decisions().iter().any(|d| d["kind"] == "approval"
        && d["outcome"] == "allowed"
        && d["details"]["via"] == "panel"
        && d["details"]["user_id"] == 5001
        && d["details"]["waited_ms"].is_u64())));
    assert!(
        api.wait_for_call("sendMessage", WAIT, |b| b["text"]
            .as_str()
            .unwrap_or("")
            .contains("Claude panel · proj"))
            .is_some(),
        "the turn's end is notified (no Stop hook in this panel)"
    );

    // 2. Answered in the editor first: the card says so, a late tap does nothing.
    panel.send(&claude_user("write a second file")).unwrap();
    let asked = panel
        .next_line(TURN, |l| l["type"] == "control_request")
        .unwrap();
    assert!(wait_until(|| cards(&api).len() == 2), "a second card");
    let card = cards(&api).remove(1);
    assert!(card["text"].as_str().unwrap().contains("+two"));
    panel
        .send(&claude_permission(
            asked["request_id"].as_str().unwrap(),
            false,
            &asked["request"]["input"],
        ))
        .unwrap();
    assert!(
        api.wait_for_call("editMessageText", TURN, |b| b["text"]
            .as_str()
            .unwrap_or("")
            .contains("Answered in the editor"))
            .is_some(),
        "the card is closed when the editor answered"
    );
    let taps_before = api.calls_to("answerCallbackQuery").len();
    api.push_callback(5001, 5001, 1, &button(&card, "Allow"));
    assert!(wait_until(
        || api.calls_to("answerCallbackQuery").len() == taps_before + 1
    ));
    assert_eq!(
        api.calls_to("answerCallbackQuery")[taps_before].body["text"],
        "Already answered"
    );
    panel.next_line(TURN, |l| l["type"] == "result").unwrap();
    assert!(!second.exists(), "denied in the editor: not written");
    assert!(
        env.decisions()
            .iter()
            .any(|d| d["kind"] == "approval" && d["outcome"] == "answered_in_editor")
    );
    panel.close_stdin();
    let _ = panel.wait(Duration::from_secs(30));
}
