//! `cross-agent sessions --agent copilot` over a temporary HOME holding VS Code's Agent Host
//! files, through the real binary and the daemon it starts: the `--json` fields, the table, the
//! working-directory scope, an unsafe endpoint entry said on stderr without its token, and the
//! daemon's live index picking up a session the editor adds.
//!
//! The files are made by `testkit::synthetic_stores::copilot` in the shapes
//! `docs/observed/copilot.md` documents (§2.1, §4.1, §4.2, §4.3).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use cross_agent_testkit::synthetic_stores::{CopilotEditor, SdkEvents, now_millis, rfc3339};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");
const ONE: &str = "3c1d0000-0000-4000-8000-000000000001";
const TWO: &str = "3c1d0000-0000-4000-8000-000000000002";
const SDK_ONE: &str = "5d5d0000-0000-4000-8000-000000000001";
const TOKEN: &str = "tkn-never-printed-9b7e";
/// How long a change may take to show through the daemon before the test gives up: a bound,
/// not a timing.
const PATIENCE: Duration = Duration::from_secs(120);
/// The note the CLI prints when it lists without a daemon.
const DIRECT_NOTE: &str = "reading the stores directly";

/// A temporary user with VS Code Stable's Copilot files: ONE (titled, in `/work/api`, with SDK
/// events) and TWO (archived, in `/work/web`), and a running host of this process.
struct User {
    _dir: tempfile::TempDir,
    home: PathBuf,
    state: PathBuf,
    editor: CopilotEditor,
    entry: PathBuf,
    _host: UnixListener,
    now: i64,
}

impl User {
    fn new() -> User {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("user");
        let state = dir.path().join("state");
        std::fs::create_dir_all(&home).unwrap();
        let editor = CopilotEditor::new(&home.join(".config/Code"));
        let now = now_millis();
        editor
            .register(&format!("copilotcli:/{ONE}"), now - 60_000, now - 30_000)
            .unwrap();
        editor
            .register(&format!("ahp-session:/{TWO}"), now - 90_000, now - 80_000)
            .unwrap();
        let one = editor.session(ONE).unwrap();
        one.title("Fix the tests").unwrap();
        one.default_chat(SDK_ONE, "gpt-5").unwrap();
        one.working_directory("/work/api").unwrap();
        let two = editor.session(TWO).unwrap();
        two.working_directory("/work/web").unwrap();
        two.set("archived", "true").unwrap();
        let mut events = SdkEvents::new(&home.join(".copilot/session-state"), SDK_ONE);
        events
            .user_message("hello", now - 20_000)
            .assistant("hi", None, now - 10_000);
        events.write().unwrap();
        let socket = dir.path().join("h.sock");
        let host = UnixListener::bind(&socket).unwrap();
        let entry = editor
            .endpoint(std::process::id(), "inst", &socket, TOKEN)
            .unwrap();
        User {
            _dir: dir,
            home,
            state,
            editor,
            entry,
            _host: host,
            now,
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
            // No periodic re-walk within a test: what the daemon shows, a notification brought.
            .env("CROSS_AGENT_INDEX_REWALK_MS", "3600000")
            .env_remove("CROSS_AGENT_ACTIVE_WINDOW_MIN")
            .current_dir(&self.home)
            .output()
            .unwrap()
    }

    /// Runs `args`, which must succeed through the daemon; returns stdout and stderr.
    fn ok(&self, args: &[&str]) -> (String, String) {
        let out = self.run(args);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(
            !stderr.contains(DIRECT_NOTE),
            "not through the daemon: {stderr}"
        );
        (stdout, stderr)
    }

    fn json(&self, args: &[&str]) -> (Value, String) {
        let (stdout, stderr) = self.ok(args);
        (serde_json::from_str(&stdout).unwrap(), stderr)
    }

    fn session_db(&self, id: &str) -> PathBuf {
        self.editor.session_dir().join(id).join("session.db")
    }
}

impl Drop for User {
    fn drop(&mut self) {
        cross_agent_testkit::leaks::stop_daemons(&self.state, cross_agent_testkit::leaks::SETTLE);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ids(entries: &Value) -> Vec<&str> {
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["session_id"].as_str().unwrap())
        .collect()
}

fn user_data(user: &User) -> String {
    user.editor.user_data.display().to_string()
}

#[test]
fn json_lists_copilot_sessions_with_their_editor_fields() {
    let user = User::new();
    let (listing, stderr) = user.json(&["sessions", "--agent", "copilot", "--json"]);
    assert_eq!(stderr, "");
    let keys: Vec<&String> = listing.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["copilot"]);
    assert_eq!(
        listing["copilot"],
        json!([
            {
                "session_id": ONE,
                "title": "Fix the tests",
                "title_is_assigned": true,
                "cwd": "/work/api",
                "last_activity": rfc3339(user.now - 10_000),
                "is_active": true,
                "is_working": false,
                "path": user.session_db(ONE).display().to_string(),
                "copilot": {
                    "session_uri": format!("copilotcli:/{ONE}"),
                    "working_directories": ["/work/api"],
                    "archived": false,
                    "sdk_session_id": SDK_ONE,
                    "user_data_dir": user_data(&user),
                    "live": true,
                },
                // Copilot's files record no per-call usage (docs/usage.md): unknown, never 0.
                "cost_usd": null,
                "usage_tokens": null,
            },
            {
                "session_id": TWO,
                "title": null,
                "title_is_assigned": false,
                "cwd": "/work/web",
                "last_activity": rfc3339(user.now - 80_000),
                "is_active": true,
                "is_working": false,
                "path": user.session_db(TWO).display().to_string(),
                "copilot": {
                    "session_uri": format!("ahp-session:/{TWO}"),
                    "working_directories": ["/work/web"],
                    "archived": true,
                    "user_data_dir": user_data(&user),
                    "live": true,
                },
                // Copilot's files record no per-call usage (docs/usage.md): unknown, never 0.
                "cost_usd": null,
                "usage_tokens": null,
            },
        ])
    );

    // `all` is four agents now (read back into a map, whose keys are sorted).
    let (all, _) = user.json(&["sessions", "--json"]);
    let keys: Vec<&String> = all.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["claude", "codex", "copilot", "grok"]);
    assert_eq!(ids(&all["copilot"]), [ONE, TWO]);

    // The scope compares the session's working directories.
    let (here, _) = user.json(&[
        "sessions",
        "--agent",
        "copilot",
        "--scope",
        "cwd",
        "--cwd",
        "/work/api",
        "--json",
    ]);
    assert_eq!(ids(&here["copilot"]), [ONE]);
}

#[test]
fn the_table_marks_archived_and_live_sessions() {
    let user = User::new();
    let (stdout, stderr) = user.ok(&["sessions", "--agent", "copilot"]);
    assert_eq!(stderr, "");
    let row = |id: &str| {
        stdout
            .lines()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("no row for {id}:\n{stdout}"))
            .to_owned()
    };
    let one = row(ONE);
    assert!(
        one.starts_with("copilot") && one.contains("[name] Fix the tests"),
        "{one}"
    );
    assert!(
        one.contains("host-live") && !one.contains("archived"),
        "{one}"
    );
    let two = row(TWO);
    assert!(two.contains("archived,host-live"), "{two}");
}

#[test]
fn an_entry_readable_by_others_is_one_warning_and_its_token_never_prints() {
    let user = User::new();
    std::fs::set_permissions(&user.entry, std::fs::Permissions::from_mode(0o644)).unwrap();
    for args in [
        &["sessions", "--agent", "copilot", "--json"][..],
        &["sessions", "--agent", "copilot"][..],
    ] {
        let (stdout, stderr) = user.ok(args);
        assert!(
            !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
            "{args:?}"
        );
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("warning:"))
            .collect();
        assert_eq!(warnings.len(), 1, "{args:?}: {stderr}");
        assert!(
            warnings[0].contains(&user.entry.display().to_string())
                && warnings[0].contains("mode 0644"),
            "{}",
            warnings[0]
        );
        // Its editor's sessions are listed, but not as served by a live host.
        assert!(!stdout.contains("host-live") && !stdout.contains("\"live\": true"));
    }
    // The daemon's own log holds no token either.
    let log = std::fs::read_dir(user.state.join("logs"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect::<String>();
    assert!(!log.contains(TOKEN));
}

#[test]
fn doctor_names_an_unsafe_entry_and_an_unreadable_catalog_without_the_token() {
    let user = User::new();
    let out = user.run(&["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = |what: &str| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["what"].as_str().unwrap().starts_with(what))
            .cloned()
            .unwrap_or_else(|| panic!("{what}: {report:#}"))
    };
    let host = check("Copilot Agent Host");
    assert_eq!(host["status"], "ok", "{host}");
    assert!(
        host["detail"].as_str().unwrap().contains("protocol 0.10.0"),
        "{host}"
    );
    assert_eq!(check("Copilot sessions")["detail"], "2 listed");

    std::fs::set_permissions(&user.entry, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::write(user.session_db(TWO), "not a database").unwrap();
    let out = user.run(&["doctor", "--json"]);
    let printed = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!printed.contains(TOKEN));
    assert_eq!(out.status.code(), Some(1), "{printed}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = |what: &str| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["what"].as_str().unwrap().starts_with(what))
            .cloned()
            .unwrap_or_else(|| panic!("{what}: {report:#}"))
    };
    let entry = check("Copilot endpoint");
    assert_eq!(entry["status"], "broken");
    assert!(
        entry["what"]
            .as_str()
            .unwrap()
            .contains(&user.entry.display().to_string())
            && entry["detail"].as_str().unwrap().contains("mode 0640")
            && entry["fix"].as_str().unwrap().contains("chmod 600"),
        "{entry}"
    );
    let catalog = check("Copilot catalog");
    assert_eq!(catalog["status"], "broken");
    assert!(
        catalog["what"]
            .as_str()
            .unwrap()
            .contains(&user.session_db(TWO).display().to_string())
            && catalog["detail"]
                .as_str()
                .unwrap()
                .contains("not an SQLite database"),
        "{catalog}"
    );
}

#[test]
fn the_daemons_live_index_shows_a_session_the_editor_adds() {
    let user = User::new();
    let (before, _) = user.json(&["sessions", "--agent", "copilot", "--json"]);
    assert_eq!(ids(&before["copilot"]), [ONE, TWO]);

    // The editor registers a third session and writes its database while the daemon runs:
    // file-system notifications bring it in (the re-walk is an hour away).
    let three = "3c1d0000-0000-4000-8000-000000000003";
    user.editor
        .register(&format!("copilotcli:/{three}"), user.now, user.now + 1_000)
        .unwrap();
    user.editor.session(three).unwrap().title("Third").unwrap();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (listing, _) = user.json(&["sessions", "--agent", "copilot", "--json"]);
        if ids(&listing["copilot"]).first() == Some(&three) {
            assert_eq!(listing["copilot"][0]["title"], "Third");
            break;
        }
        assert!(Instant::now() < deadline, "never listed: {listing}");
        std::thread::sleep(Duration::from_millis(100));
    }

    // The host stops: VS Code removes its entry, and the sessions stop being live.
    std::fs::remove_file(&user.entry).unwrap();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (stdout, _) = user.ok(&["sessions", "--agent", "copilot"]);
        if !stdout.contains("host-live") {
            break;
        }
        assert!(Instant::now() < deadline, "still live:\n{stdout}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
