//! The other machines this daemon links to over SSH (docs/remote.md): what `hosts status`
//! asks the daemon and what it answers, one [`HostStatus`] per host in `hosts.toml`.
//!
//! The link itself carries nothing of its own: it is the daemon RPC of `rpc.rs`, frame for
//! frame, spoken to the remote daemon through `ssh <dest> cross-agent rpc --stdio`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `hosts_status`: every host's link as the daemon sees it now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HostsStatusParams {}

/// The daemon's answer to `hosts_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostsStatusResponse {
    /// One entry per host in `hosts.toml`, by name.
    pub hosts: Vec<HostStatus>,
    /// Why `hosts.toml` could not be read, when it could not (the links of the last good read
    /// keep running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_error: Option<String>,
}

/// One host's link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostStatus {
    /// The host's name, as given to `hosts add`.
    pub name: String,
    /// The ssh destination (`user@box`, an alias of `~/.ssh/config`).
    pub destination: String,
    /// Where the link is.
    pub state: LinkState,
    /// What went wrong last, in ssh's own words when ssh said something (the last line it
    /// wrote to stderr, control characters removed), else the link's.
    pub last_error: Option<String>,
    /// The last round trip of a `status` call over the link, in milliseconds.
    pub rtt_ms: Option<f64>,
    /// The remote daemon's cross-agent version, from its `hello`.
    pub remote_version: Option<String>,
    /// The remote daemon's RPC version, from its `hello` or its refusal.
    pub remote_protocol_version: Option<u32>,
    /// Since when the link is in this state, RFC 3339 UTC.
    pub since: String,
    /// How many times the link was (re)started since the daemon started.
    pub attempts: u64,
    /// The ssh child's process id while one runs.
    pub ssh_pid: Option<u32>,
    /// When it is tried again, while `backing_off` or `refused`, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
}

/// Where one host's link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// ssh is starting, or the remote daemon has not answered `hello` yet.
    Connecting,
    /// The remote daemon answered `hello` with a compatible version; pings go through.
    Connected,
    /// The link failed (ssh could not connect, the remote went away); it is tried again after
    /// a pause that doubles up to a cap.
    BackingOff,
    /// The remote daemon speaks another protocol version: the link is not used, and it is
    /// tried again only after the longest pause (an upgrade on either side is what fixes it).
    Refused,
    /// A state this build does not know, sent by a newer daemon.
    #[serde(other)]
    Unknown,
}

impl LinkState {
    /// The state as spelled on the wire and in `hosts status`.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkState::Connecting => "connecting",
            LinkState::Connected => "connected",
            LinkState::BackingOff => "backing_off",
            LinkState::Refused => "refused",
            LinkState::Unknown => "unknown",
        }
    }
}
