//! The daemon's server: start-up under the pidfile lock, the accept loop, one task per
//! connection, and a graceful stop.
//!
//! Each connection must open with `hello`; a client of another protocol version is answered
//! with an error naming both versions and disconnected. Requests on one connection are answered
//! in order. A frame that is not JSON, not a request, or too long gets an error response and the
//! connection goes on, so one broken client message never costs the daemon or the connection.
//!
//! Stopping (the shutdown future resolves, or a client calls `shutdown`): stop accepting, remove
//! the socket (if it is still ours), let every connection finish the request in hand, record the
//! stop in `hub.db`, release the pidfile lock last. The messaging engine's turns stop in that
//! same sequence, before the lock is released: docs/spec/cross-agent-mcp.md §6 item 4 wants the process groups of
//! in-flight deliveries stopped with the daemon, since a turn left running after it would write
//! to a session no lock protects any more.
//!
//! At most so many connections are served at once, and one that sits idle between requests is
//! closed ([`admission`]); one past the cap is told so and closed. Every two seconds the daemon
//! looks whether its home is still its own ([`home_watch`]).
//!
//! Each connection is served by [`connection`]. `send`, `list_sessions`, `pin` and
//! `bridge_status` are answered by the engine
//! ([`cross_agent_hub::Engine`]) on a blocking thread, since they read the agents' stores.
//!
//! Being replaced (`handover`, see [`crate::handover`] for the whole protocol): `release` pauses
//! the dispatcher, takes `draining-<generation>.lock` and lets go of `daemon.pid`; `abort` undoes
//! that; `drain` ends the accept loop without touching the socket path (the successor's by
//! then), answers every further request on open connections with `shutting_down` so their
//! clients move to the successor, and waits for what this daemon carries to finish (at most
//! [`MAX_DRAIN`]) before the ordinary stop below.

mod admission;
mod connection;
mod forward;
mod home_watch;
mod remote;

pub use admission::{ConnectionLimits, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS};

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cross_agent_home::Home;
use cross_agent_home::pidfile::PidLock;
use cross_agent_hub::db::HubDb;
use cross_agent_hub::integrity::{self, OnDamage, StoreCheck};
use cross_agent_hub::{Engine, EngineConfig, EngineInfo};
use cross_agent_ipc::draining::DrainLock;
use cross_agent_ipc::transport::{self, Listener};
use cross_agent_protocol::rpc::CarriedCounts;
use cross_agent_protocol::settings as var;
use cross_agent_protocol::timestamp::now_rfc3339;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::error::Result;

/// How long connections get to finish the request in hand once the daemon stops.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest a replaced daemon stays to finish what it carries (docs/spec/cross-agent-mcp.md §3: "at most 24
/// hours"); past it, its turns are stopped as on any stop.
pub const MAX_DRAIN: Duration = Duration::from_secs(24 * 60 * 60);

/// How often a draining daemon looks at what it still carries.
const DRAIN_POLL: Duration = Duration::from_millis(500);

/// How often a serving daemon checks that its home is still its own ([`home_watch`]): three
/// `stat`-sized calls, off the request path, so every few seconds costs nothing.
const HOME_WATCH: Duration = Duration::from_secs(2);

fn tools_version() -> String {
    std::env::var(var::TOOLS_VERSION)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| crate::VERSION.to_owned())
}

/// Where a daemon is in its handover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The one daemon of its home.
    Serving,
    /// Told to `release`: the pidfile lock is let go and a successor is starting. Still serves.
    Released,
    /// Replaced: answers nothing new, finishes what it carries, exits.
    Draining {
        successor_pid: u32,
        successor_generation: u64,
    },
}
/// Who this daemon is; what `hello` and `status` report.
#[derive(Debug, Clone)]
pub struct DaemonInfo {
    /// This process.
    pub pid: u32,
    /// This start's number on this home (from `hub.db`).
    pub generation: u64,
    /// When it started, RFC 3339 UTC.
    pub started_at: String,
    /// The same, for uptime.
    pub started: Instant,
    /// cross-agent version.
    pub version: String,
    /// The state directory.
    pub home: PathBuf,
    /// The socket.
    pub socket: PathBuf,
    /// The tool surface's version, reported in `hello`.
    pub tools_version: String,
    /// Set when this start found `hub.db` damaged and moved it aside: what a person is told.
    pub store_notice: Option<String>,
}

/// A daemon that holds its home: lock taken, store open, socket bound. [`Daemon::run`] serves.
#[derive(Debug)]
pub struct Daemon {
    info: DaemonInfo,
    home: Home,
    listener: Listener,
    socket_identity: Option<(u64, u64)>,
    db: HubDb,
    engine: Engine,
    /// How long a stop waits for connections and the Telegram poller; [`DRAIN_TIMEOUT`] unless
    /// changed with [`Daemon::with_drain_timeout`].
    drain_timeout: Duration,
    /// How many connections are served at once and how long one may idle: from the daemon's
    /// environment unless changed with [`Daemon::with_connection_limits`].
    limits: ConnectionLimits,
    // Dropped last (fields drop in order after `run` is done with the others): the lock is what
    // tells the next daemon the home is free.
    lock: PidLock,
}

impl Daemon {
    /// Takes `home` for this process: makes it owner-only (repairing an older install), takes the
    /// pidfile lock ([`cross_agent_home::Error::AlreadyRunning`] if another daemon has it), checks
    /// `hub.db`'s integrity (a damaged store is moved aside and a fresh one created, see
    /// [`cross_agent_hub::integrity`]), opens it and records a new generation, then binds `daemon.sock`, replacing a stale one. Must be called
    /// inside a tokio runtime.
    pub fn bind(home: Home) -> Result<Daemon> {
        Daemon::bind_as(home, false, true)
    }

    /// [`Daemon::bind`] without the store's integrity check: what the start-up bench compares
    /// against, to show what the check costs. A daemon started so never notices a damaged store.
    #[doc(hidden)]
    pub fn bind_without_integrity_check(home: Home) -> Result<Daemon> {
        Daemon::bind_as(home, false, false)
    }

    /// [`Daemon::bind`] for a successor during a handover: the socket that answers belongs to
    /// the daemon being replaced (which has let go of the pidfile lock), and this one's socket is
    /// renamed over it ([`transport::bind_replacing`]).
    pub fn bind_replacing(home: Home) -> Result<Daemon> {
        Daemon::bind_as(home, true, true)
    }

    fn bind_as(home: Home, replacing: bool, integrity_check: bool) -> Result<Daemon> {
        cross_agent_home::home::restrict_umask();
        let tightened = home.tighten_tree()?;
        for (path, mode) in &tightened.changed {
            tracing::info!(path = %path.display(), was = format!("{mode:o}"), "made owner-only");
        }
        for path in &tightened.stepped_around {
            tracing::info!(path = %path.display(), "left an agent's store inside the home alone");
        }
        if tightened.truncated {
            tracing::warn!(home = %home.root().display(), "the home holds too many files to check them all; is CROSS_AGENT_HOME a directory of cross-agent's own?");
        }

        let lock = PidLock::acquire(&home.pidfile())?;
        // A damaged store is moved aside and a fresh one created; a successor leaves it to the
        // daemon it replaces, which still has it open.
        let on_damage = if replacing {
            OnDamage::Refuse
        } else {
            OnDamage::Quarantine
        };
        let (mut db, check) = if integrity_check {
            integrity::open_checked(&home.hub_db(), home.root(), on_damage)?
        } else {
            (HubDb::open(&home.hub_db())?, StoreCheck::Unchecked)
        };
        let pid = std::process::id();
        let started_at = now_rfc3339();
        let generation = db.begin_run(pid, crate::VERSION, &started_at)?;
        db.record_check(generation, &check)?;
        tracing::info!(
            check = check.label(),
            took_ms = check.took().as_millis(),
            "checked the store's integrity"
        );
        for run in db.unclean_runs_before(generation)? {
            tracing::warn!(
                generation = run.generation,
                pid = run.pid,
                started_at = %run.started_at,
                "an earlier daemon did not stop cleanly"
            );
        }

        let engine = match Engine::open(
            &home.hub_db(),
            EngineInfo {
                pid,
                generation,
                started_at: started_at.clone(),
                version: crate::VERSION.to_owned(),
                state_root: home.root().to_owned(),
            },
            // The engine's daemon-wide knobs come from the daemon's own environment, read once.
            EngineConfig::from_vars(|name| std::env::var(name).ok()),
        ) {
            Ok(engine) => engine,
            Err(error) => {
                let _ = db.end_run(generation, &now_rfc3339());
                return Err(error.into());
            }
        };

        let socket = home.socket();
        let bound = if replacing {
            transport::bind_replacing(&socket)
        } else {
            transport::bind(&socket)
        };
        let listener = match bound {
            Ok(listener) => listener,
            Err(error) => {
                // Not a crash: record the stop so the next start does not report one.
                let _ = db.end_run(generation, &now_rfc3339());
                return Err(error.into());
            }
        };
        let socket_identity = transport::socket_identity(&socket);
        // Read after the descriptor limit was raised ([`crate::entry`]): the cap is sized from
        // what the daemon may really open.
        let (limits, warnings) = ConnectionLimits::from_vars(
            |name| std::env::var(name).ok(),
            crate::descriptors::soft_limit(),
        );
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        let info = DaemonInfo {
            pid,
            generation,
            started_at,
            started: Instant::now(),
            version: crate::VERSION.to_owned(),
            home: home.root().to_owned(),
            socket,
            tools_version: tools_version(),
            store_notice: check.notice(),
        };
        tracing::info!(
            pid,
            generation,
            home = %info.home.display(),
            socket = %info.socket.display(),
            version = %info.version,
            max_connections = limits.max_connections,
            idle_timeout_s = limits.idle_timeout.map(|t| t.as_secs()),
            "daemon started"
        );
        Ok(Daemon {
            info,
            home,
            listener,
            socket_identity,
            db,
            engine,
            drain_timeout: DRAIN_TIMEOUT,
            limits,
            lock,
        })
    }

    /// Serves at most `limits.max_connections` connections at once and closes one idle for
    /// `limits.idle_timeout`, instead of what the environment says (tests serving in-process).
    #[must_use]
    pub fn with_connection_limits(mut self, limits: ConnectionLimits) -> Daemon {
        self.limits = limits;
        self
    }

    /// How long a stop gives connections to finish the request in hand (and the Telegram poller
    /// to let go) before closing them; 5 s unless changed. A test raises it far past anything a
    /// stop takes, so a stop that waited on an idle connection shows as a hang rather than as a
    /// few seconds more that only a clock could tell apart.
    #[must_use]
    pub fn with_drain_timeout(mut self, timeout: Duration) -> Daemon {
        self.drain_timeout = timeout;
        self
    }

    /// Who this daemon is.
    pub fn info(&self) -> &DaemonInfo {
        &self.info
    }

    /// Serves until `shutdown` resolves or a client calls `shutdown`, then stops gracefully.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<()> {
        let Daemon {
            info,
            home,
            mut listener,
            mut socket_identity,
            db,
            engine,
            drain_timeout,
            limits,
            lock,
        } = self;
        let (stop_tx, mut stop_rx) = watch::channel(false);
        let (phase_tx, mut phase_rx) = watch::channel(Phase::Serving);
        // Claude's native peer door: relays run `<this program> hook …`, so it is offered only
        // when this process is the cross-agent binary (not a test harness serving in-process).
        match native_settings() {
            Some(settings) => engine.enable_native(settings),
            None => tracing::info!(
                "this process is not the cross-agent binary: live Claude sessions are reached \
                 over the CLI (no relays)"
            ),
        }
        // Queued deliveries — this start's and those an earlier daemon accepted but never
        // handed over — start going out now.
        engine.start();
        // The Telegram bot's one poller (it waits for a token, or for another poller of the
        // same token to let go), stopped with the connections below.
        let bot = cross_agent_telegram::Bot::new(home.root(), |name| std::env::var(name).ok());
        // The escalation guard every correction goes through (the phone's, the robot's).
        let corrections: Arc<dyn crate::review_door::Corrections> = Arc::new(
            crate::review_door::Guarded::new(engine.clone(), bot.clone(), home.root().to_owned()),
        );
        // Today's spend and Codex's windows, for the budget watcher and `/limits`.
        let usage: Arc<dyn crate::budget_watch::UsageSource> = Arc::new(
            crate::budget_watch::EngineSource::new(engine.clone(), home.root().to_owned()),
        );
        bot.set_session_host(Arc::new(crate::telegram_sessions::Host::new(
            engine.clone(),
            Arc::clone(&corrections),
            Arc::clone(&usage),
        )));
        let (telegram_stop, telegram_stop_rx) = watch::channel(false);
        // Copilot's live hosts: listed from themselves, their confirmations on the phone;
        // let go of with the poller.
        crate::copilot_hosts::start(engine.clone(), bot.clone(), telegram_stop_rx.clone());
        // The review robot (idle when `review.robot` is off); let go of with the poller, so a
        // replaced daemon's successor does the passes.
        crate::robot::start(
            engine.clone(),
            home.root().to_owned(),
            cross_agent_decisions::DecisionLog::in_existing_home(home.root()),
            corrections,
            telegram_stop_rx.clone(),
        );
        // The budget watcher (idle with no `[usage.budget]`); let go of with the poller too.
        crate::budget_watch::start(
            home.root().to_owned(),
            usage,
            Arc::new(bot.clone()),
            cross_agent_decisions::DecisionLog::in_existing_home(home.root()),
            telegram_stop_rx.clone(),
        );
        // The links to other machines (hosts.toml), let go of with the poller: a replaced
        // daemon's successor keeps them.
        let links = cross_agent_hosts::Links::start(
            cross_agent_hosts::LinksConfig::for_home(home.root(), |name| std::env::var(name).ok()),
            telegram_stop_rx.clone(),
        );
        // The records of sends forwarded to other hosts, kept in step with the remote ones.
        let forwarding = Arc::new(remote::Forwarding::default());
        remote::follow(
            engine.clone(),
            links.clone(),
            forwarding.clone(),
            telegram_stop_rx.clone(),
        );
        let telegram = tokio::spawn(bot.clone().supervise(telegram_stop_rx));
        let shared = Arc::new(Shared {
            info,
            home,
            stop: stop_tx,
            phase: phase_tx,
            engine: engine.clone(),
            db: parking_lot::Mutex::new(db),
            lock: parking_lot::Mutex::new(Some(lock)),
            drain_lock: parking_lot::Mutex::new(None),
            bot,
            links,
            forwarding,
            idle_timeout: limits.idle_timeout,
        });
        let mut gate = admission::Gate::new(limits, shared.info.pid);
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);

        let mut home_tick = tokio::time::interval(HOME_WATCH);
        home_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

        // The phase as this loop last handled it: after an aborted handover the socket is only
        // taken back in the phase arm below, so the home watch must not look before that.
        let mut serving = true;
        let mut home_check = home_watch::HomeWatch::default();
        // Set while `accept` fails (out of descriptors, typically), so that is logged once.
        let mut accept_failing = false;
        let mut signalled = false;
        let reason = loop {
            tokio::select! {
                () = &mut shutdown => { signalled = true; break "asked by its owner (signal)" }
                // Mapped to `()` so the watch guard it returns is not held across the awaits below.
                () = async { let _ = stop_rx.wait_for(|stop| *stop).await; } => {
                    break "asked by a client (shutdown)"
                }
                changed = phase_rx.changed() => {
                    let phase = *phase_rx.borrow_and_update();
                    serving = phase == Phase::Serving;
                    match (changed, phase) {
                        (Ok(()), Phase::Draining { .. }) => break "replaced (handover)",
                        (Ok(()), Phase::Serving) => {
                            take_socket_back(&shared.info.socket, &mut listener, &mut socket_identity);
                        }
                        (Ok(()), Phase::Released) | (Err(_), _) => {}
                    }
                }
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        if std::mem::take(&mut accept_failing) {
                            tracing::info!("accepting connections again");
                        }
                        match gate.admit() {
                            admission::Admission::Serve(permit) => {
                                connections.spawn(connection::serve(stream, Arc::clone(&shared), permit));
                            }
                            admission::Admission::Refuse { message, slot } => {
                                connections.spawn(admission::refuse(stream, message, slot));
                            }
                            admission::Admission::Drop => drop(stream),
                        }
                    }
                    Err(error) => {
                        // Out of descriptors and the like: pause instead of spinning, and say
                        // so once rather than ten times a second.
                        if !std::mem::replace(&mut accept_failing, true) {
                            tracing::warn!(%error, open = connections.len(), "accept failed; new connections wait until it works again");
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                // Only while serving: during a handover the socket and the pidfile pass to the
                // successor on purpose.
                _ = home_tick.tick(), if serving => {
                    let verdict = home_watch::look(&shared, socket_identity);
                    if home_check.judge(verdict, &shared.info.home).is_some() {
                        break "its home is gone or taken (home watch)";
                    }
                }
            }
        };
        tracing::info!(reason, "daemon stopping");
        // A replaced daemon's failures go to its successor's bot; subscribed before this one's
        // bot lets go, so a failure in between is forwarded rather than lost.
        let forwarder = matches!(*shared.phase.borrow(), Phase::Draining { .. }).then(|| {
            forward::Forwarder::start(
                shared.engine.subscribe(),
                shared.home.clone(),
                shared.info.generation,
            )
        });
        // One poller per token: a successor (or the next daemon) polls the bot from now on, so
        // this one lets go of it before draining.
        telegram_stop.send_replace(true);

        // New clients now find nothing and start a successor, which will wait for our lock —
        // or, after a handover, find the successor already on the path.
        drop(listener);
        if socket_identity.is_some()
            && transport::socket_identity(&shared.info.socket) == socket_identity
        {
            let _ = std::fs::remove_file(&shared.info.socket);
        }
        if !signalled && matches!(*shared.phase.borrow(), Phase::Draining { .. }) {
            drain(&shared, &mut shutdown).await;
        }
        shared.stop.send_replace(true);
        if tokio::time::timeout(drain_timeout, telegram).await.is_err() {
            tracing::warn!("the telegram poller did not stop in time");
        }

        let drained = tokio::time::timeout(drain_timeout, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                left = connections.len(),
                "connections did not finish in time; closing them"
            );
            connections.shutdown().await;
        }

        // docs/spec/cross-agent-mcp.md §6 item 4: the turns this daemon started stop with it (their process groups
        // killed, their deliveries recorded failed with `is_stopped_with_carrier`) before the
        // lock that protects their sessions goes.
        engine.shutdown().await;
        if let Some(forwarder) = forwarder {
            forwarder.finish().await;
        }
        shared
            .db
            .lock()
            .end_run(shared.info.generation, &now_rfc3339())?;
        tracing::info!(
            pid = shared.info.pid,
            generation = shared.info.generation,
            "daemon stopped"
        );
        // The pidfile lock (if this daemon still holds it) and the drain record go last.
        shared.lock.lock().take();
        shared.drain_lock.lock().take();
        Ok(())
    }
}

/// After an aborted handover: a successor that died after moving its socket into place left
/// the path pointing at nothing, so this daemon binds it again.
fn take_socket_back(
    socket: &std::path::Path,
    listener: &mut Listener,
    identity: &mut Option<(u64, u64)>,
) {
    if transport::socket_identity(socket) == *identity {
        return;
    }
    match transport::bind_replacing(socket) {
        Ok(rebound) => {
            *listener = rebound;
            *identity = transport::socket_identity(socket);
            tracing::info!("took the socket back after a failed handover");
        }
        Err(error) => {
            tracing::error!(%error, "could not take the socket back after a failed handover")
        }
    }
}

/// What this daemon still carries ([`Engine::carried`]), in the RPC's terms.
fn carried(shared: &Shared) -> CarriedCounts {
    let work = shared.engine.carried();
    CarriedCounts {
        turns_running: work.turns_running as u64,
        answers_pending: work.answers_pending as u64,
        late_answer_watches: work.late_answer_watches as u64,
    }
}

/// A replaced daemon: [`Engine::drain`] (queue left for the successor, late-answer watches
/// handed over in `hub.db`, running turns watched to their end with their locks renewed),
/// recording the counts in the drain record as they change; at most [`MAX_DRAIN`], or until a
/// signal stops it.
async fn drain(shared: &Shared, shutdown: &mut std::pin::Pin<&mut impl Future<Output = ()>>) {
    let engine = shared.engine.clone();
    let drained = engine.drain();
    tokio::pin!(drained);
    let longest = tokio::time::sleep(MAX_DRAIN);
    tokio::pin!(longest);
    let mut look = tokio::time::interval(DRAIN_POLL);
    loop {
        tokio::select! {
            at_start = &mut drained => {
                tracing::info!(?at_start, "drained: nothing left to carry");
                return;
            }
            () = &mut longest => {
                tracing::warn!(carried = ?carried(shared), "still carrying work after the longest drain; stopping it");
                return;
            }
            () = shutdown.as_mut() => {
                tracing::info!(carried = ?carried(shared), "stopped by a signal while draining");
                return;
            }
            _ = look.tick() => {
                let counts = carried(shared);
                if let Some(record) = shared.drain_lock.lock().as_mut()
                    && let Err(error) = record.update(counts)
                {
                    tracing::warn!(%error, "could not update the drain record");
                }
            }
        }
    }
}

/// What connection tasks share.
#[derive(Debug)]
struct Shared {
    info: DaemonInfo,
    home: Home,
    /// Set to true to stop the daemon; connections watch it too.
    stop: watch::Sender<bool>,
    /// Where this daemon is in a handover.
    phase: watch::Sender<Phase>,
    /// The messaging engine.
    engine: Engine,
    /// The daemon's own handle on `hub.db` (its run record, the counts of what it carries).
    db: parking_lot::Mutex<HubDb>,
    /// `daemon.pid`, held except between a handover's `release` and its end.
    lock: parking_lot::Mutex<Option<PidLock>>,
    /// `draining-<generation>.lock`, held from a handover's `release` to the exit.
    drain_lock: parking_lot::Mutex<Option<DrainLock>>,
    /// The Telegram bot: the poller's pending approvals, answered for `hook` calls.
    bot: cross_agent_telegram::Bot,
    /// The SSH links to other machines and their status (`hosts_status`).
    links: cross_agent_hosts::Links,
    /// The sends being forwarded to other hosts right now.
    forwarding: Arc<remote::Forwarding>,
    /// How long a connection may wait between requests before it is closed.
    idle_timeout: Option<Duration>,
}

/// What the engine needs to host relays: this program (the relays' hooks run it) and this
/// machine's name. `None` when this process is not the cross-agent binary.
fn native_settings() -> Option<cross_agent_hub::NativeSettings> {
    let program = std::env::current_exe().ok()?;
    let name = program.file_name()?.to_string_lossy();
    if !name.starts_with("cross-agent") {
        return None;
    }
    let machine = cross_agent_process::machine_name().unwrap_or_else(|| "machine".to_owned());
    Some(cross_agent_hub::NativeSettings::new(program, machine))
}
