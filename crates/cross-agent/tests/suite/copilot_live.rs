//! Copilot's live hosts through the daemon's host watcher, with the real binary, a
//! `FakeAgentHost` (VS Code's Agent Host, from the protocol's docs) and temporary homes: a host
//! that starts shows its own sessions in `cross-agent sessions --agent copilot` (no catalog
//! needed), a session it adds, renames or removes at runtime follows within a bounded wait, and
//! its sessions go when it stops; a host whose entry holds a wrong token, or a socket that
//! answers garbage, is a warning naming its entry (never the token) and does not stop the
//! others. The index's periodic re-walk is off, so what shows was brought by the watcher.

use std::io::Write as _;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use cross_agent_testkit::agent_host::{FakeAgentHost, FakeSession};
use cross_agent_testkit::synthetic_stores::CopilotEditor;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");
/// How long a change may take to show through the daemon: a bound, not a timing.
const PATIENCE: Duration = Duration::from_secs(60);
const DIRECT_NOTE: &str = "reading the stores directly";

/// A temporary user with VS Code Stable's user data directory and no catalog in it.
struct User {
    _dir: tempfile::TempDir,
    home: PathBuf,
    state: PathBuf,
    user_data: PathBuf,
}

impl User {
    fn new() -> User {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("user");
        let state = dir.path().join("state");
        let user_data = home.join(".config/Code");
        std::fs::create_dir_all(&user_data).unwrap();
        User {
            _dir: dir,
            home,
            state,
            user_data,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .env("HOME", &self.home)
            .env("CROSS_AGENT_HOME", &self.state)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("COPILOT_HOME")
            .env_remove("CROSS_AGENT_COPILOT_HOST_DB")
            .env_remove("CROSS_AGENT_COPILOT_SESSION_DIR")
            .env_remove("CROSS_AGENT_COPILOT_SDK_SESSION_DIR")
            .env_remove("CROSS_AGENT_COPILOT_ENDPOINT_DIR")
            .env_remove("CROSS_AGENT_DAEMON_BIN")
            .env_remove("CROSS_AGENT_INDEX_NOTIFY")
            // No periodic re-walk: what the daemon shows, the host watcher (or a notification)
            // brought.
            .env("CROSS_AGENT_INDEX_REWALK_MS", "3600000")
            .current_dir(&self.home)
            .output()
            .unwrap()
    }

    /// The Copilot listing through the daemon.
    fn copilot(&self) -> Vec<Value> {
        let out = self.run(&["sessions", "--agent", "copilot", "--json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            !stderr.contains(DIRECT_NOTE),
            "not through the daemon: {stderr}"
        );
        let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
        listing["copilot"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until the listing satisfies `done`; the last listing either way.
    fn wait_for(&self, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let listing = self.copilot();
            if done(&listing) {
                return listing;
            }
            assert!(
                Instant::now() < deadline,
                "{what} within {PATIENCE:?}; the listing: {listing:#?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn daemon_log(&self) -> String {
        cross_agent_testkit::logs::daemon_log(&self.state)
    }
}

impl Drop for User {
    fn drop(&mut self) {
        cross_agent_testkit::leaks::stop_daemons(&self.state, cross_agent_testkit::leaks::SETTLE);
    }
}

/// The editor UUID of a fake session (its URI's path).
fn id_of(session: &FakeSession) -> String {
    session.uri().split_once(":/").unwrap().1.to_owned()
}

fn entry<'a>(listing: &'a [Value], id: &str) -> Option<&'a Value> {
    listing.iter().find(|s| s["session_id"] == id)
}

fn title_of(listing: &[Value], id: &str) -> Option<String> {
    entry(listing, id).and_then(|s| s["title"].as_str().map(str::to_owned))
}

#[test]
fn a_live_hosts_own_sessions_show_and_follow_it_through_the_daemon() {
    let user = User::new();
    // The daemon runs before the host starts: the host must show up by itself.
    assert!(user.copilot().is_empty());

    let first = FakeSession::new("Fix the parser")
        .cwd("file:///work/parser")
        .modified_at("2026-12-02T17:59:00.000Z");
    let id = id_of(&first);
    // A session whose chat runs the user's turn: in progress, as only the host can tell.
    let busy = FakeSession::new("Busy one").busy();
    let busy_id = id_of(&busy);
    let host = FakeAgentHost::builder(&user.user_data)
        .session(first.clone())
        .session(busy)
        .start()
        .unwrap();
    let listing = user.wait_for("the host's session shows", |l| entry(l, &id).is_some());
    let working = entry(&listing, &busy_id).unwrap();
    assert_eq!(working["copilot"]["in_progress"], true);
    assert_eq!(working["is_working"], true);
    let out = user.run(&["sessions", "--agent", "copilot"]);
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table.lines().find(|l| l.contains(&busy_id)).unwrap();
    assert!(row.contains("working,host-live"), "{row}");
    let shown = entry(&listing, &id).unwrap();
    assert_eq!(shown["title"], "Fix the parser");
    assert_eq!(shown["cwd"], "/work/parser");
    assert_eq!(shown["copilot"]["live"], true);
    assert_eq!(shown["copilot"]["session_uri"], first.uri());
    assert_eq!(shown["copilot"]["default_chat"], first.chat_uri());
    assert_eq!(shown["copilot"]["working_directories"][0], "/work/parser");
    assert_eq!(shown["last_activity"], "2026-12-02T17:59:00.000Z");

    // A session added at runtime, then a rename, then a removal.
    let second = FakeSession::new("Second thoughts").archived();
    let second_id = id_of(&second);
    host.add_session(second.clone());
    let listing = user.wait_for("the added session shows", |l| {
        entry(l, &second_id).is_some()
    });
    assert_eq!(
        entry(&listing, &second_id).unwrap()["copilot"]["archived"],
        true
    );
    host.rename_session(&first.uri(), "Fix the lexer");
    user.wait_for("the rename shows", |l| {
        title_of(l, &id).as_deref() == Some("Fix the lexer")
    });
    host.remove_session(&second.uri());
    user.wait_for("the removed session goes", |l| {
        entry(l, &second_id).is_none()
    });
    host.remove_session(&format!("copilotcli:/{busy_id}"));

    // The host stops: with no catalog, its sessions go too.
    drop(host);
    user.wait_for("the stopped host's sessions go", |l| l.is_empty());
}

/// A Unix socket that answers every connection with bytes that are not HTTP, then closes.
fn garbage_socket(dir: &Path) -> PathBuf {
    let socket = dir.join("garbage.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.write_all(b"\x00\xffthis is not a websocket\r\n\r\n");
        }
    });
    socket
}

#[test]
fn a_wrong_token_or_a_garbage_host_does_not_stop_the_others_from_listing() {
    let user = User::new();
    let good = FakeSession::new("The good one");
    let good_id = id_of(&good);
    // A host whose entry is fine, and one whose entry carries the wrong token (as a stale
    // entry would): its socket answers 403.
    let host = FakeAgentHost::builder(&user.user_data)
        .session(good)
        .start()
        .unwrap();
    let other_user_data = user.home.join("other");
    let locked = FakeAgentHost::builder(&other_user_data)
        .session(FakeSession::new("Never listed"))
        .start()
        .unwrap();
    let editor = CopilotEditor::new(&user.user_data);
    const WRONG: &str = "wrong-token-never-logged-4f1c";
    let wrong_entry = editor
        .endpoint(std::process::id(), "stale", locked.socket(), WRONG)
        .unwrap();
    let garbage = garbage_socket(user._dir.path());
    let garbage_entry = editor
        .endpoint(std::process::id(), "garbage", &garbage, "tkn-garbage-5e2d")
        .unwrap();

    let listing = user.wait_for("the good host's session shows", |l| {
        entry(l, &good_id).is_some()
    });
    assert_eq!(listing.len(), 1, "{listing:#?}");
    assert!(
        wait(|| locked.refused_upgrades() > 0),
        "the wrong token was tried and refused"
    );
    // Each bad entry is a warning naming its file, and no token reaches the log.
    assert!(
        wait(|| {
            let log = user.daemon_log();
            log.contains(&wrong_entry.display().to_string())
                && log.contains(&garbage_entry.display().to_string())
        }),
        "both bad entries named in the log:\n{}",
        user.daemon_log()
    );
    let log = user.daemon_log();
    for secret in [WRONG, "tkn-garbage-5e2d", host.token(), locked.token()] {
        assert!(!log.contains(secret), "a token reached the log:\n{log}");
    }
    // The good host still follows its changes.
    let added = FakeSession::new("Added later");
    let added_id = id_of(&added);
    host.add_session(added);
    user.wait_for("the good host's added session shows", |l| {
        entry(l, &added_id).is_some()
    });
}

fn wait(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}
