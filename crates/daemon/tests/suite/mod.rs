//! Shared helpers: a daemon running in-process on a temporary home, and a raw socket for
//! sending frames no well-behaved client would send.

mod answers;
mod autostart;
mod bridge_guards;
mod bridge_real;
mod bridge_support;
mod connections;
mod copilot;
mod copilot_caller;
mod copilot_send;
mod decisions;
mod descriptors;
mod framing;
mod gui_door;
mod handshake;
mod lifecycle;
mod native_real;
mod orphans;
mod panels_codex;
mod panels_grok;
mod panels_real;
mod review_correction;
mod scope;
mod store_check;
mod telegram_handover;
mod telegram_panels;
mod upgrade;
mod withheld_real;

use std::path::{Path, PathBuf};

use cross_agent_daemon::{Daemon, DaemonInfo};
use cross_agent_home::Home;
use cross_agent_ipc::{ConnectOptions, Connection};
use cross_agent_protocol::rpc::ClientKind;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A temporary home with `HOME` pointed elsewhere, so no rule refuses it and nothing touches
/// the real one.
pub struct TempHome {
    pub dir: tempfile::TempDir,
    pub home: Home,
}

impl TempHome {
    pub fn new() -> TempHome {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("state");
        let user = dir.path().join("user");
        let home = Home::from_vars(|name| match name {
            "CROSS_AGENT_HOME" => Some(root.clone().into_os_string()),
            "HOME" => Some(user.clone().into_os_string()),
            _ => None,
        })
        .unwrap();
        TempHome { dir, home }
    }

    pub fn root(&self) -> &Path {
        self.home.root()
    }
}

/// A daemon serving in a task of the test's runtime.
pub struct Running {
    pub info: DaemonInfo,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<cross_agent_daemon::Result<()>>,
}

impl Running {
    pub fn start(home: &Home) -> Running {
        Running::serve(Daemon::bind(home.clone()).unwrap())
    }

    /// Runs a daemon bound (and configured) by the test.
    pub fn serve(daemon: Daemon) -> Running {
        let info = daemon.info().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(daemon.run(async move {
            let _ = stopped.await;
        }));
        Running {
            info,
            stop: Some(stop),
            task,
        }
    }

    /// Resolves the shutdown future passed in and waits for `run` to return.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.join().await;
    }

    /// Waits for `run` to return on its own (after a `shutdown` call).
    pub async fn join(self) {
        self.task.await.unwrap().unwrap();
    }
}

pub fn options() -> ConnectOptions {
    ConnectOptions::new(ClientKind::Other)
}

pub async fn connect(home: &Home) -> Connection {
    cross_agent_ipc::connect(home, &options()).await.unwrap()
}

/// A socket speaking raw lines.
pub struct Raw {
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    writer: tokio::net::unix::OwnedWriteHalf,
}

impl Raw {
    pub async fn connect(socket: &PathBuf) -> Raw {
        let (read, writer) = UnixStream::connect(socket).await.unwrap().into_split();
        Raw {
            reader: BufReader::new(read),
            writer,
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
    }

    /// The next line as JSON, or `None` when the daemon closed the connection.
    pub async fn recv(&mut self) -> Option<serde_json::Value> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).await.unwrap();
        (n > 0).then(|| serde_json::from_str(&line).unwrap())
    }

    pub async fn hello(&mut self) {
        let hello = format!(
            "{{\"id\":1,\"method\":\"hello\",\"params\":{{\"protocol_version\":{},\"client_kind\":\"other\",\"client_pid\":1,\"client_version\":\"test\"}}}}\n",
            cross_agent_protocol::rpc::PROTOCOL_VERSION
        );
        self.send(hello.as_bytes()).await;
        let answer = self.recv().await.unwrap();
        assert_eq!(answer["type"], "response", "{answer}");
    }
}
