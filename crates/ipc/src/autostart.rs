//! Reaching the daemon, starting it when nothing answers.
//!
//! [`connect_or_start`] connects and says `hello`. When nothing listens it takes the home's
//! `autostart.lock` (so of ten clients starting at once only one spawns a daemon and the rest
//! find it answering), spawns `cross-agent daemon run --detached` with its output going to
//! `logs/daemon-console.log`, and retries with backoff until the daemon answers or the deadline
//! passes. The daemon's own pidfile lock is what guarantees one daemon; the autostart lock only
//! saves pointless spawns. A daemon that exits with an error before it answers is reported at
//! once with the reason it gave ([`Error::DaemonFailed`]), not as a timeout.
//!
//! The home is verified ([`Home::verify`]) before anything is touched, and the socket checked
//! to be this user's before a byte is written to it ([`crate::transport::connect`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cross_agent_protocol::rpc::{ClientKind, HelloResponse};
use cross_agent_protocol::settings as var;

use crate::client::Client;
use crate::error::{Error, Result};
use cross_agent_home::Home;
use cross_agent_home::home::{open_private_append, open_private_rw};
use cross_agent_home::pidfile::{self, Holder};

/// Variables naming *who is calling*. A daemon serves every session of the user, so the first
/// client to start it must not hand down its own identity: it is removed from the daemon's
/// environment.
const CALLER_IDENTITY_VARS: &[&str] = &[
    "CLAUDE_CODE_SESSION_ID",
    "GROK_SESSION_ID",
    "COPILOT_AGENT_SESSION_ID",
    var::SELF,
    var::SELF_SESSION,
    var::CONVERSATION_ID,
];

/// How a client connects.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// What kind of process this is, sent in `hello`.
    pub client_kind: ClientKind,
    /// The daemon program; `None` means `CROSS_AGENT_DAEMON_BIN`, else this executable.
    pub daemon_bin: Option<PathBuf>,
    /// How long to wait for an autostarted daemon to answer.
    pub start_timeout: Duration,
    /// How long a `hello` may take on a live socket before the daemon counts as hung.
    pub hello_timeout: Duration,
}

impl ConnectOptions {
    /// Defaults: 10 s to start, 5 s for `hello`.
    pub fn new(client_kind: ClientKind) -> Self {
        Self {
            client_kind,
            daemon_bin: None,
            start_timeout: Duration::from_secs(10),
            hello_timeout: Duration::from_secs(5),
        }
    }
}

/// A connection that has completed the handshake.
#[derive(Debug)]
pub struct Connection {
    /// The client, ready for calls.
    pub client: Client,
    /// What the daemon said in `hello`.
    pub hello: HelloResponse,
    /// True when this call started the daemon.
    pub started: bool,
}

/// Connects and says `hello`, without starting anything. [`Error::NotRunning`] when nothing
/// answers. An unsafe home ([`Home::verify`]) is refused before the socket is touched.
pub async fn connect(home: &Home, options: &ConnectOptions) -> Result<Connection> {
    home.verify()?;
    say_hello(home, options).await
}

/// [`connect`] on a home already verified.
async fn say_hello(home: &Home, options: &ConnectOptions) -> Result<Connection> {
    let socket = home.socket();
    let client = Client::connect(&socket).await?;
    let hello = tokio::time::timeout(options.hello_timeout, client.hello(options.client_kind))
        .await
        .map_err(|_| Error::Timeout {
            what: "the daemon's hello",
            socket: socket.clone(),
            waited: options.hello_timeout,
        })??;
    Ok(Connection {
        client,
        hello,
        started: false,
    })
}

/// Connects and says `hello`, starting the daemon first when nothing answers.
pub async fn connect_or_start(home: &Home, options: &ConnectOptions) -> Result<Connection> {
    match connect(home, options).await {
        Err(error) if answers_nothing(&error) => {}
        other => return other,
    }

    home.ensure_root()?;
    let deadline = Instant::now() + options.start_timeout;
    let _guard = take_autostart_lock(home, deadline, options.start_timeout).await?;

    // Whoever held the lock before us may have started it.
    match say_hello(home, options).await {
        Err(error) if answers_nothing(&error) => {}
        other => return other,
    }

    let bin = daemon_bin(options)?;
    let (mut child, mut output_from) = spawn_daemon(home, &bin)?;
    let mut spawns = 1;
    let mut pause = Duration::from_millis(5);
    loop {
        match say_hello(home, options).await {
            Ok(mut connection) => {
                connection.started = true;
                reap_later(child);
                return Ok(connection);
            }
            Err(error) if answers_nothing(&error) => {}
            Err(other) => return Err(other),
        }

        if let Ok(Some(status)) = child.try_wait() {
            if !status.success() {
                // It failed before it answered: its own words, now, not a timeout later.
                return Err(Error::DaemonFailed {
                    reason: what_it_said(home, output_from)
                        .unwrap_or_else(|| "it stopped without saying why".to_owned()),
                    bin,
                    status: describe(status),
                    log: home.console_log(),
                });
            }
            // It exited cleanly: it found another daemon holding the lock. If that one has
            // gone since (it was stopping), start ours again, a bounded number of times.
            if pidfile::probe(&home.pidfile())? == Holder::Free {
                if spawns >= 3 {
                    return Err(did_not_start(
                        home,
                        options.start_timeout,
                        format!("started it {spawns} times and each found the home locked"),
                    ));
                }
                (child, output_from) = spawn_daemon(home, &bin)?;
                spawns += 1;
            }
        }

        if Instant::now() >= deadline {
            reap_later(child);
            return Err(did_not_start(
                home,
                options.start_timeout,
                format!("nothing answers on {}", home.socket().display()),
            ));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

/// Nothing is there to talk to: no socket, nobody listening, or a daemon that dropped the
/// connection because it is stopping (its successor is then ours to start), or one that was
/// replaced and refuses new work (`shutting_down`: its successor holds the socket by now).
fn answers_nothing(error: &Error) -> bool {
    matches!(
        error,
        Error::NotRunning { .. }
            | Error::Closed { .. }
            | Error::Transport { .. }
            | Error::Rpc {
                code: cross_agent_protocol::rpc::ErrorCode::ShuttingDown,
                ..
            }
    )
}

/// The most of a daemon's last words quoted in an error.
const MAX_REASON_CHARS: usize = 2000;

/// The last line a daemon wrote to the console log from byte `from` on (what this start said,
/// not an earlier one), without the program's `cross-agent: ` prefix.
fn what_it_said(home: &Home, from: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(cross_agent_home::home::no_follow_flag())
        .open(home.console_log())
        .ok()?;
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?.trim();
    let line = line.strip_prefix("cross-agent: ").unwrap_or(line);
    Some(line.chars().take(MAX_REASON_CHARS).collect())
}

fn did_not_start(home: &Home, waited: Duration, detail: String) -> Error {
    let log = home.console_log();
    let tail = what_it_said(home, 0);
    let detail = match tail {
        Some(line) => format!("{detail}; it last said: {line}"),
        None => detail,
    };
    Error::DaemonDidNotStart {
        waited,
        log,
        detail,
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => status.to_string(),
    }
}

/// Takes `autostart.lock`, polling: std's blocking `lock()` could not honour the deadline.
async fn take_autostart_lock(
    home: &Home,
    deadline: Instant,
    waited: Duration,
) -> Result<std::fs::File> {
    let path = home.autostart_lock();
    let file = open_private_rw(&path)?;
    let mut pause = Duration::from_millis(2);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", &path, e)),
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                what: "another client starting the daemon",
                socket: home.socket(),
                waited,
            });
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

fn daemon_bin(options: &ConnectOptions) -> Result<PathBuf> {
    if let Some(bin) = &options.daemon_bin {
        return Ok(bin.clone());
    }
    if let Some(bin) = std::env::var_os(var::DAEMON_BIN).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(bin));
    }
    std::env::current_exe().map_err(|e| Error::io("find", "the current executable", e))
}

/// Starts `BIN daemon run --detached` with the home pinned in its environment, stdio on the
/// console log, and the root as its directory so it never holds a mount or a deleted directory
/// busy. The child puts itself in its own session (see `process::detach_session`) and closes
/// the descriptors this client inherited without close-on-exec (a pipe around the client would
/// otherwise stay open for the daemon's life): that is the daemon's first act, so every way of
/// starting it is covered. Returns the child and where its output starts in the console log.
fn spawn_daemon(home: &Home, bin: &PathBuf) -> Result<(tokio::process::Child, u64)> {
    let log_path = home.console_log();
    let stdout = open_private_append(&log_path)?;
    let output_from = stdout
        .metadata()
        .map_err(|e| Error::io("inspect", &log_path, e))?
        .len();
    let stderr = stdout
        .try_clone()
        .map_err(|e| Error::io("open", &log_path, e))?;
    let mut command = tokio::process::Command::new(bin);
    command
        .args(["daemon", "run", "--detached"])
        .env(var::HOME, OsString::from(home.root()))
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .kill_on_drop(false);
    for var in CALLER_IDENTITY_VARS {
        command.env_remove(var);
    }
    tracing::debug!(bin = %bin.display(), home = %home.root().display(), "starting the daemon");
    let child = command.spawn().map_err(|source| Error::Spawn {
        bin: bin.clone(),
        source,
    })?;
    Ok((child, output_from))
}

/// The spawned daemon is our child until we exit; waiting on it in the background keeps it from
/// lingering as a zombie if it stops while this client still runs.
fn reap_later(mut child: tokio::process::Child) {
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
}
