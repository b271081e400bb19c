//! Runs the real Claude Code and Codex CLIs offline: each run gets a temporary HOME, a clean
//! environment (nothing of the developer's own keys, stores or proxies leaks in), and a model
//! endpoint of the test's choosing.
//!
//! The binaries come from `.tools/agents/` (installed by `scripts/install-agents`) or from
//! `CROSS_AGENT_TEST_CLAUDE` / `CROSS_AGENT_TEST_CODEX`. When they are missing the helpers
//! return an error naming the script: a test run without the real agents fails, it never skips.
//!
//! One file, past the usual ~800 lines, because every helper here shares one setup (a temporary
//! HOME, the endpoint's address, each CLI's configuration files) and splitting it per agent
//! would copy that setup into each part.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;
use tempfile::TempDir;

/// The pinned versions `scripts/install-agents` installs.
pub const CLAUDE_VERSION: &str = "2.1.332";
pub const CODEX_VERSION: &str = "0.171.0";

/// How long one CLI run may take before the helper kills its process group. Generous: a cold
/// start of either CLI on a loaded 2-core machine takes several seconds.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The workspace root, where `.tools/agents/` lives.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Which real agent program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    Claude,
    Codex,
}

impl AgentKind {
    fn binary_name(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
        }
    }

    fn override_var(self) -> &'static str {
        match self {
            AgentKind::Claude => "CROSS_AGENT_TEST_CLAUDE",
            AgentKind::Codex => "CROSS_AGENT_TEST_CODEX",
        }
    }
}

/// Finds the real agent binary, or explains how to install it.
pub fn agent_binary(kind: AgentKind) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(kind.override_var()) {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        bail!(
            "{} points at {}, which is not a file",
            kind.override_var(),
            path.display()
        );
    }
    let path = workspace_root()
        .join(".tools/agents/node_modules/.bin")
        .join(kind.binary_name());
    if path.exists() {
        return Ok(path);
    }
    bail!(
        "the real {} CLI is not installed at {}: run scripts/install-agents (or set {})",
        kind.binary_name(),
        path.display(),
        kind.override_var()
    )
}

/// A throwaway HOME for one test. Both agents keep their stores under it, so nothing touches the
/// developer's real `~/.claude` or `~/.codex`.
#[derive(Debug)]
pub struct AgentHome {
    dir: TempDir,
}

impl AgentHome {
    pub fn new() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("cross-agent-home-")
            .tempdir()
            .context("creating a temporary HOME")?;
        Self::prepare(dir)
    }

    /// A HOME at a fixed path (wiped first), so recorded transcripts carry stable paths.
    pub fn at_fixed_path(path: &Path) -> Result<Self> {
        if path.exists() {
            fs::remove_dir_all(path).with_context(|| format!("clearing {}", path.display()))?;
        }
        fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
        let dir = tempfile::Builder::new()
            .prefix("home-")
            .tempdir_in(path)
            .context("creating the fixed HOME")?;
        Self::prepare(dir)
    }

    fn prepare(dir: TempDir) -> Result<Self> {
        fs::create_dir_all(dir.path().join(".codex")).context("creating CODEX_HOME")?;
        fs::create_dir_all(dir.path().join("tmp")).context("creating the HOME's TMPDIR")?;
        Ok(Self { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Claude Code's store (`~/.claude`).
    pub fn claude_config(&self) -> PathBuf {
        self.path().join(".claude")
    }

    /// Codex's store (`CODEX_HOME`).
    pub fn codex_home(&self) -> PathBuf {
        self.path().join(".codex")
    }

    /// Creates (if needed) and returns a project folder under this HOME.
    pub fn project(&self, name: &str) -> Result<PathBuf> {
        let path = self.path().join("work").join(name);
        fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(path)
    }

    /// The environment every agent run starts from: only what finding and running the binary
    /// needs, pointed at this HOME.
    fn base_env(&self) -> BTreeMap<String, OsString> {
        let mut env = BTreeMap::new();
        env.insert(
            "PATH".to_owned(),
            std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin")),
        );
        env.insert("HOME".to_owned(), self.path().as_os_str().to_owned());
        env.insert(
            "TMPDIR".to_owned(),
            self.path().join("tmp").as_os_str().to_owned(),
        );
        env.insert("LANG".to_owned(), OsString::from("C.UTF-8"));
        env.insert("TERM".to_owned(), OsString::from("dumb"));
        env.insert("NO_COLOR".to_owned(), OsString::from("1"));
        env
    }
}

/// Claude Code transcripts live in a folder named after the cwd with every non-alphanumeric
/// character turned into `-`.
pub fn claude_project_slug(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// One MCP server to register with an agent run.
#[derive(Debug, Clone)]
pub struct McpServer {
    pub name: String,
    pub command: PathBuf,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Codex only: pre-approve the server's tools (`default_tools_approval_mode = "approve"`),
    /// since `codex exec` cannot ask anyone. Off, every call needs an approval nobody gives.
    pub approve_tools: bool,
}

impl McpServer {
    pub fn new(name: &str, command: impl Into<PathBuf>) -> Self {
        Self {
            name: name.to_owned(),
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            approve_tools: true,
        }
    }

    /// Leaves the server's tools needing an approval (Codex), as a default registration does.
    pub fn requiring_approval(mut self) -> Self {
        self.approve_tools = false;
        self
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.insert(key.to_owned(), value.into());
        self
    }
}

/// What a finished CLI run left behind.
#[derive(Debug)]
pub struct RunOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// The helper killed the process group because the run exceeded its timeout.
    pub timed_out: bool,
}

impl RunOutput {
    /// The stdout lines that parse as JSON, in order.
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|line| serde_json::from_str(line.trim()).ok())
            .collect()
    }

    fn describe(&self) -> String {
        format!(
            "exit {:?} after {:.1?}{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status.code(),
            self.elapsed,
            if self.timed_out { " (timed out)" } else { "" },
            self.stdout,
            self.stderr
        )
    }
}

/// Runs a command in its own process group with a deadline, collecting its output. On timeout
/// the whole group is killed so no agent subprocess outlives the test.
/// `<cli> --version`, run in `home` (a scratch HOME) so nothing touches the user's own.
pub fn agent_version(kind: AgentKind, home: &AgentHome) -> Result<String> {
    let binary = agent_binary(kind)?;
    let mut command = Command::new(&binary);
    command
        .arg("--version")
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODEX_HOME", home.codex_home());
    let output = run_with_timeout(command, Duration::from_secs(60))?;
    let version = output.stdout.trim();
    if !output.status.success() || version.is_empty() {
        bail!(
            "`{} --version` failed ({}){}",
            binary.display(),
            output.status,
            match output.stderr.trim() {
                "" => String::new(),
                stderr => format!(": {stderr}"),
            }
        );
    }
    Ok(version.to_owned())
}

pub fn run_with_timeout(mut command: Command, timeout: Duration) -> Result<RunOutput> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {:?}", command.get_program()))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let (status, timed_out) = wait_or_kill(&mut child, timeout)?;
    let elapsed = started.elapsed();
    Ok(RunOutput {
        status,
        stdout: join_drain(stdout),
        stderr: join_drain(stderr),
        elapsed,
        timed_out,
    })
}

type Drain = Option<thread::JoinHandle<String>>;

fn drain(pipe: Option<impl Read + Send + 'static>) -> Drain {
    pipe.map(|mut pipe| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    })
}

fn join_drain(handle: Drain) -> String {
    handle
        .and_then(|handle| handle.join().ok())
        .unwrap_or_default()
}

fn wait_or_kill(child: &mut Child, timeout: Duration) -> Result<(ExitStatus, bool)> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().context("waiting for the agent")? {
            return Ok((status, false));
        }
        if Instant::now() >= deadline {
            kill_group(child.id());
            let status = child.wait().context("reaping the killed agent")?;
            return Ok((status, true));
        }
        thread::sleep(Duration::from_millis(25));
    }
}

/// Kills a process group by its leader's pid.
pub fn kill_group(pid: u32) {
    // The system call, not `kill -KILL -PGID`: procps-ng 4.0.2's `kill` (Debian 12's) takes
    // that negative pid as -1 and kills every process the user may signal — the test runner,
    // the shell and CI with it. Pid 1 would mean the same to the system call, hence the guard.
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .filter(|pid| *pid > 1)
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Real Claude Code, pointed at a scripted Anthropic endpoint.
#[derive(Debug, Clone)]
pub struct Claude {
    binary: PathBuf,
    home: PathBuf,
    env: BTreeMap<String, OsString>,
}

impl Claude {
    /// `anthropic_base_url` is the endpoint's root (Claude appends `/v1/messages`).
    pub fn new(home: &AgentHome, anthropic_base_url: &str) -> Result<Self> {
        let mut env = home.base_env();
        env.insert("ANTHROPIC_BASE_URL".into(), anthropic_base_url.into());
        env.insert("ANTHROPIC_API_KEY".into(), "test-key".into());
        env.insert(
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        );
        env.insert("DISABLE_AUTOUPDATER".into(), "1".into());
        env.insert("DISABLE_TELEMETRY".into(), "1".into());
        Ok(Self {
            binary: agent_binary(AgentKind::Claude)?,
            home: home.path().to_path_buf(),
            env,
        })
    }

    /// Adds (or overrides) one variable of every run's environment.
    pub fn with_env(mut self, key: &str, value: impl Into<OsString>) -> Self {
        self.env.insert(key.to_owned(), value.into());
        self
    }

    /// The real binary.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The environment every run gets (a clean one pointed at the temporary HOME and the
    /// endpoint), for programs that run Claude themselves (a panel shim).
    pub fn env(&self) -> &BTreeMap<String, OsString> {
        &self.env
    }

    /// A `claude -p <prompt>` turn in `cwd`; configure it, then `run()`.
    pub fn turn(&self, cwd: &Path, prompt: &str) -> ClaudeTurn {
        ClaudeTurn {
            claude: self.clone(),
            cwd: cwd.to_path_buf(),
            prompt: prompt.to_owned(),
            resume: None,
            session_id: None,
            mcp_servers: Vec::new(),
            allowed_tools: Vec::new(),
            extra_args: Vec::new(),
            timeout: DEFAULT_RUN_TIMEOUT,
        }
    }

    /// Where Claude Code writes the transcript of `session_id` started in `cwd`.
    pub fn transcript_path(&self, cwd: &Path, session_id: &str) -> PathBuf {
        self.home
            .join(".claude/projects")
            .join(claude_project_slug(cwd))
            .join(format!("{session_id}.jsonl"))
    }

    /// One real session in `cwd`, its turns run in order: the first prompt starts it with
    /// `allowed_tools` allowed, each next one resumes it. Every turn must succeed. Its id.
    pub fn session(
        &self,
        cwd: &Path,
        allowed_tools: &[&str],
        prompts: &[impl AsRef<str>],
    ) -> Result<String> {
        let (first, rest) = prompts
            .split_first()
            .context("a session needs a first prompt")?;
        let mut turn = self.turn(cwd, first.as_ref());
        for tool in allowed_tools {
            turn = turn.allow_tool(tool);
        }
        let id = turn
            .run()?
            .expect_success()?
            .session_id()
            .context("the first turn named no session")?
            .to_owned();
        for prompt in rest {
            self.turn(cwd, prompt.as_ref())
                .resume(&id)
                .run()?
                .expect_success()?;
        }
        Ok(id)
    }
}

/// One `claude -p` invocation being configured.
#[derive(Debug)]
pub struct ClaudeTurn {
    claude: Claude,
    cwd: PathBuf,
    prompt: String,
    resume: Option<String>,
    session_id: Option<String>,
    mcp_servers: Vec<McpServer>,
    allowed_tools: Vec<String>,
    extra_args: Vec<String>,
    timeout: Duration,
}

impl ClaudeTurn {
    /// Continue an existing session (`--resume ID`).
    pub fn resume(mut self, session_id: &str) -> Self {
        self.resume = Some(session_id.to_owned());
        self
    }

    /// Create the session with this id (`--session-id UUID`).
    pub fn session_id(mut self, session_id: &str) -> Self {
        self.session_id = Some(session_id.to_owned());
        self
    }

    /// Register an MCP server for this run (`--mcp-config`); its tools are allowed without a
    /// prompt via `--allowedTools mcp__NAME`.
    pub fn mcp_server(mut self, server: McpServer) -> Self {
        self.allowed_tools.push(format!("mcp__{}", server.name));
        self.mcp_servers.push(server);
        self
    }

    /// Allow a tool without a permission prompt (e.g. `Bash`).
    pub fn allow_tool(mut self, tool: &str) -> Self {
        self.allowed_tools.push(tool.to_owned());
        self
    }

    pub fn arg(mut self, arg: &str) -> Self {
        self.extra_args.push(arg.to_owned());
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs the turn to completion and parses the `--output-format json` result.
    pub fn run(self) -> Result<ClaudeRun> {
        let mut command = Command::new(&self.claude.binary);
        command
            .current_dir(&self.cwd)
            .env_clear()
            .envs(&self.claude.env)
            .args(["-p", &self.prompt, "--output-format", "json"]);
        if let Some(id) = &self.resume {
            command.args(["--resume", id]);
        }
        if let Some(id) = &self.session_id {
            command.args(["--session-id", id]);
        }
        if !self.mcp_servers.is_empty() {
            let config = claude_mcp_config(&self.mcp_servers);
            command.args(["--mcp-config", &config.to_string()]);
        }
        if !self.allowed_tools.is_empty() {
            command.arg("--allowedTools");
            command.args(&self.allowed_tools);
        }
        command.args(&self.extra_args);
        let output = run_with_timeout(command, self.timeout)?;
        let result = output
            .json_lines()
            .into_iter()
            .rev()
            .find(|value| value.get("type").and_then(Value::as_str) == Some("result"));
        Ok(ClaudeRun { output, result })
    }
}

fn claude_mcp_config(servers: &[McpServer]) -> Value {
    let mut map = serde_json::Map::new();
    for server in servers {
        map.insert(
            server.name.clone(),
            serde_json::json!({
                "type": "stdio",
                "command": server.command,
                "args": server.args,
                "env": server.env,
            }),
        );
    }
    serde_json::json!({ "mcpServers": map })
}

/// A finished `claude -p` run.
#[derive(Debug)]
pub struct ClaudeRun {
    pub output: RunOutput,
    /// The `{"type":"result",…}` object Claude printed, if any.
    pub result: Option<Value>,
}

impl ClaudeRun {
    pub fn session_id(&self) -> Option<&str> {
        self.result.as_ref()?.get("session_id")?.as_str()
    }

    /// The answer text (`result`).
    pub fn result_text(&self) -> Option<&str> {
        self.result.as_ref()?.get("result")?.as_str()
    }

    pub fn is_error(&self) -> bool {
        self.result
            .as_ref()
            .and_then(|result| result.get("is_error"))
            .and_then(Value::as_bool)
            .unwrap_or(true)
    }

    /// Fails with the whole output when the run did not succeed.
    pub fn expect_success(self) -> Result<Self> {
        if self.output.status.success() && !self.is_error() && self.result.is_some() {
            Ok(self)
        } else {
            Err(anyhow!(
                "claude -p did not succeed: {}",
                self.output.describe()
            ))
        }
    }
}

/// Real Codex, pointed at a scripted OpenAI Responses endpoint through a custom provider in
/// `$CODEX_HOME/config.toml`.
#[derive(Debug, Clone)]
pub struct Codex {
    binary: PathBuf,
    codex_home: PathBuf,
    env: BTreeMap<String, OsString>,
    openai_base_url: String,
    mcp_servers: Vec<McpServer>,
    stream_idle_timeout: Duration,
}

/// The model name the scripted provider is configured with.
pub const CODEX_TEST_MODEL: &str = "test-model";

impl Codex {
    /// `openai_base_url` ends in `/v1` (Codex appends `/responses`).
    pub fn new(home: &AgentHome, openai_base_url: &str) -> Result<Self> {
        let mut env = home.base_env();
        env.insert("CODEX_HOME".into(), home.codex_home().into());
        env.insert("SCRIPTED_KEY".into(), "test-key".into());
        let codex = Self {
            binary: agent_binary(AgentKind::Codex)?,
            codex_home: home.codex_home(),
            env,
            openai_base_url: openai_base_url.to_owned(),
            mcp_servers: Vec::new(),
            stream_idle_timeout: Duration::from_secs(60),
        };
        codex.write_config()?;
        Ok(codex)
    }

    pub fn with_env(mut self, key: &str, value: impl Into<OsString>) -> Self {
        self.env.insert(key.to_owned(), value.into());
        self
    }

    /// Registers an MCP server in `config.toml`. It is `required`, so `codex exec` waits for it
    /// before the first model request (otherwise the first request goes out without its tools),
    /// and its tools are pre-approved (unless [`McpServer::requiring_approval`]), since
    /// `codex exec` cannot ask anyone.
    pub fn with_mcp_server(mut self, server: McpServer) -> Result<Self> {
        self.mcp_servers.push(server);
        self.write_config()?;
        Ok(self)
    }

    /// How long Codex waits on a silent model stream before it gives up (its
    /// `stream_idle_timeout_ms`); tests of a hanging model shorten it.
    pub fn with_stream_idle_timeout(mut self, timeout: Duration) -> Result<Self> {
        self.stream_idle_timeout = timeout;
        self.write_config()?;
        Ok(self)
    }

    pub fn codex_home(&self) -> &Path {
        &self.codex_home
    }

    /// The environment every run gets (a clean one: the temporary HOME, `CODEX_HOME`, the
    /// scripted provider's key), for programs that run Codex themselves.
    pub fn env(&self) -> &BTreeMap<String, OsString> {
        &self.env
    }

    fn write_config(&self) -> Result<()> {
        let mut config = format!(
            "model = \"{CODEX_TEST_MODEL}\"\n\
             model_provider = \"scripted\"\n\
             approval_policy = \"never\"\n\
             sandbox_mode = \"workspace-write\"\n\
             \n\
             [model_providers.scripted]\n\
             name = \"scripted\"\n\
             base_url = {}\n\
             wire_api = \"responses\"\n\
             env_key = \"SCRIPTED_KEY\"\n\
             request_max_retries = 0\n\
             stream_max_retries = 0\n\
             stream_idle_timeout_ms = {}\n",
            toml_string(&self.openai_base_url),
            self.stream_idle_timeout.as_millis()
        );
        for server in &self.mcp_servers {
            config.push_str(&format!(
                "\n[mcp_servers.{}]\ncommand = {}\nargs = [{}]\nrequired = true\n\
                 startup_timeout_sec = 60\n{}",
                toml_string(&server.name),
                toml_string(&server.command.to_string_lossy()),
                server
                    .args
                    .iter()
                    .map(|arg| toml_string(arg))
                    .collect::<Vec<_>>()
                    .join(", "),
                if server.approve_tools {
                    "default_tools_approval_mode = \"approve\"\n"
                } else {
                    ""
                }
            ));
            if !server.env.is_empty() {
                config.push_str(&format!(
                    "[mcp_servers.{}.env]\n",
                    toml_string(&server.name)
                ));
                for (key, value) in &server.env {
                    config.push_str(&format!("{} = {}\n", toml_string(key), toml_string(value)));
                }
            }
        }
        let path = self.codex_home.join("config.toml");
        fs::write(&path, config).with_context(|| format!("writing {}", path.display()))
    }

    /// `codex app-server` in `cwd` (the panel's JSON-RPC transport) with this HOME's
    /// environment; the caller pipes its stdio.
    pub fn app_server(&self, cwd: &Path) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .current_dir(cwd)
            .env_clear()
            .envs(&self.env)
            .arg("app-server");
        command
    }

    /// A `codex exec --json <prompt>` turn in `cwd`; configure it, then `run()`.
    pub fn turn(&self, cwd: &Path, prompt: &str) -> CodexTurn {
        CodexTurn {
            codex: self.clone(),
            cwd: cwd.to_path_buf(),
            prompt: prompt.to_owned(),
            resume: None,
            fork: None,
            extra_args: Vec::new(),
            timeout: DEFAULT_RUN_TIMEOUT,
        }
    }

    /// One real thread in `cwd`, its turns run in order: the first prompt starts it without
    /// approvals or sandbox (so its shell calls run), each next one resumes it; `model`, when
    /// given, is every turn's `-m`. Every turn must succeed. Its thread id.
    pub fn session(
        &self,
        cwd: &Path,
        model: Option<&str>,
        prompts: &[impl AsRef<str>],
    ) -> Result<String> {
        let with_model = |mut turn: CodexTurn| {
            if let Some(model) = model {
                turn = turn.arg("-m").arg(model);
            }
            turn
        };
        let (first, rest) = prompts
            .split_first()
            .context("a session needs a first prompt")?;
        let first = self
            .turn(cwd, first.as_ref())
            .arg("--dangerously-bypass-approvals-and-sandbox");
        let thread = with_model(first)
            .run()?
            .expect_success()?
            .thread_id()
            .context("the first turn started no thread")?
            .to_owned();
        for prompt in rest {
            with_model(self.turn(cwd, prompt.as_ref()).resume(&thread))
                .run()?
                .expect_success()?;
        }
        Ok(thread)
    }

    /// Every rollout file Codex has written under this CODEX_HOME, sorted by path.
    pub fn rollouts(&self) -> Result<Vec<PathBuf>> {
        let mut found = Vec::new();
        collect_files(&self.codex_home.join("sessions"), &mut found)?;
        found.retain(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("rollout-") && name.ends_with(".jsonl"))
        });
        found.sort();
        Ok(found)
    }

    /// The rollout of one thread (its file name ends with the thread id).
    pub fn rollout_of(&self, thread_id: &str) -> Result<PathBuf> {
        self.rollouts()?
            .into_iter()
            .find(|path| {
                path.file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| name.ends_with(&format!("{thread_id}.jsonl")))
            })
            .ok_or_else(|| {
                anyhow!(
                    "no rollout for thread {thread_id} under {}",
                    self.codex_home.display()
                )
            })
    }
}

fn collect_files(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error).with_context(|| format!("reading {}", dir.display())),
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            collect_files(&entry.path(), found)?;
        } else if file_type.is_file() {
            found.push(entry.path());
        }
    }
    Ok(())
}

/// A TOML basic string: JSON's escaping is a subset TOML accepts.
fn toml_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// One `codex exec` invocation being configured.
#[derive(Debug)]
pub struct CodexTurn {
    codex: Codex,
    cwd: PathBuf,
    prompt: String,
    resume: Option<String>,
    fork: Option<String>,
    extra_args: Vec<String>,
    timeout: Duration,
}

impl CodexTurn {
    /// Continue an existing thread (`codex exec resume <thread-id>`).
    pub fn resume(mut self, thread_id: &str) -> Self {
        self.resume = Some(thread_id.to_owned());
        self
    }

    /// Start a new thread from a copy of an existing one (`codex exec fork <thread-id>`).
    pub fn fork(mut self, thread_id: &str) -> Self {
        self.fork = Some(thread_id.to_owned());
        self
    }

    pub fn arg(mut self, arg: &str) -> Self {
        self.extra_args.push(arg.to_owned());
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs the turn to completion and parses the `--json` event stream.
    pub fn run(self) -> Result<CodexRun> {
        let mut command = Command::new(&self.codex.binary);
        command
            .current_dir(&self.cwd)
            .env_clear()
            .envs(&self.codex.env)
            .arg("exec");
        if let Some(thread_id) = &self.resume {
            command.args(["resume", thread_id]);
        }
        if let Some(thread_id) = &self.fork {
            command.args(["fork", thread_id]);
        }
        command
            .args(["--json", "--skip-git-repo-check"])
            .args(&self.extra_args)
            .arg(&self.prompt);
        let output = run_with_timeout(command, self.timeout)?;
        let events = output.json_lines();
        Ok(CodexRun { output, events })
    }
}

/// A finished `codex exec --json` run.
#[derive(Debug)]
pub struct CodexRun {
    pub output: RunOutput,
    /// Every JSON event printed on stdout.
    pub events: Vec<Value>,
}

impl CodexRun {
    fn events_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.events
            .iter()
            .filter(move |event| event.get("type").and_then(Value::as_str) == Some(kind))
    }

    /// From `thread.started`.
    pub fn thread_id(&self) -> Option<&str> {
        self.events_of("thread.started")
            .find_map(|event| event.get("thread_id")?.as_str())
    }

    /// The text of every `agent_message` item, in order.
    pub fn agent_messages(&self) -> Vec<&str> {
        self.events_of("item.completed")
            .filter_map(|event| {
                let item = event.get("item")?;
                (item.get("type")?.as_str()? == "agent_message")
                    .then(|| item.get("text")?.as_str())
                    .flatten()
            })
            .collect()
    }

    /// The last agent message: the turn's answer.
    pub fn final_message(&self) -> Option<&str> {
        self.agent_messages().last().copied()
    }

    /// Items of a given type (e.g. `mcp_tool_call`, `command_execution`).
    pub fn items_of(&self, item_type: &str) -> Vec<&Value> {
        self.events_of("item.completed")
            .filter_map(|event| event.get("item"))
            .filter(|item| item.get("type").and_then(Value::as_str) == Some(item_type))
            .collect()
    }

    pub fn turn_completed(&self) -> bool {
        self.events_of("turn.completed").next().is_some()
    }

    /// The messages of `turn.failed` and `error` events.
    pub fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|event| match event.get("type")?.as_str()? {
                "turn.failed" => Some(event.get("error")?.get("message")?.as_str()?.to_owned()),
                "error" => Some(event.get("message")?.as_str()?.to_owned()),
                _ => None,
            })
            .collect()
    }

    pub fn expect_success(self) -> Result<Self> {
        if self.output.status.success() && self.turn_completed() {
            Ok(self)
        } else {
            Err(anyhow!(
                "codex exec did not succeed: {}",
                self.output.describe()
            ))
        }
    }
}
