//! Running one headless turn: its own process group, stdin closed, stdout read line by line
//! into the [`OutputParser`], an inactivity timeout, and a stop signal.
//!
//! The timeout is on *inactivity*, not wall-clock time (docs/spec/cross-agent-mcp.md §7 `CROSS_AGENT_TIMEOUT`): CLI
//! output or a write to the target's transcript resets it, so a long working turn is never cut
//! off, while a silent one is killed — its whole group — and reported `KilledByTimeout`. When
//! the turn ends by itself its group is killed too, so no MCP server or shell command it started
//! outlives it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use cross_agent_protocol::bridge::Agent;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::headless::CommandSpec;
use crate::parse::{OutputParser, Parsed};
use crate::process::kill_group;

/// How much of stderr is kept for the error message.
const STDERR_TAIL: usize = 4096;
/// How often the transcript is looked at and the deadline checked.
const TICK: Duration = Duration::from_millis(500);
/// After the CLI exits, how long its output pipes may stay open (held by a grandchild).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How a run is watched.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Kill the turn after this long without output or transcript writes.
    pub inactivity: Duration,
    /// The target's transcript, whose growth counts as activity (when known).
    pub transcript: Option<PathBuf>,
    /// Becomes true when the carrier stops: the turn is killed and reported `Stopped`.
    pub stop: watch::Receiver<bool>,
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited by itself, with this code (`None`: killed by a signal from elsewhere).
    Exited(Option<i32>),
    /// Silent for longer than the inactivity limit; its group was killed.
    KilledByTimeout,
    /// The carrier stopped; its group was killed.
    Stopped,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    pub pid: u32,
    pub ended: Ended,
    pub parsed: Parsed,
    /// The end of stderr, for error messages.
    pub stderr_tail: String,
}

/// Starts `spec` and watches it to the end. `on_spawn` gets the child's pid (which is also its
/// process group) as soon as it runs, so the caller can record it and recognise calls made from
/// inside the turn.
pub async fn run_turn(
    agent: Agent,
    spec: &CommandSpec,
    mut options: RunOptions,
    on_spawn: impl FnOnce(u32),
) -> Result<TurnOutcome> {
    // Through tokio's blocking pool, as every file look here: a stalled disk must not stall
    // the async threads that answer the daemon's clients.
    if !tokio::fs::metadata(&spec.cwd)
        .await
        .is_ok_and(|meta| meta.is_dir())
    {
        return Err(Error::MissingCwd {
            agent: agent.as_str(),
            cwd: spec.cwd.clone(),
        });
    }
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(&spec.env)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    let mut child = command.spawn().map_err(|source| Error::Spawn {
        agent: agent.as_str(),
        binary: spec.program.clone(),
        cwd: spec.cwd.clone(),
        source,
    })?;
    let pid = child.id().unwrap_or(0);
    on_spawn(pid);
    // A long message goes on standard input, written beside the output loop so neither side
    // waits for the other; closing it ends the prompt.
    if let (Some(message), Some(mut input)) = (spec.stdin.clone(), child.stdin.take()) {
        tokio::spawn(async move {
            if let Err(error) = input.write_all(message.as_bytes()).await {
                tracing::warn!(%error, pid, "could not hand the message over on standard input");
            }
        });
    }
    tracing::info!(agent = agent.as_str(), pid, cwd = %spec.cwd.display(), "headless turn started");

    let mut stdout = child.stdout.take().map(|s| BufReader::new(s).lines());
    let mut stderr = child.stderr.take();
    let mut parser = OutputParser::new(agent);
    let mut stderr_tail = String::new();
    let mut buf = vec![0u8; 4096];
    let mut last_activity = Instant::now();
    let mut stamp = transcript_stamp(options.transcript.as_deref()).await;
    let mut exit: Option<(Option<i32>, Instant)> = None;
    let mut tick = tokio::time::interval(TICK);

    let ended = loop {
        if stdout.is_none()
            && stderr.is_none()
            && let Some((code, _)) = exit
        {
            break Ended::Exited(code);
        }
        tokio::select! {
            line = next_line(&mut stdout) => match line {
                Some(line) => {
                    parser.feed_line(&line);
                    last_activity = Instant::now();
                }
                None => stdout = None,
            },
            read = read_some(&mut stderr, &mut buf) => match read {
                Some(bytes) => {
                    stderr_tail.push_str(&String::from_utf8_lossy(&buf[..bytes]));
                    if stderr_tail.len() > STDERR_TAIL {
                        let cut = stderr_tail.len() - STDERR_TAIL;
                        let cut = (cut..stderr_tail.len())
                            .find(|i| stderr_tail.is_char_boundary(*i))
                            .unwrap_or(0);
                        stderr_tail.drain(..cut);
                    }
                    last_activity = Instant::now();
                }
                None => stderr = None,
            },
            status = child.wait(), if exit.is_none() => {
                exit = Some((status.ok().and_then(|s| s.code()), Instant::now()));
            }
            _ = tick.tick() => {
                if let Some((code, at)) = exit
                    && at.elapsed() > DRAIN_GRACE
                {
                    break Ended::Exited(code);
                }
                let now_stamp = transcript_stamp(options.transcript.as_deref()).await;
                if now_stamp != stamp {
                    stamp = now_stamp;
                    last_activity = Instant::now();
                }
                if exit.is_none() && last_activity.elapsed() > options.inactivity {
                    break Ended::KilledByTimeout;
                }
            }
            () = stopped(&mut options.stop) => break Ended::Stopped,
        }
    };
    // Whatever ended it, the group goes: a timed-out or stopped turn must not keep writing, and
    // a finished one must not leave its MCP servers or shell commands behind.
    kill_group(pid);
    if exit.is_none() {
        let _ = child.wait().await;
    }
    tracing::info!(agent = agent.as_str(), pid, ?ended, "headless turn ended");
    Ok(TurnOutcome {
        pid,
        ended,
        parsed: parser.finish(),
        stderr_tail,
    })
}

async fn next_line(
    lines: &mut Option<tokio::io::Lines<BufReader<tokio::process::ChildStdout>>>,
) -> Option<String> {
    match lines {
        Some(lines) => lines.next_line().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

async fn read_some(
    stream: &mut Option<tokio::process::ChildStderr>,
    buf: &mut [u8],
) -> Option<usize> {
    match stream {
        Some(stream) => match stream.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

async fn stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|stopped| *stopped).await.is_err() {
        // The sender is gone: nobody can stop this run any more.
        std::future::pending::<()>().await;
    }
}

async fn transcript_stamp(path: Option<&Path>) -> Option<(u64, Option<SystemTime>)> {
    let meta = tokio::fs::metadata(path?).await.ok()?;
    Some((meta.len(), meta.modified().ok()))
}
