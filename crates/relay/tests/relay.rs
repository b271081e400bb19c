//! The relay against real Claude Code 2.1.332 on both sides, in one temporary HOME: a live
//! target session (stream-json, the scripted model, answering peers natively) and relays run by
//! the relay host, whose hooks reach it through the real `cross-agent hook`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use cross_agent_protocol::hook::HookParams;
use cross_agent_relay::{InboundKind, InboundMail, RelayReceipt, is_relay_name};
use cross_agent_testkit::endpoint::{Reply, Rule};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::{
    LONG_IDLE, PEER_ANSWER, Rig, WAIT, bridge_message, bridge_send, rig_with_bravo, run_hook,
    wait_for,
};
use tokio::sync::mpsc::UnboundedReceiver;

/// How long the rate-limit test sends before calling the machine too slow to reach Claude's
/// limit: at 1.5 s a send, its bucket of 30 refilled at 0.5 a second runs out after about
/// 180 s (at 2 s a send, never).
const PACER_WAIT: Duration = Duration::from_secs(300);

/// Waits until the relay made at least `n` model requests (bounded by the test's own wait).
async fn wait_requests(rig: &Rig, relay: &str, n: u64) {
    wait_for(&format!("{relay} made fewer than {n} requests"), || {
        rig.host.model_requests(relay) >= n
    })
    .await;
}

/// Runs blocking test code (a target's stdio, the scripted endpoint's waits) on this worker only.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// The next mail the relays filed, within the test's wait.
async fn next_mail(inbound: &mut UnboundedReceiver<InboundMail>) -> InboundMail {
    tokio::time::timeout(WAIT, inbound.recv())
        .await
        .expect("a mail in time")
        .expect("the inbound channel open")
}

/// The next mail, which must be a peer's message: the mail, its sender's name and its body.
async fn next_message(
    inbound: &mut UnboundedReceiver<InboundMail>,
) -> (InboundMail, String, String) {
    let mail = next_mail(inbound).await;
    let InboundKind::Message {
        from_name, body, ..
    } = &mail.kind
    else {
        panic!("not a message: {mail:?}");
    };
    let (from_name, body) = (from_name.clone(), body.clone());
    (mail, from_name, body)
}

/// The texts of the files in `dir` (a relay's inbox).
fn file_texts(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect()
}

/// A hook as the daemon's door hands it to the relay host.
fn hook_params(event: &str, payload: Value) -> HookParams {
    HookParams {
        event: event.into(),
        payload,
    }
}

/// A send reaches the live target as Claude's own envelope from `xa-cli-on-testbox`; the target's
/// model answers with SendMessage; the relay files the answer byte-exact and no model request
/// is made for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_send_reaches_the_target_and_its_reply_is_filed_without_a_model_turn() {
    let (rig, mut target, to) = rig_with_bravo().await;
    let mut inbound = rig.host.take_inbound().expect("inbound, once");
    assert!(rig.host.take_inbound().is_none());
    let token = "req_1795992544448_a1b2c3";
    let message = bridge_message(token, "Please review the parser.");

    let receipt = rig
        .host
        .send(bridge_send(&to, token, "Please review the parser.", "d-1"))
        .await
        .unwrap();

    let RelayReceipt::Sent { msg_id, claude } = &receipt else {
        panic!("not sent: {receipt:?}");
    };
    assert!(
        msg_id.as_deref().is_some_and(|id| !id.is_empty()),
        "{claude}"
    );
    assert_eq!(claude["success"], true);
    let relays = rig.host.relays();
    assert_eq!(relays.len(), 1);
    let relay = &relays[0];
    assert_eq!(relay.name, "xa-cli-on-testbox");
    assert!(is_relay_name(&relay.name));
    // The receipt is Claude's own result, durable beside the queue.
    let receipts: Vec<_> = std::fs::read_dir(relay.dir.join("receipts"))
        .unwrap()
        .collect();
    let queue: Vec<_> = std::fs::read_dir(relay.dir.join("queue"))
        .unwrap()
        .collect();
    assert_eq!((receipts.len(), queue.len()), (1, 1));

    // The target's model saw Claude's envelope naming the relay, with the message byte-exact.
    let prompt = blocking(|| rig.target_prompt_containing("<cross-session-message"));
    assert!(
        prompt.contains("from-name=\"xa-cli-on-testbox\""),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!(">\n{message}\n</cross-session-message>")),
        "{prompt}"
    );

    // The target answered natively; the relay's hook filed it and blocked it.
    let (mail, from_name, body) = next_message(&mut inbound).await;
    assert_eq!(mail.relay, "xa-cli-on-testbox");
    assert_eq!(mail.represented, "cli");
    assert_eq!(from_name, "bravo");
    assert_eq!(body, format!("{PEER_ANSWER}\n{token}"));
    assert!(mail.text.starts_with("<cross-session-message from=\"uds:"));
    let inbox = file_texts(&relay.dir.join("inbox"));
    assert_eq!(inbox, vec![mail.text.clone()], "filed byte-exact");
    blocking(|| {
        target
            .next_line(WAIT, |l| l["type"] == "result" && l["result"] == "replied")
            .unwrap()
    });
    // Claude takes prompts in order: had the filed reply started a model turn, its request
    // would come before the next send turn's two. So after a second send the relay has made
    // exactly four requests (two per send turn: the send, then the status line).
    rig.send_expecting_sent(bridge_send(&to, "req_1795992544448_b2b2b2", "again", "d-2"))
        .await;
    wait_requests(&rig, "xa-cli-on-testbox", 4).await;
    assert_eq!(rig.host.model_requests("xa-cli-on-testbox"), 4);
    let kinds: Vec<String> = rig
        .decisions()
        .iter()
        .map(|d| d["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(kinds.contains(&"relay_started".to_owned()), "{kinds:?}");
    // No relay transcript in the user's Claude store.
    let relay_files: Vec<String> = std::fs::read_dir(rig.home.claude_config().join("projects"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("relays"))
        .flat_map(|p| std::fs::read_dir(p).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        relay_files.iter().all(|f| !f.ends_with(".jsonl")),
        "{relay_files:?}"
    );
    rig.host.shutdown().await;
    assert!(rig.host.relays().is_empty());
}

/// The gate: a tool call the endpoint was not asked for is denied and never runs (a
/// misbehaving endpoint answering the send turn with Bash), and a crafted SendMessage of
/// another pair fed through the real `cross-agent hook` is denied too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_denies_any_call_but_the_queued_send() {
    let (rig, _target, to) = rig_with_bravo().await;
    rig.send_expecting_sent(bridge_send(&to, "req_1795992544448_aaaaaa", "one", "d-1"))
        .await;
    let marker = rig.home.path().join("gate-breached");
    rig.host.testing_answer_next_send_with(
        "cli",
        "Bash",
        json!({ "command": format!("touch {}", marker.display()), "description": "x" }),
    );

    let denied = rig
        .host
        .send(bridge_send(&to, "req_1795992544448_bbbbbb", "two", "d-2"))
        .await
        .unwrap();

    match &denied {
        RelayReceipt::Denied { reason } => assert!(reason.contains("Bash"), "{reason}"),
        other => panic!("not denied: {other:?}"),
    }
    assert!(!marker.exists(), "the denied Bash ran");
    let decisions = rig.decisions();
    let gate: Vec<_> = decisions
        .iter()
        .filter(|d| d["kind"] == "relay_gate")
        .collect();
    assert_eq!(gate.len(), 1, "{decisions:?}");
    assert_eq!(gate[0]["outcome"], "denied");
    assert_eq!(gate[0]["delivery"], "d-2");

    // A crafted PreToolUse from the relay's directory, through the real hook program.
    let relay = rig.host.relays().remove(0);
    let payload = json!({
        "session_id": "s", "cwd": relay.dir, "hook_event_name": "PreToolUse",
        "tool_name": "SendMessage", "tool_input": { "to": "bravo", "message": "smuggled" },
    });
    let output = run_hook(&rig.xa_home, "PreToolUse", &payload.to_string()).unwrap();
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    // The same call from a session that is not a relay is not the relay host's.
    let elsewhere = hook_params(
        "PreToolUse",
        json!({ "cwd": rig.home.path(), "tool_name": "Bash", "tool_input": {} }),
    );
    assert_eq!(rig.host.hook(&elsewhere).await, None);
    rig.host.shutdown().await;
}

/// A send to a target whose process died gives Claude's own `dead` receipt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_to_a_dead_target_gives_claudes_dead_receipt() {
    let (rig, mut target, to) = rig_with_bravo().await;
    blocking(|| {
        let pid = rustix::process::Pid::from_raw(i32::try_from(target.pid()).unwrap()).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
        target.wait(WAIT).unwrap();
    });

    let receipt = rig
        .host
        .send(bridge_send(
            &to,
            "req_1795992544448_cccccc",
            "hello?",
            "d-1",
        ))
        .await
        .unwrap();

    match &receipt {
        RelayReceipt::Refused { claude, dead } => {
            assert!(*dead, "{claude}");
            assert_eq!(claude["success"], false);
            assert!(
                claude["message"]
                    .as_str()
                    .unwrap()
                    .contains(to.trim_start_matches("uds:")),
                "{claude}"
            );
        }
        other => panic!("not refused: {other:?}"),
    }
    rig.host.shutdown().await;
}

/// A relay killed mid-send: the send gets RelayDied, the message never reaches the target, and
/// the next send starts a new relay without re-sending it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_killed_mid_send_is_relay_died_and_never_resent() {
    let (rig, _target, to) = rig_with_bravo().await;
    rig.send_expecting_sent(bridge_send(&to, "req_1795992544448_dddddd", "first", "d-1"))
        .await;
    let relay = rig.host.relays().remove(0);
    // The first send turn is over once its status request was made.
    wait_requests(&rig, &relay.name, 2).await;
    let before = rig.host.model_requests(&relay.name);
    rig.host.testing_hang_next_send("cli");
    let host = rig.host.clone();
    let lost = bridge_send(&to, "req_1795992544448_eeeeee", "LOST MESSAGE", "d-2");
    let sending = tokio::spawn(async move { host.send(lost).await });
    // The relay is mid-send once its send-turn request reached the (hanging) endpoint.
    wait_for("the send turn's request never reached the endpoint", || {
        rig.host.model_requests(&relay.name) != before
    })
    .await;
    cross_agent_testkit::agents::kill_group(relay.pid);

    let receipt = tokio::time::timeout(WAIT, sending)
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    assert!(
        matches!(receipt, RelayReceipt::RelayDied { .. }),
        "{receipt:?}"
    );
    rig.send_expecting_sent(bridge_send(&to, "req_1795992544448_ffffff", "third", "d-3"))
        .await;
    let now = rig.host.relays().remove(0);
    assert_ne!(now.pid, relay.pid, "a new relay");
    // The target takes messages in order: once the third has reached its model, the lost one
    // would have too, had it been sent.
    let bodies = blocking(|| rig.target_prompts_once_one_contains("\nthird\n"));
    assert!(
        bodies.iter().all(|b| !b.contains("LOST MESSAGE")),
        "{bodies:?}"
    );
    rig.host.shutdown().await;
}

/// A relay stays up until the reply to what it sent came, then stops once idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_waits_for_its_reply_then_stops_when_idle() {
    let rig = Rig::start(Duration::from_millis(300)).await.unwrap();
    let mut inbound = rig.host.take_inbound().unwrap();
    let (_target, to) = rig.live_target("bravo").unwrap();
    // The target answers only after a while (its model is slow), longer than the idle limit.
    rig.target_endpoint.clear_rules();
    rig.target_endpoint.script([
        Rule::on_peer_message().reply(Reply::peer_reply(PEER_ANSWER).delay(Duration::from_secs(2))),
        Rule::on_tool_result("\"success\"").reply_text("replied"),
    ]);

    rig.send_expecting_sent(bridge_send(&to, "req_1795992544448_a9a9a9", "slow", "d-1"))
        .await;

    let mail = next_mail(&mut inbound).await;
    assert!(
        matches!(mail.kind, InboundKind::Message { .. }),
        "the reply reached a live relay"
    );
    let relay = rig.host.relays().remove(0);
    wait_for("the idle relay was not stopped", || {
        !rig.decisions_of("relay_stopped").is_empty()
    })
    .await;
    assert!(rig.host.relays().is_empty());
    assert!(
        !cross_agent_process::is_alive(relay.pid),
        "its process is gone"
    );
    let stopped = rig.decisions_of("relay_stopped");
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0]["reason"], "idle");
}

/// Claude holds a message from another permission class: a `prompting` relay's message to a
/// `bypass` target comes back as a held notice. A send in the target's class goes through the
/// sender's relay of that class, started beside the first under its own `xa-` name — and the
/// first stays up and still files the reply it awaits from another target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_of_another_permission_class_starts_beside_the_first_which_keeps_its_reply() {
    let (rig, _bravo, to_bravo) = rig_with_bravo().await;
    let mut inbound = rig.host.take_inbound().unwrap();
    let (_charlie, to_charlie) = blocking(|| {
        // As root Claude takes bypass mode only in a sandbox (docs/testing.md).
        rig.target_with_env(
            "charlie",
            &["--permission-mode", "bypassPermissions"],
            &[("IS_SANDBOX", "1")],
        )
        .unwrap()
    });
    // bravo answers the slow message only after a while, so its answer comes when the second
    // relay already runs; every other peer message is answered at once.
    rig.target_endpoint.clear_rules();
    rig.target_endpoint.push(
        Rule::on_user_text("SLOW ONE")
            .reply(Reply::peer_reply(PEER_ANSWER).delay(Duration::from_secs(5)))
            .label("slow peer reply"),
    );
    rig.target_endpoint
        .script(Rule::peer_replies(PEER_ANSWER, "replied"));

    // The `prompting` relay's message to charlie is held, and the relay files Claude's notice.
    let held = rig
        .host
        .send(bridge_send(
            &to_charlie,
            "req_1795992544448_h1h1h1",
            "HELD ONE",
            "d-1",
        ))
        .await
        .unwrap();
    let RelayReceipt::Sent { msg_id, .. } = &held else {
        panic!("{held:?}");
    };
    let notice = next_mail(&mut inbound).await;
    match &notice.kind {
        InboundKind::DeliveryNotice {
            status,
            msg_id: noticed,
            ..
        } => {
            assert_eq!(status, "held", "{}", notice.text);
            assert_eq!(noticed, msg_id);
        }
        other => panic!("not a delivery notice: {other:?}"),
    }
    // The same relay sends to bravo (same class) and awaits its slow answer.
    let mut slow = bridge_send(&to_bravo, "req_1795992544448_s1s1s1", "SLOW ONE", "d-2");
    slow.permission_mode = Some("default".into());
    rig.send_expecting_sent(slow).await;
    let first = rig.host.relays().remove(0);
    assert_eq!(first.name, "xa-cli-on-testbox");
    assert_eq!(first.permission_class, "prompting");

    // charlie's class: a second relay, beside the first.
    let mut taken = bridge_send(&to_charlie, "req_1795992544448_b1b1b1", "TAKEN ONE", "d-3");
    taken.permission_mode = Some("bypassPermissions".into());
    rig.send_expecting_sent(taken).await;

    let mut relays = rig.host.relays();
    relays.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<&str> = relays.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(relays.len(), 2, "{names:?}");
    let second = relays.iter().find(|r| r.name != first.name).unwrap();
    assert!(is_relay_name(&second.name), "{names:?}");
    assert_eq!(
        second.name,
        cross_agent_relay::relay_name_for("cli", "testbox", Some("bypassPermissions"))
    );
    assert_eq!(second.permission_class, "bypass");
    assert_eq!(second.permission_mode.as_deref(), Some("bypassPermissions"));
    assert!(
        relays.iter().any(|r| r.pid == first.pid),
        "the first was kept"
    );
    assert!(cross_agent_process::is_alive(first.pid));
    let prompt = blocking(|| rig.target_prompt_containing("TAKEN ONE"));
    assert!(prompt.contains("from-mode=\"bypass\""), "{prompt}");
    assert!(
        prompt.contains(&format!("from-name=\"{}\"", second.name)),
        "{prompt}"
    );

    // Both answers are filed, each by the relay that sent the message it answers.
    let mut replies = Vec::new();
    for _ in 0..2 {
        let (mail, from_name, body) = next_message(&mut inbound).await;
        replies.push((mail.relay, from_name, body));
    }
    replies.sort();
    let mut expected = vec![
        (
            first.name.clone(),
            "bravo".to_owned(),
            format!("{PEER_ANSWER}\nreq_1795992544448_s1s1s1"),
        ),
        (
            second.name.clone(),
            "charlie".to_owned(),
            format!("{PEER_ANSWER}\nreq_1795992544448_b1b1b1"),
        ),
    ];
    expected.sort();
    assert_eq!(replies, expected);
    let stopped = rig.decisions_of("relay_stopped");
    assert!(stopped.is_empty(), "{stopped:?}");
    rig.host.shutdown().await;
}

/// Two senders whose names sanitize alike get a relay each, under distinct `xa-` names, and
/// each answer is filed for its own sender.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn senders_whose_names_sanitize_alike_get_their_own_relays() {
    let (rig, _bravo, to) = rig_with_bravo().await;
    let mut inbound = rig.host.take_inbound().unwrap();
    let senders = [
        ("Fix the bug", "req_1795992544448_f1f1f1"),
        ("fix the bug", "req_1795992544448_f2f2f2"),
    ];

    for (n, (represented, token)) in senders.iter().enumerate() {
        let mut send = bridge_send(&to, token, "alike", &format!("d-{n}"));
        send.represented = (*represented).to_owned();
        rig.send_expecting_sent(send).await;
    }

    let mut relays: Vec<(String, String)> = rig
        .host
        .relays()
        .into_iter()
        .map(|r| (r.represented, r.name))
        .collect();
    relays.sort();
    let mut expected: Vec<(String, String)> = senders
        .iter()
        .map(|(r, _)| ((*r).to_owned(), cross_agent_relay::relay_name(r, "testbox")))
        .collect();
    expected.sort();
    assert_eq!(relays, expected);
    assert_ne!(relays[0].1, relays[1].1);
    let mut filed = Vec::new();
    for _ in 0..2 {
        let (mail, _, body) = next_message(&mut inbound).await;
        filed.push((mail.represented, mail.relay, body));
    }
    filed.sort();
    let mut wanted: Vec<(String, String, String)> = senders
        .iter()
        .map(|(r, token)| {
            (
                (*r).to_owned(),
                cross_agent_relay::relay_name(r, "testbox"),
                format!("{PEER_ANSWER}\n{token}"),
            )
        })
        .collect();
    wanted.sort();
    assert_eq!(filed, wanted);
    rig.host.shutdown().await;
}

/// The user's own settings do not reach a relay: a user `PreToolUse` hook that blocks every
/// tool call (as a hook of the user's could) leaves the relay's send alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_settings_and_hooks_stay_out_of_a_relay() {
    let (rig, _target, to) = rig_with_bravo().await;
    let settings = rig.home.claude_config().join("settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({"hooks":{"PreToolUse":[{"matcher":"*","hooks":[
            {"type":"command","command":"echo user hook blocks >&2; exit 2"}]}]}})
        .to_string(),
    )
    .unwrap();

    rig.send_expecting_sent(bridge_send(
        &to,
        "req_1795992544448_u1u1u1",
        "through",
        "d-1",
    ))
    .await;
    rig.host.shutdown().await;
}

/// No receipt within the bound: the send fails naming the relay, and the relay is stopped so
/// the queued message cannot go out later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_without_a_receipt_in_time_fails_and_stops_the_relay() {
    let rig = Rig::start_with(LONG_IDLE, Duration::from_secs(20))
        .await
        .unwrap();
    let (_target, to) = rig.live_target("bravo").unwrap();
    rig.send_expecting_sent(bridge_send(&to, "req_1795992544448_t1t1t1", "first", "d-1"))
        .await;
    let relay = rig.host.relays().remove(0);
    wait_requests(&rig, &relay.name, 2).await;
    rig.host.testing_hang_next_send("cli");

    let error = rig
        .host
        .send(bridge_send(&to, "req_1795992544448_t2t2t2", "NEVER", "d-2"))
        .await
        .unwrap_err();

    assert!(
        matches!(&error, cross_agent_relay::RelayError::Timeout { relay: r, .. } if r == &relay.name),
        "{error}"
    );
    assert!(rig.host.relays().is_empty(), "the relay was stopped");
    assert!(!cross_agent_process::is_alive(relay.pid));
    let stopped = rig.decisions_of("relay_stopped");
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0]["reason"], "no receipt in time");
}

/// A hook from a relay directory this host does not run (a relay left by an earlier daemon) may
/// do nothing: its tool calls are denied and its inbound prompts blocked (and kept in its
/// inbox); a hook from anywhere else is not the relay host's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_of_a_relay_this_host_does_not_run_are_denied_and_blocked() {
    let rig = Rig::start(LONG_IDLE).await.unwrap();
    let orphan = rig.xa_home.join("relays/xa-old-on-testbox");
    std::fs::create_dir_all(orphan.join("inbox")).unwrap();

    let pre = rig
        .host
        .hook(&hook_params(
            "PreToolUse",
            json!({"cwd": orphan, "tool_name": "SendMessage", "tool_input": {"to": "x", "message": "y"}}),
        ))
        .await
        .expect("a relay's hook");
    let prompt = rig
        .host
        .hook(&hook_params(
            "UserPromptSubmit",
            json!({"cwd": orphan, "prompt": "<cross-session-message from=\"uds:/x\" from-name=\"b\" from-mode=\"prompting\">\nlate\n</cross-session-message>"}),
        ))
        .await
        .expect("a relay's hook");
    let elsewhere = rig
        .host
        .hook(&hook_params(
            "UserPromptSubmit",
            json!({"cwd": rig.home.path(), "prompt": "hello"}),
        ))
        .await;

    assert_eq!(
        pre.output.unwrap()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    assert_eq!(prompt.output.unwrap()["decision"], "block");
    let kept = file_texts(&orphan.join("inbox"));
    assert_eq!(kept.len(), 1);
    assert!(kept[0].contains("\nlate\n"));
    assert_eq!(elsewhere, None);
}

/// Claude's own rate limit on messages to one session: sends to one target in a quick run
/// are refused by Claude at some point, and that receipt is `RateLimited` with Claude's words
/// (not a plain refusal, and not a dead target).
///
/// Claude paces each target with a bucket of 30 sends refilled at 0.5 a second (2.1.332's
/// defaults), and gives a send's token back while the target reports the message held, so how
/// many sends it takes depends on how quick they are and how the target keeps up on this
/// machine: 34 at about 4 a second, over a hundred at 1.5 seconds each. A fixed number of sends
/// raced that; the test sends until Claude refuses, and gives up only after [`PACER_WAIT`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claudes_rate_limit_on_one_target_comes_back_as_rate_limited() {
    let (rig, _target, to) = rig_with_bravo().await;
    // The target reads every message and answers nothing: only the sender's side counts.
    rig.target_endpoint.clear_rules();
    rig.target_endpoint
        .push(Rule::on_any_user_text().reply_text("noted"));

    let started = Instant::now();
    let mut n = 0;
    let (n, receipt) = loop {
        let receipt = rig
            .host
            .send(bridge_send(
                &to,
                &format!("req_1795992544448_r{n:05}"),
                "quick",
                &format!("d-{n}"),
            ))
            .await
            .unwrap();
        if !matches!(receipt, RelayReceipt::Sent { .. }) {
            break (n, receipt);
        }
        n += 1;
        assert!(
            started.elapsed() < PACER_WAIT,
            "Claude never rate-limited {n} sends to one session in {:?}: at this pace its \
             refill keeps up",
            started.elapsed()
        );
    };

    let RelayReceipt::RateLimited { claude, words } = &receipt else {
        panic!("send {n} was refused otherwise: {receipt:?}");
    };
    assert_eq!(claude["success"], false);
    assert_eq!(claude["message"].as_str(), Some(words.as_str()));
    assert!(
        words.contains("Too many messages to this session just now"),
        "{words}"
    );
    assert_eq!(receipt.name(), "rate_limited");
    eprintln!(
        "send {n} (0-based), {:?} after the first, was rate-limited: {words}",
        started.elapsed()
    );
    rig.host.shutdown().await;
}
