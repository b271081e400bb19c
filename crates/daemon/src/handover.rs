//! Replacing the daemon without cutting anything off: what `cross-agent daemon restart` and
//! `cross-agent reload` do (docs/spec/cross-agent-mcp.md §3, "Applying code changes without restarting the editor",
//! in our design: the per-user daemon is what gets upgraded; the MCP servers editors hold are
//! thin and reconnect).
//!
//! **The protocol**, driven by [`replace`] against the running daemon `A`:
//!
//! 1. `hello` to `A` on `daemon.sock` (nothing answers: there is nothing to replace).
//! 2. `handover {release}` → `A` stops taking queued deliveries (they stay in `hub.db`), takes
//!    `draining-<generation>.lock` (see [`cross_agent_ipc::draining`]) and lets go of the
//!    `daemon.pid` lock. It keeps serving every connection, old and new.
//! 3. The successor `B` is started from the current binary with
//!    [`CROSS_AGENT_DAEMON_REPLACING`](var::DAEMON_REPLACING) set. It takes `daemon.pid`,
//!    records the next generation, leaves `A`'s in-flight deliveries alone (their carrier is
//!    alive, its leases renewed), binds its socket beside `daemon.sock` and renames
//!    it over the path in one step — a client connecting at any moment reaches `A` or `B`,
//!    never nothing — and starts dispatching the queue.
//! 4. The driver polls `daemon.sock` until `hello` names a pid other than `A`'s. If `B` exits,
//!    or does not answer within the start timeout (it is then killed), the driver sends
//!    `handover {abort}`: `A` takes `daemon.pid` back (and the socket path, if `B` had moved
//!    it), dispatches again and serves on; the restart is reported `FAILED` and exits non-zero.
//! 5. `handover {drain}` → `A` stops accepting (leaving the path, now `B`'s, alone), answers
//!    every further request on its open connections with `shutting_down` — a refusal that
//!    says the request was not taken, so a client (the MCP server's link) sends it again to `B`
//!    without any risk of a double send — while the requests already in hand are answered by
//!    `A` itself. It hands its late-answer watches over (they live in `hub.db`; `B` resumes
//!    them rather than `A` staying for hours), renews the busy locks and leases of the turns it
//!    carries, waits until it carries nothing (turns running, answers being recorded), at most
//!    [`crate::server::MAX_DRAIN`] (24 h), recording its counts in `draining-<generation>.json`
//!    for `daemon status` / `bridge_status`, then stops as any daemon stops and exits. A signal
//!    stops it at once (its turns with it, as docs/spec/cross-agent-mcp.md §6 item 4 wants).
//!
//! A daemon too old to know `handover` answers `method_not_found` at step 2; [`replace`] then
//! reports [`Outcome::Unsupported`] and the caller falls back to stop-then-start.

use std::process::Stdio;
use std::time::{Duration, Instant};

use cross_agent_home::Home;
use cross_agent_ipc::{ConnectOptions, Error as IpcError};
use cross_agent_protocol::rpc::{
    CarriedCounts, ClientKind, ErrorCode, HandoverParams, HandoverStep, HelloResponse,
};
use cross_agent_protocol::settings as var;

/// How long a call to the daemon being replaced may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// What a replacement came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `old` was replaced by `new`; `old` drains `carried` and then exits.
    Replaced {
        old: Who,
        new: Who,
        carried: CarriedCounts,
    },
    /// No daemon answered: there was nothing to replace.
    NotRunning,
    /// The running daemon does not know `handover` (older build, or another protocol).
    Unsupported { old_pid: u32, detail: String },
    /// The successor did not start; `old` keeps serving (unless `old_kept` is false, when
    /// taking the home back failed too).
    Failed {
        old: Who,
        detail: String,
        old_kept: bool,
    },
}

/// A daemon by pid and generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Who {
    pub pid: u32,
    pub generation: u64,
}

impl From<&HelloResponse> for Who {
    fn from(hello: &HelloResponse) -> Who {
        Who {
            pid: hello.daemon_pid,
            generation: hello.generation,
        }
    }
}

/// Replaces the daemon of `home` with one started by `successor` (a `daemon run` of the
/// current binary; [`var::DAEMON_REPLACING`] is added to it, and its output goes to the console
/// log).
/// `start_timeout` bounds how long the successor may take to answer.
pub async fn replace(
    home: &Home,
    successor: std::process::Command,
    start_timeout: Duration,
) -> cross_agent_ipc::Result<Outcome> {
    let mut successor = tokio::process::Command::from(successor);
    let options = ConnectOptions::new(ClientKind::Cli);
    let old = match cross_agent_ipc::connect(home, &options).await {
        Ok(connection) => connection,
        Err(IpcError::NotRunning { .. } | IpcError::Closed { .. }) => {
            return Ok(Outcome::NotRunning);
        }
        Err(IpcError::ProtocolMismatch {
            daemon_pid,
            daemon_version,
            ..
        }) => {
            return Ok(Outcome::Unsupported {
                old_pid: daemon_pid,
                detail: format!("it speaks another protocol (cross-agent {daemon_version})"),
            });
        }
        Err(other) => return Err(other),
    };
    let who_old = Who::from(&old.hello);
    let step = |step| async {
        match tokio::time::timeout(CALL_TIMEOUT, old.client.call(HandoverParams { step })).await {
            Ok(answer) => answer,
            Err(_) => Err(IpcError::Timeout {
                what: "handover",
                socket: home.socket(),
                waited: CALL_TIMEOUT,
            }),
        }
    };

    match step(HandoverStep::Release).await {
        Ok(_) => {}
        Err(IpcError::Rpc {
            code: ErrorCode::MethodNotFound,
            message,
            ..
        }) => {
            return Ok(Outcome::Unsupported {
                old_pid: who_old.pid,
                detail: message,
            });
        }
        Err(other) => {
            return Ok(Outcome::Failed {
                old: who_old,
                detail: format!("the running daemon refused to hand over: {other}"),
                old_kept: true,
            });
        }
    }

    let log = home.console_log();
    let output = cross_agent_home::home::open_private_append(&log)?;
    let errors = output
        .try_clone()
        .map_err(|e| IpcError::io("open", &log, e))?;
    successor
        .env(var::DAEMON_REPLACING, "1")
        .env(var::HOME, home.root())
        .stdin(Stdio::null())
        .stdout(output)
        .stderr(errors)
        .kill_on_drop(false);
    let started = match successor.spawn() {
        Ok(child) => wait_for_successor(home, &options, child, who_old.pid, start_timeout).await,
        Err(e) => Err(format!("the new daemon could not be started: {e}")),
    };

    match started {
        Ok(new) => {
            let drained = step(HandoverStep::Drain {
                successor_pid: new.pid,
                successor_generation: new.generation,
            })
            .await;
            match drained {
                Ok(response) => Ok(Outcome::Replaced {
                    old: who_old,
                    new,
                    carried: response.carried,
                }),
                // The successor serves; the old one could not be told to drain. It still holds
                // no pidfile lock and finds no new clients, so it is stopped outright rather
                // than left serving beside the successor.
                Err(error) => {
                    tracing::warn!(%error, "the old daemon did not take `drain`; sending SIGTERM");
                    let _ = cross_agent_ipc::process::terminate(who_old.pid);
                    Ok(Outcome::Replaced {
                        old: who_old,
                        new,
                        carried: CarriedCounts::default(),
                    })
                }
            }
        }
        Err(detail) => {
            let aborted = step(HandoverStep::Abort {
                reason: detail.clone(),
            })
            .await;
            let old_kept = aborted.is_ok();
            let detail = match aborted {
                Ok(_) => detail,
                Err(error) => format!("{detail}; taking the home back failed too: {error}"),
            };
            Ok(Outcome::Failed {
                old: who_old,
                detail,
                old_kept,
            })
        }
    }
}

/// [`replace`] from synchronous code (the CLI), on a runtime of its own.
pub fn replace_blocking(
    home: &Home,
    successor: std::process::Command,
    start_timeout: Duration,
) -> cross_agent_ipc::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| IpcError::io("start", "an async runtime", e))?;
    runtime.block_on(replace(home, successor, start_timeout))
}

/// Polls the socket until a daemon other than `old_pid` answers, watching the child.
async fn wait_for_successor(
    home: &Home,
    options: &ConnectOptions,
    mut child: tokio::process::Child,
    old_pid: u32,
    limit: Duration,
) -> Result<Who, String> {
    let deadline = Instant::now() + limit;
    let child_pid = child.id();
    loop {
        if let Ok(connection) = cross_agent_ipc::connect(home, options).await
            && connection.hello.daemon_pid != old_pid
        {
            let new = Who::from(&connection.hello);
            // The successor is our child until we exit; reap it in the background.
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
            return Ok(new);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "the new daemon (pid {}) exited with {status}{}",
                child_pid.map_or_else(|| "?".to_owned(), |p| p.to_string()),
                last_words(home)
            ));
        }
        if Instant::now() >= deadline {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(format!(
                "the new daemon (pid {}) did not answer within {limit:?} and was stopped{}",
                child_pid.map_or_else(|| "?".to_owned(), |p| p.to_string()),
                last_words(home)
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The console log's last line, which says why a daemon did not start.
fn last_words(home: &Home) -> String {
    std::fs::read_to_string(home.console_log())
        .ok()
        .and_then(|text| {
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| format!("; it last said: {}", l.trim()))
        })
        .unwrap_or_default()
}
