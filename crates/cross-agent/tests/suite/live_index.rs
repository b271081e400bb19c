//! `cross-agent sessions` through a running daemon's live index: real files written while a
//! real daemon runs are seen by the next `sessions resolve` (waited for within a bound, never
//! timed), lost notifications are made good by the periodic re-walk; with no daemon the CLI
//! starts one, and reads the stores itself (saying why on stderr) only when it cannot.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use cross_agent_testkit::synthetic_stores::{
    ClaudeTranscript, CodexRollout, codex_thread_name, now_millis,
};
use pretty_assertions::assert_eq;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");
const MINUTE: i64 = 60_000;
/// How long a change may take to show before the test gives up: far above the 1 s the index
/// aims for, so a loaded machine does not fail it.
const PATIENCE: Duration = Duration::from_secs(120);
/// The note the CLI prints when it lists without a daemon.
const DIRECT_NOTE: &str = "reading the stores directly";

/// A temporary user (`user/` is `HOME`, `state/` is `CROSS_AGENT_HOME`) and the daemon
/// variables its daemon starts with. Dropping it stops that daemon.
struct User {
    _dir: tempfile::TempDir,
    user: PathBuf,
    state: PathBuf,
    daemon_vars: Vec<(&'static str, &'static str)>,
}

impl User {
    fn new(daemon_vars: &[(&'static str, &'static str)]) -> User {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user");
        let state = dir.path().join("state");
        std::fs::create_dir_all(&user).unwrap();
        User {
            _dir: dir,
            user,
            state,
            daemon_vars: daemon_vars.to_vec(),
        }
    }

    fn home(&self) -> &Path {
        &self.user
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env("HOME", &self.user)
            .env("CROSS_AGENT_HOME", &self.state)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("GROK_HOME")
            .env_remove("CROSS_AGENT_GROK_NAMES_DB")
            .env_remove("CROSS_AGENT_DAEMON_BIN")
            .env_remove("CROSS_AGENT_INDEX_NOTIFY")
            .env_remove("CROSS_AGENT_INDEX_REWALK_MS")
            .envs(self.daemon_vars.iter().copied())
            .current_dir(&self.user);
        command.output().unwrap()
    }

    fn start_daemon(&self) {
        let out = self.run(&["daemon", "start"]);
        assert!(out.status.success(), "daemon start: {}", text(&out.stderr));
    }

    /// `sessions resolve AGENT QUERY --json`: the session id, or `None` when it did not
    /// resolve. Fails the test if it was not answered by the daemon.
    fn resolve(&self, agent: &str, query: &str) -> Option<String> {
        let out = self.run(&["sessions", "resolve", agent, query, "--json"]);
        let stderr = text(&out.stderr);
        assert!(
            !stderr.contains(DIRECT_NOTE),
            "not through the daemon: {stderr}"
        );
        if !out.status.success() {
            return None;
        }
        let value: Value = serde_json::from_slice(&out.stdout).unwrap();
        value["session_id"].as_str().map(str::to_owned)
    }

    /// Waits (within [`PATIENCE`]) for `query` to resolve to `id`.
    fn wait_for(&self, agent: &str, query: &str, id: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let found = self.resolve(agent, query);
            if found.as_deref() == Some(id) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{agent} {query:?} still resolves to {found:?}, not {id}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for User {
    fn drop(&mut self) {
        if self.state.join("daemon.pid").exists() {
            let _ = self.run(&["daemon", "stop"]);
        }
        // Any daemon of this home still alive (one autostarted after the stop, a restart's
        // successor) ends here, before the temporary home is deleted under it.
        cross_agent_testkit::leaks::stop_daemons(&self.state, cross_agent_testkit::leaks::SETTLE);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn claude_session(home: &Path, id: &str, title: &str) -> ClaudeTranscript {
    let now = now_millis();
    let mut t = ClaudeTranscript::new(home, "/work/api", id);
    t.user("hello", now - 2 * MINUTE)
        .custom_title(title)
        .assistant_text("Hi.", now - MINUTE);
    t.write().unwrap();
    t
}

#[test]
fn a_session_renamed_created_or_appended_under_a_running_daemon_is_seen_by_the_next_resolve() {
    let user = User::new(&[]);
    let mut renamed = claude_session(user.home(), "c-renamed", "before");
    let thread = "019a0000-0000-7000-8000-00000000abcd";
    let mut rollout = CodexRollout::new(user.home(), "/work/api", thread, now_millis() - MINUTE);
    rollout.user("port it", now_millis() - MINUTE);
    rollout.write().unwrap();
    user.start_daemon();
    assert_eq!(
        user.resolve("claude", "before").as_deref(),
        Some("c-renamed")
    );
    assert_eq!(user.resolve("claude", "after"), None);

    // `/rename` in Claude Code appends a `custom-title` record to the transcript.
    let written = renamed.len();
    renamed.custom_title("after");
    renamed.append_since(written).unwrap();
    user.wait_for("claude", "after", "c-renamed");
    assert_eq!(user.resolve("claude", "before"), None);

    // A session started meanwhile, in a project folder that did not exist.
    let mut fresh = ClaudeTranscript::new(user.home(), "/work/new-project", "c-fresh");
    fresh.user("start", now_millis()).custom_title("fresh");
    fresh.write().unwrap();
    user.wait_for("claude", "fresh", "c-fresh");

    // Codex names threads in a side file, not in the rollout.
    codex_thread_name(user.home(), thread, "ported", now_millis()).unwrap();
    user.wait_for("codex", "ported", thread);

    // A turn appended to a rollout: its generated title is what the next resolve sees.
    let mut other = CodexRollout::new(
        user.home(),
        "/work/web",
        "019a0000-0000-7000-8000-00000000abce",
        now_millis(),
    );
    other.write().unwrap();
    let written = other.len();
    other.user("profile the listing", now_millis());
    other.append_since(written).unwrap();
    user.wait_for(
        "codex",
        "profile the listing",
        "019a0000-0000-7000-8000-00000000abce",
    );
}

#[test]
fn a_store_folder_created_after_the_daemon_began_watching_is_picked_up() {
    // No `~/.claude/projects` when the daemon starts: nothing there can be watched yet.
    let user = User::new(&[]);
    user.start_daemon();
    assert_eq!(user.resolve("claude", "late"), None);
    claude_session(user.home(), "c-late", "late");
    user.wait_for("claude", "late", "c-late");
}

#[test]
fn without_notifications_the_periodic_rewalk_finds_what_changed() {
    // Notifications off stands for every event lost: only the re-walk can find the session.
    let user = User::new(&[
        ("CROSS_AGENT_INDEX_NOTIFY", "off"),
        ("CROSS_AGENT_INDEX_REWALK_MS", "300"),
    ]);
    claude_session(user.home(), "c-first", "first");
    user.start_daemon();
    assert_eq!(user.resolve("claude", "first").as_deref(), Some("c-first"));
    claude_session(user.home(), "c-second", "second");
    user.wait_for("claude", "second", "c-second");
}

/// A pin naming a session written after the index last looked (no notification, no re-walk
/// due) walks for it once before calling it missing, as a send naming it does.
#[test]
fn a_pin_naming_a_session_written_a_moment_ago_walks_for_it() {
    let user = User::new(&[
        ("CROSS_AGENT_INDEX_NOTIFY", "off"),
        ("CROSS_AGENT_INDEX_REWALK_MS", "3600000"),
    ]);
    claude_session(user.home(), "c-first", "first");
    user.start_daemon();
    assert_eq!(user.resolve("claude", "first").as_deref(), Some("c-first"));
    claude_session(user.home(), "c-second", "second");
    let out = user.run(&["pin", "claude", "second", "--json"]);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let pinned: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pinned["pin"]["session_id"], "c-second", "{pinned}");
}

/// With no daemon running, `sessions` starts one as every other command does, and is served
/// by it; `sessions resolve` then finds it answering.
#[test]
fn with_the_daemon_down_the_listing_starts_it() {
    let user = User::new(&[]);
    claude_session(user.home(), "c-one", "one");
    let first = user.run(&["sessions", "--json"]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert!(
        !text(&first.stderr).contains(DIRECT_NOTE),
        "{}",
        text(&first.stderr)
    );
    let status = user.run(&["daemon", "status", "--json"]);
    assert!(status.status.success(), "{}", text(&status.stderr));
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["running"], Value::Bool(true), "{status}");
    let listed: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(listed["claude"][0]["session_id"], "c-one");
    assert_eq!(user.resolve("claude", "one").as_deref(), Some("c-one"));
}

/// When the daemon cannot start, the CLI reads the stores itself and says why, in one line —
/// and lists what the daemon would have.
#[test]
fn when_the_daemon_cannot_start_the_cli_reads_the_stores_itself_and_says_why() {
    let mut user = User::new(&[("CROSS_AGENT_DAEMON_BIN", "/nonexistent/cross-agent")]);
    claude_session(user.home(), "c-one", "one");
    let direct = user.run(&["sessions", "--json"]);
    assert!(direct.status.success(), "{}", text(&direct.stderr));
    let notes: Vec<String> = text(&direct.stderr)
        .lines()
        .filter(|l| l.contains(DIRECT_NOTE))
        .map(str::to_owned)
        .collect();
    assert_eq!(notes.len(), 1, "{}", text(&direct.stderr));
    assert!(
        notes[0].contains("could not be started") && notes[0].contains("/nonexistent/cross-agent"),
        "{notes:?}"
    );
    for args in [
        &["sessions"][..],
        &["sessions", "resolve", "claude", "one", "--json"][..],
    ] {
        let out = user.run(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(DIRECT_NOTE),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }

    user.daemon_vars.clear();
    user.start_daemon();
    let served = user.run(&["sessions", "--json"]);
    assert!(served.status.success(), "{}", text(&served.stderr));
    assert!(
        !text(&served.stderr).contains(DIRECT_NOTE),
        "{}",
        text(&served.stderr)
    );
    // The same listing either way.
    let listing = |out: &Output| {
        let mut value: Value = serde_json::from_slice(&out.stdout).unwrap();
        // `is_active` depends on the moment; the rest must agree.
        for entries in value.as_object_mut().unwrap().values_mut() {
            for entry in entries.as_array_mut().unwrap() {
                entry.as_object_mut().unwrap().remove("is_active");
            }
        }
        value
    };
    assert_eq!(listing(&served), listing(&direct));
}

/// `sessions --json` through the daemon is printed from the listing it keeps rendered: the
/// same bytes as the CLI's own scan prints (every agent, a scope, a limit), and a rename made
/// while the daemon runs shows in the next listing (waited for within a bound, never timed).
#[test]
fn the_daemons_kept_listing_prints_the_scans_bytes_and_follows_a_rename() {
    // The scan first: a daemon that cannot start leaves the CLI to read the stores itself.
    let mut user = User::new(&[("CROSS_AGENT_DAEMON_BIN", "/nonexistent/cross-agent")]);
    let mut renamed = claude_session(user.home(), "c-renamed", "before");
    let days_ago = now_millis() - 3 * 24 * 60 * MINUTE;
    let mut old = ClaudeTranscript::new(user.home(), "/work/web", "c-old");
    old.user("an \"old\" one\twith é and 日本", days_ago)
        .assistant_text("Done.", days_ago + MINUTE);
    old.write().unwrap();
    let mut rollout = CodexRollout::new(
        user.home(),
        "/work/api",
        "019a0000-0000-7000-8000-00000000abcd",
        now_millis() - MINUTE,
    );
    rollout.user("port it", now_millis() - MINUTE);
    rollout.write().unwrap();
    let variants: [&[&str]; 3] = [
        &["sessions", "--json"],
        &[
            "sessions",
            "--json",
            "--agent",
            "claude",
            "--scope",
            "cwd",
            "--cwd",
            "/work/api",
        ],
        &["sessions", "--json", "--scope", "any", "--limit", "1"],
    ];
    let direct: Vec<String> = variants
        .iter()
        .map(|args| {
            let out = user.run(args);
            assert!(out.status.success(), "{}", text(&out.stderr));
            assert!(
                text(&out.stderr).contains(DIRECT_NOTE),
                "{}",
                text(&out.stderr)
            );
            text(&out.stdout)
        })
        .collect();
    assert!(direct[0].contains("c-old") && direct[0].contains("port it"));

    user.daemon_vars.clear();
    user.start_daemon();
    let served = |args: &[&str]| {
        let out = user.run(args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            !text(&out.stderr).contains(DIRECT_NOTE),
            "not through the daemon: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    for (args, direct) in variants.iter().zip(&direct) {
        assert_eq!(&served(args), direct, "{args:?}");
    }
    // Asked twice: the second answer comes from the kept rendering.
    assert_eq!(served(variants[0]), direct[0]);

    let written = renamed.len();
    renamed.custom_title("after");
    renamed.append_since(written).unwrap();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let listing: Value = serde_json::from_str(&served(variants[0])).unwrap();
        let title = listing["claude"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == "c-renamed")
            .map(|s| s["title"].clone());
        if title == Some(Value::from("after")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the listing still shows {title:?} for the renamed session"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
