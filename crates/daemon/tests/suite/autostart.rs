//! `connect_or_start` when the daemon program misbehaves: every failure is bounded in time and
//! names the console log. (Autostart of the real binary is tested in `crates/cross-agent`.)

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use cross_agent_ipc::{ConnectOptions, Error};

use super::{Running, TempHome, options};

fn script(temp: &TempHome, name: &str, body: &str) -> PathBuf {
    let path = temp.dir.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn with_bin(bin: PathBuf, start_timeout: Duration) -> ConnectOptions {
    ConnectOptions {
        daemon_bin: Some(bin),
        start_timeout,
        ..options()
    }
}

#[tokio::test]
async fn a_daemon_that_dies_at_once_fails_fast_quoting_its_log() {
    let temp = TempHome::new();
    let bin = script(
        &temp,
        "dies",
        "echo 'refusing to start: no reason' >&2; exit 2",
    );
    // A deadline far past anything a start takes, and no clock read: a caller that waited for
    // it would get the timeout's error ("did not come up"), which is asserted against below.
    let error =
        cross_agent_ipc::connect_or_start(&temp.home, &with_bin(bin, Duration::from_secs(300)))
            .await
            .unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, Error::DaemonFailed { .. }), "{error:?}");
    // Its own reason, first; not dressed as a timeout.
    assert!(
        message.starts_with("the cross-agent daemon could not start: refusing to start: no reason"),
        "{message}"
    );
    assert!(!message.contains("did not come up"), "{message}");
    assert!(message.contains("exit code 2"), "{message}");
    assert!(
        message.contains("refusing to start: no reason"),
        "{message}"
    );
    assert!(message.contains("daemon-console.log"), "{message}");
}

#[tokio::test]
async fn a_daemon_that_never_answers_fails_at_the_deadline() {
    let temp = TempHome::new();
    let bin = script(&temp, "hangs", "exec sleep 30");
    let error =
        cross_agent_ipc::connect_or_start(&temp.home, &with_bin(bin, Duration::from_millis(500)))
            .await
            .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("nothing answers on"), "{message}");
    assert!(message.contains("daemon-console.log"), "{message}");
}

#[tokio::test]
async fn a_daemon_that_exits_quietly_is_started_again_a_bounded_number_of_times() {
    let temp = TempHome::new();
    let count = temp.dir.path().join("count");
    let bin = script(&temp, "quits", &format!("echo x >> {}", count.display()));
    let error =
        cross_agent_ipc::connect_or_start(&temp.home, &with_bin(bin, Duration::from_secs(20)))
            .await
            .unwrap_err();
    assert!(error.to_string().contains("3 times"), "{error}");
    assert_eq!(std::fs::read_to_string(count).unwrap().lines().count(), 3);
}

#[tokio::test]
async fn a_running_daemon_is_used_and_nothing_is_spawned() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let bin = script(&temp, "never", "exit 9");
    let connection =
        cross_agent_ipc::connect_or_start(&temp.home, &with_bin(bin, Duration::from_secs(60)))
            .await
            .unwrap();
    assert!(!connection.started);
    assert_eq!(connection.hello.generation, daemon.info.generation);
    daemon.stop().await;
}
