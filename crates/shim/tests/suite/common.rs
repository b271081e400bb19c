//! What the shim tests share: starting a shim (in front of real Claude or a stand-in program) in
//! a temporary HOME and state directory, reading its registration, and talking to its socket
//! as the daemon does.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_protocol::panel::{
    Injection, InjectionKind, PanelRegistration, ShimEvent, ShimRequest,
};
use cross_agent_testkit::agents::{AgentHome, Claude};
use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::panel::{CLAUDE_SDK_ARGS, PanelDriver, claude_initialize};
use cross_agent_testkit::{ModelEndpoint, Rule};

/// Long enough for a cold Claude start on a loaded machine.
pub const TURN: Duration = Duration::from_secs(90);

/// A temporary user: HOME, the state directory, a project, and the scripted model.
pub struct Bench {
    pub home: AgentHome,
    pub state: PathBuf,
    pub project: PathBuf,
    pub endpoint: ModelEndpoint,
}

/// The shim autostarts the home's daemon (detached, so no test holds it): it is stopped here,
/// before the temporary home goes.
impl Drop for Bench {
    fn drop(&mut self) {
        // Any daemon of this home still alive (one autostarted after the stop, a restart's
        // successor) ends here, before the temporary home is deleted under it.
        cross_agent_testkit::leaks::stop_daemons(&self.state, cross_agent_testkit::leaks::SETTLE);
    }
}

impl Bench {
    pub fn new() -> Result<Bench> {
        let home = AgentHome::new()?;
        let state = home.path().join(".cross-agent");
        let project = home.project("proj")?;
        Ok(Bench {
            home,
            state,
            project,
            endpoint: ModelEndpoint::start()?,
        })
    }

    pub fn script(&self, rules: impl IntoIterator<Item = Rule>) {
        self.endpoint.script(rules);
    }

    pub fn claude(&self) -> Result<Claude> {
        Claude::new(&self.home, &self.endpoint.anthropic_base_url())
    }

    /// `cross-agent shim claude <program> <args…>` with Claude's clean environment.
    pub fn shim_command(&self, program: &Path, args: &[&str]) -> Result<Command> {
        let claude = self.claude()?;
        let mut command = Command::new(cross_agent_bin()?);
        command
            .current_dir(&self.project)
            .env_clear()
            .envs(claude.env())
            .env("CROSS_AGENT_HOME", &self.state)
            .arg("shim")
            .arg("claude")
            .arg(program)
            .args(args);
        Ok(command)
    }

    /// The `cross-agent-claude-shim` link started as claude itself, as an SDK host whose
    /// `pathToClaudeCodeExecutable` is the link starts it (`CROSS_AGENT_REAL_CLAUDE` names the
    /// real one), with Claude's clean environment.
    pub fn link_command(&self, args: &[&str]) -> Result<Command> {
        let claude = self.claude()?;
        let links = self.home.path().join("links");
        let made = Command::new(cross_agent_bin()?)
            .args(["shim", "links"])
            .arg(&links)
            .output()?;
        if !made.status.success() {
            bail!("cross-agent shim links failed: {made:?}");
        }
        let mut command = Command::new(links.join("cross-agent-claude-shim"));
        command
            .current_dir(&self.project)
            .env_clear()
            .envs(claude.env())
            .env("CROSS_AGENT_HOME", &self.state)
            .env("CROSS_AGENT_REAL_CLAUDE", claude.binary())
            .args(args);
        Ok(command)
    }

    /// Real Claude behind the shim, started as the extension starts it, before its first line.
    pub fn claude_panel_unspoken(&self) -> Result<PanelDriver> {
        let claude = self.claude()?;
        PanelDriver::start(self.shim_command(claude.binary(), CLAUDE_SDK_ARGS)?)
    }

    /// Real Claude behind the shim, started as the extension starts it, initialized.
    pub fn claude_panel(&self) -> Result<PanelDriver> {
        let mut panel = self.claude_panel_unspoken()?;
        panel.send(&claude_initialize("init-1"))?;
        panel.next_line(TURN, |l| l["type"] == "control_response")?;
        Ok(panel)
    }

    pub fn panels(&self) -> PathBuf {
        self.state.join("panels")
    }

    pub fn registration_path(&self, shim_pid: u32) -> PathBuf {
        self.panels().join(format!("claude-{shim_pid}.json"))
    }

    pub fn registration(&self, shim_pid: u32) -> Result<PanelRegistration> {
        let path = self.registration_path(shim_pid);
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        Ok(serde_json::from_slice(&bytes)?)
    }

    /// Waits until the registration satisfies `wanted`.
    pub fn registration_when(
        &self,
        shim_pid: u32,
        wanted: impl Fn(&PanelRegistration) -> bool,
    ) -> Result<PanelRegistration> {
        let deadline = Instant::now() + TURN;
        loop {
            if let Ok(registration) = self.registration(shim_pid)
                && wanted(&registration)
            {
                return Ok(registration);
            }
            if Instant::now() > deadline {
                bail!(
                    "the registration never got there: {:?}",
                    self.registration(shim_pid)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Writes an executable script into the project.
    pub fn script_file(&self, name: &str, body: &str) -> Result<PathBuf> {
        let path = self.home.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n"))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(path)
    }
}

/// A connection to a shim's socket, as the daemon makes one.
pub struct Connection {
    reader: BufReader<UnixStream>,
}

impl Connection {
    pub fn open(socket: &Path, request: &ShimRequest) -> Result<Connection> {
        let mut stream = UnixStream::connect(socket)
            .with_context(|| format!("connecting to {}", socket.display()))?;
        let mut line = serde_json::to_vec(request)?;
        line.push(b'\n');
        stream.write_all(&line)?;
        stream.set_read_timeout(Some(TURN))?;
        Ok(Connection {
            reader: BufReader::new(stream),
        })
    }

    /// The next event; `None` when the shim closed the connection.
    pub fn next(&mut self) -> Result<Option<ShimEvent>> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        Ok(Some(
            serde_json::from_str(&line).with_context(|| format!("reading {line}"))?,
        ))
    }

    /// Every event until the shim closes the connection.
    pub fn rest(&mut self) -> Result<Vec<ShimEvent>> {
        let mut events = Vec::new();
        while let Some(event) = self.next()? {
            events.push(event);
        }
        Ok(events)
    }
}

pub fn request(delivery: &str, text: &str) -> ShimRequest {
    ShimRequest::Inject(Injection {
        delivery_id: delivery.to_owned(),
        kind: InjectionKind::Request,
        session_id: None,
        new_session: false,
        text: text.to_owned(),
        request_id: None,
        title: None,
        sender_label: None,
    })
}

/// The text of every `result` the extension received, in order.
pub fn results(panel: &PanelDriver) -> Vec<String> {
    panel
        .lines()
        .iter()
        .filter(|l| l["type"] == "result")
        .map(|l| l["result"].as_str().unwrap_or("").to_owned())
        .collect()
}
