//! Test support: the `cross-agent` binary, a `cross-agent mcp` process spoken to over its real
//! stdio, and a fake daemon that records what the server forwards (the caller context above
//! all) and answers with canned contract values.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use cross_agent_ipc::frame::{FrameReader, write_frame};
use cross_agent_protocol::bridge::{
    Agent, BridgeStatusResponse, CallerStatus, DeliveriesStatus, ListSessionsResponse, PeerQueue,
    PinResponse, Refusal, RefusalReason, SendReceipt, SendResponse, ServerProcess, SettingsStatus,
    TargetSelectedBy, Transport,
};
use cross_agent_protocol::rpc::{
    ClientRequest, HelloResponse, PROTOCOL_VERSION, Request, ServerMessage, StatusResponse,
};
use serde_json::{Value, json};

/// The `cross-agent` binary (see `cross_agent_testkit::binaries`).
pub fn cross_agent_bin() -> PathBuf {
    cross_agent_testkit::binaries::cross_agent_bin().expect("the cross-agent binary")
}

/// A scratch HOME with a `CROSS_AGENT_HOME` inside; stops any daemon started there on drop.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Result<Self> {
        Ok(Self {
            dir: tempfile::Builder::new().prefix("xa-mcp").tempdir()?,
        })
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn cross_agent_home(&self) -> PathBuf {
        self.dir.path().join("xa")
    }

    /// The base environment of a server started here: nothing of the test's own.
    pub fn env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        env.insert(
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        );
        env.insert("HOME".into(), self.home().to_string_lossy().into_owned());
        env.insert(
            "CROSS_AGENT_HOME".into(),
            self.cross_agent_home().to_string_lossy().into_owned(),
        );
        env
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.cross_agent_home().join("daemon.pid").exists() {
            let _ = Command::new(cross_agent_bin())
                .args(["daemon", "stop"])
                .env("CROSS_AGENT_HOME", self.cross_agent_home())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        // Any daemon of this home still alive (one autostarted after the stop, a restart's
        // successor) ends here, before the temporary home is deleted under it.
        cross_agent_testkit::leaks::stop_daemons(
            &self.cross_agent_home(),
            cross_agent_testkit::leaks::SETTLE,
        );
    }
}

/// `cross-agent mcp` under test, spoken to line by line.
pub struct McpProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    pub stderr_path: PathBuf,
}

pub const WAIT: Duration = Duration::from_secs(120);

impl McpProcess {
    pub fn spawn(scratch: &Scratch, env: &BTreeMap<String, String>, cwd: &Path) -> Result<Self> {
        std::fs::create_dir_all(scratch.home())?;
        let stderr_path = scratch
            .dir
            .path()
            .join(format!("mcp-stderr-{}.log", rand_suffix()));
        let mut child = Command::new(cross_agent_bin())
            .arg("mcp")
            .env_clear()
            .envs(env)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path)?)
            .spawn()
            .context("spawning cross-agent mcp")?;
        let stdout = child.stdout.take().context("stdout")?;
        let stdin = child.stdin.take();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            lines,
            next_id: 1,
            stderr_path,
        })
    }

    pub fn send_line(&mut self, line: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().context("stdin closed")?;
        stdin.write_all(line.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        Ok(())
    }

    pub fn send(&mut self, message: &Value) -> Result<()> {
        self.send_line(&message.to_string())
    }

    /// The next line the server writes, as JSON; every line must be JSON (stdout is protocol
    /// only).
    pub fn recv(&mut self) -> Result<Value> {
        match self.lines.recv_timeout(WAIT) {
            Ok(line) => serde_json::from_str(&line)
                .with_context(|| format!("stdout carried a line that is not JSON: {line}")),
            Err(RecvTimeoutError::Timeout) => bail!(
                "no answer within {WAIT:?}; stderr: {}",
                std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
            ),
            Err(RecvTimeoutError::Disconnected) => bail!(
                "the server closed stdout; stderr: {}",
                std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
            ),
        }
    }

    /// Sends a request and returns the whole response with its id (notifications in between
    /// are skipped).
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let message = self.recv()?;
            if message.get("id") == Some(&json!(id)) {
                return Ok(message);
            }
        }
    }

    /// The `initialize` handshake (2025-06-18), then `notifications/initialized`.
    pub fn initialize(&mut self, client_name: &str) -> Result<Value> {
        let response = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": client_name, "version": "1.0"},
            }),
        )?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(response)
    }

    /// Closes stdin and waits for the process; its exit status.
    pub fn close(mut self) -> Result<std::process::ExitStatus> {
        drop(self.stdin.take());
        // A ceiling for a loaded machine; the wait ends as soon as the process does.
        let deadline = std::time::Instant::now() + WAIT;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        bail!("cross-agent mcp did not exit within {WAIT:?} of stdin closing")
    }
}

impl Drop for McpProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// `_meta` of a 2026-07-28 request: the protocol version, client capabilities and info every
/// request carries in that era.
pub fn modern_meta(client_name: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client_name, "version": "1.0"},
    })
}

/// One call the fake daemon received: the method and its params.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub params: Value,
}

/// A daemon double on `CROSS_AGENT_HOME/daemon.sock`: answers `hello`, `status` and the four
/// messaging methods with canned values and records every call. It stands in for the engine so
/// what the MCP server forwards can be checked exactly.
pub struct FakeDaemon {
    pub calls: Arc<Mutex<Vec<Recorded>>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl FakeDaemon {
    pub fn start(home: &Path) -> Result<Self> {
        std::fs::create_dir_all(home)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700))?;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let socket = home.join("daemon.sock");
        let listener = {
            let _guard = runtime.enter();
            cross_agent_ipc::transport::bind(&socket)?
        };
        let calls = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&calls);
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let recorded = Arc::clone(&recorded);
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut frames = FrameReader::new(tokio::io::BufReader::new(read));
                    while let Ok(Some(frame)) = frames.next_frame().await {
                        let Ok(request) = serde_json::from_slice::<Request>(&frame) else {
                            continue;
                        };
                        let raw: Value = serde_json::from_slice(&frame).unwrap_or(Value::Null);
                        recorded.lock().unwrap().push(Recorded {
                            method: request.call.method().to_owned(),
                            params: raw["params"].clone(),
                        });
                        let result = answer(&request.call);
                        let reply = ServerMessage::Response {
                            id: request.id,
                            result,
                        };
                        if write_frame(&mut write, &reply).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Ok(Self {
            calls,
            runtime: Some(runtime),
        })
    }

    pub fn calls_of(&self, method: &str) -> Vec<Recorded> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|call| call.method == method)
            .cloned()
            .collect()
    }
}

impl Drop for FakeDaemon {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn answer(call: &ClientRequest) -> Value {
    let value = match call {
        ClientRequest::Hello(_) => serde_json::to_value(HelloResponse {
            protocol_version: PROTOCOL_VERSION,
            daemon_pid: std::process::id(),
            daemon_version: "fake".into(),
            generation: 1,
            started_at: "2026-01-01T00:00:00Z".into(),
            tools_version: None,
        }),
        ClientRequest::Status(_) => serde_json::to_value(StatusResponse {
            daemon_pid: std::process::id(),
            daemon_version: "fake".into(),
            protocol_version: PROTOCOL_VERSION,
            generation: 1,
            started_at: "2026-01-01T00:00:00Z".into(),
            uptime_seconds: 1,
            home: String::new(),
            socket: String::new(),
            draining: vec![],
        }),
        ClientRequest::Shutdown(_) => {
            Ok(json!({"daemon_pid": std::process::id(), "generation": 1}))
        }
        ClientRequest::Send(params) if params.message.contains("refuse-me") => {
            serde_json::to_value(SendResponse::Refused(Refusal {
                reason: RefusalReason::RequireExplicitTarget,
                message: "refused: name the target".into(),
                candidates: vec![],
                details: json!({"setting": "CROSS_AGENT_REQUIRE_EXPLICIT_TARGET"}),
            }))
        }
        ClientRequest::Send(params) => serde_json::to_value(SendResponse::Accepted(SendReceipt {
            delivery_id: "dlv_fake".into(),
            host: None,
            accepted: true,
            note: "no response yet".into(),
            target_agent: params.agent,
            target_session_id: Some("target-1".into()),
            target_title: None,
            target_selected_by: TargetSelectedBy::Caller,
            transport: match params.agent {
                Agent::Copilot => Transport::AgentHost,
                Agent::Claude | Agent::Codex | Agent::Grok => Transport::HeadlessCli,
            },
            caller_supplied_session_id: params.session_id.clone(),
            will_create_session: false,
            target_last_activity_seconds_ago: Some(5),
            queue_depth: 0,
            peer_queue: PeerQueue::default(),
            reply_lands_in_session: None,
            return_panel_available_now: false,
            conversation_id: "conv_fake".into(),
            hop: 1,
            max_hops: 4,
            request_id: "req_1_abcdef".into(),
            idle_policy: "inactivity timeout 600 s".into(),
            warnings: vec![],
        })),
        ClientRequest::ListSessions(_) => serde_json::to_value(ListSessionsResponse::default()),
        ClientRequest::Pin(_) => serde_json::to_value(PinResponse::Unpinned { previous: None }),
        ClientRequest::BridgeStatus(params) => serde_json::to_value(BridgeStatusResponse {
            // `version: "fake"` marks an answer from this stand-in.
            server_process: ServerProcess {
                pid: std::process::id(),
                version: "fake".into(),
                ..ServerProcess::default()
            },
            caller: CallerStatus {
                session_id: params.caller.claude_code_session_id.clone(),
                ..CallerStatus::default()
            },
            settings: SettingsStatus::default(),
            resolved_sessions: Default::default(),
            pins: vec![],
            locks: vec![],
            deliveries: DeliveriesStatus::default(),
            delivery: None,
            peer_transcript: None,
            return_delivery: None,
            peer_panel: None,
            ide_panels: Default::default(),
            warnings: vec![],
        }),
        // A method added to the contract later: the server under test does not call it.
        #[allow(unreachable_patterns)]
        _ => Ok(Value::Null),
    };
    value.unwrap_or(Value::Null)
}
