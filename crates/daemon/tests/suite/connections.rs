//! The connection cap and the idle timeout, on a daemon serving in-process with limits of the
//! test's own: one connection past the cap is told why (naming the cap and the setting that
//! raises it) and the cap frees as clients go; a connection idle past the timeout is closed,
//! but not the restart's connection waiting between a handover's `release` and its end.

use std::time::Duration;

use cross_agent_daemon::{ConnectionLimits, Daemon};
use cross_agent_ipc::Error;
use cross_agent_protocol::rpc::{ErrorCode, HandoverParams, HandoverStep, StatusParams};

use super::{Raw, Running, TempHome, connect, options};

/// A ceiling for the daemon to close an idle connection (the timeout is one second); never a
/// measure: a pass returns as soon as the connection closes.
const NOTICE: Duration = Duration::from_secs(60);

fn serve(home: &TempHome, limits: ConnectionLimits) -> Running {
    Running::serve(
        Daemon::bind(home.home.clone())
            .unwrap()
            .with_connection_limits(limits),
    )
}

/// Waits for the daemon to close `raw` (its next read ends), failing at [`NOTICE`].
async fn closed_by_the_daemon(raw: &mut Raw) {
    let next = tokio::time::timeout(NOTICE, raw.recv())
        .await
        .expect("the idle connection was never closed");
    assert_eq!(next, None, "the daemon sent something instead of closing");
}

#[tokio::test]
async fn a_connection_past_the_cap_is_told_why_and_the_cap_frees_as_clients_go() {
    let home = TempHome::new();
    let daemon = serve(&home, ConnectionLimits::new(2, None));
    let first = connect(&home.home).await;
    let second = connect(&home.home).await;

    let refused = cross_agent_ipc::connect(&home.home, &options())
        .await
        .unwrap_err();
    let Error::Rpc { code, message, .. } = &refused else {
        panic!("expected the daemon's refusal, got {refused:?}");
    };
    assert_eq!(*code, ErrorCode::TooManyConnections);
    assert!(
        message.contains(&format!(
            "the cross-agent daemon (pid {}) already serves 2 connections",
            daemon.info.pid
        )),
        "{message}"
    );
    assert!(
        message.contains("`CROSS_AGENT_DAEMON_MAX_CONNECTIONS=4 cross-agent daemon restart`"),
        "{message}"
    );
    // Autostart takes the refusal for an answer: it does not start a second daemon.
    let through_autostart = cross_agent_ipc::connect_or_start(&home.home, &options())
        .await
        .unwrap_err();
    assert!(
        matches!(
            through_autostart,
            Error::Rpc {
                code: ErrorCode::TooManyConnections,
                ..
            }
        ),
        "{through_autostart:?}"
    );

    // The ones served go on being served.
    first.client.call(StatusParams {}).await.unwrap();
    // One goes; its place is given to the next client once the daemon has seen it go.
    drop(second);
    let third = loop {
        match cross_agent_ipc::connect(&home.home, &options()).await {
            Ok(connection) => break connection,
            Err(Error::Rpc {
                code: ErrorCode::TooManyConnections,
                ..
            }) => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(other) => panic!("{other:?}"),
        }
    };
    let status = third.client.call(StatusParams {}).await.unwrap();
    assert_eq!(status.daemon_pid, daemon.info.pid);
    drop((first, third));
    daemon.stop().await;
}

#[tokio::test]
async fn a_connection_idle_past_the_timeout_is_closed() {
    let home = TempHome::new();
    let daemon = serve(
        &home,
        ConnectionLimits::new(8, Some(Duration::from_secs(1))),
    );
    // Before `hello` and after it alike.
    let mut silent = Raw::connect(&home.home.socket()).await;
    let mut greeted = Raw::connect(&home.home.socket()).await;
    greeted.hello().await;
    closed_by_the_daemon(&mut silent).await;
    closed_by_the_daemon(&mut greeted).await;
    daemon.stop().await;
}

#[tokio::test]
async fn a_restart_waiting_between_release_and_its_end_is_not_cut_as_idle() {
    let home = TempHome::new();
    let daemon = serve(
        &home,
        ConnectionLimits::new(8, Some(Duration::from_secs(1))),
    );
    let restart = connect(&home.home).await;
    restart
        .client
        .call(HandoverParams {
            step: HandoverStep::Release,
        })
        .await
        .unwrap();
    // A connection opened after the release, idle, is closed: the restart's has by then been
    // idle longer than the timeout.
    let mut probe = Raw::connect(&home.home.socket()).await;
    closed_by_the_daemon(&mut probe).await;
    restart
        .client
        .call(HandoverParams {
            step: HandoverStep::Abort {
                reason: "the test is over".to_owned(),
            },
        })
        .await
        .expect("the restart's connection was kept");
    let status = restart.client.call(StatusParams {}).await.unwrap();
    assert_eq!(status.daemon_pid, daemon.info.pid);
    drop(restart);
    daemon.stop().await;
}
