//! `cross-agent rpc --stdio`: the daemon's RPC on stdin and stdout, for the daemon of another
//! machine that reaches this one over `ssh <here> cross-agent rpc --stdio` (docs/remote.md).
//!
//! It makes sure this user's daemon answers (starting it as every client does), opens a
//! connection of its own to the daemon's socket and then only relays: the bytes read on stdin
//! go to the socket and the socket's bytes to stdout, as they came, each piece written and
//! flushed as soon as it is read. Nothing is parsed or re-encoded, so the frames (and the bytes
//! an `index_listing` answer carries after its frame) arrive exactly as sent, and the
//! far side's `hello` is the one this daemon judges: it is an ordinary local client of this
//! user, allowed what any local client is and nothing more. No port is opened.
//!
//! It ends when stdin closes (the socket's writing side is shut, the daemon answers what it
//! was asked and closes) or when the daemon closes the connection.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_protocol::rpc::ClientKind;

/// The most relayed in one piece.
const PIECE: usize = 64 * 1024;

#[derive(Debug, Args)]
pub struct RpcArgs {
    /// Speak the daemon's RPC frames on stdin/stdout (the only way there is).
    #[arg(long)]
    stdio: bool,
}

impl RpcArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        if !self.stdio {
            anyhow::bail!(
                "say `cross-agent rpc --stdio`: the RPC is only spoken on stdin and stdout"
            );
        }
        let home = Home::from_env()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting an async runtime")?;
        let stream = runtime.block_on(async {
            // The handshake here only proves a daemon answers (and starts one); the relayed
            // connection below is a fresh one whose `hello` is the far side's.
            let started =
                cross_agent_ipc::connect_or_start(&home, &ConnectOptions::new(ClientKind::Cli))
                    .await
                    .with_context(|| {
                        format!(
                            "cannot reach the cross-agent daemon; its log is in {}",
                            home.logs_dir().display()
                        )
                    })?;
            drop(started);
            let stream = cross_agent_ipc::transport::connect(&home.socket()).await?;
            anyhow::Ok(stream.into_std()?)
        })?;
        drop(runtime);
        stream
            .set_nonblocking(false)
            .context("setting the daemon connection blocking")?;
        relay(stream)?;
        Ok(ExitCode::SUCCESS)
    }
}

/// Copies stdin to the daemon on a thread of its own and the daemon to stdout on this one,
/// until the daemon's side ends.
fn relay(stream: std::os::unix::net::UnixStream) -> anyhow::Result<()> {
    let mut to_daemon = stream
        .try_clone()
        .context("cloning the daemon connection")?;
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut piece = vec![0u8; PIECE];
        loop {
            match stdin.read(&mut piece) {
                Ok(0) => break,
                Ok(n) => {
                    if to_daemon.write_all(&piece[..n]).is_err() {
                        break;
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        // The far side is done asking: the daemon answers what it has and closes.
        let _ = to_daemon.shutdown(Shutdown::Write);
    });
    let mut from_daemon = stream;
    let mut stdout = std::io::stdout().lock();
    let mut piece = vec![0u8; PIECE];
    loop {
        let n = match from_daemon.read(&mut piece) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => return Ok(()),
            Err(error) => return Err(error).context("reading from the daemon"),
        };
        match stdout.write_all(&piece[..n]).and_then(|()| stdout.flush()) {
            Ok(()) => {}
            // Whoever read stdout is gone (ssh's connection dropped): nothing left to do.
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            Err(error) => return Err(error).context("writing to stdout"),
        }
    }
}
