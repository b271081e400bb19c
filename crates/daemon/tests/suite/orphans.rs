//! A daemon whose home is no longer its own stops by itself: its socket removed or replaced,
//! its pidfile rewritten, or the whole home deleted (a test's temporary directory cleaned up
//! under it). Such a daemon can no longer be reached by any client of the home, so running on
//! would only leave an orphan — one that used to re-create the deleted home's `telegram/` and
//! `cache/` while it polled.

use std::time::{Duration, Instant};

use cross_agent_daemon::Daemon;
use cross_agent_home::Home;
use cross_agent_testkit::telegram::FakeBotApi;
use tokio::sync::oneshot;
use tracing::instrument::WithSubscriber as _;
use tracing_appender::non_blocking::WorkerGuard;

use super::bridge_support::spawn_daemon_command;
use super::{Running, TempHome};

/// A ceiling for the daemon to notice (it looks every few seconds) and stop; not a speed claim.
const NOTICE: Duration = Duration::from_secs(60);

/// What the daemon logs as its reason to stop when the home watch finds the home lost.
const HOME_WATCH_STOP: &str = r#"reason="its home is gone or taken (home watch)""#;

/// Like [`Running::start`], with the daemon's real log (`logs/` in its home) installed for its
/// serving loop, so the test can read why it stopped. Keep the guard until the daemon stopped.
fn start_logged(home: &Home) -> (Running, WorkerGuard) {
    let daemon = Daemon::bind(home.clone()).unwrap();
    let (log, guard) = cross_agent_daemon::logging::dispatch(home, /*also_stderr*/ false).unwrap();
    let info = daemon.info().clone();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(
        daemon
            .run(async move {
                let _ = stopped.await;
            })
            .with_subscriber(log),
    );
    let running = Running {
        info,
        stop: Some(stop),
        task,
    };
    (running, guard)
}

/// Waits for the daemon to stop without being asked, and asserts it stopped because its home
/// watch found `why` — not for any other reason.
async fn stops_by_itself(home: &Home, (daemon, log): (Running, WorkerGuard), why: &str) {
    let Running { stop, task, .. } = daemon;
    let ended = tokio::time::timeout(NOTICE, task).await;
    drop(stop);
    ended
        .expect("the daemon kept running after losing its home")
        .unwrap()
        .unwrap();
    drop(log); // flushes the log
    let log = daemon_log(home);
    assert!(log.contains(&format!("why=\"{why}\"")), "{log}");
    assert!(log.contains(HOME_WATCH_STOP), "{log}");
}

/// The daemon's log files, concatenated.
fn daemon_log(home: &Home) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(home.logs_dir()).unwrap().flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(cross_agent_daemon::logging::LOG_PREFIX)
        {
            all.push_str(&std::fs::read_to_string(entry.path()).unwrap());
        }
    }
    all
}

#[tokio::test]
async fn a_daemon_whose_socket_is_removed_stops() {
    let home = TempHome::new();
    let daemon = start_logged(&home.home);
    std::fs::remove_file(home.home.socket()).unwrap();
    stops_by_itself(&home.home, daemon, "daemon.sock is gone").await;
    assert!(!home.home.socket().exists());
}

#[tokio::test]
async fn a_daemon_whose_socket_is_replaced_stops_and_leaves_the_new_one_alone() {
    let home = TempHome::new();
    let daemon = start_logged(&home.home);
    std::fs::remove_file(home.home.socket()).unwrap();
    // Another socket at the path (another daemon's, say): not this daemon's to remove.
    let other = std::os::unix::net::UnixListener::bind(home.home.socket()).unwrap();
    stops_by_itself(
        &home.home,
        daemon,
        "daemon.sock is no longer the socket this daemon bound",
    )
    .await;
    assert!(home.home.socket().exists(), "the other socket was removed");
    drop(other);
}

#[tokio::test]
async fn a_daemon_whose_pidfile_names_another_process_stops() {
    let home = TempHome::new();
    let daemon = start_logged(&home.home);
    std::fs::write(home.home.pidfile(), "1\n").unwrap();
    stops_by_itself(
        &home.home,
        daemon,
        "daemon.pid is gone, replaced or names another process",
    )
    .await;
}

/// The real process with the Telegram poller writing its files: the home deleted, the daemon
/// exits and nothing of the home comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_whose_home_is_deleted_exits_and_re_creates_nothing() {
    let token = format!("4242:SECRET{}", uuid::Uuid::new_v4().simple());
    let api = FakeBotApi::start(&token, "orphan_bot").unwrap();
    let home = TempHome::new();
    let root = home.root().to_owned();
    cross_agent_telegram::store::write_token(&root, &token).unwrap();
    let user = home.dir.path().join("user");
    let env = [
        ("CROSS_AGENT_TELEGRAM_API", api.base_url()),
        ("CROSS_AGENT_TELEGRAM_POLL_TIMEOUT", "1"),
    ];
    // The log in the home goes with it: the foreground daemon's stderr copy, kept outside the
    // home, says why it stopped.
    let stderr_path = home.dir.path().join("daemon.stderr");
    let mut command =
        std::process::Command::new(cross_agent_testkit::binaries::cross_agent_bin().unwrap());
    command
        .args(["daemon", "run"])
        .envs(env)
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    let (mut process, conn) = spawn_daemon_command(&root, &user, command).await;
    drop(conn);
    // The poller is at work: it rewrites `telegram/status.json` as it polls.
    let status = root.join("telegram/status.json");
    let deadline = Instant::now() + NOTICE;
    while !status.exists() {
        assert!(
            Instant::now() < deadline,
            "the poller never wrote its status"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The daemon still writes while the folder goes (the poller's status, the index), so one
    // pass can meet a file created behind it; remove again until the home is gone.
    let deadline = Instant::now() + NOTICE;
    while let Err(error) = std::fs::remove_dir_all(&root) {
        if !root.exists() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the home could not be removed: {error}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let deadline = Instant::now() + NOTICE;
    let exit = loop {
        if let Some(exit) = process.child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "the daemon kept running in a deleted home"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        !root.exists(),
        "the daemon (exit {exit}) re-created its deleted home: {:?}",
        std::fs::read_dir(&root).map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
    );
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(
        stderr.contains(r#"why="the home directory is gone""#),
        "{stderr}"
    );
    assert!(stderr.contains(HOME_WATCH_STOP), "{stderr}");
    cross_agent_testkit::leaks::assert_none_left(&root, cross_agent_testkit::leaks::SETTLE)
        .unwrap();
}
