//! The daemon's log: `logs/daemon.log.<YYYY-MM-DD>` in the home, rotated daily, the last 14
//! kept, owner-only like everything there (the process umask is 077). A foreground
//! `daemon run` also logs to stderr, in colour only when stderr is a terminal.
//!
//! The log is returned as a [`tracing::Dispatch`] rather than installed globally: the CLI has
//! already installed its stderr logger by the time the `daemon run` subcommand starts, and
//! in-process tests run several daemons in one process. [`crate::entry`] installs it as the
//! default on every runtime thread.

use std::io::IsTerminal as _;

use cross_agent_home::Home;
use cross_agent_protocol::settings as var;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;

use crate::error::{Error, Result};

/// The log file name before its date suffix.
pub const LOG_PREFIX: &str = "daemon.log";

/// Days of logs kept.
const KEEP_FILES: usize = 14;

/// Lines buffered for the writer thread. Small, because the buffer is allocated up front and
/// counts against the daemon's idle memory; when full, logging waits rather than drops lines.
const BUFFERED_LINES: usize = 4096;

/// The log filter: `CROSS_AGENT_LOG` (an `EnvFilter` directive) if set, else `debug` when
/// `CROSS_AGENT_DEBUG` is set (docs/spec/cross-agent-mcp.md §7), else `info`.
pub fn filter() -> EnvFilter {
    if let Ok(filter) = EnvFilter::try_from_env(var::LOG) {
        return filter;
    }
    let debug = std::env::var_os(var::DEBUG).is_some_and(|v| !v.is_empty());
    EnvFilter::new(if debug { "debug" } else { "info" })
}

/// Whether log lines on stderr may carry colour codes: only when stderr is a terminal and
/// `NO_COLOR` is not set (no-color.org). The CLI's own stderr logger asks the same.
pub fn colour_on_stderr() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Builds the daemon's log. Keep the guard alive as long as the daemon runs: dropping it flushes
/// and stops the writer thread.
pub fn dispatch(home: &Home, also_stderr: bool) -> Result<(tracing::Dispatch, WorkerGuard)> {
    let dir = home.logs_dir();
    cross_agent_home::home::ensure_private_dir(&dir)?;
    let appender = RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix(LOG_PREFIX)
        .max_log_files(KEEP_FILES)
        .build(&dir)
        .map_err(|source| Error::Log {
            dir: dir.clone(),
            source,
        })?;
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(BUFFERED_LINES)
        .lossy(false)
        .thread_name("cross-agent-log")
        .finish(appender);
    let file = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(writer);
    // Colour only on a terminal: `daemon run 2>file` or a service manager's pipe gets plain text.
    let stderr = also_stderr.then(|| {
        tracing_subscriber::fmt::layer()
            .with_ansi(colour_on_stderr())
            .with_writer(std::io::stderr)
    });
    let subscriber = tracing_subscriber::registry()
        .with(filter())
        .with(file)
        .with(stderr);
    Ok((tracing::Dispatch::new(subscriber), guard))
}
