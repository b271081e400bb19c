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

mod core;
pub mod outbox;
mod socket;
#[cfg(target_os = "linux")]
mod tee;

use std::ffi::OsString;
use std::fs::File;
use std::io::ErrorKind;
use std::ops::Range;
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

use self::core::{Core, LineAt, Piece, Pieces, Routed, lock};
use self::outbox::{HIGH_WATER, Outbox, Pen};
use crate::adapter::{PanelAdapter, Side};
use crate::log::ShimLog;
use crate::real_binary::RealCommand;
use crate::registration::{self, Paths, now_ms};
use crate::{Error, Result};

/// Bytes asked of a pipe per read.
const READ_SIZE: usize = 64 * 1024;
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
    registration_io: Mutex<()>,
    /// Connections still writing their last events.
    open_connections: AtomicUsize,
    done: AtomicBool,
}

impl Shared {
    /// Hands the complete lines of `batch.buf[..end]` to the adapter and sends on what comes
    /// out; the consumed bytes are removed from the batch. Bytes of the batch still in the
    /// input pipe (the fast path, [`tee`]) are spliced on or discarded here, and so is the
    /// incomplete line after `end`: a long one streams on (the pen kept) when the adapter lets
    /// it, else its bytes are taken out of the pipe and held in the batch until it ends.
    fn take_lines(&self, side: Side, batch: &mut Batch, source: &mut Source, at_end: bool) {
        let (forward_to, other_to) = match side {
            Side::Extension => (&self.to_agent, &self.to_extension),
            Side::Agent => (&self.to_extension, &self.to_agent),
        };
        let len = batch.buf.len();
        #[cfg(target_os = "linux")]
        let teeing = matches!(source, Source::Tee(_));
        #[cfg(not(target_os = "linux"))]
        let teeing = false;
        // The first newline, searched for after what earlier batches searched (a long line's
        // head is scanned once); nothing to do without one unless bytes wait in the input pipe.
        let scanned = batch.scanned.min(len);
        let first = memchr::memchr(b'\n', &batch.buf[scanned..])
            .map(|i| scanned + i + 1)
            .or(at_end.then_some(len).filter(|&l| l > 0));
        if first.is_none() && batch.held == len && !batch.pen {
            batch.scanned = len;
            return;
        }
        let mut queued = false;
        let mut end = 0;
        let direct = {
            let mut core = lock(&self.core);
            let mut routed = Routed::default();
            let now = now_ms();
            let mut next = first;
            while let Some(stop) = next {
                let buf = &batch.buf;
                let whole = &buf[end..stop];
                let line = whole.strip_suffix(b"\n").unwrap_or(whole);
                let committed = end < batch.sent;
                // A line that streamed kept only its head ([`Shared::move_batch`]): the adapter
                // gets that head, not the head joined to the line's last bytes.
                let line = if committed {
                    &line[..line.len().min(STREAMED_HEAD)]
                } else {
                    line
                };
                let at = LineAt {
                    range: end..stop,
                    now,
                    committed,
                };
                core.on_line(side, line, at, &mut routed, &self.log);
                end = stop;
                next = memchr::memchr(b'\n', &buf[stop..])
                    .map(|i| stop + i + 1)
                    .or((at_end && stop < len).then_some(len));
            }
            // The incomplete line after `end` streams on once it is long (or already does).
            let tail = &batch.buf[end..];
            let early = !tail.is_empty()
                && (batch.sent > end
                    || (teeing
                        && tail.len() >= STREAM_AFTER
                        && core.streams_from_head(side, tail, now, &mut routed, &self.log)));
            if core.signal_stale() {
                self.registration_changed.notify_one();
            }
            // Queued (or the pen taken) while the lock is held, so the order the adapter
            // decided is kept.
            let (forward, other) = match side {
                Side::Extension => (routed.to_agent, routed.to_extension),
                Side::Agent => (routed.to_extension, routed.to_agent),
            };
            other.send(&batch.buf, other_to);
            if batch.held == len && !batch.pen && !early && batch.parked == 0 {
                // Every byte is in the batch and no line streams: the plain path.
                if !forward.is_whole(end) {
                    forward.send(&batch.buf, forward_to);
                    false
                } else if forward_to.try_direct() {
                    true
                } else {
                    let rest = batch.buf.split_off(end);
                    forward_to.push(std::mem::replace(&mut batch.buf, rest));
                    batch.taken(end);
                    return;
                }
            } else {
                let pen = if batch.pen {
                    Pen::Now
                } else {
                    forward_to.reserve()
                };
                match pen {
                    Pen::Now => {}
                    Pen::Queued => queued = true,
                    Pen::Unavailable => {
                        // Broken or closed: queue a copy as a push would (it is dropped if
                        // broken), and take the bytes out of the pipe.
                        forward.send(&batch.buf, forward_to);
                        drop(core);
                        return self.discard_batch(side, batch, end, source);
                    }
                }
                let plan = (forward, early);
                drop(core);
                return self.move_batch(side, batch, end, source, plan, queued);
            }
        };
        if direct {
            forward_to.write_direct(&batch.buf[..end]);
        }
        batch.after_take(end);
    }

    /// Sends a batch with the pen held (or its turn queued): the batch's own bytes are
    /// written, those still in the input pipe spliced, dropped lines discarded from it.
    fn move_batch(
        &self,
        side: Side,
        batch: &mut Batch,
        end: usize,
        source: &mut Source,
        (forward, early): (Pieces, bool),
        queued: bool,
    ) {
        let forward_to = match side {
            Side::Extension => &self.to_agent,
            Side::Agent => &self.to_extension,
        };
        let len = batch.buf.len();
        if queued && !forward_to.wait_turn() {
            // Broke while waiting: nothing more reaches that side.
            return self.discard_batch(side, batch, end, source);
        }
        #[cfg(target_os = "linux")]
        let tee = match source {
            Source::Tee(tee) => Some(tee.as_mut()),
            _ => None,
        };
        let mut mover = Mover::new(
            #[cfg(target_os = "linux")]
            tee,
            forward_to,
            batch,
        );
        let mut pieces = forward.into_pieces();
        // A streaming line right after the last forwarded one goes on with it: one splice, one
        // wake-up of the reader.
        let mut streamed = false;
        if early
            && let Some(Piece::Range(last)) = pieces.last_mut()
            && last.end == end
        {
            last.end = len;
            streamed = true;
        }
        for piece in pieces {
            match piece {
                Piece::Range(range) => mover.forward(range),
                Piece::Owned(line) => mover.own(&line),
            }
        }
        mover.drop_to(end);
        let parked = if early {
            if !streamed {
                mover.forward(end..len);
            }
            0
        } else {
            // Its bytes wait for its end, in the park or in the batch.
            mover.hold_rest(end)
        };
        let fall_back = mover.fall_back;
        batch.pen = early;
        batch.parked = if fall_back { 0 } else { parked };
        if early {
            // Every byte of the streaming line has passed on, and the adapter reads a line that
            // streamed by its head alone: only the head is kept (a 1 MB image is then neither
            // held in memory nor moved about in it).
            batch.buf.truncate(len.min(end + STREAMED_HEAD));
            batch.sent = batch.buf.len();
        } else {
            forward_to.release();
        }
        batch.held = batch.buf.len();
        batch.after_take(end);
        if fall_back {
            source.fall_back(&self.log, side);
        }
    }

    /// The pipe this batch goes to is gone: its bytes still in the input are taken out (as a
    /// plain read would have), and the pump reads plainly from now on.
    fn discard_batch(&self, side: Side, batch: &mut Batch, end: usize, source: &mut Source) {
        let len = batch.buf.len();
        #[cfg(target_os = "linux")]
        if let Source::Tee(tee) = source
            && batch.held < len
            && let Err(error) = tee.discard(len - batch.held)
        {
            self.log
                .line(format_args!("reading the {side:?} side failed: {error}"));
        }
        batch.held = len;
        batch.sent = 0;
        batch.pen = false;
        batch.parked = 0;
        batch.after_take(end);
        source.fall_back(&self.log, side);
    }

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
                    let _io = self
                        .registration_io
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
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
        registration_io: Mutex::new(()),
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
        let _io = shared
            .registration_io
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
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

/// Where a pump's bytes come from.
enum Source {
    /// Read into the shim and written on from there (any input, every platform).
    Read(OwnedFd),
    /// Looked at through a copy and spliced on (Linux, an input pipe): [`tee`].
    #[cfg(target_os = "linux")]
    Tee(Box<tee::TeeInput>),
    /// Nothing more can be read.
    Gone,
}

impl Source {
    fn new(input: OwnedFd) -> Source {
        #[cfg(target_os = "linux")]
        {
            match tee::TeeInput::new(input) {
                Ok(tee) => Source::Tee(Box::new(tee)),
                Err(input) => Source::Read(input),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Source::Read(input)
        }
    }

    /// From the fast path to plain reads (between batches, when no byte of the batch is left
    /// in the input).
    fn fall_back(&mut self, log: &ShimLog, side: Side) {
        #[cfg(target_os = "linux")]
        if let Source::Tee(_) = self
            && let Source::Tee(tee) = std::mem::replace(self, Source::Gone)
        {
            log.line(format_args!(
                "the {side:?} side is read plainly from now on"
            ));
            *self = Source::Read(tee.into_input());
        }
        let _ = (log, side);
    }
}

/// The bytes a pump has taken in and not passed on whole yet.
#[derive(Debug, Default)]
struct Batch {
    buf: Vec<u8>,
    /// `buf[..sent]` has passed on already: the head of a long line streaming through, with
    /// the forward pen kept (`pen`).
    sent: usize,
    /// `buf[..held]` has been taken out of the input; `buf[held..]` is a copy of bytes still at
    /// the front of the input pipe (the fast path).
    held: usize,
    /// Bytes at the start of `buf` already searched for a newline (a long line's head).
    scanned: usize,
    /// The pen of the pipe this side forwards to is kept across batches: a line streams.
    pen: bool,
    /// `buf[sent..sent + parked]` also waits in the fast path's park (a pipe of ours), so it
    /// moves on without a copy.
    parked: usize,
}

impl Batch {
    /// `buf[..end]` is dealt with.
    fn after_take(&mut self, end: usize) {
        self.buf.drain(..end);
        self.taken(end);
    }

    /// `end` bytes were taken off the front of `buf`.
    fn taken(&mut self, end: usize) {
        self.sent = self.sent.saturating_sub(end);
        self.held = self.held.saturating_sub(end);
        self.scanned = self.buf.len();
    }
}

/// Sends one batch with the pen held, in the order of its pieces. Bytes the batch holds are
/// spliced from the park where they wait, else written from the batch's copy; bytes still in
/// the input pipe are spliced (or, if the output takes no splice, discarded from the pipe and
/// written from the copy); bytes of dropped lines are discarded.
///
/// The batch's bytes, by position: `[..sent)` passed on before, `[sent..park_end)` wait in the
/// park (from `park_at`), then those only in the copy up to `held`, then those still in the
/// input (from `pipe_at`).
struct Mover<'a> {
    #[cfg(target_os = "linux")]
    tee: Option<&'a mut tee::TeeInput>,
    outbox: &'a Outbox,
    buf: &'a [u8],
    held: usize,
    pipe_at: usize,
    sent: usize,
    park_at: usize,
    park_end: usize,
    /// Splicing failed or the output broke: read plainly from the next batch on (the park is
    /// not used again; what waits there is in the copy too).
    fall_back: bool,
    /// The output is gone: bytes are only taken out of the input.
    broken: bool,
}

impl Mover<'_> {
    fn new<'a>(
        #[cfg(target_os = "linux")] tee: Option<&'a mut tee::TeeInput>,
        outbox: &'a Outbox,
        batch: &'a Batch,
    ) -> Mover<'a> {
        Mover {
            #[cfg(target_os = "linux")]
            tee,
            outbox,
            buf: &batch.buf,
            held: batch.held,
            pipe_at: batch.held,
            sent: batch.sent,
            park_at: batch.sent,
            park_end: batch.sent + batch.parked,
            fall_back: false,
            broken: false,
        }
    }

    /// Bytes still waiting in the park.
    fn parked(&self) -> usize {
        self.park_end - self.park_at
    }

    fn write(&mut self, range: Range<usize>) {
        if !range.is_empty() && !self.broken && !self.outbox.write_held(&self.buf[range]) {
            self.broken = true;
            self.fall_back = true;
        }
    }

    /// Splices `len` bytes on (from the park or the input); how many moved. On an error the
    /// output is marked broken or the batch falls back to writing from its copy.
    #[cfg(target_os = "linux")]
    fn splice(&mut self, from_park: bool, len: usize) -> usize {
        let Some(tee) = self.tee.as_deref_mut() else {
            return 0;
        };
        if self.fall_back || self.broken {
            return 0;
        }
        let (moved, error) = self
            .outbox
            .with_sink(|sink| match from_park {
                true => tee.unpark_to(sink.as_fd(), len),
                false => tee.splice_to(sink.as_fd(), len),
            })
            .unwrap_or((0, Some(rustix::io::Errno::PIPE)));
        match error {
            None => {}
            Some(rustix::io::Errno::PIPE) => {
                self.outbox.set_broken();
                self.broken = true;
                self.fall_back = true;
            }
            // The output takes no splice (or it failed otherwise): copy from here on.
            Some(_) => self.fall_back = true,
        }
        moved
    }

    fn forward(&mut self, range: Range<usize>) {
        let range = range.start.max(self.sent)..range.end;
        if range.is_empty() {
            return;
        }
        // Waiting in the park.
        let parked = range.start..range.end.min(self.park_end);
        if !parked.is_empty() {
            self.drop_to(parked.start);
            #[cfg(target_os = "linux")]
            {
                let moved = self.splice(true, parked.len());
                self.park_at += moved;
            }
            let from = self.park_at;
            self.drop_to(parked.end);
            self.write(from..parked.end);
        }
        // Only in the copy.
        let own = range.start.max(self.park_end)..range.end.min(self.held);
        self.write(own);
        // Still in the input.
        let piped = range.start.max(self.held)..range.end;
        if piped.is_empty() {
            return;
        }
        self.drop_to(piped.start);
        #[cfg(target_os = "linux")]
        {
            let moved = self.splice(false, piped.len());
            self.pipe_at += moved;
        }
        let from = self.pipe_at;
        self.drop_to(piped.end);
        self.write(from..piped.end);
    }

    /// A line of ours.
    fn own(&mut self, line: &[u8]) {
        if !self.broken && !self.outbox.write_held(line) {
            self.broken = true;
            self.fall_back = true;
        }
    }

    /// Takes the bytes before `buf[to]` out of the park and the input, unsent (their copy is
    /// in `buf`).
    fn drop_to(&mut self, to: usize) {
        let park_to = to.min(self.park_end);
        if park_to > self.park_at {
            #[cfg(target_os = "linux")]
            if let Some(tee) = self.tee.as_deref_mut()
                && !self.fall_back
                && tee.unpark_discard(park_to - self.park_at).is_err()
            {
                self.fall_back = true;
            }
            self.park_at = park_to;
        }
        self.drop_to_input_only(to);
    }

    /// Takes the incomplete line `buf[from..]` out of the input to wait for its end: into the
    /// park while every byte of it taken before is there too and it has room, the rest only
    /// into the copy. Returns the bytes waiting in the park (they start at `from`).
    fn hold_rest(&mut self, from: usize) -> usize {
        self.drop_to(from);
        let end = self.buf.len();
        if self.parked() == 0 {
            // An empty park starts where the line's first byte not in the copy alone is.
            self.park_at = self.pipe_at.max(from);
            self.park_end = self.park_at;
        }
        #[cfg(target_os = "linux")]
        if self.park_end == self.pipe_at
            && self.park_at == from
            && !self.fall_back
            && let Some(tee) = self.tee.as_deref_mut()
        {
            let moved = tee.park(end - self.pipe_at);
            self.pipe_at += moved;
            self.park_end += moved;
        }
        self.drop_to_input_only(end);
        if self.park_at != from && self.parked() > 0 {
            // Not where the line starts (never expected): out of the park with them, the copy
            // serves.
            let park_end = self.park_end;
            self.drop_to(park_end);
        }
        if self.fall_back { 0 } else { self.parked() }
    }

    /// As [`Mover::drop_to`], for the input alone (the park keeps its bytes).
    fn drop_to_input_only(&mut self, to: usize) {
        if to <= self.pipe_at {
            return;
        }
        #[cfg(target_os = "linux")]
        if let Some(tee) = self.tee.as_deref_mut()
            && tee.discard(to - self.pipe_at).is_err()
        {
            // The input failed under us: what is left of it is lost, as a failed read loses it.
            self.fall_back = true;
        }
        self.pipe_at = to;
    }
}

/// Bytes of an incomplete line after which its head is shown to the adapter, which may let it
/// stream on before it ends: enough for every head the adapters tell lines by
/// (`{"type":"assistant",`, `{"jsonrpc":"2.0","method":"…"`; one cut short is asked again when
/// more has come). Most lines an agent writes are whole in one read, and the rest of a round's
/// last line goes on in the round's one splice instead of waiting in the park for its end
/// (measured: about 2 points of the plain pipe's throughput).
const STREAM_AFTER: usize = 64;
/// How much of a line that streamed the shim keeps: it is handed to the adapter as this head.
const STREAMED_HEAD: usize = 16 * 1024;

/// Reads `input` to its end, handing whole lines to the adapter; a partial last line at the end
/// is passed on as it is.
fn pump(shared: &Shared, side: Side, input: OwnedFd) {
    let destination = match side {
        Side::Extension => &shared.to_agent,
        Side::Agent => &shared.to_extension,
    };
    let mut source = Source::new(input);
    let mut batch = Batch::default();
    loop {
        let read = match &mut source {
            Source::Read(input) => {
                batch.buf.reserve(READ_SIZE);
                // Read into the spare capacity: zeroing the buffer before every read would cost
                // a memset of it per read, however few bytes the pipe holds.
                match rustix::io::read(&*input, rustix::buffer::spare_capacity(&mut batch.buf)) {
                    Ok(n) => {
                        batch.held = batch.buf.len();
                        n
                    }
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => {
                        shared
                            .log
                            .line(format_args!("reading the {side:?} side failed: {e}"));
                        0
                    }
                }
            }
            #[cfg(target_os = "linux")]
            Source::Tee(tee) => match tee.peek(&mut batch.buf) {
                Ok(n) => n,
                Err(e) => {
                    // Whatever the copy got is still in the input: read it plainly.
                    shared
                        .log
                        .line(format_args!("looking at the {side:?} side failed: {e}"));
                    batch.buf.truncate(batch.held);
                    batch.parked = 0;
                    source.fall_back(&shared.log, side);
                    continue;
                }
            },
            Source::Gone => 0,
        };
        if read == 0 {
            break;
        }
        shared.take_lines(side, &mut batch, &mut source, false);
        if !batch.pen {
            destination.wait_below(HIGH_WATER);
        }
    }
    if !batch.buf.is_empty() || batch.pen {
        shared.take_lines(side, &mut batch, &mut source, true);
    }
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
