//! The signals that stop the daemon: SIGTERM (`kill`, systemd, `daemon stop`'s fallback),
//! SIGINT (Ctrl-C on a foreground `daemon run`) and SIGHUP (the terminal went away). All three
//! mean a graceful stop, as docs/spec/cross-agent-mcp.md §6 item 4 asks: on shutdown the daemon cleans up what it
//! carries rather than leaving it running with nobody watching.

use std::future::Future;

use tokio::signal::unix::{SignalKind, signal};

use crate::error::{Error, Result};

/// Installs the handlers now (so a signal that arrives during start-up is not lost and does not
/// kill the process outright) and returns a future that resolves with the first signal's name.
pub fn termination() -> Result<impl Future<Output = &'static str> + Send + 'static> {
    let mut term = signal(SignalKind::terminate()).map_err(Error::Signals)?;
    let mut int = signal(SignalKind::interrupt()).map_err(Error::Signals)?;
    let mut hup = signal(SignalKind::hangup()).map_err(Error::Signals)?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
            _ = hup.recv() => "SIGHUP",
        }
    })
}
