//! What the relay tests and benchmark share: a temporary HOME shared by a real target Claude
//! session and the relays, the relay host, and the daemon's `hook` door; and the steps the tests
//! repeat (a bridge send, a send that must be `Sent`, waiting on the target's model or on a
//! condition, a relay's decisions of one kind, one run of the real `cross-agent hook`).
//!
//! The door: relays' hooks run the real `cross-agent hook <Event>` (the binary named by
//! `CROSS_AGENT_TEST_BIN`), which speaks the daemon RPC on `<CROSS_AGENT_HOME>/daemon.sock`.
//! These tests have no daemon (the relay crate sits below it, and a dev-dependency on the
//! daemon would build the relay crate twice), so [`HookDoor`] stands in for the daemon's socket
//! with forwarding only: `hello` is answered with a fixed greeting (the hook program checks the
//! protocol version), and every `hook` goes to [`RelayHost::hook`] unchanged and its answer
//! back unchanged, as the daemon's `hook` arm does before it asks the Telegram bot. Nothing of
//! the relay's own work (gate, receipts, inbound filing) is done here; any other request ends
//! the connection.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use cross_agent_decisions::DecisionLog;
use cross_agent_ipc::frame::{self, FrameReader};
use cross_agent_protocol::hook::HookResponse;
use cross_agent_protocol::rpc::{
    ClientRequest, HelloResponse, PROTOCOL_VERSION, Request, ServerMessage,
};
use cross_agent_relay::{
    CLAUDE_STREAM_JSON_ARGS, NativeSend, RelayConfig, RelayHost, RelayReceipt,
};
use cross_agent_testkit::agents::{AgentHome, AgentKind, Claude, agent_binary};
use cross_agent_testkit::endpoint::{ModelEndpoint, Rule};
use cross_agent_testkit::panel::{PanelDriver, claude_user};
use serde_json::Value;
use tokio::io::BufReader;
use tokio::task::JoinHandle;

pub const WAIT: Duration = Duration::from_secs(120);
pub const MACHINE: &str = "testbox";
pub const PEER_ANSWER: &str = "PEER ANSWER from bravo";
/// An idle limit no test outlives, for tests where relays must not stop on their own.
pub const LONG_IDLE: Duration = Duration::from_secs(600);

/// The `cross-agent` binary the relays' hooks run.
pub fn cross_agent_bin() -> Result<PathBuf> {
    let Some(path) = std::env::var_os("CROSS_AGENT_TEST_BIN") else {
        bail!(
            "CROSS_AGENT_TEST_BIN is not set: build it (cargo build -p cross-agent --bin cross-agent) and export it (see scripts/test)"
        );
    };
    Ok(PathBuf::from(path))
}

/// Answers `hello` and `hook` on the daemon socket of `home`, offering hooks to the relay host.
pub struct HookDoor {
    task: JoinHandle<()>,
}

impl Drop for HookDoor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl HookDoor {
    pub fn start(home: &Path, host: RelayHost) -> Result<HookDoor> {
        let socket = home.join("daemon.sock");
        let listener = tokio::net::UnixListener::bind(&socket)
            .with_context(|| format!("binding {}", socket.display()))?;
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let host = host.clone();
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut frames = FrameReader::new(BufReader::new(read));
                    while let Ok(Some(bytes)) = frames.next_frame().await {
                        let Ok(request) = frame::decode::<Request>(&bytes) else {
                            return;
                        };
                        let result = match request.call {
                            ClientRequest::Hello(_) => serde_json::to_value(HelloResponse {
                                protocol_version: PROTOCOL_VERSION,
                                daemon_pid: std::process::id(),
                                daemon_version: "test".into(),
                                generation: 1,
                                started_at: "2026-12-01T00:00:00.000Z".into(),
                                tools_version: None,
                            }),
                            // Forwarded as the daemon's arm does: the relay host's answer, or
                            // none (the daemon would then ask the bot; there is none here).
                            ClientRequest::Hook(params) => serde_json::to_value(
                                host.hook(&params)
                                    .await
                                    .unwrap_or(HookResponse { output: None }),
                            ),
                            _ => return,
                        };
                        let answer = ServerMessage::Response {
                            id: request.id,
                            result: result.unwrap_or(Value::Null),
                        };
                        if frame::write_frame(&mut write, &answer).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Ok(HookDoor { task })
    }
}

/// A temporary HOME with a cross-agent home inside, a relay host and its hook door.
pub struct Rig {
    pub home: AgentHome,
    pub xa_home: PathBuf,
    pub host: RelayHost,
    pub claude: Claude,
    pub target_endpoint: ModelEndpoint,
    _door: HookDoor,
}

impl Rig {
    /// `idle_stop`: how long an idle relay lives.
    pub async fn start(idle_stop: Duration) -> Result<Rig> {
        Self::start_with(idle_stop, WAIT).await
    }

    /// [`Rig::start`] with this bound on a send's wait for its receipt.
    pub async fn start_with(idle_stop: Duration, send_timeout: Duration) -> Result<Rig> {
        let home = AgentHome::new()?;
        let xa_home = home.path().join("xa");
        std::fs::create_dir_all(&xa_home)?;
        let target_endpoint = ModelEndpoint::start()?;
        target_endpoint.script(Rule::peer_replies(PEER_ANSWER, "replied"));
        target_endpoint.push(Rule::on_user_text("warm up").reply_text("warm"));
        let claude = Claude::new(&home, &target_endpoint.anthropic_base_url())?;
        let claude_env: Vec<(String, String)> = claude
            .env()
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string_lossy().into_owned()))
            .collect();
        let host = RelayHost::start(RelayConfig {
            home: xa_home.clone(),
            claude: agent_binary(AgentKind::Claude)?,
            cross_agent: cross_agent_bin()?,
            claude_env,
            machine: MACHINE.into(),
            decisions: DecisionLog::new(&xa_home),
            idle_stop,
            send_timeout,
            reply_wait: Duration::from_secs(600),
        })
        .await?;
        let door = HookDoor::start(&xa_home, host.clone())?;
        Ok(Rig {
            home,
            xa_home,
            host,
            claude,
            target_endpoint,
            _door: door,
        })
    }

    /// A live target: a real Claude session in stream-json mode named `name`, which took one
    /// turn (a session registers and opens its socket on its first turn). Returns it with its
    /// `uds:` address.
    pub fn target(&self, name: &str, extra: &[&str]) -> Result<(PanelDriver, String)> {
        self.target_with_env(name, extra, &[])
    }

    /// [`Rig::target`] with extra environment variables.
    pub fn target_with_env(
        &self,
        name: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<(PanelDriver, String)> {
        let project = self.home.project(name)?;
        let mut command = Command::new(self.claude.binary());
        command
            .args(CLAUDE_STREAM_JSON_ARGS)
            .args(["--name", name])
            .args(extra)
            .current_dir(&project)
            .env_clear()
            .envs(self.claude.env())
            .envs(env.iter().copied());
        let mut driver = PanelDriver::start(command)?;
        driver.send(&claude_user("warm up"))?;
        let init = driver.next_line(WAIT, |line| {
            line["type"] == "system" && line["subtype"] == "init"
        })?;
        let socket = init["messaging_socket_path"]
            .as_str()
            .context("the target's init names no messaging socket")?
            .to_owned();
        driver.next_of_type("result", WAIT)?;
        Ok((driver, format!("uds:{socket}")))
    }

    /// [`Rig::target`] with no extra arguments, from async code: the wait for the target's
    /// first turn blocks this worker only (the runtime must be multi-threaded).
    pub fn live_target(&self, name: &str) -> Result<(PanelDriver, String)> {
        tokio::task::block_in_place(|| self.target(name, &[]))
    }

    /// The decisions written so far.
    pub fn decisions(&self) -> Vec<Value> {
        std::fs::read_to_string(self.xa_home.join("decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// The decisions of this `kind` written so far.
    pub fn decisions_of(&self, kind: &str) -> Vec<Value> {
        self.decisions()
            .into_iter()
            .filter(|d| d["kind"] == kind)
            .collect()
    }

    /// Sends `send` and asserts Claude's receipt says it was sent.
    pub async fn send_expecting_sent(&self, send: NativeSend) -> RelayReceipt {
        let receipt = self.host.send(send).await.unwrap();
        assert!(matches!(receipt, RelayReceipt::Sent { .. }), "{receipt:?}");
        receipt
    }

    /// Every last user prompt the targets' model was sent, once one of them contains `needle`.
    pub fn target_prompts_once_one_contains(&self, needle: &str) -> Vec<String> {
        self.target_endpoint
            .wait_until(WAIT, |requests| {
                requests.iter().any(|r| {
                    r.last_user_prompt
                        .as_deref()
                        .is_some_and(|p| p.contains(needle))
                })
            })
            .unwrap()
            .into_iter()
            .filter_map(|r| r.last_user_prompt)
            .collect()
    }

    /// The first user prompt the targets' model was sent that contains `needle`, waited for.
    pub fn target_prompt_containing(&self, needle: &str) -> String {
        self.target_prompts_once_one_contains(needle)
            .into_iter()
            .find(|p| p.contains(needle))
            .unwrap()
    }
}

/// A rig whose relays outlive the test, with one live target `bravo`: the set-up most tests
/// share. Returns the target's driver (ending it ends the session) and its address.
pub async fn rig_with_bravo() -> (Rig, PanelDriver, String) {
    let rig = Rig::start(LONG_IDLE).await.unwrap();
    let (bravo, to) = rig.live_target("bravo").unwrap();
    (rig, bravo, to)
}

/// A native send from the sender `cli` to `to` of the bridge envelope carrying `token` and
/// `text`, as delivery `delivery`.
pub fn bridge_send(to: &str, token: &str, text: &str, delivery: &str) -> NativeSend {
    NativeSend {
        represented: "cli".into(),
        to: to.into(),
        message: bridge_message(token, text),
        delivery_id: delivery.into(),
        permission_mode: None,
    }
}

/// Polls `done` until it holds; fails naming `what` was not seen within [`WAIT`].
pub async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One run of the real `cross-agent hook <event>` with `payload` on stdin, against the hook door
/// of `xa_home`, from async code (it blocks this worker only). Its output, stdout captured.
pub fn run_hook(xa_home: &Path, event: &str, payload: &str) -> Result<Output> {
    tokio::task::block_in_place(|| {
        let mut child = Command::new(cross_agent_bin()?)
            .args(["hook", event])
            .env("CROSS_AGENT_HOME", xa_home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting `cross-agent hook`")?;
        child
            .stdin
            .take()
            .context("the hook's stdin")?
            .write_all(payload.as_bytes())?;
        Ok(child.wait_with_output()?)
    })
}

/// The bridge-style envelope text a send carries, with its request token.
pub fn bridge_message(token: &str, text: &str) -> String {
    format!("[cross-agent] message from cli\n{text}\nrequest id: {token}")
}
