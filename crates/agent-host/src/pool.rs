//! One kept connection per host endpoint, for the carrier's deliveries and returns.
//!
//! Opening a connection costs a socket connect, the WebSocket upgrade and `initialize` — about
//! half of the time between a `chat/turnComplete` and the return of its answer into a Copilot
//! sender's chat (`docs/testing.md`, the copilot bench). A [`HostPool`] keeps the connection it
//! made for an endpoint and hands out clones of it ([`HostConnection`] is a cheap handle).
//!
//! The key is the endpoint's whole identity ([`EndpointKey`]): its socket, pid, instance and
//! token. A host restarted, or one that rotated its token, is another key, so a connection is
//! never reused across a changed entry; connections of keys not asked for since, or ended, are
//! dropped at the next [`HostPool::get`]. A connection found ended is replaced lazily, on the
//! next `get`, never in the middle of a delivery.
//!
//! A kept connection also keeps its subscriptions (`crate::kept`): a second delivery to the
//! same chat sends only its `dispatchAction`, not two `subscribe`s first.
//!
//! Sharing a connection keeps the unknown-outcome rule: every delivery waits for its echo on a
//! [`crate::client::Channel`] of its own, fed by the connection; when the connection ends,
//! every such channel ends, so each delivery still in flight on it is `UnknownOutcome`, and
//! none is re-sent (`tests/suite/pool.rs`).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::client::HostConnection;
use crate::error::Result;
use crate::token::ConnectionToken;

/// An endpoint as its registry entry names it. Two keys are the same host only when every
/// part is equal. `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct EndpointKey {
    pub socket: PathBuf,
    pub pid: u32,
    pub instance_id: String,
    pub token: ConnectionToken,
}

impl fmt::Debug for EndpointKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointKey")
            .field("socket", &self.socket)
            .field("pid", &self.pid)
            .field("instance_id", &self.instance_id)
            .finish_non_exhaustive()
    }
}

/// Kept connections, one per endpoint; share it behind an `Arc`.
pub struct HostPool {
    client_id: String,
    /// An async lock, held while connecting, so that two deliveries to a host with no
    /// connection yet make one, not two.
    conns: tokio::sync::Mutex<HashMap<EndpointKey, HostConnection>>,
}

impl fmt::Debug for HostPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostPool")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl HostPool {
    /// A pool whose connections present `client_id` (the host's echoes carry it).
    pub fn new(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            conns: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The live connection to `key`'s host, connecting when there is none (or it ended).
    /// Connections to another entry at the same socket (a restarted host, a new token) are
    /// dropped first.
    pub async fn get(&self, key: &EndpointKey) -> Result<HostConnection> {
        let mut conns = self.conns.lock().await;
        conns.retain(|kept, conn| !conn.is_closed() && (kept == key || kept.socket != key.socket));
        if let Some(conn) = conns.get(key) {
            return Ok(conn.clone());
        }
        let conn =
            HostConnection::connect(&key.socket, &key.token, self.client_id.as_str()).await?;
        // Deliveries to the same chats again and again: their subscriptions are kept.
        conn.keep_subscriptions();
        conns.insert(key.clone(), conn.clone());
        Ok(conn)
    }

    /// Drops every kept connection to `socket` (its host is gone from the registry).
    pub async fn forget(&self, socket: &Path) {
        self.conns
            .lock()
            .await
            .retain(|kept, _| kept.socket != socket);
    }

    /// How many connections are kept (for tests and the bench).
    pub async fn len(&self) -> usize {
        self.conns.lock().await.len()
    }

    /// Whether no connection is kept.
    pub async fn is_empty(&self) -> bool {
        self.len().await == 0
    }
}
