//! The daemon as a process: what `cross-agent daemon run` does, end to end.
//!
//! Order matters: tell the allocator to give freed memory back at once (`memory.rs`) before
//! anything is built, leave the terminal's session and close the descriptors the starting
//! client handed down (when autostarted, `descriptors.rs`), set umask 077 before any file is
//! created, check the home, open the log, raise the descriptor limit, install the signal
//! handlers, then take the home ([`Daemon::bind`]) and serve until SIGTERM/SIGINT/SIGHUP or a
//! `shutdown` call.

use cross_agent_home::Home;
use cross_agent_protocol::settings as var;

use crate::error::{Error, Result};
use crate::server::Daemon;

/// How `daemon run` was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// By a person, in a terminal: logs also go to stderr.
    Foreground,
    /// By a client's autostart: stdio is the console log; the process leaves the client's
    /// session so the client's terminal closing or its Ctrl-C never reaches it.
    Detached,
}

/// Worker threads of the daemon's runtime. Its work is waiting on sockets and child processes;
/// two threads keep one slow request from holding up the rest without paying for a thread per
/// core in idle memory.
const WORKER_THREADS: usize = 2;

/// Runs the daemon on `home` until it is told to stop. Returns once it has stopped cleanly.
pub fn run_process(home: Home, mode: Mode) -> Result<()> {
    crate::memory::give_back_freed_memory_at_once();
    let closed = if mode == Mode::Detached {
        cross_agent_ipc::process::detach_session();
        crate::descriptors::close_inherited()
    } else {
        Vec::new()
    };
    cross_agent_home::home::restrict_umask();
    home.ensure_root()?;
    let (dispatch, _log_guard) = crate::logging::dispatch(&home, mode == Mode::Foreground)?;
    let limit = crate::descriptors::raise_limit();
    tracing::dispatcher::with_default(&dispatch, || {
        log_descriptors(&closed, &limit);
    });

    let thread_dispatch = dispatch.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("cross-agent-daemon")
        .enable_all()
        .on_thread_start(move || {
            // The guard would restore the previous default when dropped; runtime threads live
            // as long as the runtime, so it is kept for good.
            std::mem::forget(tracing::dispatcher::set_default(&thread_dispatch));
        })
        .build()
        .map_err(Error::Runtime)?;
    let _main_default = tracing::dispatcher::set_default(&dispatch);

    let result = runtime.block_on(async {
        let signal = crate::signals::termination()?;
        // A successor started by a restart binds over the live socket of the daemon it replaces.
        let replacing = std::env::var_os(var::DAEMON_REPLACING).is_some_and(|v| v == "1");
        let daemon = if replacing {
            Daemon::bind_replacing(home)?
        } else {
            Daemon::bind(home)?
        };
        // A foreground daemon's log already went to stderr; a detached one's stderr is the
        // console log, where the sentence is the first thing a person reading it sees.
        if let Some(notice) = &daemon.info().store_notice
            && mode == Mode::Detached
        {
            eprintln!("cross-agent daemon: {notice}");
        }
        daemon
            .run(async move {
                let name = signal.await;
                tracing::info!(signal = name, "received a termination signal");
            })
            .await
    });
    if let Err(error) = &result {
        if error.already_running().is_some() {
            tracing::info!(%error, "not starting");
        } else if mode == Mode::Detached {
            // A foreground caller prints the error itself; logging it too would show it twice.
            tracing::error!(%error, "daemon failed");
        }
    }
    result
}

/// What [`crate::descriptors`] did at start, in the log.
fn log_descriptors(closed: &[i32], limit: &crate::descriptors::LimitChange) {
    if !closed.is_empty() {
        tracing::info!(
            ?closed,
            "closed the descriptors inherited from the process that started the daemon"
        );
    }
    let show = |limit: Option<u64>| limit.map_or_else(|| "unlimited".to_owned(), |n| n.to_string());
    match &limit.failed {
        Some(error) => tracing::warn!(
            soft = %show(limit.before),
            hard = %show(limit.hard),
            %error,
            "could not raise the file-descriptor limit; serving with the soft one"
        ),
        None if limit.after != limit.before => tracing::info!(
            before = %show(limit.before),
            after = %show(limit.after),
            hard = %show(limit.hard),
            "raised the file-descriptor limit"
        ),
        None => tracing::info!(
            soft = %show(limit.before),
            hard = %show(limit.hard),
            "the file-descriptor limit is already as high as it may go"
        ),
    }
}
