//! One connection to an Agent Host: connect and negotiate, list sessions, follow the root
//! notifications, subscribe to channels, and the shared plumbing `deliver` builds on.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ahp::{Client, ClientConfig, ClientError, SubscriptionEvent};
use ahp_types::commands::{Implementation, InitializeParams, InitializeResult, ListSessionsParams};
use ahp_types::common::ROOT_RESOURCE_URI;
use ahp_types::errors::ahp_error_codes::UNSUPPORTED_PROTOCOL_VERSION;
use ahp_types::state::{SessionSummary, Snapshot};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::kept::Kept;
use crate::listing::{RootEvents, SessionInfo};
use crate::token::ConnectionToken;
use crate::transport::{CloseReason, HandshakeFailure, SocketProblem, UnixWsTransport};

/// What we offer, most preferred first. VS Code 1.141's host accepts only `0.10.0`; a host on
/// the 0.9 line picks `0.9.0` and a 1.x host `1.0.0` (`docs/observed/copilot.md` §1.2).
pub const OFFERED_PROTOCOL_VERSIONS: [&str; 3] = ["1.0.0", "0.10.0", "0.9.0"];

/// Connecting and the WebSocket upgrade: a local socket answers at once or not at all.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Each request (`initialize`, `listSessions`, `subscribe`).
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// `ahp` fans events out through broadcast channels that silently skip what a slow reader
/// missed; each subscription is drained at once into an unbounded queue ([`Channel`]), and this
/// headroom covers the moments before the drain task runs.
const SUBSCRIPTION_BUFFER: usize = 4096;
/// `listSessions` page size; the listing stops after this many pages (a host that keeps
/// returning a cursor would otherwise be followed forever).
const PAGE_SIZE: i64 = 200;
const MAX_PAGES: usize = 1000;

/// A live connection to one Agent Host. Cheap to clone; the connection ends when the last
/// clone is dropped.
#[derive(Clone)]
pub struct HostConnection {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) client: Client,
    pub(crate) socket: PathBuf,
    pub(crate) client_id: String,
    protocol_version: String,
    closed: CloseReason,
    /// Set on a pool's connections: subscriptions are kept after their last user
    /// ([`crate::kept`]).
    keeps_subscriptions: std::sync::atomic::AtomicBool,
    /// The subscriptions kept, by URI. An async lock, held across `subscribe`, so that two
    /// deliveries to the same chat make one subscription.
    kept: tokio::sync::Mutex<HashMap<String, Arc<Kept>>>,
    /// How many live [`Channel`]s use each subscribed URI; the last one to go unsubscribes.
    /// An async lock, held across `subscribe`, so an unsubscribe never races a new subscribe.
    subscriptions: tokio::sync::Mutex<HashMap<String, usize>>,
}

impl fmt::Debug for HostConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostConnection")
            .field("socket", &self.inner.socket)
            .field("client_id", &self.inner.client_id)
            .field("protocol_version", &self.inner.protocol_version)
            .finish()
    }
}

impl HostConnection {
    /// Connects to the host listening on `socket` (the `endpoint.path` of its registry entry),
    /// upgrades with `token`, and negotiates a protocol version, subscribing to the root channel
    /// so that [`HostConnection::root_events`] sees sessions come and go.
    pub async fn connect(
        socket: impl AsRef<Path>,
        token: &ConnectionToken,
        client_id: impl Into<String>,
    ) -> Result<Self> {
        let socket = socket.as_ref().to_path_buf();
        let client_id = client_id.into();
        match crate::transport::check_socket_path(&socket) {
            Ok(()) => {}
            Err(SocketProblem::Missing) => return Err(Error::SocketMissing { socket }),
            Err(SocketProblem::Link) => {
                return Err(Error::SocketRefused {
                    socket,
                    what: "a symbolic link",
                });
            }
            Err(SocketProblem::NotASocket) => {
                return Err(Error::SocketRefused {
                    socket,
                    what: "not a socket",
                });
            }
            Err(SocketProblem::Unreadable(source)) => {
                return Err(Error::Connect { socket, source });
            }
        }
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, UnixStream::connect(&socket)).await
        {
            Ok(Ok(stream)) => stream,
            Ok(Err(source)) => return Err(Error::Connect { socket, source }),
            Err(_) => {
                return Err(Error::Timeout {
                    socket,
                    during: "the connection".to_owned(),
                    after: CONNECT_TIMEOUT,
                });
            }
        };
        let closed = CloseReason::default();
        let handshake = UnixWsTransport::handshake(stream, token, closed.clone());
        let transport = match tokio::time::timeout(CONNECT_TIMEOUT, handshake).await {
            Ok(Ok(transport)) => transport,
            Ok(Err(HandshakeFailure::Status(status))) => {
                return Err(Error::Refused { socket, status });
            }
            Ok(Err(HandshakeFailure::Other(detail))) => {
                return Err(Error::Handshake { socket, detail });
            }
            Err(_) => {
                return Err(Error::Timeout {
                    socket,
                    during: "the WebSocket upgrade".to_owned(),
                    after: CONNECT_TIMEOUT,
                });
            }
        };
        let config = ClientConfig {
            default_request_timeout: Some(REQUEST_TIMEOUT),
            subscription_buffer: SUBSCRIPTION_BUFFER,
        };
        let client = Client::connect(transport, config)
            .await
            .map_err(|err| Error::Handshake {
                socket: socket.clone(),
                detail: err.to_string(),
            })?;
        // The root fan-out must exist before `initialize` subscribes us, or the first
        // notifications would have nowhere to go.
        drop(client.attach_subscription(ROOT_RESOURCE_URI).await);
        let offered: Vec<String> = OFFERED_PROTOCOL_VERSIONS.map(str::to_owned).to_vec();
        let params = InitializeParams {
            channel: ROOT_RESOURCE_URI.to_owned(),
            meta: None,
            protocol_versions: offered.clone(),
            client_id: client_id.clone(),
            client_info: Some(Implementation {
                name: "cross-agent".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                title: None,
            }),
            initial_subscriptions: Some(vec![ROOT_RESOURCE_URI.to_owned()]),
            locale: None,
            capabilities: None,
        };
        let inner = Inner {
            client,
            socket,
            client_id,
            protocol_version: String::new(),
            closed,
            subscriptions: tokio::sync::Mutex::new(HashMap::new()),
            keeps_subscriptions: std::sync::atomic::AtomicBool::new(false),
            kept: tokio::sync::Mutex::new(HashMap::new()),
        };
        let result: std::result::Result<InitializeResult, ClientError> =
            inner.client.request("initialize", params).await;
        let init = match result {
            Ok(init) => init,
            Err(ClientError::Rpc(err)) if err.code == UNSUPPORTED_PROTOCOL_VERSION => {
                inner.client.shutdown().await;
                let supported = err
                    .data
                    .as_ref()
                    .and_then(|data| data.get("supportedVersions"))
                    .and_then(|list| list.as_array())
                    .map(|list| {
                        list.iter()
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                return Err(Error::UnsupportedVersion {
                    socket: inner.socket.clone(),
                    offered,
                    supported,
                    message: err.message,
                });
            }
            Err(err) => {
                let err = inner.client_error("initialize", "negotiating the protocol", err);
                inner.client.shutdown().await;
                return Err(err);
            }
        };
        if !offered.contains(&init.protocol_version) {
            inner.client.shutdown().await;
            return Err(Error::Malformed {
                socket: inner.socket.clone(),
                what: "initialize".to_owned(),
                detail: format!(
                    "it picked protocol version {}, which was not offered",
                    init.protocol_version
                ),
            });
        }
        let inner = Inner {
            protocol_version: init.protocol_version,
            ..inner
        };
        tracing::debug!(socket = %inner.socket.display(), version = %inner.protocol_version, "agent host connected");
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The protocol version the host picked.
    pub fn protocol_version(&self) -> &str {
        &self.inner.protocol_version
    }

    /// The socket this connection is on.
    pub fn socket(&self) -> &Path {
        &self.inner.socket
    }

    /// The `clientId` this connection presented (it is what the host's echoes carry).
    pub fn client_id(&self) -> &str {
        &self.inner.client_id
    }

    /// Every session the host lists, following `nextCursor` page by page.
    pub async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let mut sessions = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = ListSessionsParams {
                channel: ROOT_RESOURCE_URI.to_owned(),
                meta: None,
                limit: Some(PAGE_SIZE),
                cursor: cursor.clone(),
            };
            let page: LenientPage = self
                .inner
                .client
                .request("listSessions", params)
                .await
                .map_err(|err| {
                    self.inner
                        .client_error("listSessions", "listing sessions", err)
                })?;
            sessions.extend(
                page.items
                    .into_iter()
                    .filter_map(|item| self.summary_of(item)),
            );
            match page.next_cursor {
                Some(next) if cursor.as_deref() == Some(next.as_str()) => {
                    return Err(self.malformed(
                        "listSessions",
                        format!("it returned the same cursor twice ({next})"),
                    ));
                }
                Some(next) => cursor = Some(next),
                None => return Ok(sessions),
            }
        }
        Err(self.malformed(
            "listSessions",
            format!("it was still paging after {MAX_PAGES} pages"),
        ))
    }

    /// One session of a `listSessions` page: a summary that does not parse is skipped and said
    /// (naming the session when it has a `resource`), so one bad entry never hides the others.
    fn summary_of(&self, item: serde_json::Value) -> Option<SessionInfo> {
        let resource = item
            .get("resource")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        match serde_json::from_value::<SessionSummary>(item) {
            Ok(summary) => Some(SessionInfo::from_summary(summary)),
            Err(error) => {
                tracing::warn!(
                    socket = %self.inner.socket.display(),
                    session = resource.as_deref().unwrap_or("(no resource)"),
                    %error,
                    "skipped a session the Agent Host listed that does not parse"
                );
                None
            }
        }
    }

    /// The changes to the host's listing from now on. Each call gives an independent stream.
    pub async fn root_events(&self) -> RootEvents {
        RootEvents {
            sub: self
                .inner
                .client
                .attach_subscription(ROOT_RESOURCE_URI)
                .await,
        }
    }

    /// Whether the connection has ended (the host closed it, an I/O error, or `ahp`'s drive
    /// loop stopped): a kept connection found so is replaced, never used again.
    pub fn is_closed(&self) -> bool {
        use futures_util::FutureExt as _;
        // A fresh event stream yields `None` at once only when the client is torn down; while
        // it is up, nothing is ready on it yet.
        self.inner.closed.is_set()
            || matches!(self.inner.client.events().recv().now_or_never(), Some(None))
    }

    /// Why the connection ended, or a generic reason while it is still up.
    pub(crate) fn close_reason(&self) -> String {
        self.inner.closed.get()
    }

    pub(crate) fn malformed(&self, what: &str, detail: String) -> Error {
        Error::Malformed {
            socket: self.inner.socket.clone(),
            what: what.to_owned(),
            detail,
        }
    }

    /// From now on, subscriptions stay after their last user and their state is kept current
    /// ([`crate::kept`]): a pool's connection, used again and again for the same chats.
    pub(crate) fn keep_subscriptions(&self) {
        self.inner
            .keeps_subscriptions
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Subscribes to `uri` and starts draining its events into an unbounded queue. On a
    /// connection that keeps subscriptions, a kept one is listened to instead, with no request.
    pub(crate) async fn subscribe(&self, uri: &str, during: &str) -> Result<Channel> {
        if self
            .inner
            .keeps_subscriptions
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return self.subscribe_kept(uri, during).await;
        }
        let mut counts = self.inner.subscriptions.lock().await;
        let (result, mut sub) = self
            .inner
            .client
            .subscribe(uri.to_owned())
            .await
            .map_err(|err| self.inner.client_error("subscribe", during, err))?;
        *counts.entry(uri.to_owned()).or_insert(0) += 1;
        drop(counts);
        let snapshot = result.snapshot.ok_or_else(|| {
            self.malformed(
                "subscribe",
                format!("its answer for {uri} carried no snapshot"),
            )
        })?;
        let (tx, events) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(event) = sub.recv().await {
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        Ok(Channel {
            snapshot,
            events,
            guard: Some(ChannelGuard {
                conn: self.clone(),
                uri: uri.to_owned(),
            }),
        })
    }
}

impl HostConnection {
    /// A kept subscription to `uri`, subscribing when there is none (or it ended).
    async fn subscribe_kept(&self, uri: &str, during: &str) -> Result<Channel> {
        let mut kept = self.inner.kept.lock().await;
        if let Some((snapshot, events)) = kept.get(uri).and_then(|k| k.listen()) {
            return Ok(Channel {
                snapshot,
                events,
                guard: None,
            });
        }
        let (result, sub) = self
            .inner
            .client
            .subscribe(uri.to_owned())
            .await
            .map_err(|err| self.inner.client_error("subscribe", during, err))?;
        let snapshot = result.snapshot.ok_or_else(|| {
            self.malformed(
                "subscribe",
                format!("its answer for {uri} carried no snapshot"),
            )
        })?;
        let one = Kept::start(snapshot, sub);
        kept.insert(uri.to_owned(), one.clone());
        let (snapshot, events) = one.listen().ok_or_else(|| Error::ConnectionLost {
            socket: self.inner.socket.clone(),
            during: during.to_owned(),
            reason: self.close_reason(),
        })?;
        Ok(Channel {
            snapshot,
            events,
            guard: None,
        })
    }
}

impl Inner {
    /// An `ahp` client error in our terms.
    pub(crate) fn client_error(
        &self,
        method: &'static str,
        during: &str,
        err: ClientError,
    ) -> Error {
        match err {
            ClientError::Rpc(e) => Error::Rpc {
                socket: self.socket.clone(),
                method,
                code: e.code,
                message: e.message,
            },
            ClientError::Deserialization(e) => Error::Malformed {
                socket: self.socket.clone(),
                what: method.to_owned(),
                detail: e.to_string(),
            },
            ClientError::Cancelled => Error::Timeout {
                socket: self.socket.clone(),
                during: during.to_owned(),
                after: REQUEST_TIMEOUT,
            },
            ClientError::Transport(_)
            | ClientError::Shutdown
            | ClientError::UnknownSubscription(_)
            | ClientError::SequenceGap => Error::ConnectionLost {
                socket: self.socket.clone(),
                during: during.to_owned(),
                reason: self.closed.get(),
            },
        }
    }
}

/// A subscribed channel: its snapshot and its events, drained as they come.
pub(crate) struct Channel {
    pub(crate) snapshot: Snapshot,
    /// `None` from `recv` means the connection ended.
    pub(crate) events: mpsc::UnboundedReceiver<SubscriptionEvent>,
    /// Unsubscribes on `Drop`; a kept subscription has none.
    #[allow(dead_code)] // held for its `Drop`
    guard: Option<ChannelGuard>,
}

/// Unsubscribes when the last [`Channel`] on a URI goes away.
struct ChannelGuard {
    conn: HostConnection,
    uri: String,
}

impl Drop for ChannelGuard {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let conn = self.conn.clone();
        let uri = std::mem::take(&mut self.uri);
        runtime.spawn(async move {
            let mut counts = conn.inner.subscriptions.lock().await;
            let Some(count) = counts.get_mut(&uri) else {
                return;
            };
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&uri);
                // Best effort: a connection that already ended has nothing to unsubscribe.
                let _ = conn.inner.client.unsubscribe(uri).await;
            }
        });
    }
}

/// A `listSessions` page read item by item (`ListSessionsResult` would refuse the whole page
/// over one summary it cannot parse).
#[derive(serde::Deserialize)]
struct LenientPage {
    #[serde(default, rename = "nextCursor")]
    next_cursor: Option<String>,
    items: Vec<serde_json::Value>,
}
