//! One host's link: the ssh child, the remote daemon's `hello`, pings, and reconnecting.
//!
//! [`run`] loops until told to stop. Each round starts
//! `<ssh> -T -o BatchMode=yes -- <dest> cross-agent rpc --stdio` (the ssh on the daemon's
//! `PATH`, so the person's own `~/.ssh/config`, keys and agent apply; `BatchMode` so it never
//! waits on a prompt nobody sees; `--` so the destination is never read as an option), puts a
//! [`Client`] on its pipes and says `hello` as [`ClientKind::Link`]. Connected, it pings with
//! `status` (every version has it) to measure the round trip and to notice a dead link before a
//! request does. When the round ends — ssh exits, a ping fails, the remote refuses — the child
//! is killed and reaped, what went wrong is kept in ssh's own words when ssh said something
//! (its stderr's last line), and the next round waits: 1 s doubling to 60 s, jittered, back to
//! 1 s after a link that was up for a while. A remote of another protocol version is
//! [`LinkState::Refused`] and tried again only after [`LinkConfig::refused_pause`]: nothing
//! on either side changes by itself, so retrying sooner would only spin.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cross_agent_ipc::{Client, Error as IpcError};
use cross_agent_protocol::hosts::{HostStatus, LinkState};
use cross_agent_protocol::rpc::{ClientKind, PROTOCOL_VERSION, StatusParams};
use cross_agent_protocol::timestamp::{UnixMillis, now_rfc3339};
use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

use crate::file::Host;

/// The most of ssh's last line kept as `last_error`.
const MAX_ERROR_CHARS: usize = 500;

/// How long after ssh's pipes close its exit and last words are waited for.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A link counts as having been up (and the pause starts again from the shortest) after this.
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// How links are run; [`LinkConfig::default`] is what the daemon uses.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// The ssh program (`CROSS_AGENT_SSH`, else `ssh` found on `PATH` at each start).
    pub ssh: PathBuf,
    /// The first pause after a failure.
    pub backoff_min: Duration,
    /// The longest pause after failures.
    pub backoff_max: Duration,
    /// The pause after a remote of another protocol version refused the link.
    pub refused_pause: Duration,
    /// How long ssh and the remote daemon get to answer `hello`.
    pub hello_timeout: Duration,
    /// How often a connected link is pinged.
    pub ping_every: Duration,
    /// How long a ping may take before the link counts as dead.
    pub ping_timeout: Duration,
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            ssh: PathBuf::from("ssh"),
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            refused_pause: Duration::from_secs(300),
            hello_timeout: Duration::from_secs(30),
            ping_every: Duration::from_secs(15),
            ping_timeout: Duration::from_secs(20),
        }
    }
}

/// What a host's link shares with the rest of the daemon: its status, and the client while
/// it is connected (what a forwarded request is called on).
#[derive(Debug)]
pub struct Slot {
    /// As `hosts status` reports it.
    pub status: HostStatus,
    /// The connected client, `None` unless `status.state` is `connected`.
    pub client: Option<Arc<Client>>,
    /// When the link came up, while it is up.
    up_since: Option<Instant>,
}

impl Slot {
    /// A link not started yet.
    pub fn new(host: &Host) -> Self {
        Self {
            status: HostStatus {
                name: host.name.clone(),
                destination: host.destination.clone(),
                state: LinkState::Connecting,
                last_error: None,
                rtt_ms: None,
                remote_version: None,
                remote_protocol_version: None,
                since: now_rfc3339(),
                attempts: 0,
                next_attempt_at: None,
                ssh_pid: None,
            },
            client: None,
            up_since: None,
        }
    }

    fn enter(&mut self, state: LinkState) {
        if self.status.state != state {
            self.status.state = state;
            self.status.since = now_rfc3339();
        }
        if state == LinkState::Connected {
            self.up_since.get_or_insert_with(Instant::now);
        } else {
            self.client = None;
            self.status.rtt_ms = None;
            self.up_since = None;
        }
    }
}

/// How a round ended.
#[derive(Debug)]
struct Ended {
    /// What to report.
    error: String,
    /// The remote speaks another protocol version.
    refused: bool,
    /// How long the link was connected (zero when it never was).
    up_for: Duration,
}

/// Runs `host`'s link until `stop` is set, keeping `slot` current.
pub async fn run(
    host: Host,
    config: Arc<LinkConfig>,
    slot: Arc<Mutex<Slot>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut pause = config.backoff_min;
    loop {
        if *stop.borrow() {
            break;
        }
        {
            let mut slot = slot.lock();
            slot.status.attempts += 1;
            slot.status.next_attempt_at = None;
            slot.enter(LinkState::Connecting);
        }
        let ended = tokio::select! {
            ended = round(&host, &config, &slot) => ended,
            _ = stop.wait_for(|stop| *stop) => break,
        };
        if ended.up_for >= STABLE_AFTER {
            pause = config.backoff_min;
        }
        let (state, wait) = if ended.refused {
            (LinkState::Refused, config.refused_pause)
        } else {
            let wait = jittered(pause);
            pause = (pause * 2).min(config.backoff_max);
            (LinkState::BackingOff, wait)
        };
        tracing::warn!(host = %host.name, destination = %host.destination, error = %ended.error, retry_in_ms = wait.as_millis() as u64, "link to host down");
        {
            let mut slot = slot.lock();
            slot.enter(state);
            slot.status.last_error = Some(ended.error);
            slot.status.next_attempt_at = Some(later(wait));
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|stop| *stop) => break,
        }
    }
    slot.lock().enter(LinkState::BackingOff);
}

/// ±20 % so links that failed together do not retry together.
fn jittered(pause: Duration) -> Duration {
    pause.mul_f64(0.8 + fastrand::f64() * 0.4)
}

fn later(wait: Duration) -> String {
    let millis = i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
    UnixMillis(UnixMillis::now().0.saturating_add(millis)).to_rfc3339()
}

/// One ssh child, from its start to its end.
async fn round(host: &Host, config: &LinkConfig, slot: &Mutex<Slot>) -> Ended {
    let mut command = tokio::process::Command::new(&config.ssh);
    command
        .args(["-T", "-o", "BatchMode=yes", "--"])
        .arg(&host.destination)
        .args(["cross-agent", "rpc", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            return Ended {
                error: format!("cannot start {}: {error}", config.ssh.display()),
                refused: false,
                up_for: Duration::ZERO,
            };
        }
    };
    let pid = child.id();
    slot.lock().status.ssh_pid = pid;
    let last_words = Arc::new(Mutex::new(None::<String>));
    let stderr = child.stderr.take().map(|stderr| {
        let last_words = Arc::clone(&last_words);
        let name = host.name.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let line = scrub(&line);
                if !line.is_empty() {
                    tracing::debug!(host = %name, ssh = %line, "ssh said");
                    *last_words.lock() = Some(line);
                }
            }
        })
    });
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Ended {
            error: "ssh started without its pipes".to_owned(),
            refused: false,
            up_for: Duration::ZERO,
        };
    };
    let peer = PathBuf::from(format!("ssh {}", host.destination));
    let client = Arc::new(Client::from_io(stdout, stdin, &peer));

    let (mut error, refused, up_for) = {
        let conversation = converse(host, config, slot, &client);
        tokio::pin!(conversation);
        tokio::select! {
            outcome = &mut conversation => outcome,
            status = child.wait() => {
                // What ssh wrote before it exited may still be on its way through the pipe (an
                // older remote's refusal, say): the conversation gets a moment to read it.
                match tokio::time::timeout(EXIT_GRACE, &mut conversation).await {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        let said = match status {
                            Ok(status) => format!("ssh exited with {}", describe(status)),
                            Err(error) => format!("cannot wait for ssh: {error}"),
                        };
                        let up_for = slot.lock().up_since.map(|since| since.elapsed()).unwrap_or_default();
                        (said, false, up_for)
                    }
                }
            }
        }
    };
    drop(client);
    // The round is over: the child goes now (it may be stuck connecting), and is reaped.
    let _ = child.start_kill();
    let _ = tokio::time::timeout(EXIT_GRACE, child.wait()).await;
    if let Some(stderr) = stderr {
        // Its last words are read to the end of the pipe, which the exit closes.
        let _ = tokio::time::timeout(EXIT_GRACE, stderr).await;
    }
    slot.lock().status.ssh_pid = None;
    // ssh's own words are the most useful (a host key, a refused key, a name that does not
    // resolve); a refusal by version is the link's own.
    if !refused && let Some(words) = last_words.lock().take() {
        error = words;
    }
    Ended {
        error,
        refused,
        up_for,
    }
}

/// `hello`, then pings until one fails. Returns what went wrong, whether the remote refused
/// by version, and how long the link was up.
async fn converse(
    host: &Host,
    config: &LinkConfig,
    slot: &Mutex<Slot>,
    client: &Arc<Client>,
) -> (String, bool, Duration) {
    let hello =
        match tokio::time::timeout(config.hello_timeout, client.hello(ClientKind::Link)).await {
            Err(_) => {
                return (
                    format!(
                        "no answer to hello within {} s",
                        config.hello_timeout.as_secs()
                    ),
                    false,
                    Duration::ZERO,
                );
            }
            Ok(Err(IpcError::ProtocolMismatch {
                daemon,
                daemon_version,
                ..
            })) => {
                slot.lock().status.remote_version = Some(daemon_version.clone());
                slot.lock().status.remote_protocol_version = Some(daemon);
                return (
                    format!(
                        "host `{}` runs cross-agent {daemon_version} (protocol {daemon}) and this \
                     machine runs cross-agent {} (protocol {PROTOCOL_VERSION}); install the same \
                     release on both",
                        host.name,
                        env!("CARGO_PKG_VERSION"),
                    ),
                    true,
                    Duration::ZERO,
                );
            }
            Ok(Err(error)) => return (error.to_string(), false, Duration::ZERO),
            Ok(Ok(hello)) => hello,
        };
    let up = Instant::now();
    {
        let mut slot = slot.lock();
        slot.enter(LinkState::Connected);
        slot.client = Some(Arc::clone(client));
        slot.status.remote_version = Some(hello.daemon_version.clone());
        slot.status.remote_protocol_version = Some(hello.protocol_version);
        slot.status.last_error = None;
    }
    tracing::info!(host = %host.name, remote_version = %hello.daemon_version, remote_pid = hello.daemon_pid, "link to host up");
    loop {
        let started = Instant::now();
        match tokio::time::timeout(config.ping_timeout, client.call(StatusParams {})).await {
            Ok(Ok(_)) => {
                let rtt = started.elapsed().as_secs_f64() * 1000.0;
                slot.lock().status.rtt_ms = Some((rtt * 100.0).round() / 100.0);
            }
            Ok(Err(error)) => return (error.to_string(), false, up.elapsed()),
            Err(_) => {
                return (
                    format!(
                        "no answer to a ping within {} s",
                        config.ping_timeout.as_secs()
                    ),
                    false,
                    up.elapsed(),
                );
            }
        }
        tokio::time::sleep(config.ping_every).await;
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => status.to_string(),
    }
}

/// A line of ssh's stderr as it may be shown: control characters (a terminal's escapes, a
/// carriage return) dropped, trimmed, at most [`MAX_ERROR_CHARS`].
pub fn scrub(line: &str) -> String {
    line.chars()
        .filter(|c| !c.is_control())
        .collect::<String>()
        .trim()
        .chars()
        .take(MAX_ERROR_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn scrub_drops_control_characters_and_caps() {
        assert_eq!(
            scrub("\u{1b}[31mHost key verification failed.\r"),
            "[31mHost key verification failed."
        );
        assert_eq!(scrub(&"x".repeat(900)).len(), MAX_ERROR_CHARS);
    }
}
