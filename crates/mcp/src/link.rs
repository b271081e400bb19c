//! The server's one connection to the daemon: opened on the first call (starting the daemon
//! when nothing answers), kept for the next ones, and reopened when the daemon was restarted in
//! between.
//!
//! Across a daemon restart (`cross-agent daemon restart` / `reload`): a call already in hand on
//! the old connection is answered by the old daemon, which stays until it has finished what it
//! carries; any later call on it is refused `shutting_down`, which means *not taken*, so the link
//! connects again (reaching the successor) and sends that call once more — a send included,
//! since the refusal proves it was never queued. A call whose connection simply broke is retried
//! only when it is repeatable (a send might have been queued). Each new connection's `hello`
//! names the daemon's tools version; a change is remembered so the server can tell its client
//! `notifications/tools/list_changed`.
//!
//! Every failure is turned into a [`LinkFailure`] whose message says what happened and where the
//! daemon's log is, because the agent shows it to a person who has to act on it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cross_agent_home::Home;
use cross_agent_ipc::{ConnectOptions, Error as IpcError, connect_or_start};
use cross_agent_protocol::rpc::{ClientKind, ErrorCode, Method, StatusParams};
use tokio::sync::Mutex;

use cross_agent_ipc::Client;

/// How long one call may wait for the daemon's answer. Every method answers at once (a send
/// returns a receipt, not the peer's answer), so a call this slow means a hung daemon, and the
/// agent is better told so than left waiting on its own tool timeout.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A call the daemon did not answer, in words for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkFailure {
    pub message: String,
    /// `daemon_unreachable`, `not_served`, `daemon_error`.
    pub kind: &'static str,
}

/// The daemon connection, shared by concurrent calls.
#[derive(Debug)]
pub struct DaemonLink {
    home: Result<Home, String>,
    options: ConnectOptions,
    client: Mutex<Option<Arc<Client>>>,
    /// The tools version the last daemon reported, and whether it changed since it was last
    /// announced.
    tools: parking_lot::Mutex<Option<String>>,
    tools_changed: AtomicBool,
}

impl DaemonLink {
    /// A link for `CROSS_AGENT_HOME` (or `~/.cross-agent`). A home that is refused is reported
    /// on each call rather than stopping the server: the agent should see why.
    pub fn from_env() -> DaemonLink {
        DaemonLink {
            home: Home::from_env().map_err(|error| error.to_string()),
            options: ConnectOptions::new(ClientKind::Mcp),
            client: Mutex::new(None),
            tools: parking_lot::Mutex::new(None),
            tools_changed: AtomicBool::new(false),
        }
    }

    /// A link for an explicit home (tests, benchmarks).
    pub fn with_home(home: Home) -> DaemonLink {
        DaemonLink {
            home: Ok(home),
            options: ConnectOptions::new(ClientKind::Mcp),
            client: Mutex::new(None),
            tools: parking_lot::Mutex::new(None),
            tools_changed: AtomicBool::new(false),
        }
    }

    /// Calls `params` on the daemon. A call that only reads (or, like a pin, can be repeated)
    /// is retried once on a fresh connection when the kept one turns out to be closed. A send
    /// is never retried — the daemon may have queued it before the connection broke — so a
    /// kept connection is checked with a cheap `status` first instead.
    pub async fn call<M: Method + Clone>(
        &self,
        params: M,
        repeatable: bool,
    ) -> Result<M::Response, LinkFailure> {
        let home = self.home.as_ref().map_err(|message| LinkFailure {
            message: message.clone(),
            kind: "daemon_unreachable",
        })?;
        let (client, fresh) = self.client(home).await?;
        let client = if !repeatable && !fresh {
            match timed(&client, StatusParams {}).await {
                Ok(_) => client,
                Err(error) if is_closed(&error) || is_replaced(&error) => {
                    self.reconnect(home, &client).await?
                }
                Err(error) => return Err(self.failure(home, M::NAME, error)),
            }
        } else {
            client
        };
        match timed(&client, params.clone()).await {
            Ok(response) => Ok(response),
            // Refused untaken by a replaced daemon: safe to send again, whatever the call.
            Err(error) if is_replaced(&error) => {
                let client = self.reconnect(home, &client).await?;
                timed(&client, params)
                    .await
                    .map_err(|error| self.failure(home, M::NAME, error))
            }
            Err(error) if repeatable && !fresh && is_closed(&error) => {
                let client = self.reconnect(home, &client).await?;
                timed(&client, params)
                    .await
                    .map_err(|error| self.failure(home, M::NAME, error))
            }
            Err(error) => Err(self.failure(home, M::NAME, error)),
        }
    }

    /// The kept client, or a new one; `true` when it was just made.
    async fn client(&self, home: &Home) -> Result<(Arc<Client>, bool), LinkFailure> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            return Ok((Arc::clone(client), false));
        }
        let client = self.open(home).await?;
        *slot = Some(Arc::clone(&client));
        Ok((client, true))
    }

    /// Checks the kept connection without starting anything: when its daemon was replaced (it
    /// refuses `status`) or is gone, connects to whichever daemon answers now and notes its
    /// tools version. Used while the client holds a `subscriptions/listen` stream, so a restart
    /// is announced without waiting for the next call. Returns [`Self::take_tools_changed`].
    pub async fn refresh(&self) -> bool {
        let Ok(home) = self.home.as_ref() else {
            return false;
        };
        let kept = self.client.lock().await.clone();
        let Some(kept) = kept else {
            // Never connected: the first call will, and nothing was seen to change from.
            return false;
        };
        match timed(&kept, StatusParams {}).await {
            Err(error) if is_closed(&error) || is_replaced(&error) => {
                if let Ok(connection) = cross_agent_ipc::connect(home, &self.options).await {
                    let mut slot = self.client.lock().await;
                    if slot
                        .as_ref()
                        .is_some_and(|current| Arc::ptr_eq(current, &kept))
                    {
                        self.saw_tools_version(connection.hello.tools_version.clone());
                        *slot = Some(Arc::new(connection.client));
                    }
                }
            }
            Ok(_) | Err(_) => {}
        }
        self.take_tools_changed()
    }

    /// Replaces `stale` (unless another call already did) with a new connection.
    async fn reconnect(
        &self,
        home: &Home,
        stale: &Arc<Client>,
    ) -> Result<Arc<Client>, LinkFailure> {
        let mut slot = self.client.lock().await;
        if let Some(current) = slot.as_ref()
            && !Arc::ptr_eq(current, stale)
        {
            return Ok(Arc::clone(current));
        }
        *slot = None;
        let client = self.open(home).await?;
        *slot = Some(Arc::clone(&client));
        Ok(client)
    }

    async fn open(&self, home: &Home) -> Result<Arc<Client>, LinkFailure> {
        match connect_or_start(home, &self.options).await {
            Ok(connection) => {
                if connection.started {
                    tracing::info!(pid = connection.hello.daemon_pid, "started the daemon");
                }
                self.saw_tools_version(connection.hello.tools_version.clone());
                Ok(Arc::new(connection.client))
            }
            Err(error) => Err(LinkFailure {
                message: format!(
                    "cross-agent could not reach its daemon: {error}. The daemon's log is in {} \
                     (start-up messages in {}); `cross-agent daemon status` tells whether it runs",
                    home.logs_dir().display(),
                    home.console_log().display()
                ),
                kind: "daemon_unreachable",
            }),
        }
    }

    fn saw_tools_version(&self, version: Option<String>) {
        let mut seen = self.tools.lock();
        if seen.is_some() && *seen != version {
            tracing::info!(from = ?*seen, to = ?version, "the daemon's tools version changed");
            self.tools_changed.store(true, Ordering::SeqCst);
        }
        *seen = version;
    }

    /// True once after a reconnect found a daemon with another tools version than before: the
    /// server then tells its client `notifications/tools/list_changed`.
    pub fn take_tools_changed(&self) -> bool {
        self.tools_changed.swap(false, Ordering::SeqCst)
    }

    fn failure(&self, home: &Home, method: &str, error: IpcError) -> LinkFailure {
        let logs: PathBuf = home.logs_dir();
        match &error {
            IpcError::Rpc {
                code: ErrorCode::MethodNotFound,
                message,
                ..
            } => LinkFailure {
                message: format!(
                    "the cross-agent daemon does not serve `{method}` yet ({message}); it may be \
                     older than this server: `cross-agent daemon restart` starts the current one"
                ),
                kind: "not_served",
            },
            // A request for another machine (`host`) that the daemon here could not put there:
            // an unknown host (named with the configured ones), a link that is down, `all`
            // where it does not apply. Its words are the whole story; the log would not add.
            IpcError::Rpc {
                method: "on_host",
                code,
                message,
            } => LinkFailure {
                message: message.clone(),
                kind: match code {
                    ErrorCode::InvalidParams => "invalid_arguments",
                    _ => "daemon_error",
                },
            },
            IpcError::Rpc { .. }
            | IpcError::Malformed { .. }
            | IpcError::ProtocolMismatch { .. } => LinkFailure {
                message: format!("{error}. The daemon's log is in {}", logs.display()),
                kind: "daemon_error",
            },
            // Refused before a byte was written: the daemon is fine, the request is too long
            // (a message under the 8 MiB limit can still outgrow the frame once escaped as JSON).
            IpcError::FrameTooLarge { limit } => LinkFailure {
                message: format!(
                    "the `{method}` request was not sent: written as JSON it is longer than the \
                     daemon's frame limit of {limit} bytes (quotes, backslashes and control \
                     characters in a message take more room escaped). The daemon is fine; send \
                     a shorter message, or write the text to a file and send its path"
                ),
                kind: "request_too_large",
            },
            IpcError::Timeout { .. } => LinkFailure {
                message: format!(
                    "the cross-agent daemon did not answer `{method}`: {error}. It may be hung: \
                     its log is in {}; `cross-agent daemon restart` replaces it",
                    logs.display()
                ),
                kind: "daemon_unreachable",
            },
            _ => LinkFailure {
                message: format!(
                    "cross-agent lost its daemon during `{method}`: {error}. The daemon's log is \
                     in {} (start-up messages in {})",
                    logs.display(),
                    home.console_log().display()
                ),
                kind: "daemon_unreachable",
            },
        }
    }
}

/// One call, bounded by [`CALL_TIMEOUT`].
async fn timed<M: Method>(client: &Client, params: M) -> Result<M::Response, IpcError> {
    match tokio::time::timeout(CALL_TIMEOUT, client.call(params)).await {
        Ok(answer) => answer,
        Err(_) => Err(IpcError::Timeout {
            what: M::NAME,
            socket: client.socket().to_owned(),
            waited: CALL_TIMEOUT,
        }),
    }
}

/// A replaced daemon refused the call without taking it.
fn is_replaced(error: &IpcError) -> bool {
    matches!(
        error,
        IpcError::Rpc {
            code: ErrorCode::ShuttingDown,
            ..
        }
    )
}

fn is_closed(error: &IpcError) -> bool {
    matches!(
        error,
        IpcError::Closed { .. } | IpcError::Transport { .. } | IpcError::NotRunning { .. }
    )
}
