//! The daemon process against its file-descriptor limit, started the way some containers start
//! everything: `ulimit -n 1024`, soft and hard alike. More idle clients than descriptors must
//! not stop it — it used to run out, fail to read `daemon.pid` in its home check, take that for
//! "home gone" and exit. Each daemon here is the real binary behind `sh -c 'ulimit …; exec …'`,
//! so the limit is its own from its first instruction.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_protocol::rpc::{PROTOCOL_VERSION, StatusParams};
use cross_agent_testkit::logs::daemon_log;
use serde_json::Value;

use super::TempHome;
use super::bridge_support::{DaemonProcess, spawn_daemon_command};

/// More clients than a 1,024-descriptor daemon has descriptors.
const CLIENTS: usize = 1100;

/// A ceiling for what the daemon does next (answer, log, free a slot) on a loaded machine;
/// never a measure: each wait ends as soon as its condition holds.
const PATIENCE: Duration = Duration::from_secs(120);

/// `cross-agent daemon run` started by `sh` after `ulimit <limit>`, its output dropped (its
/// log file has it), with `env` added.
fn daemon_under(limit: &str, env: &[(&str, &str)]) -> Command {
    let exe = cross_agent_testkit::binaries::cross_agent_bin().unwrap();
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit {limit} && exec \"$0\" daemon run"))
        .arg(exe)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

async fn start(home: &TempHome, command: Command) -> (DaemonProcess, cross_agent_ipc::Connection) {
    let user = home.dir.path().join("user");
    spawn_daemon_command(home.root(), &user, command).await
}

/// The soft and hard "Max open files" of `pid`, as `/proc/<pid>/limits` shows them.
fn open_files_limit(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find_map(|line| line.strip_prefix("Max open files"))
        .unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    (fields[0].to_owned(), fields[1].to_owned())
}

/// Lets this test process hold `needed` more descriptors (its soft limit raised to its hard
/// one), or fails saying the test cannot run here.
fn room_for(needed: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )
        .unwrap();
    }
    let now = getrlimit(Resource::Nofile).current;
    assert!(
        now.is_none_or(|soft| soft >= needed + 256),
        "this test holds {needed} connections, but its descriptor limit is {now:?}"
    );
}

/// Waits until the daemon's log says `words` (its writer is a thread of its own, so a line
/// logged before an answer may reach the file after it), and returns the log.
fn log_saying(root: &Path, words: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let log = daemon_log(root);
        if log.contains(words) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "the log never said {words:?}: {log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn hello_line() -> String {
    format!(
        "{{\"id\":1,\"method\":\"hello\",\"params\":{{\"protocol_version\":{PROTOCOL_VERSION},\
         \"client_kind\":\"other\",\"client_pid\":1,\"client_version\":\"test\"}}}}\n"
    )
}

/// A client that connects and says `hello`, without waiting for the answer.
fn greet(socket: &Path) -> UnixStream {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(hello_line().as_bytes()).unwrap();
    stream
}

/// The daemon's first line on `stream`; `None` when it closed without one.
fn first_line(stream: &UnixStream) -> Option<Value> {
    let mut line = String::new();
    let read = BufReader::new(stream)
        .read_line(&mut line)
        .expect("the daemon neither answered nor closed");
    (read > 0).then(|| serde_json::from_str(&line).unwrap())
}

/// Connects until the daemon serves a new client again (it frees a slot once it has seen a
/// client go), and asks its status.
async fn served_again(home: &TempHome) -> u32 {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match cross_agent_ipc::connect(&home.home, &super::options()).await {
            Ok(connection) => {
                let status = connection.client.call(StatusParams {}).await.unwrap();
                return status.daemon_pid;
            }
            Err(error) => {
                assert!(
                    Instant::now() < deadline,
                    "the daemon never served again: {error}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_limit_of_1024_the_daemon_serves_up_to_its_cap_refuses_the_rest_and_serves_on() {
    room_for(CLIENTS as u64);
    let home = TempHome::new();
    let (mut process, held) = start(&home, daemon_under("-n 1024", &[])).await;
    let pid = process.child.id();
    // Soft and hard alike: nothing to raise.
    assert_eq!(
        open_files_limit(pid),
        ("1024".to_owned(), "1024".to_owned())
    );

    // One client after another, each keeping its connection: the first ones are served (the
    // helper's own connection holds one place), every one past the cap is told why.
    let socket: PathBuf = home.home.socket();
    let (served, refusals) = tokio::task::spawn_blocking(move || {
        let mut served = Vec::new();
        let mut refusals = Vec::new();
        for client in 0..CLIENTS {
            let stream = greet(&socket);
            match first_line(&stream) {
                Some(answer) if answer["type"] == "response" => served.push(stream),
                Some(answer) if answer["error"]["code"] == "too_many_connections" => {
                    assert_eq!(answer["id"], 1, "the refusal answers the hello: {answer}");
                    refusals.push(answer["error"]["message"].as_str().unwrap().to_owned());
                    let mut rest = Vec::new();
                    (&stream).read_to_end(&mut rest).unwrap();
                    assert!(rest.is_empty(), "a refused connection is closed");
                }
                Some(other) => panic!("client {client}: {other}"),
                None => panic!("client {client}: the daemon closed without a word"),
            }
        }
        (served, refusals)
    })
    .await
    .unwrap();

    // Half the descriptors are the cap; the other half stay the daemon's own.
    assert_eq!(served.len() + 1, 512);
    assert_eq!(refusals.len(), CLIENTS - served.len());
    let message = &refusals[0];
    assert!(
        message.contains(&format!(
            "the cross-agent daemon (pid {pid}) already serves 512 connections"
        )),
        "{message}"
    );
    assert!(
        message.contains("its file-descriptor limit is 1024"),
        "{message}"
    );
    assert!(message.contains("`LimitNOFILE=`"), "{message}");
    assert!(refusals.iter().all(|m| m == message));
    // Said once for the whole stretch at the cap, not once per refusal.
    let log = log_saying(home.root(), "serving the most connections allowed");
    assert_eq!(
        log.matches("serving the most connections allowed").count(),
        1,
        "{log}"
    );

    // Still running, still answering: on a connection it served all along, and to a new
    // client once some have gone.
    assert!(process.child.try_wait().unwrap().is_none(), "{log}");
    let status = held.client.call(StatusParams {}).await.unwrap();
    assert_eq!(status.daemon_pid, pid);
    drop(served);
    assert_eq!(served_again(&home).await, pid);
    log_saying(home.root(), "serving new connections again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_soft_descriptor_limit_is_raised_to_the_hard_one() {
    let home = TempHome::new();
    let (process, _held) = start(&home, daemon_under("-S -n 256", &[])).await;
    let (soft, hard) = open_files_limit(process.child.id());
    assert_ne!(soft, "256", "the soft limit was left where it was");
    assert_eq!(soft, hard);
    let log = log_saying(home.root(), "raised the file-descriptor limit");
    assert!(log.contains("before=256"), "{log}");
}

/// With a cap set past what the descriptors allow, the daemon does run out: its home check
/// must still tell its home is its own (it opens nothing), and it serves on once clients go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_out_of_descriptors_keeps_its_home_and_serves_on() {
    room_for(CLIENTS as u64);
    let home = TempHome::new();
    let env = [
        ("CROSS_AGENT_DAEMON_MAX_CONNECTIONS", "4000"),
        // The home check's heartbeat, to know one ran while the descriptors were gone.
        (
            "CROSS_AGENT_LOG",
            "info,cross_agent_daemon::server::home_watch=trace",
        ),
    ];
    let (mut process, held) = start(&home, daemon_under("-n 1024", &env)).await;
    let pid = process.child.id();
    // The set cap is warned about.
    log_saying(
        home.root(),
        "is more than the file-descriptor limit (1024) leaves room for",
    );

    let socket = home.home.socket();
    let clients = tokio::task::spawn_blocking(move || {
        (0..CLIENTS).map(|_| greet(&socket)).collect::<Vec<_>>()
    })
    .await
    .unwrap();

    // Out of descriptors: accept fails (said once) …
    let deadline = Instant::now() + PATIENCE;
    let starved_at = loop {
        let log = daemon_log(home.root());
        if let Some(at) = log.find("accept failed") {
            assert!(log[at..].contains("Too many open files"), "{log}");
            break at;
        }
        assert!(process.child.try_wait().unwrap().is_none(), "{log}");
        assert!(Instant::now() < deadline, "the daemon never ran out: {log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // … and a home check made while they are gone still finds the home its own.
    loop {
        let log = daemon_log(home.root());
        if log[starved_at..].contains("the home is still this daemon's") {
            break;
        }
        assert!(
            process.child.try_wait().unwrap().is_none(),
            "the daemon stopped while out of descriptors: {}",
            &log[starved_at..]
        );
        assert!(
            Instant::now() < deadline,
            "no home check ran: {}",
            &log[starved_at..]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(log_mentions(home.root(), "no longer its own"), 0);

    drop(clients);
    assert_eq!(served_again(&home).await, pid);
    let status = held.client.call(StatusParams {}).await.unwrap();
    assert_eq!(status.daemon_pid, pid);
    assert!(process.child.try_wait().unwrap().is_none());
    let log = log_saying(home.root(), "accepting connections again");
    assert_eq!(log.matches("accept failed").count(), 1, "said once: {log}");
}

fn log_mentions(root: &Path, words: &str) -> usize {
    daemon_log(root).matches(words).count()
}
