//! The shim process around a panel session: it starts the real agent with piped stdin and
//! stdout (stderr is the extension's, untouched), pumps lines both ways through the wire
//! adapter, serves its socket, keeps its registration, and exits with the agent's status.
//!
//! Plain threads, not an async runtime: two readers (the extension's stdin, the agent's stdout)
//! that hand whole lines to the adapter in batches, two writers ([`outbox`]), the socket's
//! acceptor with one short-lived thread per connection, the registration's writer, a one-second
//! ticker, and a signal forwarder (a current-thread tokio runtime, for its signal handling).
//! Measured in `benches/shim.rs`: about 4 MB of RSS; throughput and CPU per MB beside a plain
//! pipe, a process that only copies bytes in its place, and one that looks at every byte once.
//!
//! - On Linux, when a side's input is a pipe, its bytes are *looked at* through a `tee(2)` copy
//!   and *moved* with `splice(2)` ([`tee`]): one copy per byte instead of a read's and a
//!   write's. A socket input (or an output that takes no splice) is read and written plainly.
//! - Forwarded lines are written straight from the batch (or spliced) when nothing of ours is
//!   queued before them ([`outbox`]'s pen), else queued — or, for bytes still in the input
//!   pipe, a turn for the pen is queued — so lines of ours land between whole lines in the
//!   order the adapter decided. A line is parsed only when the adapter's cheap pre-check (its
//!   head, for Claude's types and JSON-RPC methods) says it may matter.
//! - A line the adapter neither reads past its head nor drops (its head says so) streams
//!   through before it ends, the pen kept until its newline, and only its head is kept; any
//!   other line is held whole. A very long line is scanned for its newline only once, so MBs of
//!   base64 cost linear time.
//! - The registration is rewritten by a thread of its own, at most every 20 ms, so a file write
//!   never sits in the forwarding path.
//! - Nothing of ours reaches the agent before the extension's first line ([`core`]).
//! - Fail-open: any error of the shim's own before the agent starts execs the real binary as-is;
//!   after, interception stops and bytes keep flowing.
//!
//! Here: starting the agent, the threads and the shim's end. A side's reading loop is [`pump`],
//! the bytes it moves and how is [`mover`], the adapter's state behind its lock [`core`], the
//! socket [`socket`].

mod core;
mod mover;
pub mod outbox;
mod pump;
mod socket;
#[cfg(target_os = "linux")]
mod tee;

use std::ffi::OsString;
use std::fs::File;
use std::io::ErrorKind;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use cross_agent_home::Home;
use cross_agent_protocol::panel::{PANELS_DIR, PanelRegistration};
use cross_agent_protocol::vocabulary::Agent;

use self::core::{Core, Routed, lock};
use self::outbox::Outbox;
use self::pump::pump;
use crate::adapter::{PanelAdapter, Side};
use crate::log::ShimLog;
use crate::real_binary::RealCommand;
use crate::registration::{self, Paths};
use crate::{Error, Result};

/// Stack of the shim's own threads: they keep a few frames of state each.
const STACK_SIZE: usize = 256 * 1024;
/// After the agent exits, how long its stdout may stay open (held by a grandchild) before the
/// shim stops waiting for it.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(3);
/// How long the extension gets to read the agent's last bytes.
const FLUSH_AT_EXIT: Duration = Duration::from_secs(5);
/// The registration is rewritten at most this often (changes in between are coalesced).
const REGISTRATION_INTERVAL: Duration = Duration::from_millis(20);

/// What every thread shares.
pub(crate) struct Shared {
    core: Mutex<Core>,
    to_agent: Outbox,
    to_extension: Outbox,
    log: ShimLog,
    paths: Paths,
    /// Signalled when the registration is stale (paired with `core`).
    registration_changed: Condvar,
    /// Held while the registration file is written or removed, so one removed at exit is
    /// never written again.
    registration_io: parking_lot::Mutex<()>,
    /// Connections still writing their last events.
    open_connections: AtomicUsize,
    done: AtomicBool,
}

impl Shared {
    fn route(&self, routed: Routed) {
        routed.to_agent.send(&[], &self.to_agent);
        routed.to_extension.send(&[], &self.to_extension);
        self.registration_changed.notify_one();
    }

    /// Rewrites the registration whenever it is stale, at most every
    /// [`REGISTRATION_INTERVAL`], until the shim ends. A file write per turn boundary would
    /// otherwise sit in the forwarding path, under the lock.
    fn keep_registration(&self) {
        loop {
            let snapshot = {
                let mut core = lock(&self.core);
                while !core.registration_stale() && !self.done.load(Ordering::SeqCst) {
                    core = self
                        .registration_changed
                        .wait(core)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                if self.done.load(Ordering::SeqCst) {
                    return;
                }
                core.take_registration()
            };
            if let Some(snapshot) = snapshot {
                let written = {
                    let _io = self.registration_io.lock();
                    if self.done.load(Ordering::SeqCst) {
                        return;
                    }
                    registration::write(&self.paths.json, &snapshot)
                };
                if let Err(error) = written {
                    lock(&self.core).stop_intercepting(
                        &format!("cannot write the registration: {error}"),
                        &self.log,
                    );
                }
            }
            std::thread::sleep(REGISTRATION_INTERVAL);
        }
    }
}

/// Runs a panel session of `agent` behind the shim; returns the agent's exit status.
pub fn run(agent: Agent, real: RealCommand, adapter: Box<dyn PanelAdapter>) -> ExitCode {
    let setup = match prepare(agent, &real) {
        Ok(setup) => setup,
        Err(error) => {
            eprintln!(
                "cross-agent shim: {error}; running {} without the panel bridge",
                real.display()
            );
            return exec(&real);
        }
    };
    let mut command = Command::new(&real.program);
    command
        .args(real.all_args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    die_with_the_shim(&mut command);
    let child = command.spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(error) => {
            setup
                .log
                .line(format_args!("cannot start {}: {error}", real.display()));
            registration::remove(&setup.paths);
            return exec(&real);
        }
    };
    let (Some(agent_stdin), Some(agent_stdout)) = (child.stdin.take(), child.stdout.take()) else {
        // Both were asked for as pipes; without them nothing can be passed, so stop here.
        let _ = child.kill();
        registration::remove(&setup.paths);
        return exit_code(child.wait().ok());
    };
    let agent_pid = child.id();
    #[cfg(target_os = "linux")]
    for pipe in [
        agent_stdin.as_fd(),
        agent_stdout.as_fd(),
        std::io::stdin().as_fd(),
        std::io::stdout().as_fd(),
    ] {
        tee::widen(pipe);
    }
    setup.log.line(format_args!(
        "started {} (pid {agent_pid}) for a panel session",
        real.display()
    ));
    let our_stdout = match std::io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => File::from(fd),
        Err(error) => {
            // Without our stdout nothing reaches the extension: end the agent, and say why.
            setup.log.line(format_args!("cannot use stdout: {error}"));
            let _ = child.kill();
            registration::remove(&setup.paths);
            return exit_code(child.wait().ok());
        }
    };
    let shared = Arc::new(Shared {
        core: Mutex::new(Core::new(adapter, setup.registration, setup.paths.clone())),
        to_agent: Outbox::new(File::from(std::os::fd::OwnedFd::from(agent_stdin))),
        to_extension: Outbox::new(our_stdout),
        log: setup.log,
        paths: setup.paths,
        registration_changed: Condvar::new(),
        registration_io: parking_lot::Mutex::new(()),
        open_connections: AtomicUsize::new(0),
        done: AtomicBool::new(false),
    });
    lock(&shared.core).set_agent_pid(agent_pid);

    let threads = start_threads(&shared, agent_stdout, setup.listener, agent_pid);
    if let Err(error) = threads {
        lock(&shared.core)
            .stop_intercepting(&format!("cannot start a thread: {error}"), &shared.log);
    }
    let status = child.wait().ok();
    shared
        .log
        .line(format_args!("the agent exited: {status:?}"));
    finish(&shared);
    exit_code(status)
}

/// The agent ends when the shim does, however the shim ends: an editor closing a panel may
/// SIGKILL the shim, and an agent left running would hold its session (Codex: "already has an
/// active writer") and go on with a turn nobody reads. Its stdin's EOF is not enough: a turn in
/// flight runs to its end first, and nothing reads what it writes.
///
/// On Linux the kernel sends SIGTERM (so the agent can still end its own children) when the
/// *thread* that started it exits; this runs on the main thread, which stays in `run` until
/// the agent has exited, so only the shim's own end fires it. Elsewhere the agent sees its
/// stdin close and its stdout break.
fn die_with_the_shim(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        let shim = rustix::process::getpid();
        // `pre_exec` is the one way std offers to act in the child before exec, and it is
        // `unsafe`; no well-kept crate wraps PR_SET_PDEATHSIG, hence this single exception.
        // SAFETY: the closure runs in the forked child before exec and makes only
        // async-signal-safe system calls (prctl, getppid, getpid, kill); it allocates nothing.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || {
                use rustix::process::{
                    Signal, getppid, kill_process, set_parent_process_death_signal,
                };
                set_parent_process_death_signal(Some(Signal::TERM))?;
                // The shim may have died between fork and prctl: then nothing would fire.
                if getppid() != Some(shim) {
                    let _ = kill_process(rustix::process::getpid(), Signal::TERM);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// After the agent exited: let its last bytes reach the extension and the last reports reach
/// their connections, then remove the registration and the socket.
fn finish(shared: &Shared) {
    if !shared.to_extension.wait_finished(DRAIN_AFTER_EXIT) {
        // Its stdout is still held open by something it started: end without it.
        let mut routed = Routed::default();
        lock(&shared.core).call(&mut routed, &shared.log, |adapter, _, out| {
            adapter.on_agent_exit(out)
        });
        shared.route(routed);
        shared.to_extension.close();
        shared.to_extension.wait_finished(FLUSH_AT_EXIT);
    }
    {
        let _io = shared.registration_io.lock();
        shared.done.store(true, Ordering::SeqCst);
    }
    shared.registration_changed.notify_all();
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    while shared.open_connections.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    registration::remove(&shared.paths);
}

struct Setup {
    log: ShimLog,
    paths: Paths,
    listener: UnixListener,
    registration: PanelRegistration,
}

/// Everything that must work before the agent starts; an error here means fail-open (exec).
fn prepare(agent: Agent, real: &RealCommand) -> Result<Setup> {
    let home = Home::from_env().map_err(Error::Home)?;
    home.ensure_root().map_err(Error::Home)?;
    let panels = home.root().join(PANELS_DIR);
    cross_agent_home::home::ensure_private_dir(&panels).map_err(Error::Home)?;
    let pid = std::process::id();
    let log = ShimLog::open(&home.logs_dir(), format!("{}-{pid}", agent.as_str()))?;
    for removed in registration::remove_stale(&panels) {
        log.line(format_args!(
            "removed {} (its shim is gone)",
            removed.display()
        ));
    }
    let paths = Paths::of(&panels, agent, pid);
    // Ours by name: whatever is there was left by a process that had this pid before.
    let _ = std::fs::remove_file(&paths.socket);
    let listener =
        UnixListener::bind(&paths.socket).map_err(|e| Error::io("listen on", &paths.socket, e))?;
    // The folder is owner-only already; the socket is too.
    use std::os::unix::fs::PermissionsExt;
    if let Err(e) = std::fs::set_permissions(&paths.socket, std::fs::Permissions::from_mode(0o600))
    {
        let _ = std::fs::remove_file(&paths.socket);
        return Err(Error::io("restrict", &paths.socket, e));
    }
    let registration = registration::describe(agent, &paths.socket, real.display());
    if let Err(error) = registration::write(&paths.json, &registration) {
        registration::remove(&paths);
        return Err(error);
    }
    Ok(Setup {
        log,
        paths,
        listener,
        registration,
    })
}

fn spawn_named(name: &str, body: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .stack_size(STACK_SIZE)
        .spawn(body)
        .map(drop)
}

fn start_threads(
    shared: &Arc<Shared>,
    agent_stdout: std::process::ChildStdout,
    listener: UnixListener,
    agent_pid: u32,
) -> std::io::Result<()> {
    let our_stdin = std::io::stdin().as_fd().try_clone_to_owned()?;
    // The forwarding handlers go in before any of the agent's output is passed on: once the
    // extension has seen the agent's first line, closing the panel reaches the agent (installed
    // on the forwarder's own thread, a SIGTERM that came early would have ended the shim alone).
    let forwarder = SignalForwarder::install(agent_pid);

    let s = shared.clone();
    spawn_named("to-agent", move || s.to_agent.run_writer())?;
    let s = shared.clone();
    spawn_named("to-extension", move || s.to_extension.run_writer())?;
    let s = shared.clone();
    spawn_named("from-extension", move || {
        pump(&s, Side::Extension, our_stdin);
        // The extension closed its end: so does the agent's stdin, once our queue is written.
        s.to_agent.close();
    })?;
    let s = shared.clone();
    spawn_named("from-agent", move || {
        pump(&s, Side::Agent, OwnedFd::from(agent_stdout));
        let mut routed = Routed::default();
        lock(&s.core).call(&mut routed, &s.log, |adapter, _, out| {
            adapter.on_agent_exit(out)
        });
        s.route(routed);
        s.to_extension.close();
    })?;
    let s = shared.clone();
    spawn_named("socket", move || socket::serve(&s, listener))?;
    let s = shared.clone();
    spawn_named("registration", move || s.keep_registration())?;
    let s = shared.clone();
    spawn_named("tick", move || {
        while !s.done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_secs(1));
            let mut routed = Routed::default();
            lock(&s.core).call(&mut routed, &s.log, |adapter, now, out| {
                adapter.on_tick(now, out)
            });
            s.route(routed);
        }
    })?;
    if let Some(forwarder) = forwarder {
        spawn_named("signals", move || forwarder.run())?;
    }
    Ok(())
}

/// Forwards SIGTERM, SIGINT and SIGHUP to the agent, so closing the panel ends it as it would
/// have without the shim: the handlers are installed by [`SignalForwarder::install`] (on the
/// calling thread, at once), the forwarding is [`SignalForwarder::run`] (on a thread of its own,
/// a current-thread tokio runtime for its signal handling).
struct SignalForwarder {
    runtime: tokio::runtime::Runtime,
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    agent: rustix::process::Pid,
}

impl SignalForwarder {
    /// `None` (the signals keep their default action) if a runtime or a handler cannot be had.
    fn install(agent_pid: u32) -> Option<SignalForwarder> {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .ok()?;
        let agent = i32::try_from(agent_pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)?;
        let (term, int, hup) = {
            let _entered = runtime.enter();
            (
                signal(SignalKind::terminate()).ok()?,
                signal(SignalKind::interrupt()).ok()?,
                signal(SignalKind::hangup()).ok()?,
            )
        };
        Some(SignalForwarder {
            runtime,
            term,
            int,
            hup,
            agent,
        })
    }

    fn run(self) {
        let SignalForwarder {
            runtime,
            mut term,
            mut int,
            mut hup,
            agent,
        } = self;
        runtime.block_on(async move {
            loop {
                let signal = tokio::select! {
                    _ = term.recv() => rustix::process::Signal::TERM,
                    _ = int.recv() => rustix::process::Signal::INT,
                    _ = hup.recv() => rustix::process::Signal::HUP,
                };
                let _ = rustix::process::kill_process(agent, signal);
            }
        });
    }
}

/// Replaces this process with the real binary (same pid); returns only if that fails.
pub fn exec(real: &RealCommand) -> ExitCode {
    let error = Command::new(&real.program).args(real.all_args()).exec();
    eprintln!("cross-agent shim: cannot run {}: {error}", real.display());
    ExitCode::from(if error.kind() == ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// The agent's status as ours: its code, or 128 + the signal that ended it.
fn exit_code(status: Option<ExitStatus>) -> ExitCode {
    let code = match status {
        Some(status) => match (status.code(), status.signal()) {
            (Some(code), _) => code,
            (None, Some(signal)) => 128 + signal,
            (None, None) => 1,
        },
        None => 1,
    };
    ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1))
}

/// The arguments as the adapter reads them.
pub fn argument_strings(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

#[cfg(test)]
mod tests;
