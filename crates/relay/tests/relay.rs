//! The relay against real Claude Code 2.1.332 on both sides, in one temporary HOME: a live
//! target session (stream-json, the scripted model, answering peers natively) and relays run by
//! the relay host, whose hooks reach it through the real `cross-agent hook`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use cross_agent_relay::{InboundKind, NativeSend, RelayReceipt, is_relay_name};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::{PEER_ANSWER, Rig, WAIT, bridge_message};

fn native(to: &str, message: &str, delivery: &str) -> NativeSend {
    NativeSend {
        represented: "cli".into(),
        to: to.into(),
        message: message.into(),
        delivery_id: delivery.into(),
        permission_mode: None,
    }
}

/// Waits until the relay made at least `n` model requests (bounded by the test's own wait).
async fn wait_requests(rig: &Rig, relay: &str, n: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while rig.host.model_requests(relay) < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{relay} made fewer than {n} requests"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// A send reaches the live target as Claude's own envelope from `xa-cli-on-testbox`; the target's
/// model answers with SendMessage; the relay files the answer byte-exact and no model request
/// is made for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_send_reaches_the_target_and_its_reply_is_filed_without_a_model_turn() {
    let rig = Rig::start(Duration::from_secs(600)).await.unwrap();
    let mut inbound = rig.host.take_inbound().expect("inbound, once");
    assert!(rig.host.take_inbound().is_none());
    let (mut target, to) = blocking(|| rig.target("bravo", &[])).unwrap();
    let token = "req_1795992544448_a1b2c3";
    let message = bridge_message(token, "Please review the parser.");

    let receipt = rig.host.send(native(&to, &message, "d-1")).await.unwrap();

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
    let seen = rig
        .target_endpoint
        .wait_until(WAIT, |requests| {
            requests.iter().any(|r| {
                r.last_user_prompt
                    .as_deref()
                    .is_some_and(|p| p.contains("<cross-session-message"))
            })
        })
        .unwrap();
    let prompt = seen
        .iter()
        .find_map(|r| {
            r.last_user_prompt
                .clone()
                .filter(|p| p.contains("<cross-session-message"))
        })
        .unwrap();
    assert!(
        prompt.contains("from-name=\"xa-cli-on-testbox\""),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!(">\n{message}\n</cross-session-message>")),
        "{prompt}"
    );

    // The target answered natively; the relay's hook filed it and blocked it.
    let mail = tokio::time::timeout(WAIT, inbound.recv())
        .await
        .expect("the reply in time")
        .expect("a mail");
    assert_eq!(mail.relay, "xa-cli-on-testbox");
    assert_eq!(mail.represented, "cli");
    match &mail.kind {
        InboundKind::Message {
            from_name, body, ..
        } => {
            assert_eq!(from_name, "bravo");
            assert_eq!(body, &format!("{PEER_ANSWER}\n{token}"));
        }
        other => panic!("not a message: {other:?}"),
    }
    assert!(mail.text.starts_with("<cross-session-message from=\"uds:"));
    let inbox: Vec<String> = std::fs::read_dir(relay.dir.join("inbox"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(inbox, vec![mail.text.clone()], "filed byte-exact");
    blocking(|| {
        target
            .next_line(WAIT, |l| l["type"] == "result" && l["result"] == "replied")
            .unwrap()
    });
    // Claude takes prompts in order: had the filed reply started a model turn, its request
    // would come before the next send turn's two. So after a second send the relay has made
    // exactly four requests (two per send turn: the send, then the status line).
    let second = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_b2b2b2", "again"),
            "d-2",
        ))
        .await
        .unwrap();
    assert!(matches!(second, RelayReceipt::Sent { .. }), "{second:?}");
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
    let rig = Rig::start(Duration::from_secs(600)).await.unwrap();
    let (_target, to) = blocking(|| rig.target("bravo", &[])).unwrap();
    let first = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_aaaaaa", "one"),
            "d-1",
        ))
        .await
        .unwrap();
    assert!(matches!(first, RelayReceipt::Sent { .. }), "{first:?}");
    let marker = rig.home.path().join("gate-breached");
    rig.host.testing_answer_next_send_with(
        "cli",
        "Bash",
        json!({ "command": format!("touch {}", marker.display()), "description": "x" }),
    );

    let denied = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_bbbbbb", "two"),
            "d-2",
        ))
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
    let output = blocking(|| {
        use std::io::Write;
        let mut child = std::process::Command::new(support::cross_agent_bin().unwrap())
            .args(["hook", "PreToolUse"])
            .env("CROSS_AGENT_HOME", &rig.xa_home)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    });
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    // The same call from a session that is not a relay is not the relay host's.
    let elsewhere = cross_agent_protocol::hook::HookParams {
        event: "PreToolUse".into(),
        payload: json!({ "cwd": rig.home.path(), "tool_name": "Bash", "tool_input": {} }),
    };
    assert_eq!(rig.host.hook(&elsewhere).await, None);
    rig.host.shutdown().await;
}

/// A send to a target whose process died gives Claude's own `dead` receipt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_to_a_dead_target_gives_claudes_dead_receipt() {
    let rig = Rig::start(Duration::from_secs(600)).await.unwrap();
    let (mut target, to) = blocking(|| rig.target("bravo", &[])).unwrap();
    blocking(|| {
        let pid = rustix::process::Pid::from_raw(i32::try_from(target.pid()).unwrap()).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
        target.wait(WAIT).unwrap();
    });

    let receipt = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_cccccc", "hello?"),
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
    let rig = Rig::start(Duration::from_secs(600)).await.unwrap();
    let (_target, to) = blocking(|| rig.target("bravo", &[])).unwrap();
    let first = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_dddddd", "first"),
            "d-1",
        ))
        .await
        .unwrap();
    assert!(matches!(first, RelayReceipt::Sent { .. }), "{first:?}");
    let relay = rig.host.relays().remove(0);
    // The first send turn is over once its status request was made.
    wait_requests(&rig, &relay.name, 2).await;
    let before = rig.host.model_requests(&relay.name);
    rig.host.testing_hang_next_send("cli");
    let host = rig.host.clone();
    let lost = bridge_message("req_1795992544448_eeeeee", "LOST MESSAGE");
    let sending = tokio::spawn({
        let to = to.clone();
        let lost = lost.clone();
        async move { host.send(native(&to, &lost, "d-2")).await }
    });
    // The relay is mid-send once its send-turn request reached the (hanging) endpoint.
    while rig.host.model_requests(&relay.name) == before {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
    let third = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_ffffff", "third"),
            "d-3",
        ))
        .await
        .unwrap();
    assert!(matches!(third, RelayReceipt::Sent { .. }), "{third:?}");
    let now = rig.host.relays().remove(0);
    assert_ne!(now.pid, relay.pid, "a new relay");
    // The target takes messages in order: once the third has reached its model, the lost one
    // would have too, had it been sent.
    let requests = rig
        .target_endpoint
        .wait_until(WAIT, |requests| {
            requests.iter().any(|r| {
                r.last_user_prompt
                    .as_deref()
                    .is_some_and(|p| p.contains("\nthird\n"))
            })
        })
        .unwrap();
    let bodies: Vec<String> = requests
        .iter()
        .filter_map(|r| r.last_user_prompt.clone())
        .collect();
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
    let (_target, to) = blocking(|| rig.target("bravo", &[])).unwrap();
    // The target answers only after a while (its model is slow), longer than the idle limit.
    rig.target_endpoint.clear_rules();
    rig.target_endpoint.script([
        cross_agent_testkit::endpoint::Rule::on_peer_message().reply(
            cross_agent_testkit::endpoint::Reply::peer_reply(PEER_ANSWER)
                .delay(Duration::from_secs(2)),
        ),
        cross_agent_testkit::endpoint::Rule::on_tool_result("\"success\"").reply_text("replied"),
    ]);

    let receipt = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_a9a9a9", "slow"),
            "d-1",
        ))
        .await
        .unwrap();
    assert!(matches!(receipt, RelayReceipt::Sent { .. }), "{receipt:?}");

    let mail = tokio::time::timeout(WAIT, inbound.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(mail.kind, InboundKind::Message { .. }),
        "the reply reached a live relay"
    );
    let relay = rig.host.relays().remove(0);
    let stopped_decisions = || -> Vec<serde_json::Value> {
        rig.decisions()
            .into_iter()
            .filter(|d| d["kind"] == "relay_stopped")
            .collect()
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while stopped_decisions().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the idle relay was not stopped"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(rig.host.relays().is_empty());
    assert!(
        !cross_agent_process::is_alive(relay.pid),
        "its process is gone"
    );
    let stopped = stopped_decisions();
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0]["reason"], "idle");
}

/// Claude holds a message from another permission class; a relay started in the target's mode
/// is taken at once (`from-mode="bypass"`), and a held one comes back as a delivery notice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_runs_in_the_targets_permission_mode_so_the_message_is_not_held() {
    let rig = Rig::start(Duration::from_secs(600)).await.unwrap();
    let mut inbound = rig.host.take_inbound().unwrap();
    let (_target, to) = blocking(|| {
        // As root Claude takes bypass mode only in a sandbox (TESTING.md).
        rig.target_with_env(
            "charlie",
            &["--permission-mode", "bypassPermissions"],
            &[("IS_SANDBOX", "1")],
        )
        .unwrap()
    });

    // A relay in the default mode: held by the target, and the relay files Claude's notice.
    let held = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_h1h1h1", "HELD ONE"),
            "d-1",
        ))
        .await
        .unwrap();
    let RelayReceipt::Sent { msg_id, .. } = &held else {
        panic!("{held:?}");
    };
    let notice = tokio::time::timeout(WAIT, inbound.recv())
        .await
        .unwrap()
        .unwrap();
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

    // The same relay name in the target's mode: restarted, and the message is taken.
    let mut send = native(
        &to,
        &bridge_message("req_1795992544448_b1b1b1", "TAKEN ONE"),
        "d-2",
    );
    send.permission_mode = Some("bypassPermissions".into());
    let taken = rig.host.send(send).await.unwrap();
    assert!(matches!(taken, RelayReceipt::Sent { .. }), "{taken:?}");
    let prompt = rig
        .target_endpoint
        .wait_until(WAIT, |requests| {
            requests.iter().any(|r| {
                r.last_user_prompt
                    .as_deref()
                    .is_some_and(|p| p.contains("TAKEN ONE"))
            })
        })
        .unwrap()
        .into_iter()
        .find_map(|r| r.last_user_prompt.filter(|p| p.contains("TAKEN ONE")))
        .unwrap();
    assert!(prompt.contains("from-mode=\"bypass\""), "{prompt}");
    let reply = tokio::time::timeout(WAIT, inbound.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(&reply.kind, InboundKind::Message { body, .. } if body.ends_with("req_1795992544448_b1b1b1")),
        "{reply:?}"
    );
    rig.host.shutdown().await;
}

/// The user's own settings do not reach a relay: a user `PreToolUse` hook that blocks every
/// tool call (as a hook of the user's could) leaves the relay's send alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_settings_and_hooks_stay_out_of_a_relay() {
    let rig = Rig::start(Duration::from_secs(600)).await.unwrap();
    let (_target, to) = blocking(|| rig.target("bravo", &[])).unwrap();
    let settings = rig.home.claude_config().join("settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({"hooks":{"PreToolUse":[{"matcher":"*","hooks":[
            {"type":"command","command":"echo user hook blocks >&2; exit 2"}]}]}})
        .to_string(),
    )
    .unwrap();

    let receipt = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_u1u1u1", "through"),
            "d-1",
        ))
        .await
        .unwrap();

    assert!(matches!(receipt, RelayReceipt::Sent { .. }), "{receipt:?}");
    rig.host.shutdown().await;
}

/// No receipt within the bound: the send fails naming the relay, and the relay is stopped so
/// the queued message cannot go out later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_without_a_receipt_in_time_fails_and_stops_the_relay() {
    let rig = support::Rig::start_with(Duration::from_secs(600), Duration::from_secs(20))
        .await
        .unwrap();
    let (_target, to) = blocking(|| rig.target("bravo", &[])).unwrap();
    let first = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_t1t1t1", "first"),
            "d-1",
        ))
        .await
        .unwrap();
    assert!(matches!(first, RelayReceipt::Sent { .. }), "{first:?}");
    let relay = rig.host.relays().remove(0);
    wait_requests(&rig, &relay.name, 2).await;
    rig.host.testing_hang_next_send("cli");

    let error = rig
        .host
        .send(native(
            &to,
            &bridge_message("req_1795992544448_t2t2t2", "NEVER"),
            "d-2",
        ))
        .await
        .unwrap_err();

    assert!(
        matches!(&error, cross_agent_relay::RelayError::Timeout { relay: r, .. } if r == &relay.name),
        "{error}"
    );
    assert!(rig.host.relays().is_empty(), "the relay was stopped");
    assert!(!cross_agent_process::is_alive(relay.pid));
    let stopped: Vec<_> = rig
        .decisions()
        .into_iter()
        .filter(|d| d["kind"] == "relay_stopped")
        .collect();
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0]["reason"], "no receipt in time");
}
