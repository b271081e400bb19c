//! `cross-agent doctor`'s lines for the other machines of `hosts.toml` (docs/remote.md): per
//! host, whether ssh reaches it (the link's state, and what went wrong in ssh's own words), the
//! cross-agent it runs there and whether its version is compatible with this one (both named),
//! and whether the daemon there answers.
//!
//! The links are the daemon's, so doctor reads them from `hosts_status` rather than opening ssh
//! connections of its own: what it reports is what sends and listings will meet. A link still
//! connecting (the daemon just started, or `hosts.toml` just changed) is given a few seconds to
//! settle first.

use std::time::{Duration, Instant};

use cross_agent_home::Home;
use cross_agent_hosts::file;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_protocol::hosts::{HostStatus, HostsStatusParams, HostsStatusResponse, LinkState};
use cross_agent_protocol::rpc::{ClientKind, PROTOCOL_VERSION};

use super::doctor::{Checks, Status};

/// How long a link still `connecting` is waited for.
const SETTLE: Duration = Duration::from_secs(15);

/// One to three lines per host of `hosts.toml`; one line when there is none.
pub(super) fn check_hosts(checks: &mut Checks) {
    // check_state has said what is wrong with the home, if anything.
    let Ok(home) = Home::from_env() else { return };
    let path = file::path(home.root());
    let hosts = match file::read(&path) {
        Ok(hosts) => hosts,
        Err(error) => {
            checks.push(
                "other machines",
                Status::Broken,
                error.to_string(),
                Some("see the message: it names the file and what to change"),
            );
            return;
        }
    };
    if hosts.is_empty() {
        checks.push(
            "other machines",
            Status::NotSetUp,
            "none linked (cross-agent hosts add NAME DESTINATION)",
            None,
        );
        return;
    }
    let Ok(client) = BlockingClient::connect(&home, &ConnectOptions::new(ClientKind::Cli)) else {
        for host in &hosts {
            checks.push(
                format!("host {}", host.name),
                Status::NotSetUp,
                "not checked: the daemon, which keeps the links, is not running",
                Some("cross-agent daemon start"),
            );
        }
        return;
    };
    let status = match settled(&client) {
        Ok(status) => status,
        Err(error) => {
            checks.push(
                "other machines",
                Status::Broken,
                format!("the daemon did not say how its links are: {error}"),
                Some("cross-agent reload"),
            );
            return;
        }
    };
    if let Some(error) = &status.file_error {
        checks.push(
            "other machines",
            Status::Broken,
            error.clone(),
            Some("see the message: it names the file and what to change"),
        );
    }
    for host in &status.hosts {
        check_host(checks, host);
    }
}

/// `hosts_status`, asked again until no link is `connecting` or [`SETTLE`] has passed.
fn settled(client: &BlockingClient) -> Result<HostsStatusResponse, cross_agent_ipc::Error> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let status = client.call(HostsStatusParams {})?;
        let connecting = status
            .hosts
            .iter()
            .any(|h| h.state == LinkState::Connecting);
        if !connecting || Instant::now() >= deadline {
            return Ok(status);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn check_host(checks: &mut Checks, host: &HostStatus) {
    let name = &host.name;
    let destination = &host.destination;
    let said = host
        .last_error
        .as_deref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    let ssh_fix = format!(
        "`ssh {destination} cross-agent --version` must print a version without asking \
         anything: fix what ssh says (a key in your agent, known_hosts, the host's name, \
         cross-agent on the PATH there)"
    );
    match host.state {
        LinkState::Connected | LinkState::Refused => checks.push(
            format!("host {name}: ssh"),
            Status::Ok,
            match host.rtt_ms {
                Some(rtt) => format!("reaches {destination} (round trip {rtt:.1} ms)"),
                None => format!("reaches {destination}"),
            },
            None,
        ),
        LinkState::BackingOff => {
            checks.push(
                format!("host {name}: ssh"),
                Status::Broken,
                format!(
                    "cannot reach {destination}{said} (tried {} time(s))",
                    host.attempts
                ),
                Some(&ssh_fix),
            );
            return;
        }
        LinkState::Connecting => {
            checks.push(
                format!("host {name}: ssh"),
                Status::Broken,
                format!(
                    "still connecting to {destination} after {} s{said}",
                    SETTLE.as_secs()
                ),
                Some(&ssh_fix),
            );
            return;
        }
        LinkState::Unknown => {
            checks.push(
                format!("host {name}: ssh"),
                Status::Broken,
                format!("the daemon reports a link state this cross-agent does not know{said}"),
                Some("cross-agent reload"),
            );
            return;
        }
    }
    let theirs = format!(
        "{} (protocol {})",
        host.remote_version
            .as_deref()
            .unwrap_or("an unknown version"),
        host.remote_protocol_version
            .map_or_else(|| "unknown".to_owned(), |p| p.to_string())
    );
    let ours = format!(
        "{} (protocol {PROTOCOL_VERSION})",
        env!("CARGO_PKG_VERSION")
    );
    if host.state == LinkState::Refused {
        checks.push(
            format!("host {name}: cross-agent"),
            Status::Broken,
            format!("{theirs} there, {ours} here: not compatible, the link is refused"),
            Some("install the same cross-agent release on both machines"),
        );
        return;
    }
    checks.push(
        format!("host {name}: cross-agent"),
        Status::Ok,
        format!("{theirs} there, {ours} here: compatible"),
        None,
    );
    checks.push(
        format!("host {name}: daemon"),
        Status::Ok,
        "running there (it answered hello and answers pings)",
        None,
    );
}
