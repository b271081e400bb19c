//! `hub.db` damaged or left holding payloads, through the built binary: real
//! daemons (autostarted by the commands), real SQLite, each test on its own temporary
//! `CROSS_AGENT_HOME` and `HOME`.
//!
//! - A store with 8 KiB of garbage in its middle, or cut short: the daemon moves it aside to
//!   `hub.db.damaged-<time>`, starts on a fresh one and says so (console log, daemon log,
//!   `cross-agent check`, decisions); `cross-agent status` works, a delivery that was in the
//!   damaged store is reported unknown (naming the file), and a new send is delivered.
//! - A message and an opted-in secret delivered to the real Claude Code: afterwards no file in
//!   the home holds a byte of either.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use cross_agent_testkit::agents::{AgentHome, AgentKind, agent_binary};
use cross_agent_testkit::endpoint::{ModelEndpoint, Reply, Rule};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");

/// A temporary user: `user/` its `HOME` (where the peer's stores are), `state/` its
/// `CROSS_AGENT_HOME`. Dropping it stops the daemon.
struct Env {
    dir: tempfile::TempDir,
    state: PathBuf,
    user: PathBuf,
    project: PathBuf,
    /// Extra variables of every command (the peer's binary, opted-in variables).
    vars: Vec<(String, String)>,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let user = dir.path().join("user");
        let project = user.join("work/proj");
        std::fs::create_dir_all(&project).unwrap();
        Env {
            dir,
            state,
            user,
            project,
            vars: Vec::new(),
        }
    }

    /// A peer `claude` that answers at once (what is under test here is the store, not the
    /// peer), and one Claude session in the project for it to continue.
    fn with_stand_in_peer() -> (Env, String) {
        let mut env = Env::new();
        let peer = env.dir.path().join("claude-stand-in");
        std::fs::write(
            &peer,
            "#!/bin/sh\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\
             \"result\":\"stand-in answer\",\"session_id\":\"x\",\"permission_denials\":[]}'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&peer, std::fs::Permissions::from_mode(0o755)).unwrap();
        env.vars.push((
            "CROSS_AGENT_CLAUDE_BIN".into(),
            peer.to_string_lossy().into_owned(),
        ));
        let session = "00000000-0000-4000-8000-00000000d0b0".to_owned();
        let cwd = env.project.to_string_lossy().into_owned();
        let now = now_millis();
        let mut transcript = ClaudeTranscript::new(&env.user, &cwd, &session);
        transcript
            .user("hello", now - 60_000)
            .assistant_text("hi", now - 59_000);
        transcript.write().unwrap();
        (env, session)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.user)
            .env("CROSS_AGENT_HOME", &self.state)
            .env("LANG", "C.UTF-8");
        for (name, value) in &self.vars {
            command.env(name, value);
        }
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?} failed: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", text(&out.stdout)))
    }

    /// Sends `message` to Claude session `session` and returns the delivery id.
    fn send(&self, session: &str, message: &str) -> String {
        let receipt = self.json(&["send", "claude", message, "--session", session, "--json"]);
        receipt["delivery_id"].as_str().unwrap().to_owned()
    }

    /// Waits until delivery `id` is finished; its record.
    fn finished(&self, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let status = self.json(&["status", id, "--json"]);
            let state = status["delivery"]["state"].as_str().unwrap_or_default();
            if state == "delivered" || state == "failed" {
                return status["delivery"].clone();
            }
            assert!(Instant::now() < deadline, "not finished: {status:#}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&self) {
        let out = self.run(&["daemon", "stop"]);
        assert!(out.status.success(), "stop: {}", text(&out.stderr));
    }

    fn hub_db(&self) -> PathBuf {
        self.state.join("hub.db")
    }

    /// Every file under `logs/` whose name starts with `prefix`, concatenated.
    fn logs(&self, prefix: &str) -> String {
        let mut all = String::new();
        for entry in std::fs::read_dir(self.state.join("logs")).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(prefix)
            {
                all.push_str(&String::from_utf8_lossy(&std::fs::read(path).unwrap()));
            }
        }
        all
    }

    /// The daemon log (`logs/daemon.log.*`) once it holds every one of `needles`, or what it
    /// holds after [`LOG_WAIT`]. The daemon writes its log from a thread of its own
    /// (tracing-appender's non-blocking writer), so a line logged before it answered can reach
    /// the file later: under load, after a client already has its answer.
    fn daemon_log_holding(&self, needles: &[&str]) -> String {
        let deadline = Instant::now() + LOG_WAIT;
        loop {
            let log = self.logs("daemon.log");
            if needles.iter().all(|needle| log.contains(needle)) || Instant::now() >= deadline {
                return log;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The `hub.db.damaged-…` stores in the home (not their `-wal` and `-shm`).
    fn damaged(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.state)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("hub.db.damaged-"))
            .filter(|n| !n.ends_with("-wal") && !n.ends_with("-shm"))
            .collect();
        names.sort();
        names
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if self.state.join("daemon.pid").exists() {
            let _ = self.run(&["daemon", "stop"]);
        }
        // Any daemon of this home still alive (a restart's successor, one a hook autostarted)
        // ends here, before the temporary home is deleted under it.
        cross_agent_testkit::leaks::stop_daemons(&self.state, cross_agent_testkit::leaks::SETTLE);
    }
}

/// How long a line the daemon logged may take to reach its log file: generous, as a machine
/// under load can leave the log's writer thread unscheduled for seconds.
const LOG_WAIT: Duration = Duration::from_secs(120);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A home whose store holds `count` finished deliveries, its daemon stopped (the log folded in).
fn home_with_deliveries(count: usize) -> (Env, String, Vec<String>) {
    let (env, session) = Env::with_stand_in_peer();
    let ids: Vec<String> = (0..count)
        .map(|n| env.send(&session, &format!("note {n}")))
        .collect();
    for id in &ids {
        assert_eq!(env.finished(id)["state"], "delivered");
    }
    env.stop();
    assert!(!env.state.join("hub.db-wal").exists());
    (env, session, ids)
}

/// What every damaged-store test checks once the daemon is up again: it said so everywhere, the
/// store is fresh, old ids are reported as unknown naming the file, and a new send goes out.
fn assert_moved_aside_and_working(env: &Env, session: &str, old_ids: &[String]) {
    // `status` works (it autostarts the daemon on the damaged store).
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["deliveries"]["recent"], serde_json::json!([]));
    let damaged = env.damaged();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    let file = &damaged[0];
    let database = &status["server_process"]["database"];
    assert_eq!(database["check"], "quarantined", "{database:#}");
    assert!(
        database["quarantined"][0]["file"]
            .as_str()
            .unwrap()
            .ends_with(file.as_str()),
        "{database:#}"
    );

    // Told in the console log (the detached daemon's stderr), the daemon log, `check` and the
    // decisions log. The console sentence is written (unbuffered) before the daemon serves,
    // and the decision before it binds, so both are there once `status` answered; the daemon
    // log's line may still be on its way.
    let console = env.logs("daemon-console");
    assert!(
        console.contains("cross-agent daemon: the cross-agent store")
            && console.contains(file.as_str()),
        "{console}"
    );
    let log = env.daemon_log_holding(&["failed its integrity check", file.as_str()]);
    assert!(
        log.contains("failed its integrity check") && log.contains(file.as_str()),
        "{log}"
    );
    let check = env.run(&["check"]);
    let said = text(&check.stdout);
    assert!(
        said.contains("database:") && said.contains("damaged and moved aside"),
        "{said}"
    );
    assert!(said.contains(file.as_str()), "{said}");
    let decisions = std::fs::read_to_string(env.state.join("decisions.jsonl")).unwrap();
    let line = decisions
        .lines()
        .find(|l| l.contains("\"kind\":\"store_quarantined\""))
        .unwrap_or_else(|| panic!("no store_quarantined decision: {decisions}"));
    assert!(line.contains(file.as_str()), "{line}");

    // An old delivery: unknown, naming the file; never re-sent (the peer saw nothing new).
    for id in [&old_ids[0], &old_ids[old_ids.len() - 1]] {
        let status = env.json(&["status", id, "--json"]);
        assert_eq!(status["delivery"], Value::Null);
        let warnings = status["warnings"].to_string();
        assert!(
            warnings.contains(file.as_str()) && warnings.contains("outcome is unknown"),
            "{warnings}"
        );
        let human = text(&env.run(&["status", id]).stdout);
        assert!(human.contains(file.as_str()), "{human}");
    }

    // And it delivers.
    let id = env.send(session, "after the damage");
    assert_eq!(env.finished(&id)["state"], "delivered");
}

#[test]
fn garbage_in_the_middle_of_the_store_is_moved_aside() {
    // Enough records that the middle of the file is theirs, not the schema's.
    let (env, session, ids) = home_with_deliveries(100);
    let store = env.hub_db();
    let mut bytes = std::fs::read(&store).unwrap();
    let middle = bytes.len() / 2;
    assert!(bytes.len() > 3 * 8192, "{} bytes", bytes.len());
    for (n, byte) in bytes[middle..middle + 8192].iter_mut().enumerate() {
        *byte = (n as u8).wrapping_mul(37).wrapping_add(11);
    }
    std::fs::write(&store, bytes).unwrap();

    assert_moved_aside_and_working(&env, &session, &ids);
    // The records at either end of the file were read back: those are named exactly.
    for id in [&ids[0], &ids[ids.len() - 1]] {
        let status = env.json(&["status", id, "--json"]);
        let warnings = status["warnings"].to_string();
        assert!(
            warnings.contains("its record was in a damaged database")
                && warnings.contains("it was delivered then"),
            "{warnings}"
        );
    }
}

#[test]
fn a_store_cut_short_is_moved_aside_instead_of_refusing_to_start() {
    let (env, session, ids) = home_with_deliveries(12);
    let store = env.hub_db();
    let len = std::fs::metadata(&store).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&store)
        .unwrap()
        .set_len(len / 2)
        .unwrap();

    let started = env.run(&["daemon", "start"]);
    assert!(started.status.success(), "{}", text(&started.stderr));
    assert_moved_aside_and_working(&env, &session, &ids);
}

/// Every file under `root` (recursively, as bytes) that holds `needle`.
fn files_holding(root: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                dirs.push(entry.path());
            } else if kind.is_file() {
                let bytes = std::fs::read(entry.path()).unwrap();
                if bytes
                    .windows(needle.len())
                    .any(|window| window == needle.as_bytes())
                {
                    found.push(entry.path());
                }
            }
        }
    }
    found
}

#[test]
fn a_delivered_payload_leaves_no_byte_in_the_home() {
    let endpoint = ModelEndpoint::start().unwrap();
    let agents = AgentHome::new().unwrap();
    let project = agents.project("proj").unwrap();
    let message_marker = format!("payload-marker-{}", uuid_like());
    let secret_marker = format!("sk-secret-marker-{}", uuid_like());
    endpoint.push(Rule::on_user_text(&message_marker).reply(Reply::text("noted")));

    let mut env = Env::new();
    env.user = agents.path().to_owned();
    env.project = project;
    let claude = agent_binary(AgentKind::Claude).unwrap();
    for (name, value) in [
        (
            "CROSS_AGENT_CLAUDE_BIN",
            claude.to_string_lossy().into_owned(),
        ),
        ("ANTHROPIC_BASE_URL", endpoint.anthropic_base_url()),
        // The secret the peer needs, opted in by name: it travels in the delivery's payload.
        ("ANTHROPIC_API_KEY", secret_marker.clone()),
        (
            "CROSS_AGENT_CHILD_ENV",
            "ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY,CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC,\
             DISABLE_AUTOUPDATER,DISABLE_TELEMETRY"
                .to_owned(),
        ),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
        ("DISABLE_TELEMETRY", "1".to_owned()),
    ] {
        env.vars.push((name.to_owned(), value));
    }

    let receipt = env.json(&[
        "send",
        "claude",
        &format!("please keep this: {message_marker}"),
        "--new",
        "--json",
    ]);
    let id = receipt["delivery_id"].as_str().unwrap();
    let record = env.finished(id);
    assert_eq!(record["state"], "delivered", "{record:#}");
    // The peer got both: the message in its prompt, the secret as its key.
    let requests = endpoint.model_requests();
    let turn = requests
        .iter()
        .find(|r| {
            r.last_user_prompt
                .as_deref()
                .is_some_and(|p| p.contains(&message_marker))
        })
        .unwrap();
    assert_eq!(
        turn.headers.get("x-api-key").map(String::as_str),
        Some(secret_marker.as_str())
    );

    // With the daemon still running (within a second or two of the hand-over: the write-ahead
    // log is truncated once a deleted payload has waited a second in it), and after it
    // stopped: nothing in the home holds either.
    let deadline = Instant::now() + SCRUB_WAIT;
    for phase in ["running", "stopped"] {
        for marker in [&message_marker, &secret_marker] {
            let mut holding = files_holding(&env.state, marker);
            while !holding.is_empty() && phase == "running" && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
                holding = files_holding(&env.state, marker);
            }
            assert!(
                holding.is_empty(),
                "{marker} found at rest ({phase}) in {holding:?}"
            );
        }
        if phase == "running" {
            env.stop();
        }
    }
}

/// How long a delivered payload may stay in the write-ahead log: the daemon truncates it once a
/// deleted payload has waited a second, on its dispatcher's next turn (at least once a second).
/// A ceiling for a loaded machine (the wait ends as soon as nothing holds the markers).
const SCRUB_WAIT: Duration = Duration::from_secs(120);

/// A marker no earlier run left anywhere.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{:x}{:x}", nanos, std::process::id())
}
