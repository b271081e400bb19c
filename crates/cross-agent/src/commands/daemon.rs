//! `cross-agent daemon {run|start|stop|status|restart}`: the per-user daemon's lifecycle.
//!
//! Every other subcommand and every `cross-agent mcp` starts the daemon on its own when nothing
//! answers, so these are for people and service managers: run it in the foreground, start it
//! ahead of time, stop it, see whether it runs.
//!
//! `status` exit codes follow the LSB convention service managers expect: 0 running,
//! 3 not running, 1 running but not answering on its socket (its pidfile lock is held).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use cross_agent_home::Home;
use cross_agent_home::pidfile::{self, Holder};
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_ipc::{ConnectOptions, Error as IpcError, process};
use cross_agent_protocol::rpc::{ClientKind, ShutdownParams, StatusParams, StatusResponse};
use serde_json::json;

/// `status`: the daemon runs and answers.
const EXIT_RUNNING: u8 = 0;
/// `status`: its lock is held but it does not answer.
const EXIT_UNRESPONSIVE: u8 = 1;
/// `status`: no daemon runs for this home.
const EXIT_NOT_RUNNING: u8 = 3;

/// How long `stop` waits for the daemon to exit after asking, and again after SIGTERM.
const STOP_WAIT: Duration = Duration::from_secs(10);
/// How long a call to a daemon that accepted the connection may take before it counts as hung.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Args)]
pub struct DaemonArgs {
    #[command(subcommand)]
    command: DaemonCommand,
}

#[derive(Debug, Subcommand)]
enum DaemonCommand {
    /// Run the daemon in the foreground, logging to stderr and to logs/ in CROSS_AGENT_HOME.
    /// Stops on Ctrl-C, SIGTERM or SIGHUP.
    Run(RunArgs),
    /// Start the daemon in the background unless it already runs; print its pid and generation.
    Start(OutputArgs),
    /// Stop the daemon and wait for it to exit (asks it over its socket, then falls back to
    /// SIGTERM), and any replaced daemon still draining (their turns stop with them). Exits
    /// non-zero if one is still running afterwards.
    Stop,
    /// Show whether the daemon runs: pid, generation, uptime, home, socket, version.
    /// Exit code 0 running, 3 not running, 1 running but not answering.
    Status(OutputArgs),
    /// Replace the daemon with one started from this binary without cutting anything off: the
    /// new one takes the socket, the old one finishes what it carries, then exits (same as
    /// `cross-agent reload`). Exits non-zero when the new one does not start; the old one then
    /// keeps serving.
    Restart(OutputArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Started by a client's autostart: leave the caller's session, log only to files.
    #[arg(long, hide = true)]
    detached: bool,
}

#[derive(Debug, Args)]
struct OutputArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

impl DaemonArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self.command {
            DaemonCommand::Run(args) => run(args),
            DaemonCommand::Start(args) => start(&home()?, args.json),
            DaemonCommand::Stop => {
                let home = home()?;
                stop(&home, Report::Stdout)?;
                stop_draining(&home)?;
                Ok(ExitCode::SUCCESS)
            }
            DaemonCommand::Status(args) => status(&home()?, args.json),
            DaemonCommand::Restart(args) => super::reload::reload(&home()?, args.json),
        }
    }
}

fn home() -> anyhow::Result<Home> {
    Ok(Home::from_env()?)
}

fn options() -> ConnectOptions {
    ConnectOptions::new(ClientKind::Cli)
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    use cross_agent_daemon::entry::{Mode, run_process};
    let mode = if args.detached {
        Mode::Detached
    } else {
        Mode::Foreground
    };
    match run_process(Home::from_env()?, mode) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // An autostarted daemon that lost the race to another is not a failure: the client that
        // started it finds the winner answering.
        Err(error) if mode == Mode::Detached && error.already_running().is_some() => {
            eprintln!("cross-agent daemon: {error}; leaving it to that one");
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => Err(error.into()),
    }
}

fn start(home: &Home, json: bool) -> anyhow::Result<ExitCode> {
    let client = BlockingClient::connect_or_start(home, &options())?;
    let hello = client.hello();
    if json {
        println!(
            "{}",
            json!({
                "started": client.started(),
                "pid": hello.daemon_pid,
                "generation": hello.generation,
                "version": hello.daemon_version,
                "home": home.root(),
                "socket": home.socket(),
            })
        );
    } else if client.started() {
        println!(
            "started the cross-agent daemon: pid {}, generation {}",
            hello.daemon_pid, hello.generation
        );
    } else {
        println!(
            "the cross-agent daemon is already running: pid {}, generation {}",
            hello.daemon_pid, hello.generation
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Where `stop` says what it did.
#[derive(Debug, Clone, Copy)]
enum Report {
    Stdout,
    Stderr,
}

impl Report {
    fn say(self, line: &str) {
        match self {
            Report::Stdout => println!("{line}"),
            Report::Stderr => eprintln!("{line}"),
        }
    }
}

/// Stops the daemon: asks it, waits for the process to exit, falls back to SIGTERM.
fn stop(home: &Home, report: Report) -> anyhow::Result<()> {
    let pid = match BlockingClient::connect(home, &options()) {
        Ok(client) => {
            let pid = client.hello().daemon_pid;
            let asked = client.call_timeout(
                ShutdownParams {
                    reason: Some("cross-agent daemon stop".to_owned()),
                },
                CALL_TIMEOUT,
            );
            drop(client);
            match asked {
                Ok(_) if wait_for_exit(pid, STOP_WAIT) => {
                    report.say(&format!("stopped the cross-agent daemon (pid {pid})"));
                    return Ok(());
                }
                Ok(_) => eprintln!(
                    "the daemon (pid {pid}) accepted the shutdown but is still running after \
                     {STOP_WAIT:?}; sending SIGTERM"
                ),
                Err(error) => {
                    eprintln!("asking the daemon to stop failed ({error}); sending SIGTERM")
                }
            }
            pid
        }
        // An older daemon of another protocol cannot be asked; it can be signalled.
        Err(IpcError::ProtocolMismatch { daemon_pid, .. }) => daemon_pid,
        Err(IpcError::NotRunning { .. } | IpcError::Timeout { .. } | IpcError::Closed { .. }) => {
            match pidfile::probe(&home.pidfile())? {
                Holder::Free => {
                    report.say(&format!(
                        "the cross-agent daemon is not running (home {})",
                        home.root().display()
                    ));
                    return Ok(());
                }
                Holder::Held(Some(pid)) => {
                    eprintln!(
                        "the daemon (pid {pid}) does not answer on its socket; sending SIGTERM"
                    );
                    pid
                }
                Holder::Held(None) => anyhow::bail!(
                    "{} is locked by a process that has not written its pid; try again in a moment",
                    home.pidfile().display()
                ),
            }
        }
        Err(other) => return Err(other.into()),
    };

    process::terminate(pid)?;
    if wait_for_exit(pid, STOP_WAIT) {
        report.say(&format!(
            "stopped the cross-agent daemon (pid {pid}) with SIGTERM"
        ));
        Ok(())
    } else {
        anyhow::bail!(
            "the cross-agent daemon (pid {pid}) is still running {STOP_WAIT:?} after SIGTERM; \
             stop it with `kill -9 {pid}`"
        )
    }
}

/// Stops the replaced daemons still finishing their deliveries (they no longer listen, so a
/// signal is the only way to reach them); their turns stop with them, recorded as such.
fn stop_draining(home: &Home) -> anyhow::Result<()> {
    for old in cross_agent_ipc::draining::list(home) {
        if old.pid == 0 {
            continue;
        }
        process::terminate(old.pid)?;
        if !wait_for_exit(old.pid, STOP_WAIT) {
            anyhow::bail!(
                "the draining daemon (pid {}, generation {}) is still running {STOP_WAIT:?} after \
                 SIGTERM; stop it with `kill -9 {}`",
                old.pid,
                old.generation,
                old.pid
            );
        }
        println!(
            "stopped the draining daemon (pid {}, generation {}); what it carried stopped with it",
            old.pid, old.generation
        );
    }
    Ok(())
}

/// Replaces a daemon too old to hand over: stop it, start this build's. Says what it did on
/// stderr, so stdout keeps the caller's one report.
pub(super) fn stop_then_start(home: &Home) -> anyhow::Result<()> {
    stop(home, Report::Stderr)?;
    BlockingClient::connect_or_start(home, &options())?;
    Ok(())
}

fn wait_for_exit(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while process::is_alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn status(home: &Home, json: bool) -> anyhow::Result<ExitCode> {
    let socket = home.socket();
    let answer = BlockingClient::connect(home, &options())
        .and_then(|client| client.call_timeout(StatusParams {}, CALL_TIMEOUT));
    match answer {
        Ok(status) => {
            print_running(&status, json);
            Ok(ExitCode::from(EXIT_RUNNING))
        }
        Err(IpcError::NotRunning { .. } | IpcError::Timeout { .. } | IpcError::Closed { .. }) => {
            let holder = pidfile::probe(&home.pidfile())
                .with_context(|| format!("cannot read {}", home.pidfile().display()))?;
            match holder {
                Holder::Free => {
                    // A replaced daemon may still be finishing its deliveries with no successor
                    // left serving (it died): not running, but not idle either.
                    let draining = cross_agent_ipc::draining::list(home);
                    if json {
                        println!(
                            "{}",
                            json!({"state": "stopped", "running": false, "home": home.root(), "socket": socket, "draining": draining})
                        );
                    } else {
                        println!("not running (home {})", home.root().display());
                        for old in &draining {
                            println!(
                                "  draining    pid {} (generation {}) since {}: still finishing \
                                 what it carried; `cross-agent daemon stop` stops it",
                                old.pid, old.generation, old.since
                            );
                        }
                    }
                    Ok(ExitCode::from(EXIT_NOT_RUNNING))
                }
                Holder::Held(pid) => {
                    if json {
                        println!(
                            "{}",
                            json!({"state": "unresponsive", "running": true, "pid": pid, "home": home.root(), "socket": socket})
                        );
                    } else {
                        let pid = pid.map_or_else(|| "unknown".to_owned(), |p| p.to_string());
                        println!(
                            "running but not answering: pid {pid} holds {} and nothing answers on {}",
                            home.pidfile().display(),
                            socket.display()
                        );
                    }
                    Ok(ExitCode::from(EXIT_UNRESPONSIVE))
                }
            }
        }
        Err(other) => Err(other.into()),
    }
}

fn print_running(status: &StatusResponse, json: bool) {
    if json {
        println!(
            "{}",
            json!({
                "state": "running",
                "running": true,
                "pid": status.daemon_pid,
                "generation": status.generation,
                "started_at": status.started_at,
                "uptime_seconds": status.uptime_seconds,
                "version": status.daemon_version,
                "protocol_version": status.protocol_version,
                "home": status.home,
                "socket": status.socket,
                "draining": status.draining,
            })
        );
        return;
    }
    println!("running");
    println!("  pid         {}", status.daemon_pid);
    println!("  generation  {}", status.generation);
    println!(
        "  uptime      {} (since {})",
        crate::display::when::span(status.uptime_seconds),
        status.started_at
    );
    println!(
        "  version     {} (protocol {})",
        status.daemon_version, status.protocol_version
    );
    println!("  home        {}", status.home);
    println!("  socket      {}", status.socket);
    for old in &status.draining {
        println!(
            "  draining    pid {} (generation {}) since {}: {} turns running, {} answers pending, \
             {} late-answer watches",
            old.pid,
            old.generation,
            old.since,
            old.carried.turns_running,
            old.carried.answers_pending,
            old.carried.late_answer_watches
        );
    }
}
