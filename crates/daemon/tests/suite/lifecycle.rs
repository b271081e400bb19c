//! Start-up under the lock, stale leftovers, generations, and both ways of stopping.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use cross_agent_daemon::Daemon;
use cross_agent_home::pidfile::{self, Holder};
use cross_agent_hub::db::HubDb;
use cross_agent_ipc::Error;
use cross_agent_protocol::rpc::{ShutdownParams, StatusParams};
use pretty_assertions::assert_eq;

use super::{Running, TempHome, connect};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn the_generation_increments_on_every_start() {
    let temp = TempHome::new();
    for expected in 1..=3 {
        let daemon = Running::start(&temp.home);
        assert_eq!(daemon.info.generation, expected);
        assert_eq!(connect(&temp.home).await.hello.generation, expected);
        daemon.stop().await;
    }
    let db = HubDb::open(&temp.home.hub_db()).unwrap();
    for generation in 1..=3 {
        assert!(
            db.stopped_at(generation).unwrap().is_some(),
            "generation {generation} recorded its stop"
        );
    }
}

#[tokio::test]
async fn a_second_daemon_on_the_same_home_is_refused_naming_the_first() {
    let temp = TempHome::new();
    let first = Running::start(&temp.home);
    let error = Daemon::bind(temp.home.clone()).unwrap_err();
    let (pid, pidfile) = error.already_running().expect("AlreadyRunning");
    assert_eq!(pid, Some(std::process::id()));
    assert_eq!(pidfile, temp.home.pidfile());
    let message = error.to_string();
    assert!(
        message.contains("already running") && message.contains("daemon.pid"),
        "{message}"
    );

    // The refused start changed nothing: the first still answers with its generation.
    assert_eq!(connect(&temp.home).await.hello.generation, 1);
    first.stop().await;
}

#[tokio::test]
async fn a_stale_socket_and_a_stale_pidfile_are_recovered() {
    let temp = TempHome::new();
    temp.home.ensure_root().unwrap();
    // A socket file nobody listens on, as a killed daemon leaves it.
    drop(std::os::unix::net::UnixListener::bind(temp.home.socket()).unwrap());
    assert!(temp.home.socket().exists());
    // A pidfile naming a process that does not exist, unlocked.
    std::fs::write(temp.home.pidfile(), "2147483000\n").unwrap();
    assert_eq!(pidfile::probe(&temp.home.pidfile()).unwrap(), Holder::Free);

    let daemon = Running::start(&temp.home);
    assert_eq!(
        std::fs::read_to_string(temp.home.pidfile()).unwrap(),
        format!("{}\n", std::process::id())
    );
    connect(&temp.home)
        .await
        .client
        .call(StatusParams {})
        .await
        .unwrap();
    daemon.stop().await;
}

#[tokio::test]
async fn something_else_at_the_socket_path_is_an_error_naming_it() {
    let temp = TempHome::new();
    temp.home.ensure_root().unwrap();
    std::fs::write(temp.home.socket(), "not a socket").unwrap();
    let error = Daemon::bind(temp.home.clone()).unwrap_err();
    assert!(
        matches!(
            error,
            cross_agent_daemon::Error::Ipc(Error::NotASocket { .. })
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("daemon.sock"));
    // The failed start released the lock and recorded its stop.
    assert_eq!(pidfile::probe(&temp.home.pidfile()).unwrap(), Holder::Free);
    let db = HubDb::open(&temp.home.hub_db()).unwrap();
    assert!(db.stopped_at(1).unwrap().is_some());
}

#[tokio::test]
async fn the_shutdown_call_answers_then_stops_and_cleans_up() {
    let temp = TempHome::new();
    let daemon = Running::start(&temp.home);
    let connection = connect(&temp.home).await;
    let answer = connection
        .client
        .call(ShutdownParams {
            reason: Some("test".into()),
        })
        .await
        .unwrap();
    assert_eq!(
        (answer.daemon_pid, answer.generation),
        (std::process::id(), 1)
    );
    tokio::time::timeout(Duration::from_secs(10), daemon.join())
        .await
        .expect("run returns after a shutdown call");

    assert!(!temp.home.socket().exists(), "the socket is removed");
    assert_eq!(pidfile::probe(&temp.home.pidfile()).unwrap(), Holder::Free);
    assert!(matches!(
        cross_agent_ipc::connect(&temp.home, &super::options()).await,
        Err(Error::NotRunning { .. })
    ));
}

#[tokio::test]
async fn an_idle_connection_does_not_hold_up_the_stop() {
    let temp = TempHome::new();
    // The drain timeout is raised to an hour, so a stop that waited on the idle client would
    // hang past the generous ceiling below instead of taking a few seconds more: the ceiling
    // tells the two apart on any machine, however loaded, without reading a clock.
    let daemon = Running::serve(
        Daemon::bind(temp.home.clone())
            .unwrap()
            .with_drain_timeout(Duration::from_secs(3600)),
    );
    let idle = connect(&temp.home).await;
    tokio::time::timeout(Duration::from_secs(120), daemon.stop())
        .await
        .expect("stop does not wait for idle clients");
    assert!(matches!(
        idle.client.call(StatusParams {}).await,
        Err(Error::Closed { .. })
    ));
}

#[tokio::test]
async fn an_old_install_with_loose_modes_is_tightened_at_start() {
    let temp = TempHome::new();
    let root = temp.root().to_owned();
    std::fs::create_dir_all(root.join("panels")).unwrap();
    std::fs::write(root.join("panels/old.json"), "{}").unwrap();
    std::fs::write(root.join("notes.txt"), "x").unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(root.join("panels"), std::fs::Permissions::from_mode(0o775)).unwrap();
    std::fs::set_permissions(
        root.join("panels/old.json"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::fs::set_permissions(
        root.join("notes.txt"),
        std::fs::Permissions::from_mode(0o666),
    )
    .unwrap();

    let daemon = Running::start(&temp.home);
    assert_eq!(mode(&root), 0o700);
    assert_eq!(mode(&root.join("panels")), 0o700);
    assert_eq!(mode(&root.join("panels/old.json")), 0o600);
    assert_eq!(mode(&root.join("notes.txt")), 0o600);
    for created in [temp.home.hub_db(), temp.home.pidfile(), temp.home.socket()] {
        assert_eq!(
            mode(&created) & 0o077,
            0,
            "{} is owner-only",
            created.display()
        );
    }
    daemon.stop().await;
}
