//! Replacing the daemon without cutting anything off (docs/spec/cross-agent-mcp.md "Applying code changes without restarting the editor"): real daemon processes on
//! one home, a real `claude -p` turn held by the scripted endpoint while the restart happens.
//! The old daemon finishes what it carries and exits; the queue behind it goes out from the new
//! one, once; new calls reach the new one; a successor that cannot start leaves the old one
//! serving.

use std::time::{Duration, Instant};

use cross_agent_daemon::handover::{self, Outcome, Who};
use cross_agent_home::Home;
use cross_agent_home::pidfile::{self, Holder};
use cross_agent_ipc::Error as IpcError;
use cross_agent_protocol::bridge::{Agent, DeliveryState};
use cross_agent_protocol::rpc::{CarriedCounts, ErrorCode, StatusParams};
use cross_agent_testkit::endpoint::{Reply, Rule};
use pretty_assertions::assert_eq;

use super::bridge_support::{Bridge, spawn_daemon_process};
use super::{Running, TempHome, connect};

/// The turn requests whose prompt carries `needle`.
fn prompts_with(bridge: &Bridge, needle: &str) -> usize {
    bridge
        .endpoint
        .model_requests()
        .into_iter()
        .filter(|r| !r.side_request)
        .filter_map(|r| r.last_user_prompt)
        .filter(|p| p.contains(needle))
        .count()
}

/// The real binary's `daemon run` on `bridge`'s home: what a restart starts.
fn successor(bridge: &Bridge) -> std::process::Command {
    let mut command =
        std::process::Command::new(cross_agent_testkit::binaries::cross_agent_bin().unwrap());
    command
        .args(["daemon", "run"])
        .env("CROSS_AGENT_HOME", bridge.state.root())
        .env("HOME", bridge.state.dir.path().join("user"));
    command
}

async fn wait_gone(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while cross_agent_ipc::process::is_alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_drains_the_old_daemon_while_a_delivery_is_in_flight_and_nothing_is_lost_or_sent_twice()
 {
    let mut bridge = Bridge::start().await;
    let target = bridge.claude_session("seed upgrade");
    bridge.endpoint.push(
        Rule::on_user_text("slow upgrade job")
            .reply(Reply::echo_token("slow job done").delay(Duration::from_secs(8))),
    );
    bridge
        .endpoint
        .push(Rule::on_user_text("queued behind it").reply(Reply::echo_token("queued done")));
    bridge
        .endpoint
        .push(Rule::on_user_text("sent during the drain").reply(Reply::echo_token("drain done")));
    bridge.stop_daemon().await;
    let root = bridge.state.root().to_owned();
    let home = Home::at(&root).unwrap();
    let (mut old_process, old_conn) =
        spawn_daemon_process(&root, &bridge.state.dir.path().join("user"), &[]).await;
    let old = Who::from(&old_conn.hello);
    bridge.conn = old_conn;
    // What a `cross-agent mcp` holds: one kept connection, opened now, to the old daemon.
    let link = cross_agent_mcp::link::DaemonLink::with_home(home.clone());
    let seen = link
        .call(StatusParams {}, /*repeatable*/ true)
        .await
        .unwrap();
    assert_eq!(seen.daemon_pid, old.pid);

    let caller = bridge.codex_caller("019a0000-0000-7000-8000-000000000777");
    let mut slow = bridge.send_params(Agent::Claude, "slow upgrade job", caller.clone());
    slow.session_id = Some(target.clone());
    let mut behind = bridge.send_params(Agent::Claude, "queued behind it", caller.clone());
    behind.session_id = Some(target.clone());
    let slow = bridge.accepted(slow).await;
    let behind = bridge.accepted(behind).await;
    bridge
        .wait_record(&slow.delivery_id, Duration::from_secs(120), |r| {
            r.state == DeliveryState::AwaitingPeer
        })
        .await;
    // The model holds the slow turn's answer: the delivery is in flight.
    while prompts_with(&bridge, "slow upgrade job") == 0 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let outcome = handover::replace(&home, successor(&bridge), Duration::from_secs(30))
        .await
        .unwrap();
    let (new, carried) = match outcome {
        Outcome::Replaced {
            old: o,
            new,
            carried,
        } => {
            assert_eq!(o, old);
            (new, carried)
        }
        other => panic!("expected a replacement, got {other:?}"),
    };
    assert_ne!(new.pid, old.pid);
    assert_eq!(new.generation, old.generation + 1);
    assert_eq!(
        carried,
        CarriedCounts {
            turns_running: 1,
            answers_pending: 0,
            late_answer_watches: 0
        }
    );

    // A call on the old connection after the drain began is refused untaken ...
    let refused = bridge.conn.client.call(StatusParams {}).await;
    match refused {
        Err(IpcError::Rpc {
            code: ErrorCode::ShuttingDown,
            message,
            ..
        }) => assert!(message.contains(&new.pid.to_string()), "{message}"),
        other => panic!("expected shutting_down, got {other:?}"),
    }
    // ... and a new connection reaches the new daemon, which lists the old one as draining.
    bridge.conn = connect(&home).await;
    assert_eq!(Who::from(&bridge.conn.hello), new);
    let status = bridge.conn.client.call(StatusParams {}).await.unwrap();
    assert_eq!(status.generation, new.generation);
    assert_eq!(
        status
            .draining
            .iter()
            .map(|d| (d.pid, d.generation))
            .collect::<Vec<_>>(),
        vec![(old.pid, old.generation)]
    );
    let bridge_status = bridge.status(None).await;
    assert_eq!(bridge_status.server_process.pid, new.pid);
    assert_eq!(bridge_status.server_process.generation, new.generation);
    assert_eq!(
        bridge_status.server_process.draining[0].generation,
        old.generation
    );
    // The MCP link's kept connection is to the draining daemon: its send is refused untaken
    // there and goes to the new daemon, once.
    let mut during = bridge.send_params(Agent::Claude, "sent during the drain", caller);
    during.session_id = Some(target.clone());
    let during = match link.call(during, /*repeatable*/ false).await.unwrap() {
        cross_agent_protocol::bridge::SendResponse::Accepted(receipt) => receipt,
        other => panic!("{other:?}"),
    };
    assert!(
        !link.take_tools_changed(),
        "the same build: same tools version"
    );
    assert!(
        old_process.child.try_wait().unwrap().is_none(),
        "the old daemon still drains"
    );

    // The old daemon finishes its turn and exits; the queue goes out from the new one.
    let slow = bridge.wait_finished(&slow.delivery_id).await;
    assert_eq!(slow.state, DeliveryState::Delivered, "{slow:#?}");
    assert_eq!(slow.carrier_generation, Some(old.generation));
    assert!(
        slow.reply_preview
            .as_deref()
            .is_some_and(|r| r.contains("slow job done")),
        "{slow:#?}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while old_process.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the drained daemon did not exit");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(old_process.child.try_wait().unwrap().unwrap().success());
    for id in [&behind.delivery_id, &during.delivery_id] {
        let record = bridge.wait_finished(id).await;
        assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
        assert_eq!(record.carrier_generation, Some(new.generation));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for request_id in [&slow.request_id, &behind.request_id, &during.request_id] {
        assert_eq!(
            prompts_with(&bridge, request_id),
            1,
            "exactly once: {request_id}"
        );
    }
    let status = bridge.conn.client.call(StatusParams {}).await.unwrap();
    assert_eq!(status.draining, vec![]);

    cross_agent_ipc::process::terminate(new.pid).unwrap();
    assert!(wait_gone(new.pid, Duration::from_secs(20)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_whose_new_daemon_fails_is_refused_and_the_old_one_keeps_serving() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let before = connect(&temp.home).await;
    let mut broken = std::process::Command::new("/bin/sh");
    broken.args(["-c", "echo 'cannot open hub.db: disk full' >&2; exit 3"]);

    let outcome = handover::replace(&temp.home, broken, Duration::from_secs(10))
        .await
        .unwrap();
    match outcome {
        Outcome::Failed {
            old,
            detail,
            old_kept,
        } => {
            assert_eq!(old, Who::from(&before.hello));
            assert!(old_kept);
            assert!(
                detail.contains("exit status: 3") && detail.contains("disk full"),
                "{detail}"
            );
        }
        other => panic!("expected a failure, got {other:?}"),
    }

    // The old one still holds the home and answers old and new connections.
    assert_eq!(
        pidfile::probe(&temp.home.pidfile()).unwrap(),
        Holder::Held(Some(std::process::id()))
    );
    let status = before.client.call(StatusParams {}).await.unwrap();
    assert_eq!(status.generation, daemon.info.generation);
    assert_eq!(status.draining, vec![]);
    let after = connect(&temp.home).await;
    assert_eq!(after.hello.generation, daemon.info.generation);
    assert!(cross_agent_ipc::draining::list(&temp.home).is_empty());
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successor_that_never_answers_is_stopped_and_the_old_one_keeps_serving() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let mut silent = std::process::Command::new("/bin/sh");
    silent.args(["-c", "sleep 60"]);
    let outcome = handover::replace(&temp.home, silent, Duration::from_secs(1))
        .await
        .unwrap();
    match outcome {
        Outcome::Failed {
            detail, old_kept, ..
        } => {
            assert!(old_kept);
            assert!(detail.contains("did not answer within"), "{detail}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    let after = connect(&temp.home).await;
    assert_eq!(after.hello.generation, daemon.info.generation);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_running_is_nothing_to_replace() {
    let temp = TempHome::new();
    temp.home.ensure_root().unwrap();
    let outcome = handover::replace(
        &temp.home,
        std::process::Command::new("/bin/false"),
        Duration::from_secs(1),
    )
    .await
    .unwrap();
    assert_eq!(outcome, Outcome::NotRunning);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_that_goes_away_after_release_leaves_the_old_daemon_holding_its_home() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let driver = connect(&temp.home).await;
    driver
        .client
        .call(cross_agent_protocol::rpc::HandoverParams {
            step: cross_agent_protocol::rpc::HandoverStep::Release,
        })
        .await
        .unwrap();
    assert_eq!(
        pidfile::probe(&temp.home.pidfile()).unwrap(),
        Holder::Free,
        "released for a successor"
    );
    assert_eq!(
        cross_agent_ipc::draining::live_generations(&temp.home),
        vec![daemon.info.generation]
    );
    drop(driver);

    let deadline = Instant::now() + Duration::from_secs(5);
    while pidfile::probe(&temp.home.pidfile()).unwrap() == Holder::Free
        || !cross_agent_ipc::draining::list(&temp.home).is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the home was never taken back: {:?}",
            cross_agent_ipc::draining::list(&temp.home)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = connect(&temp.home).await;
    assert_eq!(after.hello.generation, daemon.info.generation);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_stops_a_draining_daemon_and_its_turn_with_it() {
    let mut bridge = Bridge::start().await;
    let target = bridge.claude_session("seed drain signal");
    bridge.endpoint.push(
        Rule::on_user_text("never ending job")
            .reply(Reply::hang())
            .once(),
    );
    bridge.stop_daemon().await;
    let root = bridge.state.root().to_owned();
    let home = Home::at(&root).unwrap();
    let (mut old_process, old_conn) =
        spawn_daemon_process(&root, &bridge.state.dir.path().join("user"), &[]).await;
    let old = Who::from(&old_conn.hello);
    bridge.conn = old_conn;
    let mut params = bridge.send_params(
        Agent::Claude,
        "never ending job",
        bridge.codex_caller("019a0000-0000-7000-8000-000000000778"),
    );
    params.session_id = Some(target);
    let receipt = bridge.accepted(params).await;
    let running = bridge
        .wait_record(&receipt.delivery_id, Duration::from_secs(120), |r| {
            r.state == DeliveryState::AwaitingPeer
        })
        .await;
    let peer = running.peer_pid.unwrap();

    let new = match handover::replace(&home, successor(&bridge), Duration::from_secs(30))
        .await
        .unwrap()
    {
        Outcome::Replaced { new, .. } => new,
        other => panic!("expected a replacement, got {other:?}"),
    };
    bridge.conn = connect(&home).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        old_process.child.try_wait().unwrap().is_none(),
        "still draining"
    );

    cross_agent_ipc::process::terminate(old.pid).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while old_process.child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "the signal did not stop the drain"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Failed);
    assert!(record.is_stopped_with_carrier, "{record:#?}");
    assert!(!cross_agent_transports::process::group_alive(peer));
    assert_eq!(
        bridge
            .conn
            .client
            .call(StatusParams {})
            .await
            .unwrap()
            .draining,
        vec![]
    );

    cross_agent_ipc::process::terminate(new.pid).unwrap();
    assert!(wait_gone(new.pid, Duration::from_secs(20)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successor_that_dies_after_taking_the_socket_gives_it_back_to_the_old_one() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    // Binds a socket beside the path, moves it over `daemon.sock` as a successor does, and
    // dies: the path now leads nowhere.
    let script = "import os, socket, sys\n\
                  path = os.environ['CROSS_AGENT_HOME'] + '/daemon.sock'\n\
                  s = socket.socket(socket.AF_UNIX)\n\
                  s.bind(path + '.dying')\n\
                  os.rename(path + '.dying', path)\n\
                  sys.exit(5)\n";
    let mut dying = std::process::Command::new("python3");
    dying.args(["-c", script]);
    let outcome = handover::replace(&temp.home, dying, Duration::from_secs(10))
        .await
        .unwrap();
    match outcome {
        Outcome::Failed {
            detail, old_kept, ..
        } => {
            assert!(old_kept);
            assert!(detail.contains("exit status: 5"), "{detail}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let after = loop {
        match cross_agent_ipc::connect(&temp.home, &super::options()).await {
            Ok(connection) => break connection,
            Err(error) => {
                assert!(
                    Instant::now() < deadline,
                    "the socket was not taken back: {error}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    assert_eq!(after.hello.generation, daemon.info.generation);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_that_goes_away_after_the_successor_took_the_home_leaves_the_old_one_draining() {
    let temp = TempHome::new();
    let old = Running::start(&temp.home);
    let driver = connect(&temp.home).await;
    driver
        .client
        .call(cross_agent_protocol::rpc::HandoverParams {
            step: cross_agent_protocol::rpc::HandoverStep::Release,
        })
        .await
        .unwrap();
    let successor = cross_agent_daemon::Daemon::bind_replacing(temp.home.clone()).unwrap();
    let new_generation = successor.info().generation;
    let (stop_new, stopped) = tokio::sync::oneshot::channel::<()>();
    let new = tokio::spawn(successor.run(async move {
        let _ = stopped.await;
    }));
    drop(driver);

    // Nothing carried: the old one drains at once and returns; the successor keeps the home.
    tokio::time::timeout(Duration::from_secs(10), old.join())
        .await
        .expect("the old daemon drained and stopped");
    let after = connect(&temp.home).await;
    assert_eq!(after.hello.generation, new_generation);
    assert_eq!(
        pidfile::probe(&temp.home.pidfile()).unwrap(),
        Holder::Held(Some(std::process::id()))
    );
    drop(after);
    stop_new.send(()).unwrap();
    new.await.unwrap().unwrap();
}
