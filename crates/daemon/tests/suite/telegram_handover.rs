//! The Telegram poller across a daemon replacement: the old daemon lets go of the token's lock
//! when it begins to drain, not when it exits, so the new daemon's poller takes the bot over
//! while the old one still carries a turn — and no two pollers ever long-poll the token at once
//! (the 409 war users of other bridges suffer). Real daemon processes, a real `claude -p` turn
//! held by the scripted endpoint, the fake Bot API.

use std::time::{Duration, Instant};

use cross_agent_daemon::handover::{self, Outcome};
use cross_agent_home::Home;
use cross_agent_protocol::bridge::{Agent, DeliveryState};
use cross_agent_testkit::endpoint::{Reply, Rule};
use cross_agent_testkit::telegram::FakeBotApi;
use serde_json::Value;

use super::bridge_support::{Bridge, spawn_daemon_process};
use super::connect;

fn poller_status(root: &std::path::Path) -> Value {
    std::fs::read(root.join("telegram/status.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null)
}

async fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_daemon_hands_the_bot_to_its_successor_before_its_turn_ends() {
    let token = format!("4242:SECRET{}", uuid::Uuid::new_v4().simple());
    let api = FakeBotApi::start(&token, "handover_bot").unwrap();
    let mut bridge = Bridge::start().await;
    let target = bridge.claude_session("seed telegram handover");
    // The old daemon's turn is held until the successor has taken the bot over: a gate the
    // test opens, not a guessed delay.
    let release = bridge.agents.path().join("release-slow-job");
    bridge.endpoint.push(
        Rule::on_user_text("slow telegram job")
            .reply(Reply::echo_token("slow job done").after_file(&release)),
    );
    bridge.stop_daemon().await;
    let root = bridge.state.root().to_owned();
    cross_agent_telegram::store::write_token(&root, &token).unwrap();
    let env = [
        ("CROSS_AGENT_TELEGRAM_API", api.base_url()),
        ("CROSS_AGENT_TELEGRAM_POLL_TIMEOUT", "1"),
    ];
    let user = bridge.state.dir.path().join("user");
    let (mut old_process, old_conn) = spawn_daemon_process(&root, &user, &env).await;
    let old_pid = old_conn.hello.daemon_pid;
    bridge.conn = old_conn;
    assert!(
        wait_for(Duration::from_secs(120), || {
            let status = poller_status(&root);
            status["state"] == "polling" && status["pid"] == old_pid
        })
        .await,
        "the old daemon polls: {}",
        poller_status(&root)
    );

    let caller = bridge.codex_caller("019a0000-0000-7000-8000-000000000888");
    let mut slow = bridge.send_params(Agent::Claude, "slow telegram job", caller);
    slow.session_id = Some(target);
    let slow = bridge.accepted(slow).await;
    bridge
        .wait_record(&slow.delivery_id, Duration::from_secs(120), |r| {
            r.state == DeliveryState::AwaitingPeer
        })
        .await;

    let mut successor =
        std::process::Command::new(cross_agent_testkit::binaries::cross_agent_bin().unwrap());
    successor
        .args(["daemon", "run"])
        .env("CROSS_AGENT_HOME", &root)
        .env("HOME", &user);
    for (name, value) in env {
        successor.env(name, value);
    }
    let home = Home::at(&root).unwrap();
    let outcome = handover::replace(&home, successor, Duration::from_secs(120))
        .await
        .unwrap();
    let new_pid = match outcome {
        Outcome::Replaced { new, carried, .. } => {
            assert_eq!(carried.turns_running, 1, "the old one drains a turn");
            new.pid
        }
        other => panic!("expected a replacement, got {other:?}"),
    };
    // The successor polls the bot while the old daemon's turn is still held: the lock went when
    // the drain began.
    assert!(
        wait_for(Duration::from_secs(120), || {
            let status = poller_status(&root);
            status["state"] == "polling" && status["pid"] == new_pid
        })
        .await,
        "the new daemon took the bot over: {}",
        poller_status(&root)
    );
    assert!(
        cross_agent_ipc::process::is_alive(old_pid),
        "…while the old daemon still drains"
    );
    std::fs::write(&release, "").unwrap();
    bridge.conn = connect(&home).await;
    let record = bridge.wait_finished(&slow.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    // No 409 war: the new poller never met a poll of the old one.
    let status = poller_status(&root);
    assert!(
        !status["last_error"]
            .as_str()
            .unwrap_or("")
            .contains("Conflict"),
        "{status}"
    );
    let _ = old_process.child.wait();
    // The successor is stopped with the home's owner (its process is the new daemon).
    let _ = std::process::Command::new(cross_agent_testkit::binaries::cross_agent_bin().unwrap())
        .args(["daemon", "stop"])
        .env("CROSS_AGENT_HOME", &root)
        .env("HOME", &user)
        .status();
}
