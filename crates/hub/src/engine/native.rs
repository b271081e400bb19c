//! Claude's native peer door, the engine's side of it (docs/spec/claude-relay.txt,
//! `claude_relay`): the settings the daemon gives the engine so it can host relays, Claude
//! Code's registry of running sessions (`~/.claude/sessions`, read for routing and listings),
//! and the engine's public handle on the relay host. The routing rule and the door's mechanics
//! are the native carrier's (`carriers/native/`).

use std::path::PathBuf;
use std::time::Duration;

use cross_agent_protocol::bridge::CallerContext;
use cross_agent_relay::RelayHost;
use cross_agent_stores::claude_registry::Registry;

use super::{Engine, roots_for};

/// Who a relay speaks for when the sender has no session of its own (a `cross-agent send` from
/// a shell): its relay is `xa-cli-on-<machine>`.
pub const CLI_REPRESENTED: &str = "cli";

/// Claude Code's registry of running sessions, under the caller's Claude config root.
pub(super) fn claude_registry(caller: &CallerContext) -> Registry {
    let roots = roots_for(caller);
    let Some(config) = roots.claude_config.as_deref() else {
        return Registry::default();
    };
    let mut warnings = cross_agent_stores::Warnings::default();
    let registry = Registry::read(config, &mut warnings);
    for warning in warnings.items {
        tracing::debug!(%warning, "skipped a Claude registry entry");
    }
    registry
}

/// What the daemon tells the engine so it can host relays: the program the relays' hooks run
/// and this machine's name. The relay host itself starts with the first native send, with the
/// Claude binary and environment of that send's caller (a relay must share the target's HOME).
#[derive(Debug, Clone)]
pub struct NativeSettings {
    /// The `cross-agent` program (`<it> hook <Event>`), normally the daemon's own executable.
    pub cross_agent: PathBuf,
    /// This machine's name, in relay names (`xa-<name>-on-<machine>`).
    pub machine: String,
    /// A relay with nothing in hand is stopped this long after its last activity.
    pub idle_stop: Duration,
    /// How long a send waits for Claude's own receipt (relay start-up included).
    pub send_timeout: Duration,
}

impl NativeSettings {
    pub fn new(cross_agent: PathBuf, machine: String) -> NativeSettings {
        NativeSettings {
            cross_agent,
            machine,
            idle_stop: Duration::from_secs(300),
            send_timeout: Duration::from_secs(90),
        }
    }
}

impl Engine {
    /// Lets this engine route live Claude sessions through relays (the daemon calls it once,
    /// before [`Engine::start`]).
    pub fn enable_native(&self, settings: NativeSettings) {
        self.inner.carriers.native.door.enable(settings);
    }

    /// The relay host, once a native send started it: the daemon offers it every `hook` call
    /// first.
    pub fn relay_host(&self) -> Option<RelayHost> {
        self.inner.carriers.native.door.started_host()
    }

    /// Stops every relay (the daemon's stop).
    pub(super) async fn stop_relays(&self) {
        let host = self.inner.carriers.native.door.take_started_host();
        if let Some(host) = host {
            host.shutdown().await;
        }
    }
}
