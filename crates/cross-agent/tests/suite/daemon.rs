//! `cross-agent daemon …` and autostart, driven through the built binary: real processes, real
//! sockets, signals, each test on its own temporary `CROSS_AGENT_HOME` and `HOME` (never the
//! real ones). Every test stops what it started, even when it fails.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_protocol::rpc::{ClientKind, StatusParams};
use pretty_assertions::assert_eq;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");

/// A temporary user: `user/` is its `HOME`, `state/` its `CROSS_AGENT_HOME`. Dropping it stops
/// any daemon still running on that home.
struct Env {
    dir: tempfile::TempDir,
    state: PathBuf,
    user: PathBuf,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let user = dir.path().join("user");
        std::fs::create_dir_all(&user).unwrap();
        Env { dir, state, user }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command.args(args);
        self.configure(&mut command);
        command
    }

    /// This user's environment on `command`.
    fn configure(&self, command: &mut Command) {
        command
            .env("HOME", &self.user)
            .env("CROSS_AGENT_HOME", &self.state)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("GROK_HOME")
            .env_remove("CROSS_AGENT_DAEMON_BIN");
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn home(&self) -> Home {
        let (state, user) = (self.state.clone(), self.user.clone());
        Home::from_vars(move |name| match name {
            "CROSS_AGENT_HOME" => Some(state.clone().into_os_string()),
            "HOME" => Some(user.clone().into_os_string()),
            _ => None,
        })
        .unwrap()
    }

    fn status_json(&self) -> (i32, Value) {
        let out = self.run(&["daemon", "status", "--json"]);
        let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code().unwrap(), json)
    }

    fn start_json(&self) -> Value {
        let out = self.run(&["daemon", "start", "--json"]);
        assert!(out.status.success(), "start failed: {}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn daemon_log(&self) -> String {
        cross_agent_testkit::logs::daemon_log(&self.state)
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

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// How long a daemon may take to exit or to be the only one left: a ceiling for a loaded
/// machine, never a measure (a pass returns as soon as the condition holds).
const PATIENCE: Duration = Duration::from_secs(120);

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Live `cross-agent daemon run` processes whose environment names this home (Linux `/proc`).
fn daemons_on(state: &Path) -> Vec<u32> {
    let wanted = format!("CROSS_AGENT_HOME={}", state.display());
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let (Ok(cmdline), Ok(environ)) = (
            std::fs::read(entry.path().join("cmdline")),
            std::fs::read(entry.path().join("environ")),
        ) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_daemon = args.windows(2).any(|w| w == [b"daemon".as_slice(), b"run"]);
        let on_home = environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes());
        if is_daemon && on_home && cross_agent_ipc::process::is_alive(pid) {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn start_status_stop_through_the_binary() {
    let env = Env::new();

    let (code, json) = env.status_json();
    assert_eq!(code, 3, "status exits 3 when not running");
    assert_eq!(json["state"], "stopped");
    assert!(!env.state.exists(), "status alone creates nothing");

    let out = env.run(&["daemon", "start"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.starts_with("started the cross-agent daemon: pid "),
        "{said}"
    );

    let (code, json) = env.status_json();
    assert_eq!(code, 0, "status exits 0 when running");
    assert_eq!(json["state"], "running");
    assert_eq!(json["generation"], 1);
    assert_eq!(json["home"], env.state.to_str().unwrap());
    assert_eq!(
        json["socket"],
        env.state.join("daemon.sock").to_str().unwrap()
    );
    assert_eq!(json["version"], env!("CARGO_PKG_VERSION"));
    let pid = json["pid"].as_u64().unwrap() as u32;
    assert_eq!(daemons_on(&env.state), vec![pid]);

    let human = text(&env.run(&["daemon", "status"]).stdout);
    assert!(
        human.starts_with("running\n") && human.contains(&format!("pid         {pid}")),
        "{human}"
    );

    // Starting again is a no-op that says so.
    let out = env.run(&["daemon", "start"]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        format!("the cross-agent daemon is already running: pid {pid}, generation 1\n")
    );

    let out = env.run(&["daemon", "stop"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("stopped the cross-agent daemon (pid {pid})\n")
    );
    assert!(
        !cross_agent_ipc::process::is_alive(pid),
        "stop waits for the process to exit"
    );
    assert!(!env.state.join("daemon.sock").exists());
    assert_eq!(env.status_json().0, 3);

    // Stopping what is not running is not a failure.
    let out = env.run(&["daemon", "stop"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("not running"));
}

#[test]
fn the_generation_increments_across_restarts() {
    let env = Env::new();
    let first = env.start_json();
    assert_eq!(
        (first["started"].as_bool(), first["generation"].as_u64()),
        (Some(true), Some(1))
    );

    let out = env.run(&["daemon", "restart", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // With --json, stdout is exactly one JSON object: per daemon, what happened.
    let second: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(second["ok"], true);
    let replaced = &second["daemons"][0];
    assert_eq!(replaced["outcome"], "ok");
    assert_eq!(replaced["old_pid"], first["pid"]);
    assert_eq!(replaced["new_generation"], 2);
    assert_ne!(replaced["new_pid"], first["pid"]);
    // Nothing was in flight: the old one exits at once.
    let old_pid = u32::try_from(first["pid"].as_u64().unwrap()).unwrap();
    assert!(wait_until(PATIENCE, || {
        !cross_agent_ipc::process::is_alive(old_pid)
    }));

    assert!(env.run(&["daemon", "stop"]).status.success());
    assert_eq!(env.start_json()["generation"], 3);
}

#[test]
fn ten_concurrent_autostarts_end_with_exactly_one_daemon() {
    let env = Env::new();
    let home = env.home();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let hellos = runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..10 {
            let home = home.clone();
            tasks.spawn(async move {
                let options = ConnectOptions {
                    daemon_bin: Some(PathBuf::from(BIN)),
                    ..ConnectOptions::new(ClientKind::Cli)
                };
                let connection = cross_agent_ipc::connect_or_start(&home, &options).await?;
                connection.client.call(StatusParams {}).await?;
                Ok::<_, cross_agent_ipc::Error>((connection.hello, connection.started))
            });
        }
        let mut hellos = Vec::new();
        while let Some(result) = tasks.join_next().await {
            hellos.push(result.unwrap().unwrap());
        }
        hellos
    });

    let pid = hellos[0].0.daemon_pid;
    assert!(
        hellos
            .iter()
            .all(|(hello, _)| hello.daemon_pid == pid && hello.generation == 1)
    );
    assert_eq!(
        hellos.iter().filter(|(_, started)| *started).count(),
        1,
        "one client started it"
    );
    assert!(
        wait_until(PATIENCE, || daemons_on(&env.state) == vec![pid]),
        "exactly one daemon process: {:?}",
        daemons_on(&env.state)
    );
}

#[test]
fn a_second_daemon_run_exits_with_a_clear_message() {
    let env = Env::new();
    let pid = env.start_json()["pid"].as_u64().unwrap();
    let out = env.run(&["daemon", "run"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "a cross-agent daemon is already running for this home (pid {pid})"
        )) && stderr.contains("daemon.pid"),
        "{stderr}"
    );
    // The first daemon is untouched.
    assert_eq!(env.status_json().1["pid"], pid);
}

#[test]
fn termination_signals_stop_the_daemon_cleanly() {
    let env = Env::new();
    for (signal, name) in [("TERM", "SIGTERM"), ("INT", "SIGINT"), ("HUP", "SIGHUP")] {
        let pid = env.start_json()["pid"].as_u64().unwrap() as u32;
        let killed = Command::new("kill")
            .args(["-s", signal, &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        assert!(
            wait_until(PATIENCE, || { !cross_agent_ipc::process::is_alive(pid) }),
            "{name} stops the daemon"
        );
        assert!(
            !env.state.join("daemon.sock").exists(),
            "{name}: socket removed"
        );
        assert_eq!(env.status_json().0, 3);
        let log = env.daemon_log();
        assert!(
            log.contains(&format!("received a termination signal signal=\"{name}\"")),
            "{log}"
        );
    }
    let log = env.daemon_log();
    assert_eq!(log.matches("daemon stopped").count(), 3, "{log}");
}

#[test]
fn a_stale_socket_and_a_dead_pid_are_recovered_by_a_real_start() {
    let env = Env::new();
    std::fs::create_dir_all(&env.state).unwrap();
    drop(std::os::unix::net::UnixListener::bind(env.state.join("daemon.sock")).unwrap());
    std::fs::write(env.state.join("daemon.pid"), "2147483000\n").unwrap();

    let (code, _) = env.status_json();
    assert_eq!(code, 3, "a dead pid and a dead socket read as not running");
    let started = env.start_json();
    assert_eq!(started["started"], true);
    let pid = started["pid"].as_u64().unwrap();
    assert_eq!(
        std::fs::read_to_string(env.state.join("daemon.pid")).unwrap(),
        format!("{pid}\n")
    );
}

#[test]
fn a_daemon_that_holds_the_lock_but_does_not_answer_is_reported_and_stopped() {
    let env = Env::new();
    std::fs::create_dir_all(&env.state).unwrap();
    // A stand-in for a hung daemon: holds the pidfile lock with its pid written, never listens.
    let mut hung = Command::new("python3")
        .arg("-c")
        .arg(
            "import fcntl, os, sys, time\n\
             f = open(sys.argv[1], 'a+')\n\
             fcntl.flock(f, fcntl.LOCK_EX)\n\
             f.truncate(0); f.write(f'{os.getpid()}\\n'); f.flush()\n\
             print('locked', flush=True)\n\
             time.sleep(60)\n",
        )
        .arg(env.state.join("daemon.pid"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(hung.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line, "locked\n");

    let (code, json) = env.status_json();
    assert_eq!(code, 1, "status exits 1 for a daemon that does not answer");
    assert_eq!(json["state"], "unresponsive");
    assert_eq!(json["pid"], hung.id());

    let out = env.run(&["daemon", "stop"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("does not answer on its socket; sending SIGTERM"));
    assert!(text(&out.stdout).contains("with SIGTERM"));
    let status = hung.wait().unwrap();
    assert!(!status.success());
}

#[test]
fn unsafe_homes_are_refused_before_anything_is_written() {
    let env = Env::new();
    let user = env.user.clone();
    for dir in [".claude", ".codex", ".grok", ".config/claude"] {
        std::fs::create_dir_all(user.join(dir)).unwrap();
    }
    std::os::unix::fs::symlink(user.join(".codex"), env.dir.path().join("link")).unwrap();
    let custom = env.dir.path().join("claude-config");
    std::fs::create_dir_all(&custom).unwrap();

    let cases: Vec<(PathBuf, &str)> = vec![
        (PathBuf::from("/"), "it is the root directory /"),
        (user.clone(), "it is your home directory"),
        (
            user.join(".claude/bridge"),
            "it is inside Claude Code's own directory",
        ),
        (
            user.join(".config/claude"),
            "it is Claude Code's own directory",
        ),
        (user.join(".grok"), "it is Grok's own directory"),
        (env.dir.path().join("link"), "it is Codex's own directory"),
        (
            env.dir.path().join("link/state"),
            "inside Codex's own directory",
        ),
        (custom.join("x"), "inside Claude Code's own directory"),
    ];
    for (home, reason) in cases {
        for args in [
            &["daemon", "start"][..],
            &["daemon", "status"],
            &["daemon", "run"],
        ] {
            let out = env
                .command(args)
                .env("CROSS_AGENT_HOME", &home)
                .env("CLAUDE_CONFIG_DIR", &custom)
                .output()
                .unwrap();
            let stderr = text(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{args:?} {}: {stderr}",
                home.display()
            );
            assert!(
                stderr.contains(&format!("refusing CROSS_AGENT_HOME={}", home.display()))
                    && stderr.contains(reason),
                "{args:?} {}: {stderr}",
                home.display()
            );
        }
    }
    // Nothing was created inside any agent's directory.
    for dir in [".claude", ".codex", ".grok", ".config/claude"] {
        assert_eq!(
            std::fs::read_dir(user.join(dir)).unwrap().count(),
            0,
            "{dir}"
        );
    }
    assert_eq!(std::fs::read_dir(&custom).unwrap().count(), 0);
}

#[test]
fn a_filesystem_that_cannot_chmod_stops_with_an_error_naming_the_path() {
    // procfs refuses chmod even to root, as FAT or some network mounts do: a directory there can
    // never be made owner-only. Nothing is written (the chmod is the first thing tried).
    let env = Env::new();
    for args in [&["daemon", "start"][..], &["daemon", "run"]] {
        let out = env
            .command(args)
            .env("CROSS_AGENT_HOME", "/proc/self/fdinfo")
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("cannot make /proc/") && stderr.contains("/fdinfo owner-only"),
            "{stderr}"
        );
        assert!(stderr.contains("supports chmod"), "{stderr}");
    }
}

#[test]
fn an_old_install_is_tightened_on_first_run() {
    let env = Env::new();
    std::fs::create_dir_all(env.state.join("logs")).unwrap();
    std::fs::write(env.state.join("decisions.jsonl"), "{}\n").unwrap();
    std::fs::set_permissions(&env.state, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        env.state.join("logs"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(
        env.state.join("decisions.jsonl"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();

    env.start_json();
    assert_eq!(mode(&env.state), 0o700);
    assert_eq!(mode(&env.state.join("logs")), 0o700);
    assert_eq!(mode(&env.state.join("decisions.jsonl")), 0o600);
    for entry in std::fs::read_dir(&env.state).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path) & 0o077, 0, "{} is owner-only", path.display());
    }
    for entry in std::fs::read_dir(env.state.join("logs")).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path) & 0o077, 0, "{} is owner-only", path.display());
    }
}

#[test]
fn a_daemon_program_that_fails_is_reported_with_its_log() {
    let env = Env::new();
    let fake = env.dir.path().join("fake-daemon");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"cannot open hub.db: disk full\" >&2\nexit 4\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env
        .command(&["daemon", "start"])
        .env("CROSS_AGENT_DAEMON_BIN", &fake)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let log = env.state.join("logs/daemon-console.log");
    assert!(
        stderr.contains("the cross-agent daemon could not start: cannot open hub.db: disk full")
            && !stderr.contains("did not come up")
            && stderr.contains("exit code 4")
            && stderr.contains("cannot open hub.db: disk full")
            && stderr.contains(&log.display().to_string()),
        "{stderr}"
    );
    assert_eq!(mode(&log), 0o600);
}

#[test]
fn reload_replaces_the_daemon_and_reports_it_per_daemon() {
    let env = Env::new();
    let first = env.start_json();
    let old_pid = first["pid"].as_u64().unwrap();
    let out = env.run(&["reload"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("reload: the daemon of ")
            && stdout.contains(&format!("  ok      daemon {old_pid} -> "))
            && stdout.contains("(generation 2); ")
            && stdout.contains("had nothing in flight and exits"),
        "{stdout}"
    );
    let (code, status) = env.status_json();
    assert_eq!((code, &status["generation"]), (0, &Value::from(2)));
    assert!(wait_until(PATIENCE, || {
        !cross_agent_ipc::process::is_alive(u32::try_from(old_pid).unwrap())
    }));
    assert_eq!(daemons_on(&env.state).len(), 1);

    // With nothing running, a reload starts one.
    assert!(env.run(&["daemon", "stop"]).status.success());
    let out = env.run(&["reload"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("no daemon was running; started pid"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_restart_whose_new_daemon_fails_exits_non_zero_and_the_old_one_keeps_serving() {
    let env = Env::new();
    let first = env.start_json();
    let fake = env.dir.path().join("broken-daemon");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"cannot open hub.db: disk full\" >&2\nexit 4\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env
        .command(&["daemon", "restart"])
        .env("CROSS_AGENT_DAEMON_BIN", &fake)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("  FAILED  daemon {}: ", first["pid"]))
            && stdout.contains("exited with exit status: 4")
            && stdout.contains("disk full")
            && stdout.contains("the old one keeps serving"),
        "{stdout}"
    );
    let (code, status) = env.status_json();
    assert_eq!(code, 0);
    assert_eq!(
        (&status["pid"], &status["generation"], &status["draining"]),
        (&first["pid"], &first["generation"], &serde_json::json!([]))
    );
    // It still holds the home: a second daemon is refused.
    let second = env.run(&["daemon", "run"]);
    assert!(!second.status.success());
}

/// `cross-agent <args>` as a shell user writes `cross-agent <args> 3>&1 | cat`: its stdout is a
/// pipe and descriptor 3 a copy of it, without close-on-exec. Returns once the command has
/// exited, with what it exited with and the pipe's read end.
fn run_with_its_stdout_also_as_fd_3(env: &Env, args: &[&str]) -> (ExitStatus, std::fs::File) {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("exec \"$0\" \"$@\" 3>&1")
        .arg(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    env.configure(&mut command);
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let status = child.wait().unwrap();
    (
        status,
        std::fs::File::from(std::os::fd::OwnedFd::from(stdout)),
    )
}

/// The descriptors of process `pid` that are an end of the pipe `pipe` is the read end of.
fn descriptors_on_the_pipe(pid: u32, pipe: &std::fs::File) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let wanted = format!("pipe:[{}]", pipe.metadata().unwrap().ino());
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|to| to.as_os_str() == wanted.as_str())
        })
        .map(|fd| fd.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The daemon started by `args` keeps no descriptor its starter inherited: the pipe behind
/// `3>&1 | cat` reaches its end as soon as the starter exits, while the daemon runs on.
fn a_daemon_started_by_keeps_nothing_of_its_starters(args: &[&str]) {
    let env = Env::new();
    let (status, mut pipe) = run_with_its_stdout_also_as_fd_3(&env, args);
    assert!(status.success(), "`{}` failed", args.join(" "));
    let (code, json) = env.status_json();
    assert_eq!(code, 0, "the daemon runs: {json}");
    let pid = json["pid"].as_u64().unwrap() as u32;
    assert_eq!(
        descriptors_on_the_pipe(pid, &pipe),
        Vec::<String>::new(),
        "the daemon (pid {pid}) holds the starter's pipe"
    );
    // So `cat` would see the end now; reading does not wait for the daemon to exit.
    let mut said = String::new();
    std::io::Read::read_to_string(&mut pipe, &mut said).unwrap();
    assert_eq!(daemons_on(&env.state), vec![pid], "{said}");
    // Its log writer is a thread of its own: the line may reach the file after the answer.
    assert!(
        wait_until(PATIENCE, || env
            .daemon_log()
            .contains("closed the descriptors inherited")),
        "{}",
        env.daemon_log()
    );
}

#[test]
fn daemon_start_with_a_pipe_as_fd_3_returns_and_the_pipe_ends() {
    a_daemon_started_by_keeps_nothing_of_its_starters(&["daemon", "start"]);
}

#[test]
fn an_autostart_by_status_with_a_pipe_as_fd_3_leaves_the_pipe_to_end() {
    a_daemon_started_by_keeps_nothing_of_its_starters(&["status"]);
}
