//! A synchronous face on the client for CLI subcommands, which run one or two calls and exit.
//! It owns a single-threaded runtime; the async [`crate::Client`] does the work.

use std::time::Duration;

use cross_agent_protocol::rpc::{HelloResponse, Method};

use crate::autostart::{ConnectOptions, Connection};
use crate::error::{Error, Result};
use cross_agent_home::Home;

/// A connected, handshaken client that blocks the calling thread on each call.
#[derive(Debug)]
pub struct BlockingClient {
    // Field order matters: the connection (and its reader task) must drop before the runtime.
    connection: Connection,
    runtime: tokio::runtime::Runtime,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

impl BlockingClient {
    /// [`crate::connect`]: no autostart.
    pub fn connect(home: &Home, options: &ConnectOptions) -> Result<Self> {
        let runtime = runtime()?;
        let connection = runtime.block_on(crate::connect(home, options))?;
        Ok(Self {
            connection,
            runtime,
        })
    }

    /// [`crate::connect_or_start`].
    pub fn connect_or_start(home: &Home, options: &ConnectOptions) -> Result<Self> {
        let runtime = runtime()?;
        let connection = runtime.block_on(crate::connect_or_start(home, options))?;
        Ok(Self {
            connection,
            runtime,
        })
    }

    /// What the daemon said in `hello`.
    pub fn hello(&self) -> &HelloResponse {
        &self.connection.hello
    }

    /// True when connecting started the daemon.
    pub fn started(&self) -> bool {
        self.connection.started
    }

    /// Calls one method and waits for the answer.
    pub fn call<M: Method>(&self, params: M) -> Result<M::Response> {
        self.runtime.block_on(self.connection.client.call(params))
    }

    /// Calls one method, giving up after `limit`.
    pub fn call_timeout<M: Method>(&self, params: M, limit: Duration) -> Result<M::Response> {
        let client = &self.connection.client;
        self.runtime
            .block_on(async { tokio::time::timeout(limit, client.call(params)).await })
            .map_err(|_| Error::Timeout {
                what: M::NAME,
                socket: client.socket().to_owned(),
                waited: limit,
            })?
    }
}
