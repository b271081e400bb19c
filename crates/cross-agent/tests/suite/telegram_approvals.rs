//! Approvals from the phone for panel sessions, and what reaches the chat: a real Claude Code
//! panel (`cross-agent shim claude` in front of the real binary, the test playing the VS Code
//! extension) asks `can_use_tool` for a `Write`; the daemon posts the card with the diff, a tap
//! answers it through the shim, and the file is written. A second request answered in the
//! editor first closes its card, and a late tap is refused. Also: the `Stop` hook's answer and a
//! question notified, and no secret in any message or decision.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::panel::{
    CLAUDE_SDK_ARGS, PanelDriver, claude_initialize, claude_permission, claude_user,
};
use cross_agent_testkit::telegram::FakeBotApi;
use cross_agent_testkit::{Rule, ToolCall};
use serde_json::{Value, json};

use super::telegram::{
    BIN, ClaudeProject, Env, WAIT, bot, files_containing, paired, paired_with, sent_text, text,
    wait_until,
};

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

/// What a panel test does with telegram.rs's [`ClaudeProject`].
impl ClaudeProject {
    /// The model answers the turn whose prompt holds `prompt` once, with a `Write` of
    /// `content` to `path` (which needs an approval).
    fn writes_on(&self, prompt: &str, path: &Path, content: &str) {
        self.endpoint.push(
            Rule::on_user_text(prompt)
                .tool_call(ToolCall::new(
                    "Write",
                    json!({"file_path": path, "content": content}),
                ))
                .once(),
        );
    }

    /// The real Claude behind `cross-agent shim claude` in the project, reporting to the daemon
    /// of `state`, the test playing the extension: started and initialized.
    fn panel(&self, state: &Path) -> PanelDriver {
        let mut command = Command::new(cross_agent_bin().unwrap());
        command
            .arg("shim")
            .arg("claude")
            .arg(self.claude.binary())
            .args(CLAUDE_SDK_ARGS)
            .current_dir(&self.project)
            .env_clear()
            .envs(self.claude.env())
            .env("CROSS_AGENT_HOME", state);
        let mut panel = PanelDriver::start(command).unwrap();
        panel.send(&claude_initialize("init-1")).unwrap();
        panel
            .next_line(TURN, |l| l["type"] == "control_response")
            .unwrap();
        panel
    }
}

/// The person types `prompt` in the panel; returns the `can_use_tool` request it leads to.
fn ask_in_panel(panel: &mut PanelDriver, prompt: &str) -> Value {
    panel.send(&claude_user(prompt)).unwrap();
    panel
        .next_line(TURN, |l| l["type"] == "control_request")
        .unwrap()
}

#[test]
fn a_real_claude_panel_write_is_approved_from_the_phone_seeing_the_diff_and_an_editor_answer_closes_the_card()
 {
    let (token, api) = bot();
    let env = paired(&api, &token, "60");
    let claude = ClaudeProject::new();
    let notes = claude.project.join("notes.txt");
    std::fs::write(&notes, "alpha\nbeta\ngamma\n").unwrap();
    claude.writes_on("fix the notes", &notes, "alpha\nBETA <b>\ngamma\n");
    let second = claude.project.join("second.txt");
    claude.writes_on("write a second file", &second, "two\n");
    claude
        .endpoint
        .push(Rule::on_any_tool_result().reply_text("done with the file"));
    let mut panel = claude.panel(&env.state);

    // 1. Allowed from the phone: the card shows the diff against the file as it is.
    let asked = ask_in_panel(&mut panel, "fix the notes");
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
        sent_text(&api, "editMessageText", WAIT, "Allowed by user 5001").is_some(),
        "the card is closed"
    );
    assert!(wait_until(|| env.decisions().iter().any(|d| d["kind"]
        == "approval"
        && d["outcome"] == "allowed"
        && d["details"]["via"] == "panel"
        && d["details"]["user_id"] == 5001
        && d["details"]["waited_ms"].is_u64())));
    assert!(
        sent_text(&api, "sendMessage", WAIT, "Claude panel · proj").is_some(),
        "the turn's end is notified (no Stop hook in this panel)"
    );

    // 2. Answered in the editor first: the card says so, a late tap does nothing.
    let asked = ask_in_panel(&mut panel, "write a second file");
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
        sent_text(&api, "editMessageText", TURN, "Answered in the editor").is_some(),
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

/// Every call's body the fake received, as one text.
fn everything_sent(api: &FakeBotApi) -> String {
    api.calls()
        .into_iter()
        .map(|c| c.body.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn hooks_notify_turn_ends_questions_and_waits_keep_the_rest_as_state_and_no_secret_reaches_the_chat()
 {
    const CHILD_SECRET: &str = "sk-child-5e5e5e5e5e";
    let (token, api) = bot();
    let env = paired_with(
        &api,
        &token,
        "5",
        &[
            ("CROSS_AGENT_CHILD_ENV", "ACC_KEY"),
            ("ACC_KEY", CHILD_SECRET),
        ],
    );

    // A real Claude Code turn with every hook pointed at `cross-agent hook`.
    let ClaudeProject {
        project,
        endpoint,
        claude,
        ..
    } = &ClaudeProject::reporting_to(&env.state);
    let hook = |event: &str| json!([{"hooks": [{"type": "command", "command": format!("'{BIN}' hook {event}"), "timeout": 30}]}]);
    let settings = json!({"hooks": {
        "SessionStart": hook("SessionStart"), "UserPromptSubmit": hook("UserPromptSubmit"),
        "PostToolUse": hook("PostToolUse"), "Notification": hook("Notification"),
        "Stop": hook("Stop")}})
    .to_string();
    endpoint.push(
        Rule::on_user_text("say the key")
            .reply_text(format!("The key is {CHILD_SECRET}; all done.")),
    );
    let run = claude
        .turn(project, "say the key")
        .arg("--settings")
        .arg(&settings)
        .timeout(TURN)
        .run()
        .unwrap();
    let session = run.session_id().unwrap().to_owned();
    let finished =
        sent_text(&api, "sendMessage", WAIT, "finished").expect("the turn's end reached the phone");
    let shown = finished.body["text"].as_str().unwrap();
    assert!(
        shown.contains("✅ Claude · proj (") && shown.contains("The key is [secret]; all done."),
        "{shown}"
    );
    let sessions: Value = serde_json::from_slice(
        &std::fs::read(env.state.join("telegram/hook_sessions.json")).unwrap(),
    )
    .unwrap();
    let ours = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == session.as_str())
        .expect("the session is tracked");
    assert_eq!(ours["state"], "idle", "{ours}");
    assert_eq!(ours["last_prompt_head"], "say the key");
    assert_eq!(ours["last_answer_head"], "The key is [secret]; all done.");

    // A question, a wait notified once however often it repeats, a long answer as a file.
    let payload = |event: &str, extra: Value| {
        let mut base = json!({"session_id": "77777777-0000-4000-8000-000000000001",
            "transcript_path": "/tmp/t.jsonl", "cwd": "/work/app", "hook_event_name": event});
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        base.to_string()
    };
    let out = env.run_with_stdin(
        &["hook", "PreToolUse"],
        &payload(
            "PreToolUse",
            json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": [{
                "question": "Which database?", "header": "DB", "multiSelect": false,
                "options": [{"label": "sqlite", "description": "local file"},
                            {"label": "postgres", "description": "a server"}]}]}}),
        ),
    );
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        "",
        "the question is the editor's to answer"
    );
    let question = sent_text(&api, "sendMessage", WAIT, "Which database?")
        .expect("the question reached the phone");
    assert!(
        question.body["text"]
            .as_str()
            .unwrap()
            .contains("• sqlite — local file\n• postgres — a server")
    );
    for _ in 0..3 {
        let out = env.run_with_stdin(
            &["hook", "Notification"],
            &payload(
                "Notification",
                json!({"message": "Claude needs your permission to use Bash"}),
            ),
        );
        assert!(out.status.success());
    }
    let long: String = (0..20_000)
        .map(|i| if i % 80 == 79 { '\n' } else { 'z' })
        .collect();
    let out = env.run_with_stdin(
        &["hook", "Stop"],
        &payload(
            "Stop",
            json!({"stop_hook_active": false, "last_assistant_message": long}),
        ),
    );
    assert!(out.status.success());
    let document = api
        .wait_for_call("sendDocument", WAIT, |_| true)
        .expect("a long answer goes as a file");
    assert_eq!(document.body["document"]["file_name"], "answer.md");
    assert_eq!(document.body["document"]["content"], long.trim());
    assert!(
        document.body["caption"]
            .as_str()
            .unwrap()
            .contains("app (77777777) finished")
    );
    let waits = api
        .calls_to("sendMessage")
        .iter()
        .filter(|c| {
            c.body["text"]
                .as_str()
                .unwrap_or("")
                .contains("needs your permission")
        })
        .count();
    assert_eq!(waits, 1, "a repeated wait is notified once");

    // Every notification is a decision; no secret anywhere.
    let decisions = env.decisions();
    for what in ["turn_ended", "question", "notification"] {
        assert!(
            decisions.iter().any(|d| d["kind"] == "telegram_delivery"
                && d["outcome"] == "sent"
                && d["details"]["what"] == what),
            "{what}: {decisions:#?}"
        );
    }
    let sent = everything_sent(&api);
    assert!(!sent.contains(CHILD_SECRET) && !sent.contains(&token));
    assert_eq!(
        files_containing(&env.state, CHILD_SECRET),
        Vec::<std::path::PathBuf>::new()
    );
    assert_eq!(
        files_containing(&env.state, &token),
        Vec::<std::path::PathBuf>::new()
    );
}

#[test]
fn a_long_write_escalated_by_the_gate_sends_its_whole_diff_as_a_file_before_the_card() {
    let (token, api) = bot();
    let env = paired(&api, &token, "2");
    let project = env.user.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let content: String = (0..3000)
        .map(|i| format!("SETTING_{i}=value {i}\n"))
        .collect();
    let payload = json!({"session_id": "3856bb3e-0000-4000-8000-000000000002",
        "transcript_path": "/tmp/t.jsonl", "cwd": project, "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": {"file_path": project.join(".env"), "content": content},
        "tool_use_id": "toolu_2"})
    .to_string();
    let out = env.run_with_stdin(&["hook", "PreToolUse"], &payload);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "ask");
    let file = api
        .wait_for_call("sendDocument", WAIT, |_| true)
        .expect("the whole diff went as a file");
    assert_eq!(file.body["document"]["file_name"], "approval.diff");
    let diff = file.body["document"]["content"].as_str().unwrap();
    assert!(diff.starts_with("--- /dev/null\n+++ "), "{}", &diff[..200]);
    assert_eq!(
        diff.lines().filter(|l| l.starts_with("+SETTING_")).count(),
        3000,
        "every line of it"
    );
    let card = cards(&api).remove(0);
    let shown = card["text"].as_str().unwrap();
    assert!(
        shown.contains("approval.diff") && shown.contains("3003 lines"),
        "{shown}"
    );
    assert!(shown.contains("danger:"), "{shown}");
    // The file came before the card.
    let order: Vec<String> = api
        .calls()
        .into_iter()
        .filter(|c| {
            c.method == "sendDocument"
                || (c.method == "sendMessage" && c.body.get("reply_markup").is_some())
        })
        .map(|c| c.method)
        .collect();
    assert_eq!(order, vec!["sendDocument", "sendMessage"]);
}

/// Sends `message` to a new Codex session whose CLI is the shell script `script` (written into
/// the user's folder as `name`); returns the delivery id from the receipt.
fn send_to_scripted_codex(env: &Env, name: &str, script: &str, message: &str) -> String {
    use std::os::unix::fs::PermissionsExt;

    let codex = env.user.join(name);
    std::fs::write(&codex, script).unwrap();
    std::fs::set_permissions(&codex, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sent = env
        .command(&["send", "codex", "--new", "--json", message])
        .env("CROSS_AGENT_CODEX_BIN", &codex)
        .current_dir(&env.user)
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    let receipt: Value = serde_json::from_slice(&sent.stdout).unwrap();
    receipt["delivery_id"].as_str().unwrap().to_owned()
}

/// Delivery `delivery`'s `delivery_outcome` line.
fn outcome_of(env: &Env, delivery: &str) -> Value {
    env.decisions()
        .into_iter()
        .find(|d| d["kind"] == "delivery_outcome" && d["delivery"] == delivery)
        .expect("the delivery's outcome is on the record")
}

/// A Codex that fails at once: the hub records the delivery failed with its stderr.
const CODEX_THAT_FAILS: &str = "#!/bin/sh\necho 'no model here' >&2\nexit 1\n";

/// A delivery that ends failed is notified once, from the hub's typed event, with its target
/// and the reason its `delivery_outcome` line gives; a `delivery_outcome` line written into
/// `decisions.jsonl` by hand notifies nothing (the log is the people's record, not a bus).
#[test]
fn a_failed_delivery_is_notified_with_its_target_and_reason() {
    use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
    let (token, api) = bot();
    let env = paired(&api, &token, "5");
    DecisionLog::new(&env.state).record(
        Decision::new(DecisionKind::DELIVERY_OUTCOME, Outcome::new("failed"))
            .agent("claude")
            .delivery("dlv_handwritten0")
            .reason("written by hand"),
    );
    let delivery = send_to_scripted_codex(&env, "codex-that-fails", CODEX_THAT_FAILS, "hello");

    let notice =
        sent_text(&api, "sendMessage", TURN, "Delivery").expect("the failure reached the phone");
    let outcome = outcome_of(&env, &delivery);
    assert_eq!(outcome["outcome"], "failed");
    let reason = outcome["reason"].as_str().unwrap();
    assert!(reason.contains("exit code 1"), "{reason}");
    let short: String = delivery.chars().take(12).collect();
    assert_eq!(
        notice.body["text"],
        format!("⚠️ Delivery {short} to codex failed: {reason}")
    );
    // The hand-written line went into the log first: a bot reading the log would have queued
    // its notice to the same chat before this one.
    let notices: Vec<String> = api
        .calls_to("sendMessage")
        .iter()
        .filter_map(|c| c.body["text"].as_str().map(str::to_owned))
        .filter(|t| t.contains("Delivery"))
        .collect();
    assert_eq!(notices.len(), 1, "only the real failure: {notices:?}");
    assert!(wait_until(|| {
        env.decisions().iter().any(|d| {
            d["kind"] == "telegram_delivery"
                && d["details"]["what"] == "delivery_failed"
                && d["outcome"] == "sent"
        })
    }));
}

/// A delivery that fails in a daemon replaced by `cross-agent reload` — it still carries the
/// turn while its successor polls the bot — reaches the phone too: the replaced daemon forwards
/// the failure to its successor (`forward_event`), whose bot posts it, once.
#[test]
fn a_delivery_failing_in_a_replaced_daemon_is_notified_by_its_successor() {
    let (token, api) = bot();
    let env = paired(&api, &token, "5");
    // A Codex that starts, waits until the reload is done, and fails.
    let started = env.user.join("codex-started");
    let release = env.user.join("codex-may-fail");
    let script = format!(
        "#!/bin/sh\ntouch '{}'\nwhile [ ! -e '{}' ]; do sleep 0.05; done\n\
             echo 'no model after the reload' >&2\nexit 1\n",
        started.display(),
        release.display()
    );
    let delivery = send_to_scripted_codex(
        &env,
        "codex-that-fails-later",
        &script,
        "hello across a reload",
    );
    assert!(wait_until(|| started.exists()), "the peer's turn started");

    let reloaded = env.run(&["reload"]);
    assert!(reloaded.status.success(), "{}", text(&reloaded.stderr));
    // The old daemon drains the turn; the successor is the one serving now.
    let status = env.run(&["status", "--json"]);
    assert!(status.status.success(), "{}", text(&status.stderr));
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    let serving = &status["server_process"];
    let draining = serving["draining"]
        .as_array()
        .expect("the draining daemons");
    assert_eq!(draining.len(), 1, "{status:#}");
    assert_ne!(
        draining[0]["generation"], serving["generation"],
        "{status:#}"
    );
    std::fs::write(&release, b"fail now").unwrap();

    let short: String = delivery.chars().take(12).collect();
    let notice = sent_text(&api, "sendMessage", TURN, &format!("Delivery {short}"))
        .expect("the replaced daemon's failure reached the phone");
    let text_sent = notice.body["text"].as_str().unwrap();
    assert!(
        text_sent.starts_with(&format!("⚠️ Delivery {short} to codex failed:"))
            && text_sent.contains("exit code 1"),
        "{text_sent}"
    );
    let outcome = outcome_of(&env, &delivery);
    assert_eq!(outcome["outcome"], "failed");
    std::thread::sleep(Duration::from_millis(500));
    let notices = api
        .calls_to("sendMessage")
        .iter()
        .filter(|c| c.body["text"].as_str().is_some_and(|t| t.contains(&short)))
        .count();
    assert_eq!(notices, 1, "posted once");
}

/// A failure that comes while the bot waits for its token (another poller holds it — as in the
/// moments of a handover) is posted once the bot polls: the bot hears the hub's events from its
/// start, not from when the token became its own.
#[test]
fn a_failure_while_the_bot_waits_for_its_token_is_posted_once_it_polls() {
    let (token, api) = bot();
    let mut env = paired(&api, &token, "5");
    env.kill_daemon();
    // Another poller of the same bot: this daemon's bot waits for it.
    let other_poller = cross_agent_telegram::poller::lock_token(&token).unwrap();
    env.start_daemon();
    let delivery = send_to_scripted_codex(
        &env,
        "codex-that-fails",
        CODEX_THAT_FAILS,
        "hello while the bot waits",
    );
    assert!(wait_until(|| env
        .decisions()
        .iter()
        .any(|d| d["kind"] == "delivery_outcome"
            && d["delivery"] == delivery.as_str()
            && d["outcome"] == "failed")));
    let short: String = delivery.chars().take(12).collect();
    assert!(
        sent_text(&api, "sendMessage", Duration::from_secs(2), &short).is_none(),
        "nothing is posted while the bot is another poller's"
    );

    drop(other_poller);
    let notice = sent_text(&api, "sendMessage", TURN, &format!("Delivery {short}"))
        .expect("the failure is posted once the bot polls");
    assert!(
        notice.body["text"]
            .as_str()
            .is_some_and(|t| t.starts_with(&format!("⚠️ Delivery {short} to codex failed:"))),
        "{:#}",
        notice.body
    );
}

/// The id of the panel session with an approval pending, from the shims' registrations.
fn session_awaiting_in_panels(state: &std::path::Path) -> Option<String> {
    let entries = std::fs::read_dir(state.join("panels")).ok()?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(registration) =
            serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap_or_default())
        else {
            continue;
        };
        for session in registration["sessions"].as_array().into_iter().flatten() {
            if session["pending_approvals"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
                && let Some(id) = session["session_id"].as_str()
            {
                return Some(id.to_owned());
            }
        }
    }
    None
}

/// A real Claude panel asks for a `Write` while no chat is paired: logged `not_posted`, and
/// offered as soon as a chat pairs (it is still pending), then allowed from the phone. The
/// permission `Notification` its hooks send for the same prompt is not sent beside the card
/// (one prompt, one message), and `telegram status` shows the hook session awaiting approval
/// and the outbound queue.
#[test]
fn a_panel_approval_waits_for_a_chat_to_pair_and_its_permission_notification_is_not_sent_twice() {
    let (token, api) = bot();
    let mut env = Env::new(&api);
    env.set_up_and_poll(&token);
    let claude = ClaudeProject::new();
    let project = &claude.project;
    let plan = project.join("plan.txt");
    claude.writes_on("write the plan", &plan, "step one\n");
    claude
        .endpoint
        .push(Rule::on_any_tool_result().reply_text("the plan is written"));
    let mut panel = claude.panel(&env.state);
    let asked = ask_in_panel(&mut panel, "write the plan");
    assert_eq!(asked["request"]["tool_name"], "Write");
    assert!(
        wait_until(|| env
            .decisions()
            .iter()
            .any(|d| d["kind"] == "approval" && d["outcome"] == "not_posted")),
        "nobody to ask: logged"
    );

    // The hooks of the same Claude tell of the same prompt, as Claude Code sends it.
    let mut session = None;
    assert!(wait_until(|| {
        session = session_awaiting_in_panels(&env.state);
        session.is_some()
    }));
    let session = session.unwrap();
    let notification = json!({"session_id": session, "transcript_path": "/tmp/t.jsonl",
        "cwd": project, "hook_event_name": "Notification",
        "message": "Claude needs your permission to use Write",
        "notification_type": "permission_prompt"});
    let out = env.run_with_stdin(&["hook", "Notification"], &notification.to_string());
    assert!(out.status.success());
    let status = env.status();
    assert_eq!(status["hook_sessions"]["count"], 1, "{status:#}");
    assert_eq!(
        status["hook_sessions"]["awaiting_approval"],
        json!([session]),
        "{status:#}"
    );
    assert!(status["outbound"]["waiting"].is_object(), "{status:#}");

    // A chat pairs: the approval still pending is offered there.
    let code = env.pair_code();
    api.push_message(5001, 5001, &format!("/pair {code}"));
    assert!(wait_until(|| !cards(&api).is_empty()), "offered on pairing");
    let card = cards(&api).remove(0);
    assert!(
        card["text"]
            .as_str()
            .unwrap()
            .contains("Claude panel · Write"),
        "{card:#}"
    );
    // The decision line is written once the card is out, not before: waited for.
    assert!(wait_until(|| env
        .decisions()
        .iter()
        .any(|d| d["kind"] == "approval"
            && d["outcome"] == "posted"
            && d["details"]["after_pairing"] == true)));
    api.push_callback(5001, 5001, 1, &button(&card, "Allow"));
    panel.next_line(TURN, |l| l["type"] == "result").unwrap();
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "step one\n");

    // One prompt, one message: the card, never the notification beside it.
    let out = env.run_with_stdin(&["hook", "Notification"], &notification.to_string());
    assert!(out.status.success());
    assert!(wait_until(|| env
        .decisions()
        .iter()
        .filter(|d| d["kind"] == "telegram_notification" && d["outcome"] == "skipped")
        .count()
        == 2));
    let notified = api
        .calls_to("sendMessage")
        .iter()
        .filter(|c| {
            c.body["text"]
                .as_str()
                .unwrap_or("")
                .contains("needs your permission")
        })
        .count();
    assert_eq!(notified, 0, "the card alone asks");
    assert!(
        wait_until(|| env.status()["outbound"]["sent"].as_u64() >= Some(2)),
        "the queue's figures reach `telegram status`"
    );
    panel.close_stdin();
    let _ = panel.wait(Duration::from_secs(30));
}
