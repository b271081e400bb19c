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
//! same sequence, before the lock is released: spec 004 §6 item 4 wants the process groups of
//! in-flight deliveries stopped with the daemon, since a turn left running after it would write
//! to a session no lock protects any more.
//!
//! `send`, `list_sessions`, `pin` and `bridge_status` are answered by the engine
//! ([`cross_agent_hub::Engine`]) on a blocking thread, since they read the agents' stores.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cross_agent_hub::db::{HubDb, now_rfc3339};
use cross_agent_hub::{Engine, EngineInfo};
use cross_agent_ipc::Home;
use cross_agent_ipc::frame::{self, FrameReader, ReadError};
use cross_agent_ipc::pidfile::PidLock;
use cross_agent_ipc::transport::{self, Listener, Stream};
use cross_agent_protocol::bridge::{BridgeStatusParams, ListSessionsParams, PinParams, SendParams};
use cross_agent_protocol::rpc::{
    ClientRequest, ErrorCode, HelloParams, HelloResponse, METHODS, Method, PROTOCOL_VERSION,
    ProtocolMismatchData, Request, RequestId, RpcError, ServerMessage, ShutdownResponse,
    StatusResponse,
};
use tokio::io::BufReader;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::error::Result;

/// How long connections get to finish the request in hand once the daemon stops.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

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
}

/// A daemon that holds its home: lock taken, store open, socket bound. [`Daemon::run`] serves.
#[derive(Debug)]
pub struct Daemon {
    info: DaemonInfo,
    listener: Listener,
    socket_identity: Option<(u64, u64)>,
    db: HubDb,
    engine: Engine,
    // Dropped last (fields drop in order after `run` is done with the others): the lock is what
    // tells the next daemon the home is free.
    lock: PidLock,
}

impl Daemon {
    /// Takes `home` for this process: makes it owner-only (repairing an older install), takes the
    /// pidfile lock ([`cross_agent_ipc::Error::AlreadyRunning`] if another daemon has it), opens `hub.db` and
    /// records a new generation, then binds `daemon.sock`, replacing a stale one. Must be called
    /// inside a tokio runtime.
    pub fn bind(home: Home) -> Result<Daemon> {
        cross_agent_ipc::home::restrict_umask();
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
        let mut db = HubDb::open(&home.hub_db())?;
        let pid = std::process::id();
        let started_at = now_rfc3339();
        let generation = db.begin_run(pid, crate::VERSION, &started_at)?;
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
        ) {
            Ok(engine) => engine,
            Err(error) => {
                let _ = db.end_run(generation, &now_rfc3339());
                return Err(error.into());
            }
        };

        let socket = home.socket();
        let listener = match transport::bind(&socket) {
            Ok(listener) => listener,
            Err(error) => {
                // Not a crash: record the stop so the next start does not report one.
                let _ = db.end_run(generation, &now_rfc3339());
                return Err(error.into());
            }
        };
        let socket_identity = transport::socket_identity(&socket);
        let info = DaemonInfo {
            pid,
            generation,
            started_at,
            started: Instant::now(),
            version: crate::VERSION.to_owned(),
            home: home.root().to_owned(),
            socket,
        };
        tracing::info!(
            pid,
            generation,
            home = %info.home.display(),
            socket = %info.socket.display(),
            version = %info.version,
            "daemon started"
        );
        Ok(Daemon {
            info,
            listener,
            socket_identity,
            db,
            engine,
            lock,
        })
    }

    /// Who this daemon is.
    pub fn info(&self) -> &DaemonInfo {
        &self.info
    }

    /// Serves until `shutdown` resolves or a client calls `shutdown`, then stops gracefully.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<()> {
        let Daemon {
            info,
            listener,
            socket_identity,
            mut db,
            engine,
            lock,
        } = self;
        let (stop_tx, mut stop_rx) = watch::channel(false);
        // Queued deliveries — this start's and those an earlier daemon accepted but never
        // handed over — start going out now.
        engine.start();
        let shared = Arc::new(Shared {
            info,
            stop: stop_tx,
            engine: engine.clone(),
        });
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);

        let reason = loop {
            tokio::select! {
                () = &mut shutdown => break "asked by its owner (signal)",
                // Mapped to `()` so the watch guard it returns is not held across the awaits below.
                () = async { let _ = stop_rx.wait_for(|stop| *stop).await; } => {
                    break "asked by a client (shutdown)"
                }
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        connections.spawn(serve(stream, Arc::clone(&shared)));
                    }
                    Err(error) => {
                        // Out of descriptors and the like: pause instead of spinning.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        };
        tracing::info!(reason, "daemon stopping");

        // New clients now find nothing and start a successor, which will wait for our lock.
        drop(listener);
        if socket_identity.is_some()
            && transport::socket_identity(&shared.info.socket) == socket_identity
        {
            let _ = std::fs::remove_file(&shared.info.socket);
        }
        shared.stop.send_replace(true);

        let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
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

        // Spec 004 §6 item 4: the turns this daemon started stop with it (their process groups
        // killed, their deliveries recorded failed with `is_stopped_with_carrier`) before the
        // lock that protects their sessions goes.
        engine.shutdown().await;
        db.end_run(shared.info.generation, &now_rfc3339())?;
        tracing::info!(
            pid = shared.info.pid,
            generation = shared.info.generation,
            "daemon stopped"
        );
        drop(db);
        drop(lock);
        Ok(())
    }
}

/// What connection tasks share.
#[derive(Debug)]
struct Shared {
    info: DaemonInfo,
    /// Set to true to stop the daemon; connections watch it too.
    stop: watch::Sender<bool>,
    /// The messaging engine.
    engine: Engine,
}

/// What to do after answering.
enum After {
    Continue,
    /// Close the connection (after a protocol mismatch).
    Close,
    /// Stop the daemon (after answering `shutdown`).
    Stop,
}

/// Per-connection state.
#[derive(Default)]
struct Session {
    hello: Option<HelloParams>,
}

async fn serve(stream: Stream, shared: Arc<Shared>) {
    let (read, mut write) = stream.into_split();
    let mut frames = FrameReader::new(BufReader::new(read));
    let mut stop = shared.stop.subscribe();
    let mut session = Session::default();
    loop {
        let frame = tokio::select! {
            biased;
            () = async { let _ = stop.wait_for(|stop| *stop).await; } => break,
            frame = frames.next_frame() => frame,
        };
        let (reply, after) = match frame {
            Ok(Some(bytes)) => handle_frame(&bytes, &shared, &mut session).await,
            Ok(None) => break,
            Err(ReadError::TooLarge { limit }) => (
                error(
                    None,
                    ErrorCode::FrameTooLarge,
                    format!("the request was longer than {limit} bytes and was skipped"),
                ),
                After::Continue,
            ),
            Err(ReadError::Io(error)) => {
                tracing::debug!(%error, "connection read failed");
                break;
            }
        };
        if let Err(error) = frame::write_frame(&mut write, &reply).await {
            tracing::debug!(%error, "connection write failed");
            break;
        }
        match after {
            After::Continue => {}
            After::Close => break,
            After::Stop => {
                shared.stop.send_replace(true);
                break;
            }
        }
    }
    if let Some(hello) = session.hello {
        tracing::debug!(client_kind = ?hello.client_kind, client_pid = hello.client_pid, "client disconnected");
    }
}

fn error(id: Option<RequestId>, code: ErrorCode, message: String) -> ServerMessage {
    ServerMessage::Error {
        id,
        error: RpcError::new(code, message),
    }
}

fn respond<M: Method>(id: RequestId, response: M::Response) -> ServerMessage {
    match serde_json::to_value(response) {
        Ok(result) => ServerMessage::Response { id, result },
        Err(e) => error(
            Some(id),
            ErrorCode::Internal,
            format!(
                "the daemon could not encode its answer to `{}`: {e}",
                M::NAME
            ),
        ),
    }
}

/// Reads one frame in two steps — first as any JSON, then as a request — so a broken request
/// is answered with the most precise error and, whenever it can be read, its own id.
async fn handle_frame(
    bytes: &[u8],
    shared: &Shared,
    session: &mut Session,
) -> (ServerMessage, After) {
    let value: serde_json::Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(e) => {
            return (
                error(
                    None,
                    ErrorCode::ParseError,
                    format!("the request is not JSON ({e}); send one JSON object per line"),
                ),
                After::Continue,
            );
        }
    };
    let id = value
        .get("id")
        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    let Some(id) = id else {
        return (
            error(
                None,
                ErrorCode::InvalidRequest,
                "the request has no numeric `id`".to_owned(),
            ),
            After::Continue,
        );
    };
    let Some(method) = value.get("method").and_then(|m| m.as_str()) else {
        return (
            error(
                Some(id),
                ErrorCode::InvalidRequest,
                "the request has no `method`".to_owned(),
            ),
            After::Continue,
        );
    };
    if !METHODS.contains(&method) {
        return (
            error(
                Some(id),
                ErrorCode::MethodNotFound,
                format!(
                    "this daemon (pid {}, cross-agent {}) has no method `{method}`; if the client \
                     is newer, restart the daemon with `cross-agent daemon restart`",
                    shared.info.pid, shared.info.version
                ),
            ),
            After::Continue,
        );
    }
    let method = method.to_owned();
    let request: Request = match serde_json::from_value(value) {
        Ok(request) => request,
        Err(e) => {
            return (
                error(
                    Some(id),
                    ErrorCode::InvalidParams,
                    format!("the params of `{method}` do not fit: {e}"),
                ),
                After::Continue,
            );
        }
    };
    dispatch(request, shared, session).await
}

/// Runs one engine call off the async threads: it reads the agents' stores and `hub.db`.
async fn engine_call<M: Method>(
    id: RequestId,
    shared: &Shared,
    call: impl FnOnce(Engine) -> cross_agent_hub::Result<M::Response> + Send + 'static,
) -> ServerMessage {
    let engine = shared.engine.clone();
    match tokio::task::spawn_blocking(move || call(engine)).await {
        Ok(Ok(response)) => respond::<M>(id, response),
        Ok(Err(e)) => {
            tracing::error!(method = M::NAME, error = %e, "engine call failed");
            error(Some(id), ErrorCode::Internal, e.to_string())
        }
        Err(e) => error(
            Some(id),
            ErrorCode::Internal,
            format!("the daemon failed while answering `{}`: {e}", M::NAME),
        ),
    }
}

async fn dispatch(
    request: Request,
    shared: &Shared,
    session: &mut Session,
) -> (ServerMessage, After) {
    let id = request.id;
    let info = &shared.info;
    if session.hello.is_none() && !matches!(request.call, ClientRequest::Hello(_)) {
        return (
            error(
                Some(id),
                ErrorCode::HandshakeRequired,
                format!(
                    "say `hello` (protocol version {PROTOCOL_VERSION}) before `{}`",
                    request.call.method()
                ),
            ),
            After::Continue,
        );
    }
    match request.call {
        ClientRequest::Hello(params) => {
            if params.protocol_version != PROTOCOL_VERSION {
                tracing::warn!(
                    client_kind = ?params.client_kind,
                    client_pid = params.client_pid,
                    client_version = %params.client_version,
                    client_protocol = params.protocol_version,
                    "refused a client of another protocol version"
                );
                let message = format!(
                    "this daemon (pid {}, cross-agent {}) speaks protocol {PROTOCOL_VERSION}, but \
                     the client (pid {}, cross-agent {}) speaks protocol {}; restart the daemon \
                     from the same build as the client (`cross-agent daemon restart`)",
                    info.pid,
                    info.version,
                    params.client_pid,
                    params.client_version,
                    params.protocol_version
                );
                let data = ProtocolMismatchData {
                    daemon_protocol_version: PROTOCOL_VERSION,
                    client_protocol_version: params.protocol_version,
                    daemon_pid: info.pid,
                    daemon_version: info.version.clone(),
                };
                let mut rpc_error = RpcError::new(ErrorCode::ProtocolMismatch, message);
                rpc_error.data = serde_json::to_value(data).ok();
                return (
                    ServerMessage::Error {
                        id: Some(id),
                        error: rpc_error,
                    },
                    After::Close,
                );
            }
            tracing::debug!(
                client_kind = ?params.client_kind,
                client_pid = params.client_pid,
                client_version = %params.client_version,
                "client connected"
            );
            session.hello = Some(params);
            (
                respond::<HelloParams>(
                    id,
                    HelloResponse {
                        protocol_version: PROTOCOL_VERSION,
                        daemon_pid: info.pid,
                        daemon_version: info.version.clone(),
                        generation: info.generation,
                        started_at: info.started_at.clone(),
                    },
                ),
                After::Continue,
            )
        }
        ClientRequest::Status(_) => (
            respond::<cross_agent_protocol::rpc::StatusParams>(
                id,
                StatusResponse {
                    daemon_pid: info.pid,
                    daemon_version: info.version.clone(),
                    protocol_version: PROTOCOL_VERSION,
                    generation: info.generation,
                    started_at: info.started_at.clone(),
                    uptime_seconds: info.started.elapsed().as_secs(),
                    home: info.home.to_string_lossy().into_owned(),
                    socket: info.socket.to_string_lossy().into_owned(),
                },
            ),
            After::Continue,
        ),
        ClientRequest::Shutdown(params) => {
            let client = session.hello.as_ref().map(|h| h.client_pid);
            tracing::info!(
                reason = params.reason.as_deref().unwrap_or("none given"),
                client_pid = client,
                "shutdown requested"
            );
            (
                respond::<cross_agent_protocol::rpc::ShutdownParams>(
                    id,
                    ShutdownResponse {
                        daemon_pid: info.pid,
                        generation: info.generation,
                    },
                ),
                After::Stop,
            )
        }
        ClientRequest::Send(params) => (
            engine_call::<SendParams>(id, shared, move |engine| engine.send(params)).await,
            After::Continue,
        ),
        ClientRequest::ListSessions(params) => (
            engine_call::<ListSessionsParams>(id, shared, move |engine| {
                engine.list_sessions(params)
            })
            .await,
            After::Continue,
        ),
        ClientRequest::Pin(params) => (
            engine_call::<PinParams>(id, shared, move |engine| engine.pin(params)).await,
            After::Continue,
        ),
        ClientRequest::BridgeStatus(params) => (
            engine_call::<BridgeStatusParams>(id, shared, move |engine| {
                engine.bridge_status(params)
            })
            .await,
            After::Continue,
        ),
    }
}
