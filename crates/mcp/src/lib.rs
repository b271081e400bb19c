//! The MCP server users register in each agent (`cross-agent mcp`). It gathers who is calling,
//! forwards each tool call to the daemon and renders the answer; it holds no business logic.
//!
//! - [`tools`]: the six tools as rmcp routes: schemas, annotations, and the reading of arguments.
//! - [`server`]: the rmcp handler (both protocol eras) and the server instructions.
//! - [`link`]: the connection to the daemon, autostarting it.
//! - [`front`]: a line filter in front of rmcp that answers non-JSON input with a parse error.
//!
//! Stdout carries the protocol and nothing else; logs go to stderr.

#![deny(clippy::print_stdout)]

mod error;
pub mod front;
pub mod link;
pub mod server;
pub mod tools;

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

pub use error::{Error, Result};
pub use server::Bridge;

/// Runs `cross-agent mcp` on this process's stdin and stdout until the client leaves.
pub fn run() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let outcome = runtime.block_on(serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        Bridge::from_process(),
    ));
    // A read of stdin in flight cannot be cancelled; do not wait on it at exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    outcome
}

/// Serves one MCP session over `input` / `output` until the client closes `input`.
pub async fn serve<R, W>(input: R, output: W, bridge: Bridge) -> Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(256 * 1024);
    let (from_server, to_server) = tokio::io::split(ours);
    let (replies_tx, replies_rx) = mpsc::channel::<Vec<u8>>(64);

    let writer = tokio::spawn(front::write_replies(output, replies_rx));
    let pump = tokio::spawn(front::pump_output(from_server, replies_tx.clone()));
    let filter = tokio::spawn(front::filter_input(input, to_server, replies_tx));

    let outcome = match bridge.serve(tokio::io::split(theirs)).await {
        Ok(running) => running.waiting().await.map(|_| ()).map_err(Error::Session),
        Err(error) => Err(Error::Start(Box::new(error))),
    };
    // The service has dropped its end: the pump sees end of output and the writer drains.
    filter.abort();
    let _ = pump.await;
    match writer.await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(Error::Stdio(error)),
        Err(_) => {}
    }
    outcome
}
