//! The SSH link (docs/remote.md) against a real sshd on loopback standing for another machine
//! (`cross_agent_testkit::sshd`): a local daemon on one temporary home, the "remote" daemon on
//! another, reached only through `ssh there cross-agent rpc --stdio`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cross_agent_ipc::frame;
use cross_agent_protocol::bridge::{CallerContext, IndexListingParams, Scope};
use cross_agent_protocol::rpc::{ClientKind, HelloParams, PROTOCOL_VERSION, RequestId};
use cross_agent_testkit::sshd::Sshd;
use pretty_assertions::assert_eq;
use serde_json::Value;

pub(super) const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");

/// This machine: `user/` its HOME, `state/` its CROSS_AGENT_HOME; its daemon's ssh is the rig's.
pub(super) struct Here {
    _dir: tempfile::TempDir,
    pub(super) state: PathBuf,
    pub(super) user: PathBuf,
    ssh: Option<PathBuf>,
}

impl Here {
    pub(super) fn new(ssh: Option<PathBuf>) -> Here {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let user = dir.path().join("user");
        std::fs::create_dir_all(&user).unwrap();
        Here {
            _dir: dir,
            state,
            user,
            ssh,
        }
    }

    pub(super) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env("HOME", &self.user)
            .env("CROSS_AGENT_HOME", &self.state)
            .env_remove("CROSS_AGENT_DAEMON_BIN")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME");
        match &self.ssh {
            Some(ssh) => command.env("CROSS_AGENT_SSH", ssh),
            None => command.env_remove("CROSS_AGENT_SSH"),
        };
        command
    }

    pub(super) fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// `hosts status --json`'s one host.
    fn host(&self) -> Value {
        let out = self.run(&["hosts", "status", "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let status: Value = serde_json::from_slice(&out.stdout).unwrap();
        status["hosts"][0].clone()
    }

    /// Polls the host's status until `done` holds, keeping every state seen.
    fn wait_for(&self, what: &str, done: impl Fn(&Value) -> bool) -> (Value, Vec<String>) {
        let deadline = Instant::now() + Duration::from_secs(40);
        let mut seen = Vec::new();
        loop {
            let host = self.host();
            let state = host["state"].as_str().unwrap_or("").to_owned();
            if seen.last() != Some(&state) {
                seen.push(state);
            }
            if done(&host) {
                return (host, seen);
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; last status {host:#}; states {seen:?}; daemon log:\n{}",
                cross_agent_testkit::logs::daemon_log(&self.state)
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for Here {
    fn drop(&mut self) {
        let _ = self
            .command(&["daemon", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

pub(super) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(super) fn rig() -> Option<Sshd> {
    if !Sshd::available() {
        eprintln!("skipped: no /usr/sbin/sshd (scripts/install-debian-packages installs it)");
        return None;
    }
    Some(Sshd::start(std::path::Path::new(BIN)).unwrap())
}

fn add_there(here: &Here) {
    let out = here.run(&["hosts", "add", Sshd::ALIAS]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn the_link_connects_and_comes_back_after_its_ssh_child_is_killed() {
    let Some(sshd) = rig() else { return };
    let here = Here::new(Some(sshd.ssh_program()));
    add_there(&here);

    let (host, _) = here.wait_for("connected with a round trip", |h| {
        h["state"] == "connected" && h["rtt_ms"].is_f64()
    });
    assert_eq!(host["name"], "there");
    assert_eq!(host["destination"], "there");
    assert_eq!(host["remote_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(host["remote_protocol_version"], PROTOCOL_VERSION);
    assert_eq!(host["last_error"], Value::Null);
    assert!(host["rtt_ms"].as_f64().unwrap() > 0.0, "{host:#}");
    // It is the remote's daemon that answered: its own home has its socket now.
    assert!(sshd.remote_state().join("daemon.sock").exists());

    let first_pid = host["ssh_pid"].as_u64().unwrap();
    let killed = Command::new("kill")
        .args(["-KILL", &first_pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let (host, states) = here.wait_for("connected again on a new ssh", |h| {
        h["state"] == "connected"
            && h["ssh_pid"].as_u64().is_some_and(|pid| pid != first_pid)
            && h["rtt_ms"].is_f64()
    });
    assert!(
        states.iter().any(|s| s == "backing_off"),
        "the link backed off before reconnecting: {states:?}"
    );
    assert_eq!(host["attempts"], 2);
    // The killed child was reaped: no zombie is left under the daemon.
    let stat = std::fs::read_to_string(format!("/proc/{first_pid}/stat")).unwrap_or_default();
    assert!(stat.is_empty(), "ssh {first_pid} still there: {stat}");
}

#[test]
fn a_changed_host_key_is_refused_in_ssh_s_own_words() {
    let Some(mut sshd) = rig() else { return };
    sshd.change_host_key().unwrap();
    let here = Here::new(Some(sshd.ssh_program()));
    add_there(&here);

    let (host, _) = here.wait_for("ssh's host key refusal", |h| {
        h["last_error"].as_str().is_some()
    });
    let error = host["last_error"].as_str().unwrap();
    assert!(
        error.contains("Host key verification failed")
            || error.contains("REMOTE HOST IDENTIFICATION HAS CHANGED"),
        "{host:#}"
    );
    assert_eq!(host["state"], "backing_off");
    assert_eq!(host["remote_version"], Value::Null);
}

/// An older release's `rpc --stdio`: its daemon speaks protocol 1 and refuses this one's `hello`
/// the way every daemon refuses another version (`protocol_mismatch` with both in `data`).
pub(super) const OLDER_REMOTE: &str = r#"#!/bin/sh
IFS= read -r line
id=$(printf '%s' "$line" | sed -n 's/^{"id":\([0-9]*\).*/\1/p')
client=$(printf '%s' "$line" | sed -n 's/.*"protocol_version":\([0-9]*\).*/\1/p')
printf '{"type":"error","id":%s,"error":{"code":"protocol_mismatch","message":"this daemon speaks protocol 1","data":{"daemon_protocol_version":1,"client_protocol_version":%s,"daemon_pid":4242,"daemon_version":"0.0.1"}}}\n' "$id" "$client"
"#;

#[test]
fn an_older_remote_is_refused_naming_both_versions_and_not_retried_at_once() {
    let Some(sshd) = rig() else { return };
    sshd.replace_remote_program(OLDER_REMOTE).unwrap();
    let here = Here::new(Some(sshd.ssh_program()));
    add_there(&here);

    let (host, _) = here.wait_for("refused", |h| h["state"] == "refused");
    let error = host["last_error"].as_str().unwrap();
    for part in [
        "host `there` runs cross-agent 0.0.1 (protocol 1)",
        &format!(
            "this machine runs cross-agent {} (protocol {PROTOCOL_VERSION})",
            env!("CARGO_PKG_VERSION")
        ),
    ] {
        assert!(error.contains(part), "{part:?} not in {error:?}");
    }
    assert_eq!(host["remote_version"], "0.0.1");
    assert_eq!(host["remote_protocol_version"], 1);
    assert!(host["next_attempt_at"].is_string(), "{host:#}");
    // No tight loop: a second later it has still tried once.
    std::thread::sleep(Duration::from_secs(2));
    let later = here.host();
    assert_eq!(later["state"], "refused");
    assert_eq!(later["attempts"], 1);
}

/// The bytes of `hello` and an `index_listing` call (whose answer carries the listing's bytes
/// after its frame), as one client writes them.
fn hello_and_listing(cwd: &str) -> Vec<u8> {
    let mut bytes = frame::encode_call(
        RequestId(1),
        HelloParams {
            protocol_version: PROTOCOL_VERSION,
            client_kind: ClientKind::Link,
            client_pid: 1,
            client_version: "test".into(),
        },
    )
    .unwrap();
    bytes.extend(
        frame::encode_call(
            RequestId(2),
            IndexListingParams {
                agents: Vec::new(),
                scope: Scope::Any,
                cwd: cwd.to_owned(),
                limit: None,
                now: 0,
                active_window_min: 60,
                caller: CallerContext::default(),
            },
        )
        .unwrap(),
    );
    bytes
}

/// Writes `input`, closes the writing side and reads everything back.
fn exchange_on_socket(socket: &std::path::Path, input: &[u8]) -> Vec<u8> {
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    stream.write_all(input).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = Vec::new();
    stream.read_to_end(&mut out).unwrap();
    out
}

fn exchange_on_stdio(mut command: Command, input: &[u8]) -> Vec<u8> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    out.stdout
}

#[test]
fn rpc_stdio_relays_hello_and_a_listing_byte_exact_here_and_over_ssh() {
    // Here: the relay's bytes are the socket's bytes.
    let here = Here::new(None);
    let input = hello_and_listing(here.user.to_str().unwrap());
    let relayed = exchange_on_stdio(here.command(&["rpc", "--stdio"]), &input);
    let direct = exchange_on_socket(&here.state.join("daemon.sock"), &input);
    assert_eq!(text(&relayed), text(&direct));
    let first_line = relayed.split(|b| *b == b'\n').next().unwrap();
    let hello: Value = serde_json::from_slice(first_line).unwrap();
    assert_eq!(hello["type"], "response", "{hello:#}");
    assert_eq!(hello["result"]["protocol_version"], PROTOCOL_VERSION);
    // The listing's frame and the bytes after it both came through.
    let listing_frame: Value =
        serde_json::from_slice(relayed.split(|b| *b == b'\n').nth(1).unwrap()).unwrap();
    assert_eq!(listing_frame["id"], 2, "{listing_frame:#}");
    assert!(listing_frame["result"]["bytes"].as_u64().unwrap() > 0);

    // There: through the real sshd, the same as on the remote's own socket.
    let Some(sshd) = rig() else { return };
    let mut over_ssh = Command::new(sshd.ssh_program());
    over_ssh.args([
        "-T",
        "-o",
        "BatchMode=yes",
        "--",
        Sshd::ALIAS,
        "cross-agent",
        "rpc",
        "--stdio",
    ]);
    let input = hello_and_listing(sshd.remote_home().to_str().unwrap());
    let relayed = exchange_on_stdio(over_ssh, &input);
    let direct = exchange_on_socket(&sshd.remote_state().join("daemon.sock"), &input);
    assert_eq!(text(&relayed), text(&direct));
    assert!(text(&relayed).starts_with("{\"type\":\"response\",\"id\":1,"));
}

/// A Claude transcript titled `title` in `home`, active a minute ago.
fn claude_session(home: &std::path::Path, cwd: &str, id: &str, title: &str) {
    use cross_agent_testkit::synthetic_stores::ClaudeTranscript;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut t = ClaudeTranscript::new(home, cwd, id);
    t.user("hello", now - 60_000)
        .custom_title(title)
        .assistant_text("Hi.", now - 59_000);
    t.write().unwrap();
}

#[test]
fn hosts_all_merges_the_listing_naming_each_host_and_refuses_a_name_on_two() {
    let Some(sshd) = rig() else { return };
    let here = Here::new(Some(sshd.ssh_program()));
    claude_session(&here.user, "/work/api", "c-here", "shared");
    claude_session(&sshd.remote_home(), "/srv/api", "c-there", "shared");
    claude_session(&sshd.remote_home(), "/srv/api", "c-lonely", "lonely");
    add_there(&here);
    here.wait_for("connected", |h| h["state"] == "connected");

    let out = here.run(&["sessions", "--hosts", "all", "--agent", "claude", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut seen: Vec<(Value, String)> = listing["claude"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["host"].clone(),
                e["session_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        seen,
        vec![
            (Value::Null, "c-here".to_owned()),
            (Value::from("there"), "c-lonely".to_owned()),
            (Value::from("there"), "c-there".to_owned()),
        ]
    );

    // Only there: every entry names it.
    let out = here.run(&["sessions", "--host", "there", "--agent", "claude", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let there: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(there["claude"].as_array().unwrap().len(), 2, "{there:#}");
    assert!(
        there["claude"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["host"] == "there")
    );

    // A name on both machines, asked of all: refused naming both, nothing sent.
    let out = here.run(&[
        "send",
        "claude",
        "hi",
        "--session",
        "shared",
        "--host",
        "all",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("on this machine and host `there`"),
        "{stderr}"
    );
    // A host nobody added: refused naming it.
    let out = here.run(&[
        "send",
        "claude",
        "hi",
        "--session",
        "lonely",
        "--host",
        "nowhere",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("no host `nowhere`"),
        "{}",
        text(&out.stderr)
    );
    // Both refusals were this daemon's own: each has its decision line here, as a refusal
    // by the engine would.
    let log = std::fs::read_to_string(here.state.join("decisions.jsonl")).unwrap();
    let kinds: Vec<(String, String)> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|d| d["kind"] == "name_ambiguous" || d["kind"] == "send_refused")
        .map(|d| (d["kind"].as_str().unwrap().to_owned(), d.to_string()))
        .collect();
    assert_eq!(kinds.len(), 2, "{kinds:#?}");
    assert_eq!(kinds[0].0, "name_ambiguous", "{kinds:#?}");
    assert!(
        kinds[0].1.contains("2 machines have a claude session"),
        "{kinds:#?}"
    );
    assert!(
        kinds[0].1.contains(r#""hosts":["this machine","there"]"#),
        "{kinds:#?}"
    );
    assert_eq!(kinds[1].0, "send_refused", "{kinds:#?}");
    assert!(kinds[1].1.contains("no host `nowhere`"), "{kinds:#?}");
}
