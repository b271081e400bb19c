//! docs/spec/cross-agent-mcp.md §7, a state directory of the bridge's own: a `CROSS_AGENT_HOME` another user controls, driven through the built binary.
//! The tests run as root, which can give a file to any uid: that is all "another user's file"
//! takes. Nothing outside the home may be chmod-ed or written, and no byte may reach a socket
//! that is not the user's own. And §3's last sentence: a daemon that cannot start says why, at
//! once.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");

/// The uid of the other user: no account needed, root may give files to any uid.
const STRANGER: u32 = 4242;

fn give_away(path: &Path) {
    std::os::unix::fs::lchown(path, Some(STRANGER), Some(STRANGER))
        .unwrap_or_else(|e| panic!("these tests give files to another uid, which takes root: {e}"));
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A temporary `HOME` and a `CROSS_AGENT_HOME` wherever a test puts it.
struct Env {
    dir: tempfile::TempDir,
    user: PathBuf,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user");
        std::fs::create_dir_all(&user).unwrap();
        Env { dir, user }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn run(&self, state: &Path, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .env("HOME", &self.user)
            .env("CROSS_AGENT_HOME", state)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("GROK_HOME")
            .env_remove("CROSS_AGENT_DAEMON_BIN")
            .output()
            .unwrap()
    }

    /// Runs `args` and expects a refusal; returns stderr.
    fn refused(&self, state: &Path, args: &[&str]) -> String {
        let out = self.run(state, args);
        if out.status.success() {
            // Whatever it started must not outlive the failed test.
            self.stop(state);
        }
        assert!(
            !out.status.success(),
            "`{}` succeeded on an unsafe home: {}",
            args.join(" "),
            text(&out.stdout)
        );
        text(&out.stderr)
    }

    fn stop(&self, state: &Path) {
        if state.join("daemon.pid").exists() {
            let _ = self.run(state, &["daemon", "stop"]);
        }
    }
}

/// The reproduction: user `u` makes `evil` in a world-writable sticky directory and
/// links `evil/decisions.jsonl` to a file of root's and `evil/logs` to a directory of root's.
#[test]
fn a_foreign_home_with_planted_links_is_refused_and_nothing_outside_changes() {
    let env = Env::new();
    let shared = env.path("shared");
    std::fs::create_dir(&shared).unwrap();
    set_mode(&shared, 0o1777);
    let evil = shared.join("evil");
    std::fs::create_dir(&evil).unwrap();
    set_mode(&evil, 0o755);

    let roots_file = env.path("roots-file");
    std::fs::write(&roots_file, "root's own\n").unwrap();
    set_mode(&roots_file, 0o644);
    let roots_dir = env.path("roots-dir");
    std::fs::create_dir(&roots_dir).unwrap();
    set_mode(&roots_dir, 0o755);
    std::os::unix::fs::symlink(&roots_file, evil.join("decisions.jsonl")).unwrap();
    std::os::unix::fs::symlink(&roots_dir, evil.join("logs")).unwrap();
    for planted in [
        evil.join("decisions.jsonl"),
        evil.join("logs"),
        evil.clone(),
    ] {
        give_away(&planted);
    }

    let start = env.refused(&evil, &["daemon", "start"]);
    let send = env.refused(&evil, &["send", "codex", "hello"]);
    let status = env.refused(&evil, &["status"]);
    env.stop(&evil);
    for message in [&start, &send, &status] {
        assert!(message.contains(&evil.display().to_string()), "{message}");
        assert!(message.contains("owned by uid 4242"), "{message}");
        assert!(message.contains("not by you (uid 0)"), "{message}");
        assert!(
            message.contains("Point CROSS_AGENT_HOME at a directory that is yours alone"),
            "{message}"
        );
    }

    assert_eq!(mode(&roots_file), 0o644, "the link's target was chmod-ed");
    assert_eq!(mode(&roots_dir), 0o755, "the link's target was chmod-ed");
    assert_eq!(
        std::fs::read_to_string(&roots_file).unwrap(),
        "root's own\n"
    );
    assert_eq!(std::fs::read_dir(&roots_dir).unwrap().count(), 0);
    assert!(!evil.join("daemon.sock").exists());
    assert!(!evil.join("hub.db").exists());
}

/// A home of the user's own in which someone planted a link: the link is refused by name, its
/// target untouched.
#[test]
fn a_link_planted_in_an_own_home_is_refused() {
    let env = Env::new();
    let state = env.path("state");
    std::fs::create_dir(&state).unwrap();
    set_mode(&state, 0o700);
    let roots_file = env.path("roots-file");
    std::fs::write(&roots_file, "root's own\n").unwrap();
    set_mode(&roots_file, 0o644);
    std::os::unix::fs::symlink(&roots_file, state.join("decisions.jsonl")).unwrap();

    let message = env.refused(&state, &["daemon", "start"]);
    env.stop(&state);
    assert!(
        message.contains(&state.join("decisions.jsonl").display().to_string()),
        "{message}"
    );
    assert!(message.contains("is a symbolic link to"), "{message}");
    assert!(message.contains("remove the link"), "{message}");
    assert_eq!(mode(&roots_file), 0o644);
    assert_eq!(
        std::fs::read_to_string(&roots_file).unwrap(),
        "root's own\n"
    );
}

#[test]
fn a_group_writable_home_is_refused_not_quietly_tightened() {
    let env = Env::new();
    let state = env.path("state");
    std::fs::create_dir(&state).unwrap();
    set_mode(&state, 0o770);
    let message = env.refused(&state, &["daemon", "start"]);
    env.stop(&state);
    assert!(message.contains(&state.display().to_string()), "{message}");
    assert!(
        message.contains("writable by group or others (mode 770)"),
        "{message}"
    );
    assert!(message.contains("chmod go-w"), "{message}");
    assert_eq!(mode(&state), 0o770);
    assert_eq!(
        std::fs::read_dir(&state).unwrap().count(),
        0,
        "nothing created"
    );
}

#[test]
fn a_parent_others_can_write_to_is_refused() {
    let env = Env::new();
    let open = env.path("open");
    std::fs::create_dir(&open).unwrap();
    set_mode(&open, 0o777);
    let state = open.join("state");
    let message = env.refused(&state, &["daemon", "start"]);
    env.stop(&state);
    assert!(message.contains(&open.display().to_string()), "{message}");
    assert!(
        message.contains("is writable by group or others (mode 777) and not sticky"),
        "{message}"
    );
    assert!(!state.exists(), "nothing created");
}

#[test]
fn a_sticky_parent_like_tmp_is_accepted() {
    let env = Env::new();
    let shared = env.path("shared");
    std::fs::create_dir(&shared).unwrap();
    set_mode(&shared, 0o1777);
    let state = shared.join("state");
    let out = env.run(&state, &["daemon", "start"]);
    env.stop(&state);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(mode(&state), 0o700);
}

/// Someone else's listener on the home's socket path: the client refuses before it writes a
/// byte (today it sent its `hello` — and the next frame would carry a message — then hung).
#[test]
fn a_socket_owned_by_another_user_gets_not_a_byte() {
    let env = Env::new();
    let state = env.path("state");
    std::fs::create_dir(&state).unwrap();
    set_mode(&state, 0o700);
    let socket = state.join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    give_away(&socket);
    listener.set_nonblocking(true).unwrap();
    let received = Arc::new(AtomicUsize::new(0));
    let accepted = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicUsize::new(0));
    let listening = {
        let (received, accepted, stop) = (received.clone(), accepted.clone(), stop.clone());
        std::thread::spawn(move || {
            loop {
                // Read before the accept: once the client has exited (when `stop` is set), a
                // connection it made waits in the backlog, so the accept after that still finds
                // it; the loop ends only on an empty backlog seen after the client was done.
                let client_done = stop.load(Ordering::SeqCst) != 0;
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        accepted.fetch_add(1, Ordering::SeqCst);
                        stream
                            .set_read_timeout(Some(Duration::from_millis(300)))
                            .unwrap();
                        let mut buf = [0u8; 4096];
                        while let Ok(n) = stream.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            received.fetch_add(n, Ordering::SeqCst);
                        }
                    }
                    Err(_) if client_done => break,
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        })
    };

    let message = env.refused(&state, &["status"]);
    stop.store(1, Ordering::SeqCst);
    listening.join().unwrap();
    assert_eq!(
        received.load(Ordering::SeqCst),
        0,
        "bytes reached the stranger's socket"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "the client connected");
    assert!(message.contains(&socket.display().to_string()), "{message}");
    assert!(message.contains("owned by uid 4242"), "{message}");
    assert!(message.contains("or sent"), "{message}");
}

#[test]
fn check_reports_the_homes_safety() {
    let env = Env::new();
    let state = env.path("state");
    std::fs::create_dir(&state).unwrap();
    set_mode(&state, 0o700);
    give_away(&state);
    let out = env.run(&state, &["check", "--json"]);
    env.stop(&state);
    assert!(!out.status.success(), "an unsafe home fails the check");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let home = &report["home"];
    assert_eq!(home["safe"], false, "{report}");
    assert_eq!(home["owner_uid"], STRANGER, "{report}");
    assert_eq!(home["your_uid"], 0, "{report}");
    let problem = home["problem"].as_str().unwrap();
    assert!(problem.contains("owned by uid 4242"), "{problem}");

    let human = env.run(&state, &["check"]);
    let human = text(&human.stdout);
    assert!(human.contains("home safety:"), "{human}");
    assert!(human.contains("safe: false"), "{human}");

    let own = env.path("own");
    let out = env.run(&own, &["check", "--json"]);
    env.stop(&own);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["home"]["safe"], true, "{report}");
}

/// A daemon that fails at once (here its pidfile path is a directory, so it
/// cannot take its lock) is reported with its own reason, not as "did not come up within 10s".
#[test]
fn a_daemon_that_cannot_start_says_why_at_once() {
    let env = Env::new();
    let state = env.path("state");
    std::fs::create_dir_all(state.join("daemon.pid")).unwrap();
    set_mode(&state, 0o700);
    let message = env.refused(&state, &["send", "codex", "hello"]);
    assert!(
        message.contains("the cross-agent daemon could not start"),
        "{message}"
    );
    assert!(
        message.contains(&state.join("daemon.pid").display().to_string()),
        "{message}"
    );
    assert!(message.contains("Is a directory"), "{message}");
    assert!(!message.contains("did not come up"), "{message}");
}

/// The socket file passes every check (it is in the user's home and owned by them) but the
/// process listening on it runs as another user: the client asks the kernel who the peer is
/// (`SO_PEERCRED`) and refuses before writing. The stranger is a real process running as uid
/// 4242 that counts the bytes it receives.
#[test]
fn a_listener_running_as_another_user_gets_not_a_byte() {
    const COUNTER: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
open(sys.argv[2] + ".ready", "w").close()
s.settimeout(1.5)
total = 0
try:
    while True:
        c, _ = s.accept()
        c.settimeout(1.0)
        try:
            while True:
                d = c.recv(4096)
                if not d:
                    break
                total += len(d)
        except socket.timeout:
            pass
        c.close()
except socket.timeout:
    pass
open(sys.argv[2], "w").write(str(total))
"#;
    use std::os::unix::process::CommandExt;
    let env = Env::new();
    // The stranger must reach its own folder inside the test's directory.
    set_mode(env.dir.path(), 0o711);
    let public = env.path("public");
    std::fs::create_dir(&public).unwrap();
    set_mode(&public, 0o777);
    let state = env.path("state");
    std::fs::create_dir(&state).unwrap();
    set_mode(&state, 0o700);
    let their_socket = public.join("s.sock");
    let count = public.join("count");
    let mut stranger = Command::new("/usr/bin/python3")
        .args(["-c", COUNTER])
        .arg(&their_socket)
        .arg(&count)
        .uid(STRANGER)
        .gid(STRANGER)
        .spawn()
        .unwrap();
    let ready = public.join("count.ready");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !ready.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the stranger never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Moved into the home and given to us: only the listening process is still theirs.
    let socket = state.join("daemon.sock");
    std::fs::rename(&their_socket, &socket).unwrap();
    std::os::unix::fs::lchown(&socket, Some(0), Some(0)).unwrap();

    let message = env.refused(&state, &["status"]);
    stranger.wait().unwrap();
    assert_eq!(
        std::fs::read_to_string(&count).unwrap(),
        "0",
        "bytes reached the stranger's listener"
    );
    assert!(message.contains(&socket.display().to_string()), "{message}");
    assert!(message.contains("runs as uid 4242"), "{message}");
    assert!(message.contains("nothing was sent"), "{message}");
}
