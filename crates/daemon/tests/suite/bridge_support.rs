//! Shared setup for the messaging tests: a daemon on a temporary home, a scripted model
//! endpoint, a temporary HOME where the real Claude Code and Codex keep their stores, and
//! hand-built caller contexts (the MCP server that builds them in production is a separate
//! crate; here each test says exactly who calls).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cross_agent_ipc::Connection;
use cross_agent_protocol::bridge::{
    Agent, AgentFilter, BridgeStatusParams, BridgeStatusResponse, CallerContext, DeliveryRecord,
    ListSessionsParams, ListSessionsResponse, Refusal, SendParams, SendReceipt, SendResponse,
    SessionEntry,
};
use cross_agent_testkit::agents::{AgentHome, AgentKind, Claude, Codex, agent_binary};
use cross_agent_testkit::endpoint::{ModelEndpoint, Reply, Rule};

use super::{Running, TempHome, connect};

pub struct Bridge {
    pub endpoint: ModelEndpoint,
    pub agents: AgentHome,
    pub project: PathBuf,
    pub state: TempHome,
    pub daemon: Option<Running>,
    pub conn: Connection,
}

impl Bridge {
    pub async fn start() -> Bridge {
        let endpoint = ModelEndpoint::start().unwrap();
        let agents = AgentHome::new().unwrap();
        let project = agents.project("proj").unwrap();
        let state = TempHome::new();
        let daemon = Running::start(&state.home);
        let conn = connect(&state.home).await;
        // Writes CODEX_HOME/config.toml with the scripted provider.
        Codex::new(&agents, &endpoint.openai_base_url()).unwrap();
        Bridge {
            endpoint,
            agents,
            project,
            state,
            daemon: Some(daemon),
            conn,
        }
    }

    pub fn claude(&self) -> Claude {
        Claude::new(&self.agents, &self.endpoint.anthropic_base_url()).unwrap()
    }

    pub fn codex(&self) -> Codex {
        Codex::new(&self.agents, &self.endpoint.openai_base_url()).unwrap()
    }

    /// The environment a registration's thin process would forward as the child baseline:
    /// what both real CLIs need to reach the scripted endpoint from this HOME.
    pub fn child_env(&self) -> BTreeMap<String, String> {
        let home = self.agents.path();
        BTreeMap::from([
            (
                "PATH".into(),
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
            ),
            ("HOME".into(), home.to_string_lossy().into_owned()),
            (
                "TMPDIR".into(),
                home.join("tmp").to_string_lossy().into_owned(),
            ),
            ("LANG".into(), "C.UTF-8".into()),
            ("TERM".into(), "dumb".into()),
            (
                "CODEX_HOME".into(),
                self.agents.codex_home().to_string_lossy().into_owned(),
            ),
            ("SCRIPTED_KEY".into(), "test-key".into()),
            (
                "ANTHROPIC_BASE_URL".into(),
                self.endpoint.anthropic_base_url(),
            ),
            ("ANTHROPIC_API_KEY".into(), "test-key".into()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                "1".into(),
            ),
            ("DISABLE_AUTOUPDATER".into(), "1".into()),
            ("DISABLE_TELEMETRY".into(), "1".into()),
        ])
    }

    /// The registration's settings: the real binaries (they are not on PATH).
    pub fn settings(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (
                "CROSS_AGENT_CLAUDE_BIN".into(),
                agent_binary(AgentKind::Claude)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            ),
            (
                "CROSS_AGENT_CODEX_BIN".into(),
                agent_binary(AgentKind::Codex)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            ),
        ])
    }

    fn base_caller(&self) -> CallerContext {
        CallerContext {
            cwd: Some(self.project.to_string_lossy().into_owned()),
            pid: std::process::id(),
            settings: self.settings(),
            child_env: self.child_env(),
            ..CallerContext::default()
        }
    }

    /// A call from inside Claude session `session_id` (its MCP server sees the variable).
    pub fn claude_caller(&self, session_id: &str) -> CallerContext {
        CallerContext {
            client_name: Some("claude-code".into()),
            claude_code_session_id: Some(session_id.into()),
            ..self.base_caller()
        }
    }

    /// A call from Codex thread `thread_id` (declared in `_meta`, as a JSON string here to
    /// exercise the defensive parse).
    pub fn codex_caller(&self, thread_id: &str) -> CallerContext {
        CallerContext {
            client_name: Some("codex-mcp-client".into()),
            codex_turn_metadata: Some(serde_json::Value::String(
                serde_json::json!({"thread_id": thread_id, "turn_id": "t"}).to_string(),
            )),
            ..self.base_caller()
        }
    }

    pub fn send_params(&self, agent: Agent, message: &str, caller: CallerContext) -> SendParams {
        SendParams {
            agent,
            message: message.into(),
            session_id: None,
            new_session: false,
            scope: None,
            cwd: None,
            timeout: None,
            conversation_id: None,
            raw: false,
            allow_same_agent: false,
            caller,
        }
    }

    pub async fn send(&self, params: SendParams) -> SendResponse {
        self.conn.client.call(params).await.unwrap()
    }

    pub async fn accepted(&self, params: SendParams) -> SendReceipt {
        match self.send(params).await {
            SendResponse::Accepted(receipt) => receipt,
            SendResponse::Refused(refusal) => panic!("refused: {refusal:?}"),
        }
    }

    pub async fn refused(&self, params: SendParams) -> Refusal {
        match self.send(params).await {
            SendResponse::Refused(refusal) => refusal,
            SendResponse::Accepted(receipt) => panic!("accepted: {receipt:?}"),
        }
    }

    /// The entry `list_agent_sessions` shows `caller` for `agent`'s session `session_id`, which
    /// must be listed.
    pub async fn listed_session(
        &self,
        agent: Agent,
        session_id: &str,
        caller: CallerContext,
    ) -> SessionEntry {
        let filter = match agent {
            Agent::Claude => AgentFilter::Claude,
            Agent::Codex => AgentFilter::Codex,
            Agent::Grok => AgentFilter::Grok,
            Agent::Copilot => AgentFilter::Copilot,
        };
        let listed: ListSessionsResponse = self
            .conn
            .client
            .call(ListSessionsParams {
                agent: filter,
                scope: None,
                cwd: None,
                limit: None,
                caller,
            })
            .await
            .unwrap();
        listed.sessions[agent.as_str()]
            .iter()
            .find(|s| s.session_id == session_id)
            .unwrap_or_else(|| panic!("{session_id} is listed: {listed:#?}"))
            .clone()
    }

    pub async fn status(&self, delivery_id: Option<&str>) -> BridgeStatusResponse {
        self.conn
            .client
            .call(BridgeStatusParams {
                cwd: Some(self.project.to_string_lossy().into_owned()),
                scope: None,
                delivery_id: delivery_id.map(str::to_owned),
                caller: self.base_caller(),
            })
            .await
            .unwrap()
    }

    /// A later turn of Claude session `target` (a person typing `prompt`) whose answer starts
    /// with `answer` and ends with the request id it finds in the conversation; returns the
    /// request's record once the bridge has recorded it as the late answer.
    pub async fn late_turn_answering(
        &self,
        target: &str,
        prompt: &str,
        answer: &str,
        delivery_id: &str,
    ) -> DeliveryRecord {
        self.endpoint.push(
            Rule::on_user_text(prompt)
                .reply(Reply::echo_token(answer))
                .once(),
        );
        self.claude()
            .turn(&self.project, prompt)
            .resume(target)
            .run()
            .unwrap()
            .expect_success()
            .unwrap();
        self.wait_record(delivery_id, Duration::from_secs(60), |r| {
            r.late_reply_delivery_id.is_some()
        })
        .await
    }

    /// Polls the record until `done` holds (at most `limit`).
    pub async fn wait_record(
        &self,
        delivery_id: &str,
        limit: Duration,
        done: impl Fn(&DeliveryRecord) -> bool,
    ) -> DeliveryRecord {
        let deadline = Instant::now() + limit;
        loop {
            let status = self.status(Some(delivery_id)).await;
            let record = status.delivery.expect("the record exists");
            if done(&record) {
                return record;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting; last record: {record:#?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub async fn wait_finished(&self, delivery_id: &str) -> DeliveryRecord {
        self.wait_record(delivery_id, Duration::from_secs(180), |r| {
            r.state.is_finished()
        })
        .await
    }

    /// Stops the daemon (its turns stop with it).
    pub async fn stop_daemon(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            daemon.stop().await;
        }
    }

    /// Starts a new daemon on the same home and reconnects.
    pub async fn restart_daemon(&mut self) {
        self.stop_daemon().await;
        self.daemon = Some(Running::start(&self.state.home));
        self.conn = connect(&self.state.home).await;
    }

    /// A real Claude session in the project, created by a plain `claude -p` turn.
    pub fn claude_session(&self, prompt: &str) -> String {
        self.endpoint.push(
            cross_agent_testkit::endpoint::Rule::on_user_text(prompt)
                .reply_text("seeded")
                .once(),
        );
        let run = self
            .claude()
            .turn(&self.project, prompt)
            .run()
            .unwrap()
            .expect_success()
            .unwrap();
        run.session_id().unwrap().to_owned()
    }

    /// A real Codex thread in the project, created by a plain `codex exec` turn.
    pub fn codex_session(&self, prompt: &str) -> String {
        self.endpoint.push(
            cross_agent_testkit::endpoint::Rule::on_user_text(prompt)
                .reply_text("seeded")
                .once(),
        );
        let run = self
            .codex()
            .turn(&self.project, prompt)
            .run()
            .unwrap()
            .expect_success()
            .unwrap();
        run.thread_id().unwrap().to_owned()
    }

    pub fn claude_transcript(&self, session_id: &str) -> PathBuf {
        self.claude().transcript_path(&self.project, session_id)
    }
}

/// Appends a line to a file (used to mirror what Claude writes on `/rename`).
pub fn append_line(path: &Path, line: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "{line}").unwrap();
}

/// A daemon as a process of its own (the real `cross-agent daemon run`), so its environment and
/// its death are its own.
pub struct DaemonProcess {
    pub child: std::process::Child,
    /// Its home: a successor it was replaced by (a test that fails mid-handover leaves one) is
    /// stopped with it.
    pub root: PathBuf,
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        cross_agent_testkit::leaks::stop_daemons(&self.root, cross_agent_testkit::leaks::SETTLE);
    }
}

/// Starts a daemon process on `root` with `env` added, and connects to it.
pub async fn spawn_daemon_process(
    root: &Path,
    user_home: &Path,
    env: &[(&str, &str)],
) -> (DaemonProcess, Connection) {
    // The real binary's `daemon run`, so the process's environment and death are its own.
    let exe = cross_agent_testkit::binaries::cross_agent_bin().unwrap();
    let mut command = std::process::Command::new(exe);
    command.args(["daemon", "run"]);
    for (k, v) in env {
        command.env(k, v);
    }
    spawn_daemon_command(root, user_home, command).await
}

/// Starts `command` — a `daemon run` of the real binary, perhaps behind a wrapper that sets
/// its limits — on `root`, and connects to it.
pub async fn spawn_daemon_command(
    root: &Path,
    user_home: &Path,
    mut command: std::process::Command,
) -> (DaemonProcess, Connection) {
    command.env("CROSS_AGENT_HOME", root).env("HOME", user_home);
    let process = DaemonProcess {
        child: command.spawn().unwrap(),
        root: root.to_owned(),
    };
    let home = cross_agent_home::Home::at(root).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let conn = loop {
        match cross_agent_ipc::connect(&home, &super::options()).await {
            Ok(conn) => break conn,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(error) => panic!("the daemon process did not answer: {error}"),
        }
    };
    (process, conn)
}
