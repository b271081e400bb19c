//! The subcommand tree: one file per subcommand, each with its own arguments and `run`.

mod bridge_client;
mod check;
mod check_database;
mod daemon;
mod decisions;
mod decisions_hosts;
mod desktop;
mod doctor;
mod doctor_hosts;
mod focus;
mod handoff;
mod hook;
mod hosts;
mod install;
mod mcp;
mod pin;
mod reload;
mod review;
mod review_status;
mod rpc;
mod send;
mod service;
mod session_places;
mod sessions;
mod sessions_hosts;
mod shim;
mod status;
mod telegram;
mod usage;
mod windows;

use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the agent sessions on disk, or resolve one by id or exact name.
    Sessions(sessions::SessionsArgs),
    /// Run, start, stop or inspect the per-user daemon that carries all cross-agent state.
    Daemon(daemon::DaemonArgs),
    /// Serve MCP on stdin/stdout: the server you register in Claude Code, Codex or Grok.
    Mcp(mcp::McpArgs),
    /// Send a message to a Claude, Codex or Grok session (what send_to_<agent> does) and print
    /// the receipt.
    Send(send::SendArgs),
    /// Show the bridge's status (bridge_status), or one delivery's.
    Status(status::StatusArgs),
    /// Pin the session sends to an agent go to; without a session, unpin.
    Pin(pin::PinArgs),
    /// Replace the daemon with this binary's without cutting anything off (= daemon restart).
    Reload(reload::ReloadArgs),
    /// Print who runs this, the agent CLIs found, resolved sessions and the settings in effect.
    Check(check::CheckArgs),
    /// Ask the decisions log: the decisions in a window, or counts by any field (--by).
    Decisions(decisions::DecisionsArgs),
    /// Sit between an editor extension and the real agent (claude, codex, grok), or create the
    /// shim links (links [DIR]) and print the VS Code settings. Also run as
    /// cross-agent-{claude,codex,grok}-shim.
    Shim(shim::ShimArgs),
    /// Register `cross-agent mcp` with every agent found (and, when asked, the panel shims and
    /// the Claude Code hooks); `--dry-run` shows the diff.
    Install(install::InstallArgs),
    /// Take out exactly what `install` added, leaving every file as it was before.
    Uninstall(install::UninstallArgs),
    /// Check every agent's registration, the daemon, the state, the shims and the hooks, one
    /// line each with its fix; non-zero when something is broken.
    Doctor(doctor::DoctorArgs),
    /// Run the daemon as a user service (systemd on Linux, launchd on macOS).
    Service(service::ServiceArgs),
    /// Hand a session to another agent: its brief, the destinations, the handoff, the receipt.
    Handoff(handoff::HandoffArgs),
    /// The daemon's Telegram bot: setup (token from stdin), pair, status, unpair.
    Telegram(telegram::TelegramArgs),
    /// A cross review: a model of another family judges whether a session is still on track
    /// (review SESSION), the kept reviews (list, show ID), and the review robot (status).
    Review(review::ReviewArgs),
    /// What a Claude Code hook runs: the hook JSON on stdin, forwarded to the daemon (never
    /// started for it); prints the hook's answer. With no daemon, exits 0 at once, printing nothing.
    Hook(hook::HookArgs),
    /// Tokens and cost per session, agent, model, day or cwd, from the agents' own files
    /// (--since 24h|7d|DATE, --by, --json); --prices prints the price table.
    Usage(usage::UsageArgs),
    /// The other machines the daemon links to over ssh: add NAME [DESTINATION], remove, list,
    /// status [--json].
    Hosts(hosts::HostsArgs),
    /// Speak the daemon's RPC on stdin/stdout (--stdio): what another machine's daemon runs
    /// over ssh to reach this one's.
    Rpc(rpc::RpcArgs),
    /// Raise the editor window a session lives in (X11, or the editor CLI); --type TEXT pastes
    /// TEXT into its chat input and submits it when the GUI fallback is on and nobody is typing.
    Focus(focus::FocusArgs),
    /// Open the desktop app (cross-agent-desktop, from beside this binary): the bot token,
    /// pairing, the service, the agents' setup, logs and sessions.
    Desktop(desktop::DesktopArgs),
    /// The editors' open workspaces (VS Code, Insiders, VSCodium, Cursor, Windsurf): the live
    /// window showing each, its git branch, ahead/behind, dirty and untracked counts, and the
    /// sessions working in it.
    Windows(windows::WindowsArgs),
}

/// Every agent's sessions as `cross-agent sessions` lists them, newest first: the daemon's live
/// index (started when none answers), the stores read directly when it cannot serve them.
pub(crate) fn list_sessions() -> Vec<cross_agent_stores::Session> {
    sessions::load_all()
}

impl Command {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            Command::Sessions(args) => args.run(),
            Command::Daemon(args) => args.run(),
            Command::Mcp(args) => args.run(),
            Command::Send(args) => args.run(),
            Command::Status(args) => args.run(),
            Command::Pin(args) => args.run(),
            Command::Check(args) => args.run(),
            Command::Reload(args) => args.run(),
            Command::Decisions(args) => args.run(),
            Command::Usage(args) => args.run(),
            Command::Shim(args) => args.run(),
            Command::Install(args) => args.run(),
            Command::Uninstall(args) => args.run(),
            Command::Doctor(args) => args.run(),
            Command::Service(args) => args.run(),
            Command::Handoff(args) => args.run(),
            Command::Telegram(args) => args.run(),
            Command::Review(args) => args.run(),
            Command::Hook(args) => args.run(),
            Command::Hosts(args) => args.run(),
            Command::Rpc(args) => args.run(),
            Command::Focus(args) => args.run(),
            Command::Desktop(args) => args.run(),
            Command::Windows(args) => args.run(),
        }
    }
}
