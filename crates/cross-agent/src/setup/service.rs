//! The daemon's user service (`cross-agent service install|uninstall|start|stop|status`, and the
//! desktop app's Service panel): the daemon as a systemd user unit (Linux)
//! or a launchd agent (macOS), so it runs from login rather than from the first call. The unit
//! carries the `PATH` the agents need (a user unit's own is minimal, and the daemon starts the
//! agent CLIs): the installing shell's, plus the directories the agents' CLIs were found in.
//!
//! The unit sets `LimitNOFILE=` ([`SERVICE_FILE_LIMIT`]): the daemon raises its soft
//! descriptor limit to the hard one at start and sizes its connection cap from it, so the
//! unit's hard limit is what it really gets, whatever the user manager's default is.
//!
//! Where no user service manager answers (a container, an SSH session without a user bus),
//! `install` still writes the file and says what to run; the daemon's autostart works without
//! any of it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use serde::Serialize;

use super::files;
use super::places::{AgentName, Places, find_on_path};

/// The systemd unit's name.
const UNIT: &str = "cross-agent.service";
/// The launchd agent's label.
const LABEL: &str = "dev.cross-agent.daemon";
/// The unit's `LimitNOFILE=` (soft and hard). Room for the daemon's connection cap (512) many
/// times over beside every turn's pipes and the store's files, while a runaway leak still hits
/// a ceiling long before the system's. A user manager whose own hard limit is lower gives the
/// nearest it can (systemd lowers a limit it may not grant instead of failing the start).
const SERVICE_FILE_LIMIT: u32 = 65_536;

/// The service manager of this OS and where its file goes.
pub enum Manager {
    Systemd { unit: PathBuf },
    Launchd { plist: PathBuf },
}

impl Manager {
    pub fn for_this_os(places: &Places) -> Manager {
        if cfg!(target_os = "macos") {
            Manager::Launchd {
                plist: places
                    .home
                    .join("Library/LaunchAgents")
                    .join(format!("{LABEL}.plist")),
            }
        } else {
            let config = std::env::var_os("XDG_CONFIG_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| places.home.join(".config"));
            Manager::Systemd {
                unit: config.join("systemd/user").join(UNIT),
            }
        }
    }

    pub fn file(&self) -> &Path {
        match self {
            Manager::Systemd { unit } => unit,
            Manager::Launchd { plist } => plist,
        }
    }

    /// Whether the service manager answers for this user.
    pub fn available(&self) -> bool {
        let (program, args): (&str, &[&str]) = match self {
            Manager::Systemd { .. } => ("systemctl", &["--user", "show-environment"]),
            Manager::Launchd { .. } => ("launchctl", &["print", "system"]),
        };
        find_on_path(program).is_some()
            && Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
    }

    /// The commands that load and start the service.
    fn start_commands(&self) -> Vec<Vec<String>> {
        match self {
            Manager::Systemd { .. } => vec![
                words(&["systemctl", "--user", "daemon-reload"]),
                words(&["systemctl", "--user", "enable", "--now", UNIT]),
            ],
            Manager::Launchd { plist } => vec![vec![
                "launchctl".to_owned(),
                "bootstrap".to_owned(),
                format!("gui/{}", cross_agent_home::safety::effective_uid()),
                plist.to_string_lossy().into_owned(),
            ]],
        }
    }

    /// The command that starts the loaded service now.
    fn start_now_command(&self) -> Vec<String> {
        match self {
            Manager::Systemd { .. } => words(&["systemctl", "--user", "start", UNIT]),
            Manager::Launchd { .. } => vec![
                "launchctl".to_owned(),
                "kickstart".to_owned(),
                format!("gui/{}/{LABEL}", cross_agent_home::safety::effective_uid()),
            ],
        }
    }

    /// The command that stops the service now, leaving it installed.
    fn stop_now_command(&self) -> Vec<String> {
        match self {
            Manager::Systemd { .. } => words(&["systemctl", "--user", "stop", UNIT]),
            Manager::Launchd { .. } => vec![
                "launchctl".to_owned(),
                "kill".to_owned(),
                "SIGTERM".to_owned(),
                format!("gui/{}/{LABEL}", cross_agent_home::safety::effective_uid()),
            ],
        }
    }

    fn stop_commands(&self) -> Vec<Vec<String>> {
        match self {
            Manager::Systemd { .. } => vec![
                words(&["systemctl", "--user", "disable", "--now", UNIT]),
                words(&["systemctl", "--user", "daemon-reload"]),
            ],
            Manager::Launchd { .. } => vec![vec![
                "launchctl".to_owned(),
                "bootout".to_owned(),
                format!("gui/{}/{LABEL}", cross_agent_home::safety::effective_uid()),
            ]],
        }
    }
}

fn words(items: &[&str]) -> Vec<String> {
    items.iter().map(|w| (*w).to_owned()).collect()
}

/// The `PATH` the daemon runs with: this shell's, then each agent CLI's directory not in it.
fn service_path(places: &Places) -> String {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
    {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    for agent in AgentName::ALL {
        if let Some(dir) = places
            .cli(agent)
            .and_then(|cli| cli.parent().map(Path::to_owned))
            && !dirs.contains(&dir)
        {
            dirs.push(dir);
        }
    }
    for fallback in ["/usr/local/bin", "/usr/bin", "/bin"] {
        let fallback = PathBuf::from(fallback);
        if !dirs.contains(&fallback) {
            dirs.push(fallback);
        }
    }
    std::env::join_paths(dirs)
        .map(|joined| joined.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The variables the service sets: `PATH`, and `CROSS_AGENT_HOME` when this shell sets it.
fn service_env(places: &Places) -> Vec<(String, String)> {
    let mut env = vec![("PATH".to_owned(), service_path(places))];
    if let Some(home) =
        std::env::var_os(cross_agent_protocol::settings::HOME).filter(|h| !h.is_empty())
    {
        env.push((
            cross_agent_protocol::settings::HOME.to_owned(),
            home.to_string_lossy().into_owned(),
        ));
    }
    env
}

/// The systemd user unit.
pub fn systemd_unit(binary: &Path, env: &[(String, String)]) -> String {
    let mut unit = format!(
        "# Written by `cross-agent service install`; `cross-agent service uninstall` removes it.\n\
         [Unit]\n\
         Description=cross-agent daemon (lets coding agents message each other's sessions)\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={} daemon run\n",
        systemd_quote(&binary.to_string_lossy())
    );
    for (key, value) in env {
        unit.push_str(&format!(
            "Environment={}\n",
            systemd_quote(&format!("{key}={value}"))
        ));
    }
    unit.push_str(&format!("LimitNOFILE={SERVICE_FILE_LIMIT}\n"));
    unit.push_str(
        "Restart=on-failure\n\
         RestartSec=2\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
    );
    unit
}

/// A systemd word in double quotes, `\`, `"`, `%` and `$` escaped.
fn systemd_quote(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('%', "%%")
        .replace('$', "$$");
    format!("\"{escaped}\"")
}

/// The launchd agent's property list.
pub fn launchd_plist(binary: &Path, env: &[(String, String)]) -> String {
    let xml = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let mut variables = String::new();
    for (key, value) in env {
        variables.push_str(&format!(
            "\t\t<key>{}</key>\n\t\t<string>{}</string>\n",
            xml(key),
            xml(value)
        ));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n\
         <dict>\n\
         \t<key>Label</key>\n\t<string>{LABEL}</string>\n\
         \t<key>ProgramArguments</key>\n\t<array>\n\t\t<string>{}</string>\n\t\t<string>daemon</string>\n\t\t<string>run</string>\n\t</array>\n\
         \t<key>EnvironmentVariables</key>\n\t<dict>\n{variables}\t</dict>\n\
         \t<key>RunAtLoad</key>\n\t<true/>\n\
         \t<key>KeepAlive</key>\n\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n\
         </dict>\n\
         </plist>\n",
        xml(&binary.to_string_lossy())
    )
}

/// Writes the service file for `binary` (the `cross-agent` the service runs) and starts the
/// service when a service manager answers; with `dry_run`, the diff of the file and nothing
/// written. Returns what to tell the person.
pub fn install(places: &Places, manager: &Manager, binary: &Path, dry_run: bool) -> Result<String> {
    let env = service_env(places);
    let text = match manager {
        Manager::Systemd { .. } => systemd_unit(binary, &env),
        Manager::Launchd { .. } => launchd_plist(binary, &env),
    };
    let file = manager.file();
    let mut out = String::new();
    if dry_run {
        let before = files::read(file, &places.home)?;
        out.push_str(&files::unified_diff(file, before.as_deref(), Some(&text)));
        out.push_str("dry run: nothing was written\n");
        return Ok(out);
    }
    files::refuse_links(file, &places.home)?;
    files::write_atomically(file, &text)?;
    writeln!(out, "wrote {}", file.display())?;
    let commands = manager.start_commands();
    if !manager.available() {
        writeln!(
            out,
            "no user service manager answers here, so the service was not started; in a login \
             session, run:"
        )?;
        for command in &commands {
            writeln!(out, "  {}", command.join(" "))?;
        }
        writeln!(out, "(until then the daemon starts itself on first use)")?;
        return Ok(out);
    }
    for command in &commands {
        run_step(command)?;
    }
    writeln!(
        out,
        "started: {}",
        commands
            .iter()
            .map(|c| c.join(" "))
            .collect::<Vec<_>>()
            .join(" && ")
    )?;
    Ok(out)
}

/// Stops the service (when a service manager answers) and removes its file.
pub fn uninstall(manager: &Manager) -> Result<String> {
    let file = manager.file();
    let mut out = String::new();
    if std::fs::symlink_metadata(file).is_err() {
        writeln!(
            out,
            "no service file at {}: nothing to remove",
            file.display()
        )?;
        return Ok(out);
    }
    if manager.available() {
        for command in manager.stop_commands() {
            // Stopping a service that is not loaded fails harmlessly; the file goes regardless.
            let _ = run_step(&command);
        }
    } else {
        writeln!(
            out,
            "no user service manager answers here; if the service runs, stop it with:"
        )?;
        for command in manager.stop_commands() {
            writeln!(out, "  {}", command.join(" "))?;
        }
    }
    std::fs::remove_file(file).with_context(|| format!("removing {}", file.display()))?;
    writeln!(out, "removed {}", file.display())?;
    Ok(out)
}

/// The service file and what the service manager says of the service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    pub file: PathBuf,
    /// Whether the file is there.
    pub written: bool,
    /// Whether a user service manager answers.
    pub service_manager: bool,
    /// What it says (`active`, `inactive`, `failed`, `loaded`, …); `None` when none answers.
    pub state: Option<String>,
}

/// Asks the service manager about the service.
pub fn status(manager: &Manager) -> Status {
    let file = manager.file();
    let written = file.is_file();
    let available = manager.available();
    let state = match manager {
        Manager::Systemd { .. } if available => Command::new("systemctl")
            .args(["--user", "is-active", UNIT])
            .stderr(Stdio::null())
            .output()
            .ok()
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned()),
        Manager::Launchd { .. } if available => Command::new("launchctl")
            .args([
                "print",
                &format!("gui/{}/{LABEL}", cross_agent_home::safety::effective_uid()),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()
            .map(|status| {
                if status.success() {
                    "loaded"
                } else {
                    "not loaded"
                }
                .to_owned()
            }),
        _ => None,
    };
    Status {
        file: file.to_owned(),
        written,
        service_manager: available,
        state,
    }
}

/// Starts the installed service now (it also starts at login).
pub fn start(manager: &Manager) -> Result<String> {
    run_now(manager, manager.start_now_command(), "started")
}

/// Stops the service until it is started again or the next login (the file stays).
pub fn stop(manager: &Manager) -> Result<String> {
    run_now(manager, manager.stop_now_command(), "stopped")
}

fn run_now(manager: &Manager, command: Vec<String>, done: &str) -> Result<String> {
    if !manager.file().is_file() {
        anyhow::bail!(
            "no service file at {}: install the service first (cross-agent service install)",
            manager.file().display()
        );
    }
    if !manager.available() {
        anyhow::bail!(
            "no user service manager answers here, so `{}` cannot run; the daemon starts itself \
             on first use (cross-agent daemon start)",
            command.join(" ")
        );
    }
    run_step(&command)?;
    Ok(format!("{done}: {}\n", command.join(" ")))
}

fn run_step(command: &[String]) -> Result<()> {
    let (program, args) = command.split_first().context("an empty command")?;
    let status = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running {}", command.join(" ")))?;
    if !status.success() {
        anyhow::bail!("`{}` failed ({status})", command.join(" "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launchd_agent_runs_the_daemon_with_its_environment_escaped() {
        let plist = launchd_plist(
            Path::new("/Users/me/bin/cross-agent"),
            &[("PATH".to_owned(), "/opt/a&b:/usr/bin".to_owned())],
        );
        assert!(plist.contains("<key>Label</key>\n\t<string>dev.cross-agent.daemon</string>"));
        assert!(plist.contains(
            "<array>\n\t\t<string>/Users/me/bin/cross-agent</string>\n\t\t<string>daemon</string>\n\t\t<string>run</string>\n\t</array>"
        ));
        assert!(plist.contains("<key>PATH</key>\n\t\t<string>/opt/a&amp;b:/usr/bin</string>"));
        assert!(plist.contains("<key>RunAtLoad</key>\n\t<true/>"));
        assert!(plist.ends_with("</plist>\n"));
    }

    #[test]
    fn systemd_words_escape_what_systemd_would_expand() {
        assert_eq!(
            systemd_quote("PATH=/a b/$HOME%n\"x\\"),
            "\"PATH=/a b/$$HOME%%n\\\"x\\\\\""
        );
        let unit = systemd_unit(Path::new("/a b/cross-agent"), &[]);
        assert!(unit.contains("ExecStart=\"/a b/cross-agent\" daemon run\n"));
    }

    #[test]
    fn the_systemd_unit_gives_the_daemon_room_for_its_descriptors() {
        let unit = systemd_unit(Path::new("/usr/bin/cross-agent"), &[]);
        let service = unit
            .split("[Service]\n")
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .unwrap();
        assert!(
            service.lines().any(|line| line == "LimitNOFILE=65536"),
            "{unit}"
        );
    }
}
