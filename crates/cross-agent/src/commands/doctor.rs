//! `cross-agent doctor`: one line per thing that must work, each with its fix — every agent
//! found and its version, each registration present and pointing at this binary, the agents'
//! own listing agreeing (`claude mcp list`, `codex mcp list`, and an MCP handshake with the
//! registered command), the daemon and its version, the state directory, the database, the
//! panel shims, the hooks, Telegram. For Copilot, each VS Code user-data directory found and
//! whether both of its files (`mcp.json`, the Agent Host's `agent-host-config.json`) hold
//! cross-agent's entry running this binary; each running host, each endpoint entry refused as
//! unsafe, each catalog that cannot be read. For each other machine of `hosts.toml`, ssh, the
//! cross-agent there and its daemon (`doctor_hosts`).
//!
//! What is broken makes the exit status non-zero; what the person has simply not set up (an
//! agent not installed, no shims, no hooks, no Telegram) is said as such and is not a failure.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_protocol::bridge::BridgeStatusParams;
use cross_agent_protocol::rpc::ClientKind;
use serde::Serialize;
use serde_json::{Value, json};

use super::{bridge_client, check_database, install};
use crate::setup::json_config::JsonDoc;
use crate::setup::places::{AgentName, Places, find_on_path, is_executable};
use crate::setup::toml_config::TomlDoc;
use crate::setup::{self, ALLOW_RULE, HOOK_EVENTS, SERVER_NAME, SHIM_LINKS, files};

/// How long an agent's `--version` or `mcp list` may take.
const PROGRAM_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the registered command may take to answer MCP `initialize`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Status {
    Ok,
    /// Not set up by the person: said, not a failure.
    NotSetUp,
    Broken,
}

#[derive(Debug, Serialize)]
struct Check {
    what: String,
    status: Status,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

#[derive(Default)]
pub(super) struct Checks(Vec<Check>);

impl Checks {
    pub(super) fn push(
        &mut self,
        what: impl Into<String>,
        status: Status,
        detail: impl Into<String>,
        fix: Option<&str>,
    ) {
        self.0.push(Check {
            what: what.into(),
            status,
            detail: detail.into(),
            fix: fix.map(str::to_owned),
        });
    }
}

impl DoctorArgs {
    pub fn run(self) -> Result<ExitCode> {
        let places = Places::from_env()?;
        let this = install::this_binary()?;
        let mut checks = Checks::default();
        for agent in AgentName::ALL {
            match agent {
                AgentName::Copilot => check_copilot(&mut checks, &places, &this),
                AgentName::Claude | AgentName::Codex | AgentName::Grok => {
                    check_agent(&mut checks, &places, agent, &this);
                }
            }
        }
        check_state(&mut checks);
        check_shims(&mut checks, &places, &this);
        check_hooks(&mut checks, &places);
        check_telegram(&mut checks);
        check_copilot_hosts(&mut checks);
        super::doctor_hosts::check_hosts(&mut checks);
        let broken = checks.0.iter().any(|c| c.status == Status::Broken);
        if self.json {
            bridge_client::print_json(&json!({"ok": !broken, "binary": this, "checks": checks.0}))?;
        } else {
            let mut out = std::io::stdout().lock();
            for check in &checks.0 {
                let status = match check.status {
                    Status::Ok => "ok",
                    Status::NotSetUp => "not set up",
                    Status::Broken => "BROKEN",
                };
                write!(out, "{status:<10} {}: {}", check.what, check.detail)?;
                match &check.fix {
                    Some(fix) => writeln!(out, " — fix: {fix}")?,
                    None => writeln!(out)?,
                }
            }
            if broken {
                writeln!(out, "\nsomething is broken: see the lines marked BROKEN")?;
            }
        }
        Ok(if broken {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        })
    }
}

/// The agent (found, version), its registration, and the agent's own view of it.
fn check_agent(checks: &mut Checks, places: &Places, agent: AgentName, this: &Path) {
    let title = agent.title();
    let cli = places.cli(agent);
    let found = places.agent_found(agent);
    match &cli {
        Some(cli) => {
            let version = run_briefly(Command::new(cli).arg("--version"), PROGRAM_TIMEOUT)
                .map(|out| out.stdout.trim().to_owned())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "version unknown (`--version` did not answer)".to_owned());
            checks.push(
                title,
                Status::Ok,
                format!("{version} at {}", cli.display()),
                None,
            );
        }
        None if found => checks.push(
            title,
            Status::Ok,
            "its settings are here, its CLI is not on PATH",
            None,
        ),
        None => checks.push(title, Status::NotSetUp, "not installed", None),
    }
    let registration = match registration_of(places, agent) {
        Ok(registration) => registration,
        Err(error) => {
            checks.push(
                format!("{title} registration"),
                Status::Broken,
                format!("{error:#}"),
                Some("fix the file by hand, then run `cross-agent install`"),
            );
            return;
        }
    };
    let what = format!("{title} registration ({})", registration.file.display());
    let fix_install = format!("cross-agent install --agents {}", agent.program());
    let Some(entry) = registration.entry else {
        if found {
            checks.push(
                what,
                Status::NotSetUp,
                "cross-agent is not registered",
                Some(&fix_install),
            );
        }
        return;
    };
    match command_problem(&entry, this) {
        Some(problem) => {
            checks.push(what, Status::Broken, problem, Some(&fix_install));
            return;
        }
        None => checks.push(
            what,
            Status::Ok,
            format!("runs {} mcp", this.display()),
            None,
        ),
    }
    match agent {
        AgentName::Claude => {
            let allowed = files::read(&places.claude_settings, &places.home)
                .ok()
                .flatten()
                .and_then(|text| JsonDoc::parse("settings", Some(&text)).ok())
                .is_some_and(|doc| doc.array_has(&["permissions", "allow"], ALLOW_RULE));
            if allowed {
                checks.push(
                    "Claude Code allow rule",
                    Status::Ok,
                    format!("{ALLOW_RULE} in {}", places.claude_settings.display()),
                    None,
                );
            } else {
                checks.push(
                    "Claude Code allow rule",
                    Status::NotSetUp,
                    "every cross-agent tool call asks for approval",
                    Some(&fix_install),
                );
            }
        }
        AgentName::Codex => {
            if entry
                .get("default_tools_approval_mode")
                .and_then(Value::as_str)
                != Some("approve")
            {
                checks.push(
                    "Codex tool approval",
                    Status::NotSetUp,
                    "default_tools_approval_mode is not \"approve\": every call asks",
                    Some(&fix_install),
                );
            }
        }
        AgentName::Grok | AgentName::Copilot => {}
    }
    let listing = match (agent, &cli) {
        (AgentName::Claude, Some(cli)) => claude_listing(cli),
        (AgentName::Codex, Some(cli)) => codex_listing(cli, this).and_then(|()| handshake(&entry)),
        _ => handshake(&entry),
    };
    let what = format!("{title} connects");
    match listing {
        Ok(()) => checks.push(
            what,
            Status::Ok,
            "the agent lists cross-agent and it answers MCP initialize",
            None,
        ),
        Err(problem) => checks.push(what, Status::Broken, problem, Some(&fix_install)),
    }
}

struct Registered {
    file: PathBuf,
    entry: Option<Value>,
}

fn registration_of(places: &Places, agent: AgentName) -> Result<Registered> {
    let file = match agent {
        AgentName::Claude => &places.claude_json,
        AgentName::Codex => &places.codex_config,
        AgentName::Grok => &places.grok_config,
        // Copilot has one registration per file of each editor ([`check_copilot`]); its
        // first is VS Code's `mcp.json`.
        AgentName::Copilot => match places.copilot_targets().first() {
            Some(place) => return json_registration(places, &place.mcp_json, "servers"),
            None => anyhow::bail!("no VS Code user-data directory is known on this system"),
        },
    };
    if agent == AgentName::Claude {
        return json_registration(places, file, "mcpServers");
    }
    let text = files::read(file, &places.home)?;
    let entry = TomlDoc::parse(&file.display().to_string(), text.as_deref())?.server(SERVER_NAME);
    Ok(Registered {
        file: file.clone(),
        entry,
    })
}

/// cross-agent's entry in the `servers` object of a JSON(C) file.
fn json_registration(places: &Places, file: &Path, servers: &str) -> Result<Registered> {
    let text = files::read(file, &places.home)?;
    let entry = JsonDoc::parse(&file.display().to_string(), text.as_deref())?
        .entry(&[servers], SERVER_NAME);
    Ok(Registered {
        file: file.to_owned(),
        entry,
    })
}

/// Copilot in each VS Code user-data directory found: both files `install --agents copilot`
/// writes hold cross-agent's entry, running this binary. Whether the Agent Host has loaded it
/// (it reads its file when it starts) is not something a file can tell.
fn check_copilot(checks: &mut Checks, places: &Places, this: &Path) {
    let found: Vec<_> = places.copilot.iter().filter(|place| place.found).collect();
    if found.is_empty() {
        let looked: Vec<String> = places
            .copilot
            .iter()
            .map(|place| place.user_data.display().to_string())
            .collect();
        checks.push(
            AgentName::Copilot.title(),
            Status::NotSetUp,
            format!(
                "not installed (no VS Code user data at {})",
                looked.join(", ")
            ),
            None,
        );
        return;
    }
    let fix_install = format!(
        "cross-agent install --agents {}",
        AgentName::Copilot.program()
    );
    for place in found {
        checks.push(
            place.label(),
            Status::Ok,
            format!("user data at {}", place.user_data.display()),
            None,
        );
        for (file, servers) in [
            (&place.mcp_json, "servers"),
            (&place.host_config, "mcpServers"),
        ] {
            let what = format!("{} registration ({})", place.label(), file.display());
            match json_registration(places, file, servers) {
                Err(error) => checks.push(
                    what,
                    Status::Broken,
                    format!("{error:#}"),
                    Some(&format!("fix the file by hand, then run `{fix_install}`")),
                ),
                Ok(Registered { entry: None, .. }) => checks.push(
                    what,
                    Status::NotSetUp,
                    "cross-agent is not registered",
                    Some(&fix_install),
                ),
                Ok(Registered {
                    entry: Some(entry), ..
                }) => match command_problem(&entry, this) {
                    Some(problem) => checks.push(what, Status::Broken, problem, Some(&fix_install)),
                    None => checks.push(
                        what,
                        Status::Ok,
                        format!("runs {} mcp", this.display()),
                        None,
                    ),
                },
            }
        }
    }
}

/// What is wrong with a registration's command, if anything: it must run this binary's `mcp`.
fn command_problem(entry: &Value, this: &Path) -> Option<String> {
    let Some(command) = entry.get("command").and_then(Value::as_str) else {
        return Some("the entry has no command".to_owned());
    };
    let args: Vec<&str> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|args| args.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let path = if command.contains('/') {
        Some(PathBuf::from(command))
    } else {
        find_on_path(command)
    };
    let Some(path) = path.filter(|p| is_executable(p)) else {
        return Some(format!(
            "its command {command} does not exist or cannot be run"
        ));
    };
    if args != ["mcp"] {
        return Some(format!(
            "it runs {command} {} instead of `{command} mcp`",
            args.join(" ")
        ));
    }
    let resolved = path.canonicalize().unwrap_or(path);
    if resolved != this {
        return Some(format!(
            "it runs {}, not this binary ({})",
            resolved.display(),
            this.display()
        ));
    }
    None
}

/// `claude mcp list` (which starts each server) must show cross-agent connected.
fn claude_listing(cli: &Path) -> std::result::Result<(), String> {
    let out = run_briefly(Command::new(cli).args(["mcp", "list"]), PROGRAM_TIMEOUT)
        .ok_or_else(|| "`claude mcp list` did not finish".to_owned())?;
    let line = out
        .stdout
        .lines()
        .find(|line| line.starts_with(&format!("{SERVER_NAME}:")))
        .ok_or_else(|| "`claude mcp list` does not show cross-agent".to_owned())?;
    if line.contains("Connected") {
        Ok(())
    } else {
        Err(format!("`claude mcp list` says: {line}"))
    }
}

/// `codex mcp list --json` must list cross-agent enabled, running this binary.
fn codex_listing(cli: &Path, this: &Path) -> std::result::Result<(), String> {
    let out = run_briefly(
        Command::new(cli).args(["mcp", "list", "--json"]),
        PROGRAM_TIMEOUT,
    )
    .ok_or_else(|| "`codex mcp list` did not finish".to_owned())?;
    let listed: Value = serde_json::from_str(out.stdout.trim()).map_err(|_| {
        format!(
            "`codex mcp list --json` printed no JSON: {}",
            out.stderr.trim()
        )
    })?;
    let server = listed
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["name"] == SERVER_NAME))
        .ok_or_else(|| "`codex mcp list` does not show cross-agent".to_owned())?;
    if server["enabled"] != Value::Bool(true) {
        return Err(format!(
            "`codex mcp list` shows cross-agent disabled: {}",
            server["disabled_reason"]
        ));
    }
    let command = server
        .pointer("/transport/command")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if Path::new(command).canonicalize().ok().as_deref() != Some(this) {
        return Err(format!(
            "`codex mcp list` shows cross-agent running {command}"
        ));
    }
    Ok(())
}

/// Starts the registered command with the registration's environment and asks MCP
/// `initialize`: what an agent does at session start.
fn handshake(entry: &Value) -> std::result::Result<(), String> {
    let command = entry
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut program = Command::new(command);
    program.arg("mcp");
    if let Some(env) = entry.get("env").and_then(Value::as_object) {
        for (key, value) in env {
            if let Some(value) = value.as_str() {
                program.env(key, value);
            }
        }
    }
    let mut child = program
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("cannot start {command} mcp: {error}"))?;
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "cross-agent-doctor", "version": env!("CARGO_PKG_VERSION")}}});
    let wrote = child
        .stdin
        .as_mut()
        .map(|stdin| writeln!(stdin, "{request}").is_ok())
        .unwrap_or(false);
    let (sender, receiver) = std::sync::mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = sender.send(line);
        });
    }
    let answer = receiver.recv_timeout(HANDSHAKE_TIMEOUT).unwrap_or_default();
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    let answer: Value = serde_json::from_str(answer.trim()).unwrap_or(Value::Null);
    if wrote && answer.pointer("/result/serverInfo").is_some() {
        Ok(())
    } else {
        Err(format!(
            "`{command} mcp` did not answer MCP initialize within {}s",
            HANDSHAKE_TIMEOUT.as_secs()
        ))
    }
}

/// The state directory, the daemon and its version, the database.
fn check_state(checks: &mut Checks) {
    let home = match Home::from_env() {
        Ok(home) => home,
        Err(error) => {
            checks.push(
                "CROSS_AGENT_HOME",
                Status::Broken,
                error.to_string(),
                Some("set CROSS_AGENT_HOME to a directory of yours"),
            );
            return;
        }
    };
    match home.verify() {
        Ok(_) => checks.push(
            "CROSS_AGENT_HOME",
            Status::Ok,
            format!("{} is yours alone", home.root().display()),
            None,
        ),
        Err(error) => {
            checks.push(
                "CROSS_AGENT_HOME",
                Status::Broken,
                error.to_string(),
                Some("see the message: it names the path and what to change"),
            );
            return;
        }
    }
    let client = match BlockingClient::connect(&home, &ConnectOptions::new(ClientKind::Cli)) {
        Ok(client) => client,
        Err(_) => {
            checks.push(
                "daemon",
                Status::NotSetUp,
                "not running (it starts itself on first use)",
                Some("cross-agent daemon start, or cross-agent service install"),
            );
            return;
        }
    };
    let hello = client.hello();
    let ours = env!("CARGO_PKG_VERSION");
    if hello.daemon_version == ours {
        checks.push(
            "daemon",
            Status::Ok,
            format!(
                "version {} running (pid {})",
                hello.daemon_version, hello.daemon_pid
            ),
            None,
        );
    } else {
        checks.push(
            "daemon",
            Status::Broken,
            format!(
                "version {} running, this binary is {ours}",
                hello.daemon_version
            ),
            Some("cross-agent reload"),
        );
    }
    let status = client.call(BridgeStatusParams {
        cwd: None,
        scope: None,
        delivery_id: None,
        caller: bridge_client::caller(),
    });
    let daemon = status
        .ok()
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or(Value::Null);
    let database = check_database::report(&daemon);
    let quarantined = database["quarantined"].as_array().map_or(0, Vec::len);
    match database["check"].as_str() {
        Some(check) if quarantined == 0 => checks.push("database", Status::Ok, format!("{} ({check})", database["path"].as_str().unwrap_or("hub.db")), None),
        Some(_) => checks.push("database", Status::Ok, format!("healthy now; {quarantined} damaged store(s) were moved aside (cross-agent check lists them)"), None),
        None => checks.push("database", Status::Broken, "the daemon did not report its store", Some("cross-agent check")),
    }
}

/// The panel shim settings in each VS Code–family editor found.
fn check_shims(checks: &mut Checks, places: &Places, this: &Path) {
    for editor in places.editors.iter().filter(|e| e.found) {
        let what = format!("{} panel shims", editor.name);
        let text = files::read(&editor.settings, &places.home).ok().flatten();
        let doc = match JsonDoc::parse(&editor.settings.display().to_string(), text.as_deref()) {
            Ok(doc) => doc,
            Err(error) => {
                checks.push(
                    what,
                    Status::Broken,
                    format!("{error:#}"),
                    Some("fix the settings file"),
                );
                continue;
            }
        };
        let set: Vec<(&str, String)> = SHIM_LINKS
            .iter()
            .filter_map(|(_, key)| Some((*key, doc.entry(&[], key)?.as_str()?.to_owned())))
            .collect();
        if set.is_empty() {
            checks.push(
                what,
                Status::NotSetUp,
                "not linked",
                Some("cross-agent install --panels"),
            );
            continue;
        }
        let broken: Vec<String> = set
            .iter()
            .filter(|(_, path)| Path::new(path).canonicalize().ok().as_deref() != Some(this))
            .map(|(key, path)| format!("{key} = {path} does not lead to this binary"))
            .collect();
        if broken.is_empty() && set.len() == SHIM_LINKS.len() {
            checks.push(what, Status::Ok, "linked", None);
        } else if broken.is_empty() {
            checks.push(
                what,
                Status::Broken,
                format!("only {} of the 3 settings are set", set.len()),
                Some("cross-agent install --panels"),
            );
        } else {
            checks.push(
                what,
                Status::Broken,
                broken.join("; "),
                Some("cross-agent install --panels"),
            );
        }
    }
}

/// The Claude Code hooks: all six installed, or none (not set up); some is broken.
fn check_hooks(checks: &mut Checks, places: &Places) {
    let text = files::read(&places.claude_settings, &places.home)
        .ok()
        .flatten();
    let value = JsonDoc::parse("settings", text.as_deref())
        .map(|doc| doc.value())
        .unwrap_or(Value::Null);
    let mut missing = Vec::new();
    let mut unrunnable = Vec::new();
    for (event, _) in HOOK_EVENTS {
        let ours: Vec<String> = value
            .pointer(&format!("/hooks/{event}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|group| group.get("hooks")?.as_array())
            .flatten()
            .filter_map(|hook| hook.get("command")?.as_str())
            .filter(|command| setup::is_our_hook(command))
            .map(str::to_owned)
            .collect();
        if ours.is_empty() {
            missing.push(event);
        }
        for command in ours {
            let program = command
                .rsplitn(3, ' ')
                .nth(2)
                .unwrap_or_default()
                .trim_matches('\'')
                .to_owned();
            if !is_executable(Path::new(&program)) {
                unrunnable.push(program);
            }
        }
    }
    unrunnable.dedup();
    if missing.len() == HOOK_EVENTS.len() {
        checks.push(
            "Claude Code hooks",
            Status::NotSetUp,
            "not set up",
            Some("cross-agent install --hooks"),
        );
    } else if !unrunnable.is_empty() {
        checks.push(
            "Claude Code hooks",
            Status::Broken,
            format!("they run {}, which cannot be run", unrunnable.join(", ")),
            Some("cross-agent install --hooks"),
        );
    } else if !missing.is_empty() {
        checks.push(
            "Claude Code hooks",
            Status::Broken,
            format!("missing for {}", missing.join(", ")),
            Some("cross-agent install --hooks"),
        );
    } else {
        checks.push("Claude Code hooks", Status::Ok, "installed", None);
    }
}

/// Telegram: set up when `telegram setup` stored a token, paired when someone sent `/pair`; a
/// token or pairing file that cannot be read is broken.
fn check_telegram(checks: &mut Checks) {
    let Ok(home) = Home::from_env() else {
        checks.push(
            "Telegram",
            Status::NotSetUp,
            "no home to read it from",
            None,
        );
        return;
    };
    let home = home.root();
    let token = cross_agent_telegram::store::read_token(home);
    let access = cross_agent_telegram::store::read_access(home);
    match (token, access) {
        (Err(error), _) | (_, Err(error)) => checks.push(
            "Telegram",
            Status::Broken,
            format!("cannot read its setup: {error}"),
            Some("run `cross-agent telegram setup` again"),
        ),
        (Ok(None), _) => checks.push(
            "Telegram",
            Status::NotSetUp,
            "no bot (cross-agent telegram setup)",
            None,
        ),
        (Ok(Some(_)), Ok(access)) if access.paired.is_empty() => checks.push(
            "Telegram",
            Status::NotSetUp,
            "bot set up, nobody paired (cross-agent telegram pair)",
            None,
        ),
        (Ok(Some(_)), Ok(access)) => checks.push(
            "Telegram",
            Status::Ok,
            format!(
                "paired with {} user(s) (cross-agent telegram status tells more)",
                access.paired.len()
            ),
            None,
        ),
    }
}

/// Copilot in VS Code: each editor's running Agent Host (its protocol version), and one line
/// per problem with its files — an endpoint entry or folder not owner-only or not the user's, a
/// socket of another user, a catalog that is locked, cut short or not SQLite — naming the file
/// and the fix. The connection token is never read into anything printed.
fn check_copilot_hosts(checks: &mut Checks) {
    use cross_agent_stores::copilot;
    let places = cross_agent_stores::StoreRoots::from_env().copilot;
    if let Some(problem) = &places.problem {
        checks.push("Copilot places", Status::Broken, problem.clone(), None);
        return;
    }
    let mut refused = Vec::new();
    for place in &places.places {
        let what = format!("Copilot Agent Host ({})", place.user_data.display());
        let registry = copilot::registry(place);
        for problem in &registry.problems {
            checks.push(
                format!("Copilot endpoint ({})", problem.path.display()),
                Status::Broken,
                format!("not used: {}", problem.problem),
                Some(&problem.fix),
            );
            refused.push(problem.path.clone());
        }
        match registry.endpoints.first() {
            Some(endpoint) => checks.push(
                what,
                Status::Ok,
                format!(
                    "running (pid {}, protocol {}, entry {})",
                    endpoint.pid,
                    endpoint.protocol_version,
                    endpoint.entry.display()
                ),
                None,
            ),
            None if place.user_data.is_dir() => checks.push(
                what,
                Status::NotSetUp,
                "no running Agent Host (sessions are listed from its catalog)",
                None,
            ),
            // No such editor here.
            None => {}
        }
    }
    // The catalogs: every file the listing could not read, once each (the endpoint problems
    // are said above).
    let mut warnings = cross_agent_stores::Warnings::default();
    let sessions = copilot::list(&places, &mut warnings);
    for warning in warnings.items.iter().filter(|w| !refused.contains(&w.path)) {
        checks.push(
            format!("Copilot catalog ({})", warning.path.display()),
            Status::Broken,
            warning.message.clone(),
            None,
        );
    }
    if !places.places.is_empty() && places.places.iter().any(|p| p.user_data.is_dir()) {
        checks.push(
            "Copilot sessions",
            Status::Ok,
            format!("{} listed", sessions.len()),
            None,
        );
    }
}

struct Finished {
    stdout: String,
    stderr: String,
}

/// Runs a program with a deadline, killing its process group past that; `None` when it did not
/// finish.
fn run_briefly(command: &mut Command, timeout: Duration) -> Option<Finished> {
    // The callers build the command in place; it is taken whole and not used again.
    let command = std::mem::replace(command, Command::new(command.get_program()));
    let finished = cross_agent_process::run::run(command, None, timeout).ok()?;
    Some(Finished {
        stdout: String::from_utf8_lossy(&finished.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&finished.stderr).into_owned(),
    })
}
