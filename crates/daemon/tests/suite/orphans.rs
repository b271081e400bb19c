//! A daemon whose home is no longer its own stops by itself: its socket removed or replaced,
//! its pidfile rewritten, or the whole home deleted (a test's temporary directory cleaned up
//! under it). Such a daemon can no longer be reached by any client of the home, so running on
//! would only leave an orphan — one that used to re-create the deleted home's `telegram/` and
//! `cache/` while it polled.

use std::time::{Duration, Instant};

use cross_agent_testkit::telegram::FakeBotApi;

use super::bridge_support::spawn_daemon_process;
use super::{Running, TempHome};

/// A ceiling for the daemon to notice (it looks every few seconds) and stop; not a speed claim.
const NOTICE: Duration = Duration::from_secs(60);

async fn stops_by_itself(daemon: Running) {
    let Running { stop, task, .. } = daemon;
    let ended = tokio::time::timeout(NOTICE, task).await;
    drop(stop);
    ended
        .expect("the daemon kept running after losing its home")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_daemon_whose_socket_is_removed_stops() {
    let home = TempHome::new();
    let daemon = Running::start(&home.home);
    std::fs::remove_file(home.home.socket()).unwrap();
    stops_by_itself(daemon).await;
    assert!(!home.home.socket().exists());
}

#[tokio::test]
async fn a_daemon_whose_socket_is_replaced_stops_and_leaves_the_new_one_alone() {
    let home = TempHome::new();
    let daemon = Running::start(&home.home);
    std::fs::remove_file(home.home.socket()).unwrap();
    // Another socket at the path (another daemon's, say): not this daemon's to remove.
    let other = std::os::unix::net::UnixListener::bind(home.home.socket()).unwrap();
    stops_by_itself(daemon).await;
    assert!(home.home.socket().exists(), "the other socket was removed");
    drop(other);
}

#[tokio::test]
async fn a_daemon_whose_pidfile_names_another_process_stops() {
    let home = TempHome::new();
    let daemon = Running::start(&home.home);
    std::fs::write(home.home.pidfile(), "1\n").unwrap();
    stops_by_itself(daemon).await;
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
    let (mut process, conn) = spawn_daemon_process(&root, &user, &env).await;
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

    std::fs::remove_dir_all(&root).unwrap();
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
    cross_agent_testkit::leaks::assert_none_left(&root, cross_agent_testkit::leaks::SETTLE)
        .unwrap();
}
