//! Text from transcripts never reaches the terminal raw. A session whose first prompt holds
//! `ESC ] 0 ; PWNED BEL ESC [ 2 J` (retitle the terminal, clear it) and a C1 CSI is listed,
//! resolved, sent to, refused and reported through the real binary and the real daemon: every
//! human output shows the sequence escaped, every `--json` keeps the exact text. And the daemon's
//! log written to a pipe carries no colour codes.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};
use pretty_assertions::assert_eq;
use serde_json::Value;
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");
const MINUTE: i64 = 60_000;

/// The first prompt: a terminal's retitle and clear sequences, and a C1 control sequence
/// introducer (U+009B) that some terminals act on as `ESC [`.
const PROMPT: &str = "fix \u{1b}]0;PWNED\u{7}\u{1b}[2J the build \u{9b}31m now";
/// How the listing's generated title shows it, escaped.
const SHOWN: &str = "fix \\x1b]0;PWNED\\x07\\x1b[2J the build \\u{9b}31m now";
/// A transcript file's name that is itself a terminal sequence, and how a warning shows it.
const BAD_FILE: &str = "bad\u{1b}]0;PWNED\u{7}.jsonl";
const BAD_FILE_SHOWN: &str = "bad\\x1b]0;PWNED\\x07.jsonl";
/// What a table's cut title cell shows at least.
const SHOWN_START: &str = "[gen] fix \\x1b]0;PWNED\\x07\\x1b[2J the build";
/// A name two sessions share, so resolving it is refused and the refusal quotes both with
/// their working directory, which a transcript records as it likes.
const SHARED_NAME: &str = "twin\u{1b}[31m\u{7}";
const TWIN_CWD: &str = "/elsewhere\u{1b}[2J";
const TWIN_CWD_SHOWN: &str = "/elsewhere\\x1b[2J";

/// A HOME with the hostile sessions in `proj/`, and its own daemon home; stops the daemon when
/// dropped.
struct Hostile {
    dir: TempDir,
    project: PathBuf,
}

impl Hostile {
    fn new() -> Hostile {
        let dir = TempDir::new().unwrap();
        let project = dir.path().join("proj");
        std::fs::create_dir_all(&project).unwrap();
        let cwd = project.to_str().unwrap();
        let now = now_millis();
        let mut evil = ClaudeTranscript::new(dir.path(), cwd, "c-evil");
        evil.user(PROMPT, now - 3 * MINUTE)
            .assistant_text("Done.", now - 2 * MINUTE);
        evil.write().unwrap();
        for (id, ago) in [("c-twin-1", 30), ("c-twin-2", 40)] {
            let mut twin = ClaudeTranscript::new(dir.path(), TWIN_CWD, id);
            twin.user("hello", now - ago * MINUTE)
                .custom_title(SHARED_NAME)
                .assistant_text("Hi.", now - ago * MINUTE + 1_000);
            twin.write().unwrap();
        }
        // A file the listing skips, named to retitle the terminal: the warning names it.
        let bad = dir.path().join(".claude/projects/-work-bad");
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(bad.join(BAD_FILE), b"\x00 not json\n{\"type\":\n").unwrap();
        Hostile { dir, project }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("xa")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("CROSS_AGENT_HOME", self.state())
            // The delivery itself is not what is looked at; a stand-in that exits at once.
            .env("CROSS_AGENT_CLAUDE_BIN", "/bin/true")
            .current_dir(&self.project);
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Stdout of a command that must succeed, checked to be safe for a terminal.
    fn human(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_terminal_safe(args, "stderr", &out.stderr);
        assert_terminal_safe(args, "stdout", &out.stdout)
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        if self.state().join("daemon.pid").exists() {
            let _ = self.run(&["daemon", "stop"]);
        }
        // Any daemon of this home still alive (one autostarted after the stop, a restart's
        // successor) ends here, before the temporary home is deleted under it.
        cross_agent_testkit::leaks::stop_daemons(&self.state(), cross_agent_testkit::leaks::SETTLE);
    }
}

/// The text, after checking it holds no raw ESC, BEL, C1 or other control character but
/// newline and tab (nor bytes that are not UTF-8, which a terminal may read as C1).
fn assert_terminal_safe(args: &[&str], stream: &str, bytes: &[u8]) -> String {
    let text = String::from_utf8(bytes.to_vec())
        .unwrap_or_else(|e| panic!("{args:?} {stream} is not UTF-8: {e}"));
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| c.is_control() && c != '\n' && c != '\t')
        .collect();
    assert!(
        raw.is_empty(),
        "{args:?} wrote raw control characters {raw:?} on {stream}:\n{}",
        text.escape_debug()
    );
    text
}

#[test]
fn listing_and_resolving_escape_what_json_keeps_exact() {
    let store = Hostile::new();

    // The first run reads the stores (a later one is served from the cache, without warnings).
    let listed = store.run(&["sessions"]);
    assert!(listed.status.success());
    let table = assert_terminal_safe(&["sessions"], "stdout", &listed.stdout);
    assert!(table.contains(SHOWN_START), "{table}");
    let warned = assert_terminal_safe(&["sessions"], "stderr", &listed.stderr);
    assert!(warned.contains(BAD_FILE_SHOWN), "{warned}");
    let listing = store.json(&["sessions", "--json"]);
    let evil = listing["claude"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "c-evil")
        .unwrap();
    assert_eq!(evil["title"], PROMPT);

    let resolved = store.human(&["sessions", "resolve", "claude", "c-evil"]);
    assert!(resolved.contains(&format!("[gen] {SHOWN}")), "{resolved}");
    let resolved = store.json(&["sessions", "resolve", "claude", "c-evil", "--json"]);
    assert_eq!(resolved["title"], PROMPT);

    // A refusal quotes both sessions' names: on stderr, escaped; in its JSON, exact.
    let refused = store.run(&["sessions", "resolve", "claude", SHARED_NAME]);
    assert!(!refused.status.success());
    let said = assert_terminal_safe(&["resolve", "twin"], "stderr", &refused.stderr);
    assert!(said.contains(TWIN_CWD_SHOWN), "{said}");
    let refused = store.run(&["sessions", "resolve", "claude", SHARED_NAME, "--json"]);
    let refusal: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(refusal["candidates"][0]["title"], SHARED_NAME);
}

#[test]
fn send_status_check_and_decisions_escape_what_json_keeps_exact() {
    let store = Hostile::new();

    let receipt = store.human(&["send", "claude", "--session", "c-evil", "hello"]);
    assert!(receipt.contains(&format!("\"{SHOWN}\"")), "{receipt}");
    let receipt = store.json(&["send", "claude", "--session", "c-evil", "--json", "hi"]);
    assert_eq!(receipt["target_title"], PROMPT, "{receipt}");
    let delivery = receipt["delivery_id"].as_str().unwrap().to_owned();

    // The daemon's refusal names both candidates; printed escaped.
    let refused = store.run(&["send", "claude", "--session", SHARED_NAME, "hi"]);
    assert_eq!(refused.status.code(), Some(2));
    let said = assert_terminal_safe(&["send", "twin"], "stderr", &refused.stderr);
    assert!(said.contains(TWIN_CWD_SHOWN), "{said}");

    let cwd = store.project.to_str().unwrap().to_owned();
    let status = store.human(&["status", "--cwd", &cwd]);
    assert!(status.contains(SHOWN), "{status}");
    let status = store.json(&["status", "--cwd", &cwd, "--json"]);
    assert!(contains_string(&status, PROMPT), "{status}");

    store.human(&["status", &delivery]);
    let check = store.human(&["check"]);
    assert!(check.contains(SHOWN), "{check}");
    store.human(&["decisions"]);
    store.human(&["decisions", "--by", "target_session,kind"]);
}

/// Whether any string in `value` is exactly `wanted`.
fn contains_string(value: &Value, wanted: &str) -> bool {
    match value {
        Value::String(text) => text == wanted,
        Value::Array(items) => items.iter().any(|v| contains_string(v, wanted)),
        Value::Object(map) => map.values().any(|v| contains_string(v, wanted)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

#[test]
fn the_daemon_log_on_a_pipe_has_no_colour_codes() {
    let store = Hostile::new();
    let mut daemon = store
        .command(&["daemon", "run"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let up = wait_until(Duration::from_secs(120), || {
        store.run(&["daemon", "status"]).status.success()
    });
    // A send logs at info level too: more lines, more chances for a colour code.
    let sent = store.run(&["send", "claude", "--session", "c-evil", "hello"]);
    let stopped = store.run(&["daemon", "stop"]);
    let mut log = String::new();
    daemon
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    daemon.wait().unwrap();
    assert!(up, "the daemon did not come up: {log}");
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    assert!(stopped.status.success());
    assert!(
        log.lines().count() >= 2,
        "the daemon logged nothing on stderr: {log:?}"
    );
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log written to a pipe:\n{}",
        log.escape_debug()
    );
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}
