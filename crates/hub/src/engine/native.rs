//! Claude's native peer door, the engine's side (issue 14, spec 003 `claude_relay`): which
//! Claude sessions a running Claude Code process holds (its registry, `~/.claude/sessions`),
//! and the routing rule built on it.
//!
//! **Routing.** A send to a Claude session whose registry entry shows a live process (its pid
//! runs and started at the entry's `procStart`) and that no panel shim hosts goes through the
//! native door (`transport: "claude-native"`): a headless `claude -p --resume` beside a running
//! process would be a second writer on the same conversation, and its answer would have no way
//! back. Every other Claude session is dormant — no entry, or an entry a crash left behind with
//! its socket — and resumes over the CLI as before. The rule is applied at acceptance and again
//! when the delivery goes out: a process that exited meanwhile makes the session dormant.

use cross_agent_decisions::events;
use cross_agent_protocol::bridge::{CallerContext, DeliveryRecord, Transport};
use cross_agent_stores::claude_registry::Registry;

use super::target::Resolved;
use super::{Engine, roots_for};
use crate::Agent;
use crate::caller::Caller;
use crate::records::{Job, NativeJob};

/// Who a relay speaks for when the sender has no session of its own (a `cross-agent send` from
/// a shell): its relay is `xa-cli-on-<machine>`.
pub const CLI_REPRESENTED: &str = "cli";

impl Engine {
    /// Claude Code's registry of running sessions, under the caller's Claude config root.
    pub(super) fn claude_registry(&self, caller: &CallerContext) -> Registry {
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

    /// The native route of a send, when it takes one: a Claude session (not a new one) no panel
    /// carries, held by a live Claude Code process that announced a messaging socket, and a
    /// daemon that can host relays.
    pub(super) fn native_route(
        &self,
        agent: Agent,
        params_caller: &CallerContext,
        caller: &Caller,
        resolved: &Resolved,
    ) -> Option<NativeJob> {
        if agent != Agent::Claude
            || resolved.panel.is_some()
            || resolved.new_reason.is_some()
            || !self.has_native_door()
        {
            return None;
        }
        let session_id = resolved.session_id.as_deref()?;
        let registry = self.claude_registry(params_caller);
        let entry = registry.live_session(session_id)?;
        Some(NativeJob {
            pid: entry.pid,
            proc_start: entry.proc_start_ticks()?,
            address: entry.native_address()?,
            registry_name: entry.name.clone(),
            represented: represented(caller),
        })
    }

    /// A native delivery about to go out: is its process still the one the registry named? If
    /// not, the session is dormant now and the delivery resumes it over the CLI (decided here,
    /// before anything was sent, so nothing is sent twice).
    pub(super) fn native_still_live(&self, record: &mut DeliveryRecord, job: &mut Job) -> bool {
        let Some(native) = &job.native else {
            return false;
        };
        if cross_agent_process::is_same_process(native.pid, native.proc_start)
            && self.has_native_door()
        {
            return true;
        }
        let why = format!(
            "the Claude Code process holding the session (pid {}) is gone; the session is \
             dormant and is resumed over the CLI",
            native.pid
        );
        tracing::info!(delivery = %record.delivery_id, "{why}");
        self.inner
            .decisions
            .record(events::native_route_changed(record, &why));
        job.native = None;
        record.transport = Transport::HeadlessCli;
        record.peer_pid = None;
        if let Err(error) = self.db().update_delivery(record) {
            tracing::warn!(%error, "could not record a native delivery moved to the CLI");
        }
        false
    }

    /// Whether this daemon can host relays (the daemon hands the engine its relay host).
    pub(super) fn has_native_door(&self) -> bool {
        false
    }
}

/// The name a relay speaks for: the sender's session by its agent and short id, or
/// [`CLI_REPRESENTED`] when the sender has no session.
pub(super) fn represented(caller: &Caller) -> String {
    match (&caller.agent, caller.session_id.as_deref()) {
        (Some(agent), Some(id)) => {
            let short: String = id.chars().filter(|c| *c != '-').take(8).collect();
            format!("{agent}-{short}")
        }
        _ => CLI_REPRESENTED.to_owned(),
    }
}

impl Engine {
    /// Carries one native delivery through a relay. Without a relay host the route is never
    /// chosen ([`Engine::has_native_door`]).
    pub(super) async fn run_native_delivery(self, claimed: crate::records::Claimed) {
        let _ = claimed;
    }
}
